/*
 * cli_export.c — export, show --svg/--trace and import (cli.h).
 */
#include "compile.h"
#include "cli.h"
#include "ir/p2p.h"
#include "engine/export_out.h"
#include "engine/sim_out.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/atomic.h"
#include "formats/export.h"
#include "formats/json.h"
#include "formats/render.h"
#include "formats/svg.h"
#include "formats/torchcsv.h"
#include "formats/trace.h"
#include "ir/alloc.h"

/* What one output needs: the program, its simulation, a name. */
typedef struct job {
    const char *format;
    sc_prog *pg;
    const sc_sim *sim;
    const char *name;
    const sc_sim *measured; /* trace only: a runtime's timeline (seconds) */
    int seconds;            /* the simulation is in seconds too: not scaled */
    int torch;              /* torch-csv*: the PyTorch version (torchcsv.h) */
    const sc_svg_opts *svg; /* svg only: width, window; NULL: the defaults */
    int n;                  /* svg only: > 0, a stack of n programs (below) */
    const sc_prog *const *pgs;
    const sc_sim *const *sims;
    const char *const *titles;
} job;

static sc_status write_job(FILE *f, const job *j)
{
    const char *fm = j->format;
    if (strcmp(fm, "svg") == 0 && j->n > 0)
        return sc_svg_write_stack(f, j->n, j->pgs, j->sims, j->titles, j->svg);
    if (strcmp(fm, "trace") != 0 || !j->measured) /* one program: the library's writer */
        return sc_eng_export_write(f, j->pg, j->sim, fm, j->name, j->torch, j->svg);
    if (j->measured && j->seconds) {
        /* Both in seconds: side by side on one clock. */
        sc_timing t[2] = {{j->measured, "measured", 1e6},
                          {j->sim, "predicted (seconds, from the measured costs)", 1e6}};
        return sc_trace_write(f, j->pg, t, 2);
    }
    /* Simulated times scaled so that both timelines span the same. */
    double mk = 0, sim_mk = j->sim->makespan;
    for (int d = 0; d < sc_prog_devices(j->pg); d++)
        for (size_t k = j->measured->offset[d]; k < j->measured->offset[d + 1]; k++)
            mk = mk > j->measured->t1[k] ? mk : j->measured->t1[k];
    sc_timing t[2] = {{j->measured, "measured", 1e6},
                      {j->sim, "simulated (scaled to the measured step)",
                       sim_mk > 0 ? mk * 1e6 / sim_mk : 0}};
    return sc_trace_write(f, j->pg, t, 2);
}

static int write_outputs(const job *jobs, const char *const *paths, int n);

int sc_cli_export_name_check(const sc_prog *pg, const char *out, const char *format)
{
    int named = strcmp(format, "torch-csv-comms") == 0 ? sc_cli_comm_of_name(out) : -1;
    int mode = sc_prog_p2p(pg);
    if (named < 0 || named == mode)
        return 0;
    return sc_cli_failf(SC_EXIT_USAGE, "'%s' names the %s mode, but the program is verified in the "
                        "%s mode: give --comm %s, or name the file *.%s.csv (docs/modes.md#files)",
                        out, sc_p2p_name(named), sc_p2p_name(mode), sc_p2p_name(named),
                        sc_p2p_name(mode));
}

int sc_cli_run_trace(const char *path, sc_prog *pg, const sc_sim *sim, const sc_sim *measured,
                     int seconds)
{
    job j = {.format = "trace", .pg = pg, .sim = sim, .name = "run", .measured = measured,
             .seconds = seconds, .torch = SC_TORCH_CURRENT};
    return write_outputs(&j, &path, 1);
}

static int is_stdout(const char *path)
{
    return !path || strcmp(path, "-") == 0;
}

/* Writes job i to paths[i] ("-" or NULL: stdout), all or nothing: every
 * file is opened before anything is written (a path that cannot be written
 * fails first), and renamed into place only when every output was written
 * whole (atomic.h: temporary files, links followed, FIFOs and devices
 * written directly, the mode of a replaced file kept). */
