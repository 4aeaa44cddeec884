/*
 * auto.h — the Lua surface of the automatic scheduler (interp/
 * autosched.h): the `auto` source of sc.program and the figures it leaves.
 *
 *   local prog, fig = sc.autoschedule{ p = 8, m = 24, tf = 29850, tb = 29767,
 *                                      tw = 18868, tcomm = 466, w_keep = 0.5,
 *                                      mem = 16, seed = 1, time_limit = 1 }
 *   print(fig.method, fig.bubble_rate, fig.heuristic.bubble_rate)
 *
 * sc.autoschedule (stdlib/_prelude.lua) calls sc.program with
 * auto = {mem, seed, time_limit, objective, max_evals, where};
 * docs/blocks.md#automatic-schedules documents both.
 *
 * Tested by: tests/lua/test_auto.lua.
 */
#ifndef SC_AUTO_LUA_H
#define SC_AUTO_LUA_H

#include <lua.h>

/* Fills the program of the userdata at ud from the `auto` field of the
 * table at t, and keeps the figures as the userdata's user value 1. Raises
 * (with the exit code of the status) on a bad field or a failed search.
 * The module fields sc._time_limit (a number: overrides time_limit) and
 * sc._progress (true: a progress bar on stderr after 1 s) are read. */
void sc_lua_auto(lua_State *L, int t, int ud);

/* sc._autoinfo(prog): the figures of an automatic schedule, or nil. */
int sc_lua_autoinfo(lua_State *L);
/* sc._sim_floor(prog): a floor under prog:sim().makespan found without
 * lowering (compile.h's sc_sim_floor), or nil where none is known. */
int sc_lua_sim_floor(lua_State *L);
/* sc._errcode(err): the exit code recorded for an error value (0: none). */
int sc_lua_errcode(lua_State *L);

#endif
