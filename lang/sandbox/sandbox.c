/*
 * sandbox.c — the recipe sandbox (sandbox.h).
 *
 * Every sandbox is a new table built from a snapshot of the libraries taken
 * at sc_sandbox_init, so that neither a recipe nor later trusted code can
 * change what the next sandbox sees. The functions that touch files
 * (dofile, loadfile, require, sc.load) are C closures holding the sandbox
 * and its folder; a path is allowed when its lexically normalized form and
 * its real path (symbolic links resolved) both lie inside the folder
 * (paths.c, which also holds the rule for files written).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "sandbox.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"
#include "sandbox_impl.h"

#define TRUSTED_KEY "stagecraft.trusted"

/* Upvalues of the closures below. */
#define UV_ENV lua_upvalueindex(1)
#define UV_ROOT lua_upvalueindex(2) /* real path of the folder, or nil */

static const char *const base_names[] = {
    "assert", "error",    "ipairs",   "next",         "pairs",    "pcall",
    "print",  "rawequal", "rawget",   "rawlen",       "rawset",   "select",
    "setmetatable", "tonumber", "tostring", "type", "xpcall", "_VERSION",
    "load", "collectgarbage", NULL,
};

static const char *const lib_names[] = {"string", "table", "math", "utf8", "coroutine", "os",
                                        NULL};
static const char *const os_allowed[] = {"clock", "date", "time", "difftime", NULL};
static const char *const os_refused[] = {"execute", "exit",    "getenv",    "remove",
                                         "rename",  "tmpname", "setlocale", NULL};
static const char *const global_refused[] = {"io", "debug", "package", "warn", NULL};
static const char *const string_refused[] = {"dump", NULL};

/* Copies the table at idx, with tables inside it, `depth` levels deep. */
static void copy_table(lua_State *L, int idx, int depth, const char *skip)
{
    idx = lua_absindex(L, idx);
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (skip && lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), skip) == 0) {
            lua_pop(L, 1);
            continue;
        }
        if (depth > 1 && lua_type(L, -1) == LUA_TTABLE) {
            copy_table(L, -1, depth - 1, NULL);
            lua_remove(L, -2);
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
}

/* print, its text cleaned for a terminal (core.h): a recipe cannot send
 * escape sequences to it. Arguments through tostring, separated by tabs, a
 * line break at the end; a NUL byte shows as '?'. */
static int clean_print(lua_State *L)
{
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        if (i > 1)
            fputc('\t', stdout);
        for (size_t k = 0; k <= len; k += strlen(s + k) + 1) {
            if (k > 0)
                fputc('?', stdout);
            sc_fputs_clean(s + k, stdout, 1);
        }
        lua_pop(L, 1);
    }
    fputc('\n', stdout);
    fflush(stdout);
    return 0;
}

void sc_sandbox_init(lua_State *L)
{
    lua_pushcfunction(L, clean_print);
    lua_setglobal(L, "print");
    lua_newtable(L);
    for (int i = 0; base_names[i]; i++) {
        lua_getglobal(L, base_names[i]);
        lua_setfield(L, -2, base_names[i]);
    }
    for (int i = 0; lib_names[i]; i++) {
        lua_getglobal(L, lib_names[i]);
        if (lua_istable(L, -1))
            copy_table(L, -1, 1, strcmp(lib_names[i], "string") == 0 ? "dump" : NULL);
        else
            lua_newtable(L);
        lua_setfield(L, -3, lib_names[i]);
        lua_pop(L, 1);
    }
    lua_setfield(L, LUA_REGISTRYINDEX, SNAPSHOT_KEY);
}

int sc_sandbox_ready(lua_State *L)
{
    int ready = lua_getfield(L, LUA_REGISTRYINDEX, SNAPSHOT_KEY) == LUA_TTABLE;
    lua_pop(L, 1);
    return ready;
}

void sc_sandbox_trust(lua_State *L, int trusted)
{
    lua_pushboolean(L, trusted);
    lua_setfield(L, LUA_REGISTRYINDEX, TRUSTED_KEY);
}

int sc_sandbox_trusted(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, TRUSTED_KEY);
    int t = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return t;
}

/* ---- paths ------------------------------------------------------------- */

/* sc_sandbox_resolve (sandbox_impl.h): the real path of `path` (relative
 * paths are relative to the folder root) when it lies inside the folder and no name below the folder starts with a dot
 * (dotfiles hold secrets: .env, .ssh, .git); raises a sandbox error when
 * it does not.
 * Returns NULL when the file does not exist (message pushed). The result
 * is pushed as a string. */
