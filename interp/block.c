/*
 * block.c — validity and unrolling of building blocks (block.h).
 */
#include "block.h"
#include "ir_impl.h"

#include <math.h>
#include <stdlib.h>

#define EPS 1e-9

static double dur(const sc_prog *pg, int op, int s)
{
    switch (op) {
    case SC_OP_F: return pg->tf[s];
    case SC_OP_B: return pg->tb[s];
    case SC_OP_W: return pg->tw[s];
    default: return pg->tb[s] + pg->tw[s];
    }
}

static int fused(const sc_block *blk) { return blk->off[SC_OP_BW] != NULL; }

/* Overlap of [a, a+da) and [b, b+db) modulo T; a pass that takes no time
 * overlaps nothing. */
static int overlap_mod(double a, double da, double b, double db, double T)
{
    if (da <= EPS || db <= EPS)
        return 0;
    double x = fmod(b - a, T);
    if (x < 0)
        x += T;
    /* b starts x after a (mod T): overlap if x < da, or if a starts inside b */
    return x < da - EPS || T - x < db - EPS;
}

/* Pass (op, s) depends on pass (dop, ds). */
typedef struct dep_t {
    int op, s, dop, ds;
} dep_t;

sc_status sc_block_check(sc_prog *pg, const sc_block *blk)
{
    double T = blk->interval;
    if (!(T > 0) || !isfinite(T))
        return sc_fail(pg, SC_ERR_ARG, "block: the interval must be a positive number (got %g)", T);
    int ops[3], nops = 0;
    ops[nops++] = SC_OP_F;
    if (fused(blk))
        ops[nops++] = SC_OP_BW;
    else {
        if (!blk->off[SC_OP_B] || !blk->off[SC_OP_W])
            return sc_fail(pg, SC_ERR_ARG, "block: give offsets for BW, or for both B and W");
        ops[nops++] = SC_OP_B;
        ops[nops++] = SC_OP_W;
    }
    for (int i = 0; i < nops; i++)
        for (int s = 0; s < pg->S; s++)
            if (!isfinite(blk->off[ops[i]][s]))
                return sc_fail(pg, SC_ERR_ARG, "block: offset of %s s%d is not a number",
                               sc_op_name(ops[i]), s);
    /* No pass longer than the interval. */
    for (int i = 0; i < nops; i++)
        for (int s = 0; s < pg->S; s++)
            if (dur(pg, ops[i], s) > T + EPS)
                return sc_fail(pg, SC_ERR_PROGRAM,
                               "block: %s s%d takes %g, longer than the interval %g",
                               sc_op_name(ops[i]), s, dur(pg, ops[i], s), T);
    /* Collisions among the passes of each device. */
    for (int d = 0; d < pg->P; d++) {
        int nc = pg->nchunks[d];
        for (int a = 0; a < nc * nops; a++) {
            int sa = pg->dev_stages[d][a / nops], oa = ops[a % nops];
            double da = dur(pg, oa, sa);
            for (int b = a + 1; b < nc * nops; b++) {
                int sb = pg->dev_stages[d][b / nops], ob = ops[b % nops];
                double xa = blk->off[oa][sa], xb = blk->off[ob][sb];
                if (overlap_mod(xa, da, xb, dur(pg, ob, sb), T))
                    return sc_fail(pg, SC_ERR_PROGRAM,
                                   "block: on d%d, %s s%d (at %g) and %s s%d (at %g) collide "
                                   "modulo the interval %g",
                                   d, sc_op_name(oa), sa, xa, sc_op_name(ob), sb, xb, T);
            }
        }
    }
    /* Dependencies inside the block. */
    int bop = fused(blk) ? SC_OP_BW : SC_OP_B;
    for (int s = 0; s < pg->S; s++) {
        dep_t dep[3];
        int nd = 0;
        if (s > 0)
            dep[nd++] = (dep_t){SC_OP_F, s, SC_OP_F, s - 1};
        dep[nd++] = s == pg->S - 1 ? (dep_t){bop, s, SC_OP_F, s}
                                   : (dep_t){bop, s, bop, s + 1};
        if (!fused(blk))
            dep[nd++] = (dep_t){SC_OP_W, s, SC_OP_B, s};
        for (int i = 0; i < nd; i++) {
            double ready = blk->off[dep[i].dop][dep[i].ds] + dur(pg, dep[i].dop, dep[i].ds);
            double at = blk->off[dep[i].op][s];
            if (at < ready - EPS)
                return sc_fail(pg, SC_ERR_PROGRAM,
                               "block: %s s%d starts at %g, but %s s%d it depends on is done "
                               "only at %g (%g too early)",
                               sc_op_name(dep[i].op), s, at, sc_op_name(dep[i].dop), dep[i].ds,
                               ready, ready - at);
        }
    }
    return SC_OK;
}

typedef struct keyed {
    double t;
    long tie;
    sc_instr in;
} keyed;

static int keyed_cmp(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (fabs(a->t - b->t) > EPS)
        return a->t < b->t ? -1 : 1;
    return (a->tie > b->tie) - (a->tie < b->tie);
}

sc_status sc_block_unroll(sc_prog *pg, const sc_block *blk)
{
    sc_status st = sc_block_check(pg, blk);
    if (st)
        return st;
    int ops[3], nops = 0;
    ops[nops++] = SC_OP_F;
    if (fused(blk))
        ops[nops++] = SC_OP_BW;
    else {
        ops[nops++] = SC_OP_B;
        ops[nops++] = SC_OP_W;
    }
    int maxc = 0;
    for (int d = 0; d < pg->P; d++)
        if (pg->nchunks[d] > maxc)
            maxc = pg->nchunks[d];
    size_t cap = (size_t)maxc * (size_t)nops * (size_t)pg->m;
    keyed *ks = malloc(cap * sizeof *ks);
    if (!ks)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling the block");
    for (int d = 0; d < pg->P; d++) {
        size_t n = 0;
        for (int c = 0; c < pg->nchunks[d]; c++) {
            int s = pg->dev_stages[d][c];
            for (int i = 0; i < nops; i++)
                for (int mb = 0; mb < pg->m; mb++)
                    ks[n++] = (keyed){blk->off[ops[i]][s] + mb * blk->interval,
                                      ((long)mb * 4 + ops[i]) * pg->S + s,
                                      {.op = (uint8_t)ops[i], .stage = s, .mb = mb, .peer = -1}};
        }
        qsort(ks, n, sizeof *ks, keyed_cmp);
        sc_prog_clear_order(pg, d);
        for (size_t k = 0; k < n; k++)
            if ((st = sc_vec_push(&pg->order[d], ks[k].in)) != SC_OK) {
                free(ks);
                return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling the block");
            }
        pg->npasses += n; /* n <= 3·(stages of d)·m: within sc_prog_max_passes */
    }
    free(ks);
    return SC_OK;
}
