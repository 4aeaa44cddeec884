/*
 * ir_impl.h — the body of sc_prog, for the modules of interp/ only.
 * Outside interp/, use the accessors of ir.h.
 */
#ifndef SC_IR_IMPL_H
#define SC_IR_IMPL_H

#include "ir.h"
#include "offload_cfg.h"

#include <stdarg.h>

/* A growable array of instructions (one device's order or stream). */
typedef struct sc_vec {
    sc_instr *v;
    size_t n, cap;
} sc_vec;

/* The part of a collective's description the instruction does not hold
 * (sc_instr.coll indexes the program's array of them). */
typedef struct sc_ctail {
    int32_t root, group, step;
    double bytes;
} sc_ctail;

struct sc_prog {
    int P, S, m;
    int *stage_dev; /* [S] placement */
    int *chunk;     /* [S] index of the stage among its device's stages */
    int *nchunks;   /* [P] stages per device */
    int **dev_stages; /* [P][nchunks] stages of each device, ascending */
    double *tf, *tb, *tw; /* [S] per-stage costs */
    double *tbw;    /* [S] BW's own time; NAN: tb + tw */
    double *topt;   /* [S] the optimizer step of the stage's parameters (OPTIM) */
    int seconds;    /* costs are seconds (a cost file), not abstract units */
    double *mem;    /* [S] units per (stage, microbatch) */
    double tcomm, w_keep;
    double mem_limit; /* peak memory allowed per device, units (INFINITY: none) */
    sc_vec *order;  /* [P] compute passes as given */
    sc_vec *stream; /* [P] lowered; n = 0 until lowered */
    int lowered, verified;
    int given;      /* streams came from sc_prog_push_stream: never re-lowered */
    size_t npasses; /* Σ order[d].n: at most sc_prog_max_passes (a guard on memory) */
    size_t ngiven;  /* Σ stream[d].n of given streams, likewise bounded */
    int steps;      /* training steps (1..SC_MAX_STEPS) */
    int sync;       /* sc_sync of the optimizer steps */
    int nmb;        /* microbatch numbers in the streams: m, or m·steps once unrolled */
    sc_offload_cfg off;   /* offload policy (offload.h); policy NONE: none */
    double *off_frac;     /* [S*m] fractions of the TABLE policy, or NULL */
    double **off_levels;  /* [S] fractions the runtime can move, or NULL (offload.h) */
    int *off_nlevels;     /* [S] */
    sc_offload_info *off_info; /* what the last lowering moved, or NULL */
    sc_ctail *coll;       /* [ncoll] collectives of the streams (sc_instr.coll) */
    size_t ncoll, capcoll;
    int **grp;            /* [ngroups] members of each group, ascending; grp[0]: all */
    int *ngrp;            /* [ngroups] */
    int ngroups;
    double coll_lat, coll_bw; /* cost of collectives (sc_prog_set_coll_cost) */
    char err[768];
};

sc_status sc_vec_push(sc_vec *vec, sc_instr in);
/* Room for n instructions in all (n - vec->n more pushes need no growth). */
sc_status sc_vec_reserve(sc_vec *vec, size_t n);
void sc_vec_free(sc_vec *vec);

/* Appends collective c to vec (a stream of pg), its description to pg->coll.
 * Checks the kind, reduction, tag part and group; not the members. */
sc_status sc_coll_push(sc_prog *pg, sc_vec *vec, const sc_coll *c);

/* Ring factor of a collective kind: the fraction of the buffer each member
 * sends (all-reduce 2(n-1)/n: reduce-scatter and all-gather; broadcast
 * (n-1)/n, pipelined along the ring). Add a collective kind here. */
static inline double sc_coll_factor(int op, int n)
{
    if (n <= 1)
        return 0;
    switch (op) {
    case SC_OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case SC_OP_BCAST: return (double)(n - 1) / n;
    default: return 0;
    }
}

/* What an instruction reads from collectives (design.md §6: "a compute
 * instruction waits only for the collectives whose results it reads"): the
 * collectives tagged (what, stage, mb) with parts 0..part, all posted before
 * it on its device; what < 0 means every collective posted before it. */
typedef struct sc_cread {
    int what, stage, mb, part;
} sc_cread;
#define SC_CREAD_MAX 4

/* The reading rules, in one place: instruction `in` of device d reads the
 * collectives rd[0..n) (returns n). OPTIM waits for every collective its
 * device posted before it (the end of the step: a gradient norm or an
 * inf/NaN flag is read by the optimizer). */
static inline int sc_coll_reads(const sc_prog *pg, int d, const sc_instr *in, sc_cread *rd)
{
    (void)pg;
    (void)d;
    if (in->op == SC_OP_OPTIM || in->op == SC_OP_VALIDATE) {
        rd[0] = (sc_cread){-1, -1, -1, 0};
        return 1;
    }
    /* Post-validation's rollback path (SPEC.md §21.2): an F whose producer
     * was redone reads the broadcast of the redone output. */
    if (in->op == SC_OP_F && (in->flags & SC_IF_REDO_IN)) {
        rd[0] = (sc_cread){SC_OP_F, in->stage - 1, in->mb, 0};
        return 1;
    }
    return 0;
}

/* Whether some instruction of the program may read a collective other than
 * through OPTIM (then the replay maps readers even without collectives, so
 * that a missing collective is reported). */