const char *sc_sandbox_resolve(lua_State *L, const char *root, const char *path, const char *what)
{
    if (!root) {
        sc_sandbox_violation(L, "%s('%s'): a recipe from the stdlib reads no files", what, path);
        return NULL;
    }
    if (path[0] == '/')
        lua_pushstring(L, path);
    else
        lua_pushfstring(L, "%s/%s", root, path);
    size_t len;
    const char *joined = lua_tolstring(L, -1, &len);
    char *norm = lua_newuserdatauv(L, len + 2, 0);
    memcpy(norm, joined, len + 1);
    sc_sandbox_normalize(norm);
    if (!sc_sandbox_inside(norm, root)) {
        sc_sandbox_violation(L, "%s('%s'): a %s may read files in its own folder only (%s)", what,
                             path, sc_sandbox_noun(L), root);
        return NULL;
    }
    if (sc_sandbox_dotted(norm, root)) {
        sc_sandbox_violation(L, "%s('%s'): dotfiles and dot-folders are refused (they hold secrets: "
                  ".env, .ssh, .git)", what, path);
        return NULL;
    }
    char *real = realpath(norm, NULL);
    lua_pop(L, 2);
    if (!real) {
        lua_pushfstring(L, "cannot open %s", path);
        return NULL;
    }
    int ok = sc_sandbox_inside(real, root), dot = ok && sc_sandbox_dotted(real, root);
    lua_pushstring(L, real);
    free(real);
    if (!ok) {
        sc_sandbox_violation(L, "%s('%s'): the file lies outside the recipe's folder (%s)", what, path,
                  root);
        return NULL;
    }
    if (dot) {
        sc_sandbox_violation(L, "%s('%s'): the file is a dotfile or in a dot-folder (%s), and those are "
                  "refused", what, path, lua_tostring(L, -1));
        return NULL;
    }
    return lua_tostring(L, -1);
}

/* A file a recipe names (dofile, loadfile, require, sc.load, sc.costs) is
 * a regular file: a FIFO or a device in its folder (a tarball can carry
 * one) would block the read where no limit reaches, since the time limit
 * is a deadline that Lua code reads, not a signal. */
static const char *resolve(lua_State *L, const char *path, const char *what)
{
    const char *real = sc_sandbox_resolve(L, lua_tostring(L, UV_ROOT), path, what);
    struct stat sb;
    if (real && stat(real, &sb) == 0 && !S_ISREG(sb.st_mode))
        sc_sandbox_violation(L, "%s('%s'): not a regular file (a recipe reads files, not pipes or "
                             "devices)", what, path);
    return real;
}

/* Loads the file at the real path `real` as text with _ENV = env (the
 * value at env_idx); pushes the chunk, or nil and the message. */
static int load_in(lua_State *L, const char *real, int env_idx)
{
    if (sc_loadfile(L, real, "t") != LUA_OK) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushvalue(L, env_idx);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return 1;
}

static void check_mode(lua_State *L, int idx, const char *what)
{
    const char *mode = luaL_optstring(L, idx, "t");
    if (!strchr(mode, 't'))
        sc_sandbox_violation(L, "%s: mode '%s': binary chunks are refused", what, mode);
}

/* ---- the sandbox's functions ------------------------------------------ */

/* load(chunk [, chunkname [, mode [, env]]]) */
static int sb_load(lua_State *L)
{
    int nargs = lua_gettop(L);
    luaL_checkany(L, 1);
    size_t len;
    const char *s = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : NULL;
    if (s && len > 0 && s[0] == LUA_SIGNATURE[0])
        return sc_sandbox_violation(L, "load: binary chunks are refused");
    check_mode(L, 3, "load");
    lua_settop(L, 4);
    int base = lua_gettop(L);
    lua_getfield(L, lua_upvalueindex(2), "load"); /* the real load */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushliteral(L, "t");
    lua_pushvalue(L, nargs >= 4 ? 4 : UV_ENV);
    lua_call(L, 4, LUA_MULTRET);
    return lua_gettop(L) - base;
}

/* loadfile(filename [, mode [, env]]) */
static int sb_loadfile(lua_State *L)
{
    int nargs = lua_gettop(L);
    const char *path = luaL_checkstring(L, 1);
    check_mode(L, 2, "loadfile");
    lua_settop(L, 3);
    const char *real = resolve(L, path, "loadfile");
    if (!real) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    return load_in(L, real, nargs >= 3 ? 3 : UV_ENV);
}

