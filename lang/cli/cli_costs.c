/*
 * cli_costs.c — stagecraft costs --from-trace|--check TRACE.json... [-o FILE]: a
 * cost file from torch.profiler traces of a pipelined step
 * (docs/costs.md#costs-from-a-pytorch-trace; the reading is ptrace.h's),
 * within --max-mem and --max-time like every command (docs/sandbox.md#files-read).
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/atomic.h"
#include "formats/costs.h"
#include "formats/jsonread.h"
#include "formats/ptrace.h"
#include "ir/alloc.h"

int sc_cli_apply_cost_file(sc_prog *pg, const char *path, int force, double deadline)
{
    char label[300], err[512];
    snprintf(label, sizeof label, "cost file %s", path);
    sc_read rd;
    int rc = sc_cli_read(path, "cost file", SC_READ_JSON, deadline, &rd);
    if (rc)
        return rc;
    sc_jv *root = NULL;
    sc_costs c;
    sc_status st = sc_json_parse(rd.text, rd.len, &root, err, sizeof err);
    sc_free(rd.text);
    if (st == SC_OK && (st = sc_costs_from_json(root, &c, err, sizeof err)) == SC_OK) {
        int S = c.S, P = sc_prog_stages(pg);
        st = sc_costs_apply(&c, pg, force, err, sizeof err);
        if (st == SC_OK && S != P)
            fprintf(stderr, "stagecraft: warning: %s: 'stages' is %d, but the program has %d "
                    "stages (used anyway: --force-costs; each stage takes its share of the file's "
                    "stages' times)\n", label, S, P);
        sc_costs_free(&c);
    }
    sc_jv_free(root);
    if (st == SC_ERR_NOMEM)
        return sc_cli_status_fail(st, "out of memory reading %s", label);
    return st == SC_OK ? 0 : sc_cli_status_fail(st, "%s: %s", label, err);
}

#define USAGE "costs --from-trace|--check TRACE.json... [-o FILE] [--json] [--max-mem BYTES] " \
              "[--max-time SECONDS]"

/* Reads one trace into t; 0, or the exit code after the error line. Each
 * file's text is freed before the next is read; its events are handed
 * over one by one as they are parsed (ptrace.h), so a file costs its text
 * and its spans, never the tree of the whole JSON. */
static int add_file(sc_ptrace *t, const char *path, double deadline)
{
    sc_read rd;
    int rc = sc_cli_read(path, "trace", SC_READ_JSON, deadline, &rd);
    if (rc)
        return rc;
    char err[512];
    sc_status st = sc_ptrace_read(t, path, rd.text, rd.len, deadline, err, sizeof err);
    sc_free(rd.text);
    if (st == SC_ERR_LIMIT) {
        char doing[400];
        snprintf(doing, sizeof doing, "reading trace %s", path);
        return sc_cli_time_fail(doing);
    }
    if (st != SC_OK)
        return sc_cli_status_fail(st, "trace %s", err);
    return 0;
}

/* costs --check: each traced step beside the prediction of the schedule
 * the traces ran, with their own costs (ptrace.h's sc_ptrace_check); the
 * figures in seconds, the error measured / predicted - 1. */
static int print_check(const sc_ptrace *t, const sc_costs *c, int json)
{
    sc_ptrace_checked k;
    char err[512];
    sc_status st = sc_ptrace_check(t, c, &k, err, sizeof err);
    if (st == SC_ERR_NOMEM)
        return sc_cli_status_fail(st, "out of memory predicting the traces' steps");
    if (st != SC_OK)
        return sc_cli_status_fail(st, "trace %s%s: %s", c->files[0], c->nfiles > 1 ? ", ..." : "",
                                  err);
    double p = k.predicted, e = p > 0 ? k.step.median / p - 1 : NAN;
    sc_stat own = k.own_error;
    if (json) {
        printf("{\"predicted_s\": %.9g, \"steps_s\": [", p);
        for (int i = 0; i < k.nsteps; i++)
            printf("%s%.9g", i ? ", " : "", k.steps[i]);
        printf("], \"own_s\": [");
        for (int i = 0; i < k.nown; i++)
            isnan(k.own[i]) ? printf("%snull", i ? ", " : "") : printf("%s%.9g", i ? ", " : "", k.own[i]);
        printf("], \"median_s\": %.9g, \"spread_s\": %.9g, \"error\": %.6g, \"devices\": %d, "
               "\"stages\": %d, \"microbatches\": %d, \"own_error\": ", k.step.median, k.step.spread,
               e, c->P, c->S, c->m);
        own.n ? printf("%.6g}\n", own.median) : printf("null}\n");
    } else {
        printf("schedule   the traces' first step: %d ranks, %d stages, %d microbatches; %s\n",
               c->P, c->S, c->m, c->what);
        printf("predicted  %.6f s  (sim of that schedule with the traces' costs)\n", p);
        printf("step       measured     error    own costs    error\n");
        for (int i = 0; i < k.nsteps; i++) {
            printf("%-10d %.6f s   %+6.1f%%", i, k.steps[i], 100 * (k.steps[i] / p - 1));
            if (i < k.nown && !isnan(k.own[i]))
                printf("   %.6f s   %+6.1f%%", k.own[i], 100 * (k.steps[i] / k.own[i] - 1));
            printf("\n");
        }
        printf("median     %.6f s   %+6.1f%%   spread %.6f s (%.1f%% of the median), %d steps\n",
               k.step.median, 100 * e, k.step.spread, 100 * k.step.spread / k.step.median,
               k.nsteps);
        if (own.n)
            printf("own costs  median error %+.1f%% over %d steps (each step predicted with the costs "
                   "of its own spans)\n", 100 * own.median, own.n);
    }
    sc_ptrace_checked_free(&k);
    return 0;
}

