/*
 * autosched_impl.h — what the files of the automatic scheduler share: the
 * search context, the candidate orders, the two schedule builders.
 *
 * A candidate is one flat array of 3*S*m passes (B and W always split):
 * device d's order is ord[off[d] .. off[d+1]). Builders fill it completely
 * or fail; the context's scratch arrays are theirs while they run.
 *
 * Tested by: tests/unit/test_autosched.c, tests/lua/test_auto.lua.
 */
#ifndef SC_AUTOSCHED_IMPL_H
#define SC_AUTOSCHED_IMPL_H

#include "autosched.h"
#include "ir/ir_impl.h"

#define SC_AUTO_EPS 1e-9

typedef struct sc_actx {
    sc_prog *pg;
    int P, S, m;
    double limit;          /* memory limit + SC_AUTO_EPS, in the stages' units; with
                              lengths (ir/lengths.h) divided by the largest record's
                              scale, so that a schedule within it holds the limit */
    double real_limit;     /* memory limit + SC_AUTO_EPS: the simulated peak's */
    size_t N;              /* 3 S m */
    size_t *off;           /* [P+1] */
    double *endF, *endB;   /* [S m] scratch: end times, < 0 not done */
    double *e, *dt, *cur;  /* [P] scratch: device free time, decision time, memory */
    size_t *pc;            /* [P] scratch */
    int *nf, *nb, *nw;     /* [S] scratch: passes placed per stage */
    int *stack, *queued;   /* [P] scratch of the timing */
    double *wtime;         /* [S m] scratch: when W became available (B end) */
    int *maxw;             /* [2P] scratch of the list scheduler */
    int Q;                 /* the least power of two >= P */
    int *tree;             /* [2Q] scratch of the list scheduler: devices by dt */
    double *tk;            /* [2Q] their decision times (autosched_heur.c) */
    double spans;          /* sum of device spans of the last timing */
    int crit;              /* device with the longest span in the last timing */
    int use_sim;           /* candidates are timed by sc_simulate, not the dataflow */
} sc_actx;

/* The list scheduler's policy (autosched_heur.c). */
typedef struct sc_agreedy {
    int wfill;        /* 0: W only when memory forces it or nothing else is left;
                       * 1: also W that fit in the gap before the next arrival;
                       * 2: also W whenever nothing else is ready */
    int bwait;        /* do not start an F when a B arrives before it would end */
    int fnew;         /* prefer an F that opens a microbatch over one that
                       * continues an open one (several chunks per device) */
    const int *warm;  /* [P] most microbatches open on device d (its first
                       * stage's F done, that stage's B not), or NULL */
    const int *wlag;  /* [P] most W waiting on device d: beyond it a W goes
                       * before the next F (ZB-H1 delays W by d), or NULL */
} sc_agreedy;

/* The paper's heuristic, one stage per device, loop placement. flags: bit 0
 * allow a bubble before the first B (more warm-up F), bit 1 prioritize B
 * (skip an F that would delay an incoming B), bit 2 fill small gaps with W
 * greedily. Returns 0, or -1 when the limit cannot be kept this way. same
 * (may be NULL) is set when the other choice of bit 0 gives the same
 * schedule (the same warm-up counts; it decides nothing else). */
int sc_auto_zb(sc_actx *c, int flags, sc_instr *ord, int *same);

/* The Zero Bubble paper's greedy for the V placement (ZB-V,
 * autosched_zbv.c): flags bit 0 fill_f, bit 1 fill_b (one more W before a
 * forward, before a chunk-1 backward, when the wait exceeds the device's
 * share of the bubble); approved[P] (may be NULL): a previous run's idle
 * times, which set each device's share. idle[P] receives this run's idle
 * time per device (since its first F). Returns 0, -1 when the limit cannot
 * be kept this way (or the placement is not V), -2 out of memory. */
int sc_auto_zbv(sc_actx *c, int flags, const double *approved, double *idle, sc_instr *ord);