static int write_outputs(const job *jobs, const char *const *paths, int n)
{
    enum { MAX_OUT = 4 };
    sc_atomic *a[MAX_OUT] = {0};
    FILE *f[MAX_OUT];
    char err[512];
    int rc = 0, i;
    for (i = 0; i < n && i < MAX_OUT; i++)
        if (!(f[i] = is_stdout(paths[i]) ? stdout : sc_atomic_open(paths[i], &a[i], err, sizeof err))) {
            rc = sc_cli_failf(SC_EXIT_USAGE, "%s", err);
            goto done;
        }
    for (i = 0; i < n && i < MAX_OUT; i++) {
        sc_status st = write_job(f[i], &jobs[i]);
        if (st && !ferror(f[i])) { /* not the file's fault: the program's or memory */
            const char *m = jobs[i].pg ? sc_errmsg(jobs[i].pg) : ""; /* a stack: none */
            rc = st == SC_ERR_NOMEM ? sc_cli_failf(SC_EXIT_NOMEM, "out of memory writing %s", jobs[i].format)
                                    : sc_cli_failf(sc_status_exit_code(st), "cannot write %s: %s",
                                            jobs[i].format, m[0] ? m : "error");
            goto done;
        }
        if (!a[i] && (fflush(stdout) != 0 || ferror(stdout))) {
            rc = sc_cli_failf(SC_EXIT_USAGE, "cannot write the output (standard output): %s",
                       errno ? strerror(errno) : "write error");
            goto done;
        }
    }
    for (i = 0; i < n && i < MAX_OUT; i++)
        if (a[i] && sc_atomic_close(a[i], err, sizeof err) != 0) {
            rc = sc_cli_failf(SC_EXIT_USAGE, "%s", err);
            goto done;
        }
    for (i = 0; i < n && i < MAX_OUT; i++)
        if (a[i] && sc_atomic_commit(a[i], err, sizeof err) != 0) {
            rc = sc_cli_failf(SC_EXIT_USAGE, "%s", err);
            goto done;
        }
done:
    for (i = 0; i < n && i < MAX_OUT; i++)
        sc_atomic_free(a[i]);
    return rc;
}

/* Verifies and simulates (the replay that times it verifies: no check
 * before it); prints the error and returns its exit code. */
static int prepare(sc_lprog *lp, const sc_sim **sim)
{
    sc_status st;
    *sim = sc_lua_sim(lp, &st);
    if (st)
        return sc_cli_status_fail(st, "%s%s", lp->where, sc_errmsg(lp->pg));
    return 0;
}

int sc_cli_program_digest(sc_lprog *lp, char hex[17])
{
    sc_status st = sc_eng_program_digest(lp, hex);
    if (st)
        return st == SC_ERR_NOMEM && !sc_errmsg(lp->pg)[0]
                   ? sc_cli_failf(SC_EXIT_NOMEM, "out of memory")
                   : sc_cli_status_fail(st, "%s%s", lp->where, sc_errmsg(lp->pg));
    return 0;
}

int sc_cli_expect_digest(sc_lprog *lp, const char *recipe, const char *hex)
{
    char got[17];
    int rc = sc_cli_program_digest(lp, got);
    if (rc || strcmp(got, hex) == 0)
        return rc;
    return sc_cli_failf(SC_EXIT_RECIPE, "%s: this evaluation gave another program than the one "
                        "loaded (digest %s, expected %s): the recipe depends on something that "
                        "changed between its evaluations (the clock, a file it reads, a search "
                        "under a time limit); a program must come out the same every time, as "
                        "every rank evaluates it", recipe, got, hex);
}

int sc_cli_svg_stack(const char *path, int n, const sc_prog *const *pgs,
                     const sc_sim *const *sims, const char *const *titles, const sc_svg_opts *o)
{
    job j = {.format = "svg", .torch = SC_TORCH_CURRENT, .svg = o, .n = n, .pgs = pgs,
             .sims = sims, .titles = titles};
    return write_outputs(&j, &path, 1);
}

int sc_cli_write_optimal(const char *path, const char *lua)
{
    char err[512];
    sc_atomic *a = NULL;
    if (!lua)
        return sc_cli_fail(SC_EXIT_USAGE, "--export-optimal: no schedule to write (the optimal "
                                          "line says why)");
    FILE *f = sc_atomic_open(path, &a, err, sizeof err);
    int rc = 0;
    if (!f)
        return sc_cli_failf(SC_EXIT_USAGE, "%s", err);
    fputs(lua, f);
    if (sc_atomic_close(a, err, sizeof err) != 0 || sc_atomic_commit(a, err, sizeof err) != 0)
        rc = sc_cli_failf(SC_EXIT_USAGE, "%s", err);
    sc_atomic_free(a);
    return rc;
}

