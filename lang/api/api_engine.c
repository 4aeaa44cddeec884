/*
 * api_engine.c — stagecraft_compare and stagecraft_plan (stagecraft.h): the
 * engine's comparison and planner (lang/engine) on a context, under its
 * limits, with the results copied into memory the context keeps.
 *
 * The engine's work runs under lua_pcall (nothing longjmps over the host);
 * its C memory is freed whatever happens inside.
 */
#include "api_impl.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compare.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "lua/sc_lua.h"

/* Runs fn(job) under pcall, armed with the context's limits as one
 * evaluation; the code: OK, the engine's error (e), or the Lua error's. */
static int run(stagecraft *sc, lua_CFunction fn, void *job, sc_eng_err *e)
{
    lua_State *L = sc->L;
    int top = lua_gettop(L);
    sc_limits_use(L);
    sc_eng_err *prev = sc_eng_catch(e);
    lua_pushcfunction(L, fn);
    lua_pushlightuserdata(L, job);
    sc_limits_arm(L);
    int st = lua_pcall(L, 1, 1, 0);
    sc_limits_disarm(L);
    sc_eng_release(prev);
    int rc;
    if (st == LUA_OK && sc_limits_hit(L)) { /* hit, and caught by a recipe */
        lua_pop(L, 1);
        lua_pushliteral(L, "limit");
        st = LUA_ERRRUN;
    }
    if (st != LUA_OK) {
        sc_limits_error(L);
        int code = sc_lua_exit_for(L, -1);
        const char *msg = lua_tostring(L, -1);
        rc = sc_api_fail(sc, code ? code : STAGECRAFT_RECIPE, "%s",
                         msg ? msg : "(error object is not a string)");
    } else {
        rc = (int)lua_tointeger(L, -1);
        if (rc)
            sc_api_fail(sc, rc, "%s", e->msg[0] ? e->msg : "error");
    }
    lua_settop(L, top);
    return rc;
}

/* ---- compare --------------------------------------------------------------- */

typedef struct compare_job {
    cmp c;
    int first;
} compare_job;

static int compare_protected(lua_State *L)
{
    compare_job *j = lua_touserdata(L, 1);
    lua_settop(L, 0);
    lua_newtable(L); /* 1: the recipes' declared names */
    int rc = sc_eng_compare_prepare(L, &j->c);
    if (!rc)
        rc = sc_eng_compare_rows(L, &j->c, 1, &j->first);
    lua_pushinteger(L, rc);
    return 1;
}

/* Row i of the comparison into *o (strings kept in k). 0, or out of memory. */
static int copy_row(const cmp *c, int i, stagecraft_row *o, keep *k)
{
    const row *w = &c->rows[i];
    size_t len = 1;
    for (int d = 0; d < c->ndefs; d++)
        len += strlen(c->defs[d].name) + strlen(c->defs[d].values[sc_eng_compare_value_of(c, w->combo, d)]) + 2;
    char *params = sc_api_keep(k, len);
    if (!params)
        return -1;
    for (int d = 0, at = 0; d < c->ndefs; d++)
        at += snprintf(params + at, len - (size_t)at, "%s%s=%s", d ? " " : "", c->defs[d].name,
                       c->defs[d].values[sc_eng_compare_value_of(c, w->combo, d)]);
    o->recipe = sc_api_keep_str(k, c->recipes[w->recipe]);
    o->parameters = params;
    o->code = w->error ? w->code : 0;
    o->error = w->error ? sc_api_keep_str(k, w->error) : NULL;
    o->over_cap = w->over_mem;
    if (!o->recipe || (w->error && !o->error))
        return -1;
    if (w->error)
        return 0;
    o->devices = w->P;
    o->stages = w->S;
    o->microbatches = w->m;
    o->instructions = (long long)w->instructions;
    o->makespan = w->makespan;
    o->bubble_rate = w->bubble;
    o->peak_memory_max = w->peak_max;
    o->lower_bound = w->bound;
    return 0;
}

/* The comparison of recipes under defs, run: *out (the caller frees it
 * with compare_done), or the code. */
