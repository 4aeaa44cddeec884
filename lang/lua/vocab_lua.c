/*
 * vocab_lua.c — the vocabulary fields of sc.program (docs/vocab.md): where
 * the vocabulary layers go (`vocab_par`), the description of the model
 * whose FLOPs and bytes give the costs (`model`), and the times of the
 * vocabulary passes without a model (`vocab_costs`).
 */
#include "sc_lua.h"
#include "fields.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <math.h>
#include <string.h>

#include "ir/flops.h"

/* An unknown key of the table at t is an error that names it (with the
 * nearest known name). */
static void known_fields(lua_State *L, int t, const char *what, const char *const *known)
{
    int nk = 0;
    while (known[nk])
        nk++;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int ok = 0;
        for (int i = 0; i < nk && !ok && lua_type(L, -1) == LUA_TSTRING; i++)
            ok = strcmp(known[i], lua_tostring(L, -1)) == 0;
        if (ok)
            continue;
        char hint[160] = "";
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
        if (sc_did_you_mean(hint, sizeof hint, k, known, nk))
            lua_pushfstring(L, "%s: unknown field '%s' (%s)", what, k, hint);
        else
            lua_pushfstring(L, "%s: unknown field '%s'", what, k);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
}

static void check(lua_State *L, sc_prog *pg, sc_status st)
{
    if (st != SC_OK)
        sc_lua_raise(L, st, sc_errmsg(pg));
}

/* A number field of the table at t (dflt when absent). */
static double num(lua_State *L, int t, const char *what, const char *k, double dflt)
{
    int ty = lua_getfield(L, t, k);
    double v = dflt;
    if (ty != LUA_TNIL) {
        int ok;
        v = lua_tonumberx(L, -1, &ok);
        if (!ok || !isfinite(v)) {
            const char *got = ty == LUA_TSTRING ? lua_tostring(L, -1)
                              : ty != LUA_TNUMBER ? luaL_typename(L, -1)
                              : isnan(v)          ? "nan" /* 0/0 prints "-nan" on some C libraries */
                                                  : lua_tostring(L, -1);
            lua_pushfstring(L, "%s: '%s' must be a finite number (got %s)", what, k, got);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
    }
    lua_pop(L, 1);
    return v;
}

static long whole(lua_State *L, int t, const char *what, const char *k, long dflt)
{
    double v = num(L, t, what, k, (double)dflt);
    if (v != floor(v) || fabs(v) > 1e15) {
        lua_pushfstring(L, "%s: '%s' must be an integer (got %f)", what, k, v);
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    return (long)v;
}

void sc_lua_set_vocab(lua_State *L, int t, sc_prog *pg)
{
    t = lua_absindex(L, t);
    int ty = lua_getfield(L, t, "vocab_par");
    if (ty != LUA_TNIL) {
        const char *name = ty == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int v = name ? sc_vocab_parse(name) : -1;
        if (v < 0) {
            lua_pushfstring(L, "program: unknown vocab_par '%s' (none, baseline, redis, vocab-1, "
                            "vocab-2)", name ? name : luaL_typename(L, -1));
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        check(L, pg, sc_prog_set_vocab(pg, (sc_vocab)v));
    }
    lua_pop(L, 1);
    ty = lua_getfield(L, t, "model");
    if (ty == LUA_TTABLE) {
        int m = lua_gettop(L);
        known_fields(L, m, "model", sc_fields_of(SC_FT_MODEL));
        sc_model_desc md = sc_model_desc_default();
        md.layers = whole(L, m, "model", "layers", 0);
        md.hidden = whole(L, m, "model", "hidden", 0);
        md.seq = whole(L, m, "model", "seq", 0);
        md.vocab = whole(L, m, "model", "vocab", 0);
        md.batch = whole(L, m, "model", "batch", 1);
        md.heads = whole(L, m, "model", "heads", 0);
        md.tflops = num(L, m, "model", "tflops", md.tflops);
        md.coll_gbps = num(L, m, "model", "coll_gbps", md.coll_gbps);
        md.coll_us = num(L, m, "model", "coll_us", md.coll_us);
        md.p2p_gbps = num(L, m, "model", "p2p_gbps", md.p2p_gbps);
        md.bytes_per_param = num(L, m, "model", "bytes_per_param", md.bytes_per_param);
        check(L, pg, sc_prog_set_model(pg, &md));
    } else if (ty == LUA_TNIL && sc_prog_vocab(pg) == SC_VOCAB_REDIS) {
        sc_lua_raise(L, SC_ERR_ARG, "program: vocab_par = 'redis' moves transformer layers by the "
                                    "model's costs: give the model (-D layers=N with hidden, "
                                    "seq, vocab, batch; or the field 'model')");
    } else if (ty != LUA_TNIL) {
        sc_lua_raise(L, SC_ERR_ARG, "program: 'model' must be a table {layers =, hidden =, seq =, "
                                    "vocab =, batch =, ...}");
    }
    lua_pop(L, 1);
    ty = lua_getfield(L, t, "vocab_costs");
    if (ty == LUA_TTABLE) {
        int c = lua_gettop(L);
        known_fields(L, c, "vocab_costs", sc_fields_of(SC_FT_VOCAB_COSTS));
        /* Times of a device's S, T, E, EW; a collective's latency (then
         * bandwidth unlimited); S's units. After the model: a field given
         * overrides the model's, one not given keeps it (0 without one). */
        check(L, pg, sc_prog_set_vocab_cost(
                         pg, -1, num(L, c, "vocab_costs", "s", sc_prog_vocab_cost(pg, SC_OP_S, 0)),
                         num(L, c, "vocab_costs", "t", sc_prog_vocab_cost(pg, SC_OP_T, 0)),
                         num(L, c, "vocab_costs", "e", sc_prog_vocab_cost(pg, SC_OP_E, 0)),
                         num(L, c, "vocab_costs", "ew", sc_prog_vocab_cost(pg, SC_OP_EW, 0))));
        check(L, pg, sc_prog_set_vocab_mem(pg, -1, num(L, c, "vocab_costs", "units",
                                                       sc_prog_vocab_mem(pg, 0))));
        lua_getfield(L, c, "coll");
        int coll = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (coll)
            check(L, pg, sc_prog_set_coll_cost(pg, num(L, c, "vocab_costs", "coll", 0), INFINITY));
    } else if (ty != LUA_TNIL) {
        sc_lua_raise(L, SC_ERR_ARG, "program: 'vocab_costs' must be a table {s =, t =, e =, ew =, "
                                    "coll =, units =}");
    }
    lua_pop(L, 1);
}
