/*
 * paths.c — the sandbox's rules on paths (sandbox_impl.h, sandbox.h): a
 * path normalized, whether it lies inside a folder, the error a refusal
 * raises.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "sandbox.h"
#include "sandbox_impl.h"

#include <lauxlib.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define HINT " (stagecraft --trust lifts the sandbox)"

const char *sc_sandbox_noun(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY);
    lua_Integer depth = lua_istable(L, -1) ? (lua_Integer)lua_rawlen(L, -1) : 0;
    lua_getfield(L, LUA_REGISTRYINDEX, SCRIPT_KEY);
    int script = depth > 0 && lua_tointeger(L, -1) == depth;
    lua_pop(L, 2);
    return script ? "script" : "recipe";
}

/* Raises "FILE:LINE: sandbox: ..." with the sandbox's exit code, at the
 * recipe's line (sc.costs_of reaches sc.costs through the prelude). */
int sc_sandbox_violation(lua_State *L, const char *fmt, ...)
{
    sc_lua_recipe_where(L);
    lua_pushliteral(L, "sandbox: ");
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    lua_pushliteral(L, HINT);
    lua_concat(L, 4);
    sc_lua_mark(L, -1, SC_EXIT_SANDBOX);
    return lua_error(L);
}

int sc_sandbox_inside(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == 0);
}

int sc_sandbox_dotted(const char *path, const char *root)
{
    for (const char *p = path + strlen(root); *p; p++) /* path[0] is '/': p[-1] exists */
        if (*p == '.' && p[-1] == '/')
            return 1;
    return 0;
}

/* Normalizes an absolute path in place: no ".", "..", or double slashes. */
void sc_sandbox_normalize(char *p)
{
    char *out = p, *in = p;
    while (*in) {
        while (*in == '/')
            in++;
        char *seg = in;
        while (*in && *in != '/')
            in++;
        size_t len = (size_t)(in - seg);
        if (len == 0 || (len == 1 && seg[0] == '.'))
            continue;
        if (len == 2 && seg[0] == '.' && seg[1] == '.') {
            while (out > p && *--out != '/')
                ;
            continue;
        }
        *out++ = '/';
        memmove(out, seg, len);
        out += len;
    }
    if (out == p)
        *out++ = '/';
    *out = 0;
}
