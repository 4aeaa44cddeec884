/*
 * offload_cfg.h — a program's offload configuration (PipeOffload, arXiv
 * 2503.01328; docs/offload.md): the policy that gives every activation record a
 * fraction to move to host memory, the host link's speed, the parts the
 * runtime moves, and what the last compilation planned. The plan itself is
 * a stage of the pipeline (lower/offload.h); this is the program's data.
 *
 * A *record* is the activation of one (stage, microbatch): F allocates it,
 * B and W (or BW) free it. The host link: every device has a link to host
 * memory with two channels, device-to-host (OFFLOAD) and host-to-device
 * (RELOAD), each a queue served in stream order; moving q of a record of u
 * units takes q · u · ratio · (T_F + T_B + T_W of the device's share) at
 * full speed, `ratio` being PipeOffload's k. With `shared`, devices 2k and
 * 2k+1 share one full-duplex link (PipeOffload's pairs): they take turns in
 * slots, one copying to the host while the other copies back, each at full
 * speed, and in the pair's warm-up (before its first copy back) the copies
 * to the host run alone on the link at SC_OFFLOAD_SOLO of their time. The
 * plan (lower/offload.h) places the copies on the slots; the replay starts
 * each no earlier than its slot (sc_offload_info's copy_at).
 *
 *     sc_offload_cfg c = {.policy = SC_OFFLOAD_SELECTIVE, .chunks = 2, .ratio = 0.1};
 *     sc_prog_set_offload(pg, &c);
 *     sc_check(pg);                        // compiles with the moves, verifies
 *     const sc_offload_info *oi = sc_prog_offload_info(pg);
 *
 * Ownership: the program owns the configuration and the results.
 * Tested by: tests/unit/test_offload.c.
 */
#ifndef SC_OFFLOAD_CFG_H
#define SC_OFFLOAD_CFG_H

#include "ir.h"

typedef enum sc_offload_policy {
    SC_OFFLOAD_NONE,      /* nothing moves */
    SC_OFFLOAD_ALL,       /* every record that gains from it */
    SC_OFFLOAD_SELECTIVE, /* per device, the `chunks` chunks with the longest lifespans */
    SC_OFFLOAD_BUDGET,    /* per device, the least (in that order) that brings the peak to `mem` */
    SC_OFFLOAD_TABLE      /* fractions given per record (sc_prog_set_offload_fraction) */
} sc_offload_policy;

/* A copy alone on a shared link takes this fraction of its time
 * (PipeOffload's solo slots in the warm-up). */
#define SC_OFFLOAD_SOLO 0.7

/* The default ratio: a fast link (PipeOffload's k after halving is about
 * 0.5 to 1 for 7B to 70B models on A100 and H100). */
#define SC_OFFLOAD_RATIO 0.25

typedef struct sc_offload_cfg {
    sc_offload_policy policy;
    double chunks; /* selective: chunks per device (a fraction moves part of the next) */
    double ratio;  /* host-link time of one unit relative to T_F+T_B+T_W; >= 0 */
    int shared;    /* devices 2k and 2k+1 share one host link */
    double mem;    /* budget: the peak to reach, in units (> 0) */
    double margin; /* a copy back ends this many durations of its B before the B
                      starts (0: just in time; PipeOffload's planner: 1), >= 0 */
    int soft;      /* budget: a device that cannot get under mem stays at all the link
                      takes instead of failing (the compile driver's mix with
                      recomputation checks the peak itself) */
} sc_offload_cfg;

/* Sets the policy (checks its numbers; SC_ERR_ARG). TABLE keeps the
 * fractions set so far (all 0 at first). */
sc_status sc_prog_set_offload(sc_prog *pg, const sc_offload_cfg *cfg);
const sc_offload_cfg *sc_prog_offload(const sc_prog *pg);
/* The fraction of record (s, mb) for the TABLE policy, in [0, 1]. */
sc_status sc_prog_set_offload_fraction(sc_prog *pg, int s, int mb, double frac);
/* The record of stage s consists of n parts of the given sizes (the runtime
 * moves whole parts: the built-in model's tensors). Moves of stage s are
 * then rounded to a run of its last parts: fractions sum(sizes[k..n-1]) /
 * sum(sizes). n = 0 drops the parts (any fraction). */
sc_status sc_prog_set_offload_parts(sc_prog *pg, int s, int n, const double *sizes);
/* Fractions of stage s that the runtime can move: levels[0] = 0 <
 * levels[1] < ... < levels[n] = 1 (the last k parts), or NULL (any). */
const double *sc_prog_offload_levels(const sc_prog *pg, int s, int *n);

/* Time the host link takes to move fraction q of a record of stage s, at
 * full speed. */
double sc_offload_time(const sc_prog *pg, int s, double q);

/* What the last lowering did. */
typedef struct sc_offload_info {
    int records;        /* records with a fraction > 0 asked by the policy */
    int moved;          /* records moved */
    int skipped;        /* left on the device: window shorter than three transfers */
    int backed_off;     /* budget: left on the device because the link could not take them */
    double units;       /* units moved to the host in the step */
    double *base_peak;  /* [P] peak device memory without offload */
    double *level;      /* [P] selective and budget: chunks moved per device */
    double *copy_at;    /* [2 S m] on a shared link, the planned start of the
                         * OFFLOAD copy of record (s, mb) at s m + mb, of its
                         * RELOAD copy at S m + s m + mb; -1: not moved, or a
                         * link of its own (a copy goes when posted) */
    double *copy_dur;   /* [2 S m] their durations (a solo copy is shorter) */
} sc_offload_info;

/* NULL before lowering or without a policy. */
const sc_offload_info *sc_prog_offload_info(const sc_prog *pg);

#endif
