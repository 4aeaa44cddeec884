/*
 * unit_bytes.c — sc._unit_bytes, the bytes of one memory unit of run's model,
 * which a recipe asks while it builds (a cap in bytes), and the engine's
 * runtime hooks (engine.h: the byte model of compare and plan); its own
 * file so that the fuzzers, which link no run command, share it (cmd_run.h).
 */
#include "cmd_run.h"
#include "cli.h"

#include <lauxlib.h>
#include <stdio.h>

#include "engine/engine.h"
#include "run/run.h"

static int unit_bytes(lua_State *L)
{
    sc_model_cfg mc = *(const sc_model_cfg *)lua_touserdata(L, lua_upvalueindex(1));
    int P = (int)luaL_checkinteger(L, 1), S = (int)luaL_checkinteger(L, 2);
    if (mc.layers == 0)
        mc.layers = sc_run_defaults(S).model.layers;
    mc.vocab_par = (int)luaL_checkinteger(L, 3);
    mc.devices = P;
    sc_model *md = NULL;
    char err[256];
    if (sc_model_new(&mc, S, 1, &md, err, sizeof err) != SC_OK) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    lua_pushnumber(L, sc_run_unit_bytes(md, P, S));
    sc_model_free(md);
    return 1;
}

void sc_cli_set_unit_bytes(lua_State *L, const sc_model_cfg *mc)
{
    lua_getglobal(L, "sc");
    if (mc) {
        sc_model_cfg *uc = lua_newuserdatauv(L, sizeof *uc, 0);
        *uc = *mc;
        lua_pushcclosure(L, unit_bytes, 1);
    } else {
        lua_pushnil(L);
    }
    lua_setfield(L, -2, "_unit_bytes");
    lua_pop(L, 1);
}


static int model_memory(const sc_model_cfg *mc, sc_prog *pg, double *unit, char *err, size_t errlen)
{
    sc_model *md = NULL;
    sc_status st = sc_model_new(mc, sc_prog_stages(pg), sc_prog_microbatches(pg), &md, err, errlen);
    if (st == SC_OK)
        st = sc_run_set_memory(pg, md, unit, err, errlen);
    sc_model_free(md);
    return st ? sc_status_exit_code(st) : 0;
}

static sc_model_cfg defaults(int stages) { return sc_run_defaults(stages).model; }

const sc_eng_runtime *sc_cli_runtime(void)
{
    static const sc_eng_runtime rt = {model_memory, defaults, sc_cli_set_unit_bytes};
    return &rt;
}
