/*
 * test_reorder.c — what the reorder's speed rests on (interp/schedule/
 * reorder_impl.h): the order a round walks its passes in (sc_r_seq_order,
 * a timing's topological numbering) puts every input before its consumer
 * and keeps each device's order, as the merge by key did; the phases read
 * from the keys (sc_r_phase_of) are the ones the merge's order gave
 * (sc_r_steady walking it); and the timing
 * that judges a candidate (sc_r_time with the real costs) has sc_dataflow's
 * figures, to the bit; where the costs are a power of two times the unit
 * slots, a round on the unit grid repeats the round on the real costs;
 * a list schedule's own timing, where exact, is the judge's; the
 * table of the passes' figures changes no round; and the list
 * schedules' winner tree holds the least device by (key, device).
 */
#include "harness.h"
#include "schedule/dataflow.h"
#include "schedule/reorder_impl.h"
#include "schedule/rules.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    const char *rule;
    int v;               /* stages per device */
    sc_place place;
    double tf, tb, tw, tcomm;
} shape;

static const shape SHAPES[] = {
    {"zb-v", 2, SC_PLACE_V, 1, 1, 1, 0},
    {"zb-v", 2, SC_PLACE_V, 1, 1.2, 0.8, 0},
    {"zb-v", 2, SC_PLACE_V, 29850, 29767, 18868, 466},
    {"zb-h1", 1, SC_PLACE_LOOP, 1, 1.5, 1, 0.3},
    {"1f1b", 1, SC_PLACE_LOOP, 1, 2, 1, 0},
    {"interleaved", 2, SC_PLACE_LOOP, 1.1, 0.7, 0.3, 0.25},
};

/* The program's orders, flat, with what a round reads (sc_rctx). */
typedef struct flat {
    sc_rctx c;
    sc_instr *src;
    size_t *base;
    int *dev;
    double *cap;
} flat;

static int flatten(sc_prog *pg, flat *f)
{
    int P = pg->P;
    size_t N = 0;
    for (int d = 0; d < P; d++)
        N += pg->order[d].n;
    f->src = malloc(N * sizeof *f->src);
    f->base = malloc(((size_t)P + 1) * sizeof *f->base);
    f->dev = malloc(N * sizeof *f->dev);
    f->cap = malloc((size_t)P * sizeof *f->cap);
    if (!f->src || !f->base || !f->dev || !f->cap)
        return 0;
    size_t at = 0;
    for (int d = 0; d < P; d++) {
        f->base[d] = at;
        f->cap[d] = 1e300;
        memcpy(f->src + at, pg->order[d].v, pg->order[d].n * sizeof *f->src);
        for (size_t k = 0; k < pg->order[d].n; k++)
            f->dev[at + k] = d;
        at += pg->order[d].n;
    }
    f->base[P] = N;
    f->c = (sc_rctx){pg, P, N, f->base, f->dev, f->cap, NULL, 0, 64, NULL};
    return 1;
}

static void unflatten(flat *f)
{
    free(f->src);
    free(f->base);
    free(f->dev);
    free(f->cap);
}

