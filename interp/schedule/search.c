/*
 * search.c — the block family of the Controllable Memory paper's search,
 * on any placement of whole chunks, and its search (search.h).
 */
#include "search.h"
#include "dataflow.h"
#include "pairing.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

sc_status sc_vpattern_block(sc_prog *pg, const sc_vpattern *pat, double *off, sc_block *blk)
{
    int P = pg->P, S = pg->S, v = S / P;
    if (S % P != 0)
        return sc_fail(pg, SC_ERR_ARG, "block search: the stages must be whole chunks of the "
                       "devices (stages = %d, devices = %d)", S, P);
    /* Chunk c (stages cP .. cP+P-1) visits every device once: loop, V,
     * wave. */
    for (int c = 0; c < v; c++)
        for (int i = 0; i < P; i++)
            for (int j = 0; j < i; j++)
                if (pg->stage_dev[c * P + i] == pg->stage_dev[c * P + j])
                    return sc_fail(pg, SC_ERR_ARG,
                                   "block search: each chunk of %d stages must visit every device "
                                   "once (stages %d and %d are both on d%d)",
                                   P, c * P + j, c * P + i, pg->stage_dev[c * P + i]);
    double *F = off + SC_OP_F * S, *B = off + SC_OP_B * S, *W = off + SC_OP_W * S;
    /* Forwards in stage order: k slots apart in the first chunk, 1 in the
     * others, 1 + af across a chunk's end; backwards from the last stage:
     * k apart in the last chunk, 1 in the others, 1 + ab across a chunk's
     * end, the first 1 + aB after the last forward. On the V placement this
     * is the paper's pattern (search.h). */
    F[0] = 0;
    for (int s = 1; s < S; s++)
        F[s] = F[s - 1] + (s % P == 0 ? 1 + pat->af : s < P ? pat->k : 1);
    B[S - 1] = F[S - 1] + 1 + pat->aB;
    for (int s = S - 2; s >= 0; s--)
        B[s] = B[s + 1] + ((s + 1) % P == 0 ? 1 + pat->ab : s >= S - P ? pat->k : 1);
    *blk = (sc_block){.off = {F, B, NULL, NULL}, .interval = 3 * v, .slots = 1};
    sc_status st = sc_block_place_w(pg, blk, W);
    if (st)
        return st;
    blk->off[SC_OP_W] = W;
    return sc_block_check(pg, blk);
}

/* Makespan and bubble rate of the program's orders, as the squeeze times
 * them. */
static sc_status measure(sc_prog *pg, double *times, double *makespan, double *bubble)
{
    size_t N = 0;
    for (int d = 0; d < pg->P; d++)
        N += pg->order[d].n;
    double *start = times, *end = times + N;
    sc_status st = sc_dataflow(pg, start, end, NULL);
    if (st)
        return st;
    double mk = 0, busy = 0, span = 0;
    size_t at = 0;
    for (int d = 0; d < pg->P; d++) {
        size_t n = pg->order[d].n;
        double b = 0;
        for (size_t k = 0; k < n; k++)
            b += end[at + k] - start[at + k];
        if (n) {
            mk = fmax(mk, end[at + n - 1]);
            span = fmax(span, end[at + n - 1] - start[at]);
        }
        busy = fmax(busy, b);
        at += n;
    }
    *makespan = mk;
    *bubble = span > 0 ? 1 - busy / span : 0;
    return SC_OK;
}

/* Plain squeeze before reordered figures: a < b in the ranking. */
static int rank_less(const sc_vcand *a, const sc_vcand *b)
{
    if (a->bubble_rate != b->bubble_rate)
        return a->bubble_rate < b->bubble_rate;
    if (a->makespan != b->makespan)
        return a->makespan < b->makespan;
    return a->peak < b->peak;
}

