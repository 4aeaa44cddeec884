/*
 * rules.c — the handcrafted schedules of rules.h.
 */
#include "rules.h"
#include "capfit.h"
#include "reorder.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <limits.h>
#include <math.h>
#include <string.h>

const char *const sc_rule_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2",
                                     "zb-v", "1f1b-v", NULL};

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

#define PUSH(d, op, s, mb)                                                                         \
    do {                                                                                           \
        sc_status st_ = sc_prog_push(pg, (d), (op), (s), (mb));                                   \
        if (st_)                                                                                   \
            return st_;                                                                            \
    } while (0)

static sc_status need_one_stage(sc_prog *pg, const char *name)
{
    if (pg->S != pg->P)
        return sc_fail(pg, SC_ERR_ARG, "%s needs one stage per device (stages = %d, devices = %d)",
                       name, pg->S, pg->P);
    for (int s = 0; s < pg->S; s++)
        if (pg->stage_dev[s] != s)
            return sc_fail(pg, SC_ERR_ARG, "%s needs stage s on device s (loop placement)", name);
    return SC_OK;
}

/* The memory knob (docs/recipes.md): how many records device d may hold
 * under its cap, k[d] (INT_MAX without one; caps of NULL: the least, 0). */
static void budgets(const sc_prog *pg, const double *caps, int *k)
{
    for (int d = 0; d < pg->P; d++) {
        double rec = 0, cap = caps ? caps[d] : 0;
        for (int c = 0; c < pg->nchunks[d]; c++)
            rec = fmax(rec, pg->mem[pg->dev_stages[d][c]]);
        double n = rec > 0 ? floor(cap / rec + 1e-9) : INFINITY;
        k[d] = n >= (double)INT_MAX / 2 ? INT_MAX : (int)n;
    }
}

/* Warm-ups under caps: device d may run at most most[d] warm-up forwards
 * (its cap), and every device gives up as many of its natural warm-up
 * natural[d] as the worst device before it had to (x), so that the
 * warm-ups still fall along the pipeline as they naturally do: a device
 * that kept more would wait for forwards its predecessor now runs only
 * after a backward pass (a stall that spreads), or, growing along the
 * pipeline, deadlock. Never fewer than `least`. */
static void warmups(int P, const int *natural, const int *most, int least, int *w)
{
    long x = 0;
    for (int d = 0; d < P; d++) {
        if ((long)natural[d] - most[d] > x)
            x = (long)natural[d] - most[d];
        w[d] = (int)((long)natural[d] - x > least ? (long)natural[d] - x : least);
    }
}

/* GPipe in waves: under a cap of k records, the microbatches go k at a
 * time (all F of a wave, then all its BW): gradient accumulation. The wave
 * is the smallest k of any device (the devices must agree on it). */
static sc_status gpipe(sc_prog *pg, const int *k)
{
    int wave = INT_MAX;
    for (int d = 0; d < pg->P; d++)
        wave = imin(wave, k[d]);
    wave = imin(imax(wave, 1), pg->m);
    for (int d = 0; d < pg->P; d++)
        for (int a = 0; a < pg->m; a += wave) {
            for (int i = a; i < imin(a + wave, pg->m); i++)
                PUSH(d, SC_OP_F, d, i);
            for (int i = a; i < imin(a + wave, pg->m); i++)
                PUSH(d, SC_OP_BW, d, i);
        }
    return SC_OK;
}

/* 1F1B; under a cap of k records, at most k - 1 warm-up forwards
 * (warmups). ww[P] is scratch. */
static sc_status onef1b(sc_prog *pg, const int *k, int *ww)
{
    int P = pg->P, m = pg->m;
    for (int d = 0; d < P; d++) {
        ww[d] = imin(P - d - 1, m);
        ww[P + d] = k[d] == INT_MAX ? INT_MAX : k[d] - 1;
    }
    warmups(P, ww, ww + P, 0, ww + 2 * P);
    for (int d = 0; d < P; d++) {
        int w = ww[2 * P + d];
        for (int i = 0; i < w; i++)
            PUSH(d, SC_OP_F, d, i);
        for (int j = 0; j < m - w; j++) {
            PUSH(d, SC_OP_F, d, w + j);
            PUSH(d, SC_OP_BW, d, j);
        }
        for (int j = m - w; j < m; j++)
            PUSH(d, SC_OP_BW, d, j);
    }
    return SC_OK;
}

/* ZB-H1 and ZB-H2: w warm-up F, then per microbatch j: B_j, the W that is
 * `lag` microbatches behind, the next F; then the remaining W.
 * ZB-H1: w = p-d (as 1F1B), lag = d: B runs back to back and the delayed W
 * fill the cool-down; peak memory p on every device.
 * ZB-H2: w = 2(p-d)-1 fills the warm-up bubble with F, lag = 2d keeps the
 * cool-down full of W; zero bubble for m >= 2p-1, peak 2p-1 on device 0. */
