/*
 * backend_cuda_dec.c — the decoder's slots of the cuda backend (backend.h:
 * RMSNorm, rotary positions, causal attention with grouped KV heads,
 * SwiGLU), queued on the instance's compute stream like every other slot.
 *
 * RMSNorm, rotary positions, SwiGLU and the softmaxes are the kernels of
 * cuda_dec_kernels.cu. Attention is eager: its products are cuBLAS calls
 * (float32, CUBLAS_DEFAULT_MATH as for gemm) and the probabilities p stay
 * in memory for the backward. Per sequence b and KV head h, the G = heads /
 * kv_heads query heads of h's group read the same K and V, so each product
 * over the group is one cublasSgemmStridedBatched call: the query heads of
 * a row lie dim floats apart (the batch stride), K and V are shared (stride
 * 0), and the group's p blocks are consecutive (seq x seq apart).
 *
 *   forward:  S = Q K^T / sqrt(dim) into p (every (b, h)); the causal
 *             softmax in place over all rows (one launch); O = P V.
 *   backward, per (b, h): dV = sum over the group of P^T dO (one product a
 *             head: beta 0 for the first, 1 after, so dv is written, never
 *             accumulated across calls); dP = dO V^T into the scratch; dS =
 *             P (dP - rowsum(P dP)) in place over p; dQ = dS K / sqrt(dim);
 *             dK = sum over the group of dS^T Q / sqrt(dim).
 *
 * The products compute the whole seq x seq square; above the diagonal p and
 * dS are 0, so the sums are the causal ones. Everything is deterministic:
 * cuBLAS in a fixed order on one stream, fixed reduction trees.
 */
#include "backend_cuda.h"

#include <math.h>
#include <stdio.h>

/* A bad shape: a sticky failure naming the slot (backend.h's contract
 * has no status to return). */
static int shape_ok(sc_cuda *c, int ok, const char *slot, const char *why)
{
    return ok ? 1 : sc_cuda_fail(c, __FILE__, __LINE__, slot, why);
}

void sc_cuda_dec_rmsnorm_fwd(void *ctx, int rows, int n, const float *x, const float *g,
                             float eps, float *y, float *rstd)
{
    sc_cuda *c = ctx;
    if (shape_ok(c, rows >= 0 && n >= 1, "rmsnorm_fwd", "rows >= 0 and n >= 1 expected") &&
        sc_cuda_ready(c))
        CK(c, sc_cuda_rmsnorm_fwd(c->compute, rows, n, x, g, eps, y, rstd));
}

void sc_cuda_dec_rmsnorm_bwd(void *ctx, int rows, int n, const float *x, const float *g,
                             const float *rstd, const float *dy, float beta, float *dx)
{
    sc_cuda *c = ctx;
    if (shape_ok(c, rows >= 0 && n >= 1, "rmsnorm_bwd", "rows >= 0 and n >= 1 expected") &&
        sc_cuda_ready(c))
        CK(c, sc_cuda_rmsnorm_bwd(c->compute, rows, n, x, g, rstd, dy, beta, dx));
}

void sc_cuda_dec_rmsnorm_wgrad(void *ctx, int rows, int n, const float *x, const float *rstd,
                               const float *dy, float *dg)
{
    sc_cuda *c = ctx;
    if (shape_ok(c, rows >= 0 && n >= 1, "rmsnorm_wgrad", "rows >= 0 and n >= 1 expected") &&
        sc_cuda_ready(c))
        CK(c, sc_cuda_rmsnorm_wgrad(c->compute, rows, n, x, rstd, dy, dg));
}

void sc_cuda_dec_rope(void *ctx, int rows, int seq, int pos0, int heads, int dim, float theta,
                      int sign, float *x)
{
    sc_cuda *c = ctx;
    if (shape_ok(c, rows >= 0 && seq >= 1 && pos0 >= 0 && heads >= 1 && dim >= 2 &&
                        dim % 2 == 0 && (sign == 1 || sign == -1),
                 "rope", "rows >= 0, seq >= 1, pos0 >= 0, heads >= 1, an even dim and sign +-1 "
                 "expected") &&
        sc_cuda_ready(c))
        CK(c, sc_cuda_rope(c->compute, rows, seq, pos0, heads, dim, theta, sign, x));
}

