/*
 * search.c — the block family of the Controllable Memory paper's search,
 * on any placement of whole chunks, and its search (search.h).
 */
#include "search.h"
#include "block_hand.h"
#include "dataflow.h"
#include "pairing.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <limits.h>
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

/* Unrolls blk (its keep_order says whether it is reordered), pairs it
 * where pairs gain (pairing.h, within peak) and times it. take: where the
 * orders as unrolled (before the pairs) are handed (block_hand.h), or
 * NULL. */
static sc_status unroll_measure(sc_prog *pg, const sc_block *blk, double peak, double *times,
                                double *makespan, double *bubble, sc_block_hand **take)
{
    sc_status st = sc_block_unroll(pg, blk);
    if (st)
        return st;
    if (take)
        *take = sc_block_hand_take(pg, blk);
    if (sc_prog_pair_gain(pg) > 0 && (st = sc_pair_greedy(pg, peak, NULL)) != SC_OK)
        return st;
    return measure(pg, times, makespan, bubble);
}

/* The plain squeeze timed without unrolling it: every pass in the order of
 * its start in the block (off + mb T), which is each device's order in the
 * unroll (keyed_cmp in block.c) and puts every dependency first (a valid
 * block starts no pass before its dependency ends); each pass at the later
 * of its device's last end and sc_dep_ready, for sc_pass_cost: sc_dataflow's
 * arithmetic, so the figures equal measure()'s to the bit. Passes are
 * visited slot by slot through buckets of their offsets modulo T, O(passes
 * + slots). Returns 1 when it timed the block; 0 when the block is outside
 * this path (pairs, vocabulary passes, fused BW, an offset or interval not
 * a whole number of slots, a dependency not yet timed): the caller
 * unrolls. endFB has room for 2 S m numbers. */
static int plain_fast(sc_prog *pg, const sc_block *blk, double *endFB, double *makespan,
                      double *bubble)
{
    int P = pg->P, S = pg->S, m = pg->m;
    const double *F = blk->off[SC_OP_F], *B = blk->off[SC_OP_B], *W = blk->off[SC_OP_W];
    double Td = blk->interval;
    if (blk->overlap || blk->voff[0] || blk->off[SC_OP_BW] || !F || !B || !W ||
        sc_vocab_split(pg->vocab) || sc_prog_pair_gain(pg) > 0 || pg->copies > 1 || !(Td >= 1 && Td <= 1 << 20) ||
        Td != floor(Td))
        return 0;
    long T = (long)Td, lo = LONG_MAX, hi = LONG_MIN;
    const double *offs[3] = {F, B, W};
    const int ops[3] = {SC_OP_F, SC_OP_B, SC_OP_W};
    for (int i = 0; i < 3; i++)
        for (int s = 0; s < S; s++) {
            double x = offs[i][s];
            if (!(fabs(x) <= 1 << 30) || x != floor(x))
                return 0;
            lo = (long)x < lo ? (long)x : lo;
            hi = (long)x > hi ? (long)x : hi;
        }
    /* Each pass kind (3 s + i) once: its device, cost, where its end goes
     * and where its dependency's is (sc_pass_dep: one microbatch's chain,
     * the same for every microbatch with one copy), plus T_comm across
     * devices (sc_dep_ready). Bucket r: the kinds whose offset is r modulo
     * T, at kind[first[r] .. first[r + 1]). */
    typedef struct kind_t {
        long off, out, dep; /* out, dep: index of microbatch 0 in endFB, or -1 */
        double cost, add;
        int dev;
    } kind_t;
    size_t SM = (size_t)S * (size_t)m;
    int *first = sc_malloc(2 * ((size_t)T + 1) * sizeof *first);
    kind_t *kind = sc_malloc(3 * (size_t)S * sizeof *kind);
    double *dev = sc_malloc(4 * (size_t)P * sizeof *dev); /* free at, busy, first start, last end */
    int ok = first && kind && dev;
    if (ok) {
        int *fill = first + T + 1;
        memset(first, 0, 2 * ((size_t)T + 1) * sizeof *first);
        for (int q = 0; q < 3 * S; q++)
            first[((long)offs[q % 3][q / 3] - lo) % T + 1]++;
        for (long r = 0; r < T; r++)
            fill[r + 1] = first[r + 1] += first[r];
        for (int q = 0; q < 3 * S; q++) {
            int s = q / 3, op = ops[q % 3], d = pg->stage_dev[s], dop, ds;
            sc_instr in = {.op = (uint8_t)op, .stage = s, .mb = 0, .peer = -1};
            kind_t k = {(long)offs[q % 3][s], -1, -1, sc_pass_cost(pg, &in), 0, d};
            if (op != SC_OP_W)
                k.out = (long)((op == SC_OP_F ? 0 : SM) + (size_t)s * (size_t)m);
            if (sc_pass_dep(pg, &in, &dop, &ds)) {
                k.dep = (long)((dop == SC_OP_F ? 0 : SM) + (size_t)ds * (size_t)m);
                k.add = pg->stage_dev[ds] != d ? pg->tcomm : 0;
            }
            kind[fill[(k.off - lo) % T]++] = k;
        }
        for (int d = 0; d < P; d++)
            dev[4 * d] = dev[4 * d + 1] = 0, dev[4 * d + 2] = -1, dev[4 * d + 3] = 0;
        for (size_t i = 0; i < 2 * SM; i++)
            endFB[i] = -1; /* not timed yet */
    }
    for (long u = lo; ok && u <= hi + (long)(m - 1) * T; u++) {
        long r = (u - lo) % T;
        for (int j = first[r]; j < first[r + 1]; j++) {
            const kind_t *k = &kind[j];
            long mb = (u - k->off) / T;
            if (u < k->off || mb >= m)
                continue;
            double ready = 0, *v = &dev[4 * k->dev];
            if (k->dep >= 0 && (ready = endFB[k->dep + mb]) < 0) {
                ok = 0; /* not a valid block after all: the unroll says why */
                break;
            }
            if (k->dep >= 0)
                ready += k->add;
            double t = v[0] > ready ? v[0] : ready, e = t + k->cost;
            if (k->out >= 0)
                endFB[k->out + mb] = e;
            v[1] += e - t;
            if (v[2] < 0)
                v[2] = t;
            v[0] = v[3] = e;
        }
    }
    if (ok) {
        double mk = 0, busy = 0, span = 0;
        for (int d = 0; d < P; d++) {
            const double *v = &dev[4 * d];
            if (v[2] >= 0) {
                mk = fmax(mk, v[3]);
                span = fmax(span, v[3] - v[2]);
            }
            busy = fmax(busy, v[1]);
        }
        *makespan = mk;
        *bubble = span > 0 ? 1 - busy / span : 0;
    }
    sc_free(first);
    sc_free(kind);
    sc_free(dev);
    return ok;
}

