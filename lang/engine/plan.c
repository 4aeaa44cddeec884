/*
 * plan.c — the engine's planner (plan.h, docs/plan.md): what to run on p devices
 * with m microbatches under a memory cap. Every stdlib recipe with its
 * knobs (the memory cap, v, the V block's memory, offload and recompute
 * budgets, the vocabulary's placement with a model) and the automatic
 * schedulers are evaluated as `compare` evaluates a row (compiled, so
 * verified, and simulated); interp/plan/plan.h keeps the front and picks;
 * the command's plan_out.c prints. With --layers, the model's layers are split into
 * stages (interp/plan/partition.h) and every candidate runs on the best
 * split's costs; the pick is also timed on the even split.
 *
 *   stagecraft plan -D p=8 -D m=32 --cap 6 -D tw=0.63 -D tcomm=0.016
 */
#include "plan.h"
#include "engine.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bound/bound.h"
#include "formats/jsonw.h"
#include "ir/alloc.h"
#include "lua/sc_lua.h"
#include "plan/partition.h"
#include "plan/plan.h"
#include "sandbox/sandbox.h"

/* The recipes searched: every stdlib recipe but dualpipe, which holds two
 * copies of the model (twice the parameters: another memory than the
 * activations the cap is about). stages: per device (0: v). */
static const struct {
    const char *name;
    int stages;
} recipes[] = {
    {"1f1b", 1}, {"zb-h1", 1}, {"zb-h2", 1}, {"gpipe", 1}, {"zb-auto", 1},
    {"interleaved", 0}, {"gis", 0}, {"1f1b-v", 2}, {"zb-v", 2}, {"v-half", 2},
    {"v-min", 2}, {"v-zb", 2}, {"zbv-auto", 2}, {"dualpipev", 2}, {"interleaved-zb", 0},
};
#define NREC ((int)(sizeof recipes / sizeof *recipes))

