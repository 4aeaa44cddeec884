/*
 * policy.c — what the memory-policy fields of sc.program (`offload`,
 * `recompute`) share: a policy by name, a table with a `policy` field, or a
 * function called once per record with its life, returning a fraction.
 */
#include "compile.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <string.h>

static int raise_arg(lua_State *L, const char *fmt, const char *a, const char *b)
{
    lua_pushfstring(L, fmt, a, b);
    return sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
}

static int policy_named(lua_State *L, const sc_lua_policy_field *pf, const char *name)
{
    for (int i = 0; i < pf->count; i++)
        if (strcmp(pf->names[i], name) == 0)
            return i;
    raise_arg(L, "program: unknown %s policy '%s' (none, all, selective, budget, or a "
                 "function of the record's life)", pf->field, name);
    return 0;
}

int sc_lua_read_policy(lua_State *L, int t, const sc_lua_policy_field *pf, int *policy,
                        int *fn, int *tab)
{
    t = lua_absindex(L, t);
    int ty = lua_getfield(L, t, pf->field);
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    int v = lua_gettop(L);
    *fn = *tab = 0;
    if (ty == LUA_TSTRING) {
        *policy = policy_named(L, pf, lua_tostring(L, v));
    } else if (ty == LUA_TFUNCTION) {
        *fn = v;
    } else if (ty == LUA_TTABLE) {
        *tab = v;
        sc_lua_check_fields(L, v, pf->field, pf->known);
        int pt = lua_getfield(L, v, "policy");
        if (pt == LUA_TSTRING)
            *policy = policy_named(L, pf, lua_tostring(L, -1));
        else if (pt == LUA_TFUNCTION)
            *fn = lua_gettop(L);
        else if (pt != LUA_TNIL)
            raise_arg(L, "program: %s.policy must be a name or a function (got %s)", pf->field,
                      luaL_typename(L, -1));
    } else {
        raise_arg(L, "program: '%s' must be a policy name, a table or a function (got %s)",
                  pf->field, luaL_typename(L, v));
    }
    return v;
}

void sc_lua_record_fractions(lua_State *L, int fn, sc_prog *pg, const char *field, double yes,
                             int transfer, sc_lua_fraction_set set)
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
        for (int k = 0; k < 7 + (transfer != 0); k++) {
            lua_pushnumber(L, nv[k]);
            lua_setfield(L, -2, nums[k]);
        }
        lua_call(L, 1, 1);
        double q;
        int isnum;
        if (lua_isboolean(L, -1) || lua_isnil(L, -1))
            q = lua_toboolean(L, -1) ? yes : 0;
        else if (q = lua_tonumberx(L, -1, &isnum), !isnum || !(q >= 0 && q <= 1)) {
            lua_pushfstring(L, "%s: the function returned %s for s%d mb%d (a fraction in "
                               "[0, 1], or true / false)",
                            field, luaL_tolstring(L, -1, NULL), l->stage, l->mb);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        lua_pop(L, 1);
        sc_lua_check_st(L, pg, set(pg, l->stage, l->mb, q));
    }
    lua_pop(L, 1);
}

void sc_lua_push_numbers(lua_State *L, const double *x, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, x[i]);
        lua_seti(L, -2, i + 1);
    }
}

void sc_lua_set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

void sc_lua_set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

void sc_lua_set_str(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}