int sc_cli_export(const char *recipe, const char *format, const char *out, const char *torch,
                  int titan, sc_lprog *lp, const sc_svg_opts *svg)
{
    const sc_sim *sim = NULL;
    int version, rc;
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    rc = sc_eng_export_prepare(NULL, lp, format, torch, titan, &version, &sim);
    sc_eng_release(prev);
    if (rc)
        return sc_cli_fail(rc, e.msg);
    int csv = strncmp(format, "torch-csv", 9) == 0, comms = strcmp(format, "torch-csv-comms") == 0;
    if (csv && ((rc = sc_cli_export_name_check(lp->pg, out, format)) ||
                (rc = sc_cli_torch_note(lp->pg, out, comms, version, titan))))
        return rc;
    job j = {.format = format, .pg = lp->pg, .sim = sim, .name = recipe, .torch = version,
             .svg = svg};
    return write_outputs(&j, &out, 1);
}

int sc_cli_show_files(const char *recipe, const char *svg, const char *trace, int text,
                      sc_lprog *lp, const sc_svg_opts *so)
{
    if (text)
        return sc_cli_fail(SC_EXIT_USAGE, "show: --ascii and --dump print to the terminal, "
                                          "--svg and --trace write files: give one kind");
    const sc_sim *sim = NULL;
    int rc = prepare(lp, &sim);
    if (rc)
        return rc;
    job jobs[2];
    const char *paths[2];
    int n = 0;
    if (svg) {
        jobs[n] = (job){.format = "svg", .pg = lp->pg, .sim = sim, .name = recipe,
                        .torch = SC_TORCH_CURRENT, .svg = so};
        paths[n++] = svg;
    }
    if (trace) {
        jobs[n] = (job){.format = "trace", .pg = lp->pg, .sim = sim, .name = recipe,
                        .torch = SC_TORCH_CURRENT};
        paths[n++] = trace;
    }
    return write_outputs(jobs, paths, n);
}

/* ---- import ------------------------------------------------------------- */

typedef struct costs {
    double tf, tb, tw, tcomm, w_keep, mem;
    double fsdp_time, reduce_time; /* FSDP's all-gather, reduce-scatter; NAN: not given */
    double msg_bytes;              /* every message's size, for --eager-bytes; 0: not given */
    const char *file;              /* -D costs=FILE: a cost file (docs/costs.md); NULL: none */
} costs;

#define IMPORT_DEFINES 9

/* -D NAME=VALUE of import: the cost and memory model; an FSDP file's
 * all-gather and reduce-scatter times (docs/fsdp.md#interchange); the
 * messages' size (docs/modes.md#crossing-cells). */
static int import_define(const char *kv, costs *c)
{
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!kv || !eq || eq == kv)
        return sc_cli_failf(SC_EXIT_USAGE, "-D needs NAME=VALUE");
    if (eq - kv == 5 && strncmp(kv, "costs", 5) == 0) { /* a file: the times in seconds */
        if (!eq[1])
            return sc_cli_failf(SC_EXIT_USAGE, "parameter 'costs': expected a cost file");
        c->file = eq + 1;
        return 0;
    }
    char *end;
    double x = strtod(eq + 1, &end);
    /* strtod reads "nan" and "inf": a time is a finite number, and NaN
     * would pass below for "not given" (fsdp_time). */
    if (end == eq + 1 || *end || !isfinite(x))
        return sc_cli_failf(SC_EXIT_USAGE, "parameter '%.*s': expected a number, got '%s'", (int)(eq - kv),
                     kv, eq + 1);
    static const char *const names[IMPORT_DEFINES] = {"tf", "tb", "tw", "tcomm", "w_keep", "mem",
                                                      "fsdp_time", "reduce_time", "msg_bytes"};
    double *slots[IMPORT_DEFINES] = {&c->tf, &c->tb, &c->tw, &c->tcomm, &c->w_keep, &c->mem,
                                     &c->fsdp_time, &c->reduce_time, &c->msg_bytes};
    for (int i = 0; i < IMPORT_DEFINES; i++)
        if (strlen(names[i]) == (size_t)(eq - kv) && strncmp(kv, names[i], (size_t)(eq - kv)) == 0) {
            *slots[i] = x;
            return 0;
        }
    return sc_cli_failf(SC_EXIT_USAGE, "unknown parameter '%.*s' for import (its parameters: tf, tb, tw, "
                 "tcomm, costs, w_keep, mem, fsdp_time, reduce_time, msg_bytes)", (int)(eq - kv), kv);
}