/* costs' options: -o FILE (*out), --check (*check), --json (*json), the
 * limits; at least one trace after --from-trace or --check. */
static int parse_costs_args(int argc, char **argv, const char **out, int *check, int *json)
{
    int nfiles = 0, from = 0;
    char err[512];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int used;
        if (strcmp(a, "--from-trace") == 0)
            from = 1;
        else if (strcmp(a, "--check") == 0)
            from = *check = 1;
        else if (strcmp(a, "--json") == 0)
            *json = 1;
        else if (strcmp(a, "-o") == 0) {
            if (i + 1 >= argc)
                return sc_cli_failf(SC_EXIT_USAGE, "-o: missing FILE (the cost file to write; - for "
                             "standard output)");
            *out = argv[++i];
        } else if ((used = sc_limits_option(sc_cli_limits(), argc, argv, i, err, sizeof err)) != 0) {
            if (used < 0)
                return sc_cli_fail(SC_EXIT_USAGE, err);
            i += used - 1;
        } else if (a[0] == '-' && a[1])
            return sc_cli_failf(SC_EXIT_USAGE, "unknown option '%s' for 'costs' (" USAGE ")", a);
        else if (!from)
            return sc_cli_failf(SC_EXIT_USAGE, "unexpected argument '%s': " USAGE, a);
        else
            nfiles++;
    }
    if (!from || !nfiles)
        return sc_cli_failf(SC_EXIT_USAGE, "costs: missing --from-trace TRACE.json (torch.profiler "
                     "Chrome traces of a pipelined step: one per rank, or one merged)");
    if (*json && !*check)
        return sc_cli_failf(SC_EXIT_USAGE, "costs: --json is for --check (--from-trace writes JSON "
                            "already)");
    return 0;
}

/* The cost file to out (- or none: standard output), whole or not at all. */
static int write_costs(const char *out, const sc_costs *c)
{
    char err[512];
    sc_atomic *a = NULL;
    int rc = 0;
    FILE *f = out && strcmp(out, "-") ? sc_atomic_open(out, &a, err, sizeof err) : stdout;
    if (!f)
        rc = sc_cli_fail(SC_EXIT_USAGE, err);
    else if (sc_costs_write(f, c) != SC_OK && !a)
        rc = sc_cli_failf(SC_EXIT_USAGE, "cannot write the cost file: %s", strerror(errno));
    else if (a && (sc_atomic_close(a, err, sizeof err) || sc_atomic_commit(a, err, sizeof err)))
        rc = sc_cli_fail(SC_EXIT_USAGE, err);
    sc_atomic_free(a);
    return rc;
}

int sc_cli_costs(int argc, char **argv)
{
    const char *out = NULL;
    int check = 0, json = 0;
    char err[512];
    int rc = parse_costs_args(argc, argv, &out, &check, &json);
    if (rc)
        return rc;
    double deadline = sc_cli_deadline();
    if (out && strcmp(out, "-") && sc_atomic_check(out, err, sizeof err) != 0)
        return sc_cli_fail(SC_EXIT_USAGE, err);
    sc_ptrace *t = sc_ptrace_new();
    if (!t)
        return sc_cli_status_fail(SC_ERR_NOMEM, "out of memory");
    int from_i = 0;
    for (int i = 2; i < argc && !rc; i++) {
        int used;
        if (strcmp(argv[i], "--from-trace") == 0 || strcmp(argv[i], "--check") == 0)
            from_i = 1;
        else if (strcmp(argv[i], "--json") == 0)
            continue;
        else if (strcmp(argv[i], "-o") == 0)
            i++;
        else if ((used = sc_limits_option(sc_cli_limits(), argc, argv, i, err, sizeof err)) > 0)
            i += used - 1;
        else if (from_i)
            rc = add_file(t, argv[i], deadline);
    }
    sc_costs c;
    char note[600];
    sc_status st = rc ? SC_OK : sc_ptrace_costs(t, &c, deadline, note, sizeof note, err, sizeof err);
    int have = !rc && st == SC_OK; /* c is made: freed at the end */
    if (!rc && st == SC_ERR_LIMIT)
        rc = sc_cli_time_fail("computing the costs of the traces");
    else if (!rc && st == SC_ERR_NOMEM) /* err is not written then */
        rc = sc_cli_status_fail(st, "out of memory computing the costs of the traces");
    else if (!rc && st != SC_OK)
        rc = sc_cli_status_fail(st, "trace %s", err);
    if (!rc && note[0])
        fprintf(stderr, "stagecraft: note: %s\n", note);
    if (!rc && check)
        rc = print_check(t, &c, json);
    if (!rc && (!check || out))
        rc = write_costs(out, &c);
    if (have)
        sc_costs_free(&c);
    sc_ptrace_free(t);
    return rc;
}
