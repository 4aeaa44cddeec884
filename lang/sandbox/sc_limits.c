/*
 * sc_limits.c — the counting allocator and the count hook (sc_limits.h).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "sc_limits.h"

#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "ir/alloc.h"

#define LIMIT_ERR_KEY "stagecraft.limit_error"
/* Once a limit is hit, the heap may grow this much more, so that the
 * error, its message and a traceback can still be built. */
#define SLACK ((size_t)1 << 20)

static void hook(lua_State *L, lua_Debug *ar);

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 1 when the armed evaluation has run past its time limit. */
static int late(const sc_limits *lim)
{
    return lim->armed && lim->max_time > 0 && now() >= lim->deadline;
}

/* Lua's allocator contract: nsize == 0 frees; a shrink never fails. When
 * ptr is NULL, osize holds a type tag, not a size. A refused growth makes
 * Lua collect garbage and ask once more: a second refusal of the same size
 * is final, and that is when the limit counts as hit. */
static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sc_limits *lim = ud;
    if (!ptr)
        osize = 0;
    if (nsize == 0) {
        free(ptr);
        lim->used -= osize;
        return NULL;
    }
    if (nsize > osize && lim->max_mem) {
        /* Past a hit, and between evaluations (the command line's own
         * tables and strings, outside any pcall), SLACK more. */
        size_t cap = lim->max_mem + (lim->hit || !lim->armed ? SLACK : 0), grow = nsize - osize;
        size_t held = lim->used + lim->c_used;
        if (held > cap || grow > cap - held) {
            if (lim->refused == nsize && !lim->hit) {
                lim->hit = SC_LIMIT_MEM;
                if (lim->L) /* the next instruction raises (see hook) */
                    lua_sethook(lim->L, hook, LUA_MASKCOUNT, 1);
            }
            lim->refused = nsize;
            lim->refusals++;
            return NULL;
        }
    }
    void *p = realloc(ptr, nsize);
    if (!p)
        return nsize <= osize ? ptr : NULL;
    lim->refused = 0;
    lim->used = lim->used - osize + nsize;
    return p;
}

/* interp's allocator hook (ir/alloc.h): C memory against the same limit,
 * with no slack (C memory is what the limit is about, not messages). */
static int c_charge(void *ud, size_t bytes, int grow)
{
    sc_limits *lim = ud;
    if (!grow) {
        lim->c_used -= bytes < lim->c_used ? bytes : lim->c_used;
        return 1;
    }
    size_t held = lim->used + lim->c_used;
    if (lim->max_mem && (held > lim->max_mem || bytes > lim->max_mem - held)) {
        if (!lim->hit) {
            lim->hit = SC_LIMIT_MEM;
            if (lim->armed && lim->L) /* the next instruction raises (see hook) */
                lua_sethook(lim->L, hook, LUA_MASKCOUNT, 1);
        }
        return 0;
    }
    lim->c_used += bytes;
    return 1;
}

static sc_limits *hooked; /* the limits interp's allocator charges */

lua_State *sc_limits_newstate(sc_limits *lim)
{
    lim->used = 0;
    lim->c_used = 0;
    lim->L = NULL;
    lim->L = lua_newstate(counting_alloc, lim);
    if (lim->L) {
        hooked = lim;
        sc_alloc_hook(c_charge, lim);
    }
    return lim->L;
}

void sc_limits_use(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    if (lim && hooked != lim) {
        hooked = lim;
        sc_alloc_hook(c_charge, lim);
    }
}

void sc_limits_make_room(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    if (lim && lim->max_mem && lim->used + lim->c_used > lim->max_mem / 2)
        lua_gc(L, LUA_GCCOLLECT);
}

sc_limits *sc_limits_of(lua_State *L)
{
    void *ud;
    return lua_getallocf(L, &ud) == counting_alloc ? ud : NULL;
}

static void limit_message(const sc_limits *lim, char *buf, size_t len)
{
    if (lim->hit == SC_LIMIT_TIME)
        snprintf(buf, len,
                 "time limit exceeded: the evaluation ran longer than %g s (--max-time SECONDS "
                 "raises it; 0 for no limit)",
                 lim->max_time);
    else if (lim->hit == SC_LIMIT_STEPS)
        snprintf(buf, len,
                 "step limit exceeded: more than %lld Lua instructions (--max-steps N raises it; "
                 "0 for no limit)",
                 lim->max_steps);
    else
        snprintf(buf, len,
                 "memory limit exceeded: the Lua heap and the programs would grow past %zu bytes "
                 "(--max-mem BYTES raises it; 0 for no limit)",
                 lim->max_mem);
}

