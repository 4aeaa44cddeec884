/*
 * profile_impl.h — what the files of a profile share (runtime/run/ only):
 * profile_samples.c gathers the samples of each timed step from the
 * executor's timestamps and says how well they know their medians;
 * profile.c runs the steps, in rounds until those medians are stable, and
 * turns the samples into the cost file (profile.h); profile_tok.c fits the
 * per-token costs of microbatches of different lengths.
 * Tested by: tests/costs.sh (through profile.h).
 */
#ifndef SC_PROFILE_IMPL_H
#define SC_PROFILE_IMPL_H

#include "formats/costs.h"
#include "model/model.h"
#include "profile.h"

/* A growable list of samples, in the order of the steps that gave them:
 * step k's are v[end[k-1] .. end[k]) (sc_samples_mark). */
typedef struct vec {
    double *v;
    int n, cap;
    int *end;
    int nend, capend;
} vec;

/* Host copies are marked in sized.to_host: 1 to the host, 0 back; transfers
 * use -1, collectives -2 (their bytes: factor · bytes, sc_prog_coll_weight). */
#define SC_SAMPLES_XFER (-1)
#define SC_SAMPLES_COLL (-2)

/* Samples by size: transfers, collectives, or host copies of one direction. */
typedef struct sized {
    double bytes;
    int to_host;
    vec t;
} sized;

/* Passes' raw times beside their microbatch's length: the points of the
 * per-token fit (formats/costs_tok.h). */
typedef struct tokpts {
    double *L, *t;
    int n, cap;
} tokpts;

typedef struct samples {
    int P, S;
    vec *kind[SC_COST_KINDS]; /* [S] each (optim: [P], per device) */
    vec *vocab[SC_COST_VOCAB]; /* [P] each: S, T, E, EW */
    tokpts *tok[3];           /* [S] each: F, B, W at their lengths (with lengths) */
    sized *sz;
    int nsz, capsz;
    int steps;                /* marked (sc_samples_mark) */
    int bad;                  /* out of memory */
} samples;

sc_status sc_samples_new(samples *sm, int P, int S);
void sc_samples_free(samples *sm);

/* The samples of one timed step of pg (ms: its measured timing; cpu, or
 * NULL: the device threads' CPU time in each instruction, which then times
 * the passes and OPTIM, profile.h). */
void sc_samples_collect(samples *sm, const sc_prog *pg, const sc_sim *ms, const double *cpu,
                        const sc_model *md);

/* The end of a step: every figure's samples so far are marked as the steps
 * before the next one (a figure the step did not sample gets an empty step). */
void sc_samples_mark(samples *sm);

/* The figures not known well enough (profile.h: the 95% interval of the
 * median, precision.h, against target, SC_PROFILE_FLOOR_S and
 * SC_PROFILE_SHARE of the step time `step`), the least precise first, into
 * *out (malloc'd, *n of them; NULL when none). -1 when out of memory. */
int sc_samples_unstable(const samples *sm, double target, double step, sc_unstable **out,
                        int *n);

/* pg's lengths and their scales onto v, a program of the same stages and
 * microbatches (the variant that times the kinds pg lacks, profile.c). */
sc_status sc_profile_copy_lengths(const sc_prog *pg, sc_prog *v);

/* A point of kind k (F, B, W) of stage s: time t of a microbatch of L tokens. */
void sc_samples_add_tok(samples *sm, int k, int s, double L, double t);

/* With lengths of at least 2 distinct values: per-token costs (costs_tok.h)
 * fitted to sm's points by least squares (the quadratic term from 3
 * lengths) into c, each of tf, tb, tw then the fit's value at ref, the
 * reference length. A kind without points keeps its median (no per-token
 * part). SC_ERR_NOMEM; SC_OK with nothing fitted otherwise. */
sc_status sc_samples_fit_tok(const samples *sm, double ref, sc_costs *c);

#endif
