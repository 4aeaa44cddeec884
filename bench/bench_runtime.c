/*
 * bench_runtime.c — figures of the CPU runtime (bench/runtime.md):
 *
 *  1. executor overhead per instruction: the streams of a schedule run with
 *     a workload whose passes do nothing and whose tensors are 64 bytes,
 *     devices as threads with the local transport; wall time / instructions;
 *  2. a CPU run of a schedule vs the single-device reference on the same
 *     model (sc_run's step time vs sc_model_reference's).
 *
 * `bench_runtime quick` is a smaller smoke run.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compile.h"
#include "device/device.h"
#include "exec/exec.h"
#include "ir/ir.h"
#include "model/model.h"
#include "schedule/rules.h"
#include "run/run.h"
#include "run/run_impl.h" /* sc_devrun: a device's stream on a thread */
#include "transport/transport.h"

/* ---- a workload that does nothing ---- */
static size_t e_boundary(void *c, int s, int mb) { (void)c; (void)s; (void)mb; return 64; }
static void e_record(void *c, int s, int mb, size_t *k, size_t *b)
{
    (void)c; (void)s; (void)mb; *k = 64; *b = 0;
}
static sc_status e_f(void *c, int s, int mb, const void *in, void *out, void *k, void *b)
{
    (void)c; (void)s; (void)mb; (void)in; (void)out; (void)k; (void)b;
    return SC_OK;
}
static sc_status e_b(void *c, int s, int mb, const void *gi, void *go, void *k, void *b)
{
    (void)c; (void)s; (void)mb; (void)gi; (void)go; (void)k; (void)b;
    return SC_OK;
}
static sc_status e_w(void *c, int s, int mb, void *k)
{
    (void)c; (void)s; (void)mb; (void)k;
    return SC_OK;
}
static const char *e_err(void *c) { (void)c; return ""; }
static const struct sc_workload_ops empty_ops = {
    .boundary_bytes = e_boundary, .record_bytes = e_record, .forward = e_f,
    .backward_input = e_b, .backward_weight = e_w, .errmsg = e_err,
};

/* Seconds to execute pg's streams with the empty workload (best of reps). */
static double empty_run(const sc_prog *pg, int reps)
{
    int P = sc_prog_devices(pg);
    size_t N = sc_prog_total_instructions(pg);
    double *t0 = malloc(N * sizeof(double)), *t1 = malloc(N * sizeof(double));
    sc_devrun *jobs = calloc((size_t)P, sizeof *jobs);
    pthread_t *th = calloc((size_t)P, sizeof *th);
    double best = 1e30;
    char err[256];
    for (int rep = 0; rep < reps; rep++) {
        sc_transport *tp;
        sc_transport_local_new(P, 2 * sc_prog_stages(pg) * sc_prog_microbatches(pg), 60, &tp);
        size_t off = 0;
        for (int d = 0; d < P; d++) {
            size_t n;
            sc_prog_stream(pg, d, &n);
            jobs[d] = (sc_devrun){.pg = pg, .d = d, .tp = tp, .wl = {&empty_ops, NULL}};
            sc_backend_open("cpu", d, 0, &jobs[d].be, err, sizeof err);
            jobs[d].out.t0 = t0 + off;
            jobs[d].out.t1 = t1 + off;
            off += n;
        }
        double start = sc_exec_now();
        for (int d = 0; d < P; d++) {
            jobs[d].origin = start;
            pthread_create(&th[d], NULL, sc_run_device_thread, &jobs[d]);
        }
        for (int d = 0; d < P; d++)
            pthread_join(th[d], NULL);
        double t = sc_exec_now() - start;
        for (int d = 0; d < P; d++) {
            if (jobs[d].st)
                fprintf(stderr, "d%d: %s\n", d, jobs[d].out.err);
            sc_backend_free(jobs[d].be);
        }
        sc_transport_local_free(tp);
        best = t < best ? t : best;
    }
    free(t0);
    free(t1);
    free(jobs);
    free(th);
    return best;
}

