/*
 * common.c — what the commands of the command line share (cli.h): the
 * limits of every evaluation, the options that set them, evaluating a
 * recipe under them, and the one-line error.
 */
#include <errno.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/engine.h"
#include "formats/atomic.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"

/* The backstop of sc_limits.h: the command line owns its process, so it,
 * and not the library, may end it when a call outlives the time limit by
 * SC_LIMIT_GRACE seconds (only trusted code gets there: a finalizer that
 * loops). The one exit outside main's return besides the panic handler. */
static char backstop_msg[320];
static size_t backstop_len;
static int backstop_fd = -1; /* sc_error_fd(), read before the alarm */

static void backstop_ring(int sig)
{
    (void)sig;
    if (write(STDERR_FILENO, backstop_msg, backstop_len) < 0 ||
        (backstop_fd >= 0 && write(backstop_fd, backstop_msg, backstop_len) < 0))
        backstop_len = 0;
    _exit(SC_EXIT_LIMIT);
}

static void backstop(const sc_limits *lim, int on)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    if (on) {
        char msg[256];
        sc_limits_describe(lim, SC_LIMIT_TIME, msg, sizeof msg);
        int n = snprintf(backstop_msg, sizeof backstop_msg,
                         "stagecraft: error: %s; a library call did not return\n", msg);
        backstop_len = n < 0 ? 0 : (size_t)n < sizeof backstop_msg ? (size_t)n : sizeof backstop_msg - 1;
        backstop_fd = sc_error_fd();
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = backstop_ring;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        double t = lim->max_time + SC_LIMIT_GRACE;
        it.it_value.tv_sec = (time_t)t;
        it.it_value.tv_usec = (suseconds_t)((t - (double)(time_t)t) * 1e6);
    }
    setitimer(ITIMER_REAL, &it, NULL);
}

static sc_limits limits = {SC_DEFAULT_MAX_STEPS, SC_DEFAULT_MAX_MEM, SC_DEFAULT_MAX_TIME, 0, 0, 0, 0, 0,
                           SC_LIMIT_NONE, 0, 0, NULL, backstop};

int sc_cli_unknown_option(const char *opt, const char *cmd)
{
    static const char *const known[] = {
        "--json", "--ascii", "--dump", "--svg", "--trace", "--format", "-o", "--width", "--from",
        "--to", "--optimal", "--time-limit", "--comm", "--torch", "--torchtitan", "--trust",
        "--allow-write", "--max-steps", "--max-mem", "--max-time", "--with-program",
        "--expect-digest", "--export-optimal", "-D", "--model", "--layers"};
    char hint[160], msg[320];
    int near = sc_did_you_mean(hint, sizeof hint, opt, known, (int)(sizeof known / sizeof *known));
    snprintf(msg, sizeof msg, "unknown option '%.80s' for '%s'%s%s", opt, cmd, near ? "; " : "",
             hint);
    return sc_cli_fail(SC_EXIT_USAGE, msg);
}

int sc_cli_outputs_apart(const char *const *names, const char *const *paths, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (paths[i] && paths[j] && sc_atomic_same(paths[i], paths[j]))
                return sc_cli_failf(SC_EXIT_USAGE, "%s and %s name the same file '%s': give each "
                                    "output a file of its own", names[i], names[j], paths[j]);
    return 0;
}

int sc_cli_fail(int code, const char *msg)
{
    /* Messages carry recipes' text (their errors, names): no escape
     * sequence of theirs reaches the terminal. One write, so that the
     * lines of MPI ranks do not mix (stderr is unbuffered). */
    size_t n = strlen(msg) + 1; /* cleaning never lengthens */
    char *clean = malloc(n + 32);
    if (!clean) {
        fputs("stagecraft: error: ", stderr);
        sc_fputs_clean(msg, stderr, 1);
        fputc('\n', stderr);
        return code;
    }
    memcpy(clean, "stagecraft: error: ", 19);
    sc_clean_text(clean + 19, n, msg, 1);
    size_t k = strlen(clean);
    clean[k++] = '\n';
    fwrite(clean, 1, k, stderr);
    if (sc_error_fd() >= 0 && write(sc_error_fd(), clean, k) < 0)
        k = 0; /* the driver's channel is gone: stderr has the line */
    free(clean);
    return code;
}

