/*
 * pattern.h — string.find, string.match, string.gmatch and string.gsub on
 * a matcher that counts its steps against the limits (pattern.c).
 * Tested by: tests/sandbox.sh, which holds it against stock lua5.4 with
 * tests/lua/pattern_diff.lua).
 *
 *   sc_limits_guard(L);
 *   sc_pattern_open(L);     // before sc_sandbox_init: every sandbox copies them
 */
#ifndef SC_PATTERN_H
#define SC_PATTERN_H

#include <lua.h>

/* Puts the counting matcher's four functions in the global string table
 * (string methods use it too), each under sc_limits_wrap. */
void sc_pattern_open(lua_State *L);

#endif