/* The list scheduler. Returns 0, or -1 (no progress possible). If maxopen
 * is not NULL it receives, per device, the most microbatches open at once,
 * and maxopen[P + d] the most W waiting at once. */
int sc_auto_greedy(sc_actx *c, const sc_agreedy *g, sc_instr *ord, int *maxopen);

/* The ZB-H family (one stage per device, loop placement): x[d] warm-up F
 * on device d, W delayed by x[P+d] microbatches. Always returns 0. */
int sc_auto_family(sc_actx *c, const int *x, sc_instr *ord);

/* The V family (two stages per device, V placement): x[d] warm-up F of the
 * first chunk, x[P+d] pairs of F, W delayed beyond x[2P+d] waiting, B of
 * the first chunk held back until x[3P+d] B of the second are ahead,
 * x[4P+d] (F, B) of the second chunk before the steady state, W delay
 * x[5P+d] in the cool-down. 0, or
 * -1 when the pattern left a pass out. */
int sc_auto_vfamily(sc_actx *c, const int *x, sc_instr *ord);

/* Times a candidate by the dataflow timing of its orders and checks its
 * memory. Returns 0 with *makespan and *span (the longest device span), -1
 * on a dependency cycle, -2 over the memory limit. */
int sc_auto_time(sc_actx *c, const sc_instr *ord, double *makespan, double *span);

static inline double sc_auto_cost(const sc_prog *pg, int op, int s)
{
    return sc_op_cost(pg, op, s);
}

static inline double sc_auto_dmem(const sc_prog *pg, int op, int s)
{
    return sc_op_mem(pg, op, s);
}

/* ---- what the driver (autosched.c), the candidates (autosched_cand.c)
 * and the search (autosched_search.c) share ---------------------------- */

/* A candidate: its orders (a flat array as above) and its figures. */
typedef struct sc_acand {
    sc_instr *ord;
    double mk, span;
    int ok;
} sc_acand;

/* The state of one sc_auto_fill. */
typedef struct sc_asearch {
    sc_actx c;
    const sc_auto_opts *o;
    sc_auto_result *res;
    double t0, deadline, lb, last_report;
    int max_evals, stopped;
    unsigned long long rng;
    sc_acand heur, best, tmp;
    const sc_instr *installed; /* the orders measure() left in the program,
                                * lowered and verified (NULL: none) */
    struct sc_sim *sim;        /* their simulation (NULL: none) */
} sc_asearch;

/* Seconds on the monotonic clock. */
double sc_auto_now(void);
/* Whether (mk, span) beats candidate b by the objective: the makespan (what
 * a step costs), then the longest device span (the papers' bubble rate). */
int sc_auto_better(double mk, double span, const sc_acand *b);
/* Replaces pg's orders by the candidate's. */
sc_status sc_auto_install(sc_prog *pg, const sc_actx *c, const sc_instr *ord);
/* Times se->tmp: 0 with its figures, or -1 (invalid or over the limit). */
int sc_auto_timing(sc_asearch *se, double *mk, double *span);
/* Makes se->tmp the candidate *into (swapping the buffers). */
void sc_auto_take(sc_asearch *se, sc_acand *into, double mk, double span);
/* Times se->tmp; when it beats *into, takes it (swapping the buffers).
 * 1 if it did. */
int sc_auto_offer(sc_asearch *se, sc_acand *into);
/* Whether the search must stop now (time, budget, or nothing to gain);
 * reports progress. */
int sc_auto_must_stop(sc_asearch *se);
/* The search's random numbers (splitmix64; seeded by the options). */
unsigned long long sc_auto_rand(sc_asearch *se);

/* autosched_search.c: the heuristic phase (into se->heur), the local walks
 * over the families and the list scheduler (into se->best; 0, or -1 out of
 * memory), and the last polish of se->best by single moves. */
void sc_auto_heuristic(sc_asearch *se);
int sc_auto_improve(sc_asearch *se);
void sc_auto_polish(sc_asearch *se);

#endif
