/*
 * core.h — what every part of stagecraft's Lua surface stands on: the
 * module (lang/lua), the sandbox and limits (lang/sandbox), the command
 * line and the REPL.
 *
 * Exit codes travel with errors. A Lua error raised by stagecraft records
 * its exit code in the registry next to the error value, so that whoever
 * catches it (the command line, a message handler that rewrites it) can
 * choose the process's exit status (docs/errors.md):
 *
 *     lua_pushliteral(L, "unknown recipe 'x'");
 *     return sc_lua_throw(L, SC_EXIT_USAGE);  // usage error, exit 2
 *     ...
 *     int code = sc_lua_exit_for(L, -1);    // 2 for that value, 0 for others
 *
 * The stdlib recipes are compiled into the binary (tools/embed.c) and
 * reached by name here.
 *
 * Tested by: tests/errors.sh, tests/ux.sh.
 */
#ifndef SC_CORE_H
#define SC_CORE_H

#include <lua.h>
#include <stddef.h>
#include <stdio.h>

#include "ir/ir.h"

/* The version of the language and its module (sc.version,
 * docs/language.md#the-program-type-and-the-module). A recipe written for X.Y
 * runs on every later X.Z (sc.need_version). */
#define SC_VERSION "0.2.0"

/* Exit code of the error value at idx when stagecraft raised it (one of
 * SC_EXITS, interp/ir/ir.h), 0 for any other error. */
int sc_lua_exit_for(lua_State *L, int idx);
/* Records that the error value at idx has this exit code (a message handler
 * that rewrites an error keeps its code this way). */
void sc_lua_mark(lua_State *L, int idx, int code);
void sc_lua_clear_status(lua_State *L);
/* Raises the value on the stack top with this exit code. */
int sc_lua_throw(lua_State *L, int code);
/* Raises msg with the caller's position and the exit code of st. */
int sc_lua_raise(lua_State *L, sc_status st, const char *msg);
/* The same with the message printf makes of fmt (at most 255 bytes). */
int sc_lua_raisef(lua_State *L, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Pushes "FILE:LINE: " of the recipe's line that led here: the first
 * caller that is neither C nor the module's Lua half (stdlib/_*.lua), so
 * that a message raised inside the prelude names the recipe; else Lua's
 * luaL_where(L, 1). A C function tail-called from a recipe still sees the
 * recipe's frame (a Lua function tail-called does not: sc._at). */
void sc_lua_recipe_where(lua_State *L);

/* Files a user names (recipes, scripts, their dofile/require, cost files,
 * CSV files to import) are opened without waiting: a FIFO that no process
 * writes, or a device that waits for one, would hold open() forever. They
 * are opened with O_NONBLOCK, which is then cleared, so that such a file
 * reads as empty (a FIFO with a writer reads as usual).
 * sc_fopen_read: fopen(path, "rb") that way; NULL with errno. */
FILE *sc_fopen_read(const char *path);
/* luaL_loadfilex(L, path, mode) through sc_fopen_read (the same chunk name
 * "@path", a first '#' line and a UTF-8 byte order mark skipped, the same
 * "cannot open PATH: reason" / "cannot read PATH" and LUA_ERRFILE). */
int sc_loadfile(lua_State *L, const char *path, const char *mode);

/* Embedded stdlib recipes: source of `name`, or NULL. */
const char *sc_stdlib_source(const char *name, size_t *len);
/* Pushes the chunk of the embedded file `name` ("1f1b", "_prelude"), named
 * "@stdlib/NAME.lua", from the bytecode compiled at build time (its debug
 * information kept: errors name the file and line), or from its source
 * when this Lua refuses that bytecode; LUA_OK, or an error status with the
 * message pushed (as luaL_loadbufferx). */
int sc_stdlib_load(lua_State *L, const char *name);
/* Name of the i-th embedded file (NULL past the end). */
const char *sc_stdlib_name(int i);

/* ---- text for people (names.c) ------------------------------------------ */

/* "Did you mean": the candidates nearest to `word` (a typo: at most 2 edits
 * of the optimal string alignment distance, fewer for short words, ignoring
 * case; or one is a prefix of the other, followed by '_' or '-', with at
 * least 3 letters in common). Writes up to `max` of those at the least
 * distance (in the candidates' order) into out; returns how many.
 *
 *     const char *cmds[] = {"list", "check", "sim", "show"}, *near[3];
 *     int k = sc_near_names("simm", cmds, 4, near, 3);   // 1: "sim"
 */
int sc_near_names(const char *word, const char *const *cands, int n, const char **out, int max);
/* Writes "did you mean 'a'?" or "did you mean 'a' or 'b'?" into buf (an
 * empty string when nothing is near); returns 1 when it wrote a hint. */
int sc_did_you_mean(char *buf, size_t len, const char *word, const char *const *cands, int n);

/* Text a recipe makes stagecraft print (doc strings, parameter names and
 * descriptions, error messages), made safe for a terminal: tabs and line
 * breaks become spaces (keep_newlines: '\n' stays), every other control
 * character (C0, DEL, C1) and every byte that is not valid UTF-8 becomes
 * '?'. An escape sequence cannot clear the screen or write the clipboard
 * then. Writes at most len-1 bytes and a NUL; returns out. */
char *sc_clean_text(char *out, size_t len, const char *in, int keep_newlines);
/* fputs of the cleaned text, any length. */
void sc_fputs_clean(const char *s, FILE *f, int keep_newlines);
/* The error channel of programs that drive stagecraft (the Python
 * package): the descriptor STAGECRAFT_ERROR_FD names (above 2), or -1.
 * Every "stagecraft: error: ..." line is written there too, in one
 * write. A sandboxed recipe can write to stderr (print) but to no
 * descriptor, so what arrives there is stagecraft's own
 * (docs/interchange.md#python). */
int sc_error_fd(void);

#endif
