/*
 * sim.h — discrete-event simulation of a lowered program.
 *
 * The streams are replayed under the communication semantics (docs/semantics.md)
 * (the same replay the verifier uses) with the cost model: a compute pass
 * takes its stage's T_F, T_B, T_W (BW: its own T_BW when given, else
 * T_B + T_W); a transfer takes T_comm from the moment both its sides are
 * posted in running groups; OPTIM takes the optimizer time of the device's
 * stages (0 unless a cost file gave it); REDUCE takes no time. Compute and
 * communication overlap.
 *
 * Results:
 *   makespan     end of the last pass on any device (the first starts at 0);
 *   step         end of the last instruction of any device (OPTIM included):
 *                the step time a runtime measures;
 *   bubble_rate  1 - max_d busy_d / max_d (end_d - start_d);
 *   busy[d]      sum of compute time on device d;
 *   peak_mem[d]  highest activation memory on device d, in units: F adds its
 *                stage's units, B frees (1 - w_keep) of them, W frees
 *                w_keep of them, BW frees all;
 *   t0/t1        start and end of every instruction (transfers: when the
 *                group was posted and when it completed; OFFLOAD and RELOAD:
 *                when their copy starts and ends on the host link; DROP:
 *                when the device reaches it and when it frees the record);
 *   mem          device memory after every instruction: DROP frees and
 *                RELOAD allocates its fraction of the record (offload.h);
 *   host_peak[d] highest host memory holding device d's records, in units:
 *                OFFLOAD adds its fraction, the B (or BW) that reads the
 *                reloaded record frees it;
 *   link_busy    time each host-link channel is busy: [2d] device-to-host,
 *                [2d+1] host-to-device;
 *   step_*       per training step (steps > 1, docs/steps.md): when it ends (the
 *                last OPTIM of it), its share of the makespan and its own
 *                bubble rate; makespan and bubble_rate above are those of
 *                all steps together (the bubble across steps).
 *   coll_busy[d] time device d's collective channel is busy: each of its
 *                collectives from its start (posted, and the device's
 *                previous collective complete) to its completion (t1).
 *
 * Ownership: the caller owns the sc_sim and frees it with sc_sim_free
 * (its arrays come from ir/alloc.h: an sc_sim made outside interp, like
 * run's measured timeline, allocates them there too).
 * Tested by: tests/unit/test_interp.c, tests/unit/test_steps.c, tests/unit/test_offload.c.
 */
#ifndef SC_SIM_H
#define SC_SIM_H

#include "ir/ir.h"

typedef struct sc_sim {
    int P;
    double makespan, bubble_rate;
    double step;           /* end of the last instruction (with OPTIM) */
    double *busy, *start, *end, *peak_mem; /* [P] */
    size_t *offset;        /* [P+1]: instruction k of device d is offset[d] + k */
    double *t0, *t1;       /* [offset[P]] start and end times */
    double *mem;           /* [offset[P]] memory of the device after instruction */
    /* Offload; NULL (and 0) when no stream holds host copies: */
    double *host;          /* [offset[P]] host memory of the device after instruction */
    double *host_peak;     /* [P] */
    double *link_busy;     /* [2P] */
    double moved;          /* units moved to the host in the step */
    /* Steps (docs/steps.md): step k holds microbatches k·m .. k·m+m-1. */
    int steps;
    double *step_end;      /* [steps] the latest end of its OPTIM on any device */
    double *step_makespan; /* [steps] step_end[k] - step_end[k-1] (step_end[-1] = 0) */
    double *step_bubble;   /* [steps] bubble rate of the step alone: each device's span
                            * from its first to its last pass of the step */
    double *rollback_cost; /* [steps] post-validation: how much longer all steps take when
                            * the rollback path of step k's VALIDATE runs (NULL without
                            * one; the first 64 steps) */
    /* Collectives; NULL (and 0) when no stream holds one: */
    double *coll_busy;     /* [P] */
    size_t colls;          /* collective instructions, all devices */
} sc_sim;

/* Link usage over time: the fraction of each of n equal slices of
 * [0, makespan] in which device d's host-link channel dir (0: to the host,
 * OFFLOAD; 1: back, RELOAD) is busy; all 0 without host copies. */
#define SC_USAGE_BINS 20
void sc_sim_link_usage(const sc_prog *pg, const sc_sim *sim, int d, int dir, int n, double *out);

/* Simulates a lowered program (sc_check first). On a deadlock the status is
 * SC_ERR_DEADLOCK and the message names the cycle. */
sc_status sc_simulate(sc_prog *pg, sc_sim **out);
/* The same streams of pg (verified: sc_check first) timed with the costs of
 * `costs`, a program of the same devices and stages (T_F, T_B, T_W, T_BW,
 * T_OPT, T_comm and the host link's ratio; nothing else of it is read): what those streams take with
 * measured costs, without lowering them again for the new costs. pg is left
 * as it was. SC_ERR_ARG when the shapes differ or pg is not verified. */
sc_status sc_simulate_costs(sc_prog *pg, const sc_prog *costs, sc_sim **out);
void sc_sim_free(sc_sim *sim);

/* Fills the step_* figures (and steps) of a timing of pg's streams, from
 * its t0/t1 and offset: for sc_simulate, and for a measured run's timeline
 * (runtime/run/run.h). Replaces what was there. */
sc_status sc_sim_steps(sc_prog *pg, sc_sim *sim);

#endif