/* One shape, one model (unit or costs): the walk against the merge. */
static void walk_against_merge(sc_prog *pg, const flat *f, int unit)
{
    const sc_rctx *c = &f->c;
    size_t N = c->N, SM = (size_t)pg->S * (size_t)pg->m;
    double *st = malloc(2 * N * sizeof *st);
    size_t *seq = malloc(N * sizeof *seq), *pos = malloc(N * sizeof *pos);
    gkey *gm = malloc(N * sizeof *gm), *gw = malloc(N * sizeof *gw), *tmp = malloc(N * sizeof *tmp);
    unsigned char *done = calloc(2 * SM, 1);
    CHECK(st && seq && pos && gm && gw && tmp && done);
    if (!st || !seq || !pos || !gm || !gw || !tmp || !done)
        goto out;
    CHECK(sc_r_time(c, f->src, unit, st, st + N, seq) == 1);
    for (size_t k = 0; k < N; k++)
        gm[k] = gw[k] = (gkey){st[k], seq[k], (uint32_t)k};
    sc_rphase ph;
    sc_r_phase_init(pg, f->src, gw, N, &ph);
    CHECK(sc_r_gmerge(c->P, gm, c->base, tmp) == 1);
    uint32_t *inv = malloc(N * sizeof *inv);
    CHECK(inv != NULL);
    if (!inv)
        goto out;
    sc_r_seq_order(seq, N, inv);
    for (size_t x = 0; x < N; x++)
        gw[x] = (gkey){st[inv[x]], seq[inv[x]], inv[x]};
    free(inv);
    /* The walk: every pass once, each device's in its order, inputs first. */
    for (size_t x = 0; x < N; x++)
        pos[gw[x].k] = x;
    int order_kept = 1, inputs_first = 1, phases = 1;
    for (int d = 0; d < c->P; d++)
        for (size_t k = c->base[d] + 1; k < c->base[d + 1]; k++)
            order_kept &= pos[k - 1] < pos[k];
    for (size_t x = 0; x < N; x++) {
        const sc_instr *in = &f->src[gw[x].k];
        int dop, ds;
        if (sc_pass_dep(pg, in, &dop, &ds))
            inputs_first &= done[(dop == SC_OP_F ? 0 : SM) + SC_SM(pg, ds, in->mb)];
        if (sc_op_is_fwd(in->op))
            done[SC_SM(pg, in->stage, in->mb)] = 1;
        else if (sc_op_is_bgrad(in->op))
            done[SM + SC_SM(pg, in->stage, in->mb)] = 1;
    }
    /* The phases: what the merge's order says, pass by pass. */
    int phase = 0;
    for (size_t x = 0; x < N; x++) {
        int steady = sc_r_steady(pg, &f->src[gm[x].k], &phase), of = sc_r_phase_of(&ph, &gm[x]);
        phases &= steady == (of == 1) && (steady || (phase == 0) == (of == 0));
    }
    CHECK(order_kept);
    CHECK(inputs_first);
    CHECK(phases);
out:
    free(st);
    free(seq);
    free(pos);
    free(gm);
    free(gw);
    free(tmp);
    free(done);
}

static sc_prog *make(const shape *sh, int p, int m)
{
    sc_prog *pg = sc_prog_new(p, sh->v * p, m);
    CHECK(pg != NULL);
    if (!pg)
        return NULL;
    CHECK(sc_prog_set_placement(pg, sh->place, NULL) == SC_OK);
    CHECK(sc_prog_set_cost(pg, -1, sh->tf, sh->tb, sh->tw) == SC_OK);
    CHECK(sc_prog_set_comm(pg, sh->tcomm) == SC_OK);
    sc_status st = sc_rule_fill(pg, sh->rule);
    CHECK(st == SC_OK);
    if (st) {
        fprintf(stderr, "  %s p=%d m=%d: %s\n", sh->rule, p, m, sc_errmsg(pg));
        sc_prog_free(pg);
        return NULL;
    }
    return pg;
}

/* make's program with its flat view (flatten), NULL where either failed
 * (checked); close_case frees both. */
static sc_prog *open_case(const shape *sh, int p, int m, flat *f)
{
    sc_prog *pg = make(sh, p, m);
    if (pg && !flatten(pg, f)) {
        CHECK(0);
        unflatten(f);
        sc_prog_free(pg);
        return NULL;
    }
    return pg;
}

static void close_case(sc_prog *pg, flat *f)
{
    unflatten(f);
    sc_prog_free(pg);
}

/* fn on each shape at p = 2, 4, 8 and m = 2p (open_case, close_case). */
static void each_case(void (*fn)(sc_prog *, flat *, void *), void *arg)
{
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        for (int p = 2; p <= 8; p *= 2) {
            flat f;
            sc_prog *pg = open_case(&SHAPES[i], p, 2 * p, &f);
            if (!pg)
                continue;
            fn(pg, &f, arg);
            close_case(pg, &f);
        }
}

TEST(walk_is_the_merge)
{
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        for (int p = 2; p <= 8; p *= 2)
            for (int m = 2 * p; m <= 4 * p; m += 2 * p) {
                flat f;
                sc_prog *pg = open_case(&SHAPES[i], p, m, &f);
                if (!pg)
                    continue;
                walk_against_merge(pg, &f, 0);
                walk_against_merge(pg, &f, 1);
                close_case(pg, &f);
            }
}

/* A cycle across devices: the timing whose numbering the rounds walk says
 * so instead of ordering. */
