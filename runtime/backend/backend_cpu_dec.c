/*
 * backend_cpu_dec.c — the decoder's slots of the cpu backend
 * (backend_cpu_dec.h, backend.h): plain loops in a fixed order.
 *
 * Attention is eager: the softmax probabilities p of every (sequence,
 * head) are written for the backward, which recomputes nothing. A query
 * head j reads KV head j / (heads / kv_heads); the KV heads' gradients sum
 * over their query heads in head order.
 */
#include "backend_cpu_dec.h"

#include <math.h>
#include <string.h>

void sc_cpu_rmsnorm_fwd(void *ctx, int rows, int n, const float *x, const float *g, float eps,
                        float *y, float *rstd)
{
    (void)ctx;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n;
        double ss = 0;
        for (int i = 0; i < n; i++)
            ss += (double)xr[i] * xr[i];
        float rs = (float)(1.0 / sqrt(ss / n + (double)eps));
        rstd[r] = rs;
        for (int i = 0; i < n; i++)
            yr[i] = xr[i] * rs * g[i];
    }
}

void sc_cpu_rmsnorm_bwd(void *ctx, int rows, int n, const float *x, const float *g,
                        const float *rstd, const float *dy, float beta, float *dx)
{
    (void)ctx;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n, *dyr = dy + (size_t)r * n;
        float *dxr = dx + (size_t)r * n, rs = rstd[r];
        double dot = 0; /* sum of xh g dy */
        for (int i = 0; i < n; i++)
            dot += (double)(xr[i] * rs) * (double)(g[i] * dyr[i]);
        float mean = (float)(dot / n);
        for (int i = 0; i < n; i++) {
            float v = rs * (g[i] * dyr[i] - xr[i] * rs * mean);
            dxr[i] = beta == 0 ? v : beta * dxr[i] + v;
        }
    }
}

void sc_cpu_rmsnorm_wgrad(void *ctx, int rows, int n, const float *x, const float *rstd,
                          const float *dy, float *dg)
{
    (void)ctx;
    for (int i = 0; i < n; i++) {
        double s = 0; /* over rows, in row order */
        for (int r = 0; r < rows; r++)
            s += (double)(dy[(size_t)r * n + i] * x[(size_t)r * n + i] * rstd[r]);
        dg[i] += (float)s;
    }
}

void sc_cpu_rope(void *ctx, int rows, int seq, int pos0, int heads, int dim, float theta,
                 int sign, float *x)
{
    (void)ctx;
    int half = dim / 2;
    for (int r = 0; r < rows; r++) {
        int t = pos0 + r % seq;
        for (int i = 0; i < half; i++) {
            double ang = sign * (double)t * pow((double)theta, -2.0 * i / dim);
            float c = (float)cos(ang), s = (float)sin(ang);
            for (int j = 0; j < heads; j++) {
                float *xh = x + ((size_t)r * heads + j) * dim;
                float a = xh[i], b = xh[i + half];
                xh[i] = a * c - b * s;
                xh[i + half] = b * c + a * s;
            }
        }
    }
}

static float dotf(const float *a, const float *b, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

void sc_cpu_attn_fwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads,
                     int dim, const float *q, const float *k, const float *v, float *p, float *o)
{
    (void)ctx;
    int grp = heads / kv_heads, kn = past + seq;
    size_t qw = (size_t)heads * dim, kw = (size_t)kv_heads * dim;
    float scale = (float)(1.0 / sqrt((double)dim));
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < heads; j++) {
            int kh = j / grp;
            for (int t = 0; t < seq; t++) {
                size_t r = (size_t)b * seq + t;
                int last = past + t; /* the query's position: keys 0 .. last */
                const float *qr = q + r * qw + (size_t)j * dim;
                float *pr = p + (((size_t)b * heads + j) * seq + t) * kn, mx = -INFINITY;
                for (int u = 0; u <= last; u++) {
                    pr[u] = dotf(qr, k + ((size_t)b * kn + u) * kw + (size_t)kh * dim, dim) *
                            scale;
                    mx = pr[u] > mx ? pr[u] : mx;
                }
                double sum = 0;
                for (int u = 0; u <= last; u++) {
                    pr[u] = expf(pr[u] - mx);
                    sum += pr[u];
                }
                float inv = (float)(1.0 / sum);
                for (int u = 0; u <= last; u++)
                    pr[u] *= inv;
                for (int u = last + 1; u < kn; u++)
                    pr[u] = 0;
                float *orow = o + r * qw + (size_t)j * dim;
                memset(orow, 0, (size_t)dim * sizeof(float));
                for (int u = 0; u <= last; u++) {
                    const float *vr = v + ((size_t)b * kn + u) * kw + (size_t)kh * dim;
                    for (int i = 0; i < dim; i++)
                        orow[i] += pr[u] * vr[i];
                }
            }
        }
}

