/*
 * test_moe_ops.c — the cpu backend's mixture-of-experts slots
 * (runtime/backend/backend_cpu_moe.c, backend.h): the router against a
 * naive reference in double (softmax, a sort for the top-k, equal
 * probabilities to the lower expert, renormalised weights), the layout of
 * the gathered copies, and each backward against central differences of
 * a double reference of its forward. The loss of a check is sum(w * out)
 * for fixed random w, so the gradient given to a backward slot is w.
 */
#include "backend/backend.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define FD_EPS 1e-4

enum { R_ = 10, E_ = 5, K_ = 2, N_ = 7 };

static sc_backend *be;
static const struct sc_backend_ops *O;

static double urand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return ((*s >> 8) & 0xffffff) / (double)0x1000000 * 2 - 1;
}

static void frand(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)urand(&seed);
}

/* The reference router of one row: softmax in double, the k largest by a
 * selection that keeps the lower expert among equals, the weights. */
static void route_ref(const double *l, double *p, int *sel, double *wt)
{
    double mx = l[0], s = 0, c = 0;
    for (int e = 1; e < E_; e++)
        mx = l[e] > mx ? l[e] : mx;
    for (int e = 0; e < E_; e++)
        s += p[e] = exp(l[e] - mx);
    for (int e = 0; e < E_; e++)
        p[e] /= s;
    for (int i = 0; i < K_; i++) {
        int best = -1;
        for (int e = 0; e < E_; e++) {
            int taken = 0;
            for (int j = 0; j < i; j++)
                taken |= sel[j] == e;
            if (!taken && (best < 0 || p[e] > p[best]))
                best = e;
        }
        sel[i] = best;
        c += p[best];
    }
    for (int i = 0; i < K_; i++)
        wt[i] = p[sel[i]] / c;
}

TEST(route)
{
    float logit[R_ * E_], prob[R_ * E_], wt[R_ * K_];
    int32_t sel[R_ * K_], pos[R_ * K_];
    int count[E_];
    frand(logit, R_ * E_, 7);
    logit[3 * E_ + 1] = logit[3 * E_ + 4] = 3.0f; /* a tie at the top of row 3 */
    memcpy(prob, logit, sizeof prob);
    O->moe_route(be->ctx, R_, E_, K_, prob, sel, wt, pos, count);
    CHECK(sel[3 * K_] == 1 && sel[3 * K_ + 1] == 4);
    int seen[R_ * K_] = {0}, total = 0;
    for (int r = 0; r < R_; r++) {
        double l[E_], p[E_], w[K_];
        int s[K_];
        for (int e = 0; e < E_; e++)
            l[e] = logit[r * E_ + e];
        route_ref(l, p, s, w);
        for (int e = 0; e < E_; e++)
            CHECK(fabs(prob[r * E_ + e] - p[e]) < 1e-6);
        for (int i = 0; i < K_; i++) {
            CHECK(sel[r * K_ + i] == s[i]);
            CHECK(fabs(wt[r * K_ + i] - w[i]) < 1e-6);
            seen[pos[r * K_ + i]]++;
        }
    }
    /* pos: a permutation of the R k copies, expert by expert, rows in order */
    for (int j = 0; j < R_ * K_; j++)
        CHECK(seen[j] == 1);
    for (int e = 0; e < E_; e++) {
        int prev = -1;
        for (int j = 0; j < R_ * K_; j++) {
            if (sel[j] != e)
                continue;
            CHECK(pos[j] >= total && pos[j] < total + count[e] && pos[j] > prev);
            prev = pos[j];
        }
        total += count[e];
    }
    CHECK(total == R_ * K_);
}

/* The loss of route_bwd's check: sum of w * wt over the rows, in double,
 * the selection held (the top-k has no gradient). */
static double Wr[R_ * K_], L0[R_ * E_];
static int32_t Sel[R_ * K_];

static double loss_route(void)
{
    double L = 0;
    for (int r = 0; r < R_; r++) {
        double mx = L0[r * E_], s = 0, c = 0, p[E_];
        for (int e = 1; e < E_; e++)
            mx = fmax(mx, L0[r * E_ + e]);
        for (int e = 0; e < E_; e++)
            s += p[e] = exp(L0[r * E_ + e] - mx);
        for (int i = 0; i < K_; i++)
            c += p[Sel[r * K_ + i]] / s;
        for (int i = 0; i < K_; i++)
            L += Wr[r * K_ + i] * p[Sel[r * K_ + i]] / s / c;
    }
    return L;
}

