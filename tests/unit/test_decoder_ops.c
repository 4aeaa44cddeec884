/*
 * test_decoder_ops.c — the cpu backend's decoder slots
 * (runtime/backend/backend_cpu_dec.c, backend.h): each forward against a
 * naive reference in double (decoder_ref.h, shared with the cuda backend's
 * test), each backward against finite differences of that reference
 * (central, in double), through the backend's table. The
 * loss of a check is sum(w * out) for fixed random w, so the gradient
 * given to a backward slot is w. Attention also with a key/value prefix
 * (past: the last queries of each sequence over all its keys).
 */
#include "backend/backend.h"
#include "decoder_ref.h"
#include "harness.h"

#include <stdlib.h>

#define FD_EPS 1e-3

static sc_backend *be;
static const struct sc_backend_ops *O;

static double urand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return ((*s >> 8) & 0xffffff) / (double)0x1000000 * 2 - 1;
}

static float *frand(size_t n, unsigned seed)
{
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = (float)urand(&seed);
    return x;
}

/* max|a - b| / max|b| over n */
static double relerr(const float *a, const double *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
    }
    return m > 0 ? d / m : d;
}

/* ---- naive references in double: decoder_ref.h ---- */

/* The problem the loss functions read: inputs as doubles, the weights w. */
enum { B_ = 2, S_ = 5, H_ = 4, KV_ = 2, D_ = 6, N_ = 12 };
static double X[3][B_ * S_ * H_ * D_], Wt[B_ * S_ * H_ * D_];

static const shape SH = {B_, S_, H_, KV_, D_};

/* sum Wt y of RMSNorm's reference. */
static double loss_rmsnorm(const double *x, const double *g, int rows, int n, double eps)
{
    static double y[B_ * S_ * N_], rs[B_ * S_];
    ref_rms(rows, n, x, g, eps, y, rs);
    double L = 0;
    for (int i = 0; i < rows * n; i++)
        L += Wt[i] * y[i];
    return L;
}

static double loss_attn(void)
{
    static double o[B_ * S_ * H_ * D_], p[B_ * H_ * S_ * S_];
    ref_attn(&SH, X[0], X[1], X[2], p, o);
    double L = 0;
    for (int i = 0; i < B_ * S_ * H_ * D_; i++)
        L += Wt[i] * o[i];
    return L;
}

/* Central differences of loss() in X[a][0..n). */
static void fd_grad(double (*loss)(void), int a, int n, double *g)
{
    for (int i = 0; i < n; i++) {
        double x0 = X[a][i];
        X[a][i] = x0 + FD_EPS;
        double lp = loss();
        X[a][i] = x0 - FD_EPS;
        double lm = loss();
        X[a][i] = x0;
        g[i] = (lp - lm) / (2 * FD_EPS);
    }
}

static void to_double(const float *f, double *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
}

/* ---- the checks ---- */

static double RN_eps = 1e-5;
static double loss_rn_x(void) { return loss_rmsnorm(X[0], X[1], B_ * S_, N_, RN_eps); }

TEST(rmsnorm)
{
    int rows = B_ * S_, n = N_;
    size_t rn = (size_t)rows * n;
    float *x = frand(rn, 1), *g = frand((size_t)n, 2), *w = frand(rn, 3);
    float *y = malloc(rn * sizeof(float)), *rstd = malloc((size_t)rows * sizeof(float));
    float *dx = malloc(rn * sizeof(float)), *dg = calloc((size_t)n, sizeof(float));
    O->rmsnorm_fwd(be->ctx, rows, n, x, g, (float)RN_eps, y, rstd);
    to_double(x, X[0], rn);
    to_double(g, X[1], (size_t)n);
    to_double(w, Wt, rn);
    double yr[B_ * S_ * N_], rsr[B_ * S_], gx[B_ * S_ * N_], gg[N_];
    ref_rms(rows, n, X[0], X[1], RN_eps, yr, rsr);
    CHECK(relerr(y, yr, rn) < 1e-6);
    CHECK(relerr(rstd, rsr, (size_t)rows) < 1e-6);
    O->rmsnorm_bwd(be->ctx, rows, n, x, g, rstd, w, 0.0f, dx);
    fd_grad(loss_rn_x, 0, (int)rn, gx);
    CHECK(relerr(dx, gx, rn) < 1e-5);
    /* beta 1 adds to what dx holds */
    for (size_t i = 0; i < rn; i++)
        dx[i] = 1.0f;
    O->rmsnorm_bwd(be->ctx, rows, n, x, g, rstd, w, 1.0f, dx);
    for (size_t i = 0; i < rn; i++)
        gx[i] += 1.0;
    CHECK(relerr(dx, gx, rn) < 1e-5);
    /* wgrad accumulates */
    for (int i = 0; i < n; i++)
        dg[i] = 0.5f;
    O->rmsnorm_wgrad(be->ctx, rows, n, x, rstd, w, dg);
    fd_grad(loss_rn_x, 1, n, gg);
    for (int i = 0; i < n; i++)
        gg[i] += 0.5;
    CHECK(relerr(dg, gg, (size_t)n) < 1e-5);
    free(x), free(g), free(w), free(y), free(rstd), free(dx), free(dg);
}

