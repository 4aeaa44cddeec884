/*
 * backend_cpu.c — the CPU backend: malloc for memory, OpenBLAS (CBLAS) for
 * the matrix products, plain loops for the rest. OpenBLAS runs on one
 * thread: each device already has its own thread (or process), and one
 * thread per product keeps results independent of the thread count.
 *
 * OpenBLAS is loaded when the first cpu backend opens (dlopen), not linked:
 * Debian's pthread build starts a pool of spinning threads, one per core,
 * in its library constructor, and pulls in libgfortran and libquadmath,
 * whose printf hooks send every printf of the process down glibc's slow
 * path. The commands that run no model (sim, check, export, ...) then
 * start neither. The pool is sized before the constructor runs: by
 * OPENBLAS_NUM_THREADS when the user sets it, else one thread (the device
 * threads are the parallelism; docs/run.md#the-model).
 */
#include "backend.h"
#include "backend_cpu_dec.h"
#include "backend_cpu_moe.h"
#include "hostlink.h"
#include "sc_hash.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where OpenBLAS is looked for, in order: the build's names (SC_BLAS_LIBS,
 * colon-separated: the soname, then the file the build linked against). */
#ifndef SC_BLAS_LIBS
#define SC_BLAS_LIBS "libopenblas.so.0"
#endif

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                         blasint, blasint, float, const float *, blasint, const float *, blasint,
                         float, float *, blasint);
typedef void (*setthreads_fn)(int);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static sgemm_fn blas_sgemm;
static char blas_err[512];

static void blas_load(void)
{
    /* The pool the constructor starts: one thread unless the user asked. */
    if (!getenv("OPENBLAS_NUM_THREADS") && !getenv("OMP_NUM_THREADS"))
        setenv("OPENBLAS_NUM_THREADS", "1", 0);
    char names[] = SC_BLAS_LIBS, *save = NULL;
    size_t len = 0;
    for (char *n = strtok_r(names, ":", &save); n; n = strtok_r(NULL, ":", &save)) {
        void *h = dlopen(n, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            len += (size_t)snprintf(blas_err + len, len < sizeof blas_err ? sizeof blas_err - len : 0,
                                    "%s%s", len ? "; " : "", e ? e : n);
            continue;
        }
        sgemm_fn f = (sgemm_fn)(uintptr_t)dlsym(h, "cblas_sgemm");
        setthreads_fn t = (setthreads_fn)(uintptr_t)dlsym(h, "openblas_set_num_threads");
        if (!f) {
            len += (size_t)snprintf(blas_err + len, len < sizeof blas_err ? sizeof blas_err - len : 0,
                                    "%s%s has no cblas_sgemm", len ? "; " : "", n);
            dlclose(h);
            continue;
        }
        if (t)
            t(1); /* one thread per product (the header comment) */
        blas_sgemm = f;
        return;
    }
}

/* Loads OpenBLAS once (any thread); SC_ERR_ARG with the reason when it
 * cannot be loaded. */
static sc_status blas_ready(char *err, size_t errlen)
{
    pthread_once(&blas_once, blas_load);
    if (blas_sgemm)
        return SC_OK;
    snprintf(err, errlen, "backend 'cpu': cannot load OpenBLAS (%s)", blas_err);
    return SC_ERR_ARG;
}

typedef struct cpu {
    size_t cap, used;
    sc_hostlink *link; /* the copy engine of offload; NULL: copies on the caller's thread */
} cpu;

static void *cpu_alloc(void *ctx, size_t bytes)
{
    cpu *c = ctx;
    if (c->cap && (bytes > c->cap || c->used > c->cap - bytes))
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p)
        c->used += bytes;
    return p;
}

static void cpu_free(void *ctx, void *p, size_t bytes)
{
    cpu *c = ctx;
    if (!p)
        return;
    c->used -= bytes;
    free(p);
}

static void cpu_gemm(void *ctx, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                     const float *B, float beta, float *C)
{
    (void)ctx;
    blas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
                N, K, alpha, A, ta ? M : K, B, tb ? K : N, beta, C, N);
}

static void cpu_copy(void *ctx, size_t n, const float *src, float *dst)
{
    (void)ctx;
    memcpy(dst, src, n * sizeof(float));
}

static void cpu_tanh_fwd(void *ctx, size_t n, float *x)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        x[i] = tanhf(x[i]);
}

static void cpu_tanh_bwd(void *ctx, size_t n, const float *a, float *g)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        g[i] *= 1.0f - a[i] * a[i];
}

static double cpu_xent(void *ctx, int rows, int V, float *logits, const int32_t *targets,
                       float scale)
{
    (void)ctx;
    double loss = 0;
    for (int r = 0; r < rows; r++) {
        float *x = logits + (size_t)r * (size_t)V;
        float mx = x[0];
        for (int j = 1; j < V; j++)
            mx = x[j] > mx ? x[j] : mx;
        double sum = 0;
        for (int j = 0; j < V; j++)
            sum += exp((double)x[j] - mx);
        double lse = mx + log(sum);
        loss += lse - x[targets[r]];
        for (int j = 0; j < V; j++)
            x[j] = scale * (float)(exp((double)x[j] - lse) - (j == targets[r]));
    }
    return loss;
}

static void cpu_sgd(void *ctx, size_t n, float lr, const float *g, float *x)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        x[i] -= lr * g[i];
}

