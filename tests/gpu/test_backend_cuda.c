/*
 * test_backend_cuda.c — the cuda backend and the GPU transports, slot by
 * slot, against the cpu backend (ggml's test-backend-ops idea), through the
 * public tables only (backend.h, transport.h): no CUDA header here.
 *
 *   gemm (all four transpositions, odd and larger shapes): max |C - C_cpu|
 *     <= 1e-5 max |C_cpu| (float32 without TF32, different summation order);
 *   tanh_fwd, tanh_bwd, sgd: within 2e-6 (tanhf differs by an ulp or two);
 *   fill_uniform (the model's inputs and weights): bit for bit;
 *   adamw (three steps, clipped): bit for bit; sumsq: the count of
 *     non-finite values exact, the sum within 1e-12 relative, the same bits
 *     when repeated;
 *   xent: loss within 1e-6 relative, the gradient within 1e-6 of its scale,
 *     and the same bits when repeated (deterministic reduction);
 *   copy, upload/download, offload round trip: bit for bit (random bit
 *     patterns, NaNs included), copies in both directions at once, and a
 *     copy to the host sees the compute queued before it;
 *   the memory cap, meminfo, a sticky failure reported in one line;
 *   cuda-local: a group between two devices on one GPU, polled with a
 *     kernel launched after every poll (a "not ready" poll must not fail
 *     the launch), an abort that waits for the peer's queued copy before
 *     the buffers are freed, and the watchdog;
 *   nccl: a communicator of one GPU; with two GPUs, a transfer (also
 *     polled), an all-reduce and a broadcast, and the watchdog (a peer
 *     that never posts: ncclCommAbort, no hang).
 *
 * Without a GPU (no driver, no device, or built without nvcc) it prints why
 * and "0 passed, 0 failed, 1 skipped"; any other failure to reach the
 * backend fails. tests/cudastub/run.sh runs it on the CUDA stand-in.
 */
#include "gpu_skip.h"
#include "harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "device/device.h"
#include "transport/transport.h"

static uint32_t rng = 12345;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}
static float uniform(void) { return (float)(next_u32() >> 8) / 8388608.0f - 1.0f; }

static sc_backend *open_cuda(int dev, size_t cap)
{
    sc_backend *be = NULL;
    char err[256];
    if (sc_backend_open("cuda", dev, cap, &be, err, sizeof err) != SC_OK)
        fprintf(stderr, "open cuda: %s\n", err);
    return be;
}

/* A device tensor holding h[0..n). */
static float *put(sc_backend *be, const float *h, size_t n)
{
    float *d = be->ops->alloc(be->ctx, n * sizeof(float));
    if (d)
        be->ops->upload(be->ctx, d, h, n * sizeof(float));
    return d;
}

static double max_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)x[i]));
    return m;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static sc_backend *gpu, *cpu;

TEST(gemm)
{
    const int shapes[][3] = {{37, 53, 29}, {1, 1, 1}, {256, 512, 384}, {64, 1000, 64}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
                size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
                float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4),
                      *Cg = malloc(nc * 4);
                for (size_t i = 0; i < na; i++)
                    A[i] = uniform();
                for (size_t i = 0; i < nb; i++)
                    B[i] = uniform();
                for (size_t i = 0; i < nc; i++)
                    C[i] = uniform();
                float *dA = put(gpu, A, na), *dB = put(gpu, B, nb), *dC = put(gpu, C, nc);
                gpu->ops->gemm(gpu->ctx, ta, tb, M, N, K, 1.25f, dA, dB, 0.5f, dC);
                gpu->ops->download(gpu->ctx, Cg, dC, nc * 4);
                /* The error is measured against the size of the terms, not of
                 * the result, which can cancel (1x1x1 gave 7e-4 from terms
                 * near 0.5 on an H100): the same product of |A|, |B|, |C|. */
                float *Aa = malloc(na * 4), *Ba = malloc(nb * 4), *Ca = malloc(nc * 4);
                for (size_t i = 0; i < na; i++)
                    Aa[i] = fabsf(A[i]);
                for (size_t i = 0; i < nb; i++)
                    Ba[i] = fabsf(B[i]);
                for (size_t i = 0; i < nc; i++)
                    Ca[i] = fabsf(C[i]);
                cpu->ops->gemm(cpu->ctx, ta, tb, M, N, K, 1.25f, Aa, Ba, 0.5f, Ca);
                double mag = max_abs(Ca, nc);
                free(Aa);
                free(Ba);
                free(Ca);
                cpu->ops->gemm(cpu->ctx, ta, tb, M, N, K, 1.25f, A, B, 0.5f, C);
                double err = max_diff(Cg, C, nc);
                CHECK(err <= 1e-5 * mag);
                if (err > 1e-5 * mag)
                    fprintf(stderr, "gemm %dx%dx%d ta=%d tb=%d: error %g of %g\n", M, N, K, ta,
                            tb, err, mag);
                gpu->ops->free(gpu->ctx, dA, na * 4);
                gpu->ops->free(gpu->ctx, dB, nb * 4);
                gpu->ops->free(gpu->ctx, dC, nc * 4);
                free(A);
                free(B);
                free(C);
                free(Cg);
            }
    CHECK(gpu->ops->sync(gpu->ctx) == SC_OK);
}

