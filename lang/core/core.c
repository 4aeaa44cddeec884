/*
 * core.c — what every part of stagecraft's Lua surface stands on (core.h):
 * the exit codes that errors carry, raising with the recipe's position,
 * and the embedded stdlib.
 */
#include "core.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>


#define STATUS_KEY "stagecraft.status"

struct sc_embedded {
    const char *name;
    const char *src;
    size_t len;
};
extern const struct sc_embedded sc_stdlib[];
const char *sc_stdlib_source(const char *name, size_t *len)
{
    for (int i = 0; sc_stdlib[i].name; i++)
        if (strcmp(sc_stdlib[i].name, name) == 0) {
            *len = sc_stdlib[i].len;
            return sc_stdlib[i].src;
        }
    return NULL;
}

const char *sc_stdlib_name(int i)
{
    for (int k = 0; sc_stdlib[k].name; k++)
        if (k == i)
            return sc_stdlib[k].name;
    return NULL;
}

#define STATUS_MSG_KEY "stagecraft.status_msg"

int sc_lua_exit_for(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, STATUS_MSG_KEY);
    int same = lua_rawequal(L, -1, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, STATUS_KEY);
    int code = same ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 2);
    return code;
}

void sc_lua_clear_status(lua_State *L)
{
    lua_pushinteger(L, 0);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_KEY);
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_MSG_KEY);
}

void sc_lua_mark(lua_State *L, int idx, int code)
{
    idx = lua_absindex(L, idx);
    lua_pushinteger(L, code);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_KEY);
    lua_pushvalue(L, idx);
    lua_setfield(L, LUA_REGISTRYINDEX, STATUS_MSG_KEY);
}

/* Raises the message on the stack top, remembering that it has this exit
 * code (a later, unrelated error is not mistaken for it). */
int sc_lua_throw(lua_State *L, int code)
{
    sc_lua_mark(L, -1, code);
    return lua_error(L);
}

/* Raises a Lua error with the caller's position, remembering the exit
 * code of st. */
static int raise(lua_State *L, sc_status st, const char *msg)
{
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return sc_lua_throw(L, sc_status_exit_code(st));
}

int sc_lua_raise(lua_State *L, sc_status st, const char *msg) { return raise(L, st, msg); }
