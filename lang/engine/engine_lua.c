/*
 * engine_lua.c — the engine's functions in the module (engine.h):
 * sc.plan{...} and sc.compare{...}, for recipes, the REPL, scripts and a
 * host's Lua (luaopen_stagecraft, here: the module of lang/lua with the
 * engine's functions added).
 *
 *   local plan = sc.plan{p = 8, m = 32, cap = 6, tw = 0.63}
 *   print(plan.candidates[plan.pick].recipe)
 *   for _, r in ipairs(sc.compare{"1f1b", "zb-h1", p = 4, m = "8,16"}) do
 *     print(r.recipe, r.parameters.m, r.makespan)
 *   end
 *
 * Both run on the calling state: a recipe's call nests in the recipe's
 * evaluation (its remaining steps, time and memory: sc_limits.h) and under
 * its read rule (a cost or model file must pass it before it is granted to
 * the candidates); no field is an option of the command line (no --trust,
 * no --max-*). The fields become text in Lua's memory (counted, collected
 * on any error) before any C memory is held, and the C memory of the call
 * is freed whatever happens inside it (the work runs under lua_pcall).
 */
#include "engine.h"
#include "compare.h"
#include "plan.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "bound/bound.h"
#include "ir/alloc.h"
#include "lua/sc_lua.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"

#define FIELD_MAX 4096 /* bytes of one field's text: -D values are short */

/* The named fields of the table at 1 as "NAME=VALUE" texts in a new table
 * at 2 (the options named in opts into the same table at 3, by name);
 * files through the caller's read rule. Raises on a bad field. */
static void fields(lua_State *L, const char *fn, const char *const *opts, int max)
{
    lua_newtable(L); /* 2: the -D */
    lua_newtable(L); /* 3: the options */
    int n = 0;
    for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) {
        if (lua_type(L, -2) == LUA_TNUMBER) /* sc.compare's recipes */
            continue;
        if (lua_type(L, -2) != LUA_TSTRING || ++n > max)
            luaL_error(L, "%s: expected a table of named fields (at most %d)", fn + 3, max);
        const char *k = lua_tostring(L, -2);
        size_t lv;
        const char *v = luaL_tolstring(L, -1, &lv); /* may raise: nothing is held yet */
        if (lv > FIELD_MAX || strlen(k) > 64)
            luaL_error(L, "%s: field '%s' is too long (at most %d bytes of text)", fn + 3, k,
                       FIELD_MAX);
        int opt = 0;
        for (int j = 0; opts[j]; j++)
            opt |= strcmp(k, opts[j]) == 0;
        if (strcmp(k, "costs") == 0 || strcmp(k, "model") == 0) {
            /* a file: the caller's read rule, not the user's grant */
            if (!sc_sandbox_read_path(L, v, fn))
                luaL_error(L, "%s: %s file %s: cannot open it", fn, k, v);
            v = lua_tostring(L, -1);
        }
        if (opt)
            lua_pushstring(L, v);
        else
            lua_pushfstring(L, "%s=%s", k, v);
        if (opt)
            lua_setfield(L, 3, k);
        else
            lua_rawseti(L, 2, (lua_Integer)lua_rawlen(L, 2) + 1);
        lua_settop(L, 5); /* the key and the value for lua_next */
    }
}

/* After a pcall'd engine call: a limit's error wins (on the caller's line),
 * then a Lua error, then the engine's. */
static int raise(lua_State *L, int st, int rc, const sc_eng_err *e)
{
    sc_limits_raise_here(L);
    if (st != LUA_OK)
        return lua_error(L);
    if (rc) {
        char clean[1024];
        sc_clean_text(clean, sizeof clean, e->msg[0] ? e->msg : "out of memory", 0);
        lua_pushstring(L, clean);
        return sc_lua_throw(L, rc);
    }
    return 0;
}

/* ---- sc.plan --------------------------------------------------------------- */

typedef struct plan_call {
    sc_plan_settings s;
    sc_plan_run r;
    const char *defs[MAX_DEFS];
} plan_call;

static int plan_protected(lua_State *L)
{
    plan_call *pc = lua_touserdata(L, 1);
    lua_settop(L, 0);
    int rc = sc_eng_plan(L, &pc->s, &pc->r);
    if (!rc)
        sc_plan_push(L, &pc->r);
    lua_pushinteger(L, rc);
    return 2 - !!rc; /* the plan and 0, or the code alone */
}

