/*
 * files.c — the files sandboxed code may write (sandbox.h): the window of a
 * sandboxed evaluation (sc_sandbox_enter, sc_sandbox_leave) and the rule
 * applied inside it (sc_sandbox_write_path); the string methods sandboxed
 * code finds in stagecraft's own states, which follow the same window
 * (sc_sandbox_own_strings).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "sandbox.h"
#include "sandbox_impl.h"

#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- files written by sandboxed code ----------------------------------- */

#define SEALED_KEY "stagecraft.sandbox_sealed"
#define GRANT_KEY "stagecraft.sandbox_grant"   /* the real path of --allow-write DIR */
#define GRANT_FD_KEY "stagecraft.sandbox_grant_fd" /* its descriptor, opened once */
#define GRANT_FD_MT "stagecraft.GrantFd"
#define MADE_KEY "stagecraft.sandbox_made"     /* set of the files written in this run */

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

void sc_sandbox_enter_script(lua_State *L, const char *file)
{
    sc_sandbox_enter(L, file);
    lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY);
    lua_Integer depth = (lua_Integer)lua_rawlen(L, -1);
    lua_pop(L, 1);
    lua_pushinteger(L, depth);
    lua_setfield(L, LUA_REGISTRYINDEX, SCRIPT_KEY);
}

void sc_sandbox_leave(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, SCRIPT_KEY);
    lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY);
    if (lua_istable(L, -1) && lua_tointeger(L, -2) == (lua_Integer)lua_rawlen(L, -1)) {
        lua_pushnil(L); /* the script's window closes */
        lua_setfield(L, LUA_REGISTRYINDEX, SCRIPT_KEY);
    }
    lua_pop(L, 2);
    if (lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY) == LUA_TTABLE && lua_rawlen(L, -1) > 0) {
        lua_pushnil(L);
        lua_seti(L, -2, (lua_Integer)lua_rawlen(L, -2));
    }
    lua_pop(L, 1);
}

void sc_sandbox_seal(lua_State *L)
{
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, SEALED_KEY);
}

/* The granted folder's descriptor lives in a userdata in the registry:
 * closed when the state closes or another grant replaces it. */
static int grant_fd_gc(lua_State *L)
{
    int *fd = luaL_checkudata(L, 1, GRANT_FD_MT);
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
    return 0;
}

/* The folder is opened once, here, by its real path and without following
 * a link in its last name (O_NOFOLLOW: the path was just resolved, so a
 * link there now is a swap under way): every write goes through this
 * descriptor (sc_sandbox_write_path), never through DIR's path again, so
 * that whatever later happens to the path (DIR renamed, replaced by a
 * link to another folder) nothing lands outside the folder granted. */
int sc_sandbox_grant_write(lua_State *L, const char *dir)
{
    /* Userdata first (the descriptor, a buffer for the real path): a
     * memory error raised here leaks nothing. */
    int *fd = lua_newuserdatauv(L, sizeof *fd, 0);
    *fd = -1;
    if (luaL_newmetatable(L, GRANT_FD_MT)) {
        lua_pushcfunction(L, grant_fd_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    char *real = lua_newuserdatauv(L, PATH_MAX, 0);
    if (!realpath(dir, real) || (*fd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                   O_CLOEXEC)) < 0) {
        lua_pop(L, 2);
        return -1;
    }
    lua_pushstring(L, real);
    lua_setfield(L, LUA_REGISTRYINDEX, GRANT_KEY);
    lua_pop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, GRANT_FD_KEY);
    return 0;
}

/* The rule in force (sandbox.h): 0 none (trusted, the REPL, stdin); 1 no
 * evaluation runs in a sealed process (code a recipe left behind: an error
 * object's __tostring); 2 a stdlib recipe; 3 a recipe or script, its
 * folder pushed. Pushes one value in every case. */