int sc_cli_failf(int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sc_cli_fail(code, msg);
}

/* The engine words the failure (sc_eng_status_fail, sc_eng_lua_fail); the
 * command prints it. */
int sc_cli_status_fail(sc_status st, const char *fmt, ...)
{
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    va_list ap;
    va_start(ap, fmt);
    int code = sc_eng_vstatus_fail(&limits, st, fmt, ap);
    va_end(ap);
    sc_eng_release(prev);
    return sc_cli_fail(code, e.msg);
}

/* Exit code of the error on the stack top, then prints and pops it. */
int sc_cli_lua_fail(lua_State *L)
{
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    int code = sc_eng_lua_fail(L);
    sc_eng_release(prev);
    return sc_cli_fail(code, e.msg);
}

sc_limits *sc_cli_limits(void) { return &limits; }

double sc_cli_deadline(void)
{
    return limits.max_time > 0 ? sc_clock_now() + limits.max_time : 0;
}

int sc_cli_time_fail(const char *doing)
{
    return sc_cli_failf(SC_EXIT_LIMIT, "time limit exceeded: %s ran longer than %g s (--max-time "
                        "SECONDS raises it; 0 for no limit)", doing, limits.max_time);
}

int sc_cli_read(const char *path, const char *what, int format, double deadline, sc_read *rd)
{
    char err[256], name[300];
    if (what)
        snprintf(name, sizeof name, "%s %s", what, path);
    else
        snprintf(name, sizeof name, "'%s'", path);
    *rd = (sc_read){.format = format, .max_bytes = limits.max_mem, .deadline = deadline};
    sc_status st = sc_read_file(path, rd, err, sizeof err);
    if (st == SC_OK)
        return 0;
    if (st == SC_ERR_LIMIT && rd->over == SC_READ_OVER_TIME) {
        char doing[320];
        snprintf(doing, sizeof doing, "reading %s", name);
        return sc_cli_time_fail(doing);
    }
    if (st == SC_ERR_LIMIT)
        return sc_cli_failf(SC_EXIT_LIMIT, "%s is larger than the memory limit of %zu bytes "
                            "(--max-mem BYTES raises it; 0 for no limit)", name, limits.max_mem);
    if (st == SC_ERR_ARG && rd->errnum)
        return sc_cli_failf(SC_EXIT_USAGE, "cannot read '%s': %s", path, err);
    if (st == SC_ERR_ARG)
        return sc_cli_failf(SC_EXIT_ARG, "%s: %s", name, err);
    return sc_cli_status_fail(st, "%s: out of memory", name);
}

/* --trust, or one of the limits options. */
int sc_cli_option(lua_State *L, int argc, char **argv, int i, char *msg, size_t len)
{
    if (strcmp(argv[i], "--trust") == 0) {
        sc_sandbox_trust(L, 1);
        return 1;
    }
    if (strcmp(argv[i], "--allow-write") == 0) {
        if (i + 1 >= argc || sc_sandbox_grant_write(L, argv[i + 1]) != 0) {
            snprintf(msg, len, "--allow-write needs a folder that exists%s%.200s",
                     i + 1 < argc ? ": no folder " : "", i + 1 < argc ? argv[i + 1] : "");
            return -1;
        }
        return 2;
    }
    if (strcmp(argv[i], "--force-costs") == 0) { /* a cost file of another model (costs.c) */
        lua_getglobal(L, "sc");
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "_force_costs");
        lua_pop(L, 1);
        return 1;
    }
    return sc_limits_option(&limits, argc, argv, i, msg, len);
}

int sc_cli_define(int argc, char **argv, int *i, const char **name, size_t *nlen,
                  const char **value)
{
    const char *a = argv[*i];
    const char *kv = a[2] ? a + 2 : (*i + 1 < argc ? argv[++*i] : NULL);
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!kv || !eq || eq == kv)
        return sc_cli_fail(SC_EXIT_USAGE, "-D needs NAME=VALUE");
    *name = kv;
    *nlen = (size_t)(eq - kv);
    *value = eq + 1;
    return 0;
}

