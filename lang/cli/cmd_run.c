/*
 * cmd_run.c — `stagecraft run`: evaluates the recipe, runs one training step
 * of the built-in model through its streams (runtime/run/run.h), prints the
 * measured numbers.
 *
 * Model sizes are -D parameters too (hidden, layers, vocab, seq, batch,
 * seed). A recipe that declares one of them gets it like any parameter and
 * its value sizes the model; otherwise the name is taken out of the
 * overrides before the recipe runs, so that the recipe's unknown-parameter
 * check does not see it.
 */
#include "cmd_run.h"
#include "cli.h"

#include <errno.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/atomic.h"
#include "run/profile.h"
#include "run/run.h"
#include "run_report.h"
#include "lua/sc_lua.h"

static int fail(int code, const char *msg)
{
    return sc_cli_fail(code, msg);
}


/* sc._unit_bytes(P, S, vocab_par) for a cap in bytes (lang/lua/mem_lua.c):
 * the unit run sets after the recipe, from the model it trains (upvalue:
 * its sc_model_cfg, layers 0 for two per stage); nil and why when that
 * model cannot be made. */
/* Byte counts per device, then their largest as "key_max". */
/* "params": per device, the bytes of the parameters, their gradients and
 * AdamW's moments, allocated and predicted (docs/run.md#parameter-bytes). */
static void json_params(sc_jw *w, const sc_run_result *r)
{
    sc_jw_array(w, "params");
    for (int d = 0; d < r->P; d++) {
        size_t g = r->grad_bytes[d], pg = r->predicted_param_bytes[d] / 2;
        sc_jw_object(w, NULL);
        sc_jw_int(w, "params", (long long)(r->param_bytes[d] - g));
        sc_jw_int(w, "grads", (long long)g);
        sc_jw_int(w, "optimizer", (long long)r->optim_bytes[d]);
        sc_jw_int(w, "predicted_params", (long long)(r->predicted_param_bytes[d] - pg));
        sc_jw_int(w, "predicted_grads", (long long)pg);
        sc_jw_int(w, "predicted_optimizer", (long long)r->predicted_optim_bytes[d]);
        sc_jw_end(w);
    }
    sc_jw_end(w);
}

static void json_sizes(sc_jw *w, const char *key, const size_t *v, int n)
{
    size_t mx = 0;
    char kmax[80];
    sc_jw_array(w, key);
    for (int i = 0; i < n; i++) {
        sc_jw_int(w, NULL, (long long)v[i]);
        mx = v[i] > mx ? v[i] : mx;
    }
    sc_jw_end(w);
    snprintf(kmax, sizeof kmax, "%s_max", key);
    sc_jw_int(w, kmax, (long long)mx);
}

/* Measured numbers: all their digits (17 round-trip a double). */
static void json_num(sc_jw *w, const char *key, double v) { sc_jw_num_g(w, key, v, 17); }

