/*
 * bench_vocab.c — Vocabulary Parallelism (SPEC.md §21), figures side by
 * side in one run:
 *   1. the paper's 8-device setting (32 layers, h 3072, s 2048, m 128,
 *      batch 1, 400 TFLOP/s, collectives 100 GB/s + 10 us) on 1F1B, for
 *      V = 32k, 64k, 128k, 256k: baseline, redis, vocab-1, vocab-2: step
 *      time, throughput against the baseline, the busy share (the simulated
 *      MFU at the device rate), the balance (largest over smallest busy
 *      time), peak activations and parameters, collectives' busy time; the
 *      paper's MFU beside them;
 *   2. the same for ZB-H1 and V-Half at 256k;
 *   3. verify + simulate time with the collectives against the same 1F1B
 *      without them (best of 5, per instruction);
 *   4. the CPU runtime's measured step, baseline against vocab-1, on a model
 *      whose vocabulary dominates (threads; noisy on a loaded machine).
 *
 *   build/bench_vocab          all
 *   build/bench_vocab quick    parts 1-3 at m = 32
 */
#include "check/verify.h"
#include "compile.h"
#include "lower/lower.h"
#include "ir/flops.h"
#include "ir/ir.h"
#include "run.h"
#include "schedule/block.h"
#include "schedule/rules.h"
#include "schedule/vocab.h"
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of this process: the machine is shared, wall time is noisy. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static sc_model_desc paper_model(long V)
{
    sc_model_desc md = sc_model_desc_default();
    md.layers = 32;
    md.hidden = 3072;
    md.seq = 2048;
    md.batch = 1;
    md.vocab = V;
    return md;
}

/* A program of the paper's setting on `sched` (a rule, or "v-half"). */
static sc_prog *build(const char *sched, sc_vocab v, long V, int m)
{
    int vhalf = strcmp(sched, "v-half") == 0;
    sc_prog *pg = sc_prog_new(8, vhalf ? 16 : 8, m);
    sc_model_desc md = paper_model(V);
    if (vhalf)
        sc_prog_set_placement(pg, SC_PLACE_V, NULL);
    if (sc_prog_set_vocab(pg, v) || sc_prog_set_model(pg, &md))
        goto fail;
    if (vhalf) {
        double F[16], B[16], W[16];
        double first[2] = {0, 3 * 8 - 2}, delta[2] = {2, -1}, bf[2] = {6 * 8 + 1, 3 * 8 + 2},
               bd[2] = {-1, 2};
        sc_block_pattern(pg, first, delta, F);
        sc_block_pattern(pg, bf, bd, B);
        sc_block blk = {.off = {F, B, NULL, NULL}, .interval = 6, .slots = 1};
        if (sc_block_place_w(pg, &blk, W))
            goto fail;
        blk.off[SC_OP_W] = W;
        if (sc_block_unroll(pg, &blk))
            goto fail;
    } else if (sc_rule_fill(pg, sched)) {
        goto fail;
    }
    if (sc_vocab_split(v) && sc_vocab_place(pg, -1))
        goto fail;
    return pg;
fail:
    fprintf(stderr, "bench_vocab: %s %s: %s\n", sched, sc_vocab_name(v), sc_errmsg(pg));
    sc_prog_free(pg);
    return NULL;
}

static double max_of(const double *v, int n)
{
    double x = v[0];
    for (int i = 1; i < n; i++)
        x = fmax(x, v[i]);
    return x;
}

static double min_of(const double *v, int n)
{
    double x = v[0];
    for (int i = 1; i < n; i++)
        x = fmin(x, v[i]);
    return x;
}

/* The paper's MFU (%), 8 x A100 (background.md): baseline, redis, vocab-2,
 * vocab-1 at 32k, 64k, 128k, 256k. */
static const double paper_mfu[4][4] = {{47.52, 47.52, 52.56, 53.10},
                                       {40.82, 49.15, 52.36, 52.74},
                                       {33.70, 44.12, 51.95, 52.22},
                                       {17.29, 38.21, 51.20, 51.73}};

static void table(const char *sched, const long *Vs, int nV, int m)
{
    static const sc_vocab vs[4] = {SC_VOCAB_BASELINE, SC_VOCAB_REDIS, SC_VOCAB_V1, SC_VOCAB_V2};
    printf("\n%s, p = 8, m = %d (seconds at 400 TFLOP/s; busy share = simulated MFU at that "
           "rate)\n", sched, m);
    printf("%-8s %-9s %9s %7s %7s %8s %7s %8s %8s %8s %9s\n", "V", "placement", "step s",
           "speedup", "busy%", "balance", "bubble", "peak d0", "act GB", "param GB", "paper MFU");
    for (int i = 0; i < nV; i++) {
        double base = 0;
        for (int k = 0; k < 4; k++) {
            sc_prog *pg = build(sched, vs[k], Vs[i], m);
            sc_sim *sim = NULL;
            if (!pg || sc_simulate(pg, &sim) != SC_OK) {
                printf("%-8ld %-9s failed: %s\n", Vs[i], sc_vocab_name(vs[k]),
                       pg ? sc_errmsg(pg) : "build");
                sc_prog_free(pg);
                continue;
            }
            double busy = 0, pmax = 0;
            for (int d = 0; d < 8; d++) {
                busy += sim->busy[d];
                pmax = fmax(pmax, sc_prog_param_bytes(pg, d));
            }
            if (k == 0)
                base = sim->makespan;
            int pk = vs[k] == SC_VOCAB_BASELINE ? 0 : vs[k] == SC_VOCAB_REDIS ? 1
                     : vs[k] == SC_VOCAB_V2 ? 2 : 3;
            printf("%-8ld %-9s %9.4f %7.3f %7.2f %8.4f %6.2f%% %8.3g %8.3g %8.3g",
                   Vs[i], sc_vocab_name(vs[k]), sim->makespan, base / sim->makespan,
                   100 * busy / (8 * sim->makespan), max_of(sim->busy, 8) / min_of(sim->busy, 8),
                   100 * sim->bubble_rate, sim->peak_mem[0],
                   max_of(sim->peak_mem, 8) * sc_prog_unit_bytes(pg) / 1e9, pmax / 1e9);
            int row = Vs[i] == 32000 ? 0 : Vs[i] == 64000 ? 1 : Vs[i] == 128000 ? 2 : 3;
            if (strcmp(sched, "1f1b") == 0)
                printf(" %9.2f", paper_mfu[row][pk]);
            printf("\n");
            sc_sim_free(sim);
            sc_prog_free(pg);
        }
    }
}

