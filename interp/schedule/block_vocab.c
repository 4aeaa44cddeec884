/*
 * block_vocab.c — a split vocabulary's passes inside a building block
 * (block.h): their collisions and dependencies, and their unrolling.
 */
#include "block.h"
#include "ir/ir_impl.h"

#include <math.h>
#include <stdio.h>

#define EPS 1e-9

/* Duration of vocabulary pass op on device d in the block. */
static double vdur(const sc_prog *pg, const sc_block *blk, int op, int d)
{
    return blk->slots ? 1 : sc_op_cost(pg, op, d);
}

/* A stage pass's duration in the block (sc_block_dur's rule, here so that
 * this file calls nothing of block.c). */
static double sdur(const sc_prog *pg, const sc_block *blk, int op, int s)
{
    if (blk->slots)
        return sc_op_slots(op);
    return sc_op_cost(pg, op, s);
}

static int overlap_mod(double a, double da, double b, double db, double T)
{
    if (da <= EPS || db <= EPS)
        return 0;
    double x = fmod(b - a, T);
    if (x < 0)
        x += T;
    return x < da - EPS || T - x < db - EPS;
}

/* The latest end of vocabulary pass op over every device. */
static double latest(const sc_prog *pg, const sc_block *blk, int op)
{
    double t = -INFINITY;
    for (int d = 0; d < pg->P; d++)
        t = fmax(t, blk->voff[sc_op_vocab_index(op)][d] + vdur(pg, blk, op, d));
    return t;
}

static sc_status too_early(sc_prog *pg, const char *what, double at, const char *need, double ready)
{
    return sc_fail(pg, SC_ERR_PROGRAM,
                   "block: %s starts at %g, but %s it depends on is done only at %g (%g too early)",
                   what, at, need, ready, ready - at);
}

sc_status sc_block_vocab_check(sc_prog *pg, const sc_block *blk)
{
    int any = 0, all = 1;
    for (int k = 0; k < 4; k++) {
        any |= blk->voff[k] != NULL;
        all &= blk->voff[k] != NULL;
    }
    if (!any)
        return SC_OK;
    if (!all)
        return sc_fail(pg, SC_ERR_ARG, "block: give offsets for all of S, T, E and EW (one per "
                       "device), or for none (then they are placed for you)");
    if (!sc_vocab_split(pg->vocab))
        return sc_fail(pg, SC_ERR_ARG, "block: offsets of S, T, E and EW need a split "
                       "vocabulary (vocab_par = vocab-1 or vocab-2; it is %s)",
                       sc_vocab_name(pg->vocab));
    double T = blk->interval;
    int fused = blk->off[SC_OP_BW] != NULL, bop = fused ? SC_OP_BW : SC_OP_B, S = pg->S;
    for (int d = 0; d < pg->P; d++) {
        for (int k = 0; k < 4; k++) {
            int op = sc_vocab_op(k);
            double a = blk->voff[k][d], da = vdur(pg, blk, op, d);
            if (!isfinite(a))
                return sc_fail(pg, SC_ERR_ARG, "block: offset of %s on d%d is not a number",
                               sc_op_name(op), d);
            if (da > T + EPS)
                return sc_fail(pg, SC_ERR_PROGRAM, "block: %s on d%d takes %g, longer than the "
                               "interval %g", sc_op_name(op), d, da, T);
            /* Against the other vocabulary passes of d and its stages' passes. */
            for (int j = k + 1; j < 4; j++)
                if (overlap_mod(a, da, blk->voff[j][d], vdur(pg, blk, sc_vocab_op(j), d), T))
                    return sc_fail(pg, SC_ERR_PROGRAM, "block: on d%d, %s (at %g) and %s (at %g) "
                                   "collide modulo the interval %g", d, sc_op_name(op), a,
                                   sc_op_name(sc_vocab_op(j)), blk->voff[j][d], T);
            for (int c = 0; c < pg->nchunks[d]; c++) {
                int s = pg->dev_stages[d][c];
                for (int o = 0; o < 4; o++) {
                    if (!blk->off[o])
                        continue;
                    double b = blk->off[o][s];
                    if (overlap_mod(a, da, b, sdur(pg, blk, o, s), T))
                        return sc_fail(pg, SC_ERR_PROGRAM, "block: on d%d, %s (at %g) and %s s%d "
                                       "(at %g) collide modulo the interval %g", d,
                                       sc_op_name(op), a, sc_op_name(o), s, b, T);
                }
            }
        }
    }
    /* Dependencies inside the block (collectives take no block time). */
    char what[48], need[48];
    double fend = blk->off[SC_OP_F][S - 1] + sdur(pg, blk, SC_OP_F, S - 1);
    double bend0 = blk->off[bop][0] + sdur(pg, blk, bop, 0);
    double sall = latest(pg, blk, SC_OP_S), tall = latest(pg, blk, SC_OP_T),
           eall = latest(pg, blk, SC_OP_E);
    for (int d = 0; d < pg->P; d++) {
        snprintf(what, sizeof what, "S on d%d", d);
        snprintf(need, sizeof need, "F s%d", S - 1);
        if (blk->voff[0][d] < fend - EPS)
            return too_early(pg, what, blk->voff[0][d], need, fend);
        snprintf(what, sizeof what, "T on d%d", d);
        if (blk->voff[1][d] < sall - EPS)
            return too_early(pg, what, blk->voff[1][d], "S of every device", sall);
        snprintf(what, sizeof what, "EW on d%d", d);
        snprintf(need, sizeof need, "%s s0", sc_op_name(bop));
        if (blk->voff[3][d] < bend0 - EPS)
            return too_early(pg, what, blk->voff[3][d], need, bend0);
    }
    double ready = pg->vocab == SC_VOCAB_V1 ? sall : tall;
    snprintf(what, sizeof what, "%s s%d", sc_op_name(bop), S - 1);
    if (blk->off[bop][S - 1] < ready - EPS)
        return too_early(pg, what, blk->off[bop][S - 1],
                         pg->vocab == SC_VOCAB_V1 ? "S of every device" : "T of every device",
                         ready);
    if (blk->off[SC_OP_F][0] < eall - EPS)
        return too_early(pg, "F s0", blk->off[SC_OP_F][0], "E of every device", eall);
    return SC_OK;
}
