/*
 * main.c — the stagecraft command line (docs/cli.md).
 *
 *   stagecraft                        REPL (stdin as a script when not a TTY)
 *   stagecraft FILE.lua [args...]     run a script, like lua(1)
 *   stagecraft COMMAND ...            a command of lang/core/commands.h: its
 *                                     handler cmd_<id> below (export and
 *                                     import: cli_export.c; compare and
 *                                     sweeps: cmd_compare.c; run: cmd_run.c)
 *
 * Options --trust, --allow-write DIR, --max-steps N, --max-mem BYTES, --max-time SECONDS
 * (docs/interchange.md) come before the command or FILE.lua, or anywhere after a
 * recipe command.
 *
 * Errors: one line on stderr, "stagecraft: error: ...", and the exit code
 * of the error's class. Nothing else here calls exit().
 */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/commands.h"
#include "cmd_compare.h"
#include "cmd_plan.h"
#include "cmd_run.h"
#include "engine/engine.h"
#include "formats/json.h"
#include "formats/render.h"
#include "ir/alloc.h"
#include "repl/repl.h"
#include "model/flops.h"
#include "ir/offload_cfg.h"
#include "ir/p2p.h"
#include "lua/auto.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"
#include "lua/sc_lua.h"
#include "engine/sim_out.h"

typedef struct opts {
    const char *cmd, *recipe;
    int json, dump, width, trust;
    const char *svg, *trace, *format, *out; /* show --svg/--trace, export */
    double from, to;                        /* show, export: the time window */
    const char *torch;                      /* export --torch VERSION */
    int titan;                              /* export --torchtitan */
    int comm;                               /* --comm: SC_P2P_* + 1, 0: the recipe's */
    int defs;                               /* the overrides table's index */
    double optimal;                         /* sim --optimal[=S]: its time limit; 0: none */
    const char *export_optimal;             /* sim --export-optimal FILE */
    int with_program;                       /* sim --json --with-program */
    const char *expect;                     /* --expect-digest HEX */
} opts;

/* Parses RECIPE, -D k=v and flags; fills the overrides table at index t. */
static int parse_args(lua_State *L, int argc, char **argv, int t, opts *o)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        char msg[128];
        int used, rc;
        if (strncmp(a, "-D", 2) == 0) {
            if ((rc = sc_cli_define_into(L, argc, argv, &i, t)))
                return rc;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (strcmp(a, "--ascii") == 0 || strcmp(a, "--dump") == 0) {
            int v = a[2] == 'd' ? 1 : 2; /* dump: 0 none given, 1 --dump, 2 --ascii */
            if (o->dump && o->dump != v)
                return sc_cli_fail(SC_EXIT_USAGE, "show: --ascii and --dump are two views: give one");
            o->dump = v;
        } else if (strcmp(a, "--time-limit") == 0) {
            if ((rc = sc_cli_time_limit(L, argc, argv, &i, NULL)))
                return rc;
        } else if (strncmp(a, "--optimal", 9) == 0 && (!a[9] || a[9] == '=')) {
            o->optimal = a[9] ? strtod(a + 10, NULL) : 10;
            if (!(o->optimal > 0 && o->optimal <= 1e6))
                return sc_cli_fail(SC_EXIT_USAGE, "--optimal=SECONDS needs a time limit in (0, 1e6]");
        } else if (strcmp(a, "--export-optimal") == 0) {
            if (i + 1 >= argc)
                return sc_cli_fail(SC_EXIT_USAGE, "--export-optimal needs a FILE");
            o->export_optimal = argv[++i];
        } else if (strcmp(a, "--width") == 0) {
            long w = i + 1 < argc ? strtol(argv[++i], NULL, 10) : 0;
            if (w < 10 || w > SC_RENDER_MAX_WIDTH)
                return sc_cli_fail(SC_EXIT_USAGE, "--width needs a number >= 10 (at most 10000)");
            o->width = (int)w;
        } else if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
            if ((rc = sc_cli_time(argc, argv, &i, a[2] == 'f' ? &o->from : &o->to)))
                return rc;
        } else if (strcmp(a, "--trust") == 0) {
            o->trust = 1;
        } else if (strcmp(a, "--allow-write") == 0 || strcmp(a, "--force-costs") == 0) {
            if ((used = sc_cli_option(L, argc, argv, i, msg, sizeof msg)) < 0)
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            i += used - 1;
        } else if (strcmp(a, "--comm") == 0) { /* docs/semantics.md#modes */
            const char *v = i + 1 < argc ? argv[++i] : "";
            if ((o->comm = sc_p2p_parse(v) + 1) == 0) {
                snprintf(msg, sizeof msg, "--comm '%.40s': expected " SC_P2P_NAMES, v);
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            }
        } else if (strcmp(a, "--torchtitan") == 0) {
            o->titan = 1;
        } else if (strcmp(a, "--with-program") == 0) { /* the Python package's load */
            o->with_program = 1;
        } else if (strcmp(a, "--expect-digest") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (strlen(v) != 16 || strspn(v, "0123456789abcdef") != 16)
                return sc_cli_fail(SC_EXIT_USAGE, "--expect-digest needs the 16 hex digits of "
                                                  "a program's digest (sim --json --with-program)");
            o->expect = v;
        } else if (strcmp(a, "--torch") == 0) {
            if (i + 1 >= argc)
                return sc_cli_fail(SC_EXIT_USAGE, "--torch needs a PyTorch version, like 2.15");
            o->torch = argv[++i];
        } else if ((used = sc_limits_option(sc_cli_limits(), argc, argv, i, msg, sizeof msg)) != 0) {
            if (used < 0)
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            i += used - 1;
        } else if (strcmp(a, "--svg") == 0 || strcmp(a, "--trace") == 0 ||
                   strcmp(a, "--format") == 0 || strcmp(a, "-o") == 0) {
            if (i + 1 >= argc) {
                snprintf(msg, sizeof msg, "%s needs a value", a);
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            }
            const char **slot = a[2] == 's' ? &o->svg : a[2] == 't' ? &o->trace
                              : a[2] == 'f' ? &o->format : &o->out;
            *slot = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return sc_cli_unknown_option(a, o->cmd);
        } else if (!o->recipe) {
            o->recipe = a;
        } else {
            snprintf(msg, sizeof msg, "unexpected argument '%s'", a);
            return sc_cli_fail(SC_EXIT_USAGE, msg);
        }
    }
    return 0;
}

