/*
 * sc_lua.h — the Lua surface of stagecraft: the module table `stagecraft`
 * (global `sc` in recipes) and the Program userdata.
 *
 *   local P = sc.params{ doc = "my schedule", {"p", 4, "devices"}, sc.COSTS }
 *   return sc.program{ p = P.p, m = 8, rule = "1f1b" }
 *
 * docs/ (SPEC.md is its index) is the reference of every field and method.
 * Errors raised here carry the recipe's file and line (luaL_error) and record
 * an sc_status in the registry so that the command line can choose the exit
 * code (sc_lua_exit_for).
 *
 * Tested by: tests/lua/test_dsl.lua, tests/fuzz/fuzz_program.c.
 */
#ifndef SC_LUA_H
#define SC_LUA_H

#include <lua.h>

#include "core/core.h"
#include "ir/ir.h"
#include "sim/sim.h"

#define SC_PROGRAM_MT "stagecraft.Program"

/* Opens the module; leaves it on the stack. The module of stagecraft.so
 * for a host's Lua (`require "stagecraft"` in stock lua5.4,
 * docs/embed.md#the-lua-module; its entry luaopen_stagecraft is the
 * engine's, lang/engine/engine.h, which adds sc.plan and sc.compare): it
 * also sets up the sandbox that sc.load evaluates recipes in. stagecraft's
 * own states use sc_lua_setup (and sc_eng_setup). */
int sc_lua_open_host(lua_State *L);
int luaopen_stagecraft(lua_State *L);

/* Opens the Lua standard libraries and the module as global `sc` and as
 * package.loaded.stagecraft, with the stdlib's helper modules preloaded. */
void sc_lua_setup(lua_State *L);

/* Program userdata: the program, its last simulation, where it was built. */
typedef struct sc_lprog {
    sc_prog *pg;
    sc_sim *sim;
    char where[160]; /* "file.lua:12:" of the sc.program call */
} sc_lprog;

/* The Program at index i, or NULL if it is not one. */
sc_lprog *sc_lua_toprog(lua_State *L, int i);
/* Lowers and verifies (once); returns the status, message in sc_errmsg. */
sc_status sc_lua_check(sc_lprog *lp);
/* Simulates (once); NULL with status in *st on failure. */
const sc_sim *sc_lua_sim(sc_lprog *lp, sc_status *st);
/* Sets the program's point-to-point mode (SC_P2P_*, docs/semantics.md#modes;
 * --comm) and drops its simulation. */
sc_status sc_lua_set_comm(sc_lprog *lp, int mode);
/* Sets what the program is lowered for (SC_LOWER_*, ir/p2p.h: a
 * compute_comms file or the streams); another target drops its simulation. */
sc_status sc_lua_set_lower_target(sc_lprog *lp, int target);

/* Balance of a simulation: idle[d] = 1 - busy[d] / makespan, the share of
 * the step device d computes nothing (the bubble rate, the papers' figure,
 * counts each device from its first pass and hides a slow stage: a device
 * that idles 30% can sit beside a bubble rate of 0). Returns the
 * bottleneck: the lowest-numbered device with the largest busy time, or -1
 * when every device is equally busy (within 1e-9 of the largest). */
int sc_lua_balance(const sc_sim *sim, double *idle);

#endif