static int l_plan(lua_State *L)
{
    const char *opts[SC_PLAN_NOPTS + 1]; /* plan.h's table */
    for (int j = 0; j <= SC_PLAN_NOPTS; j++)
        opts[j] = sc_plan_opts[j].field;
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    fields(L, "sc.plan", opts, SC_PLAN_MAX_DEFS);
    plan_call *pc = lua_newuserdatauv(L, sizeof *pc, 0); /* 4 */
    memset(pc, 0, sizeof *pc);
    pc->s.time_limit = -1;
    pc->s.ndefs = (int)lua_rawlen(L, 2);
    for (int i = 0; i < pc->s.ndefs; i++) {
        lua_rawgeti(L, 2, i + 1);
        pc->defs[i] = lua_tostring(L, -1); /* anchored by table 2 */
        lua_pop(L, 1);
    }
    pc->s.defs = pc->defs;
    for (const sc_plan_opt *o = sc_plan_opts; o->field; o++) {
        char msg[160];
        lua_getfield(L, 3, o->field);
        if (!lua_isnil(L, -1) && sc_plan_opt_set(&pc->s, o, lua_tostring(L, -1), msg, sizeof msg))
            return luaL_error(L, "plan: %s", msg);
        lua_pop(L, 1); /* the string stays anchored by table 3 */
    }
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    lua_pushcfunction(L, plan_protected);
    lua_pushlightuserdata(L, pc);
    int st = lua_pcall(L, 1, LUA_MULTRET, 0), rc = 0;
    sc_eng_release(prev);
    if (st == LUA_OK)
        rc = (int)lua_tointeger(L, -1);
    sc_eng_plan_free(L, &pc->r); /* whatever happened inside */
    raise(L, st, rc, &e);
    lua_pop(L, 1);
    return 1;
}

/* ---- sc.compare ------------------------------------------------------------ */

typedef struct compare_call {
    cmp c;
    int first;
} compare_call;

static void set_num(lua_State *L, const char *k, double x)
{
    lua_pushnumber(L, x);
    lua_setfield(L, -2, k);
}

/* Counts are integers, as p:sim() gives them (devices = 4, not 4.0). */
static void set_int(lua_State *L, const char *k, double x)
{
    lua_pushinteger(L, (lua_Integer)x);
    lua_setfield(L, -2, k);
}

static void set_nums(lua_State *L, const char *k, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, k);
}

/* The rows as a list of tables (the fields of compare --json's rows). */
static void push_rows(lua_State *L, const cmp *c)
{
    lua_createtable(L, c->nrows, 0);
    for (int i = 0; i < c->nrows; i++) {
        const row *r = &c->rows[i];
        lua_createtable(L, 0, 16);
        lua_pushstring(L, c->recipes[r->recipe]);
        lua_setfield(L, -2, "recipe");
        lua_createtable(L, 0, c->ndefs);
        for (int k = 0; k < c->ndefs; k++) {
            const char *v = c->defs[k].values[sc_eng_compare_value_of(c, r->combo, k)];
            double x;
            if (!sc_eng_compare_number(v, &x))
                lua_pushstring(L, v);
            else if (lua_stringtonumber(L, v) == 0) /* pushed Lua's reading: "8" an integer */
                lua_pushnumber(L, x);
            lua_setfield(L, -2, c->defs[k].name);
        }
        lua_setfield(L, -2, "parameters");
        if (r->error) {
            lua_pushstring(L, r->error);
            lua_setfield(L, -2, "error");
            lua_pushinteger(L, r->code);
            lua_setfield(L, -2, "exit_code");
            lua_pushboolean(L, r->over_mem);
            lua_setfield(L, -2, "over_mem");
        } else {
            set_int(L, "devices", r->P);
            set_int(L, "stages", r->S);
            set_int(L, "microbatches", r->m);
            set_int(L, "instructions", (double)r->instructions);
            set_num(L, "makespan", r->makespan);
            set_num(L, "lower_bound", r->bound);
            set_num(L, "bound_gap", sc_bound_gap(r->makespan, r->bound));
            set_num(L, "bubble_rate", r->bubble);
            set_nums(L, "idle", r->idle, r->P);
            if (r->bneck >= 0)
                set_int(L, "bottleneck", r->bneck);
            set_nums(L, "peak_memory", r->peak, r->P);
            set_num(L, "peak_memory_max", r->peak_max);
            if (r->unit_bytes > 0) {
                set_num(L, "unit_bytes", r->unit_bytes);
                set_num(L, "peak_bytes_max", r->peak_max * r->unit_bytes);
            }
            if (r->own_model)
                set_num(L, "total_bytes_max", r->total_max);
        }
        lua_seti(L, -2, i + 1);
    }
}