TEST(route_bwd)
{
    float logit[R_ * E_], prob[R_ * E_], wt[R_ * K_], dwt[R_ * K_], dl[R_ * E_];
    int32_t pos[R_ * K_];
    int count[E_];
    frand(logit, R_ * E_, 11);
    frand(dwt, R_ * K_, 12);
    memcpy(prob, logit, sizeof prob);
    O->moe_route(be->ctx, R_, E_, K_, prob, Sel, wt, pos, count);
    O->moe_route_bwd(be->ctx, R_, E_, K_, prob, Sel, wt, dwt, dl);
    for (int i = 0; i < R_ * K_; i++)
        Wr[i] = dwt[i];
    double err = 0, mx = 0;
    for (int i = 0; i < R_ * E_; i++)
        L0[i] = logit[i];
    for (int i = 0; i < R_ * E_; i++) {
        double x = L0[i];
        L0[i] = x + FD_EPS;
        double lp = loss_route();
        L0[i] = x - FD_EPS;
        double lm = loss_route();
        L0[i] = x;
        double fd = (lp - lm) / (2 * FD_EPS);
        err = fmax(err, fabs(dl[i] - fd));
        mx = fmax(mx, fabs(fd));
    }
    CHECK(mx > 0 && err / mx < 1e-4);
}

/* gather, combine and combine's backward on a fixed routing */
static float Xg[R_ * K_ * N_], Wt[R_ * K_], Dy[R_ * N_];
static int32_t Pos[R_ * K_];

static double loss_combine(void)
{
    double L = 0;
    for (int r = 0; r < R_; r++)
        for (int c = 0; c < N_; c++) {
            double y = 0;
            for (int i = 0; i < K_; i++)
                y += (double)Wt[r * K_ + i] * Xg[Pos[r * K_ + i] * N_ + c];
            L += Dy[r * N_ + c] * y;
        }
    return L;
}

TEST(dispatch_combine)
{
    float logit[R_ * E_], x[R_ * N_], xg[R_ * K_ * N_], y[R_ * N_], y0[R_ * N_];
    int32_t sel[R_ * K_];
    int count[E_];
    frand(logit, R_ * E_, 21);
    frand(x, R_ * N_, 22);
    frand(Dy, R_ * N_, 23);
    frand(y0, R_ * N_, 24);
    O->moe_route(be->ctx, R_, E_, K_, logit, sel, Wt, Pos, count);
    O->moe_gather(be->ctx, R_, K_, N_, Pos, x, xg);
    for (int j = 0; j < R_ * K_; j++) /* every copy is its row */
        CHECK(memcmp(xg + Pos[j] * N_, x + j / K_ * N_, N_ * sizeof(float)) == 0);
    frand(Xg, R_ * K_ * N_, 25);
    for (int beta = 0; beta <= 1; beta++) {
        memcpy(y, y0, sizeof y);
        O->moe_combine(be->ctx, R_, K_, N_, Pos, Wt, Xg, (float)beta, y);
        double err = 0;
        for (int r = 0; r < R_; r++)
            for (int c = 0; c < N_; c++) {
                double ref = beta * (double)y0[r * N_ + c];
                for (int i = 0; i < K_; i++)
                    ref += (double)Wt[r * K_ + i] * Xg[Pos[r * K_ + i] * N_ + c];
                err = fmax(err, fabs(y[r * N_ + c] - ref));
            }
        CHECK(err < 1e-5);
    }
    /* weights 1: the dispatch's backward sums each row's copies */
    O->moe_combine(be->ctx, R_, K_, N_, Pos, NULL, xg, 0.0f, y);
    for (int i = 0; i < R_ * N_; i++)
        CHECK(fabs(y[i] - K_ * x[i]) < 1e-6);
    /* combine's backward against differences of loss_combine in yg and wt */
    float dyg[R_ * K_ * N_], dwt[R_ * K_];
    O->moe_combine_bwd(be->ctx, R_, K_, N_, Pos, Wt, Xg, Dy, dyg, dwt);
    double err = 0;
    for (int i = 0; i < R_ * K_ * N_ + R_ * K_; i++) {
        float *v = i < R_ * K_ * N_ ? Xg + i : Wt + (i - R_ * K_ * N_);
        float g = i < R_ * K_ * N_ ? dyg[i] : dwt[i - R_ * K_ * N_], v0 = *v;
        *v = v0 + 0.01f;
        double lp = loss_combine();
        *v = v0 - 0.01f;
        double lm = loss_combine();
        *v = v0;
        double fd = (lp - lm) / ((double)(v0 + 0.01f) - (double)(v0 - 0.01f));
        err = fmax(err, fabs(g - fd));
    }
    CHECK(err < 1e-4);
}

int main(void)
{
    char err[256];
    if (sc_backend_cpu_open(0, &be, err, sizeof err) != SC_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    O = be->ops;
    RUN(route);
    RUN(route_bwd);
    RUN(dispatch_combine);
    sc_backend_free(be);
    return harness_done("moe_ops");
}
