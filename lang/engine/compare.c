/*
 * compare.c — the engine's compare rows (compare.h, docs/cli.md): several
 * recipes under the same -D, and -D values that are ranges or lists, one
 * row each; `stagecraft compare`, sweeps of `sim`, sc.compare, plan's
 * candidates and stagecraft_compare evaluate here.
 *
 *   stagecraft compare 1f1b zb-h1 zb-v v-half -D p=8 -D m=32
 *   stagecraft sim gis -D offload=all -D link_gbps=10:100:10
 *
 * A row per (combination of swept values, recipe), in that order: the
 * values of the first swept name change slowest. A -D name goes to every
 * recipe that declares it (the others are named in a note); a name no
 * recipe declares is an error with the near names. With a model size
 * (hidden, layers, vocab, seq, batch) among the -D, the memory model is the
 * built-in model's, as `run` sets it, and the peaks are also in bytes.
 * A row whose recipe fails shows its error; the command then exits with
 * the first such error's code after the table.
 */
#include "compare.h"
#include "engine.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound/bound.h"
#include "ir/alloc.h"
#include "model/flops.h"
#include "lua/sc_lua.h"
#include "sandbox/sc_limits.h"
#include "sandbox/sandbox.h"

static const char *const model_keys[] = {
#define X(name) #name,
    SC_MODEL_SIZES(X)
#undef X
};

static int failf(int code, const char *fmt, const char *a, const char *b)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, a, b);
    return sc_eng_fail(code, msg);
}

/* ---- sweeps --------------------------------------------------------------- */

/* A whole number in s (strtod reads all of it). */
int sc_eng_compare_number(const char *s, double *x)
{
    char *end;
    *x = strtod(s, &end);
    return end != s && *end == 0 && isfinite(*x);
}

/* Splits d->text into its values: "a,b,c" a list, "lo:hi[:step]" a range
 * of numbers (hi included), anything else one value. */
static int expand(def *d)
{
    const char *t = d->text;
    size_t len = strlen(t);
    d->values = calloc(MAX_VALUES, sizeof *d->values);
    if (!d->values)
        return sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
    if (strchr(t, ',') && t[0] != '[') { /* "[a,b]" is one value: a list (mem per device) */
        d->sweep = 1;
        const char *p = t;
        for (;;) {
            const char *c = strchr(p, ',');
            size_t n = c ? (size_t)(c - p) : strlen(p);
            if (n == 0)
                return failf(SC_EXIT_USAGE, "-D %s=%s: an empty value in the list", d->name, t);
            if (d->n == MAX_VALUES)
                return failf(SC_EXIT_USAGE, "-D %s=%s: more than 1000 values", d->name, t);
            d->values[d->n] = malloc(n + 1);
            if (!d->values[d->n])
                return sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
            memcpy(d->values[d->n], p, n);
            d->values[d->n++][n] = 0;
            if (!c)
                break;
            p = c + 1;
        }
        return 0;
    }
    char a[64], b[64], c[64];
    double lo, hi, step = 1;
    int k = 0;
    if (len < 190 && strchr(t, ':')) {
        k = sscanf(t, "%63[^:]:%63[^:]:%63s", a, b, c);
        if (k < 2 || !sc_eng_compare_number(a, &lo) || !sc_eng_compare_number(b, &hi) || (k == 3 && !sc_eng_compare_number(c, &step)) ||
            (k == 2 && strchr(strchr(t, ':') + 1, ':')))
            return failf(SC_EXIT_USAGE, "-D %s=%s: a range is FROM:TO or FROM:TO:STEP (numbers)",
                         d->name, t);
        if (!(step > 0) || hi < lo)
            return failf(SC_EXIT_USAGE, "-D %s=%s: a range needs FROM <= TO and a STEP > 0",
                         d->name, t);
        if ((hi - lo) / step + 1 > MAX_VALUES)
            return failf(SC_EXIT_USAGE, "-D %s=%s: more than 1000 values", d->name, t);
        d->sweep = 1;
        /* The count first, then that many values: a bound on lo + i*step
         * alone never ends where i*step vanishes in lo (1e20:1e20), and
         * wrote past the list. */
        long count = (long)floor((hi - lo) / step + 1e-9) + 1;
        if (count < 1 || count > MAX_VALUES)
            return failf(SC_EXIT_USAGE, "-D %s=%s: more than 1000 values", d->name, t);
        for (long i = 0; i < count; i++) {
            char v[64];
            snprintf(v, sizeof v, "%.12g", lo + (double)i * step);
            d->values[d->n++] = strdup(v);
            if (!d->values[d->n - 1])
                return sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
        }
        return 0;
    }
    d->values[d->n++] = strdup(t);
    return d->values[0] ? 0 : sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
}