/* Lowering, verifying (the replay that proves the streams) and simulating
 * (the timed replay) of the schedule, CPU seconds, best of 20 each. */
static void verify_sim(sc_vocab v, int m, size_t *n, double t[3])
{
    t[0] = t[1] = t[2] = INFINITY;
    sc_prog *pg = build("1f1b", v, 256000, m);
    if (!pg)
        return;
    for (int r = 0; r < 20; r++) {
        sc_prog_set_comm(pg, sc_prog_tcomm(pg)); /* drops the lowering */
        double a = now_s();
        sc_status st = sc_verify_passes(pg);
        if (!st)
            st = sc_lower(pg);
        double b = now_s();
        if (!st)
            st = sc_verify_streams(pg);
        double c = now_s();
        sc_sim *sim = NULL;
        if (!st)
            st = sc_simulate(pg, &sim);
        double e = now_s();
        sc_sim_free(sim);
        if (st) {
            fprintf(stderr, "bench_vocab: %s\n", sc_errmsg(pg));
            break;
        }
        t[0] = fmin(t[0], b - a);
        t[1] = fmin(t[1], c - b);
        t[2] = fmin(t[2], e - c);
    }
    *n = sc_prog_total_instructions(pg);
    sc_prog_free(pg);
}

static double run_step(sc_vocab v, double *loss)
{
    sc_prog *pg = sc_prog_new(2, 2, 8);
    sc_prog_set_vocab(pg, v);
    sc_rule_fill(pg, "1f1b");
    if (sc_vocab_split(v))
        sc_vocab_place(pg, -1);
    double best = INFINITY;
    if (sc_check(pg) != SC_OK) {
        sc_prog_free(pg);
        return NAN;
    }
    for (int r = 0; r < 3; r++) {
        sc_run_opts o = sc_run_defaults(2);
        o.model.hidden = 128;
        o.model.layers = 4;
        o.model.vocab = 16384;
        o.model.seq = 64;
        o.model.batch = 1;
        sc_run_result *res = NULL;
        char err[512];
        if (sc_run(pg, &o, &res, err, sizeof err) != SC_OK) {
            fprintf(stderr, "bench_vocab: run: %s\n", err);
            sc_prog_free(pg);
            return NAN;
        }
        best = fmin(best, res->step_time_s);
        *loss = res->loss;
        sc_run_result_free(res);
    }
    sc_prog_free(pg);
    return best;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0, m = quick ? 32 : 128;
    static const long Vs[] = {32000, 64000, 128000, 256000};
    table("1f1b", Vs, 4, m);
    table("zb-h1", Vs + 3, 1, m);
    table("v-half", Vs + 3, 1, m);

    size_t nb = 0, nv = 0;
    double tb[3], tv[3];
    verify_sim(SC_VOCAB_BASELINE, m, &nb, tb);
    verify_sim(SC_VOCAB_V1, m, &nv, tv);
    printf("\nlower, verify, simulate: 1f1b p = 8, m = %d, V = 256k (CPU time, best of 20; "
           "ns per instruction):\n", m);
    printf("  %-30s %12s %8s %8s %8s\n", "", "instructions", "lower", "verify", "simulate");
    printf("  %-30s %12zu %8.1f %8.1f %8.1f\n", "without collectives (baseline)", nb,
           tb[0] * 1e9 / (double)nb, tb[1] * 1e9 / (double)nb, tb[2] * 1e9 / (double)nb);
    printf("  %-30s %12zu %8.1f %8.1f %8.1f\n", "with them (vocab-1)", nv,
           tv[0] * 1e9 / (double)nv, tv[1] * 1e9 / (double)nv, tv[2] * 1e9 / (double)nv);
    printf("  ratio per instruction: lower %.2f, verify %.2f, simulate %.2f (vocab-1 has %.1fx "
           "the instructions: the passes S, T, E, EW and 6 collectives per microbatch and device)\n",
           (tv[0] / (double)nv) / (tb[0] / (double)nb), (tv[1] / (double)nv) / (tb[1] / (double)nb),
           (tv[2] / (double)nv) / (tb[2] / (double)nb), (double)nv / (double)nb);
    if (quick)
        return 0;
    double lb = 0, lv = 0;
    double sb = run_step(SC_VOCAB_BASELINE, &lb), sv = run_step(SC_VOCAB_V1, &lv);
    printf("\nCPU runtime, 1f1b p = 2 (threads), m = 8, hidden 128, 4 layers, vocab 16384, seq "
           "64 (the output layer is 2/3 of the work; best of 3):\n");
    printf("  baseline %.4f s (loss %.8f), vocab-1 %.4f s (loss %.8f): %.2fx\n", sb, lb, sv, lv,
           sb / sv);
    return 0;
}