enum { RULE_NONE, RULE_SEALED, RULE_STDLIB, RULE_FOLDER };
static int rule(lua_State *L)
{
    int r = RULE_NONE;
    if (lua_getfield(L, LUA_REGISTRYINDEX, WINDOW_KEY) == LUA_TTABLE && lua_rawlen(L, -1) > 0) {
        if (lua_geti(L, -1, (lua_Integer)lua_rawlen(L, -1)) == LUA_TSTRING)
            r = lua_rawlen(L, -1) ? RULE_FOLDER : RULE_STDLIB;
        lua_remove(L, -2);
        return r;
    }
    lua_pop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, SEALED_KEY);
    r = lua_toboolean(L, -1) && !sc_sandbox_trusted(L) ? RULE_SEALED : RULE_NONE;
    return r;
}

/* Whether a rule of the sandbox is in force now: a sandboxed evaluation
 * runs (not --trust), or none does in a sealed process. */
static int in_force(lua_State *L)
{
    int r = rule(L);
    lua_pop(L, 1);
    return r != RULE_NONE;
}

/* ---- string methods in stagecraft's own states ---------------------------- */

/* __index of the strings' metatable in stagecraft's own states: while a
 * rule of the sandbox is in force (a sandboxed evaluation, or code it left
 * behind in a sealed process), the snapshot's string library, which lacks
 * dump (upvalue 2); else what __index was (upvalue 1: the string library,
 * read live, so that the REPL and --trust find what they add to it). */
static int string_index(lua_State *L)
{
    int from = in_force(L) ? lua_upvalueindex(2) : lua_upvalueindex(1);
    if (lua_type(L, from) == LUA_TFUNCTION) {
        lua_pushvalue(L, from);
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 2);
        lua_call(L, 2, 1);
        return 1;
    }
    if (lua_type(L, from) != LUA_TTABLE)
        return 0;
    lua_pushvalue(L, 2);
    lua_gettable(L, from);
    return 1;
}

void sc_sandbox_own_strings(lua_State *L)
{
    int top = lua_gettop(L);
    lua_pushliteral(L, "");
    if (!lua_getmetatable(L, -1) || lua_getfield(L, LUA_REGISTRYINDEX, SNAPSHOT_KEY) != LUA_TTABLE) {
        lua_settop(L, top);
        return;
    }
    int mt = top + 2;
    lua_getfield(L, mt, "__index");
    lua_getfield(L, -2, "string");
    lua_pushcclosure(L, string_index, 2);
    lua_setfield(L, mt, "__index");
    lua_settop(L, top);
}

/* Whether the last name of path, without trailing dots and spaces and in
 * any case, ends in ".lua": "x.lua", "x.LUA", "x.lua." and "x.lua " are
 * all the recipe x.lua on some file system. A last name "." or ".." (or an
 * empty one) names a folder, never a file to write: refused the same. */
static int lua_named(const char *path)
{
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    size_t n = strlen(name);
    if (n == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 1;
    while (n > 0 && (name[n - 1] == '.' || name[n - 1] == ' '))
        n--;
    return n >= 4 && name[n - 4] == '.' && (name[n - 3] | 32) == 'l' &&
           (name[n - 2] | 32) == 'u' && (name[n - 1] | 32) == 'a';
}

const char *sc_sandbox_read_path(lua_State *L, const char *path, const char *what)
{
    int r = rule(L);
    if (r == RULE_NONE) {
        lua_pop(L, 1);
        lua_pushstring(L, path);
        return lua_tostring(L, -1);
    }
    if (r == RULE_SEALED)
        sc_sandbox_violation(L, "%s('%s'): no recipe is being evaluated: code a recipe left "
                             "behind reads no files", what, path);
    const char *real = sc_sandbox_resolve(L, r == RULE_FOLDER ? lua_tostring(L, -1) : NULL, path,
                                          what);
    if (!real) /* no such file: the caller's "cannot open" */
        return NULL;
    return real;
}

/* Whether the normalized path is a file this run wrote (its own output,
 * which it may write again). */
static int made(lua_State *L, const char *norm, int record)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, MADE_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, MADE_KEY);
    }
    int was = lua_getfield(L, -1, norm) != LUA_TNIL;
    lua_pop(L, 1);
    if (record) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, norm);
    }
    lua_pop(L, 1);
    return was;
}