static int cap_bytes(const char *s, double *x)
{
    static const struct { const char *suf; double f; } u[] = {
        {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    char *end;
    *x = strtod(s, &end);
    if (end == s || !(*x > 0) || !isfinite(*x))
        return -1;
    if (!*end)
        return 0; /* units */
    for (size_t k = 0; k < sizeof u / sizeof *u; k++)
        if (strcmp(end, u[k].suf) == 0) {
            *x *= u[k].f;
            return 1;
        }
    return -1;
}

static int add_def(cmp *c, const char *name, const char *value)
{
    if (c->ndefs == MAX_DEFS)
        return sc_eng_fail(SC_EXIT_USAGE, "at most 60 -D");
    def *d = &c->defs[c->ndefs++];
    d->name = strdup(name);
    d->text = strdup(value);
    d->values = calloc(1, sizeof *d->values);
    if (d->values)
        d->values[0] = strdup(value);
    d->n = 1;
    if (!d->name || !d->text || !d->values || !d->values[0])
        return sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
    return 0;
}

/* The settings into r (the -D, the cap, the options), checked. */
static int settle(lua_State *L, const sc_plan_settings *st, sc_plan_run *r)
{
    int rc;
    char msg[200];
    r->time_limit = st->time_limit;
    r->force_costs = st->force_costs;
    r->trust = st->trust;
    r->costs_out = st->costs_out;
    r->layers_spec = st->layers;
    if (st->framework && (r->fw = sc_plan_fw_parse(st->framework)) < 0)
        return sc_eng_failf(SC_EXIT_USAGE, "--for '%.40s': expected megatron, torchtitan or pytorch",
                            st->framework);
    if (st->ndefs < 0 || st->ndefs > SC_PLAN_MAX_DEFS)
        return sc_eng_fail(SC_EXIT_USAGE, "at most 60 -D");
    for (int k = 0; k < st->ndefs; k++) {
        const char *d = st->defs[k], *eq = d ? strchr(d, '=') : NULL;
        if (!eq || eq == d)
            return sc_eng_fail(SC_EXIT_USAGE, "-D needs NAME=VALUE");
        size_t nlen = (size_t)(eq - d);
        const char *value = eq + 1;
        snprintf(msg, sizeof msg, "%.*s", (int)(nlen < 60 ? nlen : 60), d);
        if (strcmp(msg, "mem") == 0)
            return sc_eng_fail(SC_EXIT_USAGE, "plan: give the memory cap as --cap UNITS|BYTES, not -D mem");
        if (((strcmp(msg, "p") == 0 && st->p) || (strcmp(msg, "m") == 0 && st->m)) ||
            sc_plan_def(r, msg)) {
            snprintf(msg, sizeof msg, "-D %.*s given twice", (int)(nlen < 60 ? nlen : 60), d);
            return sc_eng_fail(SC_EXIT_USAGE, msg);
        }
        if (value[0] != '[' && (strchr(value, ',') || strchr(value, ':'))) {
            char one[200];
            snprintf(one, sizeof one, "plan takes one value per -D (-D %.60s): sweep with compare", msg);
            return sc_eng_fail(SC_EXIT_USAGE, one);
        }
        sc_eng_grant(L, d, nlen, value); /* -D costs=FILE, model=FILE: the caller's grant */
        if ((rc = add_def(&r->c, msg, value)))
            return rc;
    }
    char n[24];
    if (st->p < 0 || st->m < 0)
        return sc_eng_fail(SC_EXIT_USAGE, "plan: p and m must be whole numbers >= 1");
    if (st->p && (snprintf(n, sizeof n, "%d", st->p), rc = add_def(&r->c, "p", n)))
        return rc;
    if (st->m && (snprintf(n, sizeof n, "%d", st->m), rc = add_def(&r->c, "m", n)))
        return rc;
    if (st->cap) {
        r->bytes_cap = cap_bytes(st->cap, &r->cap);
        if (r->bytes_cap < 0)
            return sc_eng_fail(SC_EXIT_USAGE, "--cap needs units (6) or bytes (40GiB), > 0");
        r->cap_text = st->cap;
    }
    if (st->costs) {
        if (sc_plan_def(r, "costs"))
            return sc_eng_fail(SC_EXIT_USAGE, "--costs and -D costs: give one");
        sc_eng_grant(L, "costs", 5, st->costs);
        if ((rc = add_def(&r->c, "costs", st->costs)))
            return rc;
    }
    if (st->time_limit >= 0) {
        if (!(st->time_limit <= 1e9))
            return sc_eng_fail(SC_EXIT_USAGE, "--time-limit needs a number of seconds >= 0");
        sc_eng_set_time_limit(L, st->time_limit);
    }
    if (r->layers_spec && sc_plan_def(r, "costs"))
        return sc_eng_fail(SC_EXIT_USAGE, "--layers and a cost file: give one (the layers make the costs)");
    const char *p = sc_plan_def(r, "p"), *m = sc_plan_def(r, "m");
    r->P = p ? atoi(p) : 4;
    r->m = m ? atoi(m) : 8;
    if (r->P < 1 || r->m < 1)
        return sc_eng_fail(SC_EXIT_USAGE, "plan: p and m must be whole numbers >= 1");
    for (int k = 0; k < r->c.ndefs; k++) /* seed changes no byte */
        r->c.bytes |= sc_eng_compare_is_model_key(r->c.defs[k].name) && strcmp(r->c.defs[k].name, "seed");
    r->c.bytes |= sc_plan_def(r, "model") != NULL;
    if (r->bytes_cap && !r->c.bytes)
        return sc_eng_fail(SC_EXIT_USAGE, "--cap in bytes needs the model's sizes (-D layers=... with "
                                          "hidden, seq, batch, vocab) to count bytes; or give units");
    return 0;
}

/* ---- the layers: a cost file per stage count --------------------------------- */

static double num_def(const sc_plan_run *r, const char *name, double dflt)
{
    const char *v = sc_plan_def(r, name);
    return v ? atof(v) : dflt;
}

/* The cost file of S stages on split `first`, written into r's folder. */
static int costs_file(sc_plan_run *r, int S, const int *first, char *path, size_t len,
                      const char *tag)
{
    snprintf(path, len, "%s/%s%d.json", r->dir, tag, S);
    FILE *f = fopen(path, "w");
    if (!f)
        return sc_eng_fail(SC_EXIT_ARG, "plan: cannot write a cost file in the temporary folder");
    sc_jw w;
    sc_jw_init(&w, f);
    sc_part_costs(r->layers, S, r->P, first, num_def(r, "tf", 1), num_def(r, "tb", 1),
                  num_def(r, "tw", 1), num_def(r, "tcomm", 0), &w);
    fputc('\n', f);
    return fclose(f) ? sc_eng_fail(SC_EXIT_ARG, "plan: cannot write a cost file") : 0;
}

/* The split of S stages, best and even, their files; idx into r->split. */
static int split_for(sc_plan_run *r, int S)
{
    for (int k = 0; k < r->nsplit; k++)
        if (r->split[k].S == S)
            return k;
    if (r->nsplit == SC_PLAN_SPLITS || S > r->layers->n)
        return -1;
    sc_plan_split *sp = &r->split[r->nsplit];
    sp->S = S;
    sp->first = calloc(2 * ((size_t)S + 1), sizeof *sp->first);
    if (!sp->first)
        return -1;
    sp->even = sp->first + S + 1;
    sp->best_w = sc_part_best(r->layers, S, sp->first);
    sp->even_w = sc_part_even(r->layers, S, sp->even);
    if (sp->best_w < 0 || costs_file(r, S, sp->first, sp->path, sizeof sp->path, "best"))
        return -1;
    if (sp->even_w >= 0 && costs_file(r, S, sp->even, sp->even_path, sizeof sp->even_path, "even"))
        return -1;
    return r->nsplit++;
}

/* ---- candidates ---------------------------------------------------------------- */

/* Evaluates recipe ri with knobs ("name=value" pairs, space separated)
 * beyond the user's -D; adds it to the plan. even: on the even split. */
static int candidate(lua_State *L, sc_plan_run *r, int ri, const char *knobs, int even, row *out)
{
    int base = r->c.ndefs, rc = 0;
    char buf[160], shown[160] = "", fw_knobs[160];
    if (r->fw) { /* --for: what that framework cannot run is not evaluated (plan_for.h) */
        if (!sc_plan_fw_knobs(r->fw, recipes[ri].name, knobs, fw_knobs, sizeof fw_knobs)) {
            r->left_out++;
            r->last_over = 0;
            return 0;
        }
        knobs = fw_knobs;
    }
    snprintf(buf, sizeof buf, "%s", knobs);
    for (char *tok = strtok(buf, " "); tok && !rc; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        rc = add_def(&r->c, tok, eq + 1);
        if (strcmp(tok, "mem") == 0 && r->cap_text && strcmp(eq + 1, r->cap_text) == 0)
            continue; /* the cap: said once, in the header */
        snprintf(shown + strlen(shown), sizeof shown - strlen(shown), "%s%s=%s", shown[0] ? " " : "",
                 tok, eq + 1);
    }
    int v = recipes[ri].stages ? recipes[ri].stages : 2;
    const char *vk = strstr(knobs, "v=");
    if (!recipes[ri].stages && vk && (vk == knobs || vk[-1] == ' '))
        v = atoi(vk + 2);
    int sp = -1;
    if (!rc && r->layers && (sp = split_for(r, v * r->P)) >= 0) {
        rc = add_def(&r->c, "costs", even ? r->split[sp].even_path : r->split[sp].path);
        sc_eng_grant(L, "costs", 5, r->c.defs[r->c.ndefs - 1].values[0]);
    }
    row w;
    memset(&w, 0, sizeof w);
    w.recipe = ri;
    w.ud = LUA_NOREF;
    r->c.svg = ""; /* sc_eng_compare_row keeps the program (w.ud) for its bound */
    if (!rc)
        rc = sc_eng_compare_row(L, &r->c, r->decl, &w);
    r->c.svg = NULL;
    double bound = 0;
    sc_plan_shape shape = {0};
    if (w.ud != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, w.ud);
        sc_lprog *lp = sc_lua_toprog(L, -1);
        sc_bound b;
        /* Within a cap in units, the bound of the cap's class (an automatic
         * scheduler meets the cap without setting it; docs/bound.md) */
        int capped = r->cap > 0 && !r->bytes_cap && w.peak_max <= r->cap * (1 + 1e-9);
        if (lp && lp->pg &&
            (capped ? sc_bound_prog_cap(lp->pg, r->cap, &b) : sc_bound_prog(lp->pg, &b)) == SC_OK)
            bound = b.bound;
        if (lp && lp->pg) /* its placement, the frameworks that run it */
            sc_plan_shape_of(lp->pg, &shape);
        lua_pop(L, 1);
        if (!(r->keep && out)) { /* the pick's, for its order of lengths: the caller's */
            luaL_unref(L, LUA_REGISTRYINDEX, w.ud);
            w.ud = LUA_NOREF;
        }
    }
    while (r->c.ndefs > base) { /* the knobs go again */
        def *d = &r->c.defs[--r->c.ndefs];
        free(d->values[0]), free(d->values), free((char *)d->name), free(d->text);
    }
    if (rc)
        return rc;
    r->evaluated++;
    if (out) {
        *out = w;
        return 0;
    }
    /* a cap in bytes caps a model's whole device (docs/model.md#caps) */
    double peak = w.peak_max, scale = r->bytes_cap ? w.unit_bytes : 1;
    if (r->bytes_cap && w.own_model)
        peak = w.total_max, scale = 1;
    char err[200];
    if (r->layers && sp < 0 && !w.error)
        snprintf(err, sizeof err, "the layers do not split into %d stages", v * r->P);
    int i = sc_plan_add(r->plan, recipes[ri].name, shown, w.makespan, w.bubble, peak * scale,
                        w.error ? w.error : (r->layers && sp < 0) ? err : NULL);
    if (i >= 0 && w.unit_bytes > 0 && !w.error)
        sc_plan_set_bytes(r->plan, i, w.peak_max * w.unit_bytes, w.own_model ? w.total_max : 0);
    if (i >= 0 && !w.error)
        sc_plan_set_bound(r->plan, i, bound);
    if (i >= 0)
        sc_plan_set_shape(r->plan, i, &shape, knobs);
    if (i >= 0 && w.over_mem)
        r->refused++;
    r->last_over = w.over_mem || (w.error == NULL && r->cap > 0 && peak * scale > r->cap);
    free(w.error);
    sc_free(w.peak), sc_free(w.idle), sc_free(w.total);
    return i < 0 ? sc_eng_status_fail(L, SC_ERR_NOMEM, "out of memory") : 0;
}

/* The pick (candidate pk) evaluated again into *out: on the even split
 * (even), or as it was (with r->keep, for its program). */
static int pick_again(lua_State *L, sc_plan_run *r, int pk, int even, row *out)
{
    const sc_plan_cand *c = sc_plan_cand_at(r->plan, pk);
    for (int ri = 0; ri < NREC; ri++)
        if (strcmp(recipes[ri].name, c->recipe) == 0) {
            char knobs[200];
            snprintf(knobs, sizeof knobs, "%s%s", r->cap > 0 ? "mem=" : "",
                     r->cap > 0 ? r->cap_text : "");
            if (c->knobs[0])
                snprintf(knobs + strlen(knobs), sizeof knobs - strlen(knobs), "%s%s",
                         knobs[0] ? " " : "", c->knobs);
            return candidate(L, r, ri, knobs, even, out);
        }
    return 0;
}

/* The V block's memory levels for the front: up to 5 whole numbers from a
 * third of p up to the cap (or p), the cap itself included. */
static int levels(const sc_plan_run *r, int *out)
{
    int top = r->cap > 0 && !r->bytes_cap ? (int)floor(r->cap + 1e-9) : r->P;
    int lo = (r->P + 4) / 3, n = 0;
    if (top < lo)
        lo = top;
    for (int k = 0; k < 5 && lo <= top; k++) {
        int x = top - (int)lround((double)k * (top - lo) / 4);
        if (x >= 1 && (n == 0 || out[n - 1] != x))
            out[n++] = x;
        if (top == lo)
            break;
    }
    return n;
}

/* Candidate ri with knobs, and when the cap refused it, again with each
 * memory policy that meets a cap (offload, recomputation: the least that
 * fits). */
static int with_policies(lua_State *L, sc_plan_run *r, int ri, const char *knobs)
{
    static const char *const policies[] = {"offload=budget", "recompute=budget"};
    char k[240];
    int rc = candidate(L, r, ri, knobs, 0, NULL), over = r->last_over && r->cap > 0;
    for (int j = 0; j < 2 && !rc && over; j++) {
        snprintf(k, sizeof k, "%s %s", knobs, policies[j]);
        rc = candidate(L, r, ri, k, 0, NULL);
    }
    return rc;
}

/* interleaved-zb (recipe ri) at v = 2 and 4, under a cap in units only
 * (without one it runs its forwards ahead: GPipe's memory): as it is (it
 * keeps to the cap) and with offload=budget (built for it). */
static int list_zb(lua_State *L, sc_plan_run *r, int ri, const char *mem)
{
    char k[200];
    int rc = 0;
    for (int v = 2; v <= 4 && !rc && r->cap > 0 && !r->bytes_cap; v += 2) {
        snprintf(k, sizeof k, "%s v=%d", mem, v);
        rc = candidate(L, r, ri, k, 0, NULL);
        snprintf(k + strlen(k), sizeof k - strlen(k), " offload=budget");
        rc = rc ? rc : candidate(L, r, ri, k, 0, NULL);
    }
    return rc;
}

static int search(lua_State *L, sc_plan_run *r)
{
    char mem[80] = "", k[200];
    int rc = 0;
    if (r->cap > 0)
        snprintf(mem, sizeof mem, "mem=%s", r->cap_text);
    /* with a model the vocabulary layers' placements: auto is baseline */
    int vocab = ((sc_plan_def(r, "layers") && atof(sc_plan_def(r, "layers")) > 0) ||
                 (sc_plan_def(r, "model") && *sc_plan_def(r, "model"))) &&
                !sc_plan_def(r, "vocab_par");
    for (int ri = 0; ri < NREC && !rc; ri++) {
        const char *n = recipes[ri].name;
        if (strcmp(n, "interleaved-zb") == 0) {
            rc = list_zb(L, r, ri, mem);
            continue;
        }
        if ((rc = with_policies(L, r, ri, mem)))
            break;
        if (strcmp(n, "interleaved") == 0 || strcmp(n, "gis") == 0)
            for (int v = 3; v <= 4 && !rc; v++) { /* more chunks: a shorter fill */
                snprintf(k, sizeof k, "%s%sv=%d", mem, mem[0] ? " " : "", v);
                rc = with_policies(L, r, ri, k);
            }
        if (strcmp(n, "v-zb") == 0 && !r->bytes_cap) {
            int lv[8], nl = levels(r, lv);
            for (int j = 0; j < nl && !rc; j++)
                if (!(r->cap > 0 && fabs(lv[j] - r->cap) < 1e-9)) {
                    snprintf(k, sizeof k, "mem=%d", lv[j]);
                    rc = candidate(L, r, ri, k, 0, NULL);
                }
        }
        if (vocab && !rc && !r->layers && !sc_plan_def(r, "split")) {
            /* the layers split by the model's costs (docs/model.md#the-split) */
            snprintf(k, sizeof k, "%s%ssplit=best", mem, mem[0] ? " " : "");
            rc = candidate(L, r, ri, k, 0, NULL);
        }
        if (vocab && !rc)
            for (int j = 0; j < 3 && !rc; j++) {
                static const char *const places[] = {"redis", "vocab-1", "vocab-2"};
                snprintf(k, sizeof k, "%s%svocab_par=%s", mem, mem[0] ? " " : "", places[j]);
                rc = candidate(L, r, ri, k, 0, NULL);
            }
    }
    return rc;
}

void sc_eng_plan_free(lua_State *L, sc_plan_run *r)
{
    sc_len_order_free(&r->order);
    if (r->note_ref) { /* sc.note back, even when the search was cut short */
        sc_eng_push_module(L);
        lua_rawgeti(L, LUA_REGISTRYINDEX, r->note_ref);
        lua_setfield(L, -2, "note");
        lua_pop(L, 1);
        luaL_unref(L, LUA_REGISTRYINDEX, r->note_ref);
        r->note_ref = 0;
    }
    sc_eng_compare_free(L, &r->c);
    sc_plan_free(r->plan);
    for (int k = 0; k < r->nsplit; k++) {
        unlink(r->split[k].path);
        if (r->split[k].even_w >= 0)
            unlink(r->split[k].even_path);
        free(r->split[k].first);
    }
    if (r->dir[0])
        rmdir(r->dir);
    free(r->layers);
    free(r->even_row.error); /* the even split's row (candidate's out) */
    sc_free(r->even_row.peak), sc_free(r->even_row.idle), sc_free(r->even_row.total);
}

static int mute(lua_State *L)
{
    (void)L;
    return 0;
}

int sc_eng_plan(lua_State *L, const sc_plan_settings *st, sc_plan_run *rp)
{
#define r (*rp)
    memset(&r, 0, sizeof r);
    r.time_limit = -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = settle(L, st, &r);
    lua_newtable(L);
    r.decl = lua_gettop(L);
    for (int ri = 0; ri < NREC; ri++)
        r.c.recipes[r.c.nrec++] = recipes[ri].name;
    if (!rc && r.layers_spec) {
        char err[200];
        r.layers = calloc(1, sizeof *r.layers);
        if (!r.layers)
            rc = sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
        else if (sc_layers_parse(r.layers_spec, r.layers, err, sizeof err))
            rc = sc_eng_fail(SC_EXIT_USAGE, err);
        const char *tmp = getenv("TMPDIR");
        snprintf(r.dir, sizeof r.dir, "%s/stagecraft-plan-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!rc && !mkdtemp(r.dir)) {
            r.dir[0] = 0;
            rc = sc_eng_fail(SC_EXIT_ARG, "plan: cannot make a temporary folder for the cost files");
        }
    }
    if (!rc) /* --layers against -D layers; the notes (plan_for.c) */
        rc = sc_plan_for_check(&r, sc_plan_def(&r, "p") != NULL, sc_plan_def(&r, "m") != NULL);
    if (!rc) /* p and m to every recipe, so that all are of one size */
        rc = (sc_plan_def(&r, "p") ? 0 : add_def(&r.c, "p", "4")) ||
             (sc_plan_def(&r, "m") ? 0 : add_def(&r.c, "m", "8"));
    if (!rc)
        rc = sc_eng_compare_declared(L, &r.c, r.decl);
    /* The recipes' notes (sc.note) would repeat for every knob of every
     * candidate: muted while the search runs, put back after. */
    sc_eng_push_module(L);
    lua_getfield(L, -1, "note");
    r.note_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushcfunction(L, mute);
    lua_setfield(L, -2, "note");
    lua_pop(L, 1);
    if (!rc && !(r.plan = sc_plan_new(r.cap)))
        rc = sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
    if (!rc) {
        sc_plan_set_for(r.plan, r.fw);
        sc_plan_set_units(r.plan, r.bytes_cap, r.cap > 0 ? r.cap_text : NULL);
    }
    if (!rc)
        rc = search(L, &r);
    if (!rc) {
        sc_plan_finish(r.plan);
        int pk = sc_plan_pick(r.plan);
        if (r.layers && pk >= 0) { /* the pick on the even split, for the gain */
            rc = pick_again(L, &r, pk, 1, &r.even_row);
            r.have_even = !rc;
        }
        if (!rc && pk >= 0 && sc_plan_def(&r, "lengths")) { /* docs/lengths.md */
            row w;
            r.keep = 1;
            rc = pick_again(L, &r, pk, 0, &w);
            r.keep = 0;
            if (!rc && w.ud != LUA_NOREF)
                rc = sc_plan_order(L, &r, w.ud);
            if (!rc) {
                free(w.error);
                sc_free(w.peak), sc_free(w.idle), sc_free(w.total);
            }
        }
    }
    sc_eng_compare_set_model(L, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r.seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return rc;
#undef r
}
