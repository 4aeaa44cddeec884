/*
 * reorder_impl.h — what the reorder's files share (reorder.c drives,
 * reorder_list.c holds the list schedules, reorder_place.c the placement
 * rounds). Not for use outside interp/schedule/.
 *
 * A candidate is a flat array of the program's passes, device by device:
 * device d's passes are at [base[d], base[d+1]), in the candidate's order.
 * Every candidate is a permutation of each device's passes; the driver
 * times it with the real costs and keeps the best one within the caps.
 *
 * Tested by: tests/unit/test_reorder.c.
 */
#ifndef SC_REORDER_IMPL_H
#define SC_REORDER_IMPL_H

#include "ir/alloc.h"
#include "ir/ir_impl.h"
#include "ir/wintree.h"

#include <math.h>
#include <stddef.h>

#define SC_R_EPS 1e-9

/* What the rounds read of a pass of kind F, B, BW or W on a stage, made
 * once per reorder (sc_r_tab_new), where every microbatch goes through
 * every stage (copies <= 1): the same figures as sc_pass_cost, sc_op_slots,
 * sc_pass_mem and sc_pass_dep, looked up instead of worked out for every
 * pass of every round. */
typedef struct sc_rpass {
    double cost, slots, mem;
    int32_t dep;    /* its input's end at dep + mb in endF (endB with dep_b); -1: none */
    int32_t ddev;   /* the input's device */
    int32_t end;    /* its own end at end + mb in endF (endB with end_b); -1: not kept */
    int32_t cons;   /* the device of its consumer on the next stage; -1 none, -2 its own */
    int8_t dep_b, end_b;
} sc_rpass;

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
    const struct sc_rtab *tab; /* the passes' figures (sc_r_tab_new), or NULL */
} sc_rctx;

/* The table: row[op] the figures of op by stage (F, B, BW, W), NULL for
 * the other kinds. */
typedef struct sc_rtab {
    const sc_rpass *row[256];
    sc_rpass cell[]; /* [4 S] */
} sc_rtab;

/* The table for pg (sc_free it), or NULL: where copies > 1 (a pass's
 * input depends on its microbatch) or out of memory; then every pass is
 * worked out as before. */
sc_rtab *sc_r_tab_new(const sc_prog *pg);

/* A pass's figures, or NULL (no table, or another kind). */
static inline const sc_rpass *sc_r_pass(const sc_rctx *c, const sc_instr *in)
{
    const sc_rpass *r = c->tab ? c->tab->row[in->op] : NULL;
    return r ? r + in->stage : NULL;
}

/* The duration model of a placement round: the real costs and T_comm, or
 * unit slots (F, B, W one, BW two, no T_comm: the papers' cost-oblivious
 * grid). */
static inline double sc_r_dur(const sc_prog *pg, const sc_instr *in, int unit)
{
    if (unit)
        return sc_op_slots(in->op);
    return sc_pass_cost(pg, in);
}

/* sc_r_dur and sc_pass_mem through the table where it has the pass. */
static inline double sc_r_cost(const sc_rctx *c, const sc_instr *in, int unit)
{
    const sc_rpass *p = sc_r_pass(c, in);
    return p ? (unit ? p->slots : p->cost) : sc_r_dur(c->pg, in, unit);
}
static inline double sc_r_mem(const sc_rctx *c, const sc_instr *in)
{
    const sc_rpass *p = sc_r_pass(c, in);
    return p ? p->mem : sc_pass_mem(c->pg, in);
}

/* A pass that writes the weight gradient alone (W, split from its B): the
 * passes the W rounds move and fill in. */
static inline int sc_r_w_only(int op) { return sc_op_is_wgrad(op) && !sc_op_is_bgrad(op); }

/* Start and end of every pass of ord (indexed like ord) under the model,
 * each as early as its device and its dependency allow; seq (may be NULL)
 * numbers them in a topological order. Returns 0 when the orders are
 * inconsistent (a cycle), -1 when out of memory, 1 on success. */