/* Raises the limit's error: the first time with the position where it
 * happened (the function at `level`), then the same value again wherever
 * Lua tries to go on. */
static int raise_limit(lua_State *L, sc_limits *lim, int level)
{
    lua_sethook(L, hook, LUA_MASKCOUNT, 1);
    if (lua_getfield(L, LUA_REGISTRYINDEX, LIMIT_ERR_KEY) != LUA_TSTRING) {
        lua_pop(L, 1);
        char msg[256];
        limit_message(lim, msg, sizeof msg);
        /* The position: the first frame from `level` up that is not the
         * stdlib's own (the prelude wraps sc.program and evaluates the
         * recipe), else none. */
        lua_Debug d;
        int at = -1;
        for (int k = level; at < 0 && lua_getstack(L, k, &d); k++)
            if (lua_getinfo(L, "Sl", &d) && d.currentline > 0 &&
                strncmp(d.source, "@stdlib/_", 9) != 0)
                at = k;
        if (at >= 0)
            luaL_where(L, at);
        else
            lua_pushliteral(L, "");
        lua_pushstring(L, msg);
        lua_concat(L, 2);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, LIMIT_ERR_KEY);
    }
    sc_lua_mark(L, -1, SC_EXIT_LIMIT);
    return lua_error(L);
}

static void hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    sc_limits *lim = sc_limits_of(L);
    if (!lim)
        return;
    lim->steps += SC_LIMIT_PERIOD;
    if (!lim->hit && lim->max_steps && lim->steps > lim->max_steps)
        lim->hit = SC_LIMIT_STEPS;
    if (!lim->hit && late(lim))
        lim->hit = SC_LIMIT_TIME;
    if (lim->hit)
        raise_limit(L, lim, 0);
}

/* ---- library functions whose C loops the count hook cannot see ----------
 * Each wrapper checks its arguments and calls the original (upvalue 1). */

/* 1 when a limit was hit or the time is up: the evaluation is over. */
static int ended(const sc_limits *lim)
{
    return lim && (lim->hit || late(lim));
}

void sc_limits_charge(lua_State *L, unsigned long long n)
{
    sc_limits *lim = sc_limits_of(L);
    if (!lim || !lim->armed)
        return;
    long long room = lim->max_steps - lim->steps;
    if (lim->max_steps && (room <= 0 || n > (unsigned long long)room)) {
        lim->steps = lim->max_steps + 1;
        if (!lim->hit)
            lim->hit = SC_LIMIT_STEPS;
    } else if (n < (unsigned long long)LLONG_MAX - (unsigned long long)lim->steps) {
        lim->steps += (long long)n;
    }
    if (!lim->hit && late(lim))
        lim->hit = SC_LIMIT_TIME;
    if (lim->hit)
        raise_limit(L, lim, 1);
}

static int call_original(lua_State *L, int nresults)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, nresults);
    return lua_gettop(L);
}

/* The original called like call_original, but an error it raises keeps the
 * position of the recipe's line: the original reports the caller's line
 * (luaL_where of level 1), which is now this C guard, without a line
 * ("resulting string too large" alone). Errors of stagecraft's own (an
 * exit code: the limits), non-string values and errors other than
 * LUA_ERRRUN go on unchanged. Upvalues: the original, its name. */
static int call_original_where(lua_State *L, int nresults)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    int rc = lua_pcall(L, n, nresults, 0);
    if (rc == LUA_OK)
        return lua_gettop(L);
    if (rc == LUA_ERRRUN && lua_type(L, -1) == LUA_TSTRING && sc_lua_exit_for(L, -1) == 0 &&
        !ended(sc_limits_of(L))) {
        luaL_where(L, 1);
        size_t lw;
        const char *w = lua_tolstring(L, -1, &lw);
        if (lw > 0 && strncmp(lua_tostring(L, -2), w, lw) != 0) {
            lua_insert(L, -2);
            lua_concat(L, 2);
        } else {
            lua_pop(L, 1);
        }
        /* "bad argument #5 to '?'": the original has no name when a C
         * function calls it; the guard knows it (upvalue 2). */
        const char *name = lua_tostring(L, lua_upvalueindex(2));
        if (name) {
            lua_pushfstring(L, "to '%s'", name);
            luaL_gsub(L, lua_tostring(L, -2), "to '?'", lua_tostring(L, -1));
            lua_replace(L, -3);
            lua_pop(L, 1);
        }
    }
    return lua_error(L);
}

