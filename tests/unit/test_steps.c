/*
 * test_steps.c — training steps back to back (docs/steps.md): unrolling, the
 * check that every step repeats the first, per-step simulation figures,
 * and the optimizer (AdamW, clipping, skipping, the kept copy).
 */
#include "check/rollback.h"
#include "compile.h"
#include "device/device.h"
#include "harness.h"
#include "ir/ir.h"
#include "model/optim.h"
#include "schedule/rules.h"
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sc_prog *rule_prog(int p, int m, const char *rule, int steps)
{
    sc_prog *pg = sc_prog_new(p, p, m);
    if (!pg || sc_rule_fill(pg, rule) != SC_OK || sc_prog_set_steps(pg, steps) != SC_OK) {
        sc_prog_free(pg);
        return NULL;
    }
    return pg;
}

static int count_op(const sc_prog *pg, int d, int op)
{
    size_t n;
    const sc_instr *v = sc_prog_stream(pg, d, &n);
    int c = 0;
    for (size_t k = 0; k < n; k++)
        c += v[k].op == op;
    return c;
}

/* Every step repeats the first with its microbatches moved; each ends with
 * REDUCE then OPTIM; the streams hold m·steps microbatch numbers. */
TEST(unroll)
{
    sc_prog *one = rule_prog(4, 8, "1f1b", 1), *pg = rule_prog(4, 8, "1f1b", 3);
    CHECK(one && pg && sc_check(one) == SC_OK && sc_check(pg) == SC_OK);
    CHECK(sc_prog_steps(pg) == 3 && sc_prog_stream_microbatches(pg) == 24);
    CHECK(sc_prog_stream_microbatches(one) == 8);
    CHECK(sc_prog_total_instructions(pg) == 3 * sc_prog_total_instructions(one));
    for (int d = 0; d < 4; d++) {
        size_t n1, n;
        const sc_instr *a = sc_prog_stream(one, d, &n1), *b = sc_prog_stream(pg, d, &n);
        CHECK(n == 3 * n1 && count_op(pg, d, SC_OP_OPTIM) == 3);
        CHECK(count_op(pg, d, SC_OP_REDUCE) == 3);
        for (size_t k = 0; k < n && n == 3 * n1; k++) {
            const sc_instr *x = &a[k % n1], *y = &b[k];
            int shift = x->mb >= 0 ? (int)(k / n1) * 8 : 0;
            CHECK(x->op == y->op && x->stage == y->stage && x->mb + shift == y->mb);
        }
    }
    /* Changing the steps relowers. */
    CHECK(sc_prog_set_steps(pg, 2) == SC_OK && sc_check(pg) == SC_OK);
    CHECK(sc_prog_total_instructions(pg) == 2 * sc_prog_total_instructions(one));
    CHECK(sc_prog_set_steps(pg, 0) == SC_ERR_ARG);
    CHECK(sc_prog_set_optim_sync(pg, 7) == SC_ERR_ARG);
    CHECK(sc_sync_parse("post-validation") == SC_SYNC_POSTVAL && sc_sync_parse("x") == -1);
    CHECK(strcmp(sc_sync_name(SC_SYNC_SYNC), "sync") == 0);
    sc_prog_free(one);
    sc_prog_free(pg);
}

static sc_instr C(int op, int s, int mb) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}; }
static sc_instr E(int op) { return (sc_instr){.op = (uint8_t)op, .stage = -1, .mb = -1, .peer = -1}; }

/* Streams given directly: a second step that does not repeat the first,
 * one step too few, a pass after the last step, are refused by name. */
