/*
 * cli_costs.c — stagecraft costs --from-trace TRACE.json... [-o FILE]: a
 * cost file from torch.profiler traces of a pipelined step
 * (docs/costs.md#costs-from-a-pytorch-trace; the reading is ptrace.h's).
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/atomic.h"
#include "formats/ptrace.h"

/* Reads one trace into t; 0, or the exit code after the error line. Each
 * file's text and tree are freed before the next is read: a trace of
 * 10 MB holds a tree of about ten times that. */
static int add_file(sc_ptrace *t, const char *path)
{
    size_t len = 0, cap = sc_cli_limits()->max_mem;
    int e;
    char *text = sc_cli_read_all(path, cap, &len, &e);
    if (!text && e == E2BIG)
        return sc_cli_failf(SC_EXIT_LIMIT, "trace %s is larger than the memory limit of %zu bytes "
                     "(--max-mem BYTES raises it; 0 for no limit)", path, cap);
    if (!text)
        return sc_cli_failf(e == ENOMEM ? SC_EXIT_NOMEM : SC_EXIT_USAGE, "cannot read '%s': %s", path,
                     strerror(e));
    char err[512];
    sc_jv *root = NULL;
    sc_status st = sc_json_parse(text, len, &root, err, sizeof err);
    free(text);
    int json = st == SC_ERR_ARG; /* "line 3: ..." of the JSON reader */
    if (st == SC_OK)
        st = sc_ptrace_add(t, path, root, err, sizeof err);
    sc_jv_free(root);
    if (st == SC_ERR_NOMEM)
        return sc_cli_failf(SC_EXIT_NOMEM, "trace %s: out of memory", path);
    if (json)
        return sc_cli_failf(SC_EXIT_ARG, "trace %s: %s", path, err);
    return st == SC_OK ? 0 : sc_cli_failf(SC_EXIT_ARG, "trace %s", err);
}

int sc_cli_costs(int argc, char **argv)
{
    const char *out = NULL;
    int nfiles = 0, from = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--from-trace") == 0)
            from = 1;
        else if (strcmp(a, "-o") == 0) {
            if (i + 1 >= argc)
                return sc_cli_failf(SC_EXIT_USAGE, "-o: missing FILE (the cost file to write; - for "
                             "standard output)");
            out = argv[++i];
        } else if (a[0] == '-' && a[1])
            return sc_cli_failf(SC_EXIT_USAGE, "unknown option '%s' for 'costs' (costs --from-trace "
                         "TRACE.json... [-o FILE])", a);
        else if (!from)
            return sc_cli_failf(SC_EXIT_USAGE, "unexpected argument '%s': costs --from-trace "
                         "TRACE.json... [-o FILE]", a);
        else
            nfiles++;
    }
    if (!from || !nfiles)
        return sc_cli_failf(SC_EXIT_USAGE, "costs: missing --from-trace TRACE.json (torch.profiler "
                     "Chrome traces of a pipelined step: one per rank, or one merged)");
    char err[512];
    sc_atomic *a = NULL;
    if (out && strcmp(out, "-") && sc_atomic_check(out, err, sizeof err) != 0)
        return sc_cli_fail(SC_EXIT_USAGE, err);
    sc_ptrace *t = sc_ptrace_new();
    if (!t)
        return sc_cli_failf(SC_EXIT_NOMEM, "out of memory");
    int rc = 0, from_i = 0;
    for (int i = 2; i < argc && !rc; i++) {
        if (strcmp(argv[i], "--from-trace") == 0)
            from_i = 1;
        else if (strcmp(argv[i], "-o") == 0)
            i++;
        else if (from_i)
            rc = add_file(t, argv[i]);
    }
    sc_costs c;
    char note[300];
    sc_status st = rc ? SC_OK : sc_ptrace_costs(t, &c, note, sizeof note, err, sizeof err);
    if (!rc && st != SC_OK)
        rc = st == SC_ERR_NOMEM ? sc_cli_failf(SC_EXIT_NOMEM, "out of memory")
                                : sc_cli_failf(SC_EXIT_ARG, "trace %s", err);
    if (!rc) {
        if (note[0])
            fprintf(stderr, "stagecraft: note: %s\n", note);
        FILE *f = out && strcmp(out, "-") ? sc_atomic_open(out, &a, err, sizeof err) : stdout;
        if (!f)
            rc = sc_cli_fail(SC_EXIT_USAGE, err);
        else if (sc_costs_write(f, &c) != SC_OK && !a)
            rc = sc_cli_failf(SC_EXIT_USAGE, "cannot write the cost file: %s", strerror(errno));
        else if (a && (sc_atomic_close(a, err, sizeof err) || sc_atomic_commit(a, err, sizeof err)))
            rc = sc_cli_fail(SC_EXIT_USAGE, err);
        sc_atomic_free(a);
        sc_costs_free(&c);
    }
    sc_ptrace_free(t);
    return rc;
}
