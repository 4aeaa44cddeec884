/*
 * cli_fit.c — a refusal by the memory cap, printed with the engine's hint:
 * the stdlib recipes that meet it (engine/fit.c, docs/guide.md#memory-model).
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"
#include "engine/engine.h"

int sc_cli_lua_fail_fit(lua_State *L, const char *recipe, int t)
{
    if (!sc_eng_cap_refused(L) || lua_type(L, -1) != LUA_TSTRING)
        return sc_cli_lua_fail(L);
    int code = sc_lua_exit_for(L, -1);
    char hint[1024];
    sc_eng_fit_hint(L, recipe, t, hint, sizeof hint);
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
        sc_eng_fit_hint(L, recipe, t, hint, sizeof hint);
        sc_status rc = sc_cli_status_fail(st, "%s%s%s", where, msg ? msg : "", hint);
        free(msg);
        return rc;
    }
    return sc_cli_status_fail(st, "%s%s", where, sc_errmsg(pg));
}
