/*
 * plan_for.c — the words after the pick (plan.h,
 * docs/plan.md#for-a-framework): the commands that reproduce it
 * (`stagecraft sim`, `stagecraft export --format torch-csv`, with the exact
 * -D), the settings of the frameworks that run it (interp/plan/plan_for.h
 * decides from the program), and the checks of the settings (--layers
 * against -D layers). Which candidates a framework runs is interp's; this
 * file only words it. Nothing is printed: the lines go into buffers, a
 * JSON writer or a Lua table of the caller's.
 */
#include "engine.h"
#include "plan.h"

#include <lauxlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"

#define CMD_MAX 2048 /* a reproducing command: -D are short, paths up to 600 */

const char *sc_plan_def(const sc_plan_run *r, const char *name)
{
    for (int k = 0; k < r->c.ndefs; k++)
        if (strcmp(r->c.defs[k].name, name) == 0)
            return r->c.defs[k].values[0];
    return NULL;
}

static const char *def_value(const sc_plan_run *r, const char *name) { return sc_plan_def(r, name); }

/* The transformer layers (t) of --layers. */
static int t_layers(const sc_layers *ly, char kind)
{
    int n = 0;
    for (int i = 0; i < ly->n; i++)
        n += ly->kind[i] == kind;
    return n;
}

int sc_plan_for_check(sc_plan_run *r, int p_given, int m_given)
{
    r->notes = (p_given ? 0 : SC_PLAN_NOTE_P) | (m_given ? 0 : SC_PLAN_NOTE_M);
    const char *dl = def_value(r, "layers");
    if (r->costs_out && !r->layers)
        return sc_eng_fail(SC_EXIT_USAGE, "--costs-out writes the costs of --layers' split: give --layers "
                                          "(without it the costs are -D tf, tb, tw or --costs)");
    if (!r->layers)
        return 0;
    if (dl) { /* one model: --layers' t and -D layers count the same layers */
        char *end;
        long n = strtol(dl, &end, 10);
        int t = t_layers(r->layers, 't');
        if (*end || n != t)
            return sc_eng_failf(SC_EXIT_USAGE, "plan: --layers %.60s has %d transformer layers (t) "
                                "but -D layers=%.20s: describe one model (as many t as -D layers)",
                                r->layers_spec, t, dl);
    }
    /* --layers times the stages from -D tf, tb, tw (units unless given):
     * a model's own times (seconds) are not used, and the figures say so. */
    if (r->c.bytes && !(def_value(r, "tf") && def_value(r, "tb") && def_value(r, "tw")))
        r->notes |= SC_PLAN_NOTE_LAYERS_UNITS;
    return 0;
}

/* ---- the commands ------------------------------------------------------------ */

typedef struct sbuf {
    char *s;
    size_t len, at;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (b->at < b->len) {
        int n = vsnprintf(b->s + b->at, b->len - b->at, fmt, ap);
        b->at += n > 0 ? (size_t)n : 0;
    }
    va_end(ap);
}

/* A word as sh reads it back: plain, or in single quotes. */
static void put_word(sbuf *b, const char *w)
{
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=.,:/@%";
    if (*w && strspn(w, plain) == strlen(w)) {
        put(b, " %s", w);
        return;
    }
    put(b, " '");
    for (; *w; w++)
        put(b, *w == '\'' ? "'\\''" : "%c", *w);
    put(b, "'");
}

static void put_def(sbuf *b, const char *name, const char *value)
{
    char kv[700];
    snprintf(kv, sizeof kv, "%s=%s", name, value);
    put(b, " -D");
    put_word(b, kv);
}

const sc_plan_split *sc_plan_split_of(const sc_plan_run *r, const sc_plan_cand *c)
{
    for (int k = 0; r->layers && k < r->nsplit; k++)
        if (r->split[k].S == c->shape.chunks * r->P)
            return &r->split[k];
    return NULL;
}

const char *sc_plan_costs_name(const sc_plan_run *r) { return r->costs_out ? r->costs_out : "SPLIT.json"; }

/* The file name of the pick's CSV: RECIPE.csv. */
static void csv_name(const sc_plan_cand *c, char *buf, size_t len)
{
    const char *base = strrchr(c->recipe, '/');
    base = base ? base + 1 : c->recipe;
    size_t n = strcspn(base, ".");
    snprintf(buf, len, "%.*s.csv", (int)(n ? n : strlen(base)), base);
}

/* `stagecraft VERB RECIPE -D ...`: p and m, the user's -D, the pick's
 * knobs (the cap's mem included), the split's costs; the options that
 * change what a recipe evaluates to. */