TEST(walk_finds_a_cycle)
{
    sc_prog *pg = make(&SHAPES[4], 2, 2);
    flat f;
    if (!pg)
        return;
    CHECK(flatten(pg, &f));
    size_t N = f.c.N;
    /* device 1 (the last stage) runs its B mb0 before F mb0: never ready */
    sc_instr *d1 = f.src + f.base[1];
    size_t n1 = f.base[2] - f.base[1];
    for (size_t k = 1; k < n1; k++)
        if (d1[k].op == SC_OP_BW && d1[k].mb == 0) {
            sc_instr t = d1[k];
            memmove(d1 + 1, d1, k * sizeof *d1);
            d1[0] = t;
            break;
        }
    double *t = malloc(2 * N * sizeof *t);
    size_t *seq = malloc(N * sizeof *seq);
    CHECK(t && seq);
    if (t && seq)
        CHECK(sc_r_time(&f.c, f.src, 0, t, t + N, seq) == 0);
    free(t);
    free(seq);
    close_case(pg, &f);
}

/* judge_timing_is_dataflow's check of one program. */
static void judge_case(sc_prog *pg, flat *fp, void *arg)
{
    (void)arg;
    size_t N = fp->c.N;
    double *a = malloc(2 * N * sizeof *a), *b = malloc(2 * N * sizeof *b);
    size_t *seq = malloc(N * sizeof *seq);
    CHECK(a && b && seq);
    if (a && b && seq) {
        CHECK(sc_r_time(&fp->c, fp->src, 0, a, a + N, seq) == 1);
        CHECK(sc_dataflow(pg, b, b + N, NULL) == SC_OK);
        CHECK(memcmp(a, b, 2 * N * sizeof *a) == 0);
    }
    free(a);
    free(b);
    free(seq);
}

TEST(judge_timing_is_dataflow)
{
    each_case(judge_case, NULL);
}

/* Costs a power of two times the slots, T_comm 0 (sc_r_scaled_slots):
 * the placement round and the W round on the unit grid give the orders of
 * the same round on the real costs, to the byte, with caps that bind and
 * without; the unit timing is the real one over alpha. Costs of another
 * kind are not taken for scaled. */
TEST(unit_round_repeats_scaled_costs)
{
    static const double alphas[] = {0.25, 1, 0.0625}; /* half of alpha: the costs are 2a */
    int made[2] = {0, 0}; /* rounds that made orders, caps loose and tight */
    for (size_t i = 0; i < sizeof alphas / sizeof alphas[0]; i++)
        for (int p = 2; p <= 8; p *= 2)
            for (int m = 2 * p; m <= 4 * p; m += p + 1) {
                double a = alphas[i];
                shape sh = {"zb-v", 2, SC_PLACE_V, 2 * a, 2 * a, 2 * a, 0};
                flat f;
                sc_prog *pg = open_case(&sh, p, m, &f);
                if (!pg)
                    continue;
                CHECK(sc_r_scaled_slots(&f.c, f.src) == 1);
                size_t N = f.c.N;
                double *t0 = malloc(2 * N * sizeof *t0), *t1 = malloc(2 * N * sizeof *t1);
                size_t *s0 = malloc(N * sizeof *s0), *s1 = malloc(N * sizeof *s1);
                sc_instr *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
                CHECK(t0 && t1 && s0 && s1 && x && y);
                for (int tight = 0; tight < 2 && t0 && t1 && s0 && s1 && x && y; tight++) {
                    for (int d = 0; d < p; d++) /* a chunk's record is 1/2 unit: V-Half's p */
                        f.cap[d] = tight ? p : 1e300;
                    CHECK(sc_r_time(&f.c, f.src, 0, t0, t0 + N, s0) == 1);
                    CHECK(sc_r_time(&f.c, f.src, 1, t1, t1 + N, s1) == 1);
                    for (size_t k = 0; k < 2 * N; k++)
                        CHECK(t0[k] == 2 * a * t1[k]);
                    for (int freeze = 0; freeze < 2; freeze++) {
                        int rx = sc_r_insert(&f.c, f.src, t0, s0, 0, freeze, x);
                        CHECK(rx == sc_r_insert(&f.c, f.src, t1, s1, 1, freeze, y));
                        CHECK(rx != 1 || memcmp(x, y, N * sizeof *x) == 0);
                        made[tight] += rx == 1;
                        sc_rtime ts = {t0, t0 + N, s0, 1};
                        rx = sc_r_wround(&f.c, f.src, &ts, 0, freeze, x);
                        CHECK(rx == sc_r_wround(&f.c, f.src, NULL, 1, freeze, y));
                        CHECK(rx != 1 || memcmp(x, y, N * sizeof *x) == 0);
                        made[tight] += rx == 1;
                    }
                }
                free(t0);
                free(t1);
                free(s0);
                free(s1);
                free(x);
                free(y);
                close_case(pg, &f);
            }
    CHECK(made[0] > 0 && made[1] > 0);
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        if (SHAPES[i].tf == SHAPES[i].tb && SHAPES[i].tb == SHAPES[i].tw && SHAPES[i].tcomm == 0)
            continue;
        flat f;
        sc_prog *pg = open_case(&SHAPES[i], 4, 8, &f);
        if (!pg)
            continue;
        CHECK(sc_r_scaled_slots(&f.c, f.src) == 0);
        close_case(pg, &f);
    }
}

