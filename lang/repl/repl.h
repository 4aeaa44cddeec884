/*
 * repl.h — the interactive REPL (docs/repl.md).
 *
 * On GNU readline when the build has it (history in $HOME/.stagecraft_history,
 * tab completion of globals and of the fields and methods of tables and
 * stagecraft objects), else on a plain fgets line reader. Each input is run
 * as "return INPUT" when that compiles, else as a chunk; an incomplete
 * chunk continues on the next line after the ">> " prompt. Values are
 * printed (Programs as p:summary()). Lines starting with ':' are commands:
 * ":help [topic]", ":quit". Ctrl-C interrupts a running evaluation, or
 * drops the line being typed, and the REPL goes on; Ctrl-D quits.
 *
 * sc_repl expects the module loaded as the global `sc` (sc_lua_setup) and
 * returns the exit code (0). It installs a SIGINT handler for its duration.
 *
 * Tested by: tests/py/repl_pty.py.
 */
#ifndef SC_REPL_H
#define SC_REPL_H

#include <lua.h>

int sc_repl(lua_State *L);

/* help.c: ":help [TOPIC]" on stdout; lists of recipes, rules, methods and
 * commands come from where they are defined, not from a copy. */
void sc_repl_help(lua_State *L, const char *topic);

#endif
