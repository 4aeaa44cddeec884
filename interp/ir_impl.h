/*
 * ir_impl.h — the body of sc_prog, for the modules of interp/ only.
 * Outside interp/, use the accessors of ir.h.
 */
#ifndef SC_IR_IMPL_H
#define SC_IR_IMPL_H

#include "ir.h"

#include <stdarg.h>

/* A growable array of instructions (one device's order or stream). */
typedef struct sc_vec {
    sc_instr *v;
    size_t n, cap;
} sc_vec;

struct sc_prog {
    int P, S, m;
    int *stage_dev; /* [S] placement */
    int *chunk;     /* [S] index of the stage among its device's stages */
    int *nchunks;   /* [P] stages per device */
    int **dev_stages; /* [P][nchunks] stages of each device, ascending */
    double *tf, *tb, *tw; /* [S] per-stage costs */
    double *mem;    /* [S] units per (stage, microbatch) */
    double tcomm, w_keep;
    double mem_limit; /* peak memory allowed per device, units (INFINITY: none) */
    sc_vec *order;  /* [P] compute passes as given */
    sc_vec *stream; /* [P] lowered; n = 0 until lowered */
    int lowered, verified;
    int given;      /* streams came from sc_prog_push_stream: never re-lowered */
    size_t npasses; /* Σ order[d].n: at most sc_prog_max_passes (a guard on memory) */
    size_t ngiven;  /* Σ stream[d].n of given streams, likewise bounded */
    char err[768];
};

sc_status sc_vec_push(sc_vec *vec, sc_instr in);
void sc_vec_free(sc_vec *vec);

/* Records a printf-style message as the program's error; returns st. */
sc_status sc_fail(sc_prog *pg, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 3·S·m: no valid program has more passes (F, B and W of each stage and
 * microbatch), so no order may grow past it. */
#define sc_prog_max_passes(pg) ((size_t)3 * (size_t)(pg)->S * (size_t)(pg)->m)

/* Drops lowering and verification results (after the order changed). */
void sc_prog_invalidate(sc_prog *pg);

/* Time of pass op on stage s with the stage's costs (BW: B + W; transfers
 * and the end-of-step instructions: 0). */
static inline double sc_op_cost(const sc_prog *pg, int op, int s)
{
    switch (op) {
    case SC_OP_F: return pg->tf[s];
    case SC_OP_B: return pg->tb[s];
    case SC_OP_W: return pg->tw[s];
    case SC_OP_BW: return pg->tb[s] + pg->tw[s];
    default: return 0;
    }
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

/* Dense index of (stage, mb): s * m + mb. */
#define SC_SM(pg, s, mb) ((size_t)(s) * (size_t)(pg)->m + (size_t)(mb))

#endif
