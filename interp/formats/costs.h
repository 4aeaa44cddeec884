/*
 * costs.h — cost files: the costs `stagecraft run --profile` measured, in
 * seconds, written for any recipe to load (docs/costs.md). The format is
 * JSON (docs/costs.md#loading-costs-into-a-recipe says why); one object:
 *
 *   {"stagecraft_costs": 1, "unit": "s", "devices": 2, "stages": 2,
 *    "placement": [0, 1],
 *    "tf": [...], "tb": [...], "tw": [...], "tbw": [...], "optim": [...], "tfb": [...],
 *    "tcomm": 4.1e-05, "fsdp_time": ..., "reduce_time": ...,
 *    "ts": [...], "tt": [...], "te": [...], "tew": [...],
 *    "collectives": {"latency": 2.1e-05, "per_byte": 1.5e-10, "samples": 48},
 *    "spread": {"tf": [...], ..., "tcomm": ...},
 *    "samples": {"tf": [...], ..., "tcomm": ...},
 *    "transfers": [{"bytes": 16384, "s": 4.1e-05, "spread": ..., "samples": 28}],
 *    "host_copies": [{"direction": "to_host", "bytes": ..., "s": ..., ...}],
 *    "offload_ratio": 0.12,
 *    "tokens": 20, "tf_per_token": [...], "tf_per_token2": [...], ... (costs_tok.h),
 *    "measured": {"recipe": "1f1b", "backend": "cpu", ...}}
 *
 * Per-stage lists hold one median per stage; `spread` the interquartile
 * range of the samples (seconds) and `samples` their number. The passes of
 * a split vocabulary (docs/vocab.md: S, T, E, EW) are per device: ts, tt, te,
 * tew hold one median per device and need `devices`. tfb, per stage: an
 * overlapped pair of F and B (sc_prog_set_cost_pair; OVERLAP_F_B of a
 * trace). dispatch, combine, per stage: the all-to-alls of one pass of an
 * ep program (ir/ep.h; their sum is sc_prog_set_ep_time). fsdp_time and reduce_time: FSDP's all-gather and reduce-scatter
 * of one stage (sc_fsdp_cfg's time and reduce_time; a trace's UNSHARD and
 * REDUCE_GRAD where FSDP was on). `collectives` is the
 * line fitted to the measured collectives: a collective takes latency +
 * per_byte · factor · bytes (sc_prog_coll_weight). Required:
 * stagecraft_costs (1), unit ("s"), stages, tf, tb, tw. The rest is
 * optional; an unknown top-level key is an error (a typo is never silent).
 *
 *     sc_jv *root; sc_costs c; char err[256];
 *     if (sc_json_parse(text, n, &root, err, sizeof err) == SC_OK &&
 *         sc_costs_from_json(root, &c, err, sizeof err) == SC_OK) ...
 *     sc_costs_free(&c);
 *
 * Messages name the field: "'tf'[2]: a time must be >= 0 (got -0.1)";
 * the caller puts the file's name in front.
 *
 * Ownership: sc_costs owns its arrays (sc_costs_free). Thread-safety: none
 * needed (no global state).
 *
 * Tested by: tests/unit/test_costs.c, tests/fuzz/fuzz_costs.c.
 */
#ifndef SC_COSTS_H
#define SC_COSTS_H

#include <stdio.h>

#include "ir/ir.h"
#include "jsonread.h"

#define SC_COSTS_VERSION 1

/* A measured time: median and interquartile range in seconds, over n
 * samples (n = 0: not measured; median NAN). */
typedef struct sc_stat {
    double median, spread;
    int n;
} sc_stat;

/* Per-stage pass kinds of a cost file, in file order. */
enum { SC_COST_F, SC_COST_B, SC_COST_W, SC_COST_BW, SC_COST_OPT, SC_COST_KINDS };

/* The JSON key of each kind: "tf", "tb", "tw", "tbw", "optim". */
extern const char *const sc_cost_keys[SC_COST_KINDS];

/* The vocabulary passes, per device, in file order: S, T, E, EW (the pass
 * kind is sc_vocab_op(index)); their keys "ts", "tt", "te", "tew". */
enum { SC_COST_VOCAB = 4 };
extern const char *const sc_cost_vocab_keys[SC_COST_VOCAB];
/* The names of DISPATCH's and COMBINE's per-stage lists. */
extern const char *const sc_cost_a2a_keys[2];

typedef struct sc_cost_size {
    double bytes;
    sc_stat t;
    int to_host;         /* host copies: 1 device to host, 0 back */
} sc_cost_size;

/* A named whole number: the sizes of the model a cost file was measured on. */
typedef struct sc_cost_int {
    const char *key;
    long long value;
} sc_cost_int;

