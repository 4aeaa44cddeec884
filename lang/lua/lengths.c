/*
 * lengths.c — the `lengths` field of sc.program (and of the tables
 * that share its shape), and sc._lengths, which sets -D lengths=FILE on the
 * program a recipe returns (docs/lengths.md):
 *
 *   sc.program{ p = 4, m = 4, rule = "1f1b", lengths = {512, 2048, 1024, 512} }
 *
 * A value is a list of m numbers, a file name (a JSON array, or numbers one
 * a line), or the text of a JSON array ("[512,2048,...]"). A file is read as
 * the cost files are: a name the user gave (-D lengths=FILE: sc._granted),
 * or one the sandbox's rule allows.
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"

#include "formats/readfile.h"
#include "ir/alloc.h"
#include "plan/order.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"

#include <errno.h>
#include <lauxlib.h>
#include <math.h>
#include <string.h>

#define MAX_LENGTHS_FILE ((size_t)64 << 20)

static void raise_in(lua_State *L, const char *name, const char *msg)
{
    lua_pushfstring(L, "lengths %s: %s", name, msg);
    sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

static void check(lua_State *L, sc_prog *pg, sc_status st)
{
    if (st != SC_OK)
        sc_lua_raise(L, st, sc_errmsg(pg));
}

/* What a wrong value at idx was, pushed: a number or a string as
 * written, else its type (as sc_lua_got, without calling back into
 * tables.c, which calls this file). */
static const char *got(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TSTRING)
        return lua_pushfstring(L, "'%s'", lua_tostring(L, idx));
    if (lua_type(L, idx) == LUA_TNUMBER)
        return lua_pushfstring(L, "%s", luaL_tolstring(L, idx, NULL));
    return lua_pushfstring(L, "a %s", luaL_typename(L, idx));
}

/* The path to open, pushed: path itself when the user named it (-D
 * lengths=FILE), else as the sandbox resolves it (in a recipe's folder);
 * NULL (nothing pushed) when it does not exist. Raises when refused. */
static const char *path_to_open(lua_State *L, const char *path)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    int top = lua_gettop(L) - 1;
    int granted = lua_getfield(L, -1, "stagecraft") == LUA_TTABLE &&
                  lua_getfield(L, -1, "_granted") == LUA_TTABLE &&
                  lua_getfield(L, -1, path) != LUA_TNIL;
    lua_settop(L, top);
    if (granted)
        return lua_pushstring(L, path);
    const char *open = sc_sandbox_read_path(L, path, "lengths");
    if (!open)
        lua_pop(L, 1); /* its message: ours names the file as given */
    return open;
}

/* sc_lengths_parse's list as a table (under lua_pcall: memory may raise). */
static int build_list(lua_State *L)
{
    const double *v = lua_touserdata(L, 1);
    int n = (int)lua_tointeger(L, 2);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_seti(L, -2, i + 1);
    }
    return 1;
}

/* Pushes the list of numbers in text (a file's, or the value itself);
 * owned: the C buffer text is in (freed here, whatever happens), or NULL.
 * Nothing C-owned is held across a raise. */
static void push_text(lua_State *L, const char *name, const char *text, size_t len, int m,
                      char *owned)
{
    double *v = NULL;
    int n = 0;
    char err[256];
    sc_status st = sc_lengths_parse(text, len, m, &v, &n, err, sizeof err);
    sc_free(owned);
    if (st == SC_ERR_NOMEM)
        luaL_error(L, "not enough memory");
    if (st != SC_OK)
        raise_in(L, name, err);
    lua_pushcfunction(L, build_list);
    lua_pushlightuserdata(L, v);
    lua_pushinteger(L, n);
    int rc = lua_pcall(L, 2, 1, 0);
    sc_free(v);
    if (rc != LUA_OK)
        lua_error(L);
}

/* Pushes the lengths a string names: inline JSON ("[...]") or a file. */
static void push_string(lua_State *L, const char *s, size_t len, int m)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i < len && s[i] == '[') {
        push_text(L, "(the value)", s, len, m, NULL);
        return;
    }
    const char *open = path_to_open(L, s);
    if (!open) {
        errno = ENOENT;
        raise_in(L, s, strerror(errno));
    }
    const sc_limits *lim = sc_limits_of(L);
    double max_time = lim ? lim->max_time : 0;
    sc_read rd = {.format = SC_READ_TEXT, .max_bytes = MAX_LENGTHS_FILE,
                  .deadline = max_time > 0 ? sc_clock_now() + max_time : 0};
    char err[384];
    sc_status st = sc_read_file(open, &rd, err, sizeof err);
    lua_pop(L, 1); /* the path opened (s is the caller's: still anchored) */
    if (st == SC_ERR_NOMEM)
        luaL_error(L, "not enough memory");
    if (st != SC_OK)
        raise_in(L, s, err);
    push_text(L, s, rd.text, rd.len, m, rd.text);
}

/* The list at idx (a table) as the program's lengths; name: where it came
 * from, for the messages. */
