/*
 * auto.c — sc.program{..., auto = {...}}: runs the automatic scheduler on
 * the program being built and keeps its figures (auto.h).
 */
#include "auto.h"
#include "auto/autosched.h"
#include "compile.h"
#include "sc_lua.h"
#include "fields.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Raises msg with the position of sc.program's caller and the exit code of
 * st (as program.c does). */
static int fail(lua_State *L, sc_status st, const char *msg)
{
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    sc_lua_mark(L, -1, sc_status_exit_code(st));
    return lua_error(L);
}

static double number(lua_State *L, int t, const char *name, double dflt, double lo)
{
    int ty = lua_getfield(L, t, name), ok = 1;
    double v = ty == LUA_TNIL ? dflt : lua_tonumberx(L, -1, &ok);
    lua_pop(L, 1);
    if (!ok || !isfinite(v) || v < lo) {
        char msg[128];
        snprintf(msg, sizeof msg, "auto: '%s' must be a number >= %g", name, lo);
        fail(L, SC_ERR_ARG, msg);
    }
    return v;
}

/* The module table's field name, or nil, pushed. */
static int module_field(lua_State *L, const char *name)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "stagecraft");
    int ty = lua_istable(L, -1) ? lua_getfield(L, -1, name) : (lua_pushnil(L), LUA_TNIL);
    lua_replace(L, -3);
    lua_pop(L, 1);
    return ty;
}

typedef struct bar {
    int shown;
} bar;

/* A progress bar on stderr once the search has run for a second. */
static void progress(void *ctx, double elapsed, double limit, double best)
{
    bar *b = ctx;
    if (elapsed < 1.0)
        return;
    static const char full[] = "##############################";
    int w = (int)sizeof full - 1, k = limit > 0 ? (int)(w * fmin(1.0, elapsed / limit)) : w;
    fprintf(stderr, "\rautoschedule [%.*s%*s] %.1f/%.1f s, best bubble %.2f%% ", k, full, w - k,
            "", elapsed, limit, 100 * best);
    fflush(stderr);
    b->shown = 1;
}

/* The fields of the auto table at a into o (mem required; seed, time_limit,
 * max_evals, objective; the module's _time_limit over the recipe's), and
 * where the program is into lp. */