static sc_status zb(sc_prog *pg, int h2, const int *k, int *ww)
{
    int P = pg->P, m = pg->m;
    /* Under a cap of k records: w + lag <= k (the records held in the
     * steady state), the warm-up first (warmups; at least one forward). */
    for (int d = 0; d < P; d++) {
        ww[d] = imin(h2 ? 2 * (P - d) - 1 : P - d, m);
        ww[P + d] = k[d];
    }
    warmups(P, ww, ww + P, 1, ww + 2 * P);
    for (int d = 0; d < P; d++) {
        int w = ww[2 * P + d];
        int lag = imax(imin(h2 ? 2 * d : d, k[d] == INT_MAX ? INT_MAX : k[d] - w), 0), nw = 0;
        for (int i = 0; i < w; i++)
            PUSH(d, SC_OP_F, d, i);
        for (int j = 0; j < m; j++) {
            PUSH(d, SC_OP_B, d, j);
            if (j >= lag)
                PUSH(d, SC_OP_W, d, nw++);
            if (w + j < m)
                PUSH(d, SC_OP_F, d, w + j);
        }
        while (nw < m)
            PUSH(d, SC_OP_W, d, nw++);
    }
    return SC_OK;
}

/* Megatron's interleaved 1F1B. Virtual microbatch k of a device runs chunk
 * (k / P) % v forward (reversed for backward) on microbatch
 * (k / (P v)) P + k % P. */
static sc_status interleaved(sc_prog *pg, const int *k, int *ww)
{
    int P = pg->P, S = pg->S, m = pg->m;
    if (S % P != 0)
        return sc_fail(pg, SC_ERR_ARG, "interleaved needs stages to be a multiple of devices");
    int v = S / P;
    for (int s = 0; s < S; s++)
        if (pg->stage_dev[s] != s % P)
            return sc_fail(pg, SC_ERR_ARG, "interleaved needs the loop placement");
    if (m < P || m % P != 0)
        return sc_fail(pg, SC_ERR_ARG,
                       "interleaved needs m to be a multiple of p and m >= p (m = %d, p = %d)", m,
                       P);
    int total = m * v;
    /* Under a cap of k records (1/v unit each), at most k - 1 warm-up
     * forwards (warmups), but never fewer than (v-1) p: the first backward
     * needs the forward of its microbatch on every chunk. */
    for (int d = 0; d < P; d++) {
        ww[d] = m == P ? total : imin((P - d - 1) * 2 + (v - 1) * P, total);
        ww[P + d] = k[d] == INT_MAX ? INT_MAX : k[d] - 1;
    }
    warmups(P, ww, ww + P, imin((v - 1) * P, total), ww + 2 * P);
    for (int d = 0; d < P; d++) {
        int w = ww[2 * P + d];
        int nf = 0, nb = 0;
#define FWD(k) PUSH(d, SC_OP_F, (((k) / P) % v) * P + d, ((k) / (P * v)) * P + (k) % P)
#define BWD(k) PUSH(d, SC_OP_BW, (v - 1 - ((k) / P) % v) * P + d, ((k) / (P * v)) * P + (k) % P)
        while (nf < w) {
            FWD(nf);
            nf++;
        }
        while (nf < total) {
            FWD(nf);
            nf++;
            BWD(nb);
            nb++;
        }
        while (nb < total) {
            BWD(nb);
            nb++;
        }
#undef FWD
#undef BWD
    }
    return SC_OK;
}

/* ZB-V (the Zero Bubble paper's V schedule). Rank r holds chunk 0 (stage
 * r) and chunk 1 (stage 2P-1-r). Warm-up: 2(P-r)-1 F of chunk 0, r pairs
 * (F1, F0), P-r triples (F1, B1, W1); steady state (F0, B0, W0, F1, B1,
 * W1) while forwards remain; cool-down r pairs (B0, B1), P-r pairs (B0,
 * W0), then what is left: backwards, W of chunk 1, W of chunk 0. Each step
 * takes the next microbatch of its kind, and is skipped when none is left. */
typedef struct zbv_state {
    sc_prog *pg;
    int d, fused, stage[2], n[3][2]; /* n[F/B/W][chunk]: passes emitted */
} zbv_state;

static sc_status zbv_emit(zbv_state *z, int kind, int c)
{
    static const int ops[3] = {SC_OP_F, SC_OP_B, SC_OP_W};
    if (z->fused && kind == 2)
        return SC_OK; /* 1f1b-v: BW in B's place, no W */
    int *n = &z->n[kind][c];
    if (*n >= z->pg->m || (kind > 0 && *n >= z->n[kind - 1][c]))
        return SC_OK;
    int op = z->fused && kind == 1 ? SC_OP_BW : ops[kind];
    return sc_prog_push(z->pg, z->d, op, z->stage[c], (*n)++);
}

#define ZBV(kind, c)                                                                               \
    do {                                                                                           \
        sc_status st_ = zbv_emit(&z, (kind), (c));                                                \
        if (st_)                                                                                   \
            return st_;                                                                            \
    } while (0)

