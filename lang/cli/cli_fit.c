/*
 * cli_fit.c — after a refusal by the memory cap, the stdlib recipes that
 * meet it (cli.h, docs/guide.md#memory-model): each evaluated with the
 * -D of the command that it declares, compiled, and named when it fits.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

/* Sets sc.NAME to the value on the stack top (pops it). */
static void set_module(lua_State *L, const char *name)
{
    lua_getglobal(L, "sc");
    lua_insert(L, -2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

int sc_cli_cap_refused(lua_State *L)
{
    if (sc_limits_hit(L))
        return 0; /* no Lua runs after a limit (the hook would stop it again) */
    lua_getglobal(L, "sc");
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
    if (sc_cli_evaluate(L, name, 0, 1) != LUA_OK || !lua_istable(L, -2)) {
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
    if (sc_cli_evaluate(L, name, mine, 0) == LUA_OK) {
        sc_lprog *lp = sc_lua_toprog(L, -3);
        ok = lp && sc_lua_check(lp) == SC_OK;
    }
    lua_settop(L, top);
    return ok;
}

void sc_cli_fit_hint(lua_State *L, const char *recipe, int t, char *buf, size_t len)
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
    lua_getglobal(L, "sc");
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

int sc_cli_lua_fail_fit(lua_State *L, const char *recipe, int t)
{
    if (!sc_cli_cap_refused(L) || lua_type(L, -1) != LUA_TSTRING)
        return sc_cli_lua_fail(L);
    int code = sc_lua_exit_for(L, -1);
    char hint[1024];
    sc_cli_fit_hint(L, recipe, t, hint, sizeof hint);
    lua_pushfstring(L, "%s%s", lua_tostring(L, -1), hint);
    code = sc_cli_fail(code ? code : SC_EXIT_PROGRAM, lua_tostring(L, -1));
    lua_pop(L, 2);
    return code;
}

int sc_cli_status_fail_fit(lua_State *L, sc_status st, const char *recipe, int t,
                           const char *where, sc_prog *pg)
{
    char hint[1024] = "";
    if (sc_prog_cap_refused(pg) && t) {
        char *msg = strdup(sc_errmsg(pg)); /* the hint compiles other programs */
        sc_cli_fit_hint(L, recipe, t, hint, sizeof hint);
        sc_status rc = sc_cli_status_fail(st, "%s%s%s", where, msg ? msg : "", hint);
        free(msg);
        return rc;
    }
    return sc_cli_status_fail(st, "%s%s", where, sc_errmsg(pg));
}