static int print_sim(lua_State *L, opts *o, sc_lprog *lp, const sc_sim *sim, int info,
                     const double *idle, int bneck, sc_eng_optimal *opt);

static int cmd_program(lua_State *L, opts *o, sc_lprog *lp, int info)
{
    sc_prog *pg = lp->pg;
    if (o->to > 0 && o->to <= o->from)
        return sc_cli_fail(SC_EXIT_USAGE, "--to must be after --from");
    /* --width is pixels for a picture, columns for the text view. */
    sc_svg_opts so = {o->width, o->from, o->to};
    sc_status st = o->comm ? sc_lua_set_comm(lp, o->comm - 1) : SC_OK;
    if (st)
        return sc_cli_status_fail_fit(L, st, o->recipe, o->defs, lp->where, pg);
    int rc = o->expect ? sc_cli_expect_digest(lp, o->recipe, o->expect) : 0;
    if (rc)
        return rc;
    if (o->with_program && (strcmp(o->cmd, "sim") != 0 || !o->json))
        return sc_cli_fail(SC_EXIT_USAGE, "--with-program goes with sim --json");
    if (strcmp(o->cmd, "export") == 0)
        return sc_cli_export(o->recipe, o->format, o->out, o->torch, o->titan, lp, &so);
    if (strcmp(o->cmd, "show") == 0 && (o->svg || o->trace))
        return sc_cli_show_files(o->recipe, o->svg, o->trace, o->dump, lp, &so);
    /* sim and show verify through the simulation's replay. */
    int simulate = strcmp(o->cmd, "sim") == 0 || (strcmp(o->cmd, "show") == 0 && o->dump != 1);
    st = simulate ? SC_OK : sc_lua_check(lp);
    if (st)
        return sc_cli_status_fail_fit(L, st, o->recipe, o->defs, lp->where, pg);
    int P = sc_prog_devices(pg);
    if (strcmp(o->cmd, "check") == 0) {
        int K = sc_prog_slices(pg), m = sc_prog_microbatches(pg) / K;
        char sl[32] = ""; /* docs/slices.md */
        if (K > 1)
            snprintf(sl, sizeof sl, " of %d slices", K);
        printf("ok: %s: %d device%s, %d stage%s, %d microbatch%s%s, %zu instructions verified\n",
               o->recipe, P, P == 1 ? "" : "s", sc_prog_stages(pg),
               sc_prog_stages(pg) == 1 ? "" : "s", m, m == 1 ? "" : "es", sl,
               sc_prog_total_instructions(pg));
        return 0;
    }
    if (strcmp(o->cmd, "show") == 0 && o->dump == 1) {
        char *s = sc_render_dump(pg);
        if (!s)
            return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
        fputs(s, stdout);
        free(s);
        return 0;
    }
    const sc_sim *sim = sc_lua_sim(lp, &st);
    if (!sim)
        return sc_cli_status_fail_fit(L, st, o->recipe, o->defs, lp->where, pg);
    if (strcmp(o->cmd, "show") == 0) {
        int color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
        char *s = sc_render_timeline_window(pg, sim, o->width ? o->width : 120, color, o->from,
                                            o->to);
        if (!s)
            return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
        fputs(s, stdout);
        free(s);
        return 0;
    }
    double *idle = calloc((size_t)P, sizeof *idle);
    if (!idle)
        return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
    int bneck = sc_lua_balance(sim, idle);
    sc_eng_optimal opt = {.limit = o->optimal, .want_lua = o->export_optimal != NULL};
    rc = print_sim(L, o, lp, sim, info, idle, bneck, &opt);
    free(idle);
    if (!rc && o->export_optimal)
        rc = sc_cli_write_optimal(o->export_optimal, opt.lua);
    sc_free(opt.lua);
    return rc;
}