/* One (sequence, head), row by row: dv += p^T dout; dp = dout v^T;
 * ds = p (dp - sum_u p dp) (written over p); dq = scale ds k;
 * dk += scale ds^T q. dp is computed twice (for the row's sum, then for
 * ds) rather than kept: no scratch. */
static void attn_bwd_head(int b, int j, int seq, int past, int heads, int kv_heads, int dim,
                          const float *q, const float *k, const float *v, float *p,
                          const float *dout, float *dq, float *dk, float *dv)
{
    int kh = j / (heads / kv_heads), kn = past + seq;
    size_t qw = (size_t)heads * dim, kw = (size_t)kv_heads * dim;
    float scale = (float)(1.0 / sqrt((double)dim));
    for (int t = 0; t < seq; t++) {
        size_t r = (size_t)b * seq + t;
        int last = past + t;
        const float *dor = dout + r * qw + (size_t)j * dim, *qr = q + r * qw + (size_t)j * dim;
        float *pr = p + (((size_t)b * heads + j) * seq + t) * kn;
        float *dqr = dq + r * qw + (size_t)j * dim;
        double rs = 0;
        for (int u = 0; u <= last; u++) {
            size_t ku = ((size_t)b * kn + u) * kw + (size_t)kh * dim;
            float *dvr = dv + ku;
            for (int i = 0; i < dim; i++)
                dvr[i] += pr[u] * dor[i];
            rs += (double)(pr[u] * dotf(dor, v + ku, dim));
        }
        float rsf = (float)rs;
        memset(dqr, 0, (size_t)dim * sizeof(float));
        for (int u = 0; u <= last; u++) {
            size_t ku = ((size_t)b * kn + u) * kw + (size_t)kh * dim;
            float ds = pr[u] * (dotf(dor, v + ku, dim) - rsf);
            pr[u] = ds;
            const float *kr = k + ku;
            float *dkr = dk + ku, sd = scale * ds;
            for (int i = 0; i < dim; i++) {
                dqr[i] += sd * kr[i];
                dkr[i] += sd * qr[i];
            }
        }
    }
}

void sc_cpu_attn_bwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads,
                     int dim, const float *q, const float *k, const float *v, float *p,
                     const float *dout, float *dq, float *dk, float *dv)
{
    (void)ctx;
    size_t kn = (size_t)batch * (size_t)(past + seq) * kv_heads * dim;
    memset(dk, 0, kn * sizeof(float));
    memset(dv, 0, kn * sizeof(float));
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < heads; j++)
            attn_bwd_head(b, j, seq, past, heads, kv_heads, dim, q, k, v, p, dout, dq, dk, dv);
}

void sc_cpu_swiglu_fwd(void *ctx, size_t n, const float *g, const float *u, float *a)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        a[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void sc_cpu_swiglu_bwd(void *ctx, size_t n, const float *g, const float *u, float *du,
                       float *dg)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        float sg = 1.0f / (1.0f + expf(-g[i])), da = du[i];
        du[i] = da * (g[i] * sg);
        dg[i] = da * u[i] * (sg * (1.0f + g[i] * (1.0f - sg)));
    }
}