TEST(elementwise)
{
    size_t n = 100003;
    float *a = malloc(n * 4), *g = malloc(n * 4), *x = malloc(n * 4), *out = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        a[i] = 3 * uniform();
        g[i] = uniform();
        x[i] = uniform();
    }
    float *da = put(gpu, a, n), *dg = put(gpu, g, n), *dx = put(gpu, x, n);
    gpu->ops->tanh_fwd(gpu->ctx, n, da);
    cpu->ops->tanh_fwd(cpu->ctx, n, a);
    gpu->ops->download(gpu->ctx, out, da, n * 4);
    CHECK(max_diff(out, a, n) <= 2e-6);
    gpu->ops->tanh_bwd(gpu->ctx, n, da, dg);
    cpu->ops->tanh_bwd(cpu->ctx, n, a, g);
    gpu->ops->download(gpu->ctx, out, dg, n * 4);
    CHECK(max_diff(out, g, n) <= 2e-6);
    gpu->ops->sgd(gpu->ctx, n, 0.01f, dg, dx);
    cpu->ops->sgd(cpu->ctx, n, 0.01f, g, x);
    gpu->ops->download(gpu->ctx, out, dx, n * 4);
    CHECK(max_diff(out, x, n) <= 2e-6);
    /* the model's data: the same bits as on the cpu */
    gpu->ops->fill_uniform(gpu->ctx, dx, n, 7, 0x12345, 0.375f);
    cpu->ops->fill_uniform(cpu->ctx, x, n, 7, 0x12345, 0.375f);
    gpu->ops->download(gpu->ctx, out, dx, n * 4);
    CHECK(memcmp(out, x, n * 4) == 0);
    gpu->ops->copy(gpu->ctx, n, dx, da);
    gpu->ops->download(gpu->ctx, out, da, n * 4);
    gpu->ops->download(gpu->ctx, a, dx, n * 4);
    CHECK(memcmp(out, a, n * 4) == 0);
    gpu->ops->free(gpu->ctx, da, n * 4);
    gpu->ops->free(gpu->ctx, dg, n * 4);
    gpu->ops->free(gpu->ctx, dx, n * 4);
    CHECK(gpu->ops->sync(gpu->ctx) == SC_OK);
    free(a);
    free(g);
    free(x);
    free(out);
}

/* The optimizer on the device (runtime/model/optim.c): three AdamW steps
 * give the CPU backend's bits; the gradients' state agrees and repeats. */