/* sim --json: the engine's figures (and, with --with-program, the program). */
static int print_sim_json(lua_State *L, opts *o, sc_lprog *lp, const sc_sim *sim, int info,
                          sc_eng_optimal *opt)
{
    sc_prog *pg = lp->pg;
    sc_jw w;
    sc_jw_init(&w, stdout);
    sc_jw_object(&w, NULL);
    sc_status st = sc_eng_sim_json(&w, L, sc_cli_limits(), lp, sim, o->recipe, info, opt);
    if (st)
        return sc_cli_failf(SC_EXIT_NOMEM, "out of memory");
    if (o->with_program) { /* one evaluation for all the package needs */
        char hex[17];
        int rc = sc_cli_program_digest(lp, hex);
        if (rc)
            return rc;
        sc_jw_str(&w, "digest", hex);
        sc_jw_key(&w, "program");
        st = sc_json_write(stdout, pg, sim, o->recipe);
        if (st)
            return sc_cli_status_fail(st, "%s%s", lp->where, sc_errmsg(pg));
    }
    sc_jw_end(&w);
    putchar('\n');
    return 0;
}

/* sim: the summary with the balance of the devices. */
static void print_sim_text(lua_State *L, opts *o, sc_lprog *lp, const sc_sim *sim, int info,
                           const double *idle, int bneck, sc_eng_optimal *opt)
{
    sc_prog *pg = lp->pg;
    int P = sc_prog_devices(pg);
    double peak = 0;
    for (int d = 0; d < P; d++)
        peak = fmax(peak, sim->peak_mem[d]);
    printf("recipe        %s\n", o->recipe);
    printf("devices       %d\nstages        %d\nmicrobatches  %d\ninstructions  %zu\n", P,
           sc_prog_stages(pg), sc_prog_microbatches(pg) / sc_prog_slices(pg),
           sc_prog_total_instructions(pg));
    if (sc_prog_slices(pg) > 1) /* docs/slices.md */
        printf("slices        %d per microbatch\n", sc_prog_slices(pg));
    sc_eng_print_lengths(stdout, pg, NULL);
    printf("makespan      %.6g%s\nbubble rate   %.4f%%\n", sim->makespan,
           sc_prog_seconds(pg) ? " s" : "", 100 * sim->bubble_rate);
    sc_eng_print_bound(stdout, sc_cli_limits(), pg, sim->makespan, opt, NULL);
    int lo = 0, hi = 0;
    for (int d = 0; d < P; d++) {
        lo = idle[d] < idle[lo] ? d : lo;
        hi = idle[d] > idle[hi] ? d : hi;
    }
    if (idle[hi] - idle[lo] < 1e-12)
        printf("idle          %.4f%% of the makespan on every device\n", 100 * idle[hi]);
    else
        printf("idle          %.4f%% to %.4f%% of the makespan per device (most on d%d)\n",
               100 * idle[lo], 100 * idle[hi], hi);
    if (bneck >= 0)
        printf("bottleneck    d%d: busy %.6g, the most of any device\n", bneck, sim->busy[bneck]);
    else
        printf("bottleneck    none: every device is busy %.6g\n", sim->busy[0]);
    printf("peak memory   %.4g units (max)", peak);
    if (sc_prog_has_model(pg)) { /* the whole device's bytes: docs/model.md#bytes */
        int most = 0;
        for (int d = 1; d < P; d++)
            if (sc_prog_total_bytes(pg, d, sim->peak_mem[d]) >
                sc_prog_total_bytes(pg, most, sim->peak_mem[most]))
                most = d;
        printf(" of activations; in all %.4g GiB on d%d, the most (below)",
               sc_prog_total_bytes(pg, most, sim->peak_mem[most]) / 1073741824.0, most);
    }
    printf("\n");
    if (sc_prog_copies(pg) > 1)
        printf("copies        %d of the model: d0 holds %.4g of its parameters\n",
               sc_prog_copies(pg), sc_prog_param_share(pg, 0));
    if (sc_prog_ep(pg) > 1) /* docs/semantics.md#expert-parallelism */
        printf("ep            %d: %d x %d devices, stage-major; all-to-alls %.4g s per pass on s0\n",
               sc_prog_ep(pg), P, sc_prog_ep(pg), sc_prog_ep_time(pg, 0));
    if (sc_prog_seconds(pg))
        printf("step time     %.6g s (predicted: the last instruction, OPTIM included)\n",
               sim->step);
    sc_eng_print_auto(stdout, L, info, NULL);
    sc_eng_print_offload(stdout, pg, sim, NULL);
    sc_eng_print_recompute(stdout, pg, NULL);
    sc_eng_print_steps(stdout, pg, sim, NULL);
    const sc_offload_info *oi = sc_prog_offload_info(pg);
    printf("device   busy        idle      start       end         peak%s\n",
           oi ? "        without     host" : "");
    for (int d = 0; d < P; d++) {
        char id[16];
        snprintf(id, sizeof id, "%.2f%%", 100 * idle[d]);
        if (oi)
            printf("%-8d %-11.6g %-9s %-11.6g %-11.6g %-11.4g %-11.4g %.4g\n", d, sim->busy[d],
                   id, sim->start[d], sim->end[d], sim->peak_mem[d], oi->base_peak[d],
                   sim->host_peak ? sim->host_peak[d] : 0);
        else
            printf("%-8d %-11.6g %-9s %-11.6g %-11.6g %.4g\n", d, sim->busy[d], id,
                   sim->start[d], sim->end[d], sim->peak_mem[d]);
    }
    sc_eng_print_vocab(stdout, pg, sim, NULL);
}