static void cpu_adamw(void *ctx, size_t n, float *w, const float *g, float *m, float *v,
                      const struct sc_adamw_k *k)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * k->coef;
        m[i] = k->b1 * m[i] + (1 - k->b1) * gi;
        v[i] = k->b2 * v[i] + (1 - k->b2) * gi * gi;
        float wi = w[i] * k->decay;
        w[i] = wi - k->step * (m[i] / (sqrtf(v[i]) / k->sbc2 + k->eps));
    }
}

static sc_status cpu_sumsq(void *ctx, size_t n, const float *g, double out[2])
{
    (void)ctx;
    double sum = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        double x = g[i];
        if (!isfinite(x))
            bad++;
        else
            sum += x * x;
    }
    out[0] = sum;
    out[1] = bad;
    return SC_OK;
}

static void cpu_fill_uniform(void *ctx, float *x, size_t n, long long seed, uint64_t stream,
                             float scale)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        x[i] = scale == 0 ? 0.0f : scale * sc_urand(seed, stream, i);
}

/* Device memory is host memory: upload and download are copies. */
static void cpu_move(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy(dst, src, bytes);
}

/* The host pool: the CPU has no separate device memory, so an offloaded
 * tensor is copied to a malloc'ed host buffer (the copy is the cost; the
 * device pool's bytes are what the cap counts). With a host link
 * (hostlink.h) the copy runs on the link's thread, beside the device's
 * compute, as the simulator's host-link row does; without one, at once. */
static void *cpu_host_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    return malloc(bytes ? bytes : 1);
}

static void cpu_host_free(void *ctx, void *p, size_t bytes)
{
    (void)ctx;
    (void)bytes;
    free(p);
}

static sc_status cpu_copy_start(void *ctx, int to_host, void *dst, const void *src, size_t bytes,
                                void **ticket)
{
    cpu *c = ctx;
    *ticket = NULL;
    if (c->link)
        return sc_hostlink_start(c->link, to_host, dst, src, bytes, ticket);
    sc_hostlink_copy(dst, src, bytes, NULL, NULL);
    return SC_OK;
}

static sc_status cpu_copy_wait_at(void *ctx, void *ticket, double *t0, double *t1)
{
    cpu *c = ctx;
    if (!ticket)
        return SC_OK;
    return sc_hostlink_wait(c->link, ticket, t0, t1);
}

static sc_status cpu_copy_wait(void *ctx, void *ticket)
{
    return cpu_copy_wait_at(ctx, ticket, NULL, NULL);
}

static void cpu_use_link(void *ctx, sc_hostlink *link)
{
    cpu *c = ctx;
    c->link = link;
}

/* A pair's lane (backend.h): another instance; every slot is done when
 * it returns, so the lane needs no ordering against its device. */
static sc_status cpu_lane_open(void *ctx, sc_backend **lane)
{
    char err[96];
    (void)ctx;
    return sc_backend_cpu_open(0, lane, err, sizeof err);
}

static const struct sc_backend_ops cpu_ops = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .gemm = cpu_gemm,
    .copy = cpu_copy,
    .tanh_fwd = cpu_tanh_fwd,
    .tanh_bwd = cpu_tanh_bwd,
    .xent = cpu_xent,
    .sgd = cpu_sgd,
    .adamw = cpu_adamw,
    .sumsq = cpu_sumsq,
    .upload = cpu_move,
    .download = cpu_move,
    .fill_uniform = cpu_fill_uniform,
    .sync = NULL,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .copy_start = cpu_copy_start,
    .copy_wait = cpu_copy_wait,
    .copy_wait_at = cpu_copy_wait_at,
    .use_link = cpu_use_link,
    .errmsg = NULL,
    .meminfo = NULL,
    .lane_open = cpu_lane_open,
    /* the decoder's layers (backend_cpu_dec.c) */
    .rmsnorm_fwd = sc_cpu_rmsnorm_fwd,
    .rmsnorm_bwd = sc_cpu_rmsnorm_bwd,
    .rmsnorm_wgrad = sc_cpu_rmsnorm_wgrad,
    .rope = sc_cpu_rope,
    .attn_fwd = sc_cpu_attn_fwd,
    .attn_bwd = sc_cpu_attn_bwd,
    .swiglu_fwd = sc_cpu_swiglu_fwd,
    .swiglu_bwd = sc_cpu_swiglu_bwd,
    .moe_route = sc_cpu_moe_route,
    .moe_route_bwd = sc_cpu_moe_route_bwd,
    .moe_gather = sc_cpu_moe_gather,
    .moe_combine = sc_cpu_moe_combine,
    .moe_combine_bwd = sc_cpu_moe_combine_bwd,
};

static void cpu_free_backend(sc_backend *be)
{
    free(be->ctx);
    free(be);
}

sc_status sc_backend_cpu_open(size_t mem_cap, sc_backend **out, char *err, size_t errlen)
{
    *out = NULL;
    sc_status st = blas_ready(err, errlen);
    if (st != SC_OK)
        return st;
    sc_backend *be = calloc(1, sizeof *be);
    cpu *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        snprintf(err, errlen, "out of memory opening the cpu backend");
        return SC_ERR_NOMEM;
    }
    c->cap = mem_cap;
    be->ops = &cpu_ops;
    be->ctx = c;
    be->free_fn = cpu_free_backend;
    *out = be;
    return SC_OK;
}
