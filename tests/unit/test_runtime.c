/*
 * test_runtime.c — the CPU runtime: the local transport's group semantics,
 * a training step through rules' streams against the reference (loss,
 * gradients, exact peak bytes), a W order that is not microbatch order
 * (close, not bitwise), and failures.
 */
#include "compile.h"
#include "device/device.h"
#include "harness.h"
#include "ir/ir.h"
#include "model/model.h"
#include "schedule/rules.h"
#include "run/run.h"
#include "transport/transport.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST(local_groups)
{
    sc_transport *tp;
    CHECK(sc_transport_local_new(2, 8, 5, &tp) == SC_OK);
    const struct sc_transport_ops *o = tp->ops;
    float a[4] = {1, 2, 3, 4}, b[4] = {0}, c[4] = {9, 9, 9, 9}, d[4] = {0};
    /* d0: one group {send tag 1, recv tag 2}; d1: {recv tag 1} then {send tag 2}. */
    sc_xfer g0[2] = {{.send = 1, .peer = 1, .tag = 1, .buf = a, .bytes = sizeof a},
                     {.send = 0, .peer = 1, .tag = 2, .buf = d, .bytes = sizeof d}};
    sc_xfer g1[1] = {{.send = 0, .peer = 0, .tag = 1, .buf = b, .bytes = sizeof b}};
    sc_xfer g2[1] = {{.send = 1, .peer = 0, .tag = 2, .buf = c, .bytes = sizeof c}};
    void *h0, *h1, *h2;
    int done = -1;
    CHECK(o->start(tp->ctx, 0, g0, 2, &h0) == SC_OK);
    CHECK(o->test(tp->ctx, 0, h0, &done) == SC_OK && done == 0);
    CHECK(o->start(tp->ctx, 1, g1, 1, &h1) == SC_OK);
    CHECK(o->test(tp->ctx, 1, h1, &done) == SC_OK && done == 1);
    CHECK(b[0] == 1 && b[3] == 4);
    /* d0's group is half matched: not complete until its RECV is matched. */
    CHECK(o->test(tp->ctx, 0, h0, &done) == SC_OK && done == 0);
    CHECK(o->start(tp->ctx, 1, g2, 1, &h2) == SC_OK);
    CHECK(o->wait(tp->ctx, 0, h0) == SC_OK);
    CHECK(d[0] == 9 && d[3] == 9);
    o->release(tp->ctx, 0, h0);
    o->release(tp->ctx, 1, h1);
    o->release(tp->ctx, 1, h2);
    /* Sizes that disagree are an error, and abort wakes every waiter. */
    sc_xfer s = {.send = 1, .peer = 1, .tag = 3, .buf = a, .bytes = 8};
    sc_xfer r = {.send = 0, .peer = 0, .tag = 3, .buf = b, .bytes = 16};
    CHECK(o->start(tp->ctx, 0, &s, 1, &h0) == SC_OK);
    CHECK(o->start(tp->ctx, 1, &r, 1, &h1) == SC_ERR_RUNTIME);
    CHECK(strstr(o->errmsg(tp->ctx), "disagree on transfer tag 3") != NULL);
    CHECK(o->wait(tp->ctx, 0, h0) == SC_ERR_RUNTIME);
    o->release(tp->ctx, 0, h0);
    o->release(tp->ctx, 1, h1);
    sc_transport_local_free(tp);
}

TEST(local_timeout)
{
    sc_transport *tp;
    CHECK(sc_transport_local_new(2, 4, 0.2, &tp) == SC_OK);
    float a[2] = {0};
    sc_xfer s = {.send = 1, .peer = 1, .tag = 0, .buf = a, .bytes = sizeof a};
    void *h;
    CHECK(tp->ops->start(tp->ctx, 0, &s, 1, &h) == SC_OK);
    CHECK(tp->ops->wait(tp->ctx, 0, h) == SC_ERR_RUNTIME);
    CHECK(strstr(tp->ops->errmsg(tp->ctx), "giving up") != NULL);
    tp->ops->release(tp->ctx, 0, h);
    sc_transport_local_free(tp);
}