/* dofile(filename) */
static int sb_dofile(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    const char *real = resolve(L, path, "dofile");
    if (!real)
        return lua_error(L);
    if (load_in(L, real, UV_ENV) != 1)
        return lua_error(L);
    lua_call(L, 0, LUA_MULTRET);
    return lua_gettop(L) - 2;
}

/* A module name: identifiers (letters, digits, _ and -) joined by dots. */
static int module_name_ok(const char *name)
{
    int seg = 0;
    for (const char *p = name;; p++) {
        if (*p == '.' || *p == 0) {
            if (seg == 0)
                return 0;
            if (*p == 0)
                return 1;
            seg = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || *p == '_' || *p == '-') {
            seg++;
        } else {
            return 0;
        }
    }
}

/* Calls the loader on the stack top with (name, extra); leaves the module
 * value (true when the loader returned nothing). */
static void call_loader(lua_State *L, const char *name, const char *extra)
{
    lua_pushstring(L, name);
    lua_pushstring(L, extra);
    lua_call(L, 2, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
}

/* require(name): upvalue 3 is the sandbox's own table of loaded modules. */
static int sb_require(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    if (lua_getfield(L, lua_upvalueindex(3), name) != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    size_t len;
    const char *src;
    if (strcmp(name, "stagecraft") == 0) {
        lua_getfield(L, UV_ENV, "sc");
    } else if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE) == LUA_TTABLE &&
               lua_getfield(L, -1, name) != LUA_TNIL) {
        call_loader(L, name, ":preload:"); /* the stdlib's own helpers */
    } else if (name[0] != '_' && (src = sc_stdlib_source(name, &len)) != NULL) {
        if (sc_stdlib_load(L, name) != LUA_OK)
            return lua_error(L);
        lua_pushfstring(L, "@stdlib/%s.lua", name);
        lua_insert(L, -2);
        lua_pushvalue(L, UV_ENV);
        lua_setupvalue(L, -2, 1);
        call_loader(L, name, lua_tostring(L, -2));
    } else {
        if (!module_name_ok(name))
            return sc_sandbox_violation(L, "require('%s'): a module name is words joined by dots", name);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (const char *p = name; *p; p++)
            luaL_addchar(&b, *p == '.' ? '/' : *p);
        luaL_pushresult(&b);
        const char *rel = lua_tostring(L, -1);
        const char *real = NULL;
        if (!lua_isnil(L, UV_ROOT)) {
            lua_pushfstring(L, "%s.lua", rel);
            real = resolve(L, lua_tostring(L, -1), "require");
            if (!real) {
                lua_pushfstring(L, "%s/init.lua", rel);
                real = resolve(L, lua_tostring(L, -1), "require");
            }
        }
        if (!real)
            return sc_sandbox_violation(L,
                             "module '%s' not found: a recipe may require Lua files in its "
                             "folder and the stdlib; C modules are refused",
                             name);
        if (load_in(L, real, UV_ENV) != 1)
            return lua_error(L);
        call_loader(L, name, real);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, lua_upvalueindex(3), name);
    return 1;
}

/* collectgarbage(opt): only the questions, no work. */
static int sb_collectgarbage(lua_State *L)
{
    const char *opt = luaL_optstring(L, 1, "collect");
    if (strcmp(opt, "count") == 0) {
        lua_pushnumber(L, (lua_Number)lua_gc(L, LUA_GCCOUNT, 0) +
                              (lua_Number)lua_gc(L, LUA_GCCOUNTB, 0) / 1024);
        return 1;
    }
    if (strcmp(opt, "isrunning") == 0) {
        lua_pushboolean(L, lua_gc(L, LUA_GCISRUNNING, 0));
        return 1;
    }
    return sc_sandbox_violation(L, "collectgarbage('%s') is refused (only 'count' and 'isrunning')", opt);
}

/* setmetatable(t, mt) without __gc: Lua runs finalizers with hooks off, so
 * neither the step limit nor the time limit's soft stop could end one. A
 * __gc added later is ignored by Lua (it must be there at this call). */