static sc_status apply_costs(sc_prog *pg, const costs *c)
{
    double share = (double)sc_prog_devices(pg) / sc_prog_stages(pg);
    sc_status st;
    if ((st = sc_prog_set_cost(pg, -1, c->tf * share, c->tb * share, c->tw * share)) ||
        (st = sc_prog_set_mem(pg, -1, c->mem * share)) || (st = sc_prog_set_comm(pg, c->tcomm)) ||
        (st = sc_prog_set_w_keep(pg, c->w_keep)))
        return st;
    /* An FSDP file (one with UNSHARD): its all-gathers and reduce-scatters
     * take the given times (the reduce-scatter: the all-gather's unless
     * given). The caller refused them for a file without. */
    sc_fsdp_cfg f = *sc_prog_fsdp(pg);
    if (!f.dp || (isnan(c->fsdp_time) && isnan(c->reduce_time)))
        return SC_OK;
    f.time = isnan(c->fsdp_time) ? f.time : c->fsdp_time;
    f.reduce_time = c->reduce_time;
    return sc_prog_set_fsdp(pg, &f);
}

static void report(const char *path, sc_torch_dialect dialect, sc_prog *pg, const sc_sim *sim,
                   int json)
{
    int P = sc_prog_devices(pg);
    double peak = 0;
    for (int d = 0; d < P; d++)
        peak = fmax(peak, sim->peak_mem[d]);
    const char *dn = dialect == SC_TORCH_COMPUTE_ONLY ? "compute_only" : "compute_comms";
    if (json) {
        sc_jw w;
        sc_jw_init(&w, stdout);
        sc_jw_object(&w, NULL);
        sc_jw_str(&w, "file", path);
        sc_jw_str(&w, "dialect", dn);
        sc_jw_int(&w, "devices", P);
        sc_jw_int(&w, "stages", sc_prog_stages(pg));
        sc_jw_int(&w, "microbatches", sc_prog_microbatches(pg));
        sc_jw_int(&w, "instructions", (long long)sc_prog_total_instructions(pg));
        sc_jw_num(&w, "makespan", sim->makespan);
        sc_jw_num(&w, "bubble_rate", sim->bubble_rate);
        sc_jw_nums(&w, "peak_memory", sim->peak_mem, P);
        sc_jw_num(&w, "peak_memory_max", peak);
        sc_jw_nums(&w, "busy", sim->busy, P);
        if (sc_prog_seconds(pg)) { /* -D costs=FILE: the step in seconds (docs/costs.md) */
            sc_jw_str(&w, "time_unit", "s");
            sc_jw_num(&w, "predicted_step_time_s", sim->step);
        }
        sc_jw_end(&w);
        putchar('\n');
        return;
    }
    printf("file          %s (PyTorch pipelining CSV, %s)\n", path, dn);
    printf("devices       %d\nstages        %d\nmicrobatches  %d\ninstructions  %zu verified\n", P,
           sc_prog_stages(pg), sc_prog_microbatches(pg), sc_prog_total_instructions(pg));
    const char *unit = sc_prog_seconds(pg) ? " s" : "";
    printf("makespan      %.6g%s\nbubble rate   %.4f%%\npeak memory   %.4g units (max)\n",
           sim->makespan, unit, 100 * sim->bubble_rate, peak);
    if (*unit)
        printf("step time     %.6g s (predicted: the last instruction, OPTIM included)\n", sim->step);
    char *t = sc_render_timeline(pg, sim, 120, 0);
    if (t)
        fputs(t, stdout);
    free(t);
}

int sc_cli_comm_of_name(const char *path)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    size_t n = base ? strlen(base) : 0;
    if (n < 4 || strcmp(base + n - 4, ".csv") != 0)
        return -1;
    for (int mode = SC_P2P_NCCL; mode <= SC_P2P_LINK; mode++) {
        const char *name = sc_p2p_name(mode);
        size_t k = strlen(name);
        if (n > k + 5 && base[n - k - 5] == '.' && strncmp(base + n - k - 4, name, k) == 0)
            return mode;
    }
    return -1;
}

