/*
 * module.c — the `stagecraft` Lua module (sc_lua.h): its table, the
 * recipes' chunks (stdlib or file, under the sandbox) and the setup of a
 * Lua state. Parameters (sc.params) live in stdlib/_prelude.lua, which this
 * file loads into the module.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

#include "schedule/rules.h"
#include "sc_auto.h"
#include "sandbox/sandbox.h"


static int l_rules(lua_State *L)
{
    lua_newtable(L);
    for (int i = 0; sc_rule_names[i]; i++) {
        lua_pushstring(L, sc_rule_names[i]);
        lua_seti(L, -2, i + 1);
    }
    return 1;
}

/* sc._raise(exitcode, msg): an error without position, with its exit code. */
static int l_raise(lua_State *L)
{
    int code = (int)luaL_checkinteger(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    return sc_lua_throw(L, code);
}

static int is_path(const char *r)
{
    size_t n = strlen(r);
    return strchr(r, '/') || (n > 4 && strcmp(r + n - 4, ".lua") == 0);
}

/* sc._chunk(recipe): the recipe's chunk, from the stdlib or a file. */
static int l_chunk(lua_State *L)
{
    const char *r = luaL_checkstring(L, 1);
    size_t len;
    const char *src = is_path(r) || r[0] == '_' ? NULL : sc_stdlib_source(r, &len);
    int rc;
    if (src) {
        lua_pushfstring(L, "@stdlib/%s.lua", r);
        rc = luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t");
    } else {
        FILE *f = fopen(r, "r");
        if (!f) {
            if (is_path(r)) {
                lua_pushfstring(L, "cannot open recipe file '%s'", r);
                return sc_lua_throw(L, 2);
            }
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (int i = 0; sc_stdlib_name(i); i++)
                if (sc_stdlib_name(i)[0] != '_') {
                    luaL_addstring(&b, i ? ", " : "");
                    luaL_addstring(&b, sc_stdlib_name(i));
                }
            luaL_pushresult(&b);
            lua_pushfstring(L, "unknown recipe '%s' (stdlib: %s; or a path to a .lua file)", r,
                            lua_tostring(L, -1));
            return sc_lua_throw(L, 2);
        }
        fclose(f);
        rc = luaL_loadfilex(L, r, "t");
    }
    if (rc != LUA_OK)
        return sc_lua_throw(L, 8);
    sc_sandbox_apply(L, -1, src ? NULL : r);
    return 1;
}

static int l_isprogram(lua_State *L)
{
    lua_pushboolean(L, sc_lua_toprog(L, 1) != NULL);
    return 1;
}

static const luaL_Reg module_funcs[] = {
    {"program", sc_lua_program},
    {"isprogram", l_isprogram},
    {"rules", l_rules},
    {"_raise", l_raise},
    {"_chunk", l_chunk},
    {"_autoinfo", sc_lua_autoinfo},
    {"_errcode", sc_lua_errcode},
    {"_steps", sc_lua_steps},
    {NULL, NULL},
};

int luaopen_stagecraft(lua_State *L)
{
    sc_lua_open_program(L);
    luaL_newlib(L, module_funcs);
    sc_lua_open_block(L);
    lua_pushliteral(L, "0.1.0");
    lua_setfield(L, -2, "version");
    /* The prelude (stdlib/_prelude.lua) adds the Lua-side functions. */
    size_t len;
    const char *src = sc_stdlib_source("_prelude", &len);
    if (!src || luaL_loadbuffer(L, src, len, "@stdlib/_prelude.lua") != LUA_OK)
        return luaL_error(L, "stagecraft: the prelude is missing or broken");
    lua_pushvalue(L, -2);
    lua_call(L, 1, 0);
    return 1;
}

void sc_lua_setup(lua_State *L)
{
    luaL_openlibs(L);
    luaL_requiref(L, "stagecraft", luaopen_stagecraft, 1);
    lua_setglobal(L, "sc");
    sc_sandbox_init(L);
    sc_lua_clear_status(L);
}
