/*
 * block.c — validity, lifespans, peak memory and unrolling of building
 * blocks (block.h).
 */
#include "block.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"
#include "reorder.h"

#include <math.h>
#include <stdlib.h>

#define EPS 1e-9

double sc_block_dur(const sc_prog *pg, const sc_block *blk, int op, int s)
{
    if (blk->slots)
        return sc_op_slots(op);
    return sc_op_cost(pg, op, s);
}

static int fused(const sc_block *blk) { return blk->off[SC_OP_BW] != NULL; }

/* x modulo T in [0, T). */
static double mod_T(double x, double T)
{
    double r = fmod(x, T);
    return r < 0 ? r + T : r;
}

/* With overlap: the partner of pass (op, s), an F and a backward of one
 * device whose offsets are equal modulo T (block.h), as *pop and *ps;
 * 0 when it has none. The first such on the device (a second one collides
 * with the first). */
static int partner(const sc_prog *pg, const sc_block *blk, int op, int s, int *pop, int *ps)
{
    int bop = fused(blk) ? SC_OP_BW : SC_OP_B;
    if (!blk->overlap || (op != SC_OP_F && op != bop))
        return 0;
    int want = op == SC_OP_F ? bop : SC_OP_F, d = pg->stage_dev[s];
    double T = blk->interval;
    for (int c = 0; c < pg->nchunks[d]; c++) {
        int t = pg->dev_stages[d][c];
        double x = mod_T(blk->off[want][t] - blk->off[op][s], T);
        if (x < EPS || T - x < EPS) {
            *pop = want;
            *ps = t;
            return 1;
        }
    }
    return 0;
}

double sc_block_span(const sc_prog *pg, const sc_block *blk, int op, int s)
{
    int pop, ps;
    if (!partner(pg, blk, op, s, &pop, &ps))
        return sc_block_dur(pg, blk, op, s);
    int f = op == SC_OP_F ? s : ps, b = op == SC_OP_F ? ps : s, bop = op == SC_OP_F ? pop : op;
    if (blk->slots)
        return sc_op_slots(SC_OP_F) + sc_op_slots(bop);
    sc_instr in = sc_pair_make(f, 0, bop, b, 0);
    return sc_pair_cost(pg, &in);
}

/* Passes a and b of one device are the halves of one pair. */
static int paired(const sc_prog *pg, const sc_block *blk, int oa, int sa, int ob, int sb)
{
    int pop, ps;
    return (partner(pg, blk, oa, sa, &pop, &ps) && pop == ob && ps == sb) ||
           (partner(pg, blk, ob, sb, &pop, &ps) && pop == oa && ps == sa);
}

/* The pass kinds of the block: F, then BW or B and W. */
static int block_ops(const sc_block *blk, int ops[3])
{
    ops[0] = SC_OP_F;
    if (fused(blk)) {
        ops[1] = SC_OP_BW;
        return 2;
    }
    ops[1] = SC_OP_B;
    ops[2] = SC_OP_W;
    return 3;
}

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
    if (!blk->off[SC_OP_F])
        return sc_fail(pg, SC_ERR_ARG, "block: offsets of F are missing");
    if (!fused(blk) && (!blk->off[SC_OP_B] || !blk->off[SC_OP_W]))
        return sc_fail(pg, SC_ERR_ARG, "block: give offsets for BW, or for both B and W");
    int ops[3], nops = block_ops(blk, ops);
    for (int i = 0; i < nops; i++)
        for (int s = 0; s < pg->S; s++)
            if (!isfinite(blk->off[ops[i]][s]))
                return sc_fail(pg, SC_ERR_ARG, "block: offset of %s s%d is not a number",
                               sc_op_name(ops[i]), s);
    if (blk->overlap && blk->voff[0])
        return sc_fail(pg, SC_ERR_ARG, "block: overlap does not go with the offsets of the "
                       "vocabulary passes (S, T, E, EW) yet");
    /* No pass (or pair) longer than the interval. */
    for (int i = 0; i < nops; i++)
        for (int s = 0; s < pg->S; s++)
            if (sc_block_span(pg, blk, ops[i], s) > T + EPS)
                return sc_fail(pg, SC_ERR_PROGRAM,
                               "block: %s s%d takes %g%s, longer than the interval %g",
                               sc_op_name(ops[i]), s, sc_block_span(pg, blk, ops[i], s),
                               sc_block_span(pg, blk, ops[i], s) ==
                                       sc_block_dur(pg, blk, ops[i], s) ? "" : " in its pair",
                               T);
    /* Collisions among the passes of each device. */
    for (int d = 0; d < pg->P; d++) {
        int nc = pg->nchunks[d];
        for (int a = 0; a < nc * nops; a++) {
            int sa = pg->dev_stages[d][a / nops], oa = ops[a % nops];
            double da = sc_block_span(pg, blk, oa, sa);
            for (int b = a + 1; b < nc * nops; b++) {
                int sb = pg->dev_stages[d][b / nops], ob = ops[b % nops];
                double xa = blk->off[oa][sa], xb = blk->off[ob][sb];
                if (!paired(pg, blk, oa, sa, ob, sb) &&
                    overlap_mod(xa, da, xb, sc_block_span(pg, blk, ob, sb), T))
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
            double ready = blk->off[dep[i].dop][dep[i].ds] +
                           sc_block_span(pg, blk, dep[i].dop, dep[i].ds);
            double at = blk->off[dep[i].op][s];
            if (at < ready - EPS)
                return sc_fail(pg, SC_ERR_PROGRAM,
                               "block: %s s%d starts at %g, but %s s%d it depends on is done "
                               "only at %g (%g too early)",
                               sc_op_name(dep[i].op), s, at, sc_op_name(dep[i].dop), dep[i].ds,
                               ready, ready - at);
        }
    }
    return sc_block_vocab_check(pg, blk);
}

