/*
 * test_moe_cuda.c — the cuda backend's mixture-of-experts slots (backend.h,
 * "mixture of experts"), through the public table only, against the cpu
 * backend's slots (which tests/unit/test_moe_ops.c holds to references in
 * double and to finite differences) and a reference in double here:
 *
 *   moe_route: sel, pos and the host counts identical to the cpu's (a
 *     planted tie goes to the lower expert), prob and wt within 1e-6;
 *   moe_route_bwd, moe_gather, moe_combine (beta 0 and 1, weights NULL),
 *     moe_combine_bwd: within 1e-5 max(1, max |want|) of the cpu's; the
 *     combine also of the double reference;
 *   moe_route_bwd against central differences of the gpu's own router
 *     along a random direction (2e-3);
 *   the same bits when repeated; a bad shape is a sticky failure naming
 *   the slot.
 *
 * Shapes: rows 300 (more than a block of the element-wise kernels' 256),
 * E 6, k 2, n 40; and rows 5, E 3, k 3 (every expert chosen).
 *
 * Without a GPU it prints why and "0 passed, 0 failed, 1 skipped".
 * tests/cudastub/run.sh runs it on the CUDA stand-in, tests/gpu/run.sh on
 * a GPU.
 */
#include "gpu_skip.h"
#include "harness.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "device/device.h"

static uint32_t rng = 777;
static float uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

static sc_backend *gpu, *cpu;

static float *rand_host(size_t n)
{
    float *h = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        h[i] = uniform();
    return h;
}

static void *put(const void *h, size_t bytes)
{
    void *d = gpu->ops->alloc(gpu->ctx, bytes);
    gpu->ops->upload(gpu->ctx, d, h, bytes);
    return d;
}

static void *get(const void *d, size_t bytes)
{
    void *h = malloc(bytes);
    gpu->ops->download(gpu->ctx, h, d, bytes);
    return h;
}

/* max |a - b| <= tol max(1, max |b|) */
static int close_to(const char *what, const float *a, const float *b, size_t n, double tol)
{
    double d = 0, m = 1;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    if (!(d <= tol * m))
        fprintf(stderr, "%s: max difference %.3g (scale %.3g)\n", what, d, m);
    return d <= tol * m;
}

