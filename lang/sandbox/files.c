/*
 * files.c — the files sandboxed code may write (sandbox.h): the window of a
 * sandboxed evaluation (sc_sandbox_enter, sc_sandbox_leave) and the rule
 * applied inside it (sc_sandbox_write_path).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "sandbox.h"
#include "sandbox_impl.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

/* ---- files written by sandboxed code ----------------------------------- */

#define WINDOW_KEY "stagecraft.sandbox_window" /* a list: the folders, innermost last */

/* The real path of the folder that holds file, pushed ("" for none). */
static void push_folder(lua_State *L, const char *file)
{
    char *real = file ? realpath(file, NULL) : NULL;
    if (real) {
        char *slash = strrchr(real, '/');
        if (slash == real)
            slash[1] = 0;
        else if (slash)
            *slash = 0;
    }
    lua_pushstring(L, real ? real : "");
    free(real);
}

void sc_sandbox_enter(lua_State *L, const char *file)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, WINDOW_KEY);
    }
    if (sc_sandbox_trusted(L))
        lua_pushboolean(L, 0); /* trusted: no rule */
    else
        push_folder(L, file);
    lua_seti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
}

void sc_sandbox_leave(lua_State *L)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY) == LUA_TTABLE && lua_rawlen(L, -1) > 0) {
        lua_pushnil(L);
        lua_seti(L, -2, (lua_Integer)lua_rawlen(L, -2));
    }
    lua_pop(L, 1);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

const char *sc_sandbox_write_path(lua_State *L, const char *path, const char *what)
{
    int inside = 0;
    if (lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY) == LUA_TTABLE && lua_rawlen(L, -1) > 0)
        inside = lua_geti(L, -1, (lua_Integer)lua_rawlen(L, -1)) == LUA_TSTRING;
    else
        lua_pushnil(L);
    const char *root = inside ? lua_tostring(L, -1) : NULL;
    if (!inside) { /* not sandboxed */
        lua_pop(L, 2);
        lua_pushstring(L, path);
        return lua_tostring(L, -1);
    }
    if (!root[0])
        sc_sandbox_violation(L, "%s('%s'): a recipe from the stdlib writes no files", what, path);
    if (ends_with(path, ".lua") || ends_with(path, "/"))
        sc_sandbox_violation(L, "%s('%s'): a recipe may not write .lua files", what, path);
    if (path[0] == '/')
        lua_pushstring(L, path);
    else
        lua_pushfstring(L, "%s/%s", root, path);
    size_t len;
    const char *joined = lua_tolstring(L, -1, &len);
    char *norm = lua_newuserdatauv(L, len + 2, 0);
    memcpy(norm, joined, len + 1);
    sc_sandbox_normalize(norm);
    if (!sc_sandbox_inside(norm, root) || strcmp(norm, root) == 0)
        sc_sandbox_violation(L, "%s('%s'): a recipe may write files in its own folder only (%s)", what, path,
                  root);
    if (sc_sandbox_dotted(norm, root))
        sc_sandbox_violation(L, "%s('%s'): dotfiles and dot-folders are refused (.git/hooks, .env: "
                             "other programs read them)", what, path);
    /* With links resolved: the folder the file goes to, and the file when
     * it exists (a link that points outside is refused too). */
    char *slash = strrchr(norm, '/');
    *slash = 0;
    char *dir = realpath(norm[0] ? norm : "/", NULL), *file = NULL;
    *slash = '/';
    int ok = !dir || sc_sandbox_inside(dir, root); /* no folder: the write fails, saying so */
    ok = ok && (!dir || !sc_sandbox_dotted(dir, root));
    if (dir && ok && (file = realpath(norm, NULL)) != NULL)
        ok = sc_sandbox_inside(file, root) && !ends_with(file, ".lua") &&
             !sc_sandbox_dotted(file, root);
    free(dir);
    free(file);
    if (!ok)
        sc_sandbox_violation(L, "%s('%s'): the file lies outside the recipe's folder (%s)", what, path, root);
    lua_pushstring(L, norm);
    return lua_tostring(L, -1);
}
