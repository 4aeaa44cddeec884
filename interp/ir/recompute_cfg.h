/*
 * recompute_cfg.h — a program's recomputation configuration
 * (docs/recompute.md): the policy that gives every activation record a
 * fraction to drop after its F and recompute before its B, the time a
 * recomputation takes, and what the last compilation planned. The plan is
 * a stage of the pipeline (lower/recompute.h); this is the program's data.
 *
 * Each record is kept, offloaded (offload_cfg.h) or recomputed. A record
 * recomputed drops `frac` of itself right after its F (DROP, with no
 * OFFLOAD before it: nothing is copied) and an R pass recomputes it from
 * the record's kept input right before its B (or BW); R takes
 * frac · (time / frac) · T_F of the stage, so `time` is what a
 * recomputation of `frac` costs, as a fraction of F (partial
 * recomputation: frac < 1, like Megatron's selective recomputation of
 * attention, drops part of each record for a smaller part of F's time).
 *
 *     sc_recompute_cfg c = {.policy = SC_RECOMPUTE_ALL, .frac = 1, .time = 1};
 *     sc_prog_set_recompute(pg, &c);
 *     sc_check(pg);                  // compiles with the R passes, verifies
 *
 * Ownership: the program owns the configuration and the results.
 * Tested by: tests/unit/test_autosched.c, tests/unit/test_alloc.c.
 */
#ifndef SC_RECOMPUTE_CFG_H
#define SC_RECOMPUTE_CFG_H

#include "ir.h"

typedef enum sc_recompute_policy {
    SC_RECOMPUTE_NONE,      /* every record kept */
    SC_RECOMPUTE_ALL,       /* every record */
    SC_RECOMPUTE_SELECTIVE, /* per device, the `chunks` chunks with the longest lifespans */
    SC_RECOMPUTE_BUDGET,    /* per device, the least (in that order) that meets `mem`; with
                               offload's budget too, what the host link cannot take */
    SC_RECOMPUTE_TABLE      /* fractions given per record (sc_prog_set_recompute_fraction) */
} sc_recompute_policy;

typedef struct sc_recompute_cfg {
    sc_recompute_policy policy;
    double chunks; /* selective: chunks per device (a fraction: part of the next) */
    double frac;   /* the part of a record dropped and recomputed, (0, 1] */
    double time;   /* R's time for frac, as a fraction of T_F, > 0 */
    double mem;    /* budget: the peak to reach, in units (> 0) */
} sc_recompute_cfg;

sc_status sc_prog_set_recompute(sc_prog *pg, const sc_recompute_cfg *cfg);
const sc_recompute_cfg *sc_prog_recompute(const sc_prog *pg);
/* The fraction of record (s, mb) for the TABLE policy, in [0, 1]. */
sc_status sc_prog_set_recompute_fraction(sc_prog *pg, int s, int mb, double frac);
/* The largest fraction of a record of stage s the runtime can drop and
 * recompute: all but the first part (the stage's input), 1 without parts
 * (offload_cfg.h, sc_prog_set_offload_parts). */
double sc_recompute_max(const sc_prog *pg, int s);
/* The fraction the runtime drops for q: the nearest run of the last parts,
 * within sc_recompute_max. */
double sc_recompute_quantize(const sc_prog *pg, int s, double q);

/* What the last lowering recomputed. */
typedef struct sc_recompute_info {
    int records;       /* records recomputed */
    double units;      /* units dropped and recomputed in the step */
    double time;       /* the R passes' time, all devices */
    double *base_peak; /* [P] peak device memory without recomputation (nor offload) */
    double *level;     /* [P] selective and budget: chunks recomputed per device */
    int *count;        /* [P] records recomputed per device */
} sc_recompute_info;

/* NULL before lowering or without a policy. */
const sc_recompute_info *sc_prog_recompute_info(const sc_prog *pg);

#endif