void sc_cuda_dec_swiglu_fwd(void *ctx, size_t n, const float *g, const float *u, float *a)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, sc_cuda_swiglu_fwd(c->compute, n, g, u, a));
}

void sc_cuda_dec_swiglu_bwd(void *ctx, size_t n, const float *g, const float *u, float *du,
                            float *dg)
{
    sc_cuda *c = ctx;
    if (sc_cuda_ready(c))
        CK(c, sc_cuda_swiglu_bwd(c->compute, n, g, u, du, dg));
}

/* ---- attention ---- */

/* count row-major products C_i = alpha op(A_i) op(B_i) + beta C_i (op(A):
 * M x K, op(B): K x N), each operand with its row stride as stored (lda,
 * ldb, ldc) and the i-th at A + i sa, B + i sb, C + i sc. cuBLAS is
 * column-major: the same memory is C^T = op(B)^T op(A)^T (cu_gemm's swap). */
static int rm_gemm(sc_cuda *c, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                   int lda, long long sa, const float *B, int ldb, long long sb, float beta,
                   float *C, int ldc, long long sc, int count)
{
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (count == 1)
        return CKB(c, cublasSgemm(c->blas, ob, oa, N, M, K, &alpha, B, ldb, A, lda, &beta, C,
                                  ldc));
    return CKB(c, cublasSgemmStridedBatched(c->blas, ob, oa, N, M, K, &alpha, B, ldb, sb, A, lda,
                                            sa, &beta, C, ldc, sc, count));
}

/* The shapes of one call, and where sequence b's KV head h and its group
 * start in each tensor. */
typedef struct attn {
    int batch, seq, heads, kvh, dim, G; /* G: query heads per KV head */
    int past, kn;                       /* the key/value prefix; keys past + seq */
    int qs, ks;                         /* row strides: heads dim, kv_heads dim */
    long long ss;                       /* seq x kn: one head's p */
    float scale;                        /* 1 / sqrt(dim) */
} attn;

static int attn_shape(sc_cuda *c, attn *a, const char *slot, int batch, int seq, int past,
                      int heads, int kv_heads, int dim)
{
    int ok = batch >= 0 && seq >= 1 && past >= 0 && dim >= 1 && kv_heads >= 1 &&
             heads >= kv_heads && heads % kv_heads == 0;
    *a = (attn){batch, seq, heads, kv_heads, dim, ok ? heads / kv_heads : 1, past, past + seq,
                heads * dim, kv_heads * dim, (long long)seq * (past + seq),
                (float)(1.0 / sqrt((double)dim))};
    return shape_ok(c, ok, slot, "batch >= 0, seq >= 1, past >= 0, dim >= 1 and kv_heads "
                    "dividing heads expected") &&
           sc_cuda_ready(c);
}

/* Offsets of (b, h): q-like rows (q, o, dout, dq) at the group's first
 * head, k-like rows (k, v, dk, dv) at h, p at the group's first block. */
static size_t q_at(const attn *a, int b, int h)
{
    return (size_t)b * a->seq * a->qs + (size_t)h * a->G * a->dim;
}
static size_t k_at(const attn *a, int b, int h)
{
    return (size_t)b * a->kn * a->ks + (size_t)h * a->dim;
}
static size_t p_at(const attn *a, int b, int h)
{
    return ((size_t)b * a->heads + (size_t)h * a->G) * (size_t)a->ss;
}