TEST(optimizer)
{
    size_t n = 300007;
    float *w = malloc(n * 4), *g = malloc(n * 4), *m = calloc(n, 4), *v = calloc(n, 4),
          *out = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        w[i] = uniform();
        g[i] = 0.01f * uniform();
    }
    float *dw = put(gpu, w, n), *dg = put(gpu, g, n), *dm = put(gpu, m, n), *dv = put(gpu, v, n);
    for (int t = 1; t <= 3; t++) {
        struct sc_adamw_k k = {.b1 = 0.9f, .b2 = 0.999f, .coef = 0.75f, .decay = 1 - 1e-5f,
                               .step = (float)(1e-3 / (1 - pow(0.9, t))),
                               .sbc2 = (float)sqrt(1 - pow(0.999, t)), .eps = 1e-8f};
        gpu->ops->adamw(gpu->ctx, n, dw, dg, dm, dv, &k);
        cpu->ops->adamw(cpu->ctx, n, w, g, m, v, &k);
    }
    gpu->ops->download(gpu->ctx, out, dw, n * 4);
    CHECK(memcmp(out, w, n * 4) == 0);
    gpu->ops->download(gpu->ctx, out, dm, n * 4);
    CHECK(memcmp(out, m, n * 4) == 0);
    gpu->ops->download(gpu->ctx, out, dv, n * 4);
    CHECK(memcmp(out, v, n * 4) == 0);
    /* sumsq, with two non-finite values planted */
    g[5] = INFINITY;
    g[n - 1] = NAN;
    gpu->ops->upload(gpu->ctx, dg, g, n * 4);
    double sg[2], sc[2], again[2];
    CHECK(gpu->ops->sumsq(gpu->ctx, n, dg, sg) == SC_OK);
    CHECK(cpu->ops->sumsq(cpu->ctx, n, g, sc) == SC_OK);
    CHECK(gpu->ops->sumsq(gpu->ctx, n, dg, again) == SC_OK);
    CHECK(sg[1] == 2 && sc[1] == 2);
    CHECK(fabs(sg[0] - sc[0]) <= 1e-12 * sc[0]);
    CHECK(memcmp(sg, again, sizeof sg) == 0);
    CHECK(gpu->ops->sumsq(gpu->ctx, 0, dg, sg) == SC_OK && sg[0] == 0 && sg[1] == 0);
    gpu->ops->free(gpu->ctx, dw, n * 4);
    gpu->ops->free(gpu->ctx, dg, n * 4);
    gpu->ops->free(gpu->ctx, dm, n * 4);
    gpu->ops->free(gpu->ctx, dv, n * 4);
    CHECK(gpu->ops->sync(gpu->ctx) == SC_OK);
    free(w);
    free(g);
    free(m);
    free(v);
    free(out);
}

TEST(xent)
{
    const int shapes[][2] = {{33, 1000}, {5, 7}, {64, 32000}};
    for (size_t si = 0; si < 3; si++) {
        int R = shapes[si][0], V = shapes[si][1];
        size_t n = (size_t)R * V;
        float *x = malloc(n * 4), *xg = malloc(n * 4);
        int32_t *t = malloc((size_t)R * 4);
        for (size_t i = 0; i < n; i++)
            x[i] = 4 * uniform();
        for (int r = 0; r < R; r++)
            t[r] = (int32_t)(next_u32() % (uint32_t)V);
        float scale = 1.0f / (float)R;
        float *dx = put(gpu, x, n), *dx2 = put(gpu, x, n);
        double lg = gpu->ops->xent(gpu->ctx, R, V, dx, t, scale);
        double lg2 = gpu->ops->xent(gpu->ctx, R, V, dx2, t, scale);
        double lc = cpu->ops->xent(cpu->ctx, R, V, x, t, scale);
        CHECK(fabs(lg - lc) <= 1e-6 * fabs(lc));
        CHECK(memcmp(&lg, &lg2, sizeof lg) == 0);
        gpu->ops->download(gpu->ctx, xg, dx, n * 4);
        CHECK(max_diff(xg, x, n) <= 1e-6 * scale);
        gpu->ops->free(gpu->ctx, dx, n * 4);
        gpu->ops->free(gpu->ctx, dx2, n * 4);
        free(x);
        free(xg);
        free(t);
    }
}

/* Random bit patterns (NaNs, infinities, denormals, -0) go to pinned host
 * memory and back unchanged; copies in both directions overlap; a copy to
 * the host sees the compute queued before it. */