static void print_json(const char *recipe, const sc_prog *pg, const sc_run_opts *o,
                       const sc_run_result *r, const sc_comparison *cmp, const sc_profile *pf,
                       const char *profile)
{
    sc_jw w;
    sc_jw_init(&w, stdout);
    sc_jw_object(&w, NULL);
    sc_jw_str(&w, "recipe", recipe);
    sc_jw_int(&w, "devices", r->P);
    sc_jw_int(&w, "stages", r->S);
    sc_jw_int(&w, "microbatches", r->m / sc_prog_slices(pg));
    if (sc_prog_slices(pg) > 1) /* as sim's and export's (docs/slices.md#in-a-program) */
        sc_jw_int(&w, "slices", sc_prog_slices(pg));
    sc_jw_int(&w, "instructions", (long long)sc_prog_total_instructions(pg));
    sc_jw_str(&w, "backend", o->backend);
    sc_jw_str(&w, "transport", r->transport);
    if (o->graph)
        sc_jw_int(&w, "graph_replays", r->graph_replays);
    if (r->transport_note[0]) /* cuda: why not nccl */
        sc_jw_str(&w, "transport_note", r->transport_note);
    if (r->gpus) {
        sc_jw_int(&w, "gpus", r->gpus);
        sc_jw_str(&w, "gpu", r->gpu_name);
    }
    sc_jw_object(&w, "model");
#define X(name) sc_jw_int(&w, #name, o->model.name);
    SC_MODEL_SIZES(X)
#undef X
    sc_cli_run_decoder_json(&w, &o->model);
    sc_jw_end(&w);
    if (sc_prog_lengths(pg)) /* each microbatch's tokens per sequence (docs/lengths.md) */
        sc_jw_nums(&w, "lengths", sc_prog_lengths(pg), sc_prog_microbatches(pg));
    json_num(&w, "loss", r->loss);
    char hex[64];
    snprintf(hex, sizeof hex, "%a", r->loss);
    sc_jw_str(&w, "loss_hex", hex);
    json_num(&w, "reference_loss", r->reference_loss);
    json_num(&w, "max_grad_rel_err", r->max_grad_rel_err);
    if (o->check) {
        sc_jw_num_g(&w, "tolerance", r->tolerance, 6);
        sc_jw_bool(&w, "bitwise", r->bitwise);
    }
    json_sizes(&w, "peak_activation_bytes", r->peak_bytes, r->P);
    json_sizes(&w, "predicted_peak_activation_bytes", r->predicted_bytes, r->P);
    json_params(&w, r);
    if (r->predicted->host_peak) { /* offload */
        json_sizes(&w, "peak_host_bytes", r->host_peak_bytes, r->P);
        json_sizes(&w, "predicted_peak_host_bytes", r->predicted_host_bytes, r->P);
    }
    if (sc_prog_vocab(pg) != SC_VOCAB_NONE) { /* the vocabulary layers placed (docs/vocab.md#running-the-split-model) */
        sc_jw_str(&w, "vocab_par", sc_vocab_name(sc_prog_vocab(pg)));
        json_sizes(&w, "param_bytes", r->param_bytes, r->P);
        json_sizes(&w, "predicted_param_bytes", r->predicted_param_bytes, r->P);
    }
    json_num(&w, "unit_bytes", r->unit_bytes);
    json_num(&w, "step_time_s", r->step_time_s);
    json_num(&w, "simulated_makespan", r->predicted->makespan);
    if (cmp) /* costs in seconds: the prediction beside the measurement */
        sc_report_json(&w, cmp, pf, profile);
    sc_cli_run_steps_json(&w, pg, o, r);
    sc_jw_end(&w);
    putchar('\n');
}