static void one_shape(int R, int E, int k, int n)
{
    size_t Rk = (size_t)R * k;
    float *logit = rand_host((size_t)R * E), *x = rand_host((size_t)R * n),
          *yg = rand_host(Rk * n), *dy = rand_host((size_t)R * n), *y0 = rand_host((size_t)R * n),
          *dwt_in = rand_host(Rk);
    logit[1] = logit[E - 1] = 4.0f; /* a tie at the top of row 0 */
    /* the cpu's results */
    float *cp = malloc((size_t)R * E * 4), *cw = malloc(Rk * 4), *cdl = malloc((size_t)R * E * 4),
          *cxg = malloc(Rk * n * 4), *cy = malloc((size_t)R * n * 4), *cys = malloc((size_t)R * n * 4),
          *cdyg = malloc(Rk * n * 4), *cdwt = malloc(Rk * 4);
    int32_t *csel = malloc(Rk * 4), *cpos = malloc(Rk * 4);
    int *ccnt = malloc((size_t)E * sizeof(int)), *gcnt = malloc((size_t)E * sizeof(int));
    memcpy(cp, logit, (size_t)R * E * 4);
    cpu->ops->moe_route(cpu->ctx, R, E, k, cp, csel, cw, cpos, ccnt);
    cpu->ops->moe_route_bwd(cpu->ctx, R, E, k, cp, csel, cw, dwt_in, cdl);
    cpu->ops->moe_gather(cpu->ctx, R, k, n, cpos, x, cxg);
    memcpy(cy, y0, (size_t)R * n * 4);
    cpu->ops->moe_combine(cpu->ctx, R, k, n, cpos, cw, yg, 1.0f, cy);
    cpu->ops->moe_combine(cpu->ctx, R, k, n, cpos, NULL, yg, 0.0f, cys);
    cpu->ops->moe_combine_bwd(cpu->ctx, R, k, n, cpos, cw, yg, dy, cdyg, cdwt);
    /* the combine against double */
    double dmax = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < n; c++) {
            double want = y0[(size_t)r * n + c];
            for (int i = 0; i < k; i++)
                want += (double)cw[(size_t)r * k + i] * yg[(size_t)cpos[(size_t)r * k + i] * n + c];
            dmax = fmax(dmax, fabs(want - cy[(size_t)r * n + c]));
        }
    CHECK(dmax < 1e-5);
    /* the gpu's */
    float *dp = put(logit, (size_t)R * E * 4), *dw = gpu->ops->alloc(gpu->ctx, Rk * 4);
    int32_t *dsel = gpu->ops->alloc(gpu->ctx, Rk * 4), *dpos = gpu->ops->alloc(gpu->ctx, Rk * 4);
    gpu->ops->moe_route(gpu->ctx, R, E, k, dp, dsel, dw, dpos, gcnt);
    CHECK(memcmp(gcnt, ccnt, (size_t)E * sizeof(int)) == 0);
    int32_t *gsel = get(dsel, Rk * 4), *gpos = get(dpos, Rk * 4);
    float *gp = get(dp, (size_t)R * E * 4), *gw = get(dw, Rk * 4);
    CHECK(memcmp(gsel, csel, Rk * 4) == 0 && memcmp(gpos, cpos, Rk * 4) == 0);
    CHECK(close_to("prob", gp, cp, (size_t)R * E, 1e-6) && close_to("wt", gw, cw, Rk, 1e-6));
    /* the rest on the cpu's routing, so that only the slot differs */
    float *ddwt = put(dwt_in, Rk * 4), *ddl = gpu->ops->alloc(gpu->ctx, (size_t)R * E * 4);
    float *dcw = put(cw, Rk * 4), *dcp = put(cp, (size_t)R * E * 4);
    int32_t *dcsel = put(csel, Rk * 4), *dcpos = put(cpos, Rk * 4);
    gpu->ops->moe_route_bwd(gpu->ctx, R, E, k, dcp, dcsel, dcw, ddwt, ddl);
    float *dx = put(x, (size_t)R * n * 4), *dxg = gpu->ops->alloc(gpu->ctx, Rk * n * 4);
    gpu->ops->moe_gather(gpu->ctx, R, k, n, dcpos, dx, dxg);
    float *dyg = put(yg, Rk * n * 4), *dyv = put(y0, (size_t)R * n * 4),
          *dys = gpu->ops->alloc(gpu->ctx, (size_t)R * n * 4);
    gpu->ops->moe_combine(gpu->ctx, R, k, n, dcpos, dcw, dyg, 1.0f, dyv);
    gpu->ops->moe_combine(gpu->ctx, R, k, n, dcpos, NULL, dyg, 0.0f, dys);
    float *ddy = put(dy, (size_t)R * n * 4), *ddyg = gpu->ops->alloc(gpu->ctx, Rk * n * 4),
          *ddw = gpu->ops->alloc(gpu->ctx, Rk * 4);
    gpu->ops->moe_combine_bwd(gpu->ctx, R, k, n, dcpos, dcw, dyg, ddy, ddyg, ddw);
    CHECK(gpu->ops->sync(gpu->ctx) == SC_OK);
    float *h[6] = {get(ddl, (size_t)R * E * 4), get(dxg, Rk * n * 4), get(dyv, (size_t)R * n * 4),
                   get(dys, (size_t)R * n * 4), get(ddyg, Rk * n * 4), get(ddw, Rk * 4)};
    CHECK(close_to("route_bwd", h[0], cdl, (size_t)R * E, 1e-5));
    CHECK(memcmp(h[1], cxg, Rk * n * 4) == 0);
    CHECK(close_to("combine", h[2], cy, (size_t)R * n, 1e-5));
    CHECK(close_to("combine (weights 1)", h[3], cys, (size_t)R * n, 1e-5));
    CHECK(close_to("combine_bwd dyg", h[4], cdyg, Rk * n, 1e-5));
    CHECK(close_to("combine_bwd dwt", h[5], cdwt, Rk, 1e-5));
    /* the same bits again */
    gpu->ops->moe_combine_bwd(gpu->ctx, R, k, n, dcpos, dcw, dyg, ddy, ddyg, ddw);
    float *again = get(ddw, Rk * 4);
    CHECK(memcmp(again, h[5], Rk * 4) == 0);
    free(again);
    for (int i = 0; i < 6; i++)
        free(h[i]);
    void *dev[] = {dp, dw, dsel, dpos, ddwt, ddl, dcw, dcp, dcsel, dcpos, dx, dxg, dyg, dyv, dys,
                   ddy, ddyg, ddw};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        gpu->ops->free(gpu->ctx, dev[i], 0);
    void *host[] = {logit, x, yg, dy, y0, dwt_in, cp, cw, cdl, cxg, cy, cys, cdyg, cdwt, csel,
                    cpos, ccnt, gcnt, gsel, gpos, gp, gw};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