static int compare_run(stagecraft *sc, const char *const *recipes, const char *const *defs,
                       compare_job **out)
{
    compare_job *j = calloc(1, sizeof *j);
    if (!j)
        return sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
    *out = j;
    int rc = 0;
    for (int i = 0; recipes[i] && !rc; i++)
        if (j->c.nrec == MAX_RECIPES)
            rc = sc_api_fail(sc, STAGECRAFT_USAGE, "at most %d recipes", MAX_RECIPES);
        else
            j->c.recipes[j->c.nrec++] = recipes[i];
    for (int i = 0; defs && defs[i] && !rc; i++) {
        const char *eq = strchr(defs[i], '=');
        if (!eq || eq == defs[i]) {
            rc = sc_api_fail(sc, STAGECRAFT_USAGE, "-D needs NAME=VALUE (got '%s')", defs[i]);
            break;
        }
        if (j->c.ndefs == MAX_DEFS) {
            rc = sc_api_fail(sc, STAGECRAFT_USAGE, "at most %d -D", MAX_DEFS);
            break;
        }
        def *d = &j->c.defs[j->c.ndefs++];
        d->name = strndup(defs[i], (size_t)(eq - defs[i]));
        d->text = strdup(eq + 1);
        if (!d->name || !d->text)
            rc = sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
        for (int k = 0; k < j->c.ndefs - 1 && !rc; k++)
            if (strcmp(j->c.defs[k].name, d->name) == 0)
                rc = sc_api_fail(sc, STAGECRAFT_USAGE, "-D %s given twice", d->name);
    }
    sc_eng_err e;
    if (!rc)
        rc = run(sc, compare_protected, j, &e);
    return rc;
}

static void compare_done(stagecraft *sc, compare_job *j)
{
    if (!j)
        return;
    sc_limits_use(sc->L);
    sc_eng_compare_free(sc->L, &j->c);
    free(j);
}

int stagecraft_compare(stagecraft *sc, const char *const *recipes, const char *const *defs,
                       const stagecraft_row **rows, int *nrows)
{
    int rc = sc_api_enter(sc, recipes && recipes[0] && rows && nrows,
                          "stagecraft_compare needs recipes and a place for the rows");
    if (rc)
        return rc;
    *rows = NULL;
    *nrows = 0;
    sc_api_keep_free(&sc->compare_kept);
    compare_job *j = NULL;
    rc = compare_run(sc, recipes, defs, &j);
    stagecraft_row *out = NULL;
    if (!rc && !(out = sc_api_keep(&sc->compare_kept, (size_t)j->c.nrows * sizeof *out)))
        rc = sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
    for (int i = 0; !rc && i < j->c.nrows; i++)
        if (copy_row(&j->c, i, &out[i], &sc->compare_kept))
            rc = sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
    if (!rc) {
        *rows = out;
        *nrows = j->c.nrows;
    }
    compare_done(sc, j);
    return rc;
}

/* The JSON text that fn writes of obj, kept in sc->json: *text, *len; or
 * out of memory. */
static int keep_json(stagecraft *sc, void (*fn)(const void *obj, sc_jw *w), const void *obj,
                     const char **text, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
    sc_jw w;
    sc_jw_init(&w, f);
    fn(obj, &w);
    fputc('\n', f);
    if (fclose(f) != 0) {
        free(buf);
        return sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
    }
    free(sc->json);
    sc->json = buf;
    *text = buf;
    if (len)
        *len = n;
    return STAGECRAFT_OK;
}

static void compare_json(const void *j, sc_jw *w) { sc_eng_compare_json(&((const compare_job *)j)->c, w); }

int stagecraft_compare_json(stagecraft *sc, const char *const *recipes, const char *const *defs,
                            const char **text, size_t *len)
{
    int rc = sc_api_enter(sc, recipes && recipes[0] && text,
                          "stagecraft_compare_json needs recipes and a place for the text");
    if (rc)
        return rc;
    compare_job *j = NULL;
    rc = compare_run(sc, recipes, defs, &j);
    if (!rc)
        rc = keep_json(sc, compare_json, j, text, len);
    /* As the command's exit: the first failed row's code (over the cap: an answer). */
    for (int i = 0; !rc && j->first && i < j->c.nrows; i++) {
        const row *r = &j->c.rows[i];
        if (r->error && r->code == j->first)
            rc = sc_api_fail(sc, r->code, "%s: %s", j->c.recipes[r->recipe], r->error);
    }
    compare_done(sc, j);
    return rc;
}

/* ---- plan ------------------------------------------------------------------ */

typedef struct plan_job {
    sc_plan_settings s;
    sc_plan_run r;
    const char *defs[MAX_DEFS];
} plan_job;

static int plan_protected(lua_State *L)
{
    plan_job *j = lua_touserdata(L, 1);
    lua_settop(L, 0);
    int rc = sc_eng_plan(L, &j->s, &j->r);
    lua_settop(L, 0);
    lua_pushinteger(L, rc);
    return 1;
}