/* sim: the summary (or --json) with the balance of the devices. */
static int print_sim(lua_State *L, opts *o, sc_lprog *lp, const sc_sim *sim, int info,
                     const double *idle, int bneck, sc_eng_optimal *opt)
{
    if (o->json)
        return print_sim_json(L, o, lp, sim, info, opt);
    print_sim_text(L, o, lp, sim, info, idle, bneck, opt);
    return 0;
}

static int cmd_recipe(lua_State *L, int argc, char **argv)
{
    opts o = {.cmd = argv[1]};
    lua_newtable(L);
    int t = lua_gettop(L);
    int rc = parse_args(L, argc, argv, t, &o);
    if (rc)
        return rc;
    const char *const outs[] = {o.svg, o.trace, o.out, o.export_optimal},
                      *const onames[] = {"--svg", "--trace", "-o", "--export-optimal"};
    if ((rc = sc_cli_outputs_apart(onames, outs, 4)))
        return rc;
    if (o.export_optimal && (strcmp(o.cmd, "sim") != 0 || !(o.optimal > 0)))
        return sc_cli_fail(SC_EXIT_USAGE, "--export-optimal FILE goes with sim --optimal");
    if (o.trust)
        sc_sandbox_trust(L, 1);
    if (strcmp(o.cmd, "list") == 0)
        return sc_cli_list(L, o.recipe);
    if (!o.recipe)
        return sc_cli_fail(SC_EXIT_USAGE, "missing RECIPE (a stdlib name or a .lua file; see 'stagecraft list')");
    o.defs = t;
    if (sc_eng_evaluate(L, o.recipe, t, 0) != LUA_OK)
        return sc_cli_lua_fail_fit(L, o.recipe, t);
    sc_lprog *lp = sc_lua_toprog(L, -3);
    lua_pushcfunction(L, sc_lua_autoinfo);
    lua_pushvalue(L, -4);
    lua_call(L, 1, 1);
    int info = lua_istable(L, -1) ? lua_gettop(L) : 0;
    return cmd_program(L, &o, lp, info);
}