/* What the command line of `import` asks for. */
typedef struct import_opts {
    const char *path, *format, *out, *torch;
    int json, dump, p2p, version, force;
    costs c;
    double eager; /* --eager-bytes: NCCL's eager sends (docs/modes.md#crossing-cells) */
} import_opts;

/* import's arguments into o, checked; 0 or the exit code (its message
 * printed). */
static int import_args(int argc, char **argv, import_opts *o)
{
    int rc;
    char msg[160];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "-D", 2) == 0) {
            if ((rc = import_define(a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL), &o->c)))
                return rc;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (strcmp(a, "--dump") == 0) {
            o->dump = 1;
        } else if (strcmp(a, "--force-costs") == 0) { /* -D costs= of other stages */
            o->force = 1;
        } else if (strcmp(a, "--format") == 0 || strcmp(a, "-o") == 0 || strcmp(a, "--torch") == 0) {
            /* write the program (our lowering of a compute_only file) as
             * export does (docs/cli.md) */
            if (i + 1 >= argc)
                return sc_cli_failf(SC_EXIT_USAGE, "%s needs a value", a);
            *(a[1] == 'o' ? &o->out : a[2] == 'f' ? &o->format : &o->torch) = argv[++i];
        } else if (strcmp(a, "--comm") == 0) {
            /* the runtime's point-to-point semantics (docs/semantics.md#modes) */
            const char *v = i + 1 < argc ? argv[++i] : "";
            if ((o->p2p = sc_p2p_parse(v)) < 0)
                return sc_cli_failf(SC_EXIT_USAGE, "--comm '%s': expected " SC_P2P_NAMES, v);
        } else if (strcmp(a, "--eager-bytes") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            char *end;
            o->eager = strtod(v, &end);
            if (end == v || *end || !(o->eager >= 0) || !isfinite(o->eager))
                return sc_cli_failf(SC_EXIT_USAGE, "--eager-bytes '%s': expected bytes >= 0", v);
        } else if ((rc = sc_limits_option(sc_cli_limits(), argc, argv, i, msg, sizeof msg)) != 0) {
            if (rc < 0) /* --max-mem, --max-time (docs/sandbox.md#files-read) */
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            i += rc - 1;
        } else if (a[0] == '-' && a[1]) {
            return sc_cli_failf(SC_EXIT_USAGE, "unknown option '%s' for 'import'", a);
        } else if (!o->path) {
            o->path = a;
        } else {
            return sc_cli_failf(SC_EXIT_USAGE, "unexpected argument '%s'", a);
        }
    }
    if (!o->path)
        return sc_cli_failf(SC_EXIT_USAGE, "missing FILE.csv (a PyTorch pipelining schedule)");
    if (!(o->c.msg_bytes >= 0) || !isfinite(o->c.msg_bytes))
        return sc_cli_failf(SC_EXIT_USAGE, "msg_bytes: expected bytes >= 0, got %g",
                            o->c.msg_bytes);
    if (o->eager > 0 && o->c.msg_bytes == 0)
        return sc_cli_failf(SC_EXIT_USAGE, "--eager-bytes needs the size of the messages, which a "
                            "file does not hold: -D msg_bytes=BYTES (docs/modes.md#crossing-cells)");
    if ((o->out || o->torch) && !o->format)
        return sc_cli_failf(SC_EXIT_USAGE, "%s goes with --format", o->out ? "-o" : "--torch");
    if (o->format && sc_export_format_named(o->format) < 0)
        return sc_cli_failf(SC_EXIT_USAGE, "unknown format '%s' (%s)", o->format,
                            sc_export_format_list());
    if (o->format && (o->json || o->dump))
        return sc_cli_failf(SC_EXIT_USAGE, "--format writes the program: not with %s",
                            o->json ? "--json" : "--dump");
    if (o->torch && (strncmp(o->format, "torch-csv", 9) != 0 ||
                     sc_cli_torch_version(o->torch, &o->version)))
        return strncmp(o->format, "torch-csv", 9) != 0
                   ? sc_cli_failf(SC_EXIT_USAGE, "--torch applies to --format torch-csv and "
                                                "torch-csv-comms only")
                   : SC_EXIT_USAGE;
    /* The mode the file's name states (docs/modes.md#files), unless --comm
     * names one. */
    if (o->p2p < 0 && (o->p2p = sc_cli_comm_of_name(o->path)) < 0)
        o->p2p = SC_P2P_NCCL;
    return 0;
}