static double loss_rope(void)
{
    static double y[B_ * S_ * H_ * D_];
    memcpy(y, X[0], sizeof y);
    ref_rope(B_ * S_, S_, H_, D_, 10000.0, 1, y);
    double L = 0;
    for (int i = 0; i < B_ * S_ * H_ * D_; i++)
        L += Wt[i] * y[i];
    return L;
}

TEST(rope)
{
    size_t n = (size_t)B_ * S_ * H_ * D_;
    float *x = frand(n, 4), *w = frand(n, 5);
    double yr[B_ * S_ * H_ * D_], gx[B_ * S_ * H_ * D_];
    to_double(x, X[0], n);
    to_double(w, Wt, n);
    memcpy(yr, X[0], sizeof yr);
    ref_rope(B_ * S_, S_, H_, D_, 10000.0, 1, yr);
    O->rope(be->ctx, B_ * S_, S_, 0, H_, D_, 10000.0f, 1, x);
    CHECK(relerr(x, yr, n) < 1e-6);
    /* sign -1 on the output's gradient is the input's gradient */
    O->rope(be->ctx, B_ * S_, S_, 0, H_, D_, 10000.0f, -1, w);
    fd_grad(loss_rope, 0, (int)n, gx);
    CHECK(relerr(w, gx, n) < 1e-5);
    /* and turns back */
    O->rope(be->ctx, B_ * S_, S_, 0, H_, D_, 10000.0f, -1, x);
    for (size_t i = 0; i < n; i++)
        yr[i] = X[0][i];
    CHECK(relerr(x, yr, n) < 1e-6);
    /* pos0: the last S_ - 2 rows of each sequence at positions 2.., a
     * sequence slice: against the reference from position 2 (ref_rope_at),
     * which is those rows of the whole sequence's rotation */
    int L = S_ - 2, w1 = H_ * D_;
    float *xs = malloc((size_t)B_ * L * w1 * sizeof(float));
    double ys[B_ * S_ * H_ * D_];
    memcpy(yr, X[0], sizeof yr);
    ref_rope(B_ * S_, S_, H_, D_, 10000.0, 1, yr);
    for (int b = 0; b < B_; b++)
        for (int i = 0; i < L * w1; i++) {
            xs[(size_t)b * L * w1 + i] = (float)X[0][((size_t)b * S_ + 2) * w1 + i];
            ys[(size_t)b * L * w1 + i] = X[0][((size_t)b * S_ + 2) * w1 + i];
        }
    ref_rope_at(B_ * L, L, 2, H_, D_, 10000.0, 1, ys);
    O->rope(be->ctx, B_ * L, L, 2, H_, D_, 10000.0f, 1, xs);
    CHECK(relerr(xs, ys, (size_t)B_ * L * w1) < 1e-6);
    for (int b = 0; b < B_; b++) /* the reference: the whole rotation's rows */
        for (int i = 0; i < L * w1; i++)
            CHECK(fabs(ys[(size_t)b * L * w1 + i] - yr[((size_t)b * S_ + 2) * w1 + i]) < 1e-12);
    free(x), free(w), free(xs);
}

