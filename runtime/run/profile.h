/*
 * profile.h — measuring a program's costs on the backend in use
 * (docs/costs.md): `stagecraft run RECIPE --profile FILE`.
 *
 *     sc_profile *pf;
 *     char err[512];
 *     if (sc_profile_run(pg, &opts, 1, 5, &pf, err, sizeof err) == SC_OK) {
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
 * runs `steps` more steps, so that every kind is measured. Each cost is the
 * median of its samples, with their interquartile range.
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
 */
#ifndef SC_PROFILE_H
#define SC_PROFILE_H

#include "formats/costs.h"
#include "run.h"

typedef struct sc_profile {
    sc_costs costs;          /* what was measured (the cost file) */
    sc_run_result *run;      /* the timed step with the median time */
    sc_sim *predicted;       /* the program's streams timed with `costs` (seconds) */
    sc_prog *cost_prog;      /* a program holding `costs` (for sc_simulate_costs) */
    double *step_times;      /* [steps] the timed steps, in order */
    int steps, warmup;
    int calibrated;          /* the variant that also ran: 0 none, 1 split, 2 fused */
    sc_cost_int model[SC_MODEL_NSIZES]; /* the model's sizes (costs.model points here) */
    char machine[160];       /* costs.machine points here */
} sc_profile;

/* Runs and measures (above). o as for sc_run (with o->check every step of
 * the program is checked; the reference trains before a step's clock
 * starts). warmup >= 0, steps >= 1. recipe names it in the cost file.
 * Errors as sc_run. */
sc_status sc_profile_run(sc_prog *pg, const sc_run_opts *o, const char *recipe, int warmup,
                         int steps, sc_profile **out, char *err, size_t errlen);
void sc_profile_free(sc_profile *p);

#endif