static void print_text(const char *recipe, const sc_prog *pg, const sc_run_opts *o,
                       const sc_run_result *r, const sc_comparison *cmp, const sc_profile *pf,
                       const char *profile)
{
    printf("recipe        %s\n", recipe);
    if (sc_prog_ep(pg) > 1) /* docs/semantics.md#expert-parallelism: p x E */
        printf("devices       %d x %d (%s, ep = %d: EP rank e of device d is d x %d + e), "
               "%d stages, %d microbatches\n", r->P, sc_prog_ep(pg),
               r->mpi ? "MPI ranks" : "threads", sc_prog_ep(pg), sc_prog_ep(pg), r->S, r->m);
    else
        printf("devices       %d (%s), %d stages, %d microbatches\n", r->P,
               r->mpi ? "MPI ranks" : "threads", r->S, r->m / sc_prog_slices(pg));
    if (sc_prog_slices(pg) > 1) /* docs/slices.md#run */
        printf("slices        %d per microbatch, %d records\n", sc_prog_slices(pg), r->m);
    if (r->gpus)
        printf("backend       %s on %d GPU%s (%s), transport %s%s%s%s\n", o->backend, r->gpus,
               r->gpus > 1 ? "s" : "", r->gpu_name, r->transport,
               r->transport_note[0] ? " (not nccl: " : "", r->transport_note,
               r->transport_note[0] ? ")" : "");
    if (o->graph)
        printf("graph         step 2 captured, run as a graph %d time%s\n", r->graph_replays,
               r->graph_replays == 1 ? "" : "s");
    printf("model         hidden %ld, layers %ld, vocab %ld, seq %ld, batch %ld, seed %lld\n",
           o->model.hidden, o->model.layers, o->model.vocab, o->model.seq, o->model.batch,
           o->model.seed);
    sc_cli_run_decoder_text(&o->model);
    if (sc_prog_lengths(pg)) { /* docs/lengths.md#running-them */
        const double *len = sc_prog_lengths(pg);
        double lo = len[0], hi = len[0], sum = 0;
        for (int i = 0; i < r->m; i++)
            lo = fmin(lo, len[i]), hi = fmax(hi, len[i]), sum += len[i];
        printf("lengths       %g to %g tokens per sequence in place of seq, %g rows in all\n", lo,
               hi, sum * (double)o->model.batch);
    }
    printf("loss          %.9g (%a)\n", r->loss, r->loss);
    if (o->check && !sc_cli_run_forward_text(r)) /* a forward-only one: the loss alone */
        printf("reference     %.9g, max grad rel err %.3g%s\n", r->reference_loss,
               r->max_grad_rel_err,
               r->bitwise ? " (bitwise identical)"
               : r->tolerance > 1e-5 ? " (tolerance 1e-4: cuda or slices)" : "");
    printf("step time     %.6f s\n", r->step_time_s);
    if (cmp)
        sc_report_text(cmp, pf, profile);
    int host = r->predicted->host_peak != NULL; /* offload */
    printf("device   peak activation bytes   predicted%s\n",
           host ? "        host bytes      predicted" : "");
    for (int d = 0; d < r->P; d++) {
        if (host)
            printf("%-8d %-23zu %-16zu %-15zu %zu\n", d, r->peak_bytes[d], r->predicted_bytes[d],
                   r->host_peak_bytes[d], r->predicted_host_bytes[d]);
        else
            printf("%-8d %-23zu %zu\n", d, r->peak_bytes[d], r->predicted_bytes[d]);
    }
    if (sc_prog_vocab(pg) != SC_VOCAB_NONE) { /* the vocabulary layers placed (docs/vocab.md) */
        int same = 1;
        for (int d = 0; d < r->P; d++)
            same &= r->param_bytes[d] == r->predicted_param_bytes[d];
        printf("parameters    %s: ", sc_vocab_name(sc_prog_vocab(pg)));
        for (int d = 0; d < r->P && d < 8; d++)
            printf("%sd%d %zu", d ? ", " : "", d, r->param_bytes[d]);
        printf("%s bytes with gradients (%s)\n", r->P > 8 ? ", ..." : "",
               same ? "as predicted" : "predicted otherwise: see --json");
    }
    sc_cli_run_steps_text(pg, o, r);
}

/* --check: loss, gradients and memory against the reference and the
 * prediction. Returns 0 or prints the failure. */
static int verdict(const sc_run_result *r)
{
    char msg[256];
    double lrel = fabs(r->loss - r->reference_loss) / fmax(fabs(r->reference_loss), 1e-30);
    if (!(lrel <= r->tolerance) || !(r->forward_only || r->max_grad_rel_err <= r->tolerance)) {
        snprintf(msg, sizeof msg, "check failed: loss %.9g vs reference %.9g, max gradient "
                 "relative error %.3g (tolerance %g)", r->loss, r->reference_loss,
                 r->max_grad_rel_err, r->tolerance);
        return fail(sc_status_exit_code(SC_ERR_RUNTIME), msg);
    }
    if (sc_cli_run_steps_verdict(r, msg, sizeof msg))
        return fail(sc_status_exit_code(SC_ERR_RUNTIME), msg);
    for (int d = 0; d < r->P; d++)
        if (r->peak_bytes[d] != r->predicted_bytes[d]) {
            snprintf(msg, sizeof msg, "check failed: d%d peak activation %zu bytes, predicted "
                     "%zu", d, r->peak_bytes[d], r->predicted_bytes[d]);
            return fail(sc_status_exit_code(SC_ERR_RUNTIME), msg);
        }
    for (int d = 0; d < r->P; d++)
        if (r->param_bytes[d] != r->predicted_param_bytes[d]) {
            snprintf(msg, sizeof msg, "check failed: d%d holds %zu bytes of parameters and "
                     "gradients, predicted %zu", d, r->param_bytes[d], r->predicted_param_bytes[d]);
            return fail(sc_status_exit_code(SC_ERR_RUNTIME), msg);
        }
    for (int d = 0; d < r->P; d++)
        if (r->optim_bytes[d] != r->predicted_optim_bytes[d] ||
            2 * r->grad_bytes[d] != r->param_bytes[d]) {
            snprintf(msg, sizeof msg, "check failed: d%d holds %zu bytes of AdamW moments "
                     "(predicted %zu) and %zu of gradients (of %zu with the parameters)", d,
                     r->optim_bytes[d], r->predicted_optim_bytes[d], r->grad_bytes[d],
                     r->param_bytes[d]);
            return fail(sc_status_exit_code(SC_ERR_RUNTIME), msg);
        }
    for (int d = 0; d < r->P; d++)
        if (r->host_peak_bytes[d] != r->predicted_host_bytes[d]) {
            snprintf(msg, sizeof msg, "check failed: d%d peak host memory %zu bytes, predicted "
                     "%zu", d, r->host_peak_bytes[d], r->predicted_host_bytes[d]);
            return fail(sc_status_exit_code(SC_ERR_RUNTIME), msg);
        }
    return 0;
}