static void command(const sc_plan_run *r, const sc_plan_cand *c, const char *verb, sbuf *b)
{
    char n[24];
    put(b, "stagecraft %s", verb);
    put_word(b, c->recipe);
    snprintf(n, sizeof n, "%d", r->P);
    put_def(b, "p", n);
    snprintf(n, sizeof n, "%d", r->m);
    put_def(b, "m", n);
    for (int k = 0; k < r->c.ndefs; k++)
        if (strcmp(r->c.defs[k].name, "p") && strcmp(r->c.defs[k].name, "m"))
            put_def(b, r->c.defs[k].name, r->c.defs[k].values[0]);
    char args[sizeof c->args];
    snprintf(args, sizeof args, "%s", c->args);
    for (char *tok = strtok(args, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (eq) {
            *eq = 0;
            put_def(b, tok, eq + 1);
        }
    }
    if (sc_plan_split_of(r, c))
        put_def(b, "costs", sc_plan_costs_name(r));
    if (r->time_limit >= 0) {
        char tl[32];
        snprintf(tl, sizeof tl, "%.15g", r->time_limit);
        put(b, " --time-limit");
        put_word(b, tl);
    }
    if (r->force_costs)
        put(b, " --force-costs");
    if (r->trust)
        put(b, " --trust");
}

static void export_command(const sc_plan_run *r, const sc_plan_cand *c, sbuf *b)
{
    char csv[160];
    command(r, c, "export", b);
    csv_name(c, csv, sizeof csv);
    put(b, " --format torch-csv");
    if (r->fw == SC_FW_TORCHTITAN)
        put(b, " --torchtitan");
    put(b, " -o");
    put_word(b, csv);
}

/* Megatron-LM's arguments for the pick (its 1F1B or interleaved 1F1B). */
static void megatron_args(const sc_plan_run *r, const sc_plan_cand *c, sbuf *b)
{
    int v = c->shape.chunks, S = v * r->P;
    const sc_plan_split *sp = sc_plan_split_of(r, c);
    const char *dl = def_value(r, "layers");
    char lay[4096] = "";
    int nlayers = dl ? atoi(dl) : 0, mtp = 0;
    if (!sp && c->shape.decoders > 0) { /* a model's split (docs/model.md#the-split) */
        nlayers = c->shape.decoders;
        int even = nlayers % S == 0;
        for (const char *q = c->shape.layout; even && (q = strstr(q, "t*")); q += 2)
            even = atoi(q + 2) == nlayers / S;
        if (!even)
            snprintf(lay, sizeof lay, "%s", c->shape.layout);
    } else if (sp) {
        sc_part_layout(r->layers, sp->S, sp->first, lay, sizeof lay);
        nlayers = t_layers(r->layers, 't');
        mtp = t_layers(r->layers, 'm');
    } else if (nlayers > 0 && nlayers % S != 0) {
        /* Megatron splits evenly only when the layers divide: the even split
         * as a layout (E with the first stage, L with the last). */
        sc_layers *ly = sc_calloc(1, sizeof *ly);
        int *first = sc_calloc((size_t)S + 1, sizeof *first);
        char spec[64], err[160];
        snprintf(spec, sizeof spec, "E,t*%d,L", nlayers);
        if (ly && first && sc_layers_parse(spec, ly, err, sizeof err) == 0 &&
            sc_part_even(ly, S, first) >= 0)
            sc_part_layout(ly, S, first, lay, sizeof lay);
        sc_free(ly);
        sc_free(first);
    }
    put(b, "--pipeline-model-parallel-size %d", r->P);
    if (lay[0]) /* the layout gives the virtual stages: not both (Megatron refuses it) */
        put(b, " --pipeline-model-parallel-layout \"%s\"", lay);
    else if (v > 1)
        put(b, " --num-virtual-stages-per-pipeline-rank %d", v);
    if (nlayers > 0)
        put(b, " --num-layers %d", nlayers);
    if (mtp > 0)
        put(b, " --mtp-num-layers %d", mtp);
    put(b, ", with --global-batch-size = %d x --micro-batch-size x the data-parallel size", r->m);
}

static void torchtitan_args(const sc_plan_run *r, const sc_plan_cand *c, sbuf *b)
{
    char csv[160];
    csv_name(c, csv, sizeof csv);
    put(b, "--parallelism.pipeline_parallel_degree %d --parallelism.pipeline_parallel_schedule %s "
        "--parallelism.pipeline_parallel_schedule_csv %s, with --training.local_batch_size = %d x "
        "--parallelism.pipeline_parallel_microbatch_size", r->P, sc_plan_torch_class(&c->shape), csv, r->m);
    int S = c->shape.chunks * r->P, uneven = 0;
    if (c->shape.decoders > 0) /* a model's split (docs/model.md#the-split) */
        for (const char *q = c->shape.layout; (q = strstr(q, "t*")); q += 2)
            uneven |= atoi(q + 2) * S != c->shape.decoders;
    if (uneven) /* torchtitan takes the modules of each stage */
        put(b, ", and --parallelism.module_fqns_per_model_part with stage s holding layers.K "
            "of \"%s\" (tok_embeddings on the first, norm and output on the last)",
            c->shape.layout);
    else if (c->shape.placement == SC_PLAN_PLACE_LOOP && c->shape.chunks > 2)
        put(b, ", and --parallelism.pipeline_parallel_layers_per_stage giving %d stages", S);
}

static void pytorch_args(const sc_plan_run *r, const sc_plan_cand *c, sbuf *b)
{
    char csv[160];
    csv_name(c, csv, sizeof csv);
    if (c->shape.placement == SC_PLAN_PLACE_V)
        put(b, "rank d builds stages d and %d-d, then ", 2 * r->P - 1);
    else if (c->shape.placement == SC_PLAN_PLACE_LOOP && c->shape.chunks > 1)
        put(b, "rank d builds stages d, d+%d, ..., then ", r->P);
    else if (c->shape.placement == SC_PLAN_PLACE_LOOP)
        put(b, "rank d builds stage d, then ");
    else
        put(b, "each rank builds its stages (stagecraft export prints them), then ");
    put(b, "_PipelineScheduleRuntime(stages, n_microbatches=%d, ...)._load_csv(\"%s\")", r->m, csv);
}

static void fw_args(const sc_plan_run *r, const sc_plan_cand *c, int fw, sbuf *b)
{
    if (fw == SC_FW_MEGATRON)
        megatron_args(r, c, b);
    else if (fw == SC_FW_TORCHTITAN)
        torchtitan_args(r, c, b);
    else
        pytorch_args(r, c, b);
}

const sc_plan_cand *sc_plan_the_pick(const sc_plan_run *r)
{
    int pk = sc_plan_pick(r->plan);
    return pk >= 0 ? sc_plan_cand_at(r->plan, pk) : NULL;
}

void sc_plan_for_json(const sc_plan_run *r, sc_jw *w)
{
    if (r->fw)
        sc_jw_int(w, "left_out", r->left_out);
    const sc_plan_cand *c = sc_plan_the_pick(r);
    char *s = c ? sc_calloc(1, CMD_MAX) : NULL;
    if (!s) {
        sc_jw_null(w, "reproduce");
        return;
    }
    sbuf b = {s, CMD_MAX, 0};
    sc_jw_object(w, "reproduce");
    command(r, c, "sim", &b);
    sc_jw_str(w, "sim", s);
    if (c->shape.runs_on & SC_FW_BIT(SC_FW_PYTORCH)) {
        b.at = 0;
        export_command(r, c, &b);
        sc_jw_str(w, "export", s);
    } else {
        sc_jw_null(w, "export");
    }
    if (sc_plan_split_of(r, c))
        sc_jw_str(w, "costs", sc_plan_costs_name(r));
    for (int fw = 1; fw < SC_FW_COUNT; fw++) {
        b.at = 0;
        if (c->shape.runs_on & SC_FW_BIT(fw)) {
            fw_args(r, c, fw, &b);
            sc_jw_str(w, sc_plan_fw_name(fw), s);
        } else {
            sc_jw_null(w, sc_plan_fw_name(fw));
        }
    }
    sc_jw_end(w);
    sc_free(s);
}

void sc_plan_for_push(lua_State *L, const sc_plan_run *r)
{
    if (r->fw) {
        lua_pushstring(L, sc_plan_fw_name(r->fw));
        lua_setfield(L, -2, "for");
        lua_pushinteger(L, r->left_out);
        lua_setfield(L, -2, "left_out");
    }
    const sc_plan_cand *c = sc_plan_the_pick(r);
    char *s = c ? sc_calloc(1, CMD_MAX) : NULL;
    if (!s)
        return;
    sbuf b = {s, CMD_MAX, 0};
    lua_createtable(L, 0, 6);
    command(r, c, "sim", &b);
    lua_pushstring(L, s);
    lua_setfield(L, -2, "sim");
    if (c->shape.runs_on & SC_FW_BIT(SC_FW_PYTORCH)) {
        b.at = 0;
        export_command(r, c, &b);
        lua_pushstring(L, s);
        lua_setfield(L, -2, "export");
    }
    for (int fw = 1; fw < SC_FW_COUNT; fw++)
        if (c->shape.runs_on & SC_FW_BIT(fw)) {
            b.at = 0;
            fw_args(r, c, fw, &b);
            lua_pushstring(L, s);
            lua_setfield(L, -2, sc_plan_fw_name(fw));
        }
    lua_setfield(L, -2, "reproduce");
    sc_free(s);
}

void sc_plan_command(const sc_plan_run *r, const sc_plan_cand *c, int what, char *s, size_t len)
{
    sbuf b = {s, len, 0};
    s[0] = 0;
    if (what == SC_PLAN_CMD_SIM)
        command(r, c, "sim", &b);
    else if (what == SC_PLAN_CMD_EXPORT)
        export_command(r, c, &b);
    else
        fw_args(r, c, what, &b);
}
