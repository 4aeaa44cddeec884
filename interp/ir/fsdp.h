/*
 * fsdp.h — FSDP's data-parallel group of a program (docs/fsdp.md): each
 * device's stages are sharded over dp replicas of the pipeline; a stage's
 * parameters are gathered (UNSHARD: an all-gather over the group, on the
 * device's data-parallel channel) before its passes and freed (RESHARD)
 * after them; its gradients are reduce-scattered over the group on the same
 * channel (REDUCE_GRAD) after its last weight gradient of the step.
 * Included by ir.h; the kinds are rows of SC_OPS.
 *
 *     sc_fsdp_cfg c = sc_fsdp_default();   // dp 2, 1 unit, policy full
 *     c.dp = 8; c.time = 0.5;
 *     sc_prog_set_fsdp(pg, &c);            // the lowering adds UNSHARD/RESHARD
 * Tested by: tests/unit/test_fsdp.c.
 */
#ifndef SC_FSDP_H
#define SC_FSDP_H

#include <math.h>

#include "ir.h"

/* Where the lowering puts UNSHARD and RESHARD (lower/fsdp.h): PyTorch
 * 2.15's _add_unshard_reshard with its lookahead "full" (every stage of the
 * residency window fetched at once) or "auto" (min(rank + 2, max_active)
 * distinct stages ahead), and stagecraft's schedule-derived policy
 * (docs/fsdp.md#policies). */
#define SC_FSDP_POLICIES(X) X(FULL, "full") X(AUTO, "auto") X(DERIVED, "derived")

enum {
#define X(name, text) SC_FSDP_##name,
    SC_FSDP_POLICIES(X)
#undef X
    SC_FSDP_POLICY_COUNT
};

const char *sc_fsdp_policy_name(int policy);
int sc_fsdp_policy_parse(const char *name); /* -1: unknown */

typedef struct sc_fsdp_cfg {
    int dp;         /* replicas in the data-parallel group (>= 1); 0: no FSDP */
    double units;   /* memory units of one stage's unsharded parameters (>= 0) */
    double bytes;   /* one stage's parameter bytes, for the all-gather's time */
    double time;    /* the all-gather's time; NAN: from bytes and the collective
                       cost (sc_prog_fsdp_time) */
    int policy;     /* SC_FSDP_* */
    int max_active; /* the most stages unsharded at once on a device (>= 1) */
    double reduce_time; /* the gradients' reduce-scatter's time (REDUCE_GRAD);
                           NAN: the all-gather's (the same bytes over the same
                           ring: sc_prog_fsdp_reduce_time) */
} sc_fsdp_cfg;

/* No FSDP, as a new program has it; the defaults of a recipe's fsdp = true
 * (dp 2, 1 unit, 0 bytes, time 0, policy full, max_active 3: PyTorch's;
 * the reduce-scatter as long as the all-gather). */
static inline sc_fsdp_cfg sc_fsdp_none(void)
{
    return (sc_fsdp_cfg){0, 0, 0, 0, SC_FSDP_FULL, 3, NAN};
}
static inline sc_fsdp_cfg sc_fsdp_default(void)
{
    return (sc_fsdp_cfg){2, 1, 0, 0, SC_FSDP_FULL, 3, NAN};
}
/* Sets the program's FSDP (c->dp = 0: none); drops the lowering. */
sc_status sc_prog_set_fsdp(sc_prog *pg, const sc_fsdp_cfg *c);
const sc_fsdp_cfg *sc_prog_fsdp(const sc_prog *pg);
static inline int sc_op_is_fsdp(int op) { return SC_OP_IS_(op, SC_OPK_FSDP); }
/* A stage's unsharded parameters, in units of memory (0 without FSDP). */
double sc_prog_fsdp_units(const sc_prog *pg);
/* The all-gather of a stage's parameters over the group: the given time, or
 * the collective cost latency + (dp - 1)/dp · bytes / bandwidth (the ring's
 * all-gather); 0 for a group of one. */
double sc_prog_fsdp_time(const sc_prog *pg);
/* The reduce-scatter of a stage's gradients (as many bytes as its
 * parameters) over the group: the given reduce_time, or the all-gather's
 * time (the ring moves the same bytes, (dp - 1)/dp of them); 0 for a group
 * of one. */
double sc_prog_fsdp_reduce_time(const sc_prog *pg);

#endif
