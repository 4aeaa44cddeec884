/*
 * bench_vocab.c — Vocabulary Parallelism (docs/vocab.md), figures side by
 * side in one run:
 *   1. the paper's 8-device setting (32 layers, h 3072, s 2048, m 128,
 *      batch 1, 400 TFLOP/s, collectives 100 GB/s + 10 us) on 1F1B, for
 *      V = 32k, 64k, 128k, 256k: baseline, redis, vocab-1, vocab-2: step
 *      time, throughput against the baseline, the busy share (the simulated
 *      MFU at the device rate), the balance (largest over smallest busy
 *      time), peak activations and parameters, collectives' busy time; the
 *      paper's MFU beside them;
 *   2. the same for ZB-H1 and V-Half at 256k (V-Half twice: its block with
 *      the interval grown, the paper's way, and the vocabulary passes
 *      placed into the unrolled V-Half by the list scheduler);
 *   3. verify + simulate time with the collectives against the same 1F1B
 *      without them (per instruction, the best of many rounds in alternation);
 *   4. the CPU runtime's measured step, baseline against vocab-1, on a model
 *      whose output layer is 94% of the FLOPs (threads, 1F1B p = 2);
 *
 *   build/bench_vocab          all
 *   build/bench_vocab quick    parts 1-3 at m = 32 (no part 4)
 *   build/bench_vocab proof [rounds]   part 3 alone
 *   build/bench_vocab runtime  part 4 alone
 */
#include "check/verify.h"
#include "run/run.h"
#include "compile.h"
#include "lower/lower.h"
#include "model/flops.h"
#include "ir/ir.h"
#include "schedule/block.h"
#include "schedule/rules.h"
#include "schedule/vocab.h"
#include "sim/sim.h"

#include <malloc.h>
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

/* The V block with a split vocabulary, as the prelude's sc._v_vocab builds
 * it (docs/vocab.md#placing-the-passes): periods of 6 slots become 10, E, S, T, EW each take
 * the first free one of slots 6..9 of their device after what they need,
 * the backward passes move whole periods later until the last stage's B
 * comes after every S (vocab-1) or T (vocab-2). off: F, B, W of S stages,
 * rewritten; vo: S, T, E, EW of P devices. */
static int vslot(char *used, long t)
{
    while (((t % 10) + 10) % 10 < 6 || used[((t % 10) + 10) % 10])
        t++;
    used[((t % 10) + 10) % 10] = 1;
    return (int)t;
}

static void v_vocab(int P, sc_vocab v, double *off[3], double vo[4][8])
{
    int S = 2 * P;
    char used[8][10] = {{0}};
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < S; s++)
            off[k][s] = floor(off[k][s] / 6) * 10 + fmod(off[k][s], 6);
    double sall = 0, tall = 0;
    for (int d = 0; d < P; d++) {
        used[d][9] = 1;
        vo[2][d] = off[0][0] - 1;
        vo[0][d] = vslot(used[d], (long)off[0][S - 1] + 1);
        sall = fmax(sall, vo[0][d] + 1);
    }
    for (int d = 0; d < P; d++) {
        vo[1][d] = vslot(used[d], (long)sall);
        tall = fmax(tall, vo[1][d] + 1);
    }
    double ready = v == SC_VOCAB_V1 ? sall : tall;
    double shift = fmax(0, ceil((ready - off[1][S - 1]) / 10)) * 10;
    for (int s = 0; s < S; s++) {
        off[1][s] += shift;
        off[2][s] += shift;
    }
    for (int d = 0; d < P; d++)
        vo[3][d] = vslot(used[d], (long)off[1][0] + 1);
}

/* A program of the paper's setting on `sched` (a rule; "v-half", the V-Half
 * block, with a split vocabulary the block of v_vocab; "v-half-list", the
 * V-Half block with the vocabulary passes placed by sc_vocab_place). */