TEST(attention)
{
    size_t nq = (size_t)B_ * S_ * H_ * D_, nk = (size_t)B_ * S_ * KV_ * D_;
    size_t np = (size_t)B_ * H_ * S_ * S_;
    float *q = frand(nq, 6), *k = frand(nk, 7), *v = frand(nk, 8), *w = frand(nq, 9);
    float *p = malloc(np * sizeof(float)), *o = malloc(nq * sizeof(float));
    float *dq = malloc(nq * sizeof(float)), *dk = malloc(nk * sizeof(float)),
          *dv = malloc(nk * sizeof(float));
    static double orf[B_ * S_ * H_ * D_], prf[B_ * H_ * S_ * S_], g[B_ * S_ * H_ * D_];
    to_double(q, X[0], nq);
    to_double(k, X[1], nk);
    to_double(v, X[2], nk);
    to_double(w, Wt, nq);
    ref_attn(&SH, X[0], X[1], X[2], prf, orf);
    O->attn_fwd(be->ctx, B_, S_, 0, H_, KV_, D_, q, k, v, p, o);
    CHECK(relerr(o, orf, nq) < 1e-6);
    CHECK(relerr(p, prf, np) < 1e-6);
    for (size_t i = 0; i < nk; i++) /* written, not accumulated */
        dk[i] = dv[i] = 7.0f;
    O->attn_bwd(be->ctx, B_, S_, 0, H_, KV_, D_, q, k, v, p, w, dq, dk, dv);
    fd_grad(loss_attn, 0, (int)nq, g);
    CHECK(relerr(dq, g, nq) < 1e-5);
    fd_grad(loss_attn, 1, (int)nk, g);
    CHECK(relerr(dk, g, nk) < 1e-5);
    fd_grad(loss_attn, 2, (int)nk, g);
    CHECK(relerr(dv, g, nk) < 1e-5);
    free(q), free(k), free(v), free(w), free(p), free(o), free(dq), free(dk), free(dv);
}

/* Rows t >= P of each sequence of x (rows of w floats), into y. */
#define P_ 2
static void last_rows(const double *x, double *y, int w)
{
    for (int b = 0; b < B_; b++)
        for (int t = P_; t < S_; t++)
            for (int i = 0; i < w; i++)
                *y++ = x[((size_t)b * S_ + t) * w + i];
}

/* With a key/value prefix (docs/slices.md#run): the S_ - P_ last queries of
 * each sequence at positions P_.., over all S_ keys; against the rows of
 * the reference with a prefix, it against the rows of the whole
 * attention's, and differences of the loss whose weights on the first P_
 * rows are 0. */