static sc_prog *rule_prog(int p, int v, int m, const char *rule)
{
    sc_prog *pg = sc_prog_new(p, p * v, m);
    if (pg && (sc_rule_fill(pg, rule) != SC_OK || sc_check(pg) != SC_OK)) {
        sc_prog_free(pg);
        return NULL;
    }
    return pg;
}

TEST(rules_match_reference)
{
    const char *rules[] = {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved"};
    for (int i = 0; i < 5; i++) {
        int v = strcmp(rules[i], "interleaved") == 0 ? 2 : 1;
        sc_prog *pg = rule_prog(4, v, 8, rules[i]);
        CHECK(pg != NULL);
        if (!pg)
            continue;
        sc_run_opts o = sc_run_defaults(4 * v);
        o.model.hidden = 32;
        o.model.layers = 4 * v + 3; /* unequal stages */
        o.check = 1;
        sc_run_result *r;
        char err[512];
        sc_status st = sc_run(pg, &o, &r, err, sizeof err);
        CHECK(st == SC_OK);
        if (st) {
            fprintf(stderr, "%s: %s\n", rules[i], err);
            sc_prog_free(pg);
            continue;
        }
        CHECK(r->bitwise == 1);
        CHECK(r->loss == r->reference_loss);
        CHECK(r->max_grad_rel_err == 0);
        CHECK(isfinite(r->loss) && r->loss > 0);
        for (int d = 0; d < r->P; d++) {
            CHECK(r->peak_bytes[d] == r->predicted_bytes[d]);
            CHECK(r->peak_bytes[d] > 0);
        }
        /* Every instruction was timed, in order on its device. */
        const sc_sim *ms = r->measured;
        for (int d = 0; d < r->P; d++)
            for (size_t k = ms->offset[d]; k < ms->offset[d + 1]; k++)
                CHECK(ms->t0[k] >= 0 && ms->t1[k] >= ms->t0[k]);
        sc_run_result_free(r);
        sc_prog_free(pg);
    }
}

/* W in reverse microbatch order: gradients are summed in another order, so
 * they differ from the reference in the last bits, within the tolerance. */
TEST(w_order_changes_bits)
{
    sc_prog *pg = sc_prog_new(1, 1, 5);
    for (int i = 0; i < 5; i++)
        sc_prog_push(pg, 0, SC_OP_F, 0, i);
    for (int i = 0; i < 5; i++)
        sc_prog_push(pg, 0, SC_OP_B, 0, i);
    for (int i = 4; i >= 0; i--)
        sc_prog_push(pg, 0, SC_OP_W, 0, i);
    CHECK(sc_check(pg) == SC_OK);
    sc_run_opts o = sc_run_defaults(1);
    o.check = 1;
    sc_run_result *r;
    char err[512];
    CHECK(sc_run(pg, &o, &r, err, sizeof err) == SC_OK);
    CHECK(r->loss == r->reference_loss);   /* the loss is summed in mb order */
    CHECK(r->bitwise == 0);
    CHECK(r->max_grad_rel_err > 0 && r->max_grad_rel_err <= 1e-5);
    /* All five records live at once: 5 units on the one device. */
    CHECK(r->peak_bytes[0] == r->predicted_bytes[0]);
    CHECK(fabs(r->predicted->peak_mem[0] - 5) < 1e-12);
    sc_run_result_free(r);
    sc_prog_free(pg);
}

TEST(compare_detects)
{
    sc_model_cfg c = sc_run_defaults(2).model;
    c.hidden = 16;
    sc_model *a, *b;
    char err[256];
    CHECK(sc_model_reference(&c, 3, 0, &a, err, sizeof err) == SC_OK);
    c.seed = 2;
    CHECK(sc_model_reference(&c, 3, 0, &b, err, sizeof err) == SC_OK);
    int bw = 1;
    CHECK(sc_model_compare(a, a, &bw) == 0 && bw == 1);
    CHECK(sc_model_compare(a, b, &bw) > 0.1 && bw == 0);
    CHECK(sc_model_loss(a) != sc_model_loss(b));
    sc_model_free(a);
    sc_model_free(b);
}

TEST(errors)
{
    sc_prog *pg = rule_prog(4, 1, 4, "1f1b");
    sc_run_opts o = sc_run_defaults(4);
    sc_run_result *r = NULL;
    char err[512];
    o.model.layers = 3;
    CHECK(sc_run(pg, &o, &r, err, sizeof err) == SC_ERR_ARG && r == NULL);
    CHECK(strstr(err, "every stage needs at least one layer") != NULL);
    o = sc_run_defaults(4);
    o.backend = "cuda";
    if (sc_backend_cuda_devices(NULL, 0) > 0) { /* a GPU: it runs (tests/gpu says more) */
        CHECK(sc_run(pg, &o, &r, err, sizeof err) == SC_OK);
        sc_run_result_free(r);
    } else { /* one line: not built, the module missing, or no device */
        CHECK(sc_run(pg, &o, &r, err, sizeof err) == SC_ERR_ARG);
        CHECK(strstr(err, "backend 'cuda'") != NULL && strchr(err, '\n') == NULL);
    }
    o = sc_run_defaults(4);
    o.mem_cap = 200000; /* parameters fit, activations do not */
    CHECK(sc_run(pg, &o, &r, err, sizeof err) == SC_ERR_NOMEM);
    CHECK(strstr(err, "out of memory on d") != NULL);
    sc_prog_free(pg);
}

static sc_instr C(int op, int s, int mb) { return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1}; }
static sc_instr X(int op, int dir, int s, int mb, int peer)
{
    return (sc_instr){.op = (uint8_t)op, .dir = (uint8_t)dir, .stage = s, .mb = mb, .peer = peer};
}