/* The environment's settings of run (docs/run.md): a typo or a value out of
 * range is a usage error, never silently the default (STAGECRAFT_TIMEOUT=inf
 * hung the threads' waits). 0, or -1 with the message. */
static int env_settings(char *msg, size_t len)
{
    const char *tv = getenv("STAGECRAFT_TIMEOUT"), *cv = getenv("STAGECRAFT_DEVICE_MEMORY");
    char clean[64];
    double secs;
    if (tv && *tv && sc_run_parse_timeout(tv, &secs) != 0) { /* empty: unset */
        snprintf(msg, len, "STAGECRAFT_TIMEOUT='%s': expected a number of seconds > 0 and at "
                 "most 1000000 (how long a device waits for a peer)",
                 sc_clean_text(clean, sizeof clean, tv, 0));
        return -1;
    }
    char *end = NULL;
    errno = 0;
    if (cv && *cv && (!(*cv >= '0' && *cv <= '9') || (strtoull(cv, &end, 10), *end) || errno)) {
        snprintf(msg, len, "STAGECRAFT_DEVICE_MEMORY='%s': expected a number of bytes per "
                 "device (like 300000; 0 for no cap)", sc_clean_text(clean, sizeof clean, cv, 0));
        return -1;
    }
    return 0;
}

/* The largest interquartile range of a profile's stage times relative to
 * its median, and what it is (into what). */
static double profile_spread(const sc_costs *c, char *what, size_t len)
{
    static const char *const keys[] = {"tf", "tb", "tw", "tbw"};
    double worst = 0;
    what[0] = 0;
    for (int k = 0; k <= SC_COST_BW; k++)
        for (int s = 0; s < c->S; s++) {
            sc_stat x = c->kind[k][s];
            if (x.n > 0 && x.median > 0 && isfinite(x.spread) && x.spread / x.median > worst) {
                worst = x.spread / x.median;
                snprintf(what, len, "%s of s%d varies by %.0f%% of its median (interquartile "
                         "range %.3g s of %.3g s, %d samples)", keys[k], s, 100 * worst,
                         x.spread, x.median, x.n);
            }
        }
    return worst;
}

/* Before each new round of a profile (profile.h): what is not stable yet. */
static void profile_round(void *arg, const sc_profile *p, int next)
{
    (void)arg;
    const sc_unstable *u = &p->unstable[0];
    fprintf(stderr, "stagecraft: note: profile: %d figure%s not known within %g%% after %d "
            "steps (the least: %s, ±%.1f%% of its median): %d more steps\n", p->nunstable,
            p->nunstable == 1 ? "" : "s", 100 * p->target, p->steps, u->what,
            100 * u->half / u->median, next);
}

/* run --profile: the rounds of sc_profile_run, then one warning per figure
 * still not known within the target, with why; without a target (one
 * round of --profile-steps), a profile noisier than 10% gets a warning. */
