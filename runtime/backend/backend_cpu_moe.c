/*
 * backend_cpu_moe.c — the mixture-of-experts slots of the cpu backend
 * (backend_cpu_moe.h, backend.h): the router (softmax over the experts,
 * top-k, the k weights renormalised: Hugging Face Mixtral's rule), the
 * dispatch of each token's k copies to its experts' rows and the weighted
 * combine of what the experts return. No token is dropped.
 */
#include "backend_cpu_moe.h"

#include <math.h>
#include <string.h>

/* The sum of row r's k chosen probabilities, in double (forward and
 * backward take the same). */
static double chosen_sum(const float *p, const int32_t *sel, int k)
{
    double s = 0;
    for (int i = 0; i < k; i++)
        s += p[sel[i]];
    return s;
}

/* Row r: softmax in place, then the k largest in order (strictly larger
 * wins: ties go to the lower expert) and their renormalised weights. */
static void route_row(int E, int k, float *p, int32_t *sel, float *wt)
{
    float mx = -INFINITY;
    for (int e = 0; e < E; e++)
        mx = p[e] > mx ? p[e] : mx;
    double sum = 0;
    for (int e = 0; e < E; e++) {
        p[e] = expf(p[e] - mx);
        sum += p[e];
    }
    float inv = (float)(1.0 / sum);
    for (int e = 0; e < E; e++)
        p[e] *= inv;
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int j = 0; j < i; j++)
                taken |= sel[j] == e;
            if (!taken && (best < 0 || p[e] > p[best]))
                best = e;
        }
        sel[i] = best;
    }
    double s = chosen_sum(p, sel, k);
    for (int i = 0; i < k; i++)
        wt[i] = (float)(p[sel[i]] / s);
}

void sc_cpu_moe_route(void *ctx, int rows, int E, int k, float *prob, int32_t *sel, float *wt,
                      int32_t *pos, int *count)
{
    (void)ctx;
    for (int r = 0; r < rows; r++)
        route_row(E, k, prob + (size_t)r * E, sel + (size_t)r * k, wt + (size_t)r * k);
    /* The gathered order: expert by expert, each expert's rows in row
     * order: a copy's rank among its expert's, then the experts before. */
    memset(count, 0, (size_t)E * sizeof(int));
    for (size_t j = 0; j < (size_t)rows * k; j++)
        pos[j] = count[sel[j]]++;
    for (size_t j = 0; j < (size_t)rows * k; j++)
        for (int e = 0; e < sel[j]; e++)
            pos[j] += count[e];
}

void sc_cpu_moe_route_bwd(void *ctx, int rows, int E, int k, const float *prob,
                          const int32_t *sel, const float *wt, const float *dwt, float *dlogits)
{
    (void)ctx;
    for (int r = 0; r < rows; r++) {
        const float *p = prob + (size_t)r * E, *w = wt + (size_t)r * k, *dw = dwt + (size_t)r * k;
        const int32_t *sr = sel + (size_t)r * k;
        float *dl = dlogits + (size_t)r * E;
        float s = (float)chosen_sum(p, sr, k), dot = 0, pdp = 0;
        for (int i = 0; i < k; i++)
            dot += w[i] * dw[i];
        memset(dl, 0, (size_t)E * sizeof(float));
        for (int i = 0; i < k; i++) { /* dp of the chosen (0 elsewhere), in dl for now */
            dl[sr[i]] = (dw[i] - dot) / s;
            pdp += p[sr[i]] * dl[sr[i]];
        }
        for (int e = 0; e < E; e++)
            dl[e] = p[e] * (dl[e] - pdp);
    }
}

void sc_cpu_moe_gather(void *ctx, int rows, int k, int n, const int32_t *pos, const float *x,
                       float *xg)
{
    (void)ctx;
    for (size_t j = 0; j < (size_t)rows * k; j++)
        memcpy(xg + (size_t)pos[j] * n, x + j / (size_t)k * n, (size_t)n * sizeof(float));
}

void sc_cpu_moe_combine(void *ctx, int rows, int k, int n, const int32_t *pos, const float *wt,
                        const float *yg, float beta, float *y)
{
    (void)ctx;
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * n;
        for (int c = 0; c < n; c++) {
            float acc = beta == 0 ? 0.0f : beta * yr[c];
            for (int i = 0; i < k; i++) {
                size_t j = (size_t)r * k + i;
                float v = yg[(size_t)pos[j] * n + c];
                acc += wt ? wt[j] * v : v;
            }
            yr[c] = acc;
        }
    }
}

void sc_cpu_moe_combine_bwd(void *ctx, int rows, int k, int n, const int32_t *pos,
                            const float *wt, const float *yg, const float *dy, float *dyg,
                            float *dwt)
{
    (void)ctx;
    for (size_t j = 0; j < (size_t)rows * k; j++) {
        const float *dr = dy + j / (size_t)k * n, *gr = yg + (size_t)pos[j] * n;
        float *dg = dyg + (size_t)pos[j] * n;
        double dot = 0;
        for (int c = 0; c < n; c++) {
            dot += (double)dr[c] * gr[c];
            dg[c] = wt[j] * dr[c];
        }
        dwt[j] = (float)dot;
    }
}