TEST(offload_round_trip)
{
    size_t n = (1u << 22) + 3, bytes = n * 4;
    uint32_t *bits = malloc(bytes), *back = malloc(bytes);
    for (size_t i = 0; i < n; i++)
        bits[i] = next_u32();
    const struct sc_backend_ops *o = gpu->ops;
    void *x = o->alloc(gpu->ctx, bytes), *y = o->alloc(gpu->ctx, bytes),
         *z = o->alloc(gpu->ctx, bytes);
    void *h1 = o->host_alloc(gpu->ctx, bytes), *h2 = o->host_alloc(gpu->ctx, bytes);
    CHECK(x && y && z && h1 && h2);
    o->upload(gpu->ctx, x, bits, bytes);
    void *t1, *t2;
    CHECK(o->copy_start(gpu->ctx, 1, h1, x, bytes, &t1) == SC_OK);
    CHECK(o->copy_wait(gpu->ctx, t1) == SC_OK);
    CHECK(memcmp(h1, bits, bytes) == 0);
    memcpy(h2, h1, bytes);
    /* both directions at once: y <- h1 while x -> h2 (the same bits) */
    CHECK(o->copy_start(gpu->ctx, 0, y, h1, bytes, &t1) == SC_OK);
    CHECK(o->copy_start(gpu->ctx, 1, h2, x, bytes, &t2) == SC_OK);
    CHECK(o->copy_wait(gpu->ctx, t2) == SC_OK);
    CHECK(o->copy_wait(gpu->ctx, t1) == SC_OK);
    o->download(gpu->ctx, back, y, bytes);
    CHECK(memcmp(back, bits, bytes) == 0);
    CHECK(memcmp(h2, bits, bytes) == 0);
    /* ordering: tanh queued, then the copy to the host, no sync between */
    float *f = malloc(bytes);
    for (size_t i = 0; i < n; i++)
        f[i] = uniform();
    o->upload(gpu->ctx, z, f, bytes);
    o->tanh_fwd(gpu->ctx, n, z);
    CHECK(o->copy_start(gpu->ctx, 1, h1, z, bytes, &t1) == SC_OK);
    CHECK(o->copy_wait(gpu->ctx, t1) == SC_OK);
    o->download(gpu->ctx, back, z, bytes);
    CHECK(memcmp(h1, back, bytes) == 0);
    CHECK(o->sync(gpu->ctx) == SC_OK && o->errmsg(gpu->ctx) == NULL);
    o->free(gpu->ctx, x, bytes);
    o->free(gpu->ctx, y, bytes);
    o->free(gpu->ctx, z, bytes);
    o->host_free(gpu->ctx, h1, bytes);
    o->host_free(gpu->ctx, h2, bytes);
    free(bits);
    free(back);
    free(f);
}

TEST(memory_and_errors)
{
    sc_backend *be = open_cuda(0, 1 << 20);
    CHECK(be != NULL);
    if (!be)
        return;
    const struct sc_backend_ops *o = be->ops;
    CHECK(o->alloc(be->ctx, 2 << 20) == NULL); /* past the cap */
    void *a = o->alloc(be->ctx, 512 << 10);
    CHECK(a != NULL);
    CHECK(o->alloc(be->ctx, 600 << 10) == NULL);
    o->free(be->ctx, a, 512 << 10);
    int g = -1;
    size_t fb = 0, tb = 0;
    CHECK(o->meminfo(be->ctx, &g, &fb, &tb) == SC_OK && g == 0 && fb > 0 && fb <= tb);
    /* A failed call (a shape no kernel takes: it fails before launching,
     * so the GPU's context stays sound): one line naming the call, sticky,
     * reported by sync. */
    float *d = o->alloc(be->ctx, 64);
    int32_t t = 0;
    CHECK(isnan(o->xent(be->ctx, 0, 10, d, &t, 1.0f)));
    CHECK(o->sync(be->ctx) == SC_ERR_RUNTIME);
    CHECK_STR(o->errmsg(be->ctx), "xent");
    CHECK(strchr(o->errmsg(be->ctx), '\n') == NULL);
    CHECK(o->alloc(be->ctx, 64) == NULL); /* inert after a failure */
    o->free(be->ctx, d, 64);
    sc_backend_free(be);
    /* the other instance is unaffected */
    CHECK(gpu->ops->sync(gpu->ctx) == SC_OK);
}

/* d0 sends 4 floats to d1 in one group; both on GPU 0 (cuda-local) or on
 * GPUs 0 and 1 (nccl). */
