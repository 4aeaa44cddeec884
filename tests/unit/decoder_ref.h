/*
 * decoder_ref.h — naive references in double for the decoder's slots
 * (backend.h, "the decoder's layers"): RMSNorm and its gradients, rotary
 * positions (from a first position), causal grouped-query attention and
 * its gradients (with a key/value prefix), SiLU. The
 * cpu backend's test and the cuda backend's test check their slots against
 * these. Header-only; each test file includes it once.
 *
 * Tested by: tests/unit/test_decoder_ops.c and tests/gpu/test_decoder_cuda.c
 * (each reference's gradients against central differences of its forward).
 */
#ifndef SC_DECODER_REF_H
#define SC_DECODER_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* y = x * rstd * g per row of n, rstd = 1 / sqrt(mean x^2 + eps). */
static inline void ref_rms(int rows, int n, const double *x, const double *g, double eps,
                           double *y, double *rstd)
{
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int i = 0; i < n; i++)
            ss += x[r * n + i] * x[r * n + i];
        rstd[r] = 1 / sqrt(ss / n + eps);
        for (int i = 0; i < n; i++)
            y[r * n + i] = x[r * n + i] * rstd[r] * g[i];
    }
}

/* dx and dg of L = sum w y. */
static inline void ref_rms_grad(int rows, int n, const double *x, const double *g, double eps,
                                const double *w, double *dx, double *dg)
{
    memset(dg, 0, (size_t)n * sizeof(double));
    for (int r = 0; r < rows; r++) {
        double ss = 0, m = 0;
        for (int i = 0; i < n; i++)
            ss += x[r * n + i] * x[r * n + i];
        double rs = 1 / sqrt(ss / n + eps);
        for (int i = 0; i < n; i++)
            m += x[r * n + i] * rs * g[i] * w[r * n + i];
        for (int i = 0; i < n; i++) {
            dx[r * n + i] = rs * (g[i] * w[r * n + i] - x[r * n + i] * rs * m / n);
            dg[i] += w[r * n + i] * x[r * n + i] * rs;
        }
    }
}

/* Rotary positions in place: row r at position pos0 + r % seq (pos0 > 0:
 * a sequence slice's rows, backend.h's rope pos0), the halves of each
 * head's dim turned by sign * pos * theta^(-2i/dim). */
static inline void ref_rope_at(int rows, int seq, int pos0, int heads, int dim, double theta,
                               int sign, double *x)
{
    int half = dim / 2;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < heads; j++)
            for (int i = 0; i < half; i++) {
                double ang = sign * (pos0 + r % seq) * pow(theta, -2.0 * i / dim);
                double *p = x + ((size_t)r * heads + j) * dim, a = p[i], b = p[i + half];
                p[i] = a * cos(ang) - b * sin(ang);
                p[i + half] = b * cos(ang) + a * sin(ang);
            }
}

static inline void ref_rope(int rows, int seq, int heads, int dim, double theta, int sign,
                            double *x)
{
    ref_rope_at(rows, seq, 0, heads, dim, theta, sign, x);
}

typedef struct shape {
    int batch, seq, heads, kvh, dim;
} shape;

static inline size_t nq(const shape *s) { return (size_t)s->batch * s->seq * s->heads * s->dim; }
static inline size_t nk(const shape *s) { return (size_t)s->batch * s->seq * s->kvh * s->dim; }
static inline size_t np(const shape *s) { return (size_t)s->batch * s->heads * s->seq * s->seq; }

/* Element (b, t, head j, i) of a q-like (heads) or k-like (kvh) tensor. */
#define QI(s, b, t, j, i) ((((size_t)(b) * (s)->seq + (t)) * (s)->heads + (j)) * (s)->dim + (i))
#define KI(s, b, t, j, i) KP(s, 0, b, t, j, i)
#define PI(s, b, j, t, u) PP(s, 0, b, j, t, u)

/* With a key/value prefix (backend.h's attention past): the s->seq queries
 * of each sequence at positions past.., over past + s->seq keys and values
 * (k, v: past + seq rows a sequence); p is seq x (past + seq) a (sequence,
 * head). past 0: the whole causal attention. */
#define KP(s, P, b, t, j, i) \
    ((((size_t)(b) * ((s)->seq + (P)) + (t)) * (s)->kvh + (j)) * (s)->dim + (i))
