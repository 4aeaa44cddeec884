/*
 * sc_recompute_lua.c — the `recompute` field of sc.program
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

static int raise_arg(lua_State *L, const char *fmt, const char *what)
{
    lua_pushfstring(L, fmt, what);
    return sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

static sc_recompute_policy policy_named(lua_State *L, const char *name)
{
    for (int i = 0; i < SC_RECOMPUTE_TABLE; i++)
        if (strcmp(policies[i], name) == 0)
            return (sc_recompute_policy)i;
    raise_arg(L, "program: unknown recompute policy '%s' (none, all, selective, budget, or a "
                 "function of the record's life)", name);
    return SC_RECOMPUTE_NONE;
}

/* Calls the function at fn once per record with its life (the lives of
 * offload's functions, sc_offload_lives); the fractions (of frac: true is
 * all of it) go to the program's table. */
static void fractions_from(lua_State *L, int fn, sc_prog *pg, double frac)
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
                                           "length", "window"};
        double nv[] = {l->f_start, l->f_end, l->b_start, l->b_end, l->end,
                       l->end - l->f_start, l->b_start - l->f_end};
        for (int k = 0; k < 7; k++) {
            lua_pushnumber(L, nv[k]);
            lua_setfield(L, -2, nums[k]);
        }
        lua_call(L, 1, 1);
        double q;
        int isnum;
        if (lua_isboolean(L, -1) || lua_isnil(L, -1))
            q = lua_toboolean(L, -1) ? frac : 0;
        else if (q = lua_tonumberx(L, -1, &isnum), !isnum || !(q >= 0 && q <= 1)) {
            lua_pushfstring(L, "recompute: the function returned %s for s%d mb%d (a fraction "
                               "in [0, 1], or true / false)",
                            luaL_tolstring(L, -1, NULL), l->stage, l->mb);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        lua_pop(L, 1);
        sc_lua_check_st(L, pg, sc_prog_set_recompute_fraction(pg, l->stage, l->mb, q));
    }
    lua_pop(L, 1);
}

void sc_lua_set_recompute(lua_State *L, int t, sc_prog *pg)
{
    t = lua_absindex(L, t);
    int ty = lua_getfield(L, t, "recompute");
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    int v = lua_gettop(L), fn = 0;
    double limit = sc_prog_mem_limit(pg);
    sc_recompute_cfg c = {.policy = SC_RECOMPUTE_ALL, .chunks = 1, .frac = 1, .time = -1,
                          .mem = isfinite(limit) ? limit : 0};
    if (ty == LUA_TSTRING) {
        c.policy = policy_named(L, lua_tostring(L, v));
    } else if (ty == LUA_TFUNCTION) {
        fn = v;
    } else if (ty == LUA_TTABLE) {
        sc_lua_check_fields(L, v, "recompute", sc_fields_of(SC_FT_RECOMPUTE));
        int pt = lua_getfield(L, v, "policy");
        if (pt == LUA_TSTRING)
            c.policy = policy_named(L, lua_tostring(L, -1));
        else if (pt == LUA_TFUNCTION)
            fn = lua_gettop(L);
        else if (pt != LUA_TNIL)
            raise_arg(L, "program: recompute.policy must be a name or a function (got %s)",
                      luaL_typename(L, -1));
        c.chunks = sc_lua_num_field(L, v, "chunks", c.chunks);
        c.frac = sc_lua_num_field(L, v, "frac", c.frac);
        c.time = sc_lua_num_field(L, v, "time", c.time);
        c.mem = sc_lua_num_field(L, v, "mem", c.mem);
    } else {
        raise_arg(L, "program: 'recompute' must be a policy name, a table or a function (got %s)",
                  luaL_typename(L, v));
    }
    if (c.time < 0)
        c.time = c.frac; /* a recomputation of part of a record takes that part of F */
    if (fn) {
        sc_recompute_cfg none = c;
        none.policy = SC_RECOMPUTE_NONE;
        sc_lua_check_st(L, pg, sc_prog_set_recompute(pg, &none));
        fractions_from(L, fn, pg, c.frac);
        c.policy = SC_RECOMPUTE_TABLE;
    }
    sc_lua_check_st(L, pg, sc_prog_set_recompute(pg, &c));
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

int sc_lua_push_recompute(lua_State *L, const sc_prog *pg)
{
    const sc_recompute_info *ri = sc_prog_recompute_info(pg);
    const sc_recompute_cfg *c = sc_prog_recompute(pg);
    if (!ri)
        return 0;
    int P = sc_prog_devices(pg);
    lua_createtable(L, 0, 10);
    lua_pushstring(L, policies[c->policy]);
    lua_setfield(L, -2, "policy");
    lua_pushnumber(L, c->frac);
    lua_setfield(L, -2, "frac");
    lua_pushnumber(L, c->time);
    lua_setfield(L, -2, "time");
    lua_pushinteger(L, ri->records);
    lua_setfield(L, -2, "records");
    lua_pushnumber(L, ri->units);
    lua_setfield(L, -2, "units");
    lua_pushnumber(L, ri->time);
    lua_setfield(L, -2, "recompute_time");
    push_list(L, ri->base_peak, P);
    lua_setfield(L, -2, "peak_without");
    push_list(L, ri->level, P);
    lua_setfield(L, -2, "chunks");
    lua_createtable(L, P, 0);
    for (int d = 0; d < P; d++) {
        lua_pushinteger(L, ri->count[d]);
        lua_seti(L, -2, d + 1);
    }
    lua_setfield(L, -2, "per_device");
    return 1;
}
