/*
 * test_decoder_cuda.c — the cuda backend's decoder slots (backend.h, "the
 * decoder's layers"), through the public table only, against naive host
 * references in double precision (tests/unit/decoder_ref.h, shared with the
 * cpu backend's test):
 *
 *   rmsnorm_fwd (y, rstd), rmsnorm_bwd (beta 0 over garbage, beta 1 over
 *     values), rmsnorm_wgrad (accumulated onto values), rope (both signs;
 *     -1 undoes +1), attn_fwd (p, 0 above the diagonal, and o), attn_bwd
 *     (dq, dk, dv written over garbage), the same with a key/value prefix
 *     (past) and rope with pos0 against the cpu backend's slots, swiglu_fwd,
 *     swiglu_bwd:
 *     max |got - want| <= 1e-5 max(1, max |want|);
 *   every backward against the forward by finite differences: the
 *     reference gradients against central differences of the reference
 *     forward (per coordinate, in double: 1e-6), and the slots' gradients
 *     against central differences of the slots' own forward along a random
 *     direction (float: 2e-3);
 *   the same bits when repeated (fixed reduction trees); a bad shape is a
 *     sticky failure naming the slot.
 *
 * Shapes: batch 2, seq 7, heads 4, kv_heads 2, dim 8 (rows 14, n 24); the
 * odd ones heads == kv_heads with seq 1, a row longer than a block (n 300),
 * and a sequence longer than a block (seq 150).
 *
 * Without a GPU it prints why and "0 passed, 0 failed, 1 skipped" (as
 * test_backend_cuda.c). tests/cudastub/run.sh runs it on the CUDA stand-in,
 * tests/gpu/run.sh on a GPU.
 */
#include "decoder_ref.h"
#include "gpu_skip.h"
#include "harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "device/device.h"

static uint32_t rng = 4242;
static float uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

static sc_backend *gpu;
#define O (gpu->ops)
#define X (gpu->ctx)

static float *rand_host(size_t n, float scale)
{
    float *h = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        h[i] = scale * uniform();
    return h;
}

static double *to_d(const float *h, size_t n)
{
    double *d = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        d[i] = h[i];
    return d;
}

static float *put(const float *h, size_t n)
{
    float *d = O->alloc(X, n * sizeof(float));
    O->upload(X, d, h, n * sizeof(float));
    return d;
}

/* A device tensor of n floats of garbage (NaN bit patterns): a slot that
 * reads what it should only write shows it. */
static float *garbage(size_t n)
{
    float *h = malloc(n * sizeof(float));
    memset(h, 0xff, n * sizeof(float));
    float *d = put(h, n);
    free(h);
    return d;
}

static float *get(const float *d, size_t n)
{
    float *h = malloc(n * sizeof(float));
    O->download(X, h, d, n * sizeof(float));
    return h;
}

static void drop(float *d, size_t n) { O->free(X, d, n * sizeof(float)); }

/* max |got - want| <= tol max(1, max |want|), reported when not. */
static int near(const char *what, const float *got, const double *want, size_t n, double tol)
{
    double err = 0, mag = 1;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        err = e > err || e != e ? e : err;
        mag = fmax(mag, fabs(want[i]));
    }
    int ok = err <= tol * mag;
    if (!ok)
        fprintf(stderr, "%s: error %g of %g (tolerance %g)\n", what, err, mag, tol);
    return ok;
}

#define TOL 1e-5  /* a slot against the double reference */
#define FD_H 1e-6 /* the reference's finite differences (double) */
#define FD_TOL 1e-6
#define DIR_H 1e-2 /* the slots' own forward along a direction (float) */
#define DIR_TOL 2e-3

/* ---- references (double): decoder_ref.h ---- */

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static double dotf(const float *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* x + t u, a new host array. */
static float *shift(const float *x, const float *u, size_t n, double t)
{
    float *y = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        y[i] = (float)(x[i] + t * u[i]);
    return y;
}

/* The reference's gradient of loss (of x, perturbed in place) against
 * central differences, coordinate by coordinate. */
static int fd_ok(const char *what, double *x, size_t n, const double *grad,
                 double (*loss)(const void *), const void *arg)
{
    double *fd = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + FD_H;
        double lp = loss(arg);
        x[i] = keep - FD_H;
        double lm = loss(arg);
        x[i] = keep;
        fd[i] = (lp - lm) / (2 * FD_H);
    }
    double err = 0, mag = 1;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs(grad[i] - fd[i]));
        mag = fmax(mag, fabs(fd[i]));
    }
    int ok = err <= FD_TOL * mag;
    if (!ok)
        fprintf(stderr, "%s: the reference's gradient is off its finite differences by %g of %g\n",
                what, err, mag);
    free(fd);
    return ok;
}