TEST(attention_past)
{
    int L = S_ - P_, qw = H_ * D_;
    size_t nq = (size_t)B_ * S_ * qw, nk = (size_t)B_ * S_ * KV_ * D_, nl = (size_t)B_ * L * qw;
    size_t np = (size_t)B_ * H_ * L * S_;
    float *q = frand(nq, 6), *k = frand(nk, 7), *v = frand(nk, 8), *w = frand(nq, 9);
    float *qs = malloc(nl * sizeof(float)), *ws = malloc(nl * sizeof(float));
    float *p = malloc(np * sizeof(float)), *o = malloc(nl * sizeof(float));
    float *dq = malloc(nl * sizeof(float)), *dk = malloc(nk * sizeof(float)),
          *dv = malloc(nk * sizeof(float));
    static double orf[B_ * S_ * H_ * D_], prf[B_ * H_ * S_ * S_], g[B_ * S_ * H_ * D_],
        sub[B_ * S_ * H_ * D_], psub[B_ * H_ * S_ * S_], qd[B_ * S_ * H_ * D_],
        wd[B_ * S_ * H_ * D_], opast[B_ * S_ * H_ * D_], ppast[B_ * H_ * S_ * S_],
        gq[B_ * S_ * H_ * D_], gk[B_ * S_ * KV_ * D_], gv[B_ * S_ * KV_ * D_];
    for (int b = 0; b < B_; b++)
        for (int t = 0; t < S_; t++)
            for (int i = 0; i < qw; i++) {
                size_t a = ((size_t)b * S_ + t) * qw + i;
                if (t < P_)
                    w[a] = 0; /* the prefix's rows: no query of this call */
                else
                    qs[((size_t)b * L + t - P_) * qw + i] = q[a],
                    ws[((size_t)b * L + t - P_) * qw + i] = w[a];
            }
    to_double(q, X[0], nq);
    to_double(k, X[1], nk);
    to_double(v, X[2], nk);
    to_double(w, Wt, nq);
    /* the reference with a prefix (ref_attn_past), and it against the rows
     * of the whole attention's */
    const shape SL = {B_, L, H_, KV_, D_};
    to_double(qs, qd, nl);
    to_double(ws, wd, nl);
    ref_attn_past(&SL, P_, qd, X[1], X[2], ppast, opast);
    ref_attn(&SH, X[0], X[1], X[2], prf, orf);
    O->attn_fwd(be->ctx, B_, L, P_, H_, KV_, D_, qs, k, v, p, o);
    CHECK(relerr(o, opast, nl) < 1e-6);
    CHECK(relerr(p, ppast, np) < 1e-6);
    last_rows(orf, sub, qw);
    for (size_t i = 0; i < nl; i++)
        CHECK(fabs(opast[i] - sub[i]) < 1e-12);
    for (int bj = 0; bj < B_ * H_; bj++) /* p: rows t >= P_ of each (sequence, head) */
        for (int t = P_; t < S_; t++)
            for (int u = 0; u < S_; u++)
                psub[((size_t)bj * L + t - P_) * S_ + u] = prf[((size_t)bj * S_ + t) * S_ + u];
    for (size_t i = 0; i < np; i++)
        CHECK(fabs(ppast[i] - psub[i]) < 1e-12);
    for (size_t i = 0; i < nk; i++) /* written, not accumulated */
        dk[i] = dv[i] = 7.0f;
    O->attn_bwd(be->ctx, B_, L, P_, H_, KV_, D_, qs, k, v, p, ws, dq, dk, dv);
    ref_attn_past_grad(&SL, P_, qd, X[1], X[2], ppast, wd, gq, gk, gv);
    CHECK(relerr(dq, gq, nl) < 1e-6);
    CHECK(relerr(dk, gk, nk) < 1e-6);
    CHECK(relerr(dv, gv, nk) < 1e-6);
    fd_grad(loss_attn, 0, (int)nq, g);
    last_rows(g, sub, qw);
    CHECK(relerr(dq, sub, nl) < 1e-5);
    fd_grad(loss_attn, 1, (int)nk, g);
    CHECK(relerr(dk, g, nk) < 1e-5);
    fd_grad(loss_attn, 2, (int)nk, g);
    CHECK(relerr(dv, g, nk) < 1e-5);
    free(q), free(k), free(v), free(w), free(qs), free(ws), free(p), free(o);
    free(dq), free(dk), free(dv);
}

static double loss_swiglu(void)
{
    double L = 0;
    for (int i = 0; i < N_; i++)
        L += Wt[i] * silu(X[0][i]) * X[1][i];
    return L;
}

TEST(swiglu)
{
    size_t n = N_;
    float *g = frand(n, 10), *u = frand(n, 11), *w = frand(n, 12);
    float a[N_], dg[N_];
    double ar[N_], gg[N_], gu[N_];
    for (size_t i = 0; i < n; i++)
        g[i] *= 4; /* past silu's bend */
    to_double(g, X[0], n);
    to_double(u, X[1], n);
    to_double(w, Wt, n);
    for (size_t i = 0; i < n; i++)
        ar[i] = silu(X[0][i]) * X[1][i];
    O->swiglu_fwd(be->ctx, n, g, u, a);
    CHECK(relerr(a, ar, n) < 1e-6);
    O->swiglu_bwd(be->ctx, n, g, u, w, dg); /* w: da in, du out */
    fd_grad(loss_swiglu, 0, (int)n, gg);
    fd_grad(loss_swiglu, 1, (int)n, gu);
    CHECK(relerr(dg, gg, n) < 1e-5);
    CHECK(relerr(w, gu, n) < 1e-5);
    free(g), free(u), free(w);
}

int main(void)
{
    char err[256];
    if (sc_backend_cpu_open(0, &be, err, sizeof err) != SC_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    O = be->ops;
    CHECK(O->rmsnorm_fwd && O->rmsnorm_bwd && O->rmsnorm_wgrad && O->rope && O->attn_fwd &&
          O->attn_bwd && O->swiglu_fwd && O->swiglu_bwd);
    RUN(rmsnorm);
    RUN(rope);
    RUN(attention);
    RUN(attention_past);
    RUN(swiglu);
    sc_backend_free(be);
    return harness_done("decoder_ops");
}