static sc_status zbv(sc_prog *pg, int fused)
{
    int P = pg->P, m = pg->m;
    const char *name = fused ? "1f1b-v" : "zb-v";
    if (pg->S != 2 * P)
        return sc_fail(pg, SC_ERR_ARG, "%s needs two stages per device (stages = 2p)", name);
    for (int d = 0; d < P; d++)
        if (pg->stage_dev[d] != d || pg->stage_dev[2 * P - 1 - d] != d)
            return sc_fail(pg, SC_ERR_ARG, "%s needs the V placement", name);
    if (m < 2 * P - 1)
        return sc_fail(pg, SC_ERR_ARG, "%s needs m >= 2p - 1 (m = %d, p = %d)", name, m, P);
    for (int r = 0; r < P; r++) {
        zbv_state z = {pg, r, fused, {r, 2 * P - 1 - r}, {{0}}};
        for (int i = 0; i < 2 * (P - r) - 1; i++)
            ZBV(0, 0);
        for (int i = 0; i < r; i++) {
            ZBV(0, 1);
            ZBV(0, 0);
        }
        for (int i = 0; i < P - r; i++) {
            ZBV(0, 1);
            ZBV(1, 1);
            ZBV(2, 1);
        }
        while (z.n[0][0] < m || z.n[0][1] < m) {
            ZBV(0, 0);
            ZBV(1, 0);
            ZBV(2, 0);
            ZBV(0, 1);
            ZBV(1, 1);
            ZBV(2, 1);
        }
        for (int i = 0; i < r; i++) {
            ZBV(1, 0);
            ZBV(1, 1);
        }
        for (int i = 0; i < P - r; i++) {
            ZBV(1, 0);
            ZBV(2, 0);
        }
        while (z.n[1][0] < m || z.n[1][1] < m) {
            ZBV(1, 1);
            ZBV(1, 0);
        }
        while (!fused && z.n[2][1] < m)
            ZBV(2, 1);
        while (!fused && z.n[2][0] < m)
            ZBV(2, 0);
    }
    return SC_OK;
}
#undef ZBV

/* Fills the orders of rule `name` under caps (NULL: the least knob). */
static sc_status fill(sc_prog *pg, const char *name, const double *caps, int *k, int *ww)
{
    sc_status st = SC_OK;
    for (int d = 0; d < pg->P; d++)
        sc_prog_clear_order(pg, d);
    budgets(pg, caps, k);
    if (strcmp(name, "interleaved") == 0)
        return interleaved(pg, k, ww);
    if (strcmp(name, "zb-v") == 0 || strcmp(name, "1f1b-v") == 0)
        return zbv(pg, name[0] == '1'); /* no knob: V-Half and V-Min are its lower-memory kin */
    int known = 0;
    for (int i = 0; sc_rule_names[i]; i++)
        known |= strcmp(name, sc_rule_names[i]) == 0;
    if (!known)
        return sc_fail(pg, SC_ERR_ARG,
                       "unknown rule '%s' (rules: gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, 1f1b-v)", name);
    if ((st = need_one_stage(pg, name)))
        return st;
    if (strcmp(name, "gpipe") == 0)
        return gpipe(pg, k);
    if (strcmp(name, "1f1b") == 0)
        return onef1b(pg, k, ww);
    return zb(pg, strcmp(name, "zb-h2") == 0, k, ww);
}

static int over_caps(const sc_prog *pg, const double *caps, double *peak)
{
    int over = 0;
    sc_order_peaks(pg, peak);
    for (int d = 0; d < pg->P; d++)
        over |= peak[d] > caps[d] + 1e-9 * (1 + caps[d]);
    return over;
}

sc_status sc_rule_fill(sc_prog *pg, const char *name)
{
    int P = pg->P;
    int *k = sc_malloc(4 * (size_t)P * sizeof *k); /* k, then the warm-ups' scratch */
    double *caps = sc_malloc(3 * (size_t)P * sizeof *caps), *peak = caps ? caps + P : NULL;
    double *none = caps ? caps + 2 * P : NULL;
    if (!k || !caps) {
        sc_free(k);
        sc_free(caps);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    for (int d = 0; d < P; d++) {
        caps[d] = sc_prog_mem_cap(pg, d);
        none[d] = INFINITY;
    }
    /* The rule as it is, when it meets the caps; else its knob, and the
     * reorder of blocks (reorder.h) to fill the idle time the knob costs,
     * within the caps; when even that is over a cap, what the least knob
     * reaches is what the rule needs (the refusal names it, check/caps.h). */
    sc_status st = fill(pg, name, none, k, k + P);
    if (st == SC_OK && over_caps(pg, caps, peak) &&
        (st = fill(pg, name, caps, k, k + P)) == SC_OK) {
        if (!over_caps(pg, caps, peak)) {
            st = sc_reorder(pg, caps, NULL, 0); /* the rule's orders are valid */
        } else if ((st = fill(pg, name, NULL, k, k + P)) == SC_OK) {
            sc_free(pg->cap_need);
            if (!(pg->cap_need = sc_malloc((size_t)P * sizeof(double))))
                st = sc_fail(pg, SC_ERR_NOMEM, "out of memory");
            else
                sc_order_peaks(pg, pg->cap_need);
            if (st == SC_OK)
                st = fill(pg, name, caps, k, k + P);
        }
    }
    sc_free(k);
    sc_free(caps);
    return st;
}