static void read_auto_opts(lua_State *L, int a, sc_lprog *lp, sc_auto_opts *o)
{
    if (lua_getfield(L, a, "mem") == LUA_TNIL)
        fail(L, SC_ERR_ARG, "auto: 'mem' (the memory limit in units per device) is required");
    /* Units, bytes or per device (mem.c): the scheduler keeps the
     * smallest, in the recipe's units. */
    o->mem = sc_lua_set_mem_at(L, -1, lp->pg, 0);
    lua_pop(L, 1);
    o->seed = (unsigned long long)number(L, a, "seed", 1, 0);
    o->time_limit = number(L, a, "time_limit", 1, 0);
    o->max_evals = (int)fmin(number(L, a, "max_evals", 0, 0), 1e9);
    if (lua_getfield(L, a, "objective") != LUA_TNIL) {
        const char *s = lua_tostring(L, -1);
        if (!s || (strcmp(s, "sim") && strcmp(s, "flow")))
            fail(L, SC_ERR_ARG, "auto: 'objective' must be \"sim\" or \"flow\"");
        o->objective = strcmp(s, "flow") == 0 ? SC_AUTO_FLOW : SC_AUTO_SIM;
    }
    lua_pop(L, 1);
    if (lua_getfield(L, a, "where") == LUA_TSTRING)
        snprintf(lp->where, sizeof lp->where, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    if (module_field(L, "_time_limit") == LUA_TNUMBER)
        o->time_limit = fmax(0, lua_tonumber(L, -1));
    lua_pop(L, 1);
}

/* prog:autoinfo()'s table: what the scheduler found and with what. */
static void push_auto_result(lua_State *L, const sc_auto_result *r, const sc_auto_opts *o)
{
    lua_createtable(L, 0, 16);
    sc_lua_set_str(L, "method", r->method);
    sc_lua_set_num(L, "makespan", r->makespan);
    sc_lua_set_num(L, "bubble_rate", r->bubble_rate);
    sc_lua_set_num(L, "peak_memory_max", r->peak);
    sc_lua_set_num(L, "flow_makespan", r->flow_makespan);
    sc_lua_set_num(L, "flow_bubble_rate", r->flow_bubble);
    sc_lua_set_num(L, "lower_bound", r->lower_bound);
    sc_lua_set_num(L, "evals", (double)r->evals);
    lua_pushinteger(L, r->pairs); /* overlapped pairs joined (docs/blocks.md#pairing) */
    lua_setfield(L, -2, "pairs");
    sc_lua_set_num(L, "seconds", r->seconds);
    lua_pushboolean(L, r->timed_out);
    lua_setfield(L, -2, "timed_out");
    sc_lua_set_str(L, "choice", r->search_choice);
    sc_lua_set_num(L, "mem", o->mem);
    sc_lua_set_int(L, "seed", (lua_Integer)o->seed);
    sc_lua_set_num(L, "time_limit", o->time_limit);
    sc_lua_set_str(L, "objective", o->objective == SC_AUTO_FLOW ? "flow" : "sim");
    if (r->heur_makespan >= 0) {
        lua_createtable(L, 0, 5);
        sc_lua_set_num(L, "makespan", r->heur_makespan);
        sc_lua_set_num(L, "bubble_rate", r->heur_bubble);
        sc_lua_set_num(L, "peak_memory_max", r->heur_peak);
        sc_lua_set_num(L, "flow_bubble_rate", r->heur_flow_bubble);
        sc_lua_set_str(L, "choice", r->heur_choice);
        lua_setfield(L, -2, "heuristic");
    }
}

void sc_lua_auto(lua_State *L, int t, int ud)
{
    sc_lprog *lp = sc_lua_toprog(L, ud);
    lua_getfield(L, t, "auto");
    int a = lua_gettop(L);
    if (!lua_istable(L, a))
        fail(L, SC_ERR_ARG,
             "program: 'auto' must be a table {mem = units, seed = n, time_limit = s}");
    if (sc_lua_unknown_fields(L, a, "auto", sc_fields_of(SC_FT_AUTO)))
        fail(L, SC_ERR_ARG, lua_tostring(L, -1));
    sc_auto_opts o = {0};
    bar b = {0};
    read_auto_opts(L, a, lp, &o);
    if (module_field(L, "_progress") != LUA_TNIL && lua_toboolean(L, -1)) {
        o.progress = progress;
        o.progress_ctx = &b;
    }
    lua_pop(L, 1);
    sc_auto_result r;
    o.keep_sim = 1; /* program.c keeps it while the program stays as simulated */
    sc_status st = sc_auto_fill(lp->pg, &o, &r);
    if (b.shown)
        fprintf(stderr, "\r%78s\r", "");
    if (st)
        fail(L, st, sc_errmsg(lp->pg));
    sc_sim_free(lp->sim);
    lp->sim = r.sim;
    push_auto_result(L, &r, &o);
    lua_setiuservalue(L, ud, 1);
    lua_settop(L, a - 1);
}

int sc_lua_autoinfo(lua_State *L)
{
    luaL_checkudata(L, 1, SC_PROGRAM_MT);
    if (lua_getiuservalue(L, 1, 1) == LUA_TNONE)
        lua_pushnil(L);
    return 1;
}

int sc_lua_sim_floor(lua_State *L)
{
    sc_lprog *lp = luaL_checkudata(L, 1, SC_PROGRAM_MT);
    double mk = -1;
    if (lp->pg && sc_sim_floor(lp->pg, &mk) != SC_OK)
        fail(L, SC_ERR_NOMEM, sc_errmsg(lp->pg));
    if (mk >= 0)
        lua_pushnumber(L, mk);
    else
        lua_pushnil(L);
    return 1;
}

int sc_lua_errcode(lua_State *L)
{
    lua_pushinteger(L, sc_lua_exit_for(L, 1));
    return 1;
}
