/*
 * bench_gemm.c — achieved TFLOP/s of the built-in model's matrix products on
 * the cuda backend (bench/gpu.md, item 4), through the backend's gemm
 * slot exactly as the passes call it (runtime/model/model.c):
 *
 *   F  a = x W1            gemm(0, 0, R, h, h)
 *   B  dA = dY W2^T        gemm(0, 1, R, h, h)
 *   W  G2 += a^T dY        gemm(1, 0, h, h, R)
 *
 * 2 M N K flops each; best of 5 timings of `reps` products queued back to
 * back, then one sync. The peak compared with is the GPU's dense FP32 rate
 * without tensor cores (H200 SXM: 67 TFLOP/s, NVIDIA's datasheet; give
 * another with PEAK=...), or with STAGECRAFT_CUDA_TF32=1 the dense TF32
 * tensor-core rate (H200 SXM: 494.7 TFLOP/s; PEAK_TF32=...).
 *
 *   build/gpubench_bench_gemm [R h ...]   (pairs; default 4096 4096, 4096 8192, 16384 8192)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "device/device.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double env_num(const char *name, double dflt)
{
    const char *v = getenv(name);
    return v && atof(v) > 0 ? atof(v) : dflt;
}

int main(int argc, char **argv)
{
    char info[256];
    if (sc_backend_cuda_devices(info, sizeof info) < 1) {
        printf("bench_gemm: skipped, no GPU (%s)\n", info);
        return 0;
    }
    const char *tf32 = getenv("STAGECRAFT_CUDA_TF32");
    int tc = tf32 && strcmp(tf32, "1") == 0;
    double peak = tc ? env_num("PEAK_TF32", 494.7) : env_num("PEAK", 67.0);
    sc_backend *be;
    char err[256];
    if (sc_backend_open("cuda", 0, 0, &be, err, sizeof err) != SC_OK) {
        fprintf(stderr, "bench_gemm: %s\n", err);
        return 1;
    }
    long dflt[] = {4096, 4096, 4096, 8192, 16384, 8192};
    int npairs = argc > 2 ? (argc - 1) / 2 : 3;
    printf("GPU 0: %s; cuBLAS sgemm, %s; peak compared with: %.1f TFLOP/s\n", info,
           tc ? "TF32 tensor cores (STAGECRAFT_CUDA_TF32=1)" : "FP32, no TF32", peak);
    printf("%-6s %-7s %-7s %-24s %10s %10s %8s\n", "pass", "R", "h", "gemm (ta, tb, M, N, K)",
           "ms", "TFLOP/s", "of peak");
    for (int p = 0; p < npairs; p++) {
        long R = argc > 2 ? atol(argv[1 + 2 * p]) : dflt[2 * p];
        long h = argc > 2 ? atol(argv[2 + 2 * p]) : dflt[2 * p + 1];
        size_t big = (size_t)(R > h ? R : h) * (size_t)h * sizeof(float);
        float *A = be->ops->alloc(be->ctx, big), *B = be->ops->alloc(be->ctx, big),
              *C = be->ops->alloc(be->ctx, big);
        if (!A || !B || !C) {
            printf("R %ld h %ld: out of GPU memory, skipped\n", R, h);
            be->ops->free(be->ctx, A, big);
            be->ops->free(be->ctx, B, big);
            be->ops->free(be->ctx, C, big);
            continue;
        }
        /* Values do not change the speed; zero-filled is enough. */
        float *zero = calloc(1 << 20, sizeof(float));
        for (size_t off = 0; off < big / sizeof(float); off += 1 << 20) {
            size_t n = big / sizeof(float) - off < (1u << 20) ? big / sizeof(float) - off : 1 << 20;
            be->ops->upload(be->ctx, A + off, zero, n * sizeof(float));
            be->ops->upload(be->ctx, B + off, zero, n * sizeof(float));
        }
        free(zero);
        struct { const char *pass; int ta, tb; long M, N, K; } g[3] = {
            {"F", 0, 0, R, h, h}, {"B", 0, 1, R, h, h}, {"W", 1, 0, h, h, R}};
        for (int k = 0; k < 3; k++) {
            int reps = 10;
            double best = INFINITY;
            for (int t = 0; t < 6; t++) { /* the first is a warm-up */
                double t0 = now();
                for (int i = 0; i < reps; i++)
                    be->ops->gemm(be->ctx, g[k].ta, g[k].tb, (int)g[k].M, (int)g[k].N,
                                  (int)g[k].K, 1.0f, A, B, 0.0f, C);
                if (be->ops->sync(be->ctx) != SC_OK) {
                    fprintf(stderr, "bench_gemm: %s\n", be->ops->errmsg(be->ctx));
                    return 1;
                }
                double dt = (now() - t0) / reps;
                if (t > 0 && dt < best)
                    best = dt;
            }
            double tflops = 2.0 * (double)g[k].M * (double)g[k].N * (double)g[k].K / best / 1e12;
            char shape[64];
            snprintf(shape, sizeof shape, "(%d, %d, %ld, %ld, %ld)", g[k].ta, g[k].tb, g[k].M,
                     g[k].N, g[k].K);
            printf("%-6s %-7ld %-7ld %-24s %10.3f %10.1f %7.0f%%\n", g[k].pass, R, h, shape,
                   best * 1e3, tflops, 100 * tflops / peak);
        }
        be->ops->free(be->ctx, A, big);
        be->ops->free(be->ctx, B, big);
        be->ops->free(be->ctx, C, big);
    }
    sc_backend_free(be);
    return 0;
}