void sc_cuda_dec_attn_fwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads,
                          int dim, const float *q, const float *k, const float *v, float *p,
                          float *o)
{
    sc_cuda *c = ctx;
    attn a;
    if (!attn_shape(c, &a, "attn_fwd", batch, seq, past, heads, kv_heads, dim) || batch == 0)
        return;
    int ok = 1, kn = a.kn;
    for (int b = 0; b < batch && ok; b++) /* S = Q K^T / sqrt(dim) */
        for (int h = 0; h < a.kvh && ok; h++)
            ok = rm_gemm(c, 0, 1, seq, kn, dim, a.scale, q + q_at(&a, b, h), a.qs, dim,
                         k + k_at(&a, b, h), a.ks, 0, 0.0f, p + p_at(&a, b, h), kn, a.ss, a.G);
    ok = ok && CK(c, sc_cuda_causal_softmax(c->compute, batch * heads * seq, seq, past, p));
    for (int b = 0; b < batch && ok; b++) /* O = P V */
        for (int h = 0; h < a.kvh && ok; h++)
            ok = rm_gemm(c, 0, 0, seq, dim, kn, 1.0f, p + p_at(&a, b, h), kn, a.ss,
                         v + k_at(&a, b, h), a.ks, 0, 0.0f, o + q_at(&a, b, h), a.qs, dim, a.G);
}

/* attn_bwd's scratch: room for one group's dP (G seq x seq floats), grown
 * on the compute stream (the old block is freed after the work queued on
 * it), kept until the instance goes. */
static float *dscores(sc_cuda *c, const attn *a)
{
    size_t bytes = (size_t)a->G * (size_t)a->ss * sizeof(float);
    if (bytes <= c->dscores_bytes)
        return c->dscores;
    if (c->dscores && !CK(c, cudaFreeAsync(c->dscores, c->compute)))
        return NULL;
    c->dscores = NULL;
    c->dscores_bytes = 0;
    void *d = NULL;
    if (!CK(c, cudaMallocAsync(&d, bytes, c->compute)))
        return NULL;
    c->dscores = d;
    c->dscores_bytes = bytes;
    return d;
}

/* The backward of sequence b's KV head h and its group (the file's head
 * comment gives the order: dV reads P before dS overwrites it). */
static int attn_bwd_group(sc_cuda *c, const attn *a, int b, int h, const float *q,
                          const float *k, const float *v, float *p, const float *dout,
                          float *dq, float *dk, float *dv, float *dp)
{
    size_t qo = q_at(a, b, h), ko = k_at(a, b, h), po = p_at(a, b, h);
    int s = a->seq, n = a->kn, d = a->dim, ok = 1;
    for (int j = 0; j < a->G && ok; j++) /* dV = sum_j P_j^T dO_j */
        ok = rm_gemm(c, 1, 0, n, d, s, 1.0f, p + po + (size_t)j * a->ss, n, 0,
                     dout + qo + (size_t)j * d, a->qs, 0, j ? 1.0f : 0.0f, dv + ko, a->ks, 0, 1);
    ok = ok && rm_gemm(c, 0, 1, s, n, d, 1.0f, dout + qo, a->qs, d, v + ko, a->ks, 0, 0.0f, dp,
                       n, a->ss, a->G); /* dP = dO V^T */
    ok = ok && CK(c, sc_cuda_causal_softmax_bwd(c->compute, a->G * s, s, a->past, p + po, dp));
    ok = ok && rm_gemm(c, 0, 0, s, d, n, a->scale, p + po, n, a->ss, k + ko, a->ks, 0, 0.0f,
                       dq + qo, a->qs, d, a->G); /* dQ = dS K / sqrt(dim) */
    for (int j = 0; j < a->G && ok; j++) /* dK = sum_j dS_j^T Q_j / sqrt(dim) */
        ok = rm_gemm(c, 1, 0, n, d, s, a->scale, p + po + (size_t)j * a->ss, n, 0,
                     q + qo + (size_t)j * d, a->qs, 0, j ? 1.0f : 0.0f, dk + ko, a->ks, 0, 1);
    return ok;
}

void sc_cuda_dec_attn_bwd(void *ctx, int batch, int seq, int past, int heads, int kv_heads,
                          int dim, const float *q, const float *k, const float *v, float *p,
                          const float *dout, float *dq, float *dk, float *dv)
{
    sc_cuda *c = ctx;
    attn a;
    if (!attn_shape(c, &a, "attn_bwd", batch, seq, past, heads, kv_heads, dim) || batch == 0)
        return;
    float *dp = dscores(c, &a);
    for (int b = 0; b < batch && dp; b++)
        for (int h = 0; h < a.kvh; h++)
            if (!attn_bwd_group(c, &a, b, h, q, k, v, p, dout, dq, dk, dv, dp))
                return;
}
