/*
 * sc_offload_lua.c — the `offload` field of sc.program (docs/offload.md) and
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

static int raise_arg(lua_State *L, const char *fmt, const char *what)
{
    lua_pushfstring(L, fmt, what);
    return sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

static sc_offload_policy policy_named(lua_State *L, const char *name)
{
    for (int i = 0; policies[i]; i++)
        if (strcmp(policies[i], name) == 0)
            return (sc_offload_policy)i;
    raise_arg(L, "program: unknown offload policy '%s' (none, all, selective, budget, or a "
                 "function of the record's life)", name);
    return SC_OFFLOAD_NONE;
}

/* Calls the function at fn once per record with its life; the fractions go
 * to the program's table (policy TABLE). */
static void fractions_from(lua_State *L, int fn, sc_prog *pg)
{
    int S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    size_t SM = (size_t)S * (size_t)m;
    sc_record_life *ls = lua_newuserdatauv(L, SM * sizeof *ls, 0);
    sc_lua_check_st(L, pg, sc_offload_lives(pg, ls));
    for (size_t i = 0; i < SM; i++) {
        const sc_record_life *l = &ls[i];
        lua_pushvalue(L, fn);
        lua_createtable(L, 0, 12);
        static const char *const ints[] = {"stage", "mb", "device", "chunk"};
        int iv[] = {l->stage, l->mb, l->device, l->chunk};
        for (int k = 0; k < 4; k++) {
            lua_pushinteger(L, iv[k]);
            lua_setfield(L, -2, ints[k]);
        }
        static const char *const nums[] = {"start", "f_end", "b_start", "b_end", "finish",
                                           "length", "window", "transfer"};
        double nv[] = {l->f_start, l->f_end, l->b_start, l->b_end, l->end,
                       l->end - l->f_start, l->b_start - l->f_end, l->transfer};
        for (int k = 0; k < 8; k++) {
            lua_pushnumber(L, nv[k]);
            lua_setfield(L, -2, nums[k]);
        }
        lua_call(L, 1, 1);
        double q;
        int isnum;
        if (lua_isboolean(L, -1) || lua_isnil(L, -1))
            q = lua_toboolean(L, -1);
        else if (q = lua_tonumberx(L, -1, &isnum), !isnum || !(q >= 0 && q <= 1)) {
            lua_pushfstring(L, "offload: the function returned %s for s%d mb%d (a fraction in "
                               "[0, 1], or true / false)",
                            luaL_tolstring(L, -1, NULL), l->stage, l->mb);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        lua_pop(L, 1);
        sc_lua_check_st(L, pg, sc_prog_set_offload_fraction(pg, l->stage, l->mb, q));
    }
    lua_pop(L, 1);
}

void sc_lua_set_offload(lua_State *L, int t, sc_prog *pg)
{
    t = lua_absindex(L, t);
    int ty = lua_getfield(L, t, "offload");
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    int v = lua_gettop(L), fn = 0;
    double limit = sc_prog_mem_limit(pg);
    sc_offload_cfg c = {.policy = SC_OFFLOAD_ALL, .chunks = 1, .ratio = SC_OFFLOAD_RATIO,
                        .mem = isfinite(limit) ? limit : 0};
    if (ty == LUA_TSTRING) {
        c.policy = policy_named(L, lua_tostring(L, v));
    } else if (ty == LUA_TFUNCTION) {
        fn = v;
    } else if (ty == LUA_TTABLE) {
        sc_lua_check_fields(L, v, "offload", sc_fields_of(SC_FT_OFFLOAD));
        int pt = lua_getfield(L, v, "policy");
        if (pt == LUA_TSTRING)
            c.policy = policy_named(L, lua_tostring(L, -1));
        else if (pt == LUA_TFUNCTION)
            fn = lua_gettop(L);
        else if (pt != LUA_TNIL)
            raise_arg(L, "program: offload.policy must be a name or a function (got %s)",
                      luaL_typename(L, -1));
        c.chunks = sc_lua_num_field(L, v, "chunks", c.chunks);
        c.ratio = sc_lua_num_field(L, v, "ratio", c.ratio);
        c.mem = sc_lua_num_field(L, v, "mem", c.mem);
        c.margin = sc_lua_num_field(L, v, "margin", c.margin);
        lua_getfield(L, v, "shared");
        c.shared = lua_toboolean(L, -1);
        lua_pop(L, 1);
    } else {
        raise_arg(L, "program: 'offload' must be a policy name, a table or a function (got %s)",
                  luaL_typename(L, v));
    }
    if (fn) {
        /* The ratio times the records' moves (their `transfer`): set first. */
        sc_offload_cfg none = c;
        none.policy = SC_OFFLOAD_NONE;
        sc_lua_check_st(L, pg, sc_prog_set_offload(pg, &none));
        fractions_from(L, fn, pg);
        c.policy = SC_OFFLOAD_TABLE;
    }
    sc_lua_check_st(L, pg, sc_prog_set_offload(pg, &c));
    lua_settop(L, v - 1);
}

static void push_list(lua_State *L, const double *x, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, x[i]);
        lua_seti(L, -2, i + 1);
    }
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
    lua_pushstring(L, info_policies[c->policy]);
    lua_setfield(L, -2, "policy");
    lua_pushnumber(L, c->ratio);
    lua_setfield(L, -2, "ratio");
    lua_pushboolean(L, c->shared);
    lua_setfield(L, -2, "shared_link");
    if (oi) {
        static const char *const counts[] = {"records", "moved", "skipped", "backed_off"};
        int cv[] = {oi->records, oi->moved, oi->skipped, oi->backed_off};
        for (int k = 0; k < 4; k++) {
            lua_pushinteger(L, cv[k]);
            lua_setfield(L, -2, counts[k]);
        }
        push_list(L, oi->base_peak, P);
        lua_setfield(L, -2, "peak_without");
        push_list(L, oi->level, P);
        lua_setfield(L, -2, "chunks");
    }
    lua_pushnumber(L, sim->moved);
    lua_setfield(L, -2, "units_moved");
    double hmax = 0;
    if (sim->host_peak) {
        for (int d = 0; d < P; d++)
            hmax = fmax(hmax, sim->host_peak[d]);
        push_list(L, sim->host_peak, P);
    } else {
        lua_createtable(L, P, 0);
        for (int d = 0; d < P; d++) {
            lua_pushnumber(L, 0);
            lua_seti(L, -2, d + 1);
        }
    }
    lua_setfield(L, -2, "host_peak");
    lua_pushnumber(L, hmax);
    lua_setfield(L, -2, "host_peak_max");
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
            push_list(L, bins, SC_USAGE_BINS);
            lua_seti(L, -2, d + 1);
        }
        lua_setfield(L, -3, dirs[k]);
    }
    lua_pop(L, 1);
    lua_setfield(L, -2, "link_usage");
    return 1;
}
