/*
 * offload.c — the `offload` field of sc.program (docs/offload.md) and
 * the offload figures of a simulation, for prog:sim() and the command line.
 *
 *   offload = "all"                                   -- a policy by name
 *   offload = {policy = "selective", chunks = 2, ratio = 0.1, shared = true}
 *   offload = {policy = "budget", mem = 4}
 *   offload = function(ls) return ls.chunk == 0 and 1 or 0 end   -- per record
 */
#include "compile.h"
#include "sc_lua_impl.h"
#include "fields.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/offload_cfg.h"

static const char *const policies[] = {"none", "all", "selective", "budget", NULL};

void sc_lua_set_offload(lua_State *L, int t, sc_prog *pg)
{
    sc_lua_policy_field f = {"offload", policies, 4, sc_fields_of(SC_FT_OFFLOAD)};
    int policy = SC_OFFLOAD_ALL, fn, tab;
    int v = sc_lua_read_policy(L, t, &f, &policy, &fn, &tab);
    if (!v)
        return;
    double limit = sc_prog_mem_limit(pg);
    sc_offload_cfg c = {.policy = (sc_offload_policy)policy, .chunks = 1,
                        .ratio = SC_OFFLOAD_RATIO, .mem = isfinite(limit) ? limit : 0};
    if (tab) {
        c.chunks = sc_lua_num_field(L, tab, "offload", "chunks", c.chunks);
        c.ratio = sc_lua_num_field(L, tab, "offload", "ratio", c.ratio);
        c.mem = sc_lua_mem_field(L, tab, pg, c.mem); /* units or bytes (mem.c) */
        c.margin = sc_lua_num_field(L, tab, "offload", "margin", c.margin);
        lua_getfield(L, tab, "shared");
        c.shared = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    if (fn) {
        /* The ratio times the records' moves (their `transfer`): set first. */
        sc_offload_cfg none = c;
        none.policy = SC_OFFLOAD_NONE;
        sc_lua_check_st(L, pg, sc_prog_set_offload(pg, &none));
        sc_lua_record_fractions(L, fn, pg, "offload", 1, 1, sc_prog_set_offload_fraction);
        c.policy = SC_OFFLOAD_TABLE;
    }
    sc_lua_check_st(L, pg, sc_prog_set_offload(pg, &c));
    lua_settop(L, v - 1);
}

static const char *const info_policies[] = {"none", "all", "selective", "budget", "function"};

int sc_lua_push_offload(lua_State *L, const sc_prog *pg, const sc_sim *sim)
{
    const sc_offload_info *oi = sc_prog_offload_info(pg);
    const sc_offload_cfg *c = sc_prog_offload(pg);
    if (!oi && !sim->host_peak)
        return 0;
    int P = sim->P;
    lua_createtable(L, 0, 16);
    sc_lua_set_str(L, "policy", info_policies[c->policy]);
    sc_lua_set_num(L, "ratio", c->ratio);
    lua_pushboolean(L, c->shared);
    lua_setfield(L, -2, "shared_link");
    if (oi) {
        static const char *const counts[] = {"records", "moved", "skipped", "backed_off"};
        int cv[] = {oi->records, oi->moved, oi->skipped, oi->backed_off};
        for (int k = 0; k < 4; k++) {
            lua_pushinteger(L, cv[k]);
            lua_setfield(L, -2, counts[k]);
        }
        sc_lua_push_numbers(L, oi->base_peak, P);
        lua_setfield(L, -2, "peak_without");
        sc_lua_push_numbers(L, oi->level, P);
        lua_setfield(L, -2, "chunks");
    }
    sc_lua_set_num(L, "units_moved", sim->moved);
    double hmax = 0;
    if (sim->host_peak) {
        for (int d = 0; d < P; d++)
            hmax = fmax(hmax, sim->host_peak[d]);
        sc_lua_push_numbers(L, sim->host_peak, P);
    } else {
        lua_createtable(L, P, 0);
        for (int d = 0; d < P; d++) {
            lua_pushnumber(L, 0);
            lua_seti(L, -2, d + 1);
        }
    }
    lua_setfield(L, -2, "host_peak");
    sc_lua_set_num(L, "host_peak_max", hmax);
    /* Busy fraction of each channel over the makespan, and its usage in
     * SC_USAGE_BINS equal slices of the step. */
    double span = sim->makespan > 0 ? sim->makespan : 1;
    static const char *const dirs[] = {"d2h", "h2d"};
    lua_createtable(L, 0, 2);
    for (int k = 0; k < 2; k++) {
        lua_createtable(L, P, 0);
        for (int d = 0; d < P; d++) {
            lua_pushnumber(L, sim->link_busy ? sim->link_busy[2 * d + k] / span : 0);
            lua_seti(L, -2, d + 1);
        }
        lua_setfield(L, -2, dirs[k]);
    }
    lua_setfield(L, -2, "link_busy");
    lua_createtable(L, 0, 2);
    double *bins = lua_newuserdatauv(L, SC_USAGE_BINS * sizeof(double), 0);
    for (int k = 0; k < 2; k++) {
        lua_createtable(L, P, 0);
        for (int d = 0; d < P; d++) {
            sc_sim_link_usage(pg, sim, d, k, SC_USAGE_BINS, bins);
            sc_lua_push_numbers(L, bins, SC_USAGE_BINS);
            lua_seti(L, -2, d + 1);
        }
        lua_setfield(L, -3, dirs[k]);
    }
    lua_pop(L, 1);
    lua_setfield(L, -2, "link_usage");
    return 1;
}