/* The slots' directional derivative (f(h) - f(-h)) / 2h against the
 * gradients' dot with the direction. */
static int dir_ok(const char *what, double fp, double fm, double want)
{
    double got = (fp - fm) / (2 * DIR_H);
    int ok = fabs(got - want) <= DIR_TOL * fmax(1, fabs(want));
    if (!ok)
        fprintf(stderr, "%s: the forward's directional derivative %.9g, the backward's %.9g\n",
                what, got, want);
    return ok;
}

/* ---- RMSNorm ---- */

typedef struct rms_case {
    int rows, n;
    double *x, *g, *w;
    float eps;
} rms_case;

static double rms_ref_loss(const void *arg)
{
    const rms_case *c = arg;
    size_t m = (size_t)c->rows * c->n;
    double *y = malloc(m * sizeof(double)), *rs = malloc((size_t)c->rows * sizeof(double));
    ref_rms(c->rows, c->n, c->x, c->g, c->eps, y, rs);
    double l = dot(y, c->w, m);
    free(y);
    free(rs);
    return l;
}

/* sum w y of the slot's forward at x, g. */
static double rms_gpu_loss(int rows, int n, const float *x, const float *g, float eps,
                           const double *w)
{
    size_t m = (size_t)rows * n;
    float *dx = put(x, m), *dg = put(g, (size_t)n), *dy = garbage(m), *drs = garbage(rows);
    O->rmsnorm_fwd(X, rows, n, dx, dg, eps, dy, drs);
    float *y = get(dy, m);
    double l = dotf(y, w, m);
    free(y);
    drop(dx, m);
    drop(dg, n);
    drop(dy, m);
    drop(drs, rows);
    return l;
}