static void one_transfer(sc_transport *tp, sc_backend **be)
{
    float src[4] = {1, 2, 3, 4}, dst[4] = {0};
    float *a = put(be[0], src, 4), *b = put(be[1], dst, 4);
    sc_xfer s = {.send = 1, .peer = 1, .tag = 3, .buf = a, .bytes = sizeof src};
    sc_xfer r = {.send = 0, .peer = 0, .tag = 3, .buf = b, .bytes = sizeof dst};
    void *h0, *h1;
    CHECK(tp->ops->start(tp->ctx, 0, &s, 1, &h0) == SC_OK);
    CHECK(tp->ops->start(tp->ctx, 1, &r, 1, &h1) == SC_OK);
    CHECK(tp->ops->wait(tp->ctx, 1, h1) == SC_OK);
    CHECK(tp->ops->wait(tp->ctx, 0, h0) == SC_OK);
    tp->ops->release(tp->ctx, 0, h0);
    tp->ops->release(tp->ctx, 1, h1);
    be[1]->ops->download(be[1]->ctx, dst, b, sizeof dst);
    CHECK(memcmp(src, dst, sizeof src) == 0);
    be[0]->ops->free(be[0]->ctx, a, sizeof src);
    be[1]->ops->free(be[1]->ctx, b, sizeof dst);
}

/* A transfer polled until done with a kernel launched on the same thread
 * after every poll, as the executor does between instructions: a poll that
 * finds the group not ready leaves cudaErrorNotReady as the thread's last
 * error in the CUDA runtime, and a launcher that reported it as its own
 * made every multi-device run fail (issue 22, H1). */
static void polled_transfer(sc_transport *tp, sc_backend **be)
{
    float src[64], dst[64] = {0}, w[64];
    for (int i = 0; i < 64; i++)
        src[i] = w[i] = uniform();
    float *a = put(be[0], src, 64), *b = put(be[1], dst, 64);
    float *z0 = put(be[0], w, 64), *z1 = put(be[1], w, 64);
    size_t n = (size_t)1 << 20;
    float *busy = be[1]->ops->alloc(be[1]->ctx, n * sizeof(float));
    CHECK(busy != NULL);
    for (int i = 0; i < 4; i++) /* d1's compute is busy: the first polls find nothing done */
        be[1]->ops->fill_uniform(be[1]->ctx, busy, n, 5, (uint64_t)i, 1.0f);
    sc_xfer s = {.send = 1, .peer = 1, .tag = 7, .buf = a, .bytes = sizeof src};
    sc_xfer r = {.send = 0, .peer = 0, .tag = 7, .buf = b, .bytes = sizeof dst};
    void *h0, *h1;
    CHECK(tp->ops->start(tp->ctx, 0, &s, 1, &h0) == SC_OK);
    CHECK(tp->ops->start(tp->ctx, 1, &r, 1, &h1) == SC_OK);
    int done0 = 0, done1 = 0;
    sc_status st = SC_OK;
    for (long polls = 0; (!done0 || !done1) && !st && polls < 50000000L; polls++) {
        if (!done0)
            st = tp->ops->test(tp->ctx, 0, h0, &done0);
        be[0]->ops->tanh_fwd(be[0]->ctx, 64, z0);
        if (!done1 && !st)
            st = tp->ops->test(tp->ctx, 1, h1, &done1);
        be[1]->ops->tanh_fwd(be[1]->ctx, 64, z1);
        nanosleep(&(struct timespec){0, 100000}, NULL); /* a pass's worth of waiting */
    }
    CHECK(st == SC_OK && done0 && done1);
    CHECK(be[0]->ops->sync(be[0]->ctx) == SC_OK);
    CHECK(be[1]->ops->sync(be[1]->ctx) == SC_OK);
    if (be[0]->ops->errmsg(be[0]->ctx))
        fprintf(stderr, "polled transfer: %s\n", be[0]->ops->errmsg(be[0]->ctx));
    tp->ops->release(tp->ctx, 0, h0);
    tp->ops->release(tp->ctx, 1, h1);
    be[1]->ops->download(be[1]->ctx, dst, b, sizeof dst);
    CHECK(memcmp(src, dst, sizeof src) == 0);
    be[0]->ops->free(be[0]->ctx, a, sizeof src);
    be[1]->ops->free(be[1]->ctx, b, sizeof dst);
    be[0]->ops->free(be[0]->ctx, z0, sizeof w);
    be[1]->ops->free(be[1]->ctx, z1, sizeof w);
    be[1]->ops->free(be[1]->ctx, busy, n * sizeof(float));
}