static void set_list(lua_State *L, int idx, sc_prog *pg, const char *name)
{
    idx = lua_absindex(L, idx);
    int m = sc_prog_microbatches(pg);
    lua_Integer n = luaL_len(L, idx);
    if (n != m) {
        lua_pushfstring(L, "%s has %I lengths for m = %d microbatches (one per microbatch)",
                        name, n, m);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    double *v = lua_newuserdatauv(L, (size_t)m * sizeof *v, 0);
    for (int i = 0; i < m; i++) {
        int ok;
        lua_geti(L, idx, i + 1);
        v[i] = lua_tonumberx(L, -1, &ok);
        if (!ok || !(v[i] > 0)) {
            lua_pushfstring(L, "%s: entry %d must be a number > 0 (got %s)", name, i + 1,
                            got(L, -1));
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        lua_pop(L, 1);
    }
    check(L, pg, sc_prog_set_lengths(pg, v, m));
    lua_pop(L, 1);
}

void sc_lua_set_lengths(lua_State *L, int t, sc_prog *pg)
{
    t = lua_absindex(L, t);
    int top = lua_gettop(L);
    int ty = lua_getfield(L, t, "lengths");
    if (ty == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        push_string(L, s, len, sc_prog_microbatches(pg));
        set_list(L, -1, pg, "program: 'lengths'");
        lua_pop(L, 2);
        return;
    }
    if (ty == LUA_TTABLE) {
        set_list(L, -1, pg, "program: 'lengths'");
        lua_pop(L, 1);
        return;
    }
    if (ty != LUA_TNIL) {
        lua_pushfstring(L, "program: 'lengths' must be a list of m numbers or a file name "
                        "(got %s)", got(L, -1));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    /* -D lengths=FILE of the recipe being evaluated (the prelude's
     * sc._plengths): on every program of its m, before its passes are
     * placed, so that a cap's fit sees the records' sizes */
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, "stagecraft") == LUA_TTABLE &&
        lua_getfield(L, -1, "_plengths") == LUA_TTABLE &&
        luaL_len(L, -1) == sc_prog_microbatches(pg))
        set_list(L, -1, pg, "-D lengths");
    lua_settop(L, top);
}

/* sc._lengths_read(value) -> list: a file name or "[...]" read (any count). */
static int l_lengths_read(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    push_string(L, s, len, 0);
    return 1;
}

/* sc._lengths(prog, list, name): sets them, unless the program has its own. */
int sc_lua_lengths(lua_State *L)
{
    /* (not sc_lua_toprog: tables.c calls this file) */
    sc_lprog *lp = luaL_testudata(L, 1, SC_PROGRAM_MT);
    if (!lp || !lp->pg)
        return luaL_argerror(L, 1, "an open Program expected");
    if (lua_type(L, 2) == LUA_TSTRING) { /* a name: read it */
        lua_pushcfunction(L, l_lengths_read);
        lua_pushvalue(L, 2);
        lua_call(L, 1, 1);
        lua_replace(L, 2);
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *name = luaL_optstring(L, 3, "lengths");
    if (sc_prog_lengths(lp->pg))
        return 0;
    set_list(L, 2, lp->pg, name);
    sc_sim_free(lp->sim); /* its figures were of alike microbatches */
    lp->sim = NULL;
    return 0;
}

int sc_lua_lengths_read(lua_State *L) { return l_lengths_read(L); }

/* sc.order_lengths(prog) -> table: the order of prog's lengths that the
 * planner keeps (plan/order.h), set on prog; {order = NAME, swaps = n,
 * makespan = x, given = y, tried = {NAME = x or false, ...}, lengths =
 * {...}}. */
int sc_lua_order_lengths(lua_State *L)
{
    sc_lprog *lp = luaL_testudata(L, 1, SC_PROGRAM_MT);
    if (!lp || !lp->pg)
        return luaL_argerror(L, 1, "an open Program expected");
    if (!sc_prog_lengths(lp->pg))
        return sc_lua_raise(L, SC_ERR_ARG, "order_lengths: the program has no lengths "
                                           "(lengths = {...} or -D lengths=FILE)");
    sc_sim_free(lp->sim); /* its figures were of the order it had */
    lp->sim = NULL;
    sc_len_order o;
    lua_createtable(L, 0, 6); /* before the C memory: nothing leaks on a raise below */
    sc_status st = sc_len_order_plan(lp->pg, &o);
    if (st != SC_OK)
        check(L, lp->pg, st);
    double *len = lua_newuserdatauv(L, (size_t)o.m * sizeof *len, 0);
    memcpy(len, o.lengths, (size_t)o.m * sizeof *len);
    double ms[SC_LORDER_COUNT];
    memcpy(ms, o.makespan, sizeof ms);
    int best = o.best, swaps = o.swaps, m = o.m;
    double final = o.final;
    sc_len_order_free(&o);
    lua_createtable(L, m, 0);
    for (int i = 0; i < m; i++) {
        lua_pushnumber(L, len[i]);
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -3, "lengths");
    lua_pop(L, 1);
    lua_pushstring(L, sc_len_order_name(best));
    lua_setfield(L, -2, "order");
    lua_pushinteger(L, swaps);
    lua_setfield(L, -2, "swaps");
    lua_pushnumber(L, final);
    lua_setfield(L, -2, "makespan");
    lua_pushnumber(L, ms[SC_LORDER_GIVEN]);
    lua_setfield(L, -2, "given");
    lua_createtable(L, 0, SC_LORDER_COUNT);
    for (int k = 0; k < SC_LORDER_COUNT; k++) {
        if (ms[k] < INFINITY)
            lua_pushnumber(L, ms[k]);
        else
            lua_pushboolean(L, 0);
        lua_setfield(L, -2, sc_len_order_name(k));
    }
    lua_setfield(L, -2, "tried");
    return 1;
}