/* The plan of r into *o (strings kept in k). 0, or out of memory. */
static int copy_plan(const sc_plan_run *r, stagecraft_plan_result *o, keep *k)
{
    int n = sc_plan_count(r->plan);
    stagecraft_candidate *c = sc_api_keep(k, (size_t)n * sizeof *c);
    if (!c)
        return -1;
    for (int i = 0; i < n; i++) {
        const sc_plan_cand *pc = sc_plan_cand_at(r->plan, i);
        c[i].recipe = sc_api_keep_str(k, pc->recipe);
        c[i].knobs = sc_api_keep_str(k, pc->knobs);
        c[i].error = pc->error[0] ? sc_api_keep_str(k, pc->error) : NULL;
        if (!c[i].recipe || !c[i].knobs || (pc->error[0] && !c[i].error))
            return -1;
        c[i].makespan = pc->makespan;
        c[i].bubble_rate = pc->bubble;
        c[i].peak_memory = pc->peak;
        c[i].fits = pc->fits;
        c[i].front = pc->front;
    }
    char why[640];
    sc_plan_why(r->plan, why, sizeof why);
    o->devices = r->P;
    o->microbatches = r->m;
    o->ncandidates = n;
    o->candidates = c;
    o->pick = sc_plan_pick(r->plan);
    o->why = sc_api_keep_str(k, why);
    o->sim_command = NULL;
    const sc_plan_cand *pick = sc_plan_the_pick(r);
    if (pick) {
        char *cmd = sc_api_keep(k, 2048);
        if (!cmd)
            return -1;
        sc_plan_command(r, pick, SC_PLAN_CMD_SIM, cmd, 2048);
        o->sim_command = cmd;
    }
    return o->why ? 0 : -1;
}

/* The plan of settings s, run: *out (the caller frees it with
 * plan_done), or the code. */
static int plan_run(stagecraft *sc, const stagecraft_plan_settings *s, plan_job **out)
{
    if (s->devices < 0 || s->microbatches < 0)
        return sc_api_fail(sc, STAGECRAFT_USAGE, "plan: p and m must be whole numbers >= 1");
    plan_job *j = calloc(1, sizeof *j);
    if (!j)
        return sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
    *out = j;
    int rc = 0;
    for (int i = 0; s->defs && s->defs[i] && !rc; i++)
        if (j->s.ndefs == SC_PLAN_MAX_DEFS)
            rc = sc_api_fail(sc, STAGECRAFT_USAGE, "at most %d -D", SC_PLAN_MAX_DEFS);
        else
            j->defs[j->s.ndefs++] = s->defs[i];
    j->s.defs = j->defs;
    j->s.p = s->devices;
    j->s.m = s->microbatches;
    const char *const text[][2] = {{"cap", s->cap}, {"costs", s->costs}, {"layers", s->layers},
                                   {"framework", s->framework}};
    for (size_t k = 0; k < sizeof text / sizeof text[0] && !rc; k++) { /* engine/plan.h's table */
        char msg[160];
        if (text[k][1] && sc_plan_opt_set(&j->s, sc_plan_opt_find(text[k][0], 0), text[k][1], msg,
                                          sizeof msg))
            rc = sc_api_fail(sc, STAGECRAFT_USAGE, "plan: %s", msg);
    }
    j->s.time_limit = s->time_limit > 0 ? s->time_limit : s->time_limit < 0 ? 0 : -1;
    j->r.time_limit = -1;
    sc_eng_err e;
    if (!rc)
        rc = run(sc, plan_protected, j, &e);
    return rc;
}

static void plan_done(stagecraft *sc, plan_job *j)
{
    if (!j)
        return;
    sc_limits_use(sc->L);
    sc_eng_plan_free(sc->L, &j->r);
    free(j);
}

int stagecraft_plan(stagecraft *sc, const stagecraft_plan_settings *s, stagecraft_plan_result *out)
{
    int rc = sc_api_enter(sc, s && out, "stagecraft_plan needs settings and a place for the plan");
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    out->pick = -1;
    sc_api_keep_free(&sc->plan_kept);
    plan_job *j = NULL;
    rc = plan_run(sc, s, &j);
    if (!rc && copy_plan(&j->r, out, &sc->plan_kept)) {
        memset(out, 0, sizeof *out);
        out->pick = -1;
        rc = sc_api_fail(sc, STAGECRAFT_NOMEM, "out of memory");
    }
    plan_done(sc, j);
    return rc;
}

const char *stagecraft_plan_option(int i, const char **flag)
{
    if (i < 0 || i >= SC_PLAN_NOPTS)
        return NULL;
    if (flag)
        *flag = sc_plan_opts[i].flag;
    return sc_plan_opts[i].field;
}

static void plan_json(const void *j, sc_jw *w) { sc_eng_plan_json(&((const plan_job *)j)->r, w); }

int stagecraft_plan_json(stagecraft *sc, const stagecraft_plan_settings *s, const char **text,
                         size_t *len)
{
    int rc = sc_api_enter(sc, s && text, "stagecraft_plan_json needs settings and a place for the text");
    if (rc)
        return rc;
    plan_job *j = NULL;
    rc = plan_run(sc, s, &j);
    if (!rc)
        rc = keep_json(sc, plan_json, j, text, len);
    if (!rc && sc_plan_pick(j->r.plan) < 0) { /* an answer, but not a plan: as the command */
        char why[640];
        sc_plan_why(j->r.plan, why, sizeof why);
        rc = sc_api_fail(sc, STAGECRAFT_LIMIT, "%s", why);
    }
    plan_done(sc, j);
    return rc;
}
