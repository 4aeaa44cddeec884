/*
 * core.c — what every part of stagecraft's Lua surface stands on (core.h):
 * the exit codes that errors carry, raising with the recipe's position,
 * and the embedded stdlib.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define STATUS_KEY "stagecraft.status"

struct sc_embedded {
    const char *name;
    const char *src;
    size_t len;
    const char *bc; /* the chunk compiled at build time (tools/embed.c) */
    size_t bclen;
};
extern const struct sc_embedded sc_stdlib[];

static const struct sc_embedded *stdlib_find(const char *name)
{
    for (int i = 0; sc_stdlib[i].name; i++)
        if (strcmp(sc_stdlib[i].name, name) == 0)
            return &sc_stdlib[i];
    return NULL;
}

const char *sc_stdlib_source(const char *name, size_t *len)
{
    const struct sc_embedded *e = stdlib_find(name);
    if (!e)
        return NULL;
    *len = e->len;
    return e->src;
}

int sc_stdlib_load(lua_State *L, const char *name)
{
    const struct sc_embedded *e = stdlib_find(name);
    if (!e) {
        lua_pushfstring(L, "no stdlib file '%s'", name);
        return LUA_ERRFILE;
    }
    lua_pushfstring(L, "@stdlib/%s.lua", name);
    /* Only this embedded bytecode is ever loaded in mode "b": recipes load
     * text only (the sandbox's load, require, dofile, sc_loadfile). A Lua
     * whose binary format differs from the one linked at build time (a host
     * of the Lua module) refuses it: the source is there for that. */
    int st = luaL_loadbufferx(L, e->bc, e->bclen, lua_tostring(L, -1), "b");
    if (st == LUA_ERRSYNTAX) {
        lua_pop(L, 1);
        st = luaL_loadbufferx(L, e->src, e->len, lua_tostring(L, -1), "t");
    }
    lua_remove(L, -2); /* the chunk name */
    return st;
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

int sc_lua_raisef(lua_State *L, sc_status st, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise(L, st, buf);
}

void sc_lua_recipe_where(lua_State *L)
{
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar))
            break;
        if (strcmp(ar.what, "C") == 0 || strncmp(ar.source, "@stdlib/_", 9) == 0)
            continue;
        if (ar.currentline > 0) {
            lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
            return;
        }
        break;
    }
    luaL_where(L, 1);
}

FILE *sc_fopen_read(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return NULL;
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

typedef struct file_reader {
    FILE *f;
    size_t n; /* bytes put back in buf before the file's */
    char buf[8192];
} file_reader;

static const char *read_file(lua_State *L, void *ud, size_t *size)
{
    (void)L;
    file_reader *r = ud;
    if (r->n > 0) {
        *size = r->n;
        r->n = 0;
        return r->buf;
    }
    *size = fread(r->buf, 1, sizeof r->buf, r->f);
    return *size ? r->buf : NULL;
}

int sc_loadfile(lua_State *L, const char *path, const char *mode)
{
    /* The chunk name first: pushing it may raise a memory error (the
     * --max-mem limit), which must not leave the reader or the file
     * behind. lua_load itself runs protected. */
    lua_pushfstring(L, "@%s", path);
    file_reader *r = malloc(sizeof *r);
    FILE *f = r ? sc_fopen_read(path) : NULL;
    if (!f) {
        int e = r ? errno : ENOMEM;
        free(r);
        lua_pop(L, 1);
        lua_pushfstring(L, "cannot open %s: %s", path, strerror(e));
        return LUA_ERRFILE;
    }
    r->f = f;
    r->n = 0;
    /* As luaL_loadfilex: a UTF-8 byte order mark, then a first line that
     * starts with '#' (kept as a newline, so that line numbers hold). */
    int c = getc(f);
    const char *bom = "\xEF\xBB\xBF";
    while (c != EOF && r->n < 3 && (unsigned char)bom[r->n] == c) {
        r->buf[r->n++] = (char)c;
        c = getc(f);
    }
    if (r->n == 3)
        r->n = 0; /* a whole mark: dropped */
    if (r->n == 0 && c == '#') {
        while (c != EOF && c != '\n')
            c = getc(f);
        r->buf[r->n++] = '\n';
        c = c == EOF ? EOF : getc(f);
    }
    if (c != EOF)
        r->buf[r->n++] = (char)c;
    int st = lua_load(L, read_file, r, lua_tostring(L, -1), mode);
    int bad = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    free(r);
    lua_remove(L, -2); /* the chunk name */
    if (bad) {
        lua_pop(L, 1);
        lua_pushfstring(L, "cannot read %s: %s", path, strerror(bad));
        return LUA_ERRFILE;
    }
    return st;
}

int sc_error_fd(void)
{
    static int fd = -2;
    if (fd == -2) {
        const char *e = getenv("STAGECRAFT_ERROR_FD");
        char *end = NULL;
        long v = e ? strtol(e, &end, 10) : -1;
        fd = e && end != e && *end == 0 && v > 2 && v < 1 << 20 ? (int)v : -1;
    }
    return fd;
}