/* Unrolls candidate c (reordered or not) and times it into c. */
static sc_status evaluate(sc_prog *pg, sc_vcand *c, int reorder, double *off, double *times)
{
    sc_block blk;
    sc_status st = sc_vpattern_block(pg, &c->pat, off, &blk);
    if (st)
        return st;
    blk.keep_order = !reorder;
    if ((st = sc_block_unroll(pg, &blk)) != SC_OK)
        return st;
    /* Overlapped pairs where they gain (pairing.h), within the block's peak. */
    if (sc_prog_pair_gain(pg) > 0 && (st = sc_pair_greedy(pg, c->peak, NULL)) != SC_OK)
        return st;
    return measure(pg, times, &c->makespan, &c->bubble_rate);
}

sc_status sc_vblock_search(sc_prog *pg, int kmax, const double *budgets, int nb, sc_vcand **cands,
                           size_t *n)
{
    int S = pg->S;
    size_t cap = (size_t)kmax * 216, N = (size_t)3 * S * pg->m;
    sc_vcand *out = malloc(cap * sizeof *out); /* the caller's: plain malloc (search.h) */
    double *off = sc_malloc(3 * (size_t)S * sizeof *off);
    double *peak = sc_malloc((size_t)pg->P * sizeof *peak);
    double *times = sc_malloc(2 * N * sizeof *times);
    char *mark = sc_calloc(2 * cap, 1);
    double limit = pg->mem_limit, top = -INFINITY, *caps = pg->mem_cap;
    sc_status st = SC_OK;
    *cands = NULL;
    *n = 0;
    if (!out || !off || !peak || !times || !mark) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory searching blocks");
        goto done;
    }
    for (int b = 0; b < nb; b++)
        top = fmax(top, budgets[b]);
    pg->mem_limit = INFINITY; /* each block under its own peak */
    pg->mem_cap = NULL;
    size_t got = 0;
    for (int k = 1; k <= kmax; k++)
        for (int af = 0; af < 6; af++)
            for (int aB = 0; aB < 6; aB++)
                for (int ab = 0; ab < 6; ab++) {
                    sc_vpattern pat = {k, af, aB, ab};
                    sc_block blk;
                    st = sc_vpattern_block(pg, &pat, off, &blk);
                    if (st == SC_ERR_ARG || st == SC_ERR_NOMEM)
                        goto done;
                    if (st) /* this pattern collides: not a block */
                        continue;
                    if ((st = sc_block_peak(pg, &blk, peak)) != SC_OK)
                        goto done;
                    sc_vcand *c = &out[got++];
                    *c = (sc_vcand){pat, 0, INFINITY, INFINITY, 0};
                    for (int d = 0; d < pg->P; d++)
                        c->peak = fmax(c->peak, peak[d]);
                }
    /* the plain squeeze of every block within the budgets ranks them */
    for (size_t i = 0; i < got; i++)
        if (out[i].peak <= top + 1e-9 && (st = evaluate(pg, &out[i], 0, off, times)) != SC_OK)
            goto done;
    /* per budget, the best by the plain squeeze are reordered: as many as
     * SC_VSEARCH_WORK passes of reordering allow (all of them for small
     * programs), at least SC_VSEARCH_KEEP */
    size_t keep = SC_VSEARCH_WORK / (N ? N : 1);
    if (keep < SC_VSEARCH_KEEP)
        keep = SC_VSEARCH_KEEP;
    for (int b = 0; b < nb; b++) {
        char *sel = mark + cap; /* this budget's choice */
        memset(sel, 0, got);
        for (size_t x = 0; x < keep; x++) {
            long best = -1;
            for (size_t i = 0; i < got; i++)
                if (!sel[i] && out[i].peak <= budgets[b] + 1e-9 && isfinite(out[i].makespan) &&
                    (best < 0 || rank_less(&out[i], &out[best])))
                    best = (long)i;
            if (best < 0)
                break;
            sel[best] = mark[best] = 1;
        }
    }
    for (size_t i = 0; i < got; i++)
        if (mark[i]) {
            if ((st = evaluate(pg, &out[i], 1, off, times)) != SC_OK)
                goto done;
            out[i].timed = 1;
        }
    st = SC_OK;
    *cands = out;
    *n = got;
    out = NULL;
done:
    pg->mem_limit = limit;
    pg->mem_cap = caps;
    free(out);
    sc_free(off);
    sc_free(peak);
    sc_free(times);
    sc_free(mark);
    return st;
}