sc_status sc_block_lifespans(sc_prog *pg, const sc_block *blk, sc_lifespan *ls)
{
    sc_status st = sc_block_check(pg, blk);
    if (st)
        return st;
    for (int s = 0; s < pg->S; s++) {
        sc_lifespan *l = &ls[s];
        l->stage = s;
        l->device = pg->stage_dev[s];
        l->start = blk->off[SC_OP_F][s];
        if (fused(blk)) {
            l->end = l->b_end = blk->off[SC_OP_BW][s] + sc_block_span(pg, blk, SC_OP_BW, s);
        } else {
            l->b_end = blk->off[SC_OP_B][s] + sc_block_span(pg, blk, SC_OP_B, s);
            l->end = blk->off[SC_OP_W][s] + sc_block_span(pg, blk, SC_OP_W, s);
        }
    }
    return SC_OK;
}

/* Copies of [a, e) repeated every T that cover time t. */
static double copies(double a, double e, double t, double T)
{
    return floor((t - a) / T + EPS) - floor((t - e) / T + EPS);
}

sc_status sc_block_peak(sc_prog *pg, const sc_block *blk, double *peak)
{
    sc_lifespan *ls = sc_malloc((size_t)pg->S * sizeof *ls);
    if (!ls)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory computing lifespans");
    sc_status st = sc_block_lifespans(pg, blk, ls);
    double T = blk->interval, wk = fused(blk) ? 1 : pg->w_keep;
    for (int d = 0; st == SC_OK && d < pg->P; d++) {
        /* Memory rises only at the start of an F: the peak is at one. */
        peak[d] = 0;
        for (int i = 0; i < pg->nchunks[d]; i++) {
            double t = ls[pg->dev_stages[d][i]].start, sum = 0;
            for (int j = 0; j < pg->nchunks[d]; j++) {
                const sc_lifespan *l = &ls[pg->dev_stages[d][j]];
                double u = pg->mem[l->stage];
                sum += u * (1 - wk) * copies(l->start, l->b_end, t, T) +
                       u * wk * copies(l->start, l->end, t, T);
            }
            if (sum > peak[d])
                peak[d] = sum;
        }
    }
    sc_free(ls);
    return st;
}

/* The earliest t' >= t at which a pass of length len on device d collides
 * with none of the passes placed so far (placed[s]: offset set). */
static double first_free(const sc_prog *pg, const sc_block *blk, const double *const off[4],
                         const char *placed_w, int d, double t, double len)
{
    int ops[3], nops = block_ops(blk, ops);
    double T = blk->interval;
    for (int guard = 0; guard < 64 * (pg->nchunks[d] * 3 + 1); guard++) {
        int moved = 0;
        for (int c = 0; c < pg->nchunks[d] && !moved; c++) {
            int s = pg->dev_stages[d][c];
            for (int i = 0; i < nops && !moved; i++) {
                if (ops[i] == SC_OP_W && !placed_w[s])
                    continue;
                double o = off[ops[i]][s], dl = sc_block_span(pg, blk, ops[i], s);
                if (!overlap_mod(t, len, o, dl, T))
                    continue;
                /* Move past the end of that pass's copy that we hit. */
                double k = floor((t - o) / T + EPS);
                double endk = o + k * T + dl;
                t = endk > t + EPS ? endk : o + (k + 1) * T + dl;
                moved = 1;
            }
        }
        if (!moved)
            return t;
    }
    return NAN;
}