/* The order NCCL matches in: every rule's streams post each pair's
 * transfers in one order on both sides; crossed receives are found. */
TEST(pair_order)
{
    const char *rules[] = {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved"};
    char err[512];
    for (int i = 0; i < 5; i++)
        for (int p = 2; p <= 8; p *= 2) {
            int v = strcmp(rules[i], "interleaved") == 0 ? 2 : 1;
            sc_prog *pg = rule_prog(p, v, 2 * p, rules[i]);
            CHECK(pg != NULL);
            if (pg)
                CHECK(sc_run_check_pair_order(pg, err, sizeof err) == SC_OK);
            sc_prog_free(pg);
        }
    sc_prog *pg = sc_prog_new(2, 2, 2);
    sc_instr d0[] = {C(SC_OP_F, 0, 0), C(SC_OP_F, 0, 1), X(SC_OP_SEND, SC_DIR_ACT, 1, 0, 1),
                     X(SC_OP_SEND, SC_DIR_ACT, 1, 1, 1)};
    sc_instr d1[] = {X(SC_OP_RECV, SC_DIR_ACT, 1, 1, 0), X(SC_OP_RECV, SC_DIR_ACT, 1, 0, 0)};
    for (int i = 0; i < 4; i++)
        sc_prog_push_stream(pg, 0, d0[i]);
    for (int i = 0; i < 2; i++)
        sc_prog_push_stream(pg, 1, d1[i]);
    CHECK(sc_run_check_pair_order(pg, err, sizeof err) == SC_ERR_PROGRAM);
    CHECK_STR(err, "d1 receives from d0 in another order than d0 sends");
    sc_prog_free(pg);
}

/* The cpu backend's upload and download are copies; it queues nothing. */
TEST(cpu_backend_moves)
{
    sc_backend *be;
    char err[128];
    CHECK(sc_backend_open("cpu", 0, 0, &be, err, sizeof err) == SC_OK);
    float h[5] = {1, 2, 3, 4, 5}, back[5] = {0};
    float *x = be->ops->alloc(be->ctx, sizeof h);
    be->ops->upload(be->ctx, x, h, sizeof h);
    be->ops->tanh_fwd(be->ctx, 5, x);
    be->ops->download(be->ctx, back, x, sizeof back);
    CHECK(back[0] == tanhf(1.0f) && back[4] == tanhf(5.0f));
    CHECK(be->ops->sync == NULL && be->ops->errmsg == NULL);
    be->ops->free(be->ctx, x, sizeof h);
    sc_backend_free(be);
}

int main(void)
{
    RUN(local_groups);
    RUN(local_timeout);
    RUN(rules_match_reference);
    RUN(w_order_changes_bits);
    RUN(compare_detects);
    RUN(errors);
    RUN(pair_order);
    RUN(cpu_backend_moves);
    return harness_done("runtime");
}