/* The message handler given to xpcall, wrapped: Lua runs it inside the
 * count hook when the hook raised, that is with hooks off, where no limit
 * could stop a handler that loops. Once a limit is hit, the error goes on
 * as it is and the handler is not called. */
static int guarded_handler(lua_State *L)
{
    if (ended(sc_limits_of(L)))
        return 1;
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

static int g_xpcall(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, guarded_handler, 1);
    lua_replace(L, 2);
    return call_original(L, LUA_MULTRET);
}

/* string.rep(s, n [, sep]): an empty result comes at once (the original
 * loops n times, up to 2^63, copying nothing); other results are bounded
 * by the memory limit. */
static int g_rep(lua_State *L)
{
    size_t l, lsep;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n > 0 && l == 0 && lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    return call_original_where(L, 1);
}

/* table.move(a1, f, e, t [, a2]): e - f + 1 elements, one instruction each. */
static int g_move(lua_State *L)
{
    lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);
    if (e >= f)
        sc_limits_charge(L, (unsigned long long)e - (unsigned long long)f + 1u);
    return call_original_where(L, LUA_MULTRET);
}

/* table.insert(t, pos, v) and table.remove(t, pos) shift #t - pos
 * elements (#t may come from __len). */
static int g_shift(lua_State *L, int with_pos)
{
    if (with_pos && lua_type(L, 1) == LUA_TTABLE && lua_isinteger(L, 2)) {
        lua_Integer len = luaL_len(L, 1), pos = lua_tointeger(L, 2);
        if (len > pos)
            sc_limits_charge(L, (unsigned long long)len - (unsigned long long)pos);
    }
    return call_original_where(L, LUA_MULTRET);
}

/* table.sort(t [, comp]): n·log2(n) comparisons at most, counted before
 * (a comparator written in Lua counts its own instructions as well). */
static int g_sort(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TTABLE) {
        lua_Integer n = luaL_len(L, 1);
        unsigned long long cost = n > 1 ? (unsigned long long)n : 0;
        for (lua_Integer k = n; k > 1; k >>= 1)
            cost += (unsigned long long)n;
        sc_limits_charge(L, cost);
    }
    return call_original_where(L, LUA_MULTRET);
}

/* string.find, match, gmatch, gsub: pattern.c's matcher (upvalue 1), which
 * counts its steps; under call_original_where for the recipe's line. */
static int g_pattern(lua_State *L) { return call_original_where(L, LUA_MULTRET); }

static int g_insert(lua_State *L) { return g_shift(L, lua_gettop(L) == 3); }
static int g_remove(lua_State *L) { return g_shift(L, lua_gettop(L) == 2); }

void sc_limits_guard(lua_State *L)
{
    static const struct {
        const char *lib, *name;
        lua_CFunction fn;
    } guards[] = {
        {NULL, "xpcall", g_xpcall},       {"string", "rep", g_rep},
        {"table", "move", g_move},         {"table", "insert", g_insert},
        {"table", "remove", g_remove},   {"table", "sort", g_sort},
        {"string", "find", g_pattern},    {"string", "match", g_pattern},
        {"string", "gmatch", g_pattern},  {"string", "gsub", g_pattern},
    };
    for (size_t i = 0; i < sizeof guards / sizeof guards[0]; i++) {
        if (guards[i].lib) {
            if (lua_getglobal(L, guards[i].lib) != LUA_TTABLE) {
                lua_pop(L, 1);
                continue;
            }
        } else {
            lua_pushglobaltable(L);
        }
        if (lua_getfield(L, -1, guards[i].name) == LUA_TFUNCTION) {
            if (guards[i].fn == g_pattern) { /* not the original: the counting matcher */
                lua_pop(L, 1);
                lua_pushcfunction(L, sc_pattern_function(guards[i].name));
                lua_pushfstring(L, "%s.%s", guards[i].lib, guards[i].name); /* as Lua names it */
            } else {
                lua_pushstring(L, guards[i].name);
            }
            lua_pushcclosure(L, guards[i].fn, 2);
            lua_setfield(L, -2, guards[i].name);
        } else {
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
}

void sc_limits_arm(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    if (!lim)
        return;
    if (lim->armed) { /* a call inside the evaluation: its rest, not a new one */
        lim->armed++;
        return;
    }
    lim->steps = 0;
    lim->hit = SC_LIMIT_NONE;
    lim->refused = 0;
    lim->refusals = 0;
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LIMIT_ERR_KEY);
    if (lim->max_steps || lim->max_mem || lim->max_time > 0)
        lua_sethook(L, hook, LUA_MASKCOUNT, SC_LIMIT_PERIOD);
    else
        lua_sethook(L, NULL, 0, 0);
    lim->deadline = now() + lim->max_time;
    lim->armed = 1; /* last: the registry's key above may allocate */
    if (lim->backstop && lim->max_time > 0)
        lim->backstop(lim, 1);
}

void sc_limits_disarm(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    if (lim && lim->armed > 0 && --lim->armed == 0 && lim->backstop)
        lim->backstop(lim, 0);
}

void sc_limits_close(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    if (lim)
        lim->armed = 0; /* fresh limits, whatever was left armed */
    sc_limits_arm(L);
    lua_close(L);
    if (lim && lim->backstop)
        lim->backstop(lim, 0);
    if (lim && hooked == lim) { /* programs that outlive the state are not counted */
        sc_alloc_hook(NULL, NULL);
        hooked = NULL;
    }
}

int sc_limits_raise_here(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    if (!lim || !lim->hit)
        return 0;
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LIMIT_ERR_KEY);
    return raise_limit(L, lim, 1);
}