static int sb_setmetatable(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return sc_sandbox_violation(L, "setmetatable: finalizers (__gc) are refused");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* getmetatable(t): tables only; strings and programs have none here. */
static int sb_getmetatable(lua_State *L)
{
    luaL_checkany(L, 1);
    if (lua_type(L, 1) != LUA_TTABLE || !lua_getmetatable(L, 1)) {
        lua_pushnil(L);
        return 1;
    }
    luaL_getmetafield(L, 1, "__metatable");
    return 1;
}

static int is_path(const char *r)
{
    size_t n = strlen(r);
    return strchr(r, '/') || (n > 4 && strcmp(r + n - 4, ".lua") == 0);
}

/* sc.load(recipe, overrides): stdlib names, or files in the folder. */
static int sb_scload(lua_State *L)
{
    const char *r = luaL_checkstring(L, 1);
    size_t len;
    lua_settop(L, 2);
    lua_getfield(L, lua_upvalueindex(3), "load"); /* the module's own sc.load */
    if (!is_path(r) && r[0] != '_' && sc_stdlib_source(r, &len)) {
        lua_pushvalue(L, 1);
    } else {
        if (!resolve(L, r, "sc.load"))
            return luaL_error(L, "sc.load: no recipe '%s' in the stdlib or the recipe's folder",
                              r);
    }
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    return 1;
}

/* sc.costs(path) and sc.model(path): a path named on the command line
 * (-D costs=FILE, --model FILE: the module's _granted), or a file in the
 * recipe's folder. Upvalues: the sandbox, the folder (or nil), the module,
 * the module's reader ("_costs_read", "_model_read") and what the file is
 * ("cost file", "model"). sc.model of a table goes to the module's as it is. */
static int sb_scfile(lua_State *L)
{
    int is_model = strcmp(lua_tostring(L, lua_upvalueindex(4)), "_model_read") == 0;
    if (is_model && lua_istable(L, 1)) {
        lua_settop(L, 1);
        lua_getfield(L, lua_upvalueindex(3), "model");
        lua_insert(L, 1);
        lua_call(L, 1, 1);
        return 1;
    }
    const char *path = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_getfield(L, lua_upvalueindex(3), lua_tostring(L, lua_upvalueindex(4)));
    lua_getfield(L, lua_upvalueindex(3), "_granted");
    int granted = lua_istable(L, -1) && lua_getfield(L, -1, path) != LUA_TNIL;
    lua_settop(L, 2);
    if (!granted && !resolve(L, path, is_model ? "sc.model" : "sc.costs")) {
        lua_pushfstring(L, "%s %s: cannot open it (in %s)", lua_tostring(L, lua_upvalueindex(5)),
                        path, lua_tostring(L, UV_ROOT));
        return sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    if (granted)
        lua_pushvalue(L, 1);
    lua_pushvalue(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

/* __index of the sandbox, of its os and of its string: names that exist
 * outside the sandbox raise; others are nil as usual. */
static int refused_index(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TSTRING) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL)
            return sc_sandbox_violation(L, "%s%s is not available to %ss",
                                        lua_tostring(L, lua_upvalueindex(1)), lua_tostring(L, 2),
                                        sc_sandbox_noun(L));
    }
    return 0;
}

/* Gives the table on the stack top a protected metatable that refuses
 * the names in `refused`; `prefix` goes before them in messages. */
static void refuse(lua_State *L, const char *prefix, const char *const *refused)
{
    lua_createtable(L, 0, 2);
    lua_pushstring(L, prefix);
    lua_newtable(L);
    for (int i = 0; refused[i]; i++) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, refused[i]);
    }
    lua_pushcclosure(L, refused_index, 2);
    lua_setfield(L, -2, "__index");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
}

/* Into the sandbox env rooted at root (NULL: none): the base functions
 * and libraries of the snapshot at snap (copied; os and string without
 * what they refuse), the loaders that keep to root, the guarded
 * getmetatable and collectgarbage. */
static void add_base(lua_State *L, int snap, int env, const char *root)
{
    for (int i = 0; base_names[i]; i++) {
        lua_getfield(L, snap, base_names[i]);
        lua_setfield(L, env, base_names[i]);
    }
    lua_getfield(L, snap, "setmetatable");
    lua_pushcclosure(L, sb_setmetatable, 1);
    lua_setfield(L, env, "setmetatable");
    for (int i = 0; lib_names[i]; i++) {
        lua_getfield(L, snap, lib_names[i]);
        copy_table(L, -1, 1, NULL);
        lua_remove(L, -2);
        lua_setfield(L, env, lib_names[i]);
    }
    lua_getfield(L, env, "os");
    lua_newtable(L);
    for (int i = 0; os_allowed[i]; i++) {
        lua_getfield(L, -2, os_allowed[i]);
        lua_setfield(L, -2, os_allowed[i]);
    }
    refuse(L, "os.", os_refused);
    lua_setfield(L, env, "os");
    lua_pop(L, 1);
    lua_getfield(L, env, "string");
    refuse(L, "string.", string_refused);
    lua_pop(L, 1);
    lua_pushvalue(L, env);
    lua_pushvalue(L, snap);
    lua_pushcclosure(L, sb_load, 2);
    lua_setfield(L, env, "load");
    lua_pushcfunction(L, sb_getmetatable);
    lua_setfield(L, env, "getmetatable");
    lua_pushcfunction(L, sb_collectgarbage);
    lua_setfield(L, env, "collectgarbage");
    static const lua_CFunction file_fns[] = {sb_loadfile, sb_dofile};
    static const char *const file_names[] = {"loadfile", "dofile"};
    for (int i = 0; i < 2; i++) {
        lua_pushvalue(L, env);
        lua_pushstring(L, root); /* nil for none */
        lua_pushcclosure(L, file_fns[i], 2);
        lua_setfield(L, env, file_names[i]);
    }
    lua_pushvalue(L, env);
    lua_pushstring(L, root); /* nil for none */
    lua_newtable(L);
    lua_pushcclosure(L, sb_require, 3);
    lua_setfield(L, env, "require");
}