/* ---- preparing ---------------------------------------------------------- */

int sc_eng_compare_prepare(lua_State *L, cmp *c)
{
    for (int k = 0; k < c->ndefs; k++) {
        int rc = expand(&c->defs[k]);
        if (rc)
            return rc;
        for (int j = 0; j < c->defs[k].n; j++) /* -D model=FILE, costs=FILE: the recipes' */
            sc_eng_grant(L, c->defs[k].name, strlen(c->defs[k].name), c->defs[k].values[j]);
        for (int j = 0; j < NMODEL - 1; j++) /* seed changes no byte */
            c->bytes |= strcmp(c->defs[k].name, model_keys[j]) == 0;
    }
    return 0;
}

/* ---- rows ------------------------------------------------------------------ */

int sc_eng_compare_is_model_key(const char *name)
{
    for (int j = 0; j < NMODEL; j++)
        if (strcmp(name, model_keys[j]) == 0)
            return 1;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The declared names of each recipe, in a table of sets at index decl. */
int sc_eng_compare_declared(lua_State *L, cmp *c, int decl)
{
    for (int r = 0; r < c->nrec; r++) {
        if (sc_eng_evaluate(L, c->recipes[r], 0, 1) != LUA_OK)
            return sc_eng_lua_fail(L);
        int list = lua_gettop(L) - 1;
        lua_newtable(L);
        for (lua_Integer i = 1; lua_geti(L, list, i) == LUA_TTABLE; i++) {
            lua_getfield(L, -1, "name");
            lua_pushboolean(L, 1);
            lua_settable(L, -4);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        lua_seti(L, decl, r + 1);
        lua_pop(L, 3);
    }
    /* Every -D name must belong to some recipe (or be a model size). */
    for (int k = 0; k < c->ndefs; k++) {
        const char *name = c->defs[k].name;
        int known = sc_eng_compare_is_model_key(name) ||
                    strcmp(name, "lengths") == 0; /* every recipe's (docs/lengths.md) */
        for (int r = 0; r < c->nrec && !known; r++) {
            lua_geti(L, decl, r + 1);
            known = lua_getfield(L, -1, name) != LUA_TNIL;
            lua_pop(L, 2);
        }
        if (known)
            continue;
        const char *names[512];
        int n = 0;
        for (int r = 0; r < c->nrec; r++) {
            lua_geti(L, decl, r + 1);
            lua_pushnil(L);
            while (lua_next(L, -2) && n < 512) {
                lua_pop(L, 1);
                int dup = 0;
                for (int j = 0; j < n && !dup; j++)
                    dup = strcmp(names[j], lua_tostring(L, -1)) == 0;
                if (!dup)
                    names[n++] = lua_tostring(L, -1); /* anchored in decl */
            }
            lua_pop(L, 1);
        }
        qsort(names, (size_t)n, sizeof *names, cmp_name); /* a stable hint */
        char hint[200], msg[400];
        sc_did_you_mean(hint, sizeof hint, name, names, n);
        snprintf(msg, sizeof msg, "unknown parameter '%s': none of the recipes declares it%s%s", name,
                 hint[0] ? "; " : "", hint);
        return sc_eng_fail(SC_EXIT_USAGE, msg);
    }
    return 0;
}

/* The value index of def k in combination `combo` (the first def slowest). */
int sc_eng_compare_value_of(const cmp *c, int combo, int k)
{
    for (int j = c->ndefs - 1; j > k; j--)
        combo /= c->defs[j].n;
    return combo % c->defs[k].n;
}

void sc_eng_compare_set_model(lua_State *L, int on)
{
    sc_eng_push_module(L);
    lua_createtable(L, 0, NMODEL);
    for (int i = 0; on && i < NMODEL; i++) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, model_keys[i]);
    }
    lua_setfield(L, -2, "_external");
    lua_pop(L, 1);
}

/* The model's sizes of combination `combo` from its -D into *mc (usage
 * error in err when one is not an integer). */