static sc_prog *build(const char *sched, sc_vocab v, long V, int m)
{
    int vhalf = strncmp(sched, "v-half", 6) == 0, vblock = vhalf && !strchr(sched + 6, 'l');
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
        double vo[4][8];
        if (vblock && sc_vocab_split(v)) {
            double *o3[3] = {F, B, W};
            v_vocab(8, v, o3, vo);
            blk.interval = 10;
            for (int k = 0; k < 4; k++)
                blk.voff[k] = vo[k];
            if (sc_block_check(pg, &blk))
                goto fail;
        }
        if (sc_block_unroll(pg, &blk))
            goto fail;
    } else if (sc_rule_fill(pg, sched)) {
        goto fail;
    }
    if (sc_vocab_split(v) && !sc_vocab_placed(pg) && sc_vocab_place(pg, -1))
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

/* The paper's MFU (%), 8 x A100 (arXiv 2411.05288; docs/vocab.md#figures):
 * baseline, redis, vocab-2, vocab-1 at 32k, 64k, 128k, 256k. */
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
 * (the timed replay) of the schedule, CPU seconds per round (each round
 * repeats each step 4 times), the best of `rounds`; the two programs are
 * timed in alternation, so that both see the same machine. */
static int time_once(sc_prog *pg, double t[3])
{
    sc_status st = SC_OK;
    double lo = 0, ve = 0;
    for (int k = 0; k < 4 && !st; k++) { /* each verify on a fresh lowering */
        double a = now_s();
        sc_prog_set_comm(pg, sc_prog_tcomm(pg)); /* drops the lowering and the proof */
        st = sc_verify_passes(pg);
        if (!st)
            st = sc_lower(pg);
        double b = now_s();
        if (!st)
            st = sc_verify_streams(pg);
        double c = now_s();
        lo += b - a;
        ve += c - b;
    }
    double c = now_s();
    for (int k = 0; k < 4 && !st; k++) { /* the timed replay of a verified program */
        sc_sim *sim = NULL;
        st = sc_simulate(pg, &sim);
        sc_sim_free(sim);
    }
    double e = now_s();
    if (st) {
        fprintf(stderr, "bench_vocab: %s\n", sc_errmsg(pg));
        return -1;
    }
    t[0] = fmin(t[0], lo / 4);
    t[1] = fmin(t[1], ve / 4);
    t[2] = fmin(t[2], (e - c) / 4);
    return 0;
}

static void verify_sim(int m, int rounds, size_t n[2], double t[2][3])
{
    sc_prog *pg[2] = {build("1f1b", SC_VOCAB_BASELINE, 256000, m),
                      build("1f1b", SC_VOCAB_V1, 256000, m)};
    for (int i = 0; i < 2; i++)
        t[i][0] = t[i][1] = t[i][2] = INFINITY;
    for (int r = 0; r < rounds && pg[0] && pg[1]; r++)
        for (int i = 0; i < 2; i++)
            if (time_once(pg[i], t[i]))
                r = rounds;
    for (int i = 0; i < 2; i++) {
        n[i] = pg[i] ? sc_prog_total_instructions(pg[i]) : 1;
        sc_prog_free(pg[i]);
    }
}

/* Part 3's table: per instruction, with and without the collectives. */
static void proof_times(int m, int rounds, const char *how)
{
    size_t n[2];
    double t[2][3];
    verify_sim(m, rounds, n, t);
    printf("  %-36s %12s %8s %8s %8s\n", how, "instructions", "lower", "verify", "simulate");
    static const char *const what[2] = {"without collectives (baseline)", "with them (vocab-1)"};
    for (int i = 0; i < 2; i++)
        printf("  %-36s %12zu %8.1f %8.1f %8.1f\n", what[i], n[i], t[i][0] * 1e9 / (double)n[i],
               t[i][1] * 1e9 / (double)n[i], t[i][2] * 1e9 / (double)n[i]);
    double r3[3];
    for (int k = 0; k < 3; k++)
        r3[k] = (t[1][k] / (double)n[1]) / (t[0][k] / (double)n[0]);
    printf("  ratio per instruction: lower %.2f, verify %.2f, simulate %.2f; verify + simulate "
           "%.2f (vocab-1 has %.1fx the instructions: the passes S, T, E, EW and 6 collectives "
           "per microbatch and device)\n", r3[0], r3[1], r3[2],
           ((t[1][1] + t[1][2]) / (double)n[1]) / ((t[0][1] + t[0][2]) / (double)n[0]),
           (double)n[1] / (double)n[0]);
}