static sc_status profile_until(sc_prog *pg, const sc_run_opts *ro, const char *recipe,
                               const sc_profile_opts *o, sc_profile **pf, char *err, size_t len)
{
    sc_status st = sc_profile_run(pg, ro, recipe, o, pf, err, len);
    if (st)
        return st;
    const sc_profile *p = *pf;
    for (int i = 0; i < p->nunstable; i++) {
        const sc_unstable *u = &p->unstable[i];
        fprintf(stderr, "stagecraft: warning: profile: %s is not stable: its median %.3g s is "
                "known within ±%.1f%% after %d steps (target ±%g%%, %s); its %d samples vary "
                "by %.0f%% (interquartile range), the step by %.0f%%\n", u->what, u->median,
                100 * u->half / u->median, p->steps, 100 * p->target,
                p->capped == 2 ? "--profile-max-time reached" : "--profile-max-steps reached",
                u->n, 100 * u->iqr, 100 * p->costs.step.spread / p->costs.step.median);
    }
    char what[256];
    double rel = profile_spread(&p->costs, what, sizeof what);
    if (o->target <= 0 && rel > 0.1)
        fprintf(stderr, "stagecraft: warning: the profile is noisy: %s; predictions from it are "
                "no better than that (profile again on a quiet machine, or without "
                "--profile-steps to repeat until it settles)\n", what);
    return SC_OK;
}