/* Into the sandbox env rooted at root: sc, the module's public fields (its
 * tables copied), sc.load and its file readers rooted there, its typos. */
static void add_module(lua_State *L, int env, const char *root)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "stagecraft");
    lua_remove(L, -2);
    int mod = lua_gettop(L);
    lua_newtable(L);
    if (lua_istable(L, mod)) {
        lua_pushnil(L);
        while (lua_next(L, mod)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_tostring(L, -2)[0] != '_') {
                if (lua_type(L, -1) == LUA_TTABLE) {
                    copy_table(L, -1, 3, NULL);
                    lua_remove(L, -2);
                }
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_rawset(L, -4);
            } else {
                lua_pop(L, 1);
            }
        }
    }
    lua_pushvalue(L, env);
    lua_pushstring(L, root); /* nil for none */
    lua_pushvalue(L, mod);
    lua_pushcclosure(L, sb_scload, 3);
    lua_setfield(L, -2, "load");
    static const char *const files[][3] = {{"costs", "_costs_read", "cost file"},
                                           {"model", "_model_read", "model"}};
    for (int f = 0; f < 2; f++) {
        lua_pushvalue(L, env);
        lua_pushstring(L, root); /* nil for none */
        lua_pushvalue(L, mod);
        lua_pushstring(L, files[f][1]);
        lua_pushstring(L, files[f][2]);
        lua_pushcclosure(L, sb_scfile, 5);
        lua_setfield(L, -2, files[f][0]);
    }
    /* Typos ("did you mean"): the module's __index, in a metatable of this
     * copy's own that getmetatable does not hand out. Sharing the module's
     * metatable would let a recipe replace its __index and be called with
     * the real module (docs/sandbox.md#what-a-recipe-reaches). */
    lua_createtable(L, 0, 2);
    if (lua_istable(L, mod) && lua_getmetatable(L, mod)) {
        lua_getfield(L, -1, "__index");
        lua_setfield(L, -3, "__index");
        lua_pop(L, 1);
    }
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_setfield(L, env, "sc");
    lua_pop(L, 1);
}

/* Pushes a new sandbox rooted at root (NULL: none). */
static void new_sandbox(lua_State *L, const char *root)
{
    lua_getfield(L, LUA_REGISTRYINDEX, SNAPSHOT_KEY);
    int snap = lua_gettop(L);
    lua_newtable(L);
    int env = lua_gettop(L);
    add_base(L, snap, env, root);
    add_module(L, env, root);
    if (lua_getglobal(L, "arg") == LUA_TTABLE) {
        copy_table(L, -1, 1, NULL);
        lua_setfield(L, env, "arg");
    }
    lua_pop(L, 1);
    lua_pushvalue(L, env);
    lua_setfield(L, env, "_G");
    refuse(L, "", global_refused);
    lua_remove(L, snap);
}

void sc_sandbox_apply(lua_State *L, int idx, const char *file)
{
    if (sc_sandbox_trusted(L))
        return;
    idx = lua_absindex(L, idx);
    char *real = file ? realpath(file, NULL) : NULL;
    if (real) {
        char *slash = strrchr(real, '/');
        if (slash == real)
            slash[1] = 0; /* a file in / */
        else if (slash)
            *slash = 0;
    }
    lua_pushstring(L, real); /* copied before anything can raise */
    free(real);
    new_sandbox(L, lua_tostring(L, -1));
    if (!lua_setupvalue(L, idx, 1))
        lua_pop(L, 1);
    lua_pop(L, 1);
}
