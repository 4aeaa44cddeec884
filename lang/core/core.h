/*
 * core.h — what every part of stagecraft's Lua surface stands on: the
 * module (lang/lua), the sandbox and limits (lang/sandbox), the command
 * line and the REPL.
 *
 * Exit codes travel with errors. A Lua error raised by stagecraft records
 * its exit code in the registry next to the error value, so that whoever
 * catches it (the command line, a message handler that rewrites it) can
 * choose the process's exit status (SPEC.md, "Errors and exit codes"):
 *
 *     lua_pushliteral(L, "unknown recipe 'x'");
 *     return sc_lua_throw(L, 2);            // usage error, exit 2
 *     ...
 *     int code = sc_lua_exit_for(L, -1);    // 2 for that value, 0 for others
 *
 * The stdlib recipes are compiled into the binary (tools/embed.c) and
 * reached by name here.
 */
#ifndef SC_CORE_H
#define SC_CORE_H

#include <lua.h>
#include <stddef.h>

#include "ir/ir.h"

/* Exit code of the error value at idx when stagecraft raised it (2 usage,
 * 3..7 as sc_status_exit_code, 8 recipe error, 10 sandbox), 0 for any
 * other error. */
int sc_lua_exit_for(lua_State *L, int idx);
/* Records that the error value at idx has this exit code (a message handler
 * that rewrites an error keeps its code this way). */
void sc_lua_mark(lua_State *L, int idx, int code);
void sc_lua_clear_status(lua_State *L);
/* Raises the value on the stack top with this exit code. */
int sc_lua_throw(lua_State *L, int code);
/* Raises msg with the caller's position and the exit code of st. */
int sc_lua_raise(lua_State *L, sc_status st, const char *msg);

/* Embedded stdlib recipes: source of `name`, or NULL. */
const char *sc_stdlib_source(const char *name, size_t *len);
/* Name of the i-th embedded file (NULL past the end). */
const char *sc_stdlib_name(int i);

#endif
