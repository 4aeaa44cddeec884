/*
 * module.c — the `stagecraft` Lua module (sc_lua.h): its table, the
 * recipes' chunks (stdlib or file, under the sandbox) and the setup of a
 * Lua state. Parameters (sc.params) live in stdlib/_prelude.lua, which this
 * file loads into the module.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"
#include "fields.h"

#include <ctype.h>
#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

#include "schedule/rules.h"
#include "auto.h"
#include "sandbox/sandbox.h"
#include "sandbox/pattern.h"
#include "sandbox/sc_limits.h"


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
        rc = sc_stdlib_load(L, r);
    } else {
        FILE *f = sc_fopen_read(r);
        if (!f) {
            if (is_path(r)) {
                lua_pushfstring(L, "cannot open recipe file '%s': %s", r, strerror(errno));
                return sc_lua_throw(L, SC_EXIT_USAGE);
            }
            const char *names[64];
            int n = 0;
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (int i = 0; sc_stdlib_name(i); i++)
                if (sc_stdlib_name(i)[0] != '_') {
                    luaL_addstring(&b, n ? ", " : "");
                    luaL_addstring(&b, sc_stdlib_name(i));
                    if (n < 64)
                        names[n++] = sc_stdlib_name(i);
                }
            luaL_pushresult(&b);
            char hint[200], clean[100];
            sc_did_you_mean(hint, sizeof hint, r, names, n);
            lua_pushfstring(L, "unknown recipe '%s'%s%s (stdlib: %s; or a path to a .lua file)",
                            sc_clean_text(clean, sizeof clean, r, 0), hint[0] ? ": " : "", hint,
                            lua_tostring(L, -1));
            return sc_lua_throw(L, SC_EXIT_USAGE);
        }
        fclose(f);
        rc = sc_loadfile(L, r, "t");
    }
    if (rc != LUA_OK)
        return sc_lua_throw(L, SC_EXIT_RECIPE);
    sc_sandbox_apply(L, -1, src ? NULL : r);
    return 1;
}

/* sc._near(word, {names...}): "did you mean 'x'?" or nil. */
static int l_near(lua_State *L)
{
    const char *w = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 2);
    if (n > 4096)
        n = 4096;
    const char **names = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *names, 0);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 2, i);
        names[i - 1] = lua_tostring(L, -1); /* anchored in the list */
        lua_pop(L, 1);
    }
    char hint[256];
    if (sc_did_you_mean(hint, sizeof hint, w, names, (int)n))
        lua_pushstring(L, hint);
    else
        lua_pushnil(L);
    return 1;
}

/* sc._unknown_fields(t, what, {known...}): the message of an unknown
 * field of t, or nil. */
static int l_unknown_fields(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *what = luaL_checkstring(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 3);
    if (n > 4096)
        n = 4096;
    const char **names = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *names, 0);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 3, i);
        names[i - 1] = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    names[n] = NULL;
    if (!sc_lua_unknown_fields(L, 1, what, names))
        lua_pushnil(L);
    return 1;
}

/* sc._fields(table): the fields the table of that name accepts, in order
 * (fields.h); sc._fields(): every row, {name, type, doc, tables = {...}}. */
static int l_fields(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) {
        lua_newtable(L);
        const char *name, *type, *doc;
        unsigned tables;
        for (int i = 0; sc_field_row(i, &name, &tables, &type, &doc); i++) {
            lua_createtable(L, 0, 4);
            lua_pushstring(L, name);
            lua_setfield(L, -2, "name");
            lua_pushstring(L, type);
            lua_setfield(L, -2, "type");
            lua_pushstring(L, doc);
            lua_setfield(L, -2, "doc");
            lua_newtable(L);
            for (int t = 0, n = 0; t < SC_FT_COUNT; t++)
                if (tables & (1u << t)) {
                    lua_pushstring(L, sc_field_table_name((sc_field_table)t));
                    lua_seti(L, -2, ++n);
                }
            lua_setfield(L, -2, "tables");
            lua_seti(L, -2, i + 1);
        }
        return 1;
    }
    int t = sc_field_table_named(luaL_checkstring(L, 1));
    luaL_argcheck(L, t >= 0, 1, "no such table of fields");
    const char *const *f = sc_fields_of((sc_field_table)t);
    lua_newtable(L);
    for (int i = 0; f[i]; i++) {
        lua_pushstring(L, f[i]);
        lua_seti(L, -2, i + 1);
    }
    return 1;
}