/* After an abort the executor frees the buffers of its groups in flight
 * (stream-ordered on its compute stream): a copy that the peer queued
 * earlier, still waiting for the peer's compute, must have ended by then
 * (issue 22, M3). d1's compute is kept busy so that its copy into d0's
 * buffer is still queued when d0 aborts. */
static void abort_then_free(sc_transport *tp, sc_backend **be)
{
    size_t n = (size_t)1 << 20;
    float *busy = be[1]->ops->alloc(be[1]->ctx, n * sizeof(float));
    float src[256] = {0};
    float *a = put(be[1], src, 256);
    float *b = be[0]->ops->alloc(be[0]->ctx, sizeof src);
    CHECK(busy && a && b);
    for (int i = 0; i < 8; i++) /* queued work ahead of the send on d1 */
        be[1]->ops->fill_uniform(be[1]->ctx, busy, n, 3, (uint64_t)i, 1.0f);
    sc_xfer r = {.send = 0, .peer = 1, .tag = 9, .buf = b, .bytes = sizeof src};
    sc_xfer s = {.send = 1, .peer = 0, .tag = 9, .buf = a, .bytes = sizeof src};
    void *h0, *h1;
    CHECK(tp->ops->start(tp->ctx, 0, &r, 1, &h0) == SC_OK);
    CHECK(tp->ops->start(tp->ctx, 1, &s, 1, &h1) == SC_OK);
    tp->ops->abort(tp->ctx, 0, "a test's failure");
    be[0]->ops->free(be[0]->ctx, b, sizeof src); /* what sc_exec_device does next */
    CHECK(be[0]->ops->sync(be[0]->ctx) == SC_OK);
    tp->ops->release(tp->ctx, 0, h0);
    tp->ops->release(tp->ctx, 1, h1);
    be[1]->ops->free(be[1]->ctx, a, sizeof src);
    be[1]->ops->free(be[1]->ctx, busy, n * sizeof(float));
    CHECK(be[1]->ops->sync(be[1]->ctx) == SC_OK);
}

/* The collectives of two devices (the nccl transport's second
 * communicator): an all-reduce sum in place, then a broadcast from d1. */
static void collectives(sc_transport *tp, sc_backend **be)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, out[4];
    float *x[2] = {put(be[0], a, 4), put(be[1], b, 4)};
    void *h[2];
    for (int d = 0; d < 2; d++)
        CHECK(tp->ops->coll_start(tp->ctx, d, &(sc_cxfer){SC_OP_ALLREDUCE, SC_RED_SUM, 0,
                                                           SC_DT_F32, x[d], 4}, &h[d]) == SC_OK);
    for (int d = 0; d < 2; d++) {
        CHECK(tp->ops->coll_wait(tp->ctx, d, h[d]) == SC_OK);
        tp->ops->coll_release(tp->ctx, d, h[d]);
        be[d]->ops->download(be[d]->ctx, out, x[d], sizeof out);
        CHECK(out[0] == 11 && out[1] == 22 && out[2] == 33 && out[3] == 44);
    }
    be[1]->ops->upload(be[1]->ctx, x[1], b, sizeof b);
    for (int d = 0; d < 2; d++)
        CHECK(tp->ops->coll_start(tp->ctx, d, &(sc_cxfer){SC_OP_BCAST, 0, 1, SC_DT_F32, x[d], 4},
                                  &h[d]) == SC_OK);
    for (int d = 0; d < 2; d++) {
        CHECK(tp->ops->coll_wait(tp->ctx, d, h[d]) == SC_OK);
        tp->ops->coll_release(tp->ctx, d, h[d]);
    }
    be[0]->ops->download(be[0]->ctx, out, x[0], sizeof out);
    CHECK(memcmp(out, b, sizeof b) == 0);
    for (int d = 0; d < 2; d++)
        be[d]->ops->free(be[d]->ctx, x[d], sizeof a);
}