int sc_r_time(const sc_rctx *c, const sc_instr *ord, int unit, double *start, double *end,
              size_t *seq);

/* A timing of a candidate under the real costs (sc_r_time with unit 0):
 * the driver times every candidate to judge it and hands the timing on to
 * a round that starts from that candidate, which need not time it again. */
typedef struct sc_rtime {
    double *st, *en; /* [N] start and end of every pass */
    size_t *seq;     /* [N] a topological numbering */
    int ok;          /* sc_r_time's return */
} sc_rtime;

/* ---- what the placement rounds share (reorder_place.c) ---------------- */

/* End of the dependency of `in` (on device d) plus T_comm across devices
 * (none on the unit grid); 0 without one; < 0 while it has not run. */
static inline double sc_r_ready_at(const sc_rctx *c, int d, const sc_instr *in,
                                   const double *endF, const double *endB, int unit)
{
    const sc_prog *pg = c->pg;
    const sc_rpass *p = sc_r_pass(c, in);
    if (p) {
        if (p->dep < 0)
            return 0;
        double e = (p->dep_b ? endB : endF)[p->dep + in->mb];
        if (e < 0)
            return -1;
        return e + (!unit && p->ddev != d ? pg->tcomm : 0);
    }
    int dop, ds;
    if (!sc_pass_dep(pg, in, &dop, &ds))
        return 0;
    double e = (dop == SC_OP_F ? endF : endB)[SC_SM(pg, ds, in->mb)];
    if (e < 0)
        return -1;
    return e + (!unit && pg->stage_dev[ds] != d ? pg->tcomm : 0);
}
void sc_r_set_end(const sc_prog *pg, const sc_instr *in, double e, double *endF, double *endB);

/* A pass in a round's global order: its start, then seq. */
typedef struct gkey {
    double t;
    size_t seq;
    uint32_t k;
} gkey;
int sc_r_gkey_cmp(const void *pa, const void *pb);
/* The rounds merge their keys in a lane buffer of 3 N doubles. */
_Static_assert(sizeof(gkey) <= 3 * sizeof(double), "a key fits in three doubles");
/* Sorts g[0..n) made of P sorted runs (run d at [run[d], run[d+1])) by a
 * merge; tmp has room for n. 0 when out of memory. */
int sc_r_gmerge(int P, gkey *g, const size_t *run, gkey *tmp);

/* The order a round walks its passes in, where its keys are a timing that
 * sc_r_time made of src (seq its topological numbering): inv[x] is the
 * position in src of the pass numbered x. A round's placement of a pass
 * reads only its device's lane (the passes of its device placed before
 * it) and its inputs' ends, so any order that keeps each device's order
 * and puts every input first places every pass as the merge by key does,
 * where the keys are a timing (every input's key is below its
 * consumer's); seq is such an order (sc_r_time runs each device's passes
 * in order, each once its input is out): O(N), no comparison, no walk.
 * What the merge's order also gave, the phase of each pass, sc_r_phase
 * says from the keys. */
void sc_r_seq_order(const size_t *seq, size_t N, uint32_t *inv);

/* The phase boundaries of a round's global order, from the keys: the first
 * backward of stage 0 (b) and stage 0's forward of the last microbatch
 * (f). sc_r_phase_of(ph, x): 0 before b, 1 from b to f (both in), 2
 * after; 1 is what sc_r_steady says of x walking the keys in sorted order. */
typedef struct sc_rphase {
    gkey b, f;
    int hasb, hasf;
} sc_rphase;
void sc_r_phase_init(const sc_prog *pg, const sc_instr *src, const gkey *g, size_t n, sc_rphase *ph);
int sc_r_phase_of(const sc_rphase *ph, const gkey *x);

/* Phases of a round's walk: 0 warm-up, 1 steady state (from stage 0's
 * first backward), 2 cool-down (after stage 0's forward of the last
 * microbatch). Returns whether `in` is in the steady state. */