/* sc._say(kind, msg): "stagecraft: KIND: MSG" on stderr, cleaned of
 * control characters (warnings, sc.note). */
static int l_say(lua_State *L)
{
    const char *kind = luaL_checkstring(L, 1), *msg = luaL_checkstring(L, 2);
    lua_getglobal(L, "sc");
    int quiet = lua_istable(L, -1) && lua_getfield(L, -1, "_quiet") == LUA_TBOOLEAN &&
                lua_toboolean(L, -1); /* the command line trying recipes (cli_fit.c) */
    if (quiet)
        return 0;
    fflush(stdout);
    fprintf(stderr, "stagecraft: %s: ", kind);
    sc_fputs_clean(msg, stderr, 0);
    fputc('\n', stderr);
    fflush(stderr);
    return 0;
}

/* sc._enter(recipe), sc._leave(): the evaluation of a recipe's chunk, for
 * the sandbox's rule on files written (sandbox.h). */
static int l_enter(lua_State *L)
{
    const char *r = luaL_checkstring(L, 1);
    size_t len;
    int stdlib = !is_path(r) && r[0] != '_' && sc_stdlib_source(r, &len);
    sc_sandbox_enter(L, stdlib ? NULL : r);
    return 0;
}

static int l_leave(lua_State *L)
{
    sc_sandbox_leave(L);
    return 0;
}

static int l_isprogram(lua_State *L)
{
    lua_pushboolean(L, sc_lua_toprog(L, 1) != NULL);
    return 1;
}

/* sc._closed(p): true when the Program was closed (<close>, or collected):
 * it holds no program any more, and nothing may use it. */
static int l_closed(lua_State *L)
{
    sc_lprog *lp = sc_lua_toprog(L, 1);
    lua_pushboolean(L, lp && !lp->pg);
    return 1;
}

/* sc._size_range(name, x): the message of a size out of range ("devices
 * p = 0 is out of range (1..4096)"), or nil: the prelude checks the
 * parameters p, m and v as sc.program checks its fields. */
static int l_size_range(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_Integer x = luaL_checkinteger(L, 2);
    if (!sc_lua_size_range(L, name, x))
        lua_pushnil(L);
    return 1;
}

/* The closure sc._at makes: f(where, ...) with the recipe's position. */
static int at_call(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    sc_lua_recipe_where(L);
    for (int i = 1; i <= n; i++)
        lua_pushvalue(L, i);
    lua_call(L, n + 1, LUA_MULTRET);
    return lua_gettop(L) - n;
}

/* sc._at(f): a function that calls f(where, ...), where being "FILE:LINE: "
 * of the recipe's line that called it. Being C, it sees that line even
 * when called as `return sc.need_version(...)`: a tail call replaces the
 * frame of a Lua function's caller, but not of a C function's. */
static int l_at(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_pushcclosure(L, at_call, 1);
    return 1;
}