static int compare_protected(lua_State *L)
{
    compare_call *cc = lua_touserdata(L, 1);
    lua_settop(L, 0);
    lua_newtable(L);
    int rc = sc_eng_compare_prepare(L, &cc->c);
    if (!rc)
        rc = sc_eng_compare_rows(L, &cc->c, 1, &cc->first);
    if (!rc)
        push_rows(L, &cc->c);
    lua_pushinteger(L, rc);
    return 2 - !!rc;
}

static int l_compare(lua_State *L)
{
    static const char *const opts[] = {"time_limit", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    fields(L, "sc.compare", opts, MAX_DEFS);
    int nrec = (int)lua_rawlen(L, 1);
    if (nrec < 1 || nrec > MAX_RECIPES)
        return luaL_error(L, "compare: expected 1 to %d recipes at [1], [2], ...", MAX_RECIPES);
    for (int i = 1; i <= nrec; i++)
        if (lua_rawgeti(L, 1, i) != LUA_TSTRING)
            return luaL_error(L, "compare: recipe %d is not a string", i);
    lua_settop(L, 3);
    lua_getfield(L, 3, "time_limit");
    if (!lua_isnil(L, -1)) {
        char *end;
        double tl = strtod(lua_tostring(L, -1), &end);
        if (*end || !(tl >= 0) || tl > 1e9)
            return luaL_error(L, "compare: time_limit needs a number of seconds >= 0");
        sc_eng_set_time_limit(L, tl);
    }
    lua_pop(L, 1);
    compare_call *cc = lua_newuserdatauv(L, sizeof *cc, 0); /* 4 */
    memset(cc, 0, sizeof *cc);
    for (int i = 1; i <= nrec; i++) {
        lua_rawgeti(L, 1, i);
        cc->c.recipes[cc->c.nrec++] = lua_tostring(L, -1); /* anchored by table 1 */
        lua_pop(L, 1);
    }
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    int ndefs = (int)lua_rawlen(L, 2), rc = 0;
    for (int i = 0; i < ndefs && !rc; i++) { /* C memory from here: freed below */
        lua_rawgeti(L, 2, i + 1);
        const char *kv = lua_tostring(L, -1), *eq = strchr(kv, '=');
        def *d = &cc->c.defs[cc->c.ndefs++];
        d->name = strndup(kv, (size_t)(eq - kv));
        d->text = strdup(eq + 1);
        if (!d->name || !d->text)
            rc = sc_eng_fail(SC_EXIT_NOMEM, "out of memory");
        lua_pop(L, 1);
    }
    int st = LUA_OK;
    if (!rc) {
        lua_pushcfunction(L, compare_protected);
        lua_pushlightuserdata(L, cc);
        st = lua_pcall(L, 1, LUA_MULTRET, 0);
        if (st == LUA_OK)
            rc = (int)lua_tointeger(L, -1);
    }
    sc_eng_release(prev);
    sc_eng_compare_free(L, &cc->c); /* whatever happened inside */
    memset(&cc->c, 0, sizeof cc->c);
    if (st != LUA_OK)
        sc_eng_compare_set_model(L, 0); /* the rows' model sizes, off again */
    raise(L, st, rc, &e);
    lua_pop(L, 1);
    return 1;
}

/* ---- the module ------------------------------------------------------------ */

void sc_eng_open(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_pushcfunction(L, l_plan);
    lua_setfield(L, idx, "plan");
    lua_pushcfunction(L, l_compare);
    lua_setfield(L, idx, "compare");
}

void sc_eng_setup(lua_State *L)
{
    sc_lua_setup(L);
    lua_getglobal(L, "sc");
    sc_eng_open(L, -1);
    lua_pop(L, 1);
}

/* require "stagecraft" from a Lua that is not stagecraft's (stock lua5.4
 * loading stagecraft.so, docs/embed.md#the-lua-module): lang/lua's module
 * with the engine's functions. */
int luaopen_stagecraft(lua_State *L)
{
    sc_lua_open_host(L);
    sc_eng_open(L, -1);
    return 1;
}
