/*
 * cublasstub.c — cuBLAS of the CUDA STAND-IN (a test double,
 * tests/cudastub/): a column-major reference SGEMM (double accumulation),
 * plain and strided-batched, with cuBLAS's argument checks, queued on the
 * handle's stream; its operands (each product's) are checked like every
 * other device access of the stand-in.
 *
 * With SC_CUDASTUB_STREAMS set, the process reports at exit, per GPU, on
 * how many streams SGEMMs were queued ("cudastub: GPU 0: SGEMMs on 2
 * streams"): the witness that an overlapped pair's backward half computes
 * on a second stream (docs/run.md#overlapped-pairs; tests/cudastub/run.sh).
 */
#include "cublas_v2.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct sc_stub_blas {
    int gpu;
    cudaStream_t s;
};

/* The streams that SGEMMs were queued on (SC_CUDASTUB_STREAMS). */
#define MAX_SEEN 256
typedef struct seen_stream {
    int gpu;
    cudaStream_t s;
} seen_stream;
static struct {
    pthread_mutex_t mu;
    int n, overflow;
    seen_stream seen[MAX_SEEN]; /* distinct (GPU, stream handle) */
} streams = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void report_streams(void)
{
    int most = 0;
    for (int i = 0; i < streams.n; i++)
        most = streams.seen[i].gpu > most ? streams.seen[i].gpu : most;
    for (int g = 0; g <= most && streams.n; g++) {
        int k = 0;
        for (int i = 0; i < streams.n; i++)
            k += streams.seen[i].gpu == g;
        if (k)
            fprintf(stderr, "cudastub: GPU %d: SGEMMs on %d stream%s%s\n", g, k, k == 1 ? "" : "s",
                    streams.overflow ? " (or more)" : "");
    }
}

static void note_stream(int gpu, cudaStream_t s)
{
    static int on = -1;
    pthread_mutex_lock(&streams.mu);
    if (on < 0) {
        on = getenv("SC_CUDASTUB_STREAMS") != NULL;
        if (on)
            atexit(report_streams);
    }
    int i = 0;
    while (on && i < streams.n && (streams.seen[i].gpu != gpu || streams.seen[i].s != s))
        i++;
    if (on && i == streams.n) {
        if (streams.n < MAX_SEEN)
            streams.seen[streams.n++] = (seen_stream){gpu, s};
        else
            streams.overflow = 1;
    }
    pthread_mutex_unlock(&streams.mu);
}

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    *h = calloc(1, sizeof **h);
    if (!*h)
        return CUBLAS_STATUS_ALLOC_FAILED;
    (*h)->gpu = sc_cudastub_current();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (sc_cudastub_stream_gpu(s) != h->gpu) {
        sc_cudastub_violation(h->gpu, "cublasSetStream: a stream of GPU %d for a handle of GPU %d",
                              sc_cudastub_stream_gpu(s), h->gpu);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    h->s = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    (void)mode;
    return h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    default: return "an internal operation failed";
    }
}

typedef struct gemm {
    int ta, tb, m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
    long long sa, sb, sc; /* strided-batched: the i-th product's offsets */
    int count;            /* products (1: cublasSgemm) */
} gemm;

/* Bytes of a column-major rows x cols operand with leading dimension ld. */
static size_t span(int rows, int cols, int ld)
{
    return rows && cols ? ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * sizeof(float) : 0;
}

/* One product: operands A, B, C (the batch's i-th). */
static void run_one(const gemm *g, const float *A, const float *B, float *C)
{
    int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
    int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
    const char *w = g->count > 1 ? "cublasSgemmStridedBatched" : "cublasSgemm";
    int ok = (!g->k || sc_cudastub_check(A, span(ar, ac, g->lda), SC_STUB_THIS_STREAM, 0, w)) &&
             (!g->k || sc_cudastub_check(B, span(br, bc, g->ldb), SC_STUB_THIS_STREAM, 0, w)) &&
             sc_cudastub_check(C, span(g->m, g->n, g->ldc), SC_STUB_THIS_STREAM, 0, w);
    if (!ok)
        return;
    for (int j = 0; j < g->n; j++)
        for (int i = 0; i < g->m; i++) {
            double acc = 0;
            for (int l = 0; l < g->k; l++) {
                float a = g->ta ? A[(size_t)i * g->lda + l] : A[(size_t)l * g->lda + i];
                float b = g->tb ? B[(size_t)l * g->ldb + j] : B[(size_t)j * g->ldb + l];
                acc += (double)a * b;
            }
            float *c = &C[(size_t)j * g->ldc + i];
            /* beta 0: C is not read (it may hold NaN), as in BLAS */
            *c = (float)(g->alpha * acc + (g->beta == 0 ? 0.0 : (double)g->beta * *c));
        }
}

static void run_gemm(void *p)
{
    gemm *g = p;
    for (int i = 0; i < g->count; i++)
        run_one(g, g->A + i * g->sa, g->B + i * g->sb, g->C + i * g->sc);
}

/* cuBLAS's argument checks, then the product(s) queued on the handle's
 * stream. */
static cublasStatus_t queue_gemm(cublasHandle_t h, const gemm *want, const char *what)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    int m = want->m, n = want->n, k = want->k;
    int ar = want->ta ? k : m, br = want->tb ? n : k;
    if (m < 0 || n < 0 || k < 0 || want->count < 0 || want->lda < (ar > 1 ? ar : 1) ||
        want->ldb < (br > 1 ? br : 1) || want->ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!h->s) {
        sc_cudastub_violation(h->gpu, "%s on the default stream (no cublasSetStream)", what);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    if (want->count == 0)
        return CUBLAS_STATUS_SUCCESS;
    gemm *g = malloc(sizeof *g);
    if (!g)
        return CUBLAS_STATUS_ALLOC_FAILED;
    *g = *want;
    /* cuBLAS keeps its own copy of the runtime: it neither reads nor
     * leaves the caller's last error. */
    cudaError_t keep = cudaPeekAtLastError();
    cudaError_t e = sc_cudastub_enqueue(h->s, run_gemm, g, free, what);
    (void)cudaGetLastError();
    note_stream(h->gpu, h->s);
    sc_cudastub_set_error(keep);
    return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc)
{
    gemm g = {.ta = ta == CUBLAS_OP_T, .tb = tb == CUBLAS_OP_T, .m = m, .n = n, .k = k,
              .lda = lda, .ldb = ldb, .ldc = ldc, .alpha = *alpha, .beta = *beta, .A = A,
              .B = B, .C = C, .count = 1};
    return queue_gemm(h, &g, "cublasSgemm");
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long int strideA, const float *B, int ldb,
                                         long long int strideB, const float *beta, float *C,
                                         int ldc, long long int strideC, int batchCount)
{
    gemm g = {.ta = ta == CUBLAS_OP_T, .tb = tb == CUBLAS_OP_T, .m = m, .n = n, .k = k,
              .lda = lda, .ldb = ldb, .ldc = ldc, .alpha = *alpha, .beta = *beta, .A = A,
              .B = B, .C = C, .sa = strideA, .sb = strideB, .sc = strideC,
              .count = batchCount};
    return queue_gemm(h, &g, "cublasSgemmStridedBatched");
}
