/*
 * cublasstub.c — cuBLAS of the CUDA STAND-IN (a test double,
 * tests/cudastub/): a column-major reference SGEMM (double accumulation)
 * with cuBLAS's argument checks, queued on the handle's stream; its
 * operands are checked like every other device access of the stand-in.
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
} gemm;

/* Bytes of a column-major rows x cols operand with leading dimension ld. */
static size_t span(int rows, int cols, int ld)
{
    return rows && cols ? ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * sizeof(float) : 0;
}

static void run_gemm(void *p)
{
    gemm *g = p;
    int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
    int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
    int ok = (!g->k || sc_cudastub_check(g->A, span(ar, ac, g->lda), SC_STUB_THIS_STREAM, 0,
                                         "cublasSgemm A")) &&
             (!g->k || sc_cudastub_check(g->B, span(br, bc, g->ldb), SC_STUB_THIS_STREAM, 0,
                                         "cublasSgemm B")) &&
             sc_cudastub_check(g->C, span(g->m, g->n, g->ldc), SC_STUB_THIS_STREAM, 0,
                               "cublasSgemm C");
    if (!ok)
        return;
    for (int j = 0; j < g->n; j++)
        for (int i = 0; i < g->m; i++) {
            double acc = 0;
            for (int l = 0; l < g->k; l++) {
                float a = g->ta ? g->A[(size_t)i * g->lda + l] : g->A[(size_t)l * g->lda + i];
                float b = g->tb ? g->B[(size_t)l * g->ldb + j] : g->B[(size_t)j * g->ldb + l];
                acc += (double)a * b;
            }
            float *c = &g->C[(size_t)j * g->ldc + i];
            /* beta 0: C is not read (it may hold NaN), as in BLAS */
            *c = (float)(g->alpha * acc + (g->beta == 0 ? 0.0 : (double)g->beta * *c));
        }
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    int ar = ta == CUBLAS_OP_N ? m : k, br = tb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!h->s) {
        sc_cudastub_violation(h->gpu, "cublasSgemm on the default stream (no cublasSetStream)");
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    gemm *g = malloc(sizeof *g);
    if (!g)
        return CUBLAS_STATUS_ALLOC_FAILED;
    *g = (gemm){.ta = ta == CUBLAS_OP_T, .tb = tb == CUBLAS_OP_T, .m = m, .n = n, .k = k,
                .lda = lda, .ldb = ldb, .ldc = ldc, .alpha = *alpha, .beta = *beta, .A = A,
                .B = B, .C = C};
    /* cuBLAS keeps its own copy of the runtime: it neither reads nor
     * leaves the caller's last error. */
    cudaError_t keep = cudaPeekAtLastError();
    cudaError_t e = sc_cudastub_enqueue(h->s, run_gemm, g, free, "cublasSgemm");
    (void)cudaGetLastError();
    note_stream(h->gpu, h->s);
    sc_cudastub_set_error(keep);
    return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