static int combo_model(const cmp *c, int combo, sc_model_cfg *mc, char *err, size_t errlen)
{
    for (int k = 0; k < c->ndefs; k++) {
        const char *v = c->defs[k].values[sc_eng_compare_value_of(c, combo, k)];
        char *end;
        long x = strtol(v, &end, 10);
        if (!sc_eng_compare_is_model_key(c->defs[k].name))
            continue;
        if (end == v || *end) {
            snprintf(err, errlen, "model size '%s': expected an integer, got '%s'",
                     c->defs[k].name, v);
            return SC_EXIT_USAGE;
        }
        long *slot[] = {&mc->hidden, &mc->layers, &mc->vocab, &mc->seq, &mc->batch};
        for (int j = 0; j < NMODEL - 1; j++)
            if (strcmp(c->defs[k].name, model_keys[j]) == 0)
                *slot[j] = x;
    }
    return 0;
}

/* The model's sizes from the -D of this combination: its unit in bytes and
 * the program's memory model set from it (runtime/run/run.h). */
static int model_memory(const cmp *c, int combo, sc_prog *pg, double *unit, char *err,
                        size_t errlen)
{
    const sc_eng_runtime *rt = sc_eng_runtime_ops();
    if (!rt) {
        snprintf(err, errlen, "counting bytes from model sizes (-D hidden, layers, ...) needs the "
                 "runtime's model, which only the command line links; give the model as -D "
                 "model=FILE (a config.json), or use `stagecraft compare`");
        return SC_EXIT_USAGE;
    }
    sc_model_cfg mc = rt->defaults(sc_prog_stages(pg));
    int code = combo_model(c, combo, &mc, err, errlen);
    if (code)
        return code;
    return rt->model_memory(&mc, pg, unit, err, errlen);
}

static int row_error(lua_State *L, row *w, int code, const char *msg)
{
    w->code = code ? code : 8;
    w->error = strdup(msg ? msg : "error");
    (void)L;
    return 0;
}

/* Evaluates one recipe under one combination and simulates it. */
int sc_eng_compare_row(lua_State *L, cmp *c, int decl, row *w)
{
    int top = lua_gettop(L);
    lua_newtable(L);
    int t = lua_gettop(L);
    lua_geti(L, decl, w->recipe + 1);
    for (int k = 0; k < c->ndefs; k++) { /* the names this recipe declares */
        int mine = lua_getfield(L, -1, c->defs[k].name) != LUA_TNIL ||
                   strcmp(c->defs[k].name, "lengths") == 0; /* every recipe's */
        lua_pop(L, 1);
        if (!mine)
            continue;
        lua_pushstring(L, c->defs[k].values[sc_eng_compare_value_of(c, w->combo, k)]);
        lua_setfield(L, t, c->defs[k].name);
    }
    lua_pop(L, 1);
    sc_eng_compare_set_model(L, c->bytes);
    const sc_eng_runtime *rt = sc_eng_runtime_ops();
    if (c->bytes && rt) { /* a cap in bytes: in the unit model_memory sets below */
        sc_model_cfg mc = rt->defaults(1);
        mc.layers = 0; /* two per stage, as model_memory has it */
        char err[256];
        if (combo_model(c, w->combo, &mc, err, sizeof err) == 0)
            rt->set_unit_bytes(L, &mc);
    }
    sc_eng_push_module(L);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "_cap_refused");
    lua_pop(L, 1);
    if (sc_eng_evaluate(L, c->recipes[w->recipe], t, 0) != LUA_OK) {
        sc_limits_error(L);
        int code = sc_lua_exit_for(L, -1);
        w->over_mem = sc_eng_cap_refused(L);
        row_error(L, w, code, lua_tostring(L, -1));
        lua_settop(L, top);
        return 0;
    }
    sc_lprog *lp = sc_lua_toprog(L, -3);
    char err[512];
    w->own_model = sc_prog_has_model(lp->pg);
    if (w->own_model) { /* the program's own bytes (docs/model.md), as sim counts them */
        w->unit_bytes = sc_prog_unit_bytes(lp->pg);
        c->model_rows++;
    } else if (c->bytes) {
        int code = model_memory(c, w->combo, lp->pg, &w->unit_bytes, err, sizeof err);
        if (code) {
            row_error(L, w, code, err);
            lua_settop(L, top);
            return 0;
        }
    }
    sc_status st;
    const sc_sim *sim = sc_lua_sim(lp, &st);
    if (!sim) {
        snprintf(err, sizeof err, "%s%s", lp->where, sc_errmsg(lp->pg));
        w->over_mem = sc_prog_cap_refused(lp->pg);
        row_error(L, w, sc_status_exit_code(st), err);
        lua_settop(L, top);
        return 0;
    }
    int P = sim->P;
    w->P = P;
    w->S = sc_prog_stages(lp->pg);
    w->m = sc_prog_microbatches(lp->pg);
    w->instructions = sc_prog_total_instructions(lp->pg);
    w->makespan = sim->makespan;
    sc_bound b; /* docs/bound.md */
    w->bound = sc_bound_prog(lp->pg, &b) == SC_OK ? b.bound : NAN;
    w->bubble = sim->bubble_rate;
    /* Counted in --max-mem, as the programs are: 10000 rows of 4096
     * devices hold 650 MB. */
    w->peak = sc_calloc((size_t)P, sizeof *w->peak);
    w->idle = sc_calloc((size_t)P, sizeof *w->idle);
    w->total = w->own_model ? sc_calloc((size_t)P, sizeof *w->total) : NULL;
    if (!w->peak || !w->idle || (w->own_model && !w->total))
        return sc_eng_status_fail(L, SC_ERR_NOMEM, "out of memory");
    w->bneck = sc_lua_balance(sim, w->idle);
    w->peak_min = INFINITY;
    for (int d = 0; d < P; d++) {
        w->peak[d] = sim->peak_mem[d];
        w->peak_max = fmax(w->peak_max, sim->peak_mem[d]);
        w->peak_min = fmin(w->peak_min, sim->peak_mem[d]);
        if (w->total) {
            w->total[d] = sc_prog_total_bytes(lp->pg, d, sim->peak_mem[d]);
            w->total_max = fmax(w->total_max, w->total[d]);
        }
        if (w->idle[d] > w->idle[w->idlest])
            w->idlest = d; /* here: the device that idles most */
    }
    w->idle_max = w->idle[w->idlest];
    if (c->svg) { /* keep the program for the picture */
        lua_pushvalue(L, -3);
        w->ud = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_settop(L, top);
    return 0;
}

