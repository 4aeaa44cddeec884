/*
 * bench_interp.c — how fast the interpreter turns a schedule into a verified,
 * simulated program, step by step, and how much memory it takes.
 *
 * Prints figures, not pass/fail. For each case: the rule fill (unrolling the
 * orders), sc_verify_passes, sc_lower, sc_verify_streams and sc_simulate,
 * each timed with CLOCK_MONOTONIC, best of 5 runs. The Zero Bubble authors'
 * Python schedulers take about 20 us per pass just to order the passes; the
 * ratio printed is 20000 ns over our end-to-end ns per pass.
 *
 * Memory: each size runs in a child process; its peak RSS (ru_maxrss of the
 * child, read through RUSAGE_CHILDREN: sizes run in increasing order, so the
 * running maximum is the newest child's) against its instruction count; the
 * growth between two sizes per added instruction is the marginal cost of an
 * instruction.
 *
 *   build/bench_interp            all cases
 *   build/bench_interp quick      smaller sizes (a smoke run)
 */
#include "compile.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "schedule/rules.h"
#include "sim/sim.h"
#include "check/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPS 5
#define ZB_NS_PER_PASS 20000.0 /* Zero Bubble's Python schedulers, ordering only */

enum { STEP_FILL, STEP_VPASS, STEP_LOWER, STEP_VSTREAM, STEP_SIM, NSTEPS };
static const char *const step_name[NSTEPS] = {"rule fill", "verify_passes", "lower",
                                              "verify_streams", "simulate"};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

typedef struct bcase {
    const char *rule;
    int p, v, m;
} bcase;

typedef struct result {
    double best[NSTEPS]; /* ns, best of REPS per step */
    double best_total;   /* ns, best of REPS of the whole pipeline */
    size_t passes, instructions;
    double makespan, bubble;
    int ok;
} result;

static int fail(sc_prog *pg, const char *what, sc_status st)
{
    fprintf(stderr, "bench: %s: %s (%s)\n", what, sc_errmsg(pg), sc_status_name(st));
    return 0;
}