/* A list schedule's own timing of the orders it wrote (sc_rlist_time)
 * where it says it is exact: the judge's figures to the bit (span and
 * makespan of sc_r_time's timing of them, the memory of each device summed
 * in its order against its cap), so the reorder need not time them. */
TEST(list_timing_is_the_judge)
{
    int exact = 0, over = 0;
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        for (int p = 2; p <= 8; p *= 2)
            for (int j = 0; j < 2; j++) {
                int m = j ? 4 * p + (SHAPES[i].place != SC_PLACE_LOOP || SHAPES[i].v == 1) : 2 * p;
                flat f;
                sc_prog *pg = open_case(&SHAPES[i], p, m, &f);
                if (!pg)
                    continue;
                size_t N = f.c.N;
                double *t = malloc(2 * N * sizeof *t);
                sc_instr *x = malloc(N * sizeof *x);
                CHECK(t && x);
                for (int tight = 0; tight < 3 && t && x; tight++)
                    for (int strategy = 1; strategy <= 3; strategy += 2) {
                        for (int d = 0; d < p; d++)
                            f.cap[d] = tight == 0 ? 1e300 : tight == 1 ? p : 1.5;
                        sc_rlist_time lt;
                        if (sc_r_list(&f.c, f.src, strategy, x, &lt) != 1 || !lt.exact)
                            continue;
                        exact++;
                        CHECK(sc_r_time(&f.c, x, 0, t, t + N, NULL) == 1);
                        double span = 0, mk = 0;
                        int o = 0;
                        for (int d = 0; d < p; d++) {
                            size_t a = f.base[d], b = f.base[d + 1];
                            double lvl = 0;
                            for (size_t k = a; k < b; k++)
                                o |= (lvl += sc_pass_mem(pg, &x[k])) > f.cap[d] + 1e-7;
                            if (a < b) {
                                span = fmax(span, t[N + b - 1] - t[a]);
                                mk = fmax(mk, t[N + b - 1]);
                            }
                        }
                        CHECK(o == lt.over);
                        CHECK(span == lt.span);
                        CHECK(mk == lt.makespan);
                        over += o;
                    }
                free(t);
                free(x);
                close_case(pg, &f);
            }
    CHECK(exact > 0 && over > 0);
}

/* The table of the passes' figures (sc_r_tab_new) changes nothing: every
 * timing (real costs and unit grid), list schedule, placement round and W
 * round with it is the one without it, to the bit, caps loose and tight. */
/* table_is_the_passes' check of one program (arg: the count of rounds
 * compared). */
static void table_case(sc_prog *pg, flat *fp, void *arg)
{
    int *compared = arg, p = pg->P;
    size_t N = fp->c.N;
    sc_rtab *tab = sc_r_tab_new(pg);
    sc_rctx ct = fp->c;
    ct.tab = tab;
    double *a = malloc(2 * N * sizeof *a), *b = malloc(2 * N * sizeof *b);
    size_t *sa = malloc(N * sizeof *sa), *sb = malloc(N * sizeof *sb);
    sc_instr *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    CHECK(tab && a && b && sa && sb && x && y);
    for (int tight = 0; tight < 2 && tab && a && b && sa && sb && x && y; tight++) {
        for (int d = 0; d < p; d++)
            fp->cap[d] = tight ? p : 1e300;
        for (int unit = 0; unit < 2; unit++) {
            CHECK(sc_r_time(&fp->c, fp->src, unit, a, a + N, sa) == 1);
            CHECK(sc_r_time(&ct, fp->src, unit, b, b + N, sb) == 1);
            CHECK(memcmp(a, b, 2 * N * sizeof *a) == 0);
            CHECK(memcmp(sa, sb, N * sizeof *sa) == 0);
            for (int freeze = 0; freeze < 2; freeze++) {
                int rx = sc_r_insert(&fp->c, fp->src, a, sa, unit, freeze, x);
                CHECK(rx == sc_r_insert(&ct, fp->src, a, sa, unit, freeze, y));
                CHECK(rx != 1 || memcmp(x, y, N * sizeof *x) == 0);
                rx = sc_r_wround(&fp->c, fp->src, NULL, unit, freeze, x);
                CHECK(rx == sc_r_wround(&ct, fp->src, NULL, unit, freeze, y));
                CHECK(rx != 1 || memcmp(x, y, N * sizeof *x) == 0);
                *compared += rx == 1;
            }
        }
        for (int strategy = 1; strategy <= 3; strategy += 2) {
            sc_rlist_time la, lb;
            int rx = sc_r_list(&fp->c, fp->src, strategy, x, &la);
            CHECK(rx == sc_r_list(&ct, fp->src, strategy, y, &lb));
            CHECK(rx != 1 || memcmp(x, y, N * sizeof *x) == 0);
            CHECK(rx != 1 || memcmp(&la, &lb, sizeof la) == 0);
        }
    }
    sc_free(tab);
    free(a);
    free(b);
    free(sa);
    free(sb);
    free(x);
    free(y);
}