void sc_eng_compare_free(lua_State *L, cmp *c)
{
    for (int k = 0; k < c->ndefs; k++) {
        for (int j = 0; j < c->defs[k].n; j++)
            free(c->defs[k].values[j]);
        free(c->defs[k].values);
        free((char *)c->defs[k].name);
        free(c->defs[k].text);
    }
    for (int i = 0; i < c->nrows; i++) {
        free(c->rows[i].error);
        sc_free(c->rows[i].peak);
        sc_free(c->rows[i].idle);
        sc_free(c->rows[i].total);
        if (c->rows[i].ud != LUA_NOREF)
            luaL_unref(L, LUA_REGISTRYINDEX, c->rows[i].ud);
    }
    sc_free(c->rows);
}

int sc_eng_compare_rows(lua_State *L, cmp *c, int decl, int *first)
{
    *first = 0;
    int rc = sc_eng_compare_declared(L, c, decl);
    long combos = 1;
    for (int k = 0; k < c->ndefs && !rc && combos * c->nrec <= MAX_ROWS; k++)
        combos *= c->defs[k].n;
    if (!rc && (combos * c->nrec > MAX_ROWS || combos < 1))
        rc = sc_eng_fail(SC_EXIT_USAGE, "more than 10000 rows: sweep fewer values");
    if (!rc && !(c->rows = sc_calloc((size_t)(combos * c->nrec), sizeof *c->rows)))
        rc = sc_eng_status_fail(L, SC_ERR_NOMEM, "out of memory");
    for (long combo = 0; !rc && combo < combos; combo++)
        for (int r = 0; !rc && r < c->nrec; r++) {
            row *w = &c->rows[c->nrows++];
            w->recipe = r;
            w->combo = (int)combo;
            w->ud = LUA_NOREF;
            rc = sc_eng_compare_row(L, c, decl, w);
            if (!*first && w->code && !w->over_mem) /* a row over mem is an answer */
                *first = w->code;
        }
    sc_eng_compare_set_model(L, 0);
    return rc;
}