void sc_limits_describe(const sc_limits *lim, sc_limit_kind kind, char *buf, size_t len)
{
    sc_limits t = *lim;
    t.hit = kind;
    limit_message(&t, buf, len);
}

int sc_limits_message(const sc_limits *lim, char *buf, size_t len)
{
    if (!lim || !lim->hit)
        return 0;
    limit_message(lim, buf, len);
    return 1;
}

int sc_limits_hit(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    return lim && lim->hit;
}

int sc_limits_error(lua_State *L)
{
    sc_limits *lim = sc_limits_of(L);
    if (!lim)
        return 0;
    /* A memory error that was refused once only (Lua could not collect
     * and retry) is the memory limit too. */
    if (!lim->hit && lim->refusals && lua_type(L, -1) == LUA_TSTRING &&
        strcmp(lua_tostring(L, -1), "not enough memory") == 0)
        lim->hit = SC_LIMIT_MEM;
    if (!lim->hit)
        return 0;
    lua_pop(L, 1);
    if (lua_getfield(L, LUA_REGISTRYINDEX, LIMIT_ERR_KEY) != LUA_TSTRING) {
        lua_pop(L, 1);
        char msg[256];
        limit_message(lim, msg, sizeof msg);
        lua_pushstring(L, msg);
    }
    sc_lua_mark(L, -1, SC_EXIT_LIMIT);
    return 1;
}

/* Parses a count: digits, optionally in exponent form (1e9), with an
 * optional K, M or G suffix when bytes; 0 on success. */
static int parse_count(const char *s, int bytes, unsigned long long *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || v > 9e18)
        return -1;
    if (bytes && *end) {
        const char *units = "KMG";
        const char *u = strchr(units, *end >= 'a' ? *end - 32 : *end);
        if (!u)
            return -1;
        for (long k = u - units; k >= 0; k--)
            v *= 1024;
        end++;
        if (*end == 'B' || *end == 'b')
            end++;
    }
    if (*end || v > 9e18 || v != (double)(unsigned long long)v)
        return -1;
    *out = (unsigned long long)v;
    return 0;
}

int sc_limits_option(sc_limits *lim, int argc, char **argv, int i, char *err, size_t errlen)
{
    static const char *const names[] = {"--max-steps", "--max-mem", "--max-time"};
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(names[k]);
        if (strncmp(argv[i], names[k], n) != 0 || (argv[i][n] && argv[i][n] != '='))
            continue;
        const char *val = argv[i][n] ? argv[i] + n + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        static const char *const what[] = {
            "a number of Lua instructions (like 1000000 or 1e9; 0 for no limit)",
            "a size in bytes (like 65536, 64M or 2G; 0 for no limit)",
            "a number of seconds (like 10 or 0.5; 0 for no limit)"};
        unsigned long long v = 0;
        char *end = NULL;
        double secs = k == 2 && val ? strtod(val, &end) : 0;
        if (!val || (k < 2 && parse_count(val, k == 1, &v) != 0) ||
            (k == 2 && (end == val || *end || !(secs >= 0 && secs <= 1e6)))) {
            snprintf(err, errlen, "%s needs %s", names[k], what[k]);
            return -1;
        }
        if (k == 0)
            lim->max_steps = (long long)v;
        else if (k == 1)
            lim->max_mem = (size_t)v;
        else
            lim->max_time = secs;
        return argv[i][n] ? 1 : 2;
    }
    return 0;
}