int sc_cli_define_into(lua_State *L, int argc, char **argv, int *i, int t)
{
    const char *name, *value;
    size_t nlen;
    int rc = sc_cli_define(argc, argv, i, &name, &nlen, &value);
    if (rc)
        return rc;
    sc_eng_grant(L, name, nlen, value);
    lua_pushlstring(L, name, nlen);
    lua_pushstring(L, value);
    lua_settable(L, t);
    return 0;
}

int sc_cli_time_limit(lua_State *L, int argc, char **argv, int *i, double *out)
{
    char *end = NULL;
    double tl = *i + 1 < argc ? strtod(argv[++*i], &end) : -1;
    if (!end || *end || !(tl >= 0) || tl > 1e9)
        return sc_cli_fail(SC_EXIT_USAGE, "--time-limit needs a number of seconds >= 0");
    sc_eng_set_time_limit(L, tl);
    if (out)
        *out = tl;
    return 0;
}

int sc_cli_time(int argc, char **argv, int *i, double *out)
{
    const char *a = argv[*i];
    char *end = NULL;
    double x = *i + 1 < argc ? strtod(argv[++*i], &end) : -1;
    if (!end || *end || !(x >= 0) || !isfinite(x)) {
        char msg[64];
        snprintf(msg, sizeof msg, "%.16s needs a time >= 0", a);
        return sc_cli_fail(SC_EXIT_USAGE, msg);
    }
    *out = x;
    return 0;
}

/* `--model FILE` (and --model=FILE) of every command: -D model=FILE
 * (docs/model.md), and --layers SPEC of every command but plan (which has
 * its own): -D split=SPEC, rewritten in place; the texts made are freed at
 * the end. */
static char *model_args[16];
static int nmodel_args;

int sc_cli_model_options(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--layers") == 0 && strcmp(argv[1], "plan") != 0) {
            /* the model's split (docs/model.md#the-split): -D split=SPEC */
            if (i + 1 >= argc || !argv[i + 1][0])
                return sc_cli_fail(SC_EXIT_USAGE, "--layers needs the split: even, best, "
                                                  "counts per stage ([4,4,4,4]) or a Megatron "
                                                  "layout (Et*4|t*4|t*4|t*4L)");
            size_t n = strlen(argv[i + 1]) + 7;
            char *d = malloc(n);
            if (!d)
                return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
            snprintf(d, n, "split=%s", argv[i + 1]);
            if (nmodel_args == (int)(sizeof model_args / sizeof *model_args)) {
                free(d);
                return sc_cli_fail(SC_EXIT_USAGE, "--layers: at most 16");
            }
            model_args[nmodel_args++] = d;
            argv[i] = "-D";
            argv[++i] = d;
            continue;
        }
        if (strcmp(argv[i], "--model") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return sc_cli_fail(SC_EXIT_USAGE, "--model needs a FILE (a Hugging Face "
                                                  "config.json)");
            v = argv[i + 1];
        } else if (strncmp(argv[i], "--model=", 8) == 0) {
            v = argv[i] + 8;
        } else if (strcmp(argv[i], "-D") == 0) {
            i++; /* a -D's value is not an option */
            continue;
        } else {
            continue;
        }
        if (nmodel_args == (int)(sizeof model_args / sizeof *model_args))
            return sc_cli_fail(SC_EXIT_USAGE, "--model: at most 16");
        size_t n = strlen(v) + 9;
        char *d = malloc(n);
        if (!d)
            return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
        snprintf(d, n, "%smodel=%s", argv[i][7] == '=' ? "-D" : "", v);
        model_args[nmodel_args++] = d;
        if (argv[i][7] == '=') {
            argv[i] = d;
        } else {
            argv[i] = "-D";
            argv[++i] = d;
        }
    }
    return 0;
}

void sc_cli_model_options_free(void)
{
    for (int i = 0; i < nmodel_args; i++)
        free(model_args[i]);
    nmodel_args = 0;
}
