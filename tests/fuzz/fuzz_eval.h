/*
 * fuzz_eval.h — what the recipe harnesses share: evaluating a recipe as
 * `stagecraft check` does (sc._evaluate, with limits), its source supplied
 * by the harness through sc._chunk.
 *
 *   int ok = fuzz_evaluate(L, "fuzz.lua", my_chunk);
 *   // ok: the Program and its figures on the stack; else the error (limits
 *   // reported as errors), and sc_lua_exit_for has classified it
 *
 * chunk is called as sc._chunk(name, ...) with the original loader as its
 * upvalue 1, for names the harness does not serve (sc.load("1f1b")).
 */
#ifndef SC_FUZZ_EVAL_H
#define SC_FUZZ_EVAL_H

#include <lua.h>

#include "lua/sc_lua.h"
#include "sandbox/sc_limits.h"

static inline int fuzz_evaluate(lua_State *L, const char *name, lua_CFunction chunk)
{
    lua_getglobal(L, "sc");
    lua_getfield(L, -1, "_chunk");
    lua_pushcclosure(L, chunk, 1);
    lua_setfield(L, -2, "_chunk");
    lua_getfield(L, -1, "_evaluate");
    lua_pushstring(L, name);
    lua_newtable(L);
    lua_pushboolean(L, 0);
    sc_limits_arm(L);
    if (lua_pcall(L, 3, 3, 0) != LUA_OK) {
        sc_limits_error(L);
        (void)sc_lua_exit_for(L, -1);
        return 0;
    }
    return !sc_limits_hit(L);
}

#endif
