/*
 * profile.h — measuring a program's costs on the backend in use
 * (docs/costs.md): `stagecraft run RECIPE --profile FILE`.
 *
 *     sc_profile *pf;
 *     char err[512];
 *     sc_profile_opts po = {.warmup = 1, .steps = 5, .target = 0.02, .max_steps = 100};
 *     if (sc_profile_run(pg, &opts, "1f1b", &po, &pf, err, sizeof err) == SC_OK) {
 *         sc_costs_write(f, &pf->costs);              // the cost file
 *         printf("%g s, predicted %g s\n", pf->run->step_time_s, pf->predicted->step);
 *     }
 *     sc_profile_free(pf);
 *
 * What it does: `warmup` untimed steps, then `steps` timed ones, each a
 * whole step of sc_run (run.h) through the program's streams. The
 * executor's start and end of every instruction give the samples: each
 * compute pass of a stage (F, B, W, BW), each OPTIM (split over the
 * device's stages by their parameter bytes), each transfer (from the later
 * of its two posts to the earlier of its two observed completions: the
 * time the transfer itself took, not the waiting for a peer), each host
 * copy (OFFLOAD to the host, RELOAD back, by bytes). When the program has
 * no BW pass (or no B and W), the same order with B and W fused (or split)
 * runs as many steps beside it, so that every kind is measured. Each cost
 * is the median of its samples, with their interquartile range.
 *
 * Rounds: with a target, the steps are repeated until every figure (each
 * kind of each stage, OPTIM and the vocabulary passes of each device, each
 * size of transfer, host copy and collective) has its median known within
 * ±target of it: the half width of a 95% bootstrap interval over the
 * steps (precision.h). A figure also counts as known when that half width
 * is under SC_PROFILE_FLOOR_S, or when, times the figure's samples per
 * step, it is under SC_PROFILE_SHARE · target of the step time: a small
 * figure (a transfer of tens of microseconds in a step of 0.2 s) whose
 * uncertainty cannot move the step, though its own spread is large (a
 * thread that spins or sleeps makes two modes). Each new round runs as
 * many steps as all before it (the interval halves in about two rounds),
 * until max_steps timed steps or until the timed steps have taken max_s
 * seconds; then the figures still wider are in `unstable`. The samples
 * accumulate: no step is thrown away. The decision reads only the
 * samples and the measured step times, which every MPI rank has alike, so
 * that all ranks run the same rounds.
 *
 * Then the program's own streams are timed with those costs
 * (sc_simulate_costs): `predicted` is the prediction of exactly the steps
 * that ran, and `run` is the timed step whose time is the median, so that
 * the two can be compared (compare.h). The cost file's `measured` part says
 * where and how it was measured.
 *
 * Works with any backend and device kind of sc_run (threads, MPI ranks,
 * GPUs): only the executor's timestamps are read. Under MPI every rank
 * computes the same figures (the times are gathered on every rank).
 * Tested by: tests/unit/test_costs.c, tests/costs.sh.
 */
#ifndef SC_PROFILE_H
#define SC_PROFILE_H

#include "formats/costs.h"
#include "run.h"

/* A figure whose median is not known within the target. */
typedef struct sc_unstable {
    char what[64];       /* "tf of s1", "transfers of 4096 bytes", ... */
    double median, half; /* seconds: the median and the half width of its 95% interval */
    double iqr;          /* the samples' interquartile range, relative to the median */
    int n;               /* samples */
} sc_unstable;

typedef struct sc_profile sc_profile;

/* The target of `run --profile` without --profile-steps: every median
 * known within 2% of itself. */
#define SC_PROFILE_TARGET 0.02
/* A figure known within this many seconds is as stable as the executor's
 * own time between instructions (a few microseconds) lets it be. */
#define SC_PROFILE_FLOOR_S 5e-6
/* ... and one whose uncertainty, over all its occurrences in a step, is
 * under this share of target times the step (profile.h, the rounds). */
#define SC_PROFILE_SHARE 0.1

typedef struct sc_profile_opts {
    int warmup;          /* untimed steps first, >= 0 */
    int steps;           /* timed steps of the first round, >= 1 */
    double target;       /* more rounds while a figure is not known within ±target of its
                          * median (0.02: 2%); 0: one round */
    int max_steps;       /* at most this many timed steps in all (>= steps) */
    double max_s;        /* no new round once the timed steps took this long (0: no cap) */
    int wall;            /* time the passes on the wall clock even where the threads' CPU
                          * clocks could (sc_profile_cpu_clock): the machine's load then
                          * counts in the costs */
    /* Called before each new round with the figures still unstable
     * (p->unstable) and the steps it will run; may be NULL. */
    void (*round)(void *arg, const sc_profile *p, int next_steps);
    void *round_arg;
} sc_profile_opts;

struct sc_profile {
    sc_costs costs;          /* what was measured (the cost file) */
    sc_run_result *run;      /* the timed step with the median time */
    sc_sim *predicted;       /* the program's streams timed with `costs` (seconds) */
    sc_prog *cost_prog;      /* a program holding `costs` (for sc_simulate_costs) */
    double *step_times;      /* [steps] the timed steps, in order */
    int steps, warmup;       /* timed steps (all rounds) and untimed ones */
    int calibrated;          /* the variant that also ran: 0 none, 1 split, 2 fused */
    int rounds;              /* rounds run */
    double target;           /* the target it was run with */
    double spent_s;          /* the timed steps' time, the variant's included */
    sc_unstable *unstable;   /* [nunstable] after the last round, least precise first;
                              * NULL without a target */
    int nunstable;
    int capped;              /* what ended it with figures unstable: 1 max_steps, 2 max_s */
    int clock_cpu;           /* the passes were timed on their threads' CPU clocks */
    sc_cost_int model[SC_MODEL_NSIZES]; /* the model's sizes (costs.model points here) */
    char machine[160];       /* costs.machine points here */
};

/* Runs and measures (above). ro as for sc_run (with ro->check every step
 * of the program is checked; the reference trains before a step's clock
 * starts); o: the steps and rounds. recipe names it in the cost file.
 * Errors as sc_run. */
sc_status sc_profile_run(sc_prog *pg, const sc_run_opts *ro, const char *recipe,
                         const sc_profile_opts *o, sc_profile **out, char *err, size_t errlen);
void sc_profile_free(sc_profile *p);

/* 1 when the passes of a run with o can be timed on their threads' CPU
 * clocks: the CPU backend with one BLAS thread per device (its own choice,
 * unless OPENBLAS_NUM_THREADS or OMP_NUM_THREADS asks for more: then part
 * of a product runs on other threads, and only the wall clock sees it).
 * GPUs: their passes are the GPU's time, the wall clock. */
int sc_profile_cpu_clock(const sc_run_opts *o);

#endif
