/*
 * test_graph_cuda.c — the cuda backend's capture slots (backend.h,
 * run --graph, docs/graphs.md) through the public table only:
 *
 *   a product and the loss captured, replayed twice: the loss
 *     (graph_losses) and the logits' gradient have the bits of the eager
 *     slots, in every replay;
 *   two instances on one GPU (emulated devices): the second joins the
 *     first's capture (order) and is joined back; a replay runs its work,
 *     and each replay runs it again;
 *   memory allocated and freed inside the capture: a replay's allocation
 *     holds what the replay wrote, at the same address every time;
 *   what a GPU refuses: a sync inside the capture (capture_end fails, the
 *     backend says which call), a joined instance not joined back, a wait
 *     for work queued outside the capture.
 *
 * Without a GPU it prints why and "0 passed, 0 failed, 1 skipped" (as
 * test_backend_cuda.c). tests/cudastub/run.sh runs it on the CUDA stand-in,
 * tests/gpu/run.sh on a GPU.
 */
#include "gpu_skip.h"
#include "harness.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "device/device.h"

enum { R = 6, H = 16, V = 10 };

static sc_backend *open_dev(int dev)
{
    sc_backend *be = NULL;
    char err[256];
    if (sc_backend_open("cuda", dev, 0, &be, err, sizeof err) != SC_OK)
        fprintf(stderr, "  cannot open d%d: %s\n", dev, err);
    return be;
}

/* x: R x H, w: H x V, random; logits = x w. */
static void product(sc_backend *be, float *x, float *w, float *logits)
{
    be->ops->gemm(be->ctx, 0, 0, R, V, H, 1.0f, x, w, 0.0f, logits);
}

static void test_replay(void)
{
    sc_backend *be = open_dev(0);
    CHECK(be != NULL);
    if (!be)
        return;
    const struct sc_backend_ops *o = be->ops;
    float *x = o->alloc(be->ctx, R * H * sizeof(float));
    float *w = o->alloc(be->ctx, H * V * sizeof(float));
    float *lg = o->alloc(be->ctx, R * V * sizeof(float));
    o->fill_uniform(be->ctx, x, R * H, 7, 1, 1.0f);
    o->fill_uniform(be->ctx, w, H * V, 7, 2, 0.5f);
    int32_t tgt[R];
    for (int r = 0; r < R; r++)
        tgt[r] = (r * 7 + 3) % V;
    product(be, x, w, lg);
    double eager = o->xent(be->ctx, R, V, lg, tgt, 0.25f);
    float want[R * V], got[R * V];
    o->download(be->ctx, want, lg, sizeof want);
    CHECK(isfinite(eager) && o->sync(be->ctx) == SC_OK);

    void *g = NULL;
    CHECK(o->capture_begin(be->ctx) == SC_OK);
    product(be, x, w, lg);
    CHECK(o->xent(be->ctx, R, V, lg, tgt, 0.25f) == 0.0); /* kept on the device */
    CHECK(o->capture_end(be->ctx, &g) == SC_OK && g != NULL);
    for (int rep = 0; rep < 2 && g; rep++) {
        memset(got, 0, sizeof got);
        o->upload(be->ctx, lg, got, sizeof got); /* the replay must write it again */
        CHECK(o->graph_launch(be->ctx, g) == SC_OK);
        double l = NAN;
        CHECK(o->graph_losses(be->ctx, &l, 1) == 1);
        CHECK(memcmp(&l, &eager, sizeof l) == 0);
        o->download(be->ctx, got, lg, sizeof got);
        CHECK(memcmp(got, want, sizeof got) == 0);
    }
    o->graph_free(be->ctx, g);
    CHECK(o->sync(be->ctx) == SC_OK);
    o->free(be->ctx, x, R * H * sizeof(float));
    o->free(be->ctx, w, H * V * sizeof(float));
    o->free(be->ctx, lg, R * V * sizeof(float));
    sc_backend_free(be);
}

static void test_two_instances(void)
{
    sc_backend *a = open_dev(0), *b = open_dev(0);
    CHECK(a && b);
    if (!a || !b) {
        sc_backend_free(a);
        sc_backend_free(b);
        return;
    }
    float v[8] = {0.1f, -0.5f, 2.0f, 0.0f, -3.0f, 0.7f, 1.5f, -0.2f}, got[8];
    float *y = b->ops->alloc(b->ctx, sizeof v);
    b->ops->upload(b->ctx, y, v, sizeof v);
    void *g = NULL;
    CHECK(a->ops->capture_begin(a->ctx) == SC_OK);
    b->ops->order(b->ctx, a->ctx); /* joins */
    b->ops->tanh_fwd(b->ctx, 8, y);
    a->ops->order(a->ctx, b->ctx); /* joined back */
    CHECK(a->ops->capture_end(a->ctx, &g) == SC_OK && g);
    b->ops->download(b->ctx, got, y, sizeof got);
    CHECK(memcmp(got, v, sizeof v) == 0); /* captured, not run */
    for (int rep = 0; rep < 2 && g; rep++) {
        CHECK(a->ops->graph_launch(a->ctx, g) == SC_OK);
        b->ops->order(b->ctx, a->ctx); /* b's next work after the replay */
        b->ops->download(b->ctx, got, y, sizeof got);
        for (int i = 0; i < 8; i++) {
            v[i] = tanhf(v[i]);
            CHECK_NEAR(got[i], v[i], 1e-6);
        }
    }
    a->ops->graph_free(a->ctx, g);
    CHECK(a->ops->sync(a->ctx) == SC_OK && b->ops->sync(b->ctx) == SC_OK);
    b->ops->free(b->ctx, y, sizeof v);
    sc_backend_free(b);
    sc_backend_free(a);
}