static const luaL_Reg module_funcs[] = {
    {"_size_range", l_size_range},
    {"_at", l_at},
    {"program", sc_lua_program},
    {"isprogram", l_isprogram},
    {"order_lengths", sc_lua_order_lengths},
    {"_closed", l_closed},
    {"rules", l_rules},
    {"_raise", l_raise},
    {"_chunk", l_chunk},
    {"_autoinfo", sc_lua_autoinfo},
    {"_sim_floor", sc_lua_sim_floor},
    {"_errcode", sc_lua_errcode},
    {"_steps", sc_lua_steps},
    {"_lengths", sc_lua_lengths},
    {"_lengths_read", sc_lua_lengths_read},
    {"_near", l_near},
    {"_unknown_fields", l_unknown_fields},
    {"_fields", l_fields},
    {"_say", l_say},
    {"_enter", l_enter},
    {"_leave", l_leave},
    {NULL, NULL},
};

/* sc._exits: the classes of errors (SC_EXITS), both ways: name -> exit
 * code (sc._exits.usage == 2, the prelude's codes) and code -> class
 * (sc._exits[2] == "usage", what tests/py/lists.py compares with SPEC.md). */
static void exits(lua_State *L)
{
    lua_newtable(L);
    int code;
    const char *name, *text;
    for (int i = 0; sc_exit_row(i, &code, &name, &text); i++) {
        char lower[32];
        size_t k = 0;
        for (; name[k] && k + 1 < sizeof lower; k++)
            lower[k] = (char)tolower((unsigned char)name[k]);
        lower[k] = 0;
        lua_pushinteger(L, code);
        lua_setfield(L, -2, lower);
        lua_pushstring(L, text);
        lua_seti(L, -2, code);
    }
    lua_setfield(L, -2, "_exits");
}

/* The module's table, pushed (sc_lua_setup and luaopen_stagecraft). */
static int open_module(lua_State *L)
{
    sc_lua_open_program(L);
    sc_lua_open_export(L);
    luaL_newlib(L, module_funcs);
    sc_lua_open_block(L);
    sc_lua_open_search(L, lua_gettop(L));
    sc_lua_open_costs(L);
    sc_lua_open_model(L);
    lua_pushliteral(L, SC_VERSION);
    lua_setfield(L, -2, "version");
    exits(L);
    /* The module's Lua half adds the Lua-side functions, each chunk called
     * with the module table: the prelude (parameters, loading recipes),
     * the model's parameters, the shapes recipes build from, sc.pretty. Their chunk names are
     * "@stdlib/_NAME.lua": error positions skip them (lang/sandbox/paths.c). */
    static const char *const half[] = {"_prelude", "_model", "_shapes", "_pretty"};
    for (size_t i = 0; i < sizeof half / sizeof half[0]; i++) {
        if (sc_stdlib_load(L, half[i]) != LUA_OK)
            return luaL_error(L, "stagecraft: the module's %s.lua is missing or broken", half[i]);
        lua_pushvalue(L, -2);
        lua_call(L, 1, 0);
    }
    return 1;
}

/* require "stagecraft" from a Lua that is not stagecraft's (stock lua5.4
 * loading stagecraft.so, docs/embed.md#the-lua-module): the sandbox is set
 * up on first use, from the libraries the host has then, so that the
 * recipes sc.load evaluates run under the same rules as on the command
 * line. The host's own code is trusted, as in the REPL: its files are its
 * own. Its global print stays its own (the sandbox's print is the one that
 * cleans control characters); the limits, which need the state's
 * allocator (sc_limits.h), are the host's business. luaopen_stagecraft
 * (lang/engine) adds the engine's functions to it. */
int sc_lua_open_host(lua_State *L)
{
    if (!sc_sandbox_ready(L)) {
        lua_getglobal(L, "print");
        sc_sandbox_init(L);
        lua_setglobal(L, "print");
    }
    return open_module(L);
}

void sc_lua_setup(lua_State *L)
{
    luaL_openlibs(L);
    luaL_requiref(L, "stagecraft", open_module, 1);
    lua_setglobal(L, "sc");
    sc_limits_guard(L);
    sc_pattern_open(L);
    sc_sandbox_init(L);
    sc_sandbox_own_strings(L); /* this state is stagecraft's: a host's keeps its own */
    sc_lua_clear_status(L);
}