#define PP(s, P, b, j, t, u) \
    ((((size_t)(b) * (s)->heads + (j)) * (s)->seq + (t)) * ((s)->seq + (P)) + (u))

/* Causal attention: p (softmax, 0 above the diagonal) and o. */
static inline void ref_attn_past(const shape *s, int past, const double *q, const double *k,
                                 const double *v, double *p, double *o)
{
    int G = s->heads / s->kvh, kn = past + s->seq;
    double sc = 1 / sqrt((double)s->dim);
    for (int b = 0; b < s->batch; b++)
        for (int j = 0; j < s->heads; j++)
            for (int t = 0; t < s->seq; t++) {
                double *pr = p + PP(s, past, b, j, t, 0), mx = -INFINITY, sum = 0;
                for (int u = 0; u < kn; u++) {
                    double d = 0;
                    for (int i = 0; i < s->dim; i++)
                        d += q[QI(s, b, t, j, i)] * k[KP(s, past, b, u, j / G, i)];
                    pr[u] = d * sc;
                    if (u <= past + t)
                        mx = fmax(mx, pr[u]);
                }
                for (int u = 0; u < kn; u++)
                    sum += u <= past + t ? exp(pr[u] - mx) : 0;
                for (int u = 0; u < kn; u++)
                    pr[u] = u <= past + t ? exp(pr[u] - mx) / sum : 0;
                for (int i = 0; i < s->dim; i++) {
                    double acc = 0;
                    for (int u = 0; u <= past + t; u++)
                        acc += pr[u] * v[KP(s, past, b, u, j / G, i)];
                    o[QI(s, b, t, j, i)] = acc;
                }
            }
}

static inline void ref_attn(const shape *s, const double *q, const double *k, const double *v,
                            double *p, double *o)
{
    ref_attn_past(s, 0, q, k, v, p, o);
}

/* dq, dk, dv of L = sum w o (p: the forward's; dk, dv past + seq rows a
 * sequence). */
static inline void ref_attn_past_grad(const shape *s, int past, const double *q,
                                      const double *k, const double *v, const double *p,
                                      const double *w, double *dq, double *dk, double *dv)
{
    int G = s->heads / s->kvh, kn = past + s->seq;
    double sc = 1 / sqrt((double)s->dim);
    size_t nkp = (size_t)s->batch * kn * s->kvh * s->dim;
    double *ds = malloc((size_t)kn * sizeof(double));
    memset(dq, 0, nq(s) * sizeof(double));
    memset(dk, 0, nkp * sizeof(double));
    memset(dv, 0, nkp * sizeof(double));
    for (int b = 0; b < s->batch; b++)
        for (int j = 0; j < s->heads; j++)
            for (int t = 0; t < s->seq; t++) {
                const double *pr = p + PP(s, past, b, j, t, 0);
                double dsum = 0;
                for (int u = 0; u <= past + t; u++) {
                    double dp = 0;
                    for (int i = 0; i < s->dim; i++) {
                        dp += w[QI(s, b, t, j, i)] * v[KP(s, past, b, u, j / G, i)];
                        dv[KP(s, past, b, u, j / G, i)] += pr[u] * w[QI(s, b, t, j, i)];
                    }
                    ds[u] = dp;
                    dsum += pr[u] * dp;
                }
                for (int u = 0; u <= past + t; u++) {
                    double d = pr[u] * (ds[u] - dsum) * sc;
                    for (int i = 0; i < s->dim; i++) {
                        dq[QI(s, b, t, j, i)] += d * k[KP(s, past, b, u, j / G, i)];
                        dk[KP(s, past, b, u, j / G, i)] += d * q[QI(s, b, t, j, i)];
                    }
                }
            }
    free(ds);
}

/* dq, dk, dv of L = sum w o (p: the forward's). */
static inline void ref_attn_grad(const shape *s, const double *q, const double *k,
                                 const double *v, const double *p, const double *w, double *dq,
                                 double *dk, double *dv)
{
    ref_attn_past_grad(s, 0, q, k, v, p, w, dq, dk, dv);
}

/* SiLU and its derivative (swiglu: a = silu(gate) up). */
static inline double silu(double z) { return z / (1 + exp(-z)); }
static inline double dsilu(double z)
{
    double s = 1 / (1 + exp(-z));
    return s * (1 + z * (1 - s));
}

#endif