int sc_cmd_run(lua_State *L, int argc, char **argv)
{
    const char *recipe = NULL, *backend = "cpu", *trace = NULL, *profile = NULL;
    char model_path[4096] = "";
    int json = 0, check = 0, warmup = -1, graph = 0;
    /* --profile-steps alone: exactly that many; else rounds to the target */
    sc_profile_opts po = {.steps = 5, .target = -1, .max_steps = 100, .max_s = 60,
                          .round = profile_round};
    int steps_given = 0, max_given = 0;
    double time_limit = 0; /* automatic schedules: the heuristic, reproducibly */
    lua_newtable(L);
    int t = lua_gettop(L);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (strncmp(a, "-D", 2) == 0) {
            if ((rc = sc_cli_define_into(L, argc, argv, &i, t)))
                return rc;
            if (lua_getfield(L, t, "model") != LUA_TNIL) { /* the decoder it trains */
                if (!lua_isstring(L, -1))
                    return fail(SC_EXIT_USAGE, "--model needs a FILE (a Hugging Face "
                                               "config.json)");
                snprintf(model_path, sizeof model_path, "%s", lua_tostring(L, -1));
                lua_pushnil(L);
                lua_setfield(L, t, "model"); /* run's, not the recipe's */
            }
            lua_pop(L, 1);
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--check") == 0) {
            check = 1;
        } else if (strcmp(a, "--graph") == 0) { /* docs/graphs.md */
            graph = 1;
        } else if (strcmp(a, "--time-limit") == 0) {
            if ((rc = sc_cli_time_limit(L, argc, argv, &i, &time_limit)))
                return rc;
        } else if (strcmp(a, "--trace") == 0) {
            if (i + 1 >= argc)
                return fail(SC_EXIT_USAGE, "--trace needs a FILE");
            trace = argv[++i];
        } else if (strcmp(a, "--profile") == 0) {
            if (i + 1 >= argc)
                return fail(SC_EXIT_USAGE, "--profile needs a FILE (the cost file to write)");
            profile = argv[++i];
        } else if (strcmp(a, "--profile-clock") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (strcmp(v, "cpu") != 0 && strcmp(v, "wall") != 0)
                return fail(SC_EXIT_USAGE, "--profile-clock needs cpu (the passes' own time, "
                                           "the default) or wall (the load included)");
            po.wall = v[0] == 'w';
        } else if (strcmp(a, "--profile-spread") == 0 || strcmp(a, "--profile-max-time") == 0) {
            char *end = NULL;
            int tm = a[10] == 'm';
            double v = i + 1 < argc ? strtod(argv[i + 1], &end) : -1;
            if (!end || *end || !(v > 0 && v <= (tm ? 1e6 : 1)))
                return fail(SC_EXIT_USAGE, tm ? "--profile-max-time needs a number of seconds "
                                               "(0 < S <= 1000000)"
                                             : "--profile-spread needs a share of the median in "
                                               "(0, 1] (0.02: repeat until every figure's median "
                                               "is known within 2%)");
            *(tm ? &po.max_s : &po.target) = v;
            i++;
        } else if (strcmp(a, "--profile-steps") == 0 || strcmp(a, "--warmup") == 0 ||
                   strcmp(a, "--profile-max-steps") == 0) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            int w = a[2] == 'w', mx = !w && a[10] == 'm';
            if (!end || *end || v < (w ? 0 : 1) || v > 10000) {
                char msg[96];
                snprintf(msg, sizeof msg, "%s needs a number of steps (%s..10000)", a,
                         w ? "0" : "1");
                return fail(SC_EXIT_USAGE, msg);
            }
            i++;
            *(w ? &warmup : mx ? &po.max_steps : &po.steps) = (int)v;
            steps_given |= !w && !mx;
            max_given |= mx;
        } else if (strcmp(a, "--backend") == 0) {
            if (i + 1 >= argc)
                return fail(SC_EXIT_USAGE, "--backend needs cpu or cuda");
            backend = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            char msg[128];
            int used = sc_cli_option(L, argc, argv, i, msg, sizeof msg);
            if (used < 0)
                return fail(SC_EXIT_USAGE, msg);
            if (used == 0) {
                snprintf(msg, sizeof msg, "unknown option '%s' for 'run'", a);
                return fail(SC_EXIT_USAGE, msg);
            }
            i += used - 1;
        } else if (!recipe) {
            recipe = a;
        } else {
            char msg[128];
            snprintf(msg, sizeof msg, "unexpected argument '%s'", a);
            return fail(SC_EXIT_USAGE, msg);
        }
    }
    if (!recipe)
        return fail(SC_EXIT_USAGE, "missing RECIPE (a stdlib name or a .lua file; see 'stagecraft list')");
    if (po.target < 0)
        po.target = steps_given ? 0 : SC_PROFILE_TARGET;
    if (!max_given && po.max_steps < po.steps)
        po.max_steps = po.steps;
    if (po.max_steps < po.steps)
        return fail(SC_EXIT_USAGE, "--profile-max-steps must be at least --profile-steps");
    char envmsg[600];
    if (env_settings(envmsg, sizeof envmsg) != 0)
        return fail(SC_EXIT_USAGE, envmsg);
    /* The files the run will write, checked before it starts: a path that
     * cannot be written fails now, not after the step with its result
     * printed and the file lost. */
    const char *const outs[] = {trace, profile}, *const onames[] = {"--trace", "--profile"};
    int apart = sc_cli_outputs_apart(onames, outs, 2);
    if (apart)
        return apart;
    if ((trace && sc_atomic_check(trace, envmsg, sizeof envmsg) != 0) ||
        (profile && sc_atomic_check(profile, envmsg, sizeof envmsg) != 0))
        return fail(SC_EXIT_USAGE, envmsg);
    sc_model_cfg mc = sc_run_defaults(0).model;
    int given[SC_RUN_MODEL_KEYS] = {0};
    int rc = model_path[0] ? sc_cli_run_decoder(model_path, &mc) : 0;
    if (!rc) /* -D sizes given besides override the config's */
        rc = sc_cli_run_model_sizes(L, recipe, t, &mc, given);
    if (rc)
        return rc;
    if (mc.kind == SC_MODEL_DECODER)
        given[1] = 1; /* the config's layers, not two per stage */
    /* Every MPI rank evaluates the recipe: a time-limited search could build
     * different programs on different ranks (same_program refuses that).
     * A cost file is checked against the model run trains (costs.c):
     * layers 0 is two per stage, known once the recipe has run. */
    lua_getglobal(L, "sc");
    lua_pushnumber(L, time_limit);
    lua_setfield(L, -2, "_time_limit");
    lua_createtable(L, 0, 5);
    long sizes[5] = {mc.hidden, given[1] ? mc.layers : 0, mc.vocab, mc.seq, mc.batch};
    static const char *const skeys[5] = {"hidden", "layers", "vocab", "seq", "batch"};
    for (int k = 0; k < 5; k++) {
        lua_pushinteger(L, sizes[k]);
        lua_setfield(L, -2, skeys[k]);
    }
    lua_setfield(L, -2, "_run_model");
    lua_pop(L, 1);
    sc_model_cfg uc = mc;
    uc.layers = given[1] ? mc.layers : 0;
    sc_cli_set_unit_bytes(L, &uc);
    if (sc_eng_evaluate(L, recipe, t, 0) != LUA_OK)
        return sc_cli_lua_fail(L);
    sc_lprog *lp = sc_lua_toprog(L, -3);
    sc_status st = sc_lua_check(lp);
    char err[1024];
    if (st)
        return sc_cli_status_fail(st, "%s%s", lp->where, sc_errmsg(lp->pg));
    sc_run_opts o = sc_run_defaults(sc_prog_stages(lp->pg));
    if (!given[1])
        mc.layers = o.model.layers; /* default: 2 per stage */
    o.model = mc;
    double start = sc_exec_now();
    if (sc_prog_steps(lp->pg) > 1) { /* a progress line per step */
        o.model.progress = sc_cli_run_progress;
        o.model.progress_arg = &start;
    }
    o.backend = backend;
    o.check = check;
    o.graph = graph;
    if (graph && profile)
        return fail(SC_EXIT_USAGE, "--graph and --profile: a profile times each pass, which a "
                    "graph runs as one");
    if (graph && o.model.experts > 0) /* docs/run.md#mixture-of-experts */
        return fail(SC_EXIT_USAGE, "--graph and a mixture of experts: the router's counts size "
                    "the experts' products on the host, which a graph cannot wait for");
    /* The run's own tables (executor, transport) are checked against what
     * --max-mem leaves of the Lua heap and the programs' C memory. */
    const sc_limits *lim = sc_cli_limits();
    size_t held = lim->used + lim->c_used;
    if (lim->max_mem)
        o.table_cap = lim->max_mem > held ? lim->max_mem - held : 1;
    const char *cap = getenv("STAGECRAFT_DEVICE_MEMORY");
    if (cap)
        o.mem_cap = (size_t)strtoull(cap, NULL, 10);
    /* With costs in seconds (a cost file) or a profile, the process is
     * warmed up first (untimed steps), as a profile measures warm steps. */
    int seconds = profile || sc_prog_seconds(lp->pg);
    if (warmup < 0)
        warmup = seconds ? 1 : 0;
    o.pass_cpu = seconds && sc_profile_cpu_clock(&o) && !po.wall; /* the comparison's cores */
    sc_run_result *r = NULL;
    sc_profile *pf = NULL;
    sc_comparison *cmp = NULL;
    const sc_sim *predicted = NULL;
    if (profile) {
        po.warmup = warmup;
        st = profile_until(lp->pg, &o, recipe, &po, &pf, err, sizeof err);
        if (!st) {
            r = pf->run;
            predicted = pf->predicted;
        }
    } else {
        for (int i = 0; i <= warmup && !st; i++) {
            sc_run_result_free(r);
            r = NULL;
            st = sc_run(lp->pg, &o, &r, err, sizeof err);
        }
        if (!st && seconds)
            predicted = r->predicted;
    }
    if (st) {
        sc_run_result_free(r);
        rc = sc_cli_status_fail(st, "%s", err); /* the memory limit, when it refused */
        sc_run_finish(rc);
        return rc;
    }
    if (predicted && sc_compare(lp->pg, predicted, r->measured, r->pass_cpu_s, &cmp) != SC_OK) {
        rc = fail(SC_EXIT_NOMEM, "out of memory comparing the prediction");
        goto out;
    }
    rc = 0;
    if (r->rank == 0) {
        if (profile)
            rc = sc_report_write_costs(profile, pf);
        if (!rc && json)
            print_json(recipe, lp->pg, &o, r, cmp, pf, profile);
        else if (!rc)
            print_text(recipe, lp->pg, &o, r, cmp, pf, profile);
        if (!rc && (fflush(stdout) != 0 || ferror(stdout))) { /* before MPI_Finalize */
            char msg[160];
            snprintf(msg, sizeof msg, "cannot write the output (standard output): %s",
                     errno ? strerror(errno) : "write error");
            rc = fail(SC_EXIT_USAGE, msg);
        }
        if (trace && !rc)
            rc = sc_cli_run_trace(trace, lp->pg, predicted ? predicted : r->predicted,
                                  r->measured, predicted != NULL);
        if (check && !rc)
            rc = verdict(r);
    }
out:
    sc_comparison_free(cmp);
    if (pf)
        sc_profile_free(pf); /* frees r */
    else
        sc_run_result_free(r);
    sc_run_finish(rc);
    return rc;
}