/* An all-to-all of two devices (ep > 1's DISPATCH, COMBINE): rows of 4
 * floats, d0 sending 1 to itself and 2 to d1, d1 none to d0 and 1 to
 * itself; then d1 with room for 2 of the 3 rows it gets (overflow). Both
 * are polled in turn (NCCL's rows follow its counts at a test). */
static void all_to_all(sc_transport *tp, sc_backend **be)
{
    float s0[12] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, s1[4] = {4, 4, 4, 4}, out[12];
    float *x[2] = {put(be[0], s0, 12), put(be[1], s1, 4)};
    float *y[2] = {be[0]->ops->alloc(be[0]->ctx, 48), be[1]->ops->alloc(be[1]->ctx, 48)};
    for (int d = 0; d < 2; d++) /* transport.h: the rows' backend has finished (and allocated) */
        CHECK(be[d]->ops->sync(be[d]->ctx) == SC_OK);
    for (int cap1 = 3; cap1 >= 2; cap1--) {
        size_t ns[2][2] = {{1, 2}, {0, 1}}, nr[2][2] = {{9, 9}, {9, 9}};
        sc_a2a_part a[2];
        void *h[2];
        int done[2] = {0, 0};
        for (int d = 0; d < 2; d++) {
            a[d] = (sc_a2a_part){.op = SC_OP_DISPATCH, .row = 16, .send = x[d], .nsend = ns[d],
                                 .recv = y[d], .rcap = d ? (size_t)cap1 : 3, .nrecv = nr[d]};
            CHECK(tp->ops->a2a_start(tp->ctx, d, &a[d], &h[d]) == SC_OK);
        }
        sc_status st = SC_OK;
        for (int spin = 0; spin < 1000000 && !st && !(done[0] && done[1]); spin++)
            for (int d = 0; d < 2 && !st; d++)
                if (!done[d])
                    st = tp->ops->coll_test(tp->ctx, d, h[d], &done[d]);
        CHECK(st == SC_OK && done[0] && done[1]);
        for (int d = 0; d < 2; d++)
            tp->ops->coll_release(tp->ctx, d, h[d]);
        CHECK(nr[0][0] == 1 && nr[0][1] == 0 && nr[1][0] == 2 && nr[1][1] == 1);
        CHECK(!a[0].overflow && a[1].overflow == (cap1 == 2));
        be[0]->ops->download(be[0]->ctx, out, y[0], 16);
        CHECK(out[0] == 1 && out[3] == 1);
        if (cap1 == 3) {
            be[1]->ops->download(be[1]->ctx, out, y[1], 48);
            CHECK(out[0] == 2 && out[4] == 3 && out[8] == 4 && out[11] == 4);
        }
    }
    for (int d = 0; d < 2; d++) {
        be[d]->ops->free(be[d]->ctx, x[d], d ? 16 : 48);
        be[d]->ops->free(be[d]->ctx, y[d], 48);
    }
}

/* d0 posts a send that d1 never matches: the wait gives up after the
 * timeout, with one line, and everything can be freed. */
static void stuck_peer(sc_transport *tp, sc_backend **be)
{
    float *a = be[0]->ops->alloc(be[0]->ctx, 16);
    sc_xfer s = {.send = 1, .peer = 1, .tag = 5, .buf = a, .bytes = 16};
    void *h0;
    CHECK(tp->ops->start(tp->ctx, 0, &s, 1, &h0) == SC_OK);
    CHECK(tp->ops->wait(tp->ctx, 0, h0) == SC_ERR_RUNTIME);
    CHECK_STR(tp->ops->errmsg(tp->ctx), "a peer is gone or stuck: giving up");
    tp->ops->release(tp->ctx, 0, h0);
    be[0]->ops->free(be[0]->ctx, a, 16);
}