static sc_prog *prog(int p, int v, int m, const char *rule)
{
    sc_prog *pg = sc_prog_new(p, p * v, m);
    if (!pg || sc_rule_fill(pg, rule) != SC_OK || sc_check(pg) != SC_OK) {
        fprintf(stderr, "cannot build %s p=%d m=%d\n", rule, p, m);
        exit(1);
    }
    return pg;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    int m = quick ? 64 : 1024, reps = quick ? 1 : 5;
    printf("executor overhead, empty compute, devices as threads, local transport "
           "(best of %d)\n", reps);
    printf("%-22s %12s %10s %12s\n", "schedule", "instructions", "wall", "us/instr");
    const struct { const char *rule; int p, v; } cases[] = {
        {"1f1b", 2, 1}, {"1f1b", 4, 1}, {"zb-h1", 4, 1}, {"interleaved", 4, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sc_prog *pg = prog(cases[i].p, cases[i].v, m, cases[i].rule);
        size_t N = sc_prog_total_instructions(pg);
        double t = empty_run(pg, reps);
        char name[64];
        snprintf(name, sizeof name, "%s p=%d m=%d", cases[i].rule, cases[i].p, m);
        printf("%-22s %12zu %8.1f ms %12.2f\n", name, N, t * 1e3, t * 1e6 / (double)N);
        sc_prog_free(pg);
    }

    printf("\nCPU run of a schedule vs the single-device reference (same model, one step)\n");
    sc_model_cfg c = {.hidden = quick ? 128 : 512, .layers = 8, .vocab = 512, .seq = 64,
                      .batch = 2, .seed = 1, .steps = 1,
                      .opt = sc_optim_defaults()};
    int mm = 8;
    printf("model: hidden %ld, layers %ld, vocab %ld, %ld rows per microbatch, m = %d\n",
           c.hidden, c.layers, c.vocab, c.seq * c.batch, mm);
    char err[512];
    double ref_best = 1e30, ref_cpu = 0;
    for (int rep = 0; rep < reps; rep++) {
        sc_model *ref;
        double t = sc_exec_now();
        clock_t c0 = clock();
        if (sc_model_reference(&c, mm, 0, &ref, err, sizeof err) != SC_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        t = sc_exec_now() - t;
        if (t < ref_best) {
            ref_best = t;
            ref_cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
        }
        sc_model_free(ref);
    }
    printf("%-22s %10s %10s %12s %s\n", "", "wall", "cpu", "wall/ref", "");
    printf("%-22s %7.1f ms %7.1f ms\n", "reference (1 device)", ref_best * 1e3, ref_cpu * 1e3);
    const struct { const char *rule; int p; } runs[] = {
        {"gpipe", 2}, {"1f1b", 2}, {"zb-h1", 2}, {"1f1b", 4}, {"zb-h1", 4}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        sc_prog *pg = prog(runs[i].p, 1, mm, runs[i].rule);
        sc_run_opts o = sc_run_defaults(runs[i].p);
        o.model = c;
        double best = 1e30, bubble = 0, cpu = 0;
        for (int rep = 0; rep < reps; rep++) {
            sc_run_result *r;
            clock_t c0 = clock();
            if (sc_run(pg, &o, &r, err, sizeof err) != SC_OK) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            if (r->step_time_s < best) {
                best = r->step_time_s;
                cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
                bubble = r->measured->bubble_rate;
            }
            sc_run_result_free(r);
        }
        char name[64];
        snprintf(name, sizeof name, "%s p=%d", runs[i].rule, runs[i].p);
        printf("%-22s %7.1f ms %7.1f ms %11.2fx  measured bubble %.1f%%\n", name, best * 1e3,
               cpu * 1e3, best / ref_best, 100 * bubble);
        sc_prog_free(pg);
    }
    return 0;
}