static void rms_one(int rows, int n)
{
    size_t m = (size_t)rows * n;
    float eps = 1e-5f;
    float *x = rand_host(m, 2), *g = rand_host(n, 1), *w = rand_host(m, 1),
          *old = rand_host(m, 1), *oldg = rand_host(n, 1);
    rms_case c = {rows, n, to_d(x, m), to_d(g, n), to_d(w, m), eps};
    double *y = malloc(m * 8), *rs = malloc(rows * 8), *dx = malloc(m * 8), *dgr = malloc(n * 8);
    ref_rms(rows, n, c.x, c.g, eps, y, rs);
    ref_rms_grad(rows, n, c.x, c.g, eps, c.w, dx, dgr);

    float *dX = put(x, m), *dG = put(g, n), *dW = put(w, m), *dY = garbage(m),
          *dR = garbage(rows), *dY2 = garbage(m), *dR2 = garbage(rows);
    O->rmsnorm_fwd(X, rows, n, dX, dG, eps, dY, dR);
    O->rmsnorm_fwd(X, rows, n, dX, dG, eps, dY2, dR2);
    float *hy = get(dY, m), *hr = get(dR, rows), *hy2 = get(dY2, m);
    CHECK(near("rmsnorm_fwd y", hy, y, m, TOL));
    CHECK(near("rmsnorm_fwd rstd", hr, rs, rows, TOL));
    CHECK(memcmp(hy, hy2, m * 4) == 0);

    float *dDX = garbage(m), *dDX1 = put(old, m), *dDG = put(oldg, n);
    O->rmsnorm_bwd(X, rows, n, dX, dG, dR, dW, 0.0f, dDX);
    O->rmsnorm_bwd(X, rows, n, dX, dG, dR, dW, 1.0f, dDX1);
    O->rmsnorm_wgrad(X, rows, n, dX, dR, dW, dDG);
    float *hdx = get(dDX, m), *hdx1 = get(dDX1, m), *hdg = get(dDG, n);
    CHECK(near("rmsnorm_bwd beta 0", hdx, dx, m, TOL));
    double *want1 = malloc(m * 8), *wantg = malloc(n * 8);
    for (size_t i = 0; i < m; i++)
        want1[i] = old[i] + dx[i];
    for (int i = 0; i < n; i++)
        wantg[i] = oldg[i] + dgr[i];
    CHECK(near("rmsnorm_bwd beta 1", hdx1, want1, m, TOL));
    CHECK(near("rmsnorm_wgrad", hdg, wantg, n, TOL));
    CHECK(O->sync(X) == SC_OK);

    /* backward against forward */
    if (m <= 400) {
        CHECK(fd_ok("rmsnorm dx", c.x, m, dx, rms_ref_loss, &c));
        CHECK(fd_ok("rmsnorm dg", c.g, n, dgr, rms_ref_loss, &c));
    }
    float *ux = rand_host(m, 1), *ug = rand_host(n, 1);
    float *xp = shift(x, ux, m, DIR_H), *xm = shift(x, ux, m, -DIR_H),
          *gp = shift(g, ug, n, DIR_H), *gm = shift(g, ug, n, -DIR_H);
    double want = 0;
    for (size_t i = 0; i < m; i++)
        want += (double)hdx[i] * ux[i];
    for (int i = 0; i < n; i++)
        want += ((double)hdg[i] - oldg[i]) * ug[i];
    CHECK(dir_ok("rmsnorm", rms_gpu_loss(rows, n, xp, gp, eps, c.w),
                 rms_gpu_loss(rows, n, xm, gm, eps, c.w), want));

    float *dev[] = {dX, dG, dW, dY, dR, dY2, dR2, dDX, dDX1, dDG};
    size_t len[] = {m, n, m, m, rows, m, rows, m, m, n};
    for (int i = 0; i < 10; i++)
        drop(dev[i], len[i]);
    void *host[] = {x, g, w, old, oldg, c.x, c.g, c.w, y, rs, dx, dgr, hy, hr, hy2, hdx, hdx1,
                    hdg, want1, wantg, ux, ug, xp, xm, gp, gm};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

TEST(rmsnorm)
{
    rms_one(14, 24);
    rms_one(3, 300); /* a row longer than a block */
}

/* ---- rotary positions ---- */

typedef struct rope_case {
    int rows, seq, heads, dim;
    double *x, *w;
} rope_case;

#define THETA 10000.0f

static double rope_ref_loss(const void *arg)
{
    const rope_case *c = arg;
    size_t m = (size_t)c->rows * c->heads * c->dim;
    double *y = malloc(m * 8);
    memcpy(y, c->x, m * 8);
    ref_rope(c->rows, c->seq, c->heads, c->dim, THETA, 1, y);
    double l = dot(y, c->w, m);
    free(y);
    return l;
}

static double rope_gpu_loss(const rope_case *c, const float *x)
{
    size_t m = (size_t)c->rows * c->heads * c->dim;
    float *d = put(x, m);
    O->rope(X, c->rows, c->seq, 0, c->heads, c->dim, THETA, 1, d);
    float *y = get(d, m);
    double l = dotf(y, c->w, m);
    free(y);
    drop(d, m);
    return l;
}

static void rope_one(int rows, int seq, int heads, int dim)
{
    size_t m = (size_t)rows * heads * dim;
    float *x = rand_host(m, 1), *w = rand_host(m, 1);
    rope_case c = {rows, seq, heads, dim, to_d(x, m), to_d(w, m)};
    double *y = malloc(m * 8), *gx = malloc(m * 8);
    memcpy(y, c.x, m * 8);
    ref_rope(rows, seq, heads, dim, THETA, 1, y);
    memcpy(gx, c.w, m * 8); /* the gradient of sum w rope(x): w turned back */
    ref_rope(rows, seq, heads, dim, THETA, -1, gx);

    float *dx = put(x, m), *dw = put(w, m);
    O->rope(X, rows, seq, 0, heads, dim, THETA, 1, dx);
    float *hy = get(dx, m);
    CHECK(near("rope +1", hy, y, m, TOL));
    O->rope(X, rows, seq, 0, heads, dim, THETA, -1, dx);
    float *back = get(dx, m);
    CHECK(near("rope -1 after +1", back, c.x, m, TOL));
    O->rope(X, rows, seq, 0, heads, dim, THETA, -1, dw);
    float *hg = get(dw, m);
    CHECK(near("rope -1 (the backward)", hg, gx, m, TOL));
    CHECK(O->sync(X) == SC_OK);

    if (m <= 1000)
        CHECK(fd_ok("rope", c.x, m, gx, rope_ref_loss, &c));
    float *u = rand_host(m, 1), *xp = shift(x, u, m, DIR_H), *xm = shift(x, u, m, -DIR_H);
    double want = 0;
    for (size_t i = 0; i < m; i++)
        want += (double)hg[i] * u[i];
    CHECK(dir_ok("rope", rope_gpu_loss(&c, xp), rope_gpu_loss(&c, xm), want));
    drop(dx, m);
    drop(dw, m);
    void *host[] = {x, w, c.x, c.w, y, gx, hy, back, hg, u, xp, xm};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

TEST(rope)
{
    rope_one(14, 7, 4, 8);
    rope_one(2, 1, 3, 6);       /* seq 1: position 0 only, turns nothing */
    rope_one(600, 600, 1, 4);   /* angles of hundreds of radians */
}

/* ---- attention ---- */

typedef struct attn_case {
    shape s;
    double *q, *k, *v, *w;
} attn_case;

static double attn_ref_loss(const void *arg)
{
    const attn_case *c = arg;
    double *p = malloc(np(&c->s) * 8), *o = malloc(nq(&c->s) * 8);
    ref_attn(&c->s, c->q, c->k, c->v, p, o);
    double l = dot(o, c->w, nq(&c->s));
    free(p);
    free(o);
    return l;
}

static double attn_gpu_loss(const attn_case *c, const float *q, const float *k, const float *v)
{
    const shape *s = &c->s;
    float *dq = put(q, nq(s)), *dk = put(k, nk(s)), *dv = put(v, nk(s)), *dp = garbage(np(s)),
          *dout = garbage(nq(s));
    O->attn_fwd(X, s->batch, s->seq, 0, s->heads, s->kvh, s->dim, dq, dk, dv, dp, dout);
    float *o = get(dout, nq(s));
    double l = dotf(o, c->w, nq(s));
    free(o);
    drop(dq, nq(s));
    drop(dk, nk(s));
    drop(dv, nk(s));
    drop(dp, np(s));
    drop(dout, nq(s));
    return l;
}

static void attn_one(shape s)
{
    size_t mq = nq(&s), mk = nk(&s), mp = np(&s);
    float *q = rand_host(mq, 1.5f), *k = rand_host(mk, 1.5f), *v = rand_host(mk, 1),
          *w = rand_host(mq, 1);
    attn_case c = {s, to_d(q, mq), to_d(k, mk), to_d(v, mk), to_d(w, mq)};
    double *p = malloc(mp * 8), *o = malloc(mq * 8), *gq = malloc(mq * 8), *gk = malloc(mk * 8),
           *gv = malloc(mk * 8);
    ref_attn(&s, c.q, c.k, c.v, p, o);
    ref_attn_grad(&s, c.q, c.k, c.v, p, c.w, gq, gk, gv);

    float *dq = put(q, mq), *dk = put(k, mk), *dv = put(v, mk), *dw = put(w, mq),
          *dp = garbage(mp), *dout = garbage(mq), *dp2 = garbage(mp), *dout2 = garbage(mq);
    O->attn_fwd(X, s.batch, s.seq, 0, s.heads, s.kvh, s.dim, dq, dk, dv, dp, dout);
    O->attn_fwd(X, s.batch, s.seq, 0, s.heads, s.kvh, s.dim, dq, dk, dv, dp2, dout2);
    float *hp = get(dp, mp), *ho = get(dout, mq), *ho2 = get(dout2, mq);
    CHECK(near("attn_fwd p", hp, p, mp, TOL));
    CHECK(near("attn_fwd o", ho, o, mq, TOL));
    CHECK(memcmp(ho, ho2, mq * 4) == 0);
    int zeros = 1;
    for (int b = 0; b < s.batch; b++)
        for (int j = 0; j < s.heads; j++)
            for (int t = 0; t < s.seq; t++)
                for (int u = t + 1; u < s.seq; u++)
                    zeros &= hp[PI(&s, b, j, t, u)] == 0.0f;
    CHECK(zeros);

    float *gdq = garbage(mq), *gdk = garbage(mk), *gdv = garbage(mk);
    O->attn_bwd(X, s.batch, s.seq, 0, s.heads, s.kvh, s.dim, dq, dk, dv, dp, dw, gdq, gdk, gdv);
    float *hq = get(gdq, mq), *hk = get(gdk, mk), *hv = get(gdv, mk);
    CHECK(near("attn_bwd dq", hq, gq, mq, TOL));
    CHECK(near("attn_bwd dk", hk, gk, mk, TOL));
    CHECK(near("attn_bwd dv", hv, gv, mk, TOL));
    CHECK(O->sync(X) == SC_OK);

    if (s.seq <= 16) {
        CHECK(fd_ok("attention dq", c.q, mq, gq, attn_ref_loss, &c));
        CHECK(fd_ok("attention dk", c.k, mk, gk, attn_ref_loss, &c));
        CHECK(fd_ok("attention dv", c.v, mk, gv, attn_ref_loss, &c));
    }
    float *uq = rand_host(mq, 1), *uk = rand_host(mk, 1), *uv = rand_host(mk, 1);
    float *qp = shift(q, uq, mq, DIR_H), *qm = shift(q, uq, mq, -DIR_H),
          *kp = shift(k, uk, mk, DIR_H), *km = shift(k, uk, mk, -DIR_H),
          *vp = shift(v, uv, mk, DIR_H), *vm = shift(v, uv, mk, -DIR_H);
    double *duq = to_d(uq, mq), *duk = to_d(uk, mk), *duv = to_d(uv, mk);
    double want = dotf(hq, duq, mq) + dotf(hk, duk, mk) + dotf(hv, duv, mk);
    CHECK(dir_ok("attention", attn_gpu_loss(&c, qp, kp, vp), attn_gpu_loss(&c, qm, km, vm), want));

    float *dev[] = {dq, dk, dv, dw, dp, dout, dp2, dout2, gdq, gdk, gdv};
    size_t len[] = {mq, mk, mk, mq, mp, mq, mp, mq, mq, mk, mk};
    for (int i = 0; i < 11; i++)
        drop(dev[i], len[i]);
    void *host[] = {q, k, v, w, c.q, c.k, c.v, c.w, p, o, gq, gk, gv, hp, ho, ho2, hq, hk, hv,
                    uq, uk, uv, qp, qm, kp, km, vp, vm, duq, duk, duv};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

/* With a key/value prefix (docs/slices.md#run): seq queries at positions
 * past.. over past + seq keys, against the cpu backend's slot (itself
 * checked against a double reference and finite differences by
 * tests/unit/test_decoder_ops.c). */
static void attn_past_one(int batch, int seq, int past, int heads, int kvh, int dim)
{
    char err[256];
    sc_backend *cpu = NULL;
    CHECK(sc_backend_cpu_open(0, &cpu, err, sizeof err) == SC_OK);
    if (!cpu)
        return;
    int kn = past + seq;
    size_t mq = (size_t)batch * seq * heads * dim, mk = (size_t)batch * kn * kvh * dim;
    size_t mp = (size_t)batch * heads * seq * kn;
    float *q = rand_host(mq, 1.5f), *k = rand_host(mk, 1.5f), *v = rand_host(mk, 1),
          *w = rand_host(mq, 1);
    float *cp = malloc(mp * 4), *co = malloc(mq * 4), *cq = malloc(mq * 4),
          *ck = malloc(mk * 4), *cv = malloc(mk * 4);
    cpu->ops->attn_fwd(cpu->ctx, batch, seq, past, heads, kvh, dim, q, k, v, cp, co);
    double *po = to_d(cp, mp), *oo = to_d(co, mq);
    cpu->ops->attn_bwd(cpu->ctx, batch, seq, past, heads, kvh, dim, q, k, v, cp, w, cq, ck, cv);
    double *gq = to_d(cq, mq), *gk = to_d(ck, mk), *gv = to_d(cv, mk);
    float *dq = put(q, mq), *dk = put(k, mk), *dv = put(v, mk), *dw = put(w, mq),
          *dp = garbage(mp), *dout = garbage(mq), *gdq = garbage(mq), *gdk = garbage(mk),
          *gdv = garbage(mk);
    O->attn_fwd(X, batch, seq, past, heads, kvh, dim, dq, dk, dv, dp, dout);
    float *hp = get(dp, mp), *ho = get(dout, mq);
    CHECK(near("attn_fwd past p", hp, po, mp, TOL));
    CHECK(near("attn_fwd past o", ho, oo, mq, TOL));
    O->attn_bwd(X, batch, seq, past, heads, kvh, dim, dq, dk, dv, dp, dw, gdq, gdk, gdv);
    float *hq = get(gdq, mq), *hk = get(gdk, mk), *hv = get(gdv, mk);
    CHECK(near("attn_bwd past dq", hq, gq, mq, TOL));
    CHECK(near("attn_bwd past dk", hk, gk, mk, TOL));
    CHECK(near("attn_bwd past dv", hv, gv, mk, TOL));
    CHECK(O->sync(X) == SC_OK);
    float *dev[] = {dq, dk, dv, dw, dp, dout, gdq, gdk, gdv};
    size_t n[] = {mq, mk, mk, mq, mp, mq, mq, mk, mk};
    for (int i = 0; i < 9; i++)
        drop(dev[i], n[i]);
    void *host[] = {q, k, v, w, cp, co, cq, ck, cv, po, oo, gq, gk, gv, hp, ho, hq, hk, hv};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    sc_backend_free(cpu);
}

/* rope with pos0 (a sequence slice's rows) against the cpu backend's. */
static void rope_pos0_one(int rows, int seq, int pos0, int heads, int dim)
{
    char err[256];
    sc_backend *cpu = NULL;
    CHECK(sc_backend_cpu_open(0, &cpu, err, sizeof err) == SC_OK);
    if (!cpu)
        return;
    size_t m = (size_t)rows * heads * dim;
    float *x = rand_host(m, 1), *c = malloc(m * 4);
    memcpy(c, x, m * 4);
    cpu->ops->rope(cpu->ctx, rows, seq, pos0, heads, dim, THETA, 1, c);
    double *want = to_d(c, m);
    float *d = put(x, m);
    O->rope(X, rows, seq, pos0, heads, dim, THETA, 1, d);
    float *got = get(d, m);
    CHECK(near("rope pos0", got, want, m, TOL));
    drop(d, m);
    free(x), free(c), free(want), free(got);
    sc_backend_free(cpu);
}

TEST(attention_past)
{
    rope_pos0_one(12, 6, 5, 3, 8);
    rope_pos0_one(4, 1, 600, 2, 4); /* one row a sequence, far along */
    attn_past_one(2, 3, 4, 4, 2, 8);
    attn_past_one(1, 1, 9, 3, 3, 6);    /* one query: the last position */
    attn_past_one(1, 40, 110, 2, 1, 4); /* a row of scores longer than a block */
}

TEST(attention)
{
    attn_one((shape){2, 7, 4, 2, 8});
    attn_one((shape){2, 1, 3, 3, 6});  /* heads == kv_heads, seq 1 */
    attn_one((shape){1, 150, 2, 1, 4}); /* a row of scores longer than a block */
}

/* ---- SwiGLU ---- */

typedef struct swiglu_case {
    size_t n;
    double *g, *u, *w;
} swiglu_case;

static double swiglu_ref_loss(const void *arg)
{
    const swiglu_case *c = arg;
    double l = 0;
    for (size_t i = 0; i < c->n; i++)
        l += silu(c->g[i]) * c->u[i] * c->w[i];
    return l;
}

static double swiglu_gpu_loss(const swiglu_case *c, const float *g, const float *u)
{
    float *dg = put(g, c->n), *du = put(u, c->n), *da = garbage(c->n);
    O->swiglu_fwd(X, c->n, dg, du, da);
    float *a = get(da, c->n);
    double l = dotf(a, c->w, c->n);
    free(a);
    drop(dg, c->n);
    drop(du, c->n);
    drop(da, c->n);
    return l;
}

TEST(swiglu)
{
    size_t n = 1003;
    float *g = rand_host(n, 6), *u = rand_host(n, 1), *w = rand_host(n, 1);
    swiglu_case c = {n, to_d(g, n), to_d(u, n), to_d(w, n)};
    double *a = malloc(n * 8), *gu = malloc(n * 8), *gg = malloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        a[i] = silu(c.g[i]) * c.u[i];
        gu[i] = c.w[i] * silu(c.g[i]);
        gg[i] = c.w[i] * c.u[i] * dsilu(c.g[i]);
    }
    float *dg = put(g, n), *du = put(u, n), *da = garbage(n), *ddu = put(w, n),
          *ddg = garbage(n);
    O->swiglu_fwd(X, n, dg, du, da);
    O->swiglu_bwd(X, n, dg, du, ddu, ddg);
    float *ha = get(da, n), *hu = get(ddu, n), *hg = get(ddg, n);
    CHECK(near("swiglu_fwd", ha, a, n, TOL));
    CHECK(near("swiglu_bwd du", hu, gu, n, TOL));
    CHECK(near("swiglu_bwd dg", hg, gg, n, TOL));
    CHECK(O->sync(X) == SC_OK);
    CHECK(fd_ok("swiglu dg", c.g, n, gg, swiglu_ref_loss, &c));
    CHECK(fd_ok("swiglu du", c.u, n, gu, swiglu_ref_loss, &c));
    float *vg = rand_host(n, 1), *vu = rand_host(n, 1);
    float *gp = shift(g, vg, n, DIR_H), *gm = shift(g, vg, n, -DIR_H),
          *up = shift(u, vu, n, DIR_H), *um = shift(u, vu, n, -DIR_H);
    double want = 0;
    for (size_t i = 0; i < n; i++)
        want += (double)hg[i] * vg[i] + (double)hu[i] * vu[i];
    CHECK(dir_ok("swiglu", swiglu_gpu_loss(&c, gp, up), swiglu_gpu_loss(&c, gm, um), want));
    float *dev[] = {dg, du, da, ddu, ddg};
    for (int i = 0; i < 5; i++)
        drop(dev[i], n);
    void *host[] = {g, u, w, c.g, c.u, c.w, a, gu, gg, ha, hu, hg, vg, vu, gp, gm, up, um};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

/* A bad shape fails the instance (sticky), in one line naming the slot. */
TEST(bad_shapes)
{
    struct { const char *slot; } want[] = {{"attn_fwd"}, {"rope"}, {"rmsnorm_fwd"}};
    for (int i = 0; i < 3; i++) {
        sc_backend *be = NULL;
        char err[256];
        CHECK(sc_backend_open("cuda", 0, 0, &be, err, sizeof err) == SC_OK);
        if (!be)
            return;
        if (i == 0)
            be->ops->attn_fwd(be->ctx, 1, 4, 0, 3, 2, 8, NULL, NULL, NULL, NULL, NULL);
        else if (i == 1)
            be->ops->rope(be->ctx, 4, 4, 0, 2, 5, THETA, 1, NULL);
        else
            be->ops->rmsnorm_fwd(be->ctx, 4, 0, NULL, NULL, 1e-5f, NULL, NULL);
        CHECK(be->ops->sync(be->ctx) == SC_ERR_RUNTIME);
        CHECK_STR(be->ops->errmsg(be->ctx), want[i].slot);
        CHECK(strchr(be->ops->errmsg(be->ctx), '\n') == NULL);
        sc_backend_free(be);
    }
}

int main(void)
{
    char info[256];
    int n, skip = gpu_skip("decoder-cuda", &n, info, sizeof info);
    if (skip >= 0)
        return skip;
    char err[256];
    if (sc_backend_open("cuda", 0, 0, &gpu, err, sizeof err) != SC_OK) {
        printf("decoder-cuda: 0 passed, 1 failed (cannot open the backend: %s)\n", err);
        return 1;
    }
    if (!O->rmsnorm_fwd || !O->rmsnorm_bwd || !O->rmsnorm_wgrad || !O->rope || !O->attn_fwd ||
        !O->attn_bwd || !O->swiglu_fwd || !O->swiglu_bwd) {
        printf("decoder-cuda: 0 passed, 1 failed (the cuda backend lacks the decoder's slots)\n");
        return 1;
    }
    RUN(rmsnorm);
    RUN(rope);
    RUN(attention);
    RUN(attention_past);
    RUN(swiglu);
    RUN(bad_shapes);
    sc_backend_free(gpu);
    return harness_done("decoder-cuda");
}
