/*
 * bench_copy.c — the offload copies of the cuda backend on their own and
 * beside compute (bench/gpu.md, item 2), through the backend's slots
 * exactly as the executor calls them (runtime/exec/exec_host.c):
 *
 *   pin     host_alloc of a fresh pinned block, and of a cached one
 *   d2h     copy_start(to_host) + copy_wait, alone: GB/s
 *   h2d     copy_start(to_device) + copy_wait, alone: GB/s
 *   gemm    `reps` F products (R x h x h) queued, then sync
 *   both    a copy started, the same products queued behind it on the
 *           compute stream, then both waited for: overlap = the share of
 *           the shorter one hidden, (gemm + copy - both) / min(gemm, copy)
 *
 * Best of 5 timings after a warm-up.
 *
 *   build/gpubench_bench_copy [MiB R h]   (default 256 4096 4096)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"
#include "device/device.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static sc_backend *be;

static int fail(const char *what)
{
    const char *m = be->ops->errmsg(be->ctx);
    fprintf(stderr, "bench_copy: %s: %s\n", what, m ? m : "failed");
    return 1;
}

/* One copy (dir 1: to the host), `reps` products, or both; seconds. */
static double timed(int dir, int reps, void *host, void *dev, size_t bytes, int R, int h,
                    const float *A, const float *B, float *C, int *bad)
{
    double t0 = now();
    void *ticket = NULL;
    if (dir >= 0 && be->ops->copy_start(be->ctx, dir, dir ? host : dev, dir ? dev : host, bytes,
                                        &ticket) != SC_OK)
        *bad = 1;
    for (int i = 0; i < reps; i++)
        be->ops->gemm(be->ctx, 0, 0, R, h, h, 1.0f, A, B, 0.0f, C);
    if (dir >= 0 && be->ops->copy_wait(be->ctx, ticket) != SC_OK)
        *bad = 1;
    if (be->ops->sync(be->ctx) != SC_OK)
        *bad = 1;
    return now() - t0;
}

static double best_of(int dir, int reps, void *host, void *dev, size_t bytes, int R, int h,
                      const float *A, const float *B, float *C, int *bad)
{
    double best = INFINITY;
    for (int t = 0; t < 6; t++) {
        double dt = timed(dir, reps, host, dev, bytes, R, h, A, B, C, bad);
        if (t > 0 && dt < best)
            best = dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    char info[256], err[256];
    if (sc_backend_cuda_devices(info, sizeof info) < 1) {
        printf("bench_copy: skipped, no GPU (%s)\n", info);
        return 0;
    }
    if (sc_backend_open("cuda", 0, 0, &be, err, sizeof err) != SC_OK) {
        fprintf(stderr, "bench_copy: %s\n", err);
        return 1;
    }
    size_t bytes = (size_t)(argc > 1 ? atol(argv[1]) : 256) << 20;
    int R = argc > 3 ? atoi(argv[2]) : 4096, h = argc > 3 ? atoi(argv[3]) : 4096;
    size_t mat = (size_t)R * (size_t)h * sizeof(float);
    double t0 = now();
    void *host = be->ops->host_alloc(be->ctx, bytes);
    double pin = now() - t0;
    void *dev = be->ops->alloc(be->ctx, bytes);
    float *A = be->ops->alloc(be->ctx, mat), *B = be->ops->alloc(be->ctx, (size_t)h * h * 4),
          *C = be->ops->alloc(be->ctx, mat);
    if (!host || !dev || !A || !B || !C)
        return fail("allocation");
    be->ops->host_free(be->ctx, host, bytes);
    t0 = now();
    host = be->ops->host_alloc(be->ctx, bytes); /* the cached block again */
    double cached = now() - t0;
    int bad = 0;
    printf("GPU 0: %s; %zu MiB copies, F products %d x %d x %d\n", info, bytes >> 20, R, h, h);
    printf("pin      %8.3f ms fresh, %.3f ms from the cache\n", pin * 1e3, cached * 1e3);
    double d2h = best_of(1, 0, host, dev, bytes, R, h, A, B, C, &bad);
    double h2d = best_of(0, 0, host, dev, bytes, R, h, A, B, C, &bad);
    printf("d2h      %8.3f ms  %6.1f GB/s\n", d2h * 1e3, (double)bytes / d2h / 1e9);
    printf("h2d      %8.3f ms  %6.1f GB/s\n", h2d * 1e3, (double)bytes / h2d / 1e9);
    /* As many products as the copy takes, so that either could hide the other. */
    double one = best_of(-1, 1, host, dev, bytes, R, h, A, B, C, &bad);
    int reps = (int)ceil(d2h / one);
    if (reps < 1)
        reps = 1;
    double g = best_of(-1, reps, host, dev, bytes, R, h, A, B, C, &bad);
    printf("gemm     %8.3f ms  (%d products)\n", g * 1e3, reps);
    for (int dir = 1; dir >= 0; dir--) {
        double c = dir ? d2h : h2d;
        double both = best_of(dir, reps, host, dev, bytes, R, h, A, B, C, &bad);
        printf("%s+gemm %8.3f ms  overlap %5.1f %% (serial would be %.3f ms)\n", dir ? "d2h" : "h2d",
               both * 1e3, 100 * (g + c - both) / fmin(g, c), (g + c) * 1e3);
    }
    if (bad)
        return fail("a copy or product");
    be->ops->host_free(be->ctx, host, bytes);
    be->ops->free(be->ctx, dev, bytes);
    be->ops->free(be->ctx, A, mat);
    be->ops->free(be->ctx, B, (size_t)h * h * 4);
    be->ops->free(be->ctx, C, mat);
    sc_backend_free(be);
    return 0;
}