TEST(cuda_local)
{
    sc_backend *be[2] = {open_cuda(0, 0), open_cuda(0, 0)};
    int ngpu = sc_backend_cuda_devices(NULL, 0);
    if (ngpu > 1) { /* dev 0 and dev ngpu share GPU 0: emulated devices */
        sc_backend_free(be[1]);
        be[1] = open_cuda(ngpu, 0);
    }
    CHECK(be[0] && be[1]);
    sc_transport *tp;
    char err[256];
    CHECK(sc_transport_cuda_local_new(2, be, 16, 2, &tp, err, sizeof err) == SC_OK);
    CHECK_STR(tp->ops->name, "cuda-local");
    one_transfer(tp, be);
    polled_transfer(tp, be);
    all_to_all(tp, be);
    sc_transport_cuda_local_free(tp);
    CHECK(sc_transport_cuda_local_new(2, be, 16, 30, &tp, err, sizeof err) == SC_OK);
    abort_then_free(tp, be);
    sc_transport_cuda_local_free(tp);
    CHECK(sc_transport_cuda_local_new(2, be, 16, 2, &tp, err, sizeof err) == SC_OK);
    stuck_peer(tp, be);
    sc_transport_cuda_local_free(tp);
    sc_backend_free(be[0]);
    sc_backend_free(be[1]);
}

TEST(nccl)
{
    char why[512];
    /* memcheck cannot run NCCL's kernels (tools/gpu_check.sh says why):
     * there the section is skipped by name, with the reason given. */
    const char *skip = getenv("SC_GPU_TEST_SKIP_NCCL");
    if (skip && *skip) {
        printf("nccl: skipped: %s\n", skip);
        return;
    }
    if (!sc_transport_nccl_usable(why, sizeof why)) {
        printf("nccl: skipped: %s\n", why);
        return;
    }
    char err[256];
    sc_transport *tp;
    int devs[2] = {0, 1};
    /* one GPU: a communicator of one rank, created and finalized */
    sc_backend *one = open_cuda(0, 0);
    CHECK(sc_transport_nccl_new(1, 1, devs, &one, NULL, 10, &tp, err, sizeof err) == SC_OK);
    sc_transport_nccl_free(tp);
    /* two ranks on one GPU are refused, not hung */
    sc_backend *same[2] = {one, open_cuda(0, 0)};
    CHECK(sc_transport_nccl_new(2, 2, devs, same, NULL, 10, &tp, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "NCCL needs one GPU per device");
    sc_backend_free(same[1]);
    sc_backend_free(one);
    if (sc_backend_cuda_devices(NULL, 0) < 2) {
        printf("nccl: one GPU, transfers between two GPUs skipped\n");
        return;
    }
    sc_backend *be[2] = {open_cuda(0, 0), open_cuda(1, 0)};
    CHECK(sc_transport_nccl_new(2, 2, devs, be, NULL, 30, &tp, err, sizeof err) == SC_OK);
    CHECK_STR(tp->ops->name, "nccl");
    one_transfer(tp, be);
    polled_transfer(tp, be);
    if (tp->ops->coll_start)
        collectives(tp, be);
    all_to_all(tp, be);
    sc_transport_nccl_free(tp);
    CHECK(sc_transport_nccl_new(2, 2, devs, be, NULL, 3, &tp, err, sizeof err) == SC_OK);
    stuck_peer(tp, be);
    sc_transport_nccl_free(tp); /* aborted: ncclCommAbort, no hang */
    sc_backend_free(be[0]);
    sc_backend_free(be[1]);
}

int main(void)
{
    char info[256];
    int n, skip = gpu_skip("backend-cuda", &n, info, sizeof info);
    if (skip >= 0)
        return skip;
    printf("backend-cuda: %d GPU%s, GPU 0 is %s\n", n, n > 1 ? "s" : "", info);
    char err[256];
    gpu = open_cuda(0, 0);
    if (sc_backend_open("cpu", 0, 0, &cpu, err, sizeof err) != SC_OK || !gpu) {
        printf("backend-cuda: 0 passed, 1 failed (cannot open the backends)\n");
        return 1;
    }
    RUN(gemm);
    RUN(elementwise);
    RUN(optimizer);
    RUN(xent);
    RUN(offload_round_trip);
    RUN(memory_and_errors);
    RUN(cuda_local);
    RUN(nccl);
    sc_backend_free(gpu);
    sc_backend_free(cpu);
    return harness_done("backend-cuda");
}