typedef struct by_time {
    double t;
    int s;
} by_time;

static int by_time_cmp(const void *pa, const void *pb)
{
    const by_time *a = pa, *b = pb;
    if (fabs(a->t - b->t) > EPS)
        return a->t < b->t ? -1 : 1;
    return (a->s > b->s) - (a->s < b->s);
}

sc_status sc_block_place_w(sc_prog *pg, const sc_block *blk, double *w)
{
    if (!blk->off[SC_OP_F] || !blk->off[SC_OP_B] || fused(blk))
        return sc_fail(pg, SC_ERR_ARG, "block: placing W needs offsets of F and B");
    char *placed = sc_calloc((size_t)pg->S, 1);
    by_time *bs = sc_malloc((size_t)pg->S * sizeof *bs);
    if (!placed || !bs) {
        sc_free(placed);
        sc_free(bs);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory placing W");
    }
    sc_block tmp = *blk;
    tmp.off[SC_OP_W] = w;
    const double *off[4] = {blk->off[SC_OP_F], blk->off[SC_OP_B], w, NULL};
    sc_status st = SC_OK;
    for (int d = 0; d < pg->P && st == SC_OK; d++) {
        int nc = pg->nchunks[d];
        for (int c = 0; c < nc; c++) {
            int s = pg->dev_stages[d][c];
            bs[c] = (by_time){off[SC_OP_B][s], s};
        }
        qsort(bs, (size_t)nc, sizeof *bs, by_time_cmp);
        for (int c = 0; c < nc; c++) {
            int s = bs[c].s;
            double len = sc_block_dur(pg, &tmp, SC_OP_W, s);
            double t = first_free(pg, &tmp, off, placed, d,
                                  bs[c].t + sc_block_span(pg, &tmp, SC_OP_B, s), len);
            if (isnan(t)) {
                st = sc_fail(pg, SC_ERR_PROGRAM,
                             "block: no room for W s%d on d%d within the interval %g", s, d,
                             blk->interval);
                break;
            }
            w[s] = t;
            placed[s] = 1;
        }
    }
    sc_free(placed);
    sc_free(bs);
    return st;
}