int sc_r_steady(const sc_prog *pg, const sc_instr *in, int *phase);

/* A device's placed passes: sorted by start, non-overlapping. */
typedef struct lane {
    double *t0, *t1, *lvl; /* start, end, memory after the pass */
    uint32_t *idx;         /* position in the source */
    size_t n;
    int tiny;              /* holds a pass with t1 < t0 + SC_R_EPS (t1 may then not grow) */
} lane;
/* The first placed pass at or after lo that ends after r. */
size_t sc_r_first_after(const lane *L, size_t lo, double r);
/* Inserts before position j; the levels after it move by delta. */
void sc_r_lane_insert(lane *L, size_t j, double t0, double t1, double lvl, uint32_t idx,
                      double delta);
/* P empty lanes over buffers of N (freed by the caller, also on failure). */
int sc_r_lanes_new(const sc_rctx *c, lane *L, double **buf, uint32_t **ibuf);

/* Whether every pass of ord costs alpha times its unit-grid slots, alpha
 * one power of two (2^-20 .. 2^20), and T_comm is 0: then a round on the
 * unit grid gives the orders of the same round on the real costs from
 * the same orders, to the byte (its times are the real ones over alpha,
 * exactly), and the reorder takes them instead of making them again. */
int sc_r_scaled_slots(const sc_rctx *c, const sc_instr *ord);

/* ---- the rounds ---------------------------------------------------------- */

/* The placement rounds (reorder_place.c, reorder_wround.c); each writes dst and returns 1,
 * or 0 when it does not apply or meets an inconsistency (dst undefined),
 * -1 when out of memory.
 *
 * insert: every pass, in the order of its start o[] (ties: seq), moves to
 *   the earliest gap of its device after its input that it fits in, no
 *   later than o, where the device's memory stays within cap at every
 *   point; with freeze, the steady state (from stage 0's first backward to
 *   stage 0's last forward) stays where it is.
 * wround: (ts: src's timing under the real costs when unit is 0, or NULL)
 *   the W's are taken out; the cool-down (after stage 0's last
 *   forward), and the warm-up too unless freeze0, moves again into the
 *   earliest gaps; then each W goes into the first gap after its B that it
 *   fits in (oldest first), or just before an F that would pass the cap;
 *   a move is kept only if the memory, W's placed so, stays within cap.
 */
int sc_r_insert(const sc_rctx *c, const sc_instr *src, const double *o, const size_t *seq, int unit,
                int freeze, sc_instr *dst);
int sc_r_wround(const sc_rctx *c, const sc_instr *src, const sc_rtime *ts, int unit, int freeze0,
                sc_instr *dst);

/* What a list schedule knows of the timing of the orders it wrote: it ran
 * every pass at the later of its device's last end and its input's end
 * (plus T_comm across devices), as sc_r_time times dst, so its figures are
 * sc_r_time's to the bit (exact), unless a gap filler started before its
 * input's end (within SC_R_EPS) or a pass's input is found another way
 * (a vocabulary pass's): then exact is 0 and the rest undefined. span and
 * makespan as the judge takes them; over: some device's memory, summed in
 * its order, passes its cap + 1e-7. */
typedef struct sc_rlist_time {
    int exact, over;
    double span, makespan;
} sc_rlist_time;

/* The list schedules' devices by the time of their next step: a winner
 * tree (ir/wintree.h). */

/* The list schedules (reorder_list.c): 1 = the squeeze with its gaps
 * filled by later ready passes; 3 = W as filler (each W in the first idle
 * time after its B, or when an F would pass the cap), then its gaps
 * filled. Same returns; on 1, *lt (may be NULL) says what it knows of
 * dst's timing. */
int sc_r_list(const sc_rctx *c, const sc_instr *src, int strategy, sc_instr *dst,
              sc_rlist_time *lt);

#endif