/* What import prints or writes of pg, checked and simulated (sim): the
 * export of --format, --dump's text, or the report. */
static int import_output(import_opts *o, sc_prog *pg, sc_sim *sim,
                         sc_torch_dialect dialect)
{
    int rc = 0;
    if (o->format) {
        int csv = strncmp(o->format, "torch-csv", 9) == 0;
        if (csv && (rc = sc_cli_export_name_check(pg, o->out, o->format)) == 0)
            rc = sc_cli_torch_note(pg, o->out, strcmp(o->format, "torch-csv-comms") == 0,
                                   o->version, 0);
        job j = {.format = o->format, .pg = pg, .sim = sim, .name = o->path, .torch = o->version};
        if (rc == 0)
            rc = write_outputs(&j, &o->out, 1);
    } else if (o->dump) {
        char *s = sc_render_dump(pg);
        if (s)
            fputs(s, stdout);
        else
            rc = sc_cli_failf(SC_EXIT_NOMEM, "out of memory");
        free(s);
    } else {
        report(o->path, dialect, pg, sim, o->json);
    }
    return rc;
}

int sc_cli_import(int argc, char **argv)
{
    import_opts o = {.p2p = -1, .version = SC_TORCH_CURRENT,
                     .c = {1, 1, 1, 0, 1, 1, NAN, NAN, 0, NULL}};
    int rc = import_args(argc, argv, &o);
    if (rc)
        return rc;
    /* The text is held while the program is read from it: it counts
     * against --max-mem like a recipe's heap (docs/sandbox.md#limits-on-evaluation),
     * and reading it and the program from it against --max-time. */
    double deadline = sc_cli_deadline();
    sc_read rd;
    if ((rc = sc_cli_read(o.path, NULL, SC_READ_TEXT, deadline, &rd)) != 0)
        return rc;
    char err[512];
    sc_status st;
    sc_torch_dialect dialect;
    sc_prog *pg = sc_torchcsv_read_until(rd.text, rd.len, deadline, &dialect, &st, err, sizeof err);
    sc_free(rd.text);
    if (!pg && st == SC_ERR_LIMIT && sc_deadline_passed(deadline)) {
        char doing[300];
        snprintf(doing, sizeof doing, "reading '%s'", o.path);
        return sc_cli_time_fail(doing);
    }
    if (!pg)
        return sc_cli_status_fail(st, "%s: %s", o.path, err);
    if (!sc_prog_fsdp(pg)->dp && (!isnan(o.c.fsdp_time) || !isnan(o.c.reduce_time))) {
        sc_prog_free(pg);
        return sc_cli_failf(SC_EXIT_USAGE, "%s: fsdp_time and reduce_time time FSDP's UNSHARD and "
                            "REDUCE_GRAD, and the file has none (docs/fsdp.md#interchange)", o.path);
    }
    sc_sim *sim = NULL;
    /* Written as a compute_comms file (lowered for its reading), or read
     * from one (the reader's target): p2p.h. */
    int target = o.format && strcmp(o.format, "torch-csv-comms") == 0 ? SC_LOWER_FILE
                                                                      : sc_prog_lower_target(pg);
    /* A cost file overrides the times of -D tf, tb, tw, tcomm (docs/costs.md). */
    if ((st = apply_costs(pg, &o.c)) == SC_OK && o.c.file &&
        (rc = sc_cli_apply_cost_file(pg, o.c.file, o.force, deadline)) != 0) {
        sc_prog_free(pg);
        return rc;
    }
    if (st || (st = sc_prog_set_p2p(pg, o.p2p)) ||
        (st = sc_prog_set_eager(pg, o.eager, o.c.msg_bytes)) ||
        (st = sc_prog_set_lower_target(pg, target)) || (st = sc_check(pg)) ||
        (st = sc_simulate(pg, &sim))) {
        rc = sc_cli_status_fail(st, "%s: %s", o.path, sc_errmsg(pg));
    } else {
        rc = import_output(&o, pg, sim, dialect);
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
    return rc;
}
