/*
 * steps.c — the `steps` and `optim_sync` fields of sc.program and
 * sc._steps, which sets them on a program from -D (docs/steps.md); and
 * `ep`, the expert-parallel degree (docs/semantics.md#expert-parallelism):
 *
 *   sc.program{ ..., steps = 4, optim_sync = "post-validation" }
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <string.h>

static int sync_named(lua_State *L, const char *name)
{
    int s = sc_sync_parse(name);
    if (s < 0) {
        lua_pushfstring(L, "unknown optim_sync '%s' (none, sync, post-validation)", name);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    return s;
}

/* Sets steps (when not nil) and the synchronization (when not nil) from
 * the values at i and j. */
static void set_steps(lua_State *L, int i, int j, sc_prog *pg)
{
    if (!lua_isnil(L, i)) {
        int ok;
        lua_Integer n = lua_tointegerx(L, i, &ok);
        if (!ok) {
            lua_pushfstring(L, "program: 'steps' must be an integer (got %s)", sc_lua_got(L, i));
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        if (n < 1 || n > SC_MAX_STEPS) {
            lua_pushfstring(L, "steps = %I is out of range (1..%d)", n, SC_MAX_STEPS);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        sc_lua_check_st(L, pg, sc_prog_set_steps(pg, (int)n));
    }
    if (!lua_isnil(L, j)) {
        if (lua_type(L, j) != LUA_TSTRING)
            sc_lua_raise(L, SC_ERR_ARG, "program: 'optim_sync' must be a string (none, sync, "
                                        "post-validation)");
        sc_lua_check_st(L, pg, sc_prog_set_optim_sync(pg, sync_named(L, lua_tostring(L, j))));
    }
}

/* Sets the expert-parallel degree (when not nil) from the value at i
 * (ir/ep.h, docs/semantics.md#expert-parallelism). */
static void set_ep(lua_State *L, int i, sc_prog *pg)
{
    if (lua_isnil(L, i))
        return;
    int ok;
    lua_Integer n = lua_tointegerx(L, i, &ok);
    if (!ok) {
        lua_pushfstring(L, "program: 'ep' must be an integer (got %s)", sc_lua_got(L, i));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    if (n < 1 || n > SC_MAX_EP) {
        lua_pushfstring(L, "ep = %I is out of range (1..%d)", n, SC_MAX_EP);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    sc_lua_check_st(L, pg, sc_prog_set_ep(pg, (int)n));
}

void sc_lua_set_steps(lua_State *L, int t, sc_prog *pg)
{
    t = lua_absindex(L, t);
    lua_getfield(L, t, "steps");
    lua_getfield(L, t, "optim_sync");
    lua_getfield(L, t, "ep");
    set_steps(L, -3, -2, pg);
    set_ep(L, -1, pg);
    lua_pop(L, 3);
}

/* sc._steps(prog, steps or nil, optim_sync or nil, ep or nil) */
int sc_lua_steps(lua_State *L)
{
    sc_lprog *lp = sc_lua_toprog(L, 1);
    if (!lp || !lp->pg)
        return luaL_argerror(L, 1, "an open Program expected");
    lua_settop(L, 4);
    set_steps(L, 2, 3, lp->pg);
    set_ep(L, 4, lp->pg);
    sc_sim_free(lp->sim); /* its figures were of the other steps */
    lp->sim = NULL;
    return 0;
}

static void list(lua_State *L, const char *key, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, key);
}

void sc_lua_set_step_figures(lua_State *L, const sc_prog *pg, const sc_sim *sim)
{
    int N = sc_prog_steps(pg), sync = sc_prog_optim_sync(pg);
    if ((N == 1 && sync == SC_SYNC_NONE) || !sim->step_end)
        return; /* one step's figures stay as they were */
    lua_pushinteger(L, N);
    lua_setfield(L, -2, "steps");
    lua_pushstring(L, sc_sync_name(sync));
    lua_setfield(L, -2, "optim_sync");
    list(L, "step_makespan", sim->step_makespan, N);
    list(L, "step_bubble_rate", sim->step_bubble, N);
    if (sim->rollback_cost)
        list(L, "rollback_cost", sim->rollback_cost, N < 64 ? N : 64);
}