/* Part 4: the best of `rounds` measured steps of 1F1B p = 2, m = 8 on the
 * CPU (threads) with placement v; the loss of the last in *loss. */
static double run_step(sc_vocab v, int rounds, double *loss)
{
    sc_prog *pg = sc_prog_new(2, 2, 8);
    double best = INFINITY;
    if (!pg || sc_prog_set_vocab(pg, v) || sc_rule_fill(pg, "1f1b") ||
        (sc_vocab_split(v) && sc_vocab_place(pg, -1)) || sc_check(pg) != SC_OK) {
        fprintf(stderr, "bench_vocab: 1f1b %s: %s\n", sc_vocab_name(v),
                pg ? sc_errmsg(pg) : "out of memory");
        sc_prog_free(pg);
        return NAN;
    }
    for (int r = 0; r < rounds; r++) {
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
            break;
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
    if (argc > 2 && strcmp(argv[1], "loop") == 0) { /* for a profiler: verify + simulate only */
        sc_prog *pg = build("1f1b", sc_vocab_parse(argv[2]), 256000, 128);
        double t[3] = {INFINITY, INFINITY, INFINITY};
        int only = argc > 3 ? argv[3][0] : 0; /* v: verify, s: simulate */
        if (only && pg && sc_check(pg) == SC_OK) {
            for (int r = 0; r < 400; r++) {
                sc_sim *sim = NULL;
                if (only == 'v') {
                    sc_prog_set_comm(pg, sc_prog_tcomm(pg));
                    sc_lower(pg);
                    sc_verify_streams(pg);
                }
                else
                    sc_simulate(pg, &sim);
                sc_sim_free(sim);
            }
        }
        for (int r = 0; r < 100 && pg && !only; r++)
            time_once(pg, t);
        sc_prog_free(pg);
        return 0;
    }
    int proof = argc > 1 && strcmp(argv[1], "proof") == 0; /* part 3 alone */
    int runtime = argc > 1 && strcmp(argv[1], "runtime") == 0; /* part 4 alone */
    if (proof)
        m = 128;
    static const long Vs[] = {32000, 64000, 128000, 256000};
    if (!proof && !runtime) {
        table("1f1b", Vs, 4, m);
        table("zb-h1", Vs + 3, 1, m);
        table("v-half", Vs + 3, 1, m);
        table("v-half-list", Vs + 3, 1, m);
    }

    if (runtime)
        goto part4;
    int rounds = quick ? 10 : proof && argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 50;
    printf("\nlower, verify, simulate: 1f1b p = 8, m = %d, V = 256k (CPU time, best of %d "
           "rounds, the two in alternation; ns per instruction):\n", m, rounds);
    proof_times(m, rounds, "malloc as it is");
    /* glibc gives freed memory back to the system between rounds (and
     * maps the larger arrays afresh), so each round also measures the page
     * faults of touching it again: more for the program with more memory. */
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    proof_times(m, rounds, "memory kept between rounds");
    if (quick || proof)
        return 0;
part4:;
    double lb = NAN, lv = NAN, sb = INFINITY, sv = INFINITY;
    for (int r = 0; r < 5; r++) { /* in alternation: the machine's load shared */
        sb = fmin(sb, run_step(SC_VOCAB_BASELINE, 1, &lb));
        sv = fmin(sv, run_step(SC_VOCAB_V1, 1, &lv));
    }
    printf("\nCPU runtime, 1f1b p = 2 (threads), m = 8, hidden 128, 4 layers, vocab 16384, seq "
           "64, batch 1 (the output layer is 94%% of the FLOPs; best of 5, in "
           "alternation):\n");
    printf("  baseline %.4f s (loss %.8f), vocab-1 %.4f s (loss %.8f): %.2fx\n", sb, lb, sv, lv,
           sb / sv);
    return 0;
}