static int traceback(lua_State *L)
{
    int code = sc_lua_exit_for(L, 1);
    const char *msg = lua_tostring(L, 1);
    if (!msg)
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    luaL_traceback(L, L, msg, 1);
    if (code)
        sc_lua_mark(L, -1, code);
    return 1;
}

static int run_chunk(lua_State *L, int nargs)
{
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    int rc = lua_pcall(L, nargs, 0, base);
    sc_limits_disarm(L);
    lua_remove(L, base);
    if (rc == LUA_OK && sc_limits_hit(L)) { /* hit, and caught by the script */
        lua_pushliteral(L, "limit");
        rc = LUA_ERRRUN;
    }
    return rc;
}

/* stagecraft FILE.lua args...: arg[0] = FILE, arg[i] = args. */
static int cmd_script(lua_State *L, int argc, char **argv)
{
    lua_createtable(L, argc, 1);
    for (int i = 1; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_seti(L, -2, i - 1);
    }
    lua_setglobal(L, "arg");
    const char *file = strcmp(argv[1], "-") == 0 ? NULL : argv[1];
    int rc = file ? sc_loadfile(L, file, "t") : luaL_loadfilex(L, NULL, "t");
    if (rc == LUA_ERRFILE)
        return sc_cli_fail(SC_EXIT_USAGE, lua_tostring(L, -1));
    if (rc != LUA_OK)
        return sc_cli_lua_fail(L);
    if (file) {
        sc_sandbox_seal(L);
        sc_sandbox_apply(L, -1, file);
        sc_sandbox_enter_script(L, file); /* files the script writes: in its folder */
    }
    sc_limits_arm(L);
    for (int i = 2; i < argc; i++)
        lua_pushstring(L, argv[i]);
    rc = run_chunk(L, argc - 2);
    if (file)
        sc_sandbox_leave(L);
    if (rc != LUA_OK)
        return sc_cli_lua_fail(L);
    return 0;
}

/* An error outside any pcall (the command line's own Lua calls; none is
 * expected): one line and an exit code instead of Lua's abort(). */
static int panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    int nomem = msg && strcmp(msg, "not enough memory") == 0;
    sc_cli_fail(nomem ? SC_EXIT_NOMEM : SC_EXIT_INTERNAL, msg ? msg : "unprotected Lua error");
    fflush(stdout);
    _exit(nomem ? SC_EXIT_NOMEM : SC_EXIT_INTERNAL); /* Lua cannot go on; the one exit outside main's return */
}

/* The handlers of the commands (lang/core/commands.h): cmd_<id>. */
static int cmd_list(lua_State *L, int argc, char **argv) { return cmd_recipe(L, argc, argv); }
static int cmd_check(lua_State *L, int argc, char **argv) { return cmd_recipe(L, argc, argv); }
static int cmd_show(lua_State *L, int argc, char **argv) { return cmd_recipe(L, argc, argv); }
static int cmd_export(lua_State *L, int argc, char **argv) { return cmd_recipe(L, argc, argv); }
static int cmd_compare(lua_State *L, int argc, char **argv) { return sc_cmd_compare(L, argc, argv); }
static int cmd_run(lua_State *L, int argc, char **argv) { return sc_cmd_run(L, argc, argv); }
static int cmd_plan(lua_State *L, int argc, char **argv) { return sc_cmd_plan(L, argc, argv); }

/* sim with a sweep (-D m=16,32,64): one row per value, as compare. */
static int cmd_sim(lua_State *L, int argc, char **argv)
{
    return sc_cmd_is_sweep(argc, argv) ? sc_cmd_compare(L, argc, argv) : cmd_recipe(L, argc, argv);
}

static int cmd_import(lua_State *L, int argc, char **argv)
{
    (void)L;
    return sc_cli_import(argc, argv);
}

static int cmd_costs(lua_State *L, int argc, char **argv)
{
    (void)L;
    return sc_cli_costs(argc, argv);
}

static int cmd_help(lua_State *L, int argc, char **argv)
{
    (void)L, (void)argc;
    fputs(strcmp(argv[1], "--version") ? sc_usage_text() : "stagecraft " SC_VERSION "\n", stdout);
    return 0;
}