static void test_memory_inside(void)
{
    sc_backend *be = open_dev(0);
    CHECK(be != NULL);
    if (!be)
        return;
    const struct sc_backend_ops *o = be->ops;
    size_t n = 300;
    float *out = o->alloc(be->ctx, n * sizeof(float));
    float want[300], got[300];
    o->fill_uniform(be->ctx, out, n, 3, 9, 2.0f);
    o->download(be->ctx, want, out, sizeof want);
    o->fill_uniform(be->ctx, out, n, 0, 0, 0.0f);
    void *g = NULL;
    CHECK(o->capture_begin(be->ctx) == SC_OK);
    float *t = o->alloc(be->ctx, n * sizeof(float)); /* the graph's own */
    CHECK(t != NULL);
    o->fill_uniform(be->ctx, t, n, 3, 9, 2.0f);
    o->copy(be->ctx, n, t, out);
    o->free(be->ctx, t, n * sizeof(float));
    CHECK(o->capture_end(be->ctx, &g) == SC_OK && g);
    for (int rep = 0; rep < 2 && g; rep++) {
        o->fill_uniform(be->ctx, out, n, 0, 0, 0.0f);
        CHECK(o->graph_launch(be->ctx, g) == SC_OK);
        o->download(be->ctx, got, out, sizeof got);
        CHECK(memcmp(got, want, sizeof got) == 0);
    }
    o->graph_free(be->ctx, g);
    CHECK(o->sync(be->ctx) == SC_OK);
    o->free(be->ctx, out, n * sizeof(float));
    sc_backend_free(be);
}

/* What a GPU refuses inside a capture: the capture fails, with the call. */
static void test_refused(void)
{
    sc_backend *be = open_dev(0);
    CHECK(be != NULL);
    if (!be)
        return;
    float *x = be->ops->alloc(be->ctx, 64 * sizeof(float));
    be->ops->fill_uniform(be->ctx, x, 64, 1, 1, 1.0f);
    void *g = NULL;
    CHECK(be->ops->capture_begin(be->ctx) == SC_OK);
    be->ops->tanh_fwd(be->ctx, 64, x);
    CHECK(be->ops->sync(be->ctx) == SC_ERR_RUNTIME); /* waits for the device: refused */
    CHECK(be->ops->capture_end(be->ctx, &g) != SC_OK && g == NULL);
    const char *why = be->ops->errmsg(be->ctx);
    CHECK(why != NULL);
    if (why) {
        CHECK_STR(why, "cudaStreamSynchronize");
        CHECK_STR(why, "capturing");
    }
    sc_backend_free(be);

    sc_backend *a = open_dev(0), *b = open_dev(0);
    CHECK(a && b);
    if (!a || !b) {
        sc_backend_free(a);
        sc_backend_free(b);
        return;
    }
    float *y = b->ops->alloc(b->ctx, 64 * sizeof(float));
    b->ops->fill_uniform(b->ctx, y, 64, 1, 2, 1.0f);
    CHECK(b->ops->sync(b->ctx) == SC_OK);
    CHECK(a->ops->capture_begin(a->ctx) == SC_OK);
    b->ops->order(b->ctx, a->ctx);
    b->ops->tanh_fwd(b->ctx, 64, y); /* never joined back */
    CHECK(a->ops->capture_end(a->ctx, &g) != SC_OK && g == NULL);
    why = a->ops->errmsg(a->ctx);
    CHECK(why != NULL);
    if (why)
        CHECK_STR(why, "joined");
    sc_backend_free(b);
    sc_backend_free(a);
}

/* The capture waits for work outside it (b's, queued eagerly): refused. */
static void test_isolation(void)
{
    sc_backend *a = open_dev(0), *b = open_dev(0);
    void *g = NULL;
    CHECK(a && b);
    if (!a || !b) {
        sc_backend_free(a);
        sc_backend_free(b);
        return;
    }
    float *y = b->ops->alloc(b->ctx, 64 * sizeof(float));
    b->ops->fill_uniform(b->ctx, y, 64, 1, 3, 1.0f);
    CHECK(a->ops->capture_begin(a->ctx) == SC_OK);
    a->ops->order(a->ctx, b->ctx);
    CHECK(a->ops->capture_end(a->ctx, &g) != SC_OK && g == NULL);
    const char *why = a->ops->errmsg(a->ctx);
    CHECK(why != NULL);
    if (why)
        CHECK_STR(why, "cudaStreamWaitEvent");
    CHECK(b->ops->sync(b->ctx) == SC_OK);
    b->ops->free(b->ctx, y, 64 * sizeof(float));
    sc_backend_free(b);
    sc_backend_free(a);
}

int main(void)
{
    char info[256];
    int n, skip = gpu_skip("graph-cuda", &n, info, sizeof info);
    if (skip >= 0)
        return skip;
    sc_backend *probe = open_dev(0);
    if (!probe || !probe->ops->capture_begin) {
        printf("graph-cuda: 0 passed, 1 failed (the cuda backend lacks the capture slots)\n");
        sc_backend_free(probe);
        return 1;
    }
    sc_backend_free(probe);
    RUN(replay);
    RUN(two_instances);
    RUN(memory_inside);
    RUN(refused);
    RUN(isolation);
    return harness_done("graph-cuda");
}
