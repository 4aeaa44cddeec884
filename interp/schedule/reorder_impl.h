/*
 * reorder_impl.h — what the reorder's files share (reorder.c drives,
 * reorder_list.c holds the list schedules, reorder_place.c the placement
 * rounds). Not for use outside interp/schedule/.
 *
 * A candidate is a flat array of the program's passes, device by device:
 * device d's passes are at [base[d], base[d+1]), in the candidate's order.
 * Every candidate is a permutation of each device's passes; the driver
 * times it with the real costs and keeps the best one within the caps.
 */
#ifndef SC_REORDER_IMPL_H
#define SC_REORDER_IMPL_H

#include "ir/ir_impl.h"

#include <stddef.h>

#define SC_R_EPS 1e-9

typedef struct sc_rctx {
    sc_prog *pg;
    int P;
    size_t N;
    const size_t *base;  /* [P+1] */
    const int *dev;      /* [N] device of each flat position */
    const double *cap;   /* [P] memory cap per device, units */
    const double *at;    /* [N] block time of each pass of the input, or NULL */
    int at_slots;        /* at counts slots (F, B, W one, BW two) */
    long window;         /* how far back placements and fills look */
} sc_rctx;

/* The duration model of a placement round: the real costs and T_comm, or
 * unit slots (F, B, W one, BW two, no T_comm: the papers' cost-oblivious
 * grid). */
static inline double sc_r_dur(const sc_prog *pg, const sc_instr *in, int unit)
{
    if (unit)
        return in->op == SC_OP_BW ? 2 : 1;
    return sc_pass_cost(pg, in);
}

/* Start and end of every pass of ord (indexed like ord) under the model,
 * each as early as its device and its dependency allow; seq (may be NULL)
 * numbers them in a topological order. Returns 0 when the orders are
 * inconsistent (a cycle), -1 when out of memory, 1 on success. */
int sc_r_time(const sc_rctx *c, const sc_instr *ord, int unit, double *start, double *end,
              size_t *seq);

/* The placement rounds (reorder_place.c); each writes dst and returns 1,
 * or 0 when it does not apply or meets an inconsistency (dst undefined),
 * -1 when out of memory.
 *
 * insert: every pass, in the order of its start o[] (ties: seq), moves to
 *   the earliest gap of its device after its input that it fits in, no
 *   later than o, where the device's memory stays within cap at every
 *   point; with freeze, the steady state (from stage 0's first backward to
 *   stage 0's last forward) stays where it is.
 * wround: the W's are taken out; the cool-down (after stage 0's last
 *   forward), and the warm-up too unless freeze0, moves again into the
 *   earliest gaps; then each W goes into the first gap after its B that it
 *   fits in (oldest first), or just before an F that would pass the cap;
 *   a move is kept only if the memory, W's placed so, stays within cap.
 */
int sc_r_insert(const sc_rctx *c, const sc_instr *src, const double *o, const size_t *seq, int unit,
                int freeze, sc_instr *dst);
int sc_r_wround(const sc_rctx *c, const sc_instr *src, int unit, int freeze0, sc_instr *dst);

/* The list schedules (reorder_list.c): 1 = the squeeze with its gaps
 * filled by later ready passes; 3 = W as filler (each W in the first idle
 * time after its B, or when an F would pass the cap), then its gaps
 * filled. Same returns. */
int sc_r_list(const sc_rctx *c, const sc_instr *src, int strategy, sc_instr *dst);

#endif