typedef int (*cmd_fn)(lua_State *L, int argc, char **argv);
static const cmd_fn handlers[] = {
#define X(id, synopsis, summary, note) cmd_##id,
    SC_COMMANDS(X)
#undef X
};

/* The handler of the command named word, or NULL. */
static cmd_fn command(const char *word)
{
    for (int i = 0; sc_command_name(i); i++)
        if (strcmp(sc_command_name(i), word) == 0)
            return handlers[i];
    return NULL;
}

/* A word that is neither a command nor a file: a misspelled command. */
static int unknown_command(const char *word)
{
    const char *cmds[64];
    char hint[160], msg[600], clean[64], list[300] = "";
    int n = 0;
    for (; sc_command_name(n) && n < 64; n++) {
        cmds[n] = sc_command_name(n);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", n ? ", " : "", cmds[n]);
    }
    sc_did_you_mean(hint, sizeof hint, word, cmds, n);
    snprintf(msg, sizeof msg, "unknown command '%s'%s%s (commands: %s; or a script FILE.lua)",
             sc_clean_text(clean, sizeof clean, word, 0), hint[0] ? ": " : "", hint, list);
    return sc_cli_fail(SC_EXIT_USAGE, msg);
}

int main(int argc, char **argv)
{
    /* A file-size limit (ulimit -f) makes a write fail with EFBIG, which
     * every output reports in one line, instead of ending the process
     * with SIGXFSZ and no word. */
    signal(SIGXFSZ, SIG_IGN);
    lua_State *L = sc_limits_newstate(sc_cli_limits());
    if (!L)
        return sc_cli_fail(SC_EXIT_NOMEM, "cannot create a Lua state (out of memory)");
    lua_atpanic(L, panic);
    sc_eng_setup(L); /* the module, with the engine's sc.plan and sc.compare */
    sc_eng_set_runtime(sc_cli_runtime()); /* the byte model the library lacks */
    sc_eng_guard_stdout(1); /* a recipe's writes go to stderr */
    lua_getglobal(L, "sc"); /* auto.c draws a progress bar on a terminal */
    lua_pushboolean(L, isatty(STDERR_FILENO));
    lua_setfield(L, -2, "_progress");
    lua_pop(L, 1);
    /* Options before the command or FILE.lua: the sandbox and the limits. */
    int k = 1, rc;
    while (k < argc && strncmp(argv[k], "--", 2) == 0 && argv[k][2]) {
        char msg[128];
        int used = sc_cli_option(L, argc, argv, k, msg, sizeof msg);
        if (used < 0) {
            lua_close(L);
            return sc_cli_fail(SC_EXIT_USAGE, msg);
        }
        if (used == 0)
            break;
        k += used;
    }
    argv[k - 1] = argv[0];
    argv += k - 1;
    argc -= k - 1;
    if (argc < 2) {
        if (isatty(STDIN_FILENO))
            rc = sc_repl(L);
        else {
            char *args[] = {argv[0], "-", NULL};
            rc = cmd_script(L, 2, args);
        }
    } else if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
               strcmp(argv[1], "--version") == 0) {
        rc = cmd_help(L, argc, argv);
    } else if (command(argv[1])) {
        sc_sandbox_seal(L); /* strangers' recipes: no files outside their evaluation */
        rc = sc_cli_model_options(argc, argv);
        if (!rc)
            rc = command(argv[1])(L, argc, argv);
        sc_cli_model_options_free();
    } else if (argv[1][0] == '-' && argv[1][1]) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown option '%.100s' (see stagecraft --help)", argv[1]);
        rc = sc_cli_fail(SC_EXIT_USAGE, msg);
    } else if (strcmp(argv[1], "-") != 0 && !strchr(argv[1], '/') && !strstr(argv[1], ".lua") &&
               access(argv[1], F_OK) != 0) {
        rc = unknown_command(argv[1]);
    } else {
        rc = cmd_script(L, argc, argv);
    }
    /* Output that did not reach stdout (a full disk, /dev/full, a closed
     * descriptor) is an error, never a silent success. */
    int e = 0;
    if (fflush(stdout) != 0)
        e = errno;
    if ((e || ferror(stdout)) && rc == 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "cannot write the output (standard output): %s",
                 e ? strerror(e) : "write error");
        rc = sc_cli_fail(SC_EXIT_USAGE, msg);
    }
    sc_limits_close(L);
    return rc;
}