/* One run of the pipeline; step times into t[]. */
static int run_once(const bcase *c, double t[NSTEPS], result *r)
{
    sc_prog *pg = sc_prog_new(c->p, c->p * c->v, c->m);
    if (!pg) {
        fprintf(stderr, "bench: %s\n", sc_new_errmsg());
        return 0;
    }
    sc_sim *sim = NULL;
    sc_status st;
    int ok = 1;
    double t0 = now_ns();
    if ((st = sc_rule_fill(pg, c->rule)))
        ok = fail(pg, "rule fill", st);
    double t1 = now_ns();
    if (ok && (st = sc_verify_passes(pg)))
        ok = fail(pg, "verify_passes", st);
    double t2 = now_ns();
    if (ok && (st = sc_lower(pg)))
        ok = fail(pg, "lower", st);
    double t3 = now_ns();
    if (ok && (st = sc_verify_streams(pg)))
        ok = fail(pg, "verify_streams", st);
    double t4 = now_ns();
    /* The program is verified now: sc_simulate only times and measures. */
    if (ok && (st = sc_simulate(pg, &sim)))
        ok = fail(pg, "simulate", st);
    double t5 = now_ns();
    t[STEP_FILL] = t1 - t0;
    t[STEP_VPASS] = t2 - t1;
    t[STEP_LOWER] = t3 - t2;
    t[STEP_VSTREAM] = t4 - t3;
    t[STEP_SIM] = t5 - t4;
    if (ok) {
        size_t n, passes = 0;
        for (int d = 0; d < c->p; d++) {
            sc_prog_order(pg, d, &n);
            passes += n;
        }
        r->passes = passes;
        r->instructions = sc_prog_total_instructions(pg);
        r->makespan = sim->makespan;
        r->bubble = sim->bubble_rate;
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
    return ok;
}

static result measure(const bcase *c)
{
    result r = {.best_total = 1e300, .ok = 1};
    for (int i = 0; i < NSTEPS; i++)
        r.best[i] = 1e300;
    for (int rep = 0; rep < REPS && r.ok; rep++) {
        double t[NSTEPS] = {0}, total = 0;
        r.ok = run_once(c, t, &r);
        for (int i = 0; i < NSTEPS; i++) {
            if (t[i] < r.best[i])
                r.best[i] = t[i];
            total += t[i];
        }
        if (total < r.best_total)
            r.best_total = total;
    }
    return r;
}

static void print_case(const bcase *c, const result *r)
{
    printf("%s p=%d v=%d m=%d: %zu passes, %zu instructions, makespan %.6g, bubble %.4f\n",
           c->rule, c->p, c->v, c->m, r->passes, r->instructions, r->makespan, r->bubble);
    for (int i = 0; i < NSTEPS; i++)
        printf("  %-15s %9.2f ms  %7.1f ns/pass\n", step_name[i], r->best[i] / 1e6,
               r->best[i] / (double)r->passes);
    double per = r->best_total / (double)r->passes;
    printf("  %-15s %9.2f ms  %7.1f ns/pass  %6.1f ns/instruction  %.0fx faster than %.0f us/pass\n",
           "total", r->best_total / 1e6, per, r->best_total / (double)r->instructions,
           ZB_NS_PER_PASS / per, ZB_NS_PER_PASS / 1000);
}

/* Peak RSS (KiB) of a child that runs the whole pipeline once for case c,
 * keeping the program and the simulation alive to the end; the child
 * writes its instruction count through the pipe. */
static int child_rss(const bcase *c, long *kib, size_t *instructions)
{
    int fd[2];
    if (pipe(fd) != 0)
        return 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        close(fd[0]);
        sc_prog *pg = sc_prog_new(c->p, c->p * c->v, c->m);
        sc_sim *sim = NULL;
        size_t n = 0;
        if (pg && sc_rule_fill(pg, c->rule) == SC_OK && sc_check(pg) == SC_OK &&
            sc_simulate(pg, &sim) == SC_OK)
            n = sc_prog_total_instructions(pg);
        ssize_t w = write(fd[1], &n, sizeof n);
        _exit(w == (ssize_t)sizeof n && n > 0 ? 0 : 1);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t got = read(fd[0], &n, sizeof n);
    close(fd[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof n)
        return 0;
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    *kib = ru.ru_maxrss;
    *instructions = n;
    return 1;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    int m = quick ? 128 : 1024;
    bcase cases[] = {
        {"interleaved", 64, 2, m},
        {"1f1b", 64, 1, m},
        {"zb-h1", 64, 1, m},
    };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("stagecraft interp benchmark: best of %d, %ld CPUs online, single thread\n", REPS,
           ncpu);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        result r = measure(&cases[i]);
        if (!r.ok)
            return 1;
        print_case(&cases[i], &r);
    }

    /* Memory: interleaved p=64 v=2 at growing m. */
    int ms[3] = {quick ? 64 : 512, quick ? 128 : 1024, quick ? 256 : 2048};
    long rss[3];
    size_t ins[3];
    printf("peak RSS, interleaved p=64 v=2 (one child process per size):\n");
    for (int i = 0; i < 3; i++) {
        bcase c = {"interleaved", 64, 2, ms[i]};
        if (!child_rss(&c, &rss[i], &ins[i])) {
            fprintf(stderr, "bench: the memory child for m=%d failed\n", ms[i]);
            return 1;
        }
        printf("  m=%-5d %9zu instructions  peak RSS %8.1f MiB  (%.1f bytes/instruction)\n",
               ms[i], ins[i], rss[i] / 1024.0, rss[i] * 1024.0 / (double)ins[i]);
    }
    for (int i = 1; i < 3; i++)
        printf("  m=%d -> m=%d: +%.1f MiB for +%zu instructions: %.1f bytes per added "
               "instruction\n",
               ms[i - 1], ms[i], (rss[i] - rss[i - 1]) / 1024.0, ins[i] - ins[i - 1],
               (rss[i] - rss[i - 1]) * 1024.0 / (double)(ins[i] - ins[i - 1]));
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    printf("peak RSS of the timing runs (this process): %.1f MiB\n", self.ru_maxrss / 1024.0);
    return 0;
}