TEST(table_is_the_passes)
{
    int compared = 0;
    each_case(table_case, &compared);
    CHECK(compared > 0);
}

/* The first placed pass after r (sc_r_first_after) gallops back from the
 * lane's end: the first one at or after lo that ends after r + EPS, as a
 * scan finds it, at every r and lo (ends that grow, one lane of 0, one of
 * many). */
TEST(first_after_is_the_scan)
{
    enum { NL = 300 };
    double t0[NL], t1[NL], lvl[NL];
    uint32_t idx[NL];
    int checked = 0;
    for (size_t n = 0; n <= NL; n += n < 8 ? 1 : 73) {
        lane L = {t0, t1, lvl, idx, 0, 0};
        for (size_t i = 0; i < n; i++)
            sc_r_lane_insert(&L, i, 2.0 * (double)i + (i % 3 ? 0.5 : 0), 2.0 * (double)i + 1.5, 0,
                             (uint32_t)i, 0);
        CHECK(L.n == n && !L.tiny);
        for (size_t lo = 0; lo <= n; lo += lo < 4 ? 1 : 37)
            for (double r = -1; r <= 2.0 * (double)n + 1; r += 0.25) {
                size_t want = lo;
                while (want < n && !(t1[want] > r + SC_R_EPS))
                    want++;
                CHECK(sc_r_first_after(&L, lo, r) == want);
                checked++;
            }
    }
    CHECK(checked > 1000);
}

/* The list schedules' winner tree (ir/wintree.h: sc_wtree_fix) keeps at every node the
 * least (key, device) under it, ties to the lower device, over P not a
 * power of two too (sentinels) and keys with many ties and INFINITY:
 * each node checked against a scan of its leaves after every change. */
TEST(winner_tree_is_the_least)
{
    srand(7);
    long checked = 0;
    for (int P = 1; P <= 70; P += (P < 10 ? 1 : 7)) {
        int Q = 1;
        while (Q < P)
            Q *= 2;
        int t[256];
        double tk[256], key[128];
        for (int d = 0; d < P; d++)
            key[d] = rand() % 4 == 0 ? INFINITY : (double)(rand() % 5);
        sc_wtree_build(t, tk, Q, P, key);
        for (int step = 0; step < 400; step++) {
            int d = step % 3 == 0 ? t[1] : rand() % P; /* the winner, as the schedules move it */
            if (d >= P)
                d = rand() % P;
            key[d] = rand() % 6 == 0 ? INFINITY : (double)(rand() % 5);
            sc_wtree_fix(t, tk, Q, d, key[d]);
            for (int i = 1; i < Q; i++) {
                int lo = i, hi = i; /* leaves under i: [lo, hi] - Q */
                while (lo < Q) {
                    lo = 2 * lo;
                    hi = 2 * hi + 1;
                }
                int best = lo - Q;
                double bk = best < P ? key[best] : INFINITY;
                for (int q = lo - Q + 1; q <= hi - Q; q++) {
                    double kq = q < P ? key[q] : INFINITY;
                    if (kq < bk) {
                        best = q;
                        bk = kq;
                    }
                }
                CHECK(t[i] == best && tk[i] == bk);
                checked++;
            }
        }
    }
    CHECK(checked > 10000);
}

int main(void)
{
    RUN(walk_is_the_merge);
    RUN(walk_finds_a_cycle);
    RUN(judge_timing_is_dataflow);
    RUN(unit_round_repeats_scaled_costs);
    RUN(list_timing_is_the_judge);
    RUN(table_is_the_passes);
    RUN(first_after_is_the_scan);
    RUN(winner_tree_is_the_least);
    return harness_done("reorder");
}