static inline int sc_prog_reads_colls(const sc_prog *pg)
{
    (void)pg;
    return 0;
}

/* Records a printf-style message as the program's error; returns st. */
sc_status sc_fail(sc_prog *pg, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 3·S·m: no valid program has more passes (F, B and W of each stage and
 * microbatch), so no order may grow past it. */
#define sc_prog_max_passes(pg) ((size_t)3 * (size_t)(pg)->S * (size_t)(pg)->m)

/* Drops lowering and verification results (after the order changed). */
void sc_prog_invalidate(sc_prog *pg);

/* Frees what the last compilation's offload plan reported (off_info). */
void sc_prog_free_offload_info(sc_prog *pg);

/* Time of pass op on stage s with the stage's costs (BW: its own time when
 * given, else B + W; transfers and the end-of-step instructions: 0). */
static inline double sc_op_cost(const sc_prog *pg, int op, int s)
{
    switch (op) {
    case SC_OP_F: return pg->tf[s];
    case SC_OP_B: return pg->tb[s];
    case SC_OP_W: return pg->tw[s];
    case SC_OP_BW: return pg->tbw[s] == pg->tbw[s] ? pg->tbw[s] : pg->tb[s] + pg->tw[s];
    default: return 0;
    }
}

/* Time of OPTIM on device d: the optimizer steps of its stages. */
static inline double sc_optim_cost(const sc_prog *pg, int d)
{
    double t = 0;
    for (int c = 0; c < pg->nchunks[d]; c++)
        t += pg->topt[pg->dev_stages[d][c]];
    return t;
}

static inline double sc_pass_cost(const sc_prog *pg, const sc_instr *in)
{
    return sc_op_cost(pg, in->op, in->stage);
}

/* Memory change of pass op on stage s, in units (SPEC.md §3.3): F adds the
 * stage's units, B frees (1 - w_keep) of them, W w_keep, BW all. */
static inline double sc_op_mem(const sc_prog *pg, int op, int s)
{
    double u = pg->mem[s];
    switch (op) {
    case SC_OP_F: return u;
    case SC_OP_B: return -(1.0 - pg->w_keep) * u;
    case SC_OP_W: return -pg->w_keep * u;
    case SC_OP_BW: return -u;
    default: return 0;
    }
}

static inline double sc_pass_mem(const sc_prog *pg, const sc_instr *in)
{
    return sc_op_mem(pg, in->op, in->stage);
}

/* The fraction an OFFLOAD, DROP or RELOAD moves, in [0, 1]. */
static inline double sc_instr_frac(const sc_instr *in)
{
    return (double)in->frac / SC_FRAC_ONE;
}

/* Device memory change of any instruction of a stream: compute passes as
 * sc_pass_mem; DROP frees and RELOAD allocates its fraction of the record;
 * the rest changes nothing. */
static inline double sc_instr_mem(const sc_prog *pg, const sc_instr *in)
{
    if (in->flags & SC_IF_ROLLBACK)
        return 0; /* a redone F computes into the record it made before */
    if (sc_op_is_compute(in->op))
        return sc_pass_mem(pg, in);
    if (in->op == SC_OP_DROP)
        return -sc_instr_frac(in) * pg->mem[in->stage];
    if (in->op == SC_OP_RELOAD)
        return sc_instr_frac(in) * pg->mem[in->stage];
    return 0;
}

/* Dense index of (stage, mb): s * m + mb. */
#define SC_SM(pg, s, mb) ((size_t)(s) * (size_t)(pg)->m + (size_t)(mb))
/* The same for the microbatch numbers of the streams (all steps, nmb). */
#define SC_SMN(pg, s, mb) ((size_t)(s) * (size_t)(pg)->nmb + (size_t)(mb))

/* The pass a compute pass depends on (SPEC.md §3.2): F(s) on F(s-1), B or
 * BW(s) on B(s+1) (the last stage's on its own F), W(s) on B(s). Sets *dop
 * to SC_OP_F or SC_OP_B (meaning B or BW) and *ds; 0 when there is none. */
static inline int sc_pass_dep(const sc_prog *pg, const sc_instr *in, int *dop, int *ds)
{
    int s = in->stage;
    if (in->op == SC_OP_F) {
        *dop = SC_OP_F;
        *ds = s - 1;
        return s > 0;
    }
    if (in->op != SC_OP_W && s == pg->S - 1) {
        *dop = SC_OP_F;
        *ds = s;
        return 1;
    }
    *dop = SC_OP_B;
    *ds = in->op == SC_OP_W ? s : s + 1;
    return 1;
}

/* When pass `in` of device d may start as far as its dependency goes, from
 * end times endF/endB [S*m] (< 0: not run yet): 0 without a dependency,
 * < 0 while it has not run, else its end plus T_comm across devices. */
static inline double sc_dep_ready(const sc_prog *pg, int d, const sc_instr *in,
                                  const double *endF, const double *endB)
{
    int dop, ds;
    if (!sc_pass_dep(pg, in, &dop, &ds))
        return 0;
    double e = (dop == SC_OP_F ? endF : endB)[SC_SM(pg, ds, in->mb)];
    return e < 0 ? -1 : e + (pg->stage_dev[ds] != d ? pg->tcomm : 0);
}

#endif