const char *sc_sandbox_write_path(lua_State *L, const char *path, const char *what, int *dirfd)
{
    int r = rule(L);
    *dirfd = AT_FDCWD;
    if (r == RULE_NONE) { /* not sandboxed */
        lua_pop(L, 1);
        lua_pushstring(L, path);
        return lua_tostring(L, -1);
    }
    if (r == RULE_SEALED)
        sc_sandbox_violation(L, "%s('%s'): no recipe is being evaluated: code a recipe left "
                             "behind writes no files", what, path);
    if (r == RULE_STDLIB)
        sc_sandbox_violation(L, "%s('%s'): a recipe from the stdlib writes no files", what, path);
    const char *folder = lua_tostring(L, -1);
    if (lua_named(path))
        sc_sandbox_violation(L, "%s('%s'): a %s may not write .lua files", what, path, sc_sandbox_noun(L));
    lua_getfield(L, LUA_REGISTRYINDEX, GRANT_KEY);
    const char *root = lua_tostring(L, -1);
    if (!root)
        sc_sandbox_violation(L, "%s('%s'): a %s writes files only in a folder the user grants "
                             "(--allow-write DIR)", what, path, sc_sandbox_noun(L));
    /* A relative path is relative to the recipe's folder, as for reading. */
    if (path[0] == '/')
        lua_pushstring(L, path);
    else
        lua_pushfstring(L, "%s/%s", folder, path);
    size_t len;
    const char *joined = lua_tolstring(L, -1, &len);
    char *norm = lua_newuserdatauv(L, len + 2, 0);
    memcpy(norm, joined, len + 1);
    sc_sandbox_normalize(norm);
    if (lua_named(norm))
        sc_sandbox_violation(L, "%s('%s'): a %s may not write .lua files", what, path, sc_sandbox_noun(L));
    if (!sc_sandbox_inside(norm, root) || strcmp(norm, root) == 0)
        sc_sandbox_violation(L, "%s('%s'): a %s may write files only in the folder granted by "
                             "--allow-write (%s)", what, path, sc_sandbox_noun(L), root);
    if (sc_sandbox_dotted(norm, root))
        sc_sandbox_violation(L, "%s('%s'): dotfiles and dot-folders are refused (.git/hooks, .env: "
                             "other programs read them)", what, path);
    /* With links resolved: the folder the file goes to, and the file when
     * it exists (a link that points outside is refused too). */
    char *slash = strrchr(norm, '/');
    *slash = 0;
    char *dir = realpath(norm[0] ? norm : "/", NULL), *file = NULL;
    /* A link below root, even to a folder inside it, is refused: the write
     * walks the folders from the grant's descriptor and follows none. */
    int linked = dir && strcmp(dir, norm[0] ? norm : "/") != 0;
    *slash = '/';
    int ok = !dir || sc_sandbox_inside(dir, root); /* no folder: the write fails, saying so */
    ok = ok && (!dir || !sc_sandbox_dotted(dir, root));
    int exists = 0;
    if (dir && ok && (file = realpath(norm, NULL)) != NULL) {
        exists = 1;
        ok = sc_sandbox_inside(file, root) && !lua_named(file) && !sc_sandbox_dotted(file, root);
    }
    free(dir);
    free(file);
    if (!ok)
        sc_sandbox_violation(L, "%s('%s'): the file lies outside the folder granted by "
                             "--allow-write (%s)", what, path, root);
    if (linked)
        sc_sandbox_violation(L, "%s('%s'): a folder in the path is a symbolic link: writes "
                             "inside the granted folder follow none", what, path);
    if (exists && !made(L, norm, 0))
        sc_sandbox_violation(L, "%s('%s'): the file exists: a %s never replaces a file it did "
                             "not write in this run", what, path, sc_sandbox_noun(L));
    made(L, norm, 1);
    /* The path below root, written through the descriptor the grant
     * opened: whatever root's path names by now, the file lands in the
     * folder granted. */
    lua_getfield(L, LUA_REGISTRYINDEX, GRANT_FD_KEY);
    *dirfd = *(int *)luaL_checkudata(L, -1, GRANT_FD_MT);
    lua_pop(L, 1);
    lua_pushstring(L, norm + (root[1] ? strlen(root) + 1 : 1));
    return lua_tostring(L, -1);
}