void sc_block_pattern(const sc_prog *pg, const double *first, const double *delta, double *off)
{
    for (int d = 0; d < pg->P; d++)
        for (int c = 0; c < pg->nchunks[d]; c++)
            off[pg->dev_stages[d][c]] = first[c] + d * delta[c];
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

/* Devices with up to this many stages merge their streams; more sort. */
#define SC_MAX_CHUNKS_MERGE 8

/* Pass mb of stream q of device d: stage chunk q / nops, kind ops[q % nops]. */
static keyed stream_key(const sc_prog *pg, const sc_block *blk, int d, int q, int nops,
                        const int *ops, int mb)
{
    int s = pg->dev_stages[d][q / nops], op = ops[q % nops];
    return (keyed){blk->off[op][s] + mb * blk->interval, ((long)mb * 8 + op) * pg->S + s,
                   {.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}};
}

/* Pass ks[k] joined with its pair's other half when that half starts at
 * the same time (among the passes tied with it), which is then marked
 * taken (t NAN); else the pass itself. */
static sc_instr join_pair(const sc_prog *pg, const sc_block *blk, keyed *ks, size_t n, size_t k)
{
    sc_instr a = ks[k].in;
    int pop, ps;
    if (!partner(pg, blk, a.op, a.stage, &pop, &ps))
        return a;
    for (size_t j = k + 1; j < n && fabs(ks[j].t - ks[k].t) <= EPS; j++) {
        sc_instr b = ks[j].in;
        if (b.op != pop || b.stage != ps)
            continue;
        ks[j].t = NAN;
        const sc_instr *f = a.op == SC_OP_F ? &a : &b, *w = a.op == SC_OP_F ? &b : &a;
        return sc_pair_make(f->stage, f->mb, w->op, w->stage, w->mb);
    }
    return a;
}

sc_status sc_block_caps(sc_prog *pg, const sc_block *blk, double *cap)
{
    sc_status st = sc_block_peak(pg, blk, cap);
    for (int d = 0; st == SC_OK && d < pg->P; d++) {
        double lim = sc_prog_mem_cap(pg, d);
        if (cap[d] > lim + EPS)
            st = sc_fail_cap(pg,
                             "block: d%d needs %g units of memory in the steady state, more than "
                             "mem = %g; it needs mem >= %g (its interval and offsets fix the "
                             "steady state)",
                             d, cap[d], lim, cap[d]);
        else if (isfinite(lim))
            cap[d] = lim;
    }
    return st;
}

/* Device d's passes into ks in time order; returns how many. Each
 * (stage, op) is one stream already in time order (microbatch by
 * microbatch): the device's streams merged, or (many chunks, or the
 * vocabulary passes the block places, block_vocab.c) sorted. */
static size_t device_keys(const sc_prog *pg, const sc_block *blk, int d, int nops,
                          const int *ops, keyed *ks)
{
    int ns = pg->nchunks[d] * nops, head[3 * SC_MAX_CHUNKS_MERGE];
    size_t n = (size_t)ns * (size_t)pg->m;
    if (ns > 3 * SC_MAX_CHUNKS_MERGE || blk->voff[0]) {
        size_t x = 0;
        for (int q = 0; q < ns; q++)
            for (int mb = 0; mb < pg->m; mb++)
                ks[x++] = stream_key(pg, blk, d, q, nops, ops, mb);
        for (int k = 0; blk->voff[0] && k < 4; k++)
            for (int mb = 0; mb < pg->m; mb++)
                ks[x++] = (keyed){blk->voff[k][d] + mb * blk->interval,
                                  ((long)mb * 8 + sc_vocab_op(k)) * pg->S + d,
                                  {.op = (uint8_t)sc_vocab_op(k), .stage = d, .mb = mb,
                                   .peer = -1}};
        qsort(ks, x, sizeof *ks, keyed_cmp);
        return x;
    }
    keyed hk[3 * SC_MAX_CHUNKS_MERGE]; /* each stream's next pass */
    for (int q = 0; q < ns; q++) {
        head[q] = 0;
        hk[q] = stream_key(pg, blk, d, q, nops, ops, 0);
    }
    for (size_t x = 0; x < n; x++) {
        int bq = -1;
        for (int q = 0; q < ns; q++)
            if (head[q] < pg->m && (bq < 0 || keyed_cmp(&hk[q], &hk[bq]) < 0))
                bq = q;
        ks[x] = hk[bq];
        if (++head[bq] < pg->m)
            hk[bq] = stream_key(pg, blk, d, bq, nops, ops, head[bq]);
    }
    return n;
}

sc_status sc_block_unroll(sc_prog *pg, const sc_block *blk)
{
    double *cap = sc_malloc((size_t)pg->P * sizeof *cap);
    if (!cap)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling the block");
    sc_status st = sc_block_caps(pg, blk, cap);
    if (st) {
        sc_free(cap);
        return st;
    }
    int ops[3], nops = block_ops(blk, ops);
    int maxc = 0;
    for (int d = 0; d < pg->P; d++)
        if (pg->nchunks[d] > maxc)
            maxc = pg->nchunks[d];
    size_t want = (size_t)maxc * (size_t)nops * (size_t)pg->m + 4 * (size_t)pg->m;
    keyed *ks = want <= (size_t)SC_MAX_PASSES ? sc_malloc(want * sizeof *ks) : NULL;
    double *at = want <= (size_t)SC_MAX_PASSES ? sc_malloc(want * (size_t)pg->P * sizeof *at) : NULL;
    if (!ks || !at) {
        sc_free(ks);
        sc_free(at);
        sc_free(cap);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling the block");
    }
    size_t nat = 0;
    for (int d = 0; d < pg->P && st == SC_OK; d++) {
        sc_prog_clear_order(pg, d);
        size_t n = device_keys(pg, blk, d, nops, ops, ks);
        for (size_t k = 0; k < n && st == SC_OK; k++) {
            if (ks[k].t != ks[k].t)
                continue; /* the other half of a pair pushed before */
            sc_instr in = ks[k].in;
            if (blk->overlap)
                in = join_pair(pg, blk, ks, n, k);
            if (sc_vec_push(&pg->order[d], in) != SC_OK)
                st = sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling the block");
            at[nat++] = ks[k].t;
        }
        pg->npasses += n; /* n <= 3·(stages of d)·m: within sc_prog_max_passes */
    }
    sc_free(ks);
    /* The reorder moves stage passes only: a block that places its
     * vocabulary passes or pairs its passes keeps its order. */
    if (st == SC_OK && !blk->keep_order && !blk->voff[0] && !blk->overlap)
        st = sc_reorder(pg, cap, at, blk->slots);
    sc_free(at);
    sc_free(cap);
    return st;
}