typedef struct sc_costs {
    int P, S;             /* devices and stages profiled (P 0: not given) */
    int *placement;       /* [S] device of each stage, or NULL */
    sc_stat *kind[SC_COST_KINDS]; /* [S] each; tbw and optim may be unmeasured */
    sc_stat *tfb;         /* [S] an overlapped pair of F and B, or NULL: not measured */
    sc_stat *a2a[2];      /* [S] DISPATCH and COMBINE of one pass of each stage (expert
                             parallelism), or NULL: not measured */
    sc_stat *vocab[SC_COST_VOCAB]; /* [P] each, or NULL: not measured (no split vocabulary) */
    sc_stat comm;         /* one point-to-point transfer of the profiled model */
    sc_stat gather, reduce; /* FSDP: one stage's all-gather (UNSHARD), reduce-scatter
                               (REDUCE_GRAD and its wait); n 0: not measured */
    double coll_lat, coll_per_byte; /* collectives: the fitted line (coll_n 0: none) */
    int coll_n;
    sc_cost_size *xfer;   /* [nxfer] transfers by size */
    int nxfer;
    sc_cost_size *host;   /* [nhost] host copies by direction and size */
    int nhost;
    double offload_ratio; /* host-link time of one unit / (tf+tb+tw); NAN: unknown */
    /* Where it was measured (written; read back only by Lua, as a table). */
    const char *recipe, *backend, *transport, *machine;
    const sc_cost_int *model; /* [nmodel] the model's sizes (written as an object), or NULL */
    int nmodel;
    double unit_bytes;    /* bytes of one unit of the measured run's memory (0: unknown) */
    int m, steps, warmup, mpi; /* warmup < 0: not known (not written) */
    /* Another source than run --profile (NULL: run --profile's fields):
     * what measured it, how the devices ran, the files it was read from
     * (costs --from-trace, ptrace.h). */
    const char *what, *devices_as;
    const char *clock;    /* whose clock timed the passes: "gpu kernels", "cpu" (NULL: not said) */
    const char *const *files;
    int nfiles;
    sc_stat step;         /* the measured step time */
    int fsdp;             /* traces: 1 FSDP was on (its UNSHARD gathered), 0 off, -1 not known */
    double predicted_step; /* the step predicted from these costs (NAN: none) */
    double tokens;        /* per-token costs (costs_tok.h): the length of tf, tb, tw */
    double *per_token;    /* [6 S]: F, B, W per token, then per token²; NULL: none */
    int tok_lengths;      /* fitted to a profile: its distinct lengths (0: given, not fitted) */
    double tok_rms[3];    /* ... and the root mean square residual of F, B, W (worst stage) */
} sc_costs;

/* Allocates the per-stage arrays of an empty cost table of S stages
 * (medians NAN, n 0). SC_ERR_NOMEM. sc_costs_init_vocab adds the
 * per-device arrays of the vocabulary passes (P > 0). */
sc_status sc_costs_init(sc_costs *c, int P, int S);
sc_status sc_costs_init_vocab(sc_costs *c);
void sc_costs_free(sc_costs *c);

/* Checks a parsed cost file and fills c (its strings point into root:
 * keep root alive while c's provenance is read). SC_ERR_ARG with the
 * field named in err. */
sc_status sc_costs_from_json(const sc_jv *root, sc_costs *c, char *err, size_t errlen);

/* Writes c as a cost file (one object, one key per line). SC_ERR_ARG on a
 * write error. */
sc_status sc_costs_write(FILE *f, const sc_costs *c);

/* Sets the program's per-stage costs (tf, tb, tw, tbw, optim, tfb),
 * tcomm and, for a program with FSDP, its all-gather's and
 * reduce-scatter's times from c, in seconds (costs_apply.c). A file of other stages than
 * the program's is refused (SC_ERR_ARG, err naming both counts) unless
 * force: then each program stage takes its share of the file's stages
 * (sc_costs_resample). SC_ERR_ARG from the program's setters with its
 * message in err; SC_ERR_NOMEM. */
sc_status sc_costs_apply(const sc_costs *c, sc_prog *pg, int force, char *err, size_t errlen);

/* The per-stage times in[0..from) of a model split in `from` stages as
 * `to` stages of the same model, each an equal share of its layers:
 * out[s] sums the parts of the file's stages that stage s covers (two
 * stages into one add up; one into two halves). Linear in from + to. */
void sc_costs_resample(const double *in, int from, double *out, int to);

/* The median of x[0..n) and its interquartile range (sorts x). */
sc_stat sc_stat_of(double *x, int n);

#endif
