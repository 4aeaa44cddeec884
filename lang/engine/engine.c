/*
 * engine.c — the engine's errors, its runtime hooks, and evaluating a
 * recipe on a context (engine.h). The error of a call lives in the
 * caller's sc_eng_err (sc_eng_catch): the engine records, the front end
 * shows.
 */
#include "engine.h"

#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lua/sc_lua.h"
#include "sandbox/sc_limits.h"

static sc_eng_err fallback; /* a call outside any sc_eng_catch: kept, not shown */
static sc_eng_err *cur = &fallback;
static const sc_eng_runtime *runtime_ops;
static int guard_stdout;

sc_eng_err *sc_eng_catch(sc_eng_err *e)
{
    sc_eng_err *prev = cur;
    e->code = 0;
    e->msg[0] = 0;
    cur = e;
    return prev;
}

void sc_eng_release(sc_eng_err *prev) { cur = prev ? prev : &fallback; }

int sc_eng_fail(int code, const char *msg)
{
    if (!cur->msg[0] && !cur->code) { /* the first error: the one that stopped the call */
        cur->code = code;
        snprintf(cur->msg, sizeof cur->msg, "%s", msg ? msg : "error");
    }
    return code;
}

int sc_eng_failf(int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sc_eng_fail(code, msg);
}

int sc_eng_vstatus_fail(const sc_limits *lim, sc_status st, const char *fmt, va_list ap)
{
    char msg[1024];
    if (st == SC_ERR_NOMEM && lim && sc_limits_message(lim, msg, sizeof msg))
        return sc_eng_fail(SC_EXIT_LIMIT, msg);
    vsnprintf(msg, sizeof msg, fmt, ap);
    return sc_eng_fail(sc_status_exit_code(st), msg);
}

int sc_eng_status_fail(lua_State *L, sc_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = sc_eng_vstatus_fail(sc_limits_of(L), st, fmt, ap);
    va_end(ap);
    return code;
}

int sc_eng_lua_fail(lua_State *L)
{
    sc_limits_error(L);
    int code = sc_lua_exit_for(L, -1);
    const char *msg = lua_tostring(L, -1);
    code = sc_eng_fail(code ? code : SC_EXIT_RECIPE, msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
    return code;
}

void sc_eng_push_module(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_istable(L, -1)) {
        if (lua_getfield(L, -1, "stagecraft") == LUA_TTABLE) {
            lua_remove(L, -2);
            return;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_getglobal(L, "sc");
}

void sc_eng_set_runtime(const sc_eng_runtime *rt) { runtime_ops = rt; }
const sc_eng_runtime *sc_eng_runtime_ops(void) { return runtime_ops; }
void sc_eng_guard_stdout(int on) { guard_stdout = on; }

void sc_eng_grant(lua_State *L, const char *name, size_t nlen, const char *value)
{
    if (!*value || !((nlen == 5 && strncmp(name, "costs", 5) == 0) ||
                     (nlen == 5 && strncmp(name, "model", 5) == 0) ||
                     (nlen == 7 && strncmp(name, "lengths", 7) == 0)))
        return;
    sc_eng_push_module(L);
    if (lua_getfield(L, -1, "_granted") == LUA_TTABLE) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, value);
    }
    lua_pop(L, 2);
}

void sc_eng_set_time_limit(lua_State *L, double seconds)
{
    sc_eng_push_module(L); /* read by auto.c */
    lua_pushnumber(L, seconds);
    lua_setfield(L, -2, "_time_limit");
    lua_pop(L, 1);
}

/* Calls sc._evaluate(recipe, overrides at t, listing): pushes 3 results. */
int sc_eng_evaluate(lua_State *L, const char *recipe, int t, int listing)
{
    sc_eng_push_module(L);
    lua_getfield(L, -1, "_evaluate");
    lua_remove(L, -2);
    lua_pushstring(L, recipe);
    if (t)
        lua_pushvalue(L, t);
    else
        lua_newtable(L);
    lua_pushboolean(L, listing);
    /* On the command line what the recipe writes (print, and with --trust
     * io.write or a child process) goes to stderr: stdout carries the
     * command's own output only, so that a recipe cannot forge rows of an
     * export or fields of sim --json. */
    int failed = 0, saved = -1, was_closed = 0, moved = 0;
    if (guard_stdout) {
        failed = fflush(stdout) != 0 || ferror(stdout); /* the command's own output */
        saved = dup(STDOUT_FILENO), was_closed = saved < 0 && errno == EBADF;
        moved = (saved >= 0 || was_closed) && dup2(STDERR_FILENO, STDOUT_FILENO) >= 0;
    }
    sc_limits_arm(L);
    int rc = lua_pcall(L, 3, 3, 0);
    sc_limits_disarm(L);
    if (guard_stdout) {
        fflush(stdout);
        if (moved) {
            if (saved >= 0)
                dup2(saved, STDOUT_FILENO);
            else
                close(STDOUT_FILENO);
        }
        if (saved >= 0)
            close(saved);
        if (!failed)
            clearerr(stdout); /* a failed write of the recipe's is not the command's */
    }
    if (rc == LUA_OK && sc_limits_hit(L)) { /* hit, and caught by the recipe */
        lua_pop(L, 3);
        lua_pushliteral(L, "limit");
        rc = LUA_ERRRUN;
    }
    return rc;
}