TEST(given_steps)
{
    struct { sc_instr v[12]; int n; const char *msg; } cases[] = {
        {{C(SC_OP_F, 0, 0), C(SC_OP_F, 0, 1), C(SC_OP_BW, 0, 0), C(SC_OP_BW, 0, 1), E(SC_OP_REDUCE),
          E(SC_OP_OPTIM), C(SC_OP_F, 0, 2), C(SC_OP_F, 0, 3), C(SC_OP_BW, 0, 2), C(SC_OP_BW, 0, 3),
          E(SC_OP_REDUCE), E(SC_OP_OPTIM)}, 12, NULL},
        {{C(SC_OP_F, 0, 0), C(SC_OP_F, 0, 1), C(SC_OP_BW, 0, 0), C(SC_OP_BW, 0, 1), E(SC_OP_REDUCE),
          E(SC_OP_OPTIM), C(SC_OP_F, 0, 3), C(SC_OP_F, 0, 2), C(SC_OP_BW, 0, 2), C(SC_OP_BW, 0, 3),
          E(SC_OP_REDUCE), E(SC_OP_OPTIM)}, 12, "does not repeat step 0's passes"},
        {{C(SC_OP_F, 0, 0), C(SC_OP_F, 0, 1), C(SC_OP_BW, 0, 0), C(SC_OP_BW, 0, 1), E(SC_OP_REDUCE),
          E(SC_OP_OPTIM)}, 6, "holds 1 of the program's 2 steps"},
        {{C(SC_OP_F, 0, 0), C(SC_OP_F, 0, 1), C(SC_OP_BW, 0, 0), C(SC_OP_BW, 0, 1), E(SC_OP_REDUCE),
          C(SC_OP_F, 0, 2), E(SC_OP_OPTIM)}, 7, "between the REDUCE and the OPTIM"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sc_prog *pg = sc_prog_new(1, 1, 2);
        CHECK(sc_prog_set_steps(pg, 2) == SC_OK);
        for (int k = 0; k < cases[c].n; k++)
            CHECK(sc_prog_push_stream(pg, 0, cases[c].v[k]) == SC_OK);
        sc_status st = sc_check(pg);
        if (!cases[c].msg) {
            CHECK(st == SC_OK);
        } else {
            CHECK(st == SC_ERR_PROGRAM);
            CHECK_STR(sc_errmsg(pg), cases[c].msg);
        }
        sc_prog_free(pg);
    }
}

/* Per-step figures: with no synchronization each device starts a step when
 * it ends the one before, so the steps tile (ZB-H2's parallelogram, 1F1B's
 * trapezoid) and four steps keep the bubble of one. The steps' makespans
 * add up to when the last OPTIM ends. */
TEST(sim_steps)
{
    const char *rules[] = {"zb-h2", "1f1b"};
    for (int r = 0; r < 2; r++) {
        sc_prog *one = rule_prog(8, 32, rules[r], 1), *pg = rule_prog(8, 32, rules[r], 4);
        sc_sim *s1 = NULL, *s4 = NULL;
        CHECK(sc_simulate(one, &s1) == SC_OK && sc_simulate(pg, &s4) == SC_OK);
        if (!s1 || !s4)
            continue;
        CHECK(s4->steps == 4 && s1->steps == 1);
        double sum = 0;
        for (int k = 0; k < 4; k++) {
            sum += s4->step_makespan[k];
            CHECK(s4->step_end[k] > (k ? s4->step_end[k - 1] : 0));
            CHECK_NEAR(s4->step_bubble[k], s1->bubble_rate, 1e-12); /* each step alone */
        }
        CHECK_NEAR(sum, s4->step_end[3], 1e-9);
        CHECK_NEAR(s4->busy[0], 4 * s1->busy[0], 1e-9);
        CHECK(s4->bubble_rate <= s1->bubble_rate + 1e-12);
        sc_sim_free(s1);
        sc_sim_free(s4);
        sc_prog_free(one);
        sc_prog_free(pg);
    }
}

/* The verdict: skip on any non-finite value, clip coefficient above the
 * threshold, nothing below it. */
TEST(decide)
{
    sc_optim_cfg c = sc_optim_defaults();
    double st[2] = {4.0, 0};
    sc_optim_verdict v = sc_optim_decide(&c, st);
    CHECK(!v.skip && v.coef == 1 && v.norm == 2 && !sc_optim_amends(&v));
    c.clip = 1;
    v = sc_optim_decide(&c, st);
    CHECK_NEAR(v.coef, 1 / (2 + 1e-6), 1e-15);
    CHECK(sc_optim_amends(&v));
    c.clip = 3;
    v = sc_optim_decide(&c, st);
    CHECK(v.coef == 1 && !sc_optim_amends(&v));
    double bad[2] = {4.0, 1}, nan_[2] = {NAN, 0};
    CHECK(sc_optim_decide(&c, bad).skip && sc_optim_decide(&c, nan_).skip);
    char err[128];
    c.beta1 = 1;
    CHECK(sc_optim_check(&c, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "beta1");
    c = sc_optim_defaults();
    c.eps = 0;
    CHECK(sc_optim_check(&c, err, sizeof err) == SC_ERR_ARG);
}

/* AdamW on a tensor of the cpu backend: the first step moves every weight
 * by about lr against its gradient's sign (m/sqrt(v) = ±1), after the
 * decay; a skipped step changes nothing; the kept copy restores exactly. */
TEST(adamw)
{
    sc_backend *be;
    char err[128];
    CHECK(sc_backend_open("cpu", 0, 0, &be, err, sizeof err) == SC_OK);
    enum { N = 100000 }; /* more than one staging chunk */
    float *w = be->ops->alloc(be->ctx, N * sizeof(float)), *g = be->ops->alloc(be->ctx, N * sizeof(float));
    float *hw = malloc(N * sizeof(float)), *hg = malloc(N * sizeof(float)), *w0 = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) {
        hw[i] = w0[i] = (float)((i % 7) - 3) * 0.5f;
        hg[i] = (float)((i % 5) - 2) + 0.25f;
    }
    be->ops->upload(be->ctx, w, hw, N * sizeof(float));
    be->ops->upload(be->ctx, g, hg, N * sizeof(float));
    sc_optim_cfg c = sc_optim_defaults();
    sc_adamw *a = sc_adamw_new(&c);
    CHECK(a && sc_adamw_add(a, be, w, g, N, 0) == SC_OK);
    double st[2];
    CHECK(sc_adamw_state(a, st) == SC_OK && st[1] == 0);
    double want = 0;
    for (int i = 0; i < N; i++)
        want += (double)hg[i] * hg[i];
    CHECK_NEAR(st[0], want, 1e-9 * want);
    sc_optim_verdict v = sc_optim_decide(&c, st);
    CHECK(sc_adamw_step(a, &v, 1) == SC_OK && sc_adamw_steps(a) == 1);
    be->ops->download(be->ctx, hw, w, N * sizeof(float));
    int ok = 1;
    for (int i = 0; i < N; i++) {
        double expect = w0[i] * (1 - c.lr * c.weight_decay) - c.lr * (hg[i] > 0 ? 1 : -1);
        ok &= fabs(hw[i] - expect) < 1e-6;
    }
    CHECK(ok);
    CHECK(sc_adamw_restore(a) == SC_OK && sc_adamw_steps(a) == 0);
    be->ops->download(be->ctx, hw, w, N * sizeof(float));
    CHECK(memcmp(hw, w0, N * sizeof(float)) == 0);
    CHECK(sc_adamw_restore(a) == SC_ERR_ARG); /* the copy is gone */
    /* A skipped step: nothing moves, the step count stays. */
    sc_optim_verdict skip = {.skip = 1, .coef = 1};
    CHECK(sc_adamw_step(a, &skip, 0) == SC_OK && sc_adamw_steps(a) == 0);
    be->ops->download(be->ctx, hw, w, N * sizeof(float));
    CHECK(memcmp(hw, w0, N * sizeof(float)) == 0);
    /* An inf is counted, not summed. */
    float inf = INFINITY;
    be->ops->upload(be->ctx, g + 5, &inf, sizeof inf);
    CHECK(sc_adamw_state(a, st) == SC_OK && st[1] == 1 && isfinite(st[0]));
    sc_adamw_free(a);
    be->ops->free(be->ctx, w, N * sizeof(float));
    be->ops->free(be->ctx, g, N * sizeof(float));
    sc_backend_free(be);
    free(hw);
    free(hg);
    free(w0);
}

static int count_flag(const sc_prog *pg, int d, int op, unsigned flag)
{
    size_t n;
    const sc_instr *v = sc_prog_stream(pg, d, &n);
    int c = 0;
    for (size_t k = 0; k < n; k++)
        c += v[k].op == op && (v[k].flags & flag) == flag;
    return c;
}

/* sync: two all-reduces of the state after every REDUCE, before OPTIM. */
TEST(sync_streams)
{
    sc_prog *pg = rule_prog(4, 8, "zb-h2", 3);
    CHECK(pg && sc_prog_set_optim_sync(pg, SC_SYNC_SYNC) == SC_OK && sc_check(pg) == SC_OK);
    for (int d = 0; d < 4; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        CHECK(count_op(pg, d, SC_OP_ALLREDUCE) == 6 && count_op(pg, d, SC_OP_BCAST) == 0);
        for (size_t k = 0; k + 3 < n; k++)
            if (v[k].op == SC_OP_REDUCE) {
                sc_coll a, b;
                sc_prog_coll(pg, &v[k + 1], &a);
                sc_prog_coll(pg, &v[k + 2], &b);
                CHECK(a.op == SC_OP_ALLREDUCE && a.red == SC_RED_SUM && a.what == SC_OP_REDUCE);
                CHECK(b.red == SC_RED_MAX && b.part == 1 && a.step == b.step);
                CHECK(v[k + 3].op == SC_OP_OPTIM);
            }
    }
    sc_prog_free(pg);
}

/* post-validation: per device and step, the chain's broadcasts and the
 * global state's, one VALIDATE per step, the rollback path after each
 * VALIDATE but the last, readers flagged; no pass but a forward of the
 * first chunk before VALIDATE; every scenario replays. */
TEST(postval_streams)
{
    const char *rules[] = {"zb-h2", "1f1b", "interleaved", "zb-v"};
    for (int r = 0; r < 4; r++) {
        int v = r >= 2 ? 2 : 1, P = 4, N = 3;
        sc_prog *pg = sc_prog_new(P, P * v, 8);
        CHECK(pg != NULL);
        if (!pg)
            continue;
        if (r == 3)
            sc_prog_set_placement(pg, SC_PLACE_V, NULL);
        CHECK(sc_rule_fill(pg, rules[r]) == SC_OK && sc_prog_set_steps(pg, N) == SC_OK);
        CHECK(sc_prog_set_optim_sync(pg, SC_SYNC_POSTVAL) == SC_OK);
        CHECK(sc_check(pg) == SC_OK);
        CHECK(sc_prog_has_rollback(pg));
        for (int d = 0; d < P; d++) {
            CHECK(count_op(pg, d, SC_OP_VALIDATE) == N);
            CHECK(count_flag(pg, d, SC_OP_F, SC_IF_ROLLBACK) > 0);
            /* P - 1 chain broadcasts and one of the global state per step,
             * and those of the rollback paths */
            CHECK(count_op(pg, d, SC_OP_BCAST) - count_flag(pg, d, SC_OP_BCAST, SC_IF_ROLLBACK) ==
                  N * P);
        }
        CHECK(sc_verify_rollbacks(pg) == SC_OK);
        sc_times t0, t1;
        CHECK(sc_replay_scenario(pg, SC_SCEN_NONE, &t0) == SC_OK);
        CHECK(sc_replay_scenario(pg, 0, &t1) == SC_OK);
        double e0 = 0, e1 = 0;
        for (size_t i = 0; t0.offset && t1.offset && i < t0.offset[P]; i++) {
            e0 = fmax(e0, t0.t1[i]);
            e1 = fmax(e1, t1.t1[i]);
        }
        CHECK(e1 > e0); /* redoing the forward passes costs time */
        sc_times_free(&t0);
        sc_times_free(&t1);
        sc_prog_free(pg);
    }
}

/* The figures docs/steps.md#simulation states: unit costs, p = 8, m = 32, four steps.
 * post-validation keeps one step's bubble for ZB-H2 and ZB-V (within 0.5
 * points), sync adds the barrier: each step but the first waits for the
 * last device's end, (p-1) tf for ZB-H2, half that for ZB-V's chunks. */
TEST(pinned_figures)
{
    struct { const char *rule; int v; double one, none, sync, pv, step, sync_step; } f[] = {
        {"zb-h2", 1, 0, 0, 0.0518518518518519, 0, 96, 103},
        {"zb-v", 2, 0, 0, 0.0266159695817, 0, 96, 99.5},
    };
    for (int i = 0; i < 2; i++) {
        double b[4];
        sc_sim *last = NULL;
        for (int sy = -1; sy < SC_SYNC_COUNT; sy++) {
            sc_prog *pg = sc_prog_new(8, 8 * f[i].v, 32);
            if (f[i].v == 2)
                sc_prog_set_placement(pg, SC_PLACE_V, NULL);
            CHECK(sc_rule_fill(pg, f[i].rule) == SC_OK);
            if (sy >= 0) {
                CHECK(sc_prog_set_steps(pg, 4) == SC_OK);
                CHECK(sc_prog_set_optim_sync(pg, sy) == SC_OK);
            }
            sc_sim *sim = NULL;
            CHECK(sc_simulate(pg, &sim) == SC_OK);
            b[sy + 1] = sim ? sim->bubble_rate : NAN;
            if (sim && sy >= 0)
                CHECK_NEAR(sim->step_makespan[2], sy == SC_SYNC_SYNC ? f[i].sync_step : f[i].step,
                           1e-9);
            sc_sim_free(last);
            last = sim;
            sc_prog_free(pg);
        }
        sc_sim_free(last);
        CHECK_NEAR(b[0], f[i].one, 1e-12);
        CHECK_NEAR(b[1], f[i].none, 1e-12);
        CHECK_NEAR(b[2], f[i].sync, 1e-11);
        CHECK_NEAR(b[3], f[i].pv, 1e-12);
        CHECK(fabs(b[3] - b[0]) <= 0.005 && b[2] > b[3] + 0.02);
    }
}

static sc_instr X(int op, int dir, int s, int mb, int peer)
{
    return (sc_instr){.op = (uint8_t)op, .dir = (uint8_t)dir, .stage = s, .mb = mb, .peer = peer};
}

static void push_ar(sc_prog *pg, int d, int part, int step)
{
    sc_coll c = {.op = SC_OP_ALLREDUCE, .red = part ? SC_RED_MAX : SC_RED_SUM,
                 .what = SC_OP_REDUCE, .part = part, .stage = -1, .mb = -1, .step = step,
                 .root = -1, .group = 0, .bytes = 8};
    CHECK(sc_prog_push_coll(pg, d, &c) == SC_OK);
}

/* Steps that post their collectives in another order on another device are
 * refused, naming both. */
TEST(mixed_collectives)
{
    for (int swap = 0; swap < 2; swap++) {
        sc_prog *pg = sc_prog_new(2, 2, 1);
        CHECK(sc_prog_set_steps(pg, 2) == SC_OK && sc_prog_set_optim_sync(pg, SC_SYNC_SYNC) == SC_OK);
        for (int k = 0; k < 2; k++) {
            CHECK(sc_prog_push_stream(pg, 0, C(SC_OP_F, 0, k)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 0, X(SC_OP_SEND, SC_DIR_ACT, 1, k, 1)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 0, X(SC_OP_RECV, SC_DIR_GRAD, 0, k, 1)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 0, C(SC_OP_BW, 0, k)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 0, E(SC_OP_REDUCE)) == SC_OK);
            int flip = swap && k == 1; /* device 0's second step: max, then sum */
            push_ar(pg, 0, flip, k);
            push_ar(pg, 0, !flip, k);
            CHECK(sc_prog_push_stream(pg, 0, E(SC_OP_OPTIM)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 1, X(SC_OP_RECV, SC_DIR_ACT, 1, k, 0)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 1, C(SC_OP_F, 1, k)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 1, C(SC_OP_BW, 1, k)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 1, X(SC_OP_SEND, SC_DIR_GRAD, 0, k, 0)) == SC_OK);
            CHECK(sc_prog_push_stream(pg, 1, E(SC_OP_REDUCE)) == SC_OK);
            push_ar(pg, 1, 0, k);
            push_ar(pg, 1, 1, k);
            CHECK(sc_prog_push_stream(pg, 1, E(SC_OP_OPTIM)) == SC_OK);
        }
        sc_status st = sc_check(pg);
        if (!swap) {
            CHECK(st == SC_OK);
        } else {
            CHECK(st == SC_ERR_PROGRAM);
            CHECK_STR(sc_errmsg(pg), "collectives out of order");
            CHECK_STR(sc_errmsg(pg), "d0 #");
        }
        sc_prog_free(pg);
    }
}

/* Given post-validation streams: a backward pass before the VALIDATE of
 * the step before, or a step never validated, is refused; in place, the
 * stream passes. */
TEST(postval_given)
{
    for (int c = 0; c < 3; c++) {
        sc_prog *pg = sc_prog_new(1, 1, 1);
        CHECK(sc_prog_set_steps(pg, 2) == SC_OK);
        CHECK(sc_prog_set_optim_sync(pg, SC_SYNC_POSTVAL) == SC_OK);
        sc_instr v[] = {C(SC_OP_F, 0, 0), C(SC_OP_BW, 0, 0), E(SC_OP_REDUCE), E(SC_OP_OPTIM),
                        C(SC_OP_F, 0, 1), E(SC_OP_VALIDATE), C(SC_OP_BW, 0, 1), E(SC_OP_REDUCE),
                        E(SC_OP_OPTIM), E(SC_OP_VALIDATE)};
        if (c == 0) { /* BW of step 1 before step 0's VALIDATE */
            v[5] = C(SC_OP_BW, 0, 1);
            v[6] = E(SC_OP_VALIDATE);
        }
        for (int k = 0; k < 10; k++)
            if (!(c == 1 && k == 9))
                CHECK(sc_prog_push_stream(pg, 0, v[k]) == SC_OK);
        sc_status st = sc_check(pg);
        CHECK(c == 2 ? st == SC_OK : st == SC_ERR_PROGRAM);
        if (c < 2)
            CHECK_STR(sc_errmsg(pg), c == 0 ? "before the VALIDATE of step 0"
                                            : "validates 1 of the program's 2 steps");
        sc_prog_free(pg);
    }
}

int main(void)
{
    RUN(unroll);
    RUN(given_steps);
    RUN(sim_steps);
    RUN(decide);
    RUN(adamw);
    RUN(sync_streams);
    RUN(postval_streams);
    RUN(pinned_figures);
    RUN(mixed_collectives);
    RUN(postval_given);
    return harness_done("steps");
}