/* sum of w * wt, the weights the gpu's router gives logits l (R x E) */
static double routed_loss(int R, int E, int k, const float *l, const float *w)
{
    size_t Rk = (size_t)R * k;
    float *dp = put(l, (size_t)R * E * 4), *dw = gpu->ops->alloc(gpu->ctx, Rk * 4);
    int32_t *ds = gpu->ops->alloc(gpu->ctx, Rk * 4), *dq = gpu->ops->alloc(gpu->ctx, Rk * 4);
    int cnt[16];
    gpu->ops->moe_route(gpu->ctx, R, E, k, dp, ds, dw, dq, cnt);
    float *wt = get(dw, Rk * 4);
    double L = 0;
    for (size_t j = 0; j < Rk; j++)
        L += (double)w[j] * wt[j];
    void *dev[] = {dp, dw, ds, dq};
    for (int i = 0; i < 4; i++)
        gpu->ops->free(gpu->ctx, dev[i], 0);
    free(wt);
    return L;
}

/* moe_route_bwd against central differences of the gpu's own router along
 * a random direction (float: 2e-3 relative), the selection unchanged. */
TEST(route_differences)
{
    int R = 20, E = 5, k = 2;
    size_t Rk = (size_t)R * k, RE = (size_t)R * E;
    float *l = rand_host(RE), *w = rand_host(Rk), *v = rand_host(RE), *lp = malloc(RE * 4),
          *lm = malloc(RE * 4);
    float *dp = put(l, RE * 4), *dw = gpu->ops->alloc(gpu->ctx, Rk * 4),
          *dwt = put(w, Rk * 4), *ddl = gpu->ops->alloc(gpu->ctx, RE * 4);
    int32_t *ds = gpu->ops->alloc(gpu->ctx, Rk * 4), *dq = gpu->ops->alloc(gpu->ctx, Rk * 4);
    int cnt[8];
    gpu->ops->moe_route(gpu->ctx, R, E, k, dp, ds, dw, dq, cnt);
    gpu->ops->moe_route_bwd(gpu->ctx, R, E, k, dp, ds, dw, dwt, ddl);
    float *g = get(ddl, RE * 4);
    double want = 0, h = 1e-2;
    for (size_t i = 0; i < RE; i++) {
        want += (double)g[i] * v[i];
        lp[i] = l[i] + (float)h * v[i];
        lm[i] = l[i] - (float)h * v[i];
    }
    double got = (routed_loss(R, E, k, lp, w) - routed_loss(R, E, k, lm, w)) / (2 * h);
    if (!(fabs(got - want) <= 2e-3 * fmax(1, fabs(want))))
        fprintf(stderr, "route differences %.6g, gradient %.6g\n", got, want);
    CHECK(fabs(got - want) <= 2e-3 * fmax(1, fabs(want)));
    void *dev[] = {dp, dw, dwt, ddl, ds, dq};
    for (int i = 0; i < 6; i++)
        gpu->ops->free(gpu->ctx, dev[i], 0);
    void *host[] = {l, w, v, lp, lm, g};
    for (int i = 0; i < 6; i++)
        free(host[i]);
}

TEST(shapes)
{
    one_shape(300, 6, 2, 40);
    one_shape(5, 3, 3, 7);
}

/* A bad shape fails the instance (sticky), in one line naming the slot. */
TEST(bad_shape)
{
    sc_backend *be = NULL;
    char err[256];
    int cnt[2];
    CHECK(sc_backend_open("cuda", 0, 0, &be, err, sizeof err) == SC_OK);
    if (!be)
        return;
    be->ops->moe_route(be->ctx, 4, 2, 3, NULL, NULL, NULL, NULL, cnt);
    CHECK(be->ops->sync(be->ctx) == SC_ERR_RUNTIME);
    CHECK_STR(be->ops->errmsg(be->ctx), "moe_route");
    CHECK(strchr(be->ops->errmsg(be->ctx), '\n') == NULL);
    sc_backend_free(be);
}

int main(void)
{
    char info[256], err[256];
    int n, skip = gpu_skip("moe-cuda", &n, info, sizeof info);
    if (skip >= 0)
        return skip;
    if (sc_backend_open("cuda", 0, 0, &gpu, err, sizeof err) != SC_OK ||
        sc_backend_open("cpu", 0, 0, &cpu, err, sizeof err) != SC_OK) {
        printf("moe-cuda: 0 passed, 1 failed (cannot open the backends: %s)\n", err);
        return 1;
    }
    if (!gpu->ops->moe_route || !gpu->ops->moe_route_bwd || !gpu->ops->moe_gather ||
        !gpu->ops->moe_combine || !gpu->ops->moe_combine_bwd) {
        printf("moe-cuda: 0 passed, 1 failed (the cuda backend lacks the MoE slots)\n");
        return 1;
    }
    RUN(shapes);
    RUN(route_differences);
    RUN(bad_shape);
    sc_backend_free(gpu);
    sc_backend_free(cpu);
    return harness_done("moe-cuda");
}
