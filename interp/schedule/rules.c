/*
 * rules.c — the handcrafted schedules of rules.h.
 */
#include "rules.h"
#include "ir/ir_impl.h"

#include <string.h>

const char *const sc_rule_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2",
                                     "zb-v", "1f1b-v", NULL};

static int imin(int a, int b) { return a < b ? a : b; }

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

static sc_status gpipe(sc_prog *pg)
{
    for (int d = 0; d < pg->P; d++) {
        for (int i = 0; i < pg->m; i++)
            PUSH(d, SC_OP_F, d, i);
        for (int i = 0; i < pg->m; i++)
            PUSH(d, SC_OP_BW, d, i);
    }
    return SC_OK;
}

static sc_status onef1b(sc_prog *pg)
{
    int P = pg->P, m = pg->m;
    for (int d = 0; d < P; d++) {
        int w = imin(P - d - 1, m);
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
static sc_status zb(sc_prog *pg, int h2)
{
    int P = pg->P, m = pg->m;
    for (int d = 0; d < P; d++) {
        int w = imin(h2 ? 2 * (P - d) - 1 : P - d, m);
        int lag = h2 ? 2 * d : d, nw = 0;
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
static sc_status interleaved(sc_prog *pg)
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
    for (int d = 0; d < P; d++) {
        int w = m == P ? total : imin((P - d - 1) * 2 + (v - 1) * P, total);
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

sc_status sc_rule_fill(sc_prog *pg, const char *name)
{
    sc_status st = SC_OK;
    for (int d = 0; d < pg->P; d++)
        sc_prog_clear_order(pg, d);
    if (strcmp(name, "interleaved") == 0)
        return interleaved(pg);
    if (strcmp(name, "zb-v") == 0 || strcmp(name, "1f1b-v") == 0)
        return zbv(pg, name[0] == '1');
    int known = 0;
    for (int i = 0; sc_rule_names[i]; i++)
        known |= strcmp(name, sc_rule_names[i]) == 0;
    if (!known)
        return sc_fail(pg, SC_ERR_ARG,
                       "unknown rule '%s' (rules: gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, 1f1b-v)", name);
    if ((st = need_one_stage(pg, name)))
        return st;
    if (strcmp(name, "gpipe") == 0)
        return gpipe(pg);
    if (strcmp(name, "1f1b") == 0)
        return onef1b(pg);
    return zb(pg, strcmp(name, "zb-h2") == 0);
}
