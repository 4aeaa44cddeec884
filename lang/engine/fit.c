/*
 * fit.c — after a refusal by the memory cap, the stdlib recipes that meet
 * it (engine.h, docs/guide.md#memory-model): each evaluated with the
 * overrides it declares, compiled, and named when it fits.
 */
#include "engine.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lua/sc_lua.h"
#include "sandbox/sc_limits.h"

/* Sets sc.NAME to the value on the stack top (pops it). */
static void set_module(lua_State *L, const char *name)
{
    sc_eng_push_module(L);
    lua_insert(L, -2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

int sc_eng_cap_refused(lua_State *L)
{
    if (sc_limits_hit(L))
        return 0; /* no Lua runs after a limit (the hook would stop it again) */
    sc_eng_push_module(L);
    int yes = 0;
    if (lua_istable(L, -1)) { /* raw: the module's __index runs Lua */
        lua_pushliteral(L, "_cap_refused");
        lua_rawget(L, -2);
        yes = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return yes;
}

/* Whether stdlib recipe `name` meets the cap with the overrides at t that
 * it declares. */
static int fits(lua_State *L, const char *name, int t)
{
    int top = lua_gettop(L), ok = 0;
    if (sc_eng_evaluate(L, name, 0, 1) != LUA_OK || !lua_istable(L, -2)) {
        lua_settop(L, top);
        return 0;
    }
    int decl = lua_absindex(L, -2);
    lua_newtable(L);
    int mine = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, decl)) { /* the declared parameters: {name = ...} */
        if (lua_istable(L, -1) && lua_getfield(L, -1, "name") == LUA_TSTRING) {
            const char *k = lua_tostring(L, -1);
            if (lua_getfield(L, t, k) != LUA_TNIL)
                lua_setfield(L, mine, k);
            else
                lua_pop(L, 1);
        }
        lua_pop(L, 2);
    }
    lua_pushboolean(L, 0);
    set_module(L, "_cap_refused");
    if (sc_eng_evaluate(L, name, mine, 0) == LUA_OK) {
        sc_lprog *lp = sc_lua_toprog(L, -3);
        /* a forward-only recipe (docs/guide.md#forward-only) trains nothing */
        ok = lp && !sc_prog_forward_only(lp->pg) && sc_lua_check(lp) == SC_OK;
    }
    lua_settop(L, top);
    return ok;
}

void sc_eng_fit_hint(lua_State *L, const char *recipe, int t, char *buf, size_t len)
{
    int top = lua_gettop(L);
    t = lua_absindex(L, t);
    buf[0] = 0;
    lua_getfield(L, t, "mem");
    const char *mem = lua_tostring(L, -1);
    if (!mem) {
        lua_settop(L, top);
        return;
    }
    char head[96];
    snprintf(head, sizeof head, "; recipes that meet mem = %.40s with these parameters: ", mem);
    lua_pop(L, 1);
    /* Quietly: no notes or warnings of the recipes tried, and the
     * automatic schedulers without their search (reproducible, fast). */
    lua_pushboolean(L, 1);
    set_module(L, "_quiet");
    sc_eng_push_module(L);
    lua_getfield(L, -1, "_time_limit");
    lua_remove(L, -2);
    int saved = lua_gettop(L);
    lua_pushnumber(L, 0);
    set_module(L, "_time_limit");
    size_t n = 0;
    int any = 0;
    for (int i = 0; sc_stdlib_name(i); i++) {
        const char *name = sc_stdlib_name(i);
        if (name[0] == '_' || strcmp(name, recipe) == 0 || !fits(L, name, t))
            continue;
        int w = snprintf(buf + n, len - n, "%s%s", any ? ", " : head, name);
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += (size_t)w;
        any = 1;
    }
    if (!any)
        snprintf(buf, len, "; no stdlib recipe meets mem = %.40s with these parameters", mem);
    lua_pushvalue(L, saved);
    set_module(L, "_time_limit");
    lua_pushboolean(L, 0);
    set_module(L, "_quiet");
    lua_pushboolean(L, 0);
    set_module(L, "_cap_refused");
    lua_settop(L, top);
}