sc_status sc_vblock_plain(sc_prog *pg, const sc_block *blk, double peak, int fast, double *times,
                          double *makespan, double *bubble)
{
    if (fast && plain_fast(pg, blk, times, makespan, bubble))
        return SC_OK;
    sc_block b = *blk;
    b.keep_order = 1;
    return unroll_measure(pg, &b, peak, times, makespan, bubble, NULL);
}

/* Unrolls candidate c (reordered or not) and times it into c; take as in
 * unroll_measure (reordered only). */
static sc_status evaluate(sc_prog *pg, sc_vcand *c, int reorder, double *off, double *times,
                          sc_block_hand **take)
{
    sc_block blk;
    sc_status st = sc_vpattern_block(pg, &c->pat, off, &blk);
    if (st)
        return st;
    if (!reorder)
        return sc_vblock_plain(pg, &blk, c->peak, 1, times, &c->makespan, &c->bubble_rate);
    return unroll_measure(pg, &blk, c->peak, times, &c->makespan, &c->bubble_rate, take);
}

/* best_under's rule: c, timed and within limit, beats best (NULL: none). */
static int beats(const sc_vcand *c, const sc_vcand *best, double limit)
{
    if (c->peak > limit + 1e-9 || !c->timed)
        return 0;
    return !best || c->bubble_rate < best->bubble_rate - 1e-12 ||
           (fabs(c->bubble_rate - best->bubble_rate) <= 1e-12 && c->peak < best->peak);
}

const sc_vcand *sc_vcand_best(const sc_vcand *c, size_t n, double limit)
{
    const sc_vcand *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (beats(&c[i], best, limit))
            best = &c[i];
    return best;
}

sc_status sc_vblock_search(sc_prog *pg, int kmax, const double *budgets, int nb, sc_vcand **cands,
                           size_t *n, sc_block_hand **hand)
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
    if (hand)
        *hand = NULL;
    if (nb != 1)
        hand = NULL; /* handed for one budget only: its best (sc_vcand_best) */
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
        if (out[i].peak <= top + 1e-9 && (st = evaluate(pg, &out[i], 0, off, times, NULL)) != SC_OK)
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
    /* in index order, as sc_vcand_best goes: the orders of the best so
     * far are kept */
    const sc_vcand *kept = NULL;
    for (size_t i = 0; i < got; i++)
        if (mark[i]) {
            sc_block_hand *take = NULL;
            if ((st = evaluate(pg, &out[i], 1, off, times, hand ? &take : NULL)) != SC_OK) {
                sc_block_hand_free(take);
                goto done;
            }
            out[i].timed = 1;
            if (hand && beats(&out[i], kept, budgets[0])) {
                kept = &out[i];
                sc_block_hand_free(*hand);
                *hand = take;
            } else {
                sc_block_hand_free(take);
            }
        }
    st = SC_OK;
    *cands = out;
    *n = got;
    out = NULL;
done:
    if (st && hand) {
        sc_block_hand_free(*hand);
        *hand = NULL;
    }
    pg->mem_limit = limit;
    pg->mem_cap = caps;
    free(out);
    sc_free(off);
    sc_free(peak);
    sc_free(times);
    sc_free(mark);
    return st;
}
