/*
 * fsdp.c — the `fsdp` field of sc.program (docs/fsdp.md):
 *
 *   fsdp = true                                   -- dp 2, 1 unit, policy full
 *   fsdp = {dp = 8, units = 2, time = 0.5, policy = "derived", max_active = 2}
 *   fsdp = {dp = 8, bytes = 4e8, reduce_time = 0.7}  -- the reduce-scatter apart
 */
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <math.h>

#include "fields.h"

void sc_lua_set_fsdp(lua_State *L, int t, sc_prog *pg)
{
    t = lua_absindex(L, t);
    int ty = lua_getfield(L, t, "fsdp");
    if (ty == LUA_TNIL || (ty == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
        lua_pop(L, 1);
        return;
    }
    if (ty != LUA_TBOOLEAN && ty != LUA_TTABLE)
        sc_lua_raise(L, SC_ERR_ARG, "program: fsdp must be true or a table (docs/fsdp.md)");
    sc_fsdp_cfg c = sc_fsdp_default();
    if (ty == LUA_TTABLE) {
        int tab = lua_gettop(L);
        sc_lua_check_fields(L, tab, "fsdp", sc_fields_of(SC_FT_FSDP));
        double dp = sc_lua_num_field(L, tab, "fsdp", "dp", c.dp);
        double ma = sc_lua_num_field(L, tab, "fsdp", "max_active", c.max_active);
        if (dp != floor(dp) || dp < 1 || dp > 1e9 || ma != floor(ma) || ma < 1 || ma > 1e9)
            sc_lua_raise(L, SC_ERR_ARG, "fsdp: dp and max_active must be integers >= 1");
        c.dp = (int)dp;
        c.max_active = (int)ma;
        c.units = sc_lua_num_field(L, tab, "fsdp", "units", c.units);
        c.bytes = sc_lua_num_field(L, tab, "fsdp", "bytes", c.bytes);
        c.time = sc_lua_num_field(L, tab, "fsdp", "time", c.bytes > 0 ? NAN : c.time);
        c.reduce_time = sc_lua_num_field(L, tab, "fsdp", "reduce_time", c.reduce_time);
        if (lua_getfield(L, tab, "policy") != LUA_TNIL) {
            const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
            if ((c.policy = sc_fsdp_policy_parse(name)) < 0)
                sc_lua_raise(L, SC_ERR_ARG, "fsdp: policy must be \"full\", \"auto\" or "
                                            "\"derived\" (docs/fsdp.md#policies)");
        }
        lua_pop(L, 1);
    }
    sc_lua_check_st(L, pg, sc_prog_set_fsdp(pg, &c));
    lua_pop(L, 1);
}
