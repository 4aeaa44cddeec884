/*
 * recompute.c — the `recompute` field of sc.program
 * (docs/recompute.md) and the recomputation figures of a simulation.
 *
 *   recompute = "all"                                  -- a policy by name
 *   recompute = {policy = "selective", chunks = 1}
 *   recompute = {policy = "all", frac = 0.3, time = 0.1} -- partial: 30% for 10% of F
 *   recompute = {policy = "budget", mem = 4}
 *   recompute = function(ls) return ls.chunk == 0 end   -- per record
 */
#include "compile.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <math.h>
#include <string.h>

#include "fields.h"
#include "ir/recompute_cfg.h"

static const char *const policies[] = {"none", "all", "selective", "budget", "function", NULL};

void sc_lua_set_recompute(lua_State *L, int t, sc_prog *pg)
{
    sc_lua_policy_field f = {"recompute", policies, SC_RECOMPUTE_TABLE,
                             sc_fields_of(SC_FT_RECOMPUTE)};
    int policy = SC_RECOMPUTE_ALL, fn, tab;
    int v = sc_lua_read_policy(L, t, &f, &policy, &fn, &tab);
    if (!v)
        return;
    double limit = sc_prog_mem_limit(pg);
    sc_recompute_cfg c = {.policy = (sc_recompute_policy)policy, .chunks = 1, .frac = 1,
                          .time = -1, .mem = isfinite(limit) ? limit : 0};
    if (tab) {
        c.chunks = sc_lua_num_field(L, tab, "recompute", "chunks", c.chunks);
        c.frac = sc_lua_num_field(L, tab, "recompute", "frac", c.frac);
        c.time = sc_lua_num_field(L, tab, "recompute", "time", c.time);
        c.mem = sc_lua_mem_field(L, tab, pg, c.mem); /* units or bytes (mem.c) */
    }
    if (c.time < 0)
        c.time = c.frac; /* a recomputation of part of a record takes that part of F */
    if (fn) {
        sc_recompute_cfg none = c;
        none.policy = SC_RECOMPUTE_NONE;
        sc_lua_check_st(L, pg, sc_prog_set_recompute(pg, &none));
        sc_lua_record_fractions(L, fn, pg, "recompute", c.frac, 0,
                                sc_prog_set_recompute_fraction);
        c.policy = SC_RECOMPUTE_TABLE;
    }
    sc_lua_check_st(L, pg, sc_prog_set_recompute(pg, &c));
    lua_settop(L, v - 1);
}

int sc_lua_push_recompute(lua_State *L, const sc_prog *pg)
{
    const sc_recompute_info *ri = sc_prog_recompute_info(pg);
    const sc_recompute_cfg *c = sc_prog_recompute(pg);
    if (!ri)
        return 0;
    int P = sc_prog_devices(pg);
    lua_createtable(L, 0, 10);
    sc_lua_set_str(L, "policy", policies[c->policy]);
    sc_lua_set_num(L, "frac", c->frac);
    sc_lua_set_num(L, "time", c->time);
    sc_lua_set_int(L, "records", ri->records);
    sc_lua_set_num(L, "units", ri->units);
    sc_lua_set_num(L, "recompute_time", ri->time);
    sc_lua_push_numbers(L, ri->base_peak, P);
    lua_setfield(L, -2, "peak_without");
    sc_lua_push_numbers(L, ri->level, P);
    lua_setfield(L, -2, "chunks");
    lua_createtable(L, P, 0);
    for (int d = 0; d < P; d++) {
        lua_pushinteger(L, ri->count[d]);
        lua_seti(L, -2, d + 1);
    }
    lua_setfield(L, -2, "per_device");
    return 1;
}
