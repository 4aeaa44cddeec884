/*
 * vocab.c — the vocabulary fields of sc.program (docs/vocab.md): where
 * the vocabulary layers go (`vocab_par`), the description of the model
 * whose FLOPs and bytes give the costs (`model`), and the times of the
 * vocabulary passes without a model (`vocab_costs`).
 */
#include "sc_lua.h"
#include "fields.h"
#include "sc_lua_impl.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/flops.h"
#include "model/mdesc.h"
#include "plan/partition.h"

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

/* One of names[] (a string field k of the table at t), its index; dflt when
 * absent. */
static int choice(lua_State *L, int t, const char *k, const char *const *names, int dflt)
{
    int ty = lua_getfield(L, t, k);
    const char *v = ty == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int r = ty == LUA_TNIL ? dflt : -1;
    for (int i = 0; v && names[i]; i++)
        if (strcmp(v, names[i]) == 0)
            r = i;
    if (r < 0) {
        char list[160] = "";
        for (int i = 0; names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     names[i]);
        lua_pushfstring(L, "model: '%s' must be one of %s (got %s)", k, list,
                        v ? v : luaL_typename(L, -1));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    return r;
}

/* The `split` field of the model table at m (docs/model.md#the-split):
 * "even" (or absent), "best", decoder layers per stage as a list or as
 * "[4,4,4,4]", or a Megatron layout "Et*4|t*4|t*4|t*4L" (its t per stage; E
 * on the first stage, L on the last). Counts go into a userdata left on the
 * stack (md->split points into it). */
static void set_split(lua_State *L, int m, sc_model_desc *md, int S)
{
    int ty = lua_getfield(L, m, "split");
    const char *s = ty == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int *counts = lua_newuserdatauv(L, (size_t)S * sizeof(int), 0);
    lua_insert(L, -2);
    if (ty == LUA_TNIL || (s && strcmp(s, "even") == 0)) {
        lua_pop(L, 1);
        return;
    }
    if (s && strcmp(s, "best") == 0) {
        md->split_best = 1;
        lua_pop(L, 1);
        return;
    }
    int n = 0;
    if (ty == LUA_TTABLE) {
        n = (int)luaL_len(L, -1);
        for (int i = 0; i < n && i < S; i++) {
            lua_geti(L, -1, i + 1);
            counts[i] = (int)lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
    } else if (s && strchr(s, '|')) {
        static sc_layers ly; /* 64 KiB: not on the stack (one Lua state per thread) */
        static int first[SC_LAYERS_MAX + 1];
        char err[200];
        n = sc_part_parse_layout(s, &ly, first, err, sizeof err);
        if (n < 0) {
            lua_pushfstring(L, "model: split '%s': %s", s, err);
            sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        for (int k = 0; k < n && k < S; k++) {
            counts[k] = 0;
            for (int i = first[k]; i < first[k + 1]; i++) {
                int e = ly.kind[i] == 'E', l = ly.kind[i] == 'L';
                if ((e && k != 0) || (l && k != n - 1)) {
                    lua_pushfstring(L, "model: split '%s': the %s must be on the %s stage (the "
                                    "model's placement)", s, e ? "embedding E" : "loss L",
                                    e ? "first" : "last");
                    sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
                }
                counts[k] += ly.kind[i] == 't';
            }
        }
    } else if (s) {
        const char *p = s + (s[0] == '[');
        size_t len = strlen(p);
        if (s[0] != '[' || len == 0 || p[len - 1] != ']')
            p = ""; /* not a list: n stays 0 */
        while (*p && *p != ']' && n <= S) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v > 1000000 || (*end != ',' && *end != ']')) {
                n = -1;
                break;
            }
            if (n < S)
                counts[n] = (int)v;
            n++;
            p = *end == ',' ? end + 1 : end;
        }
    }
    if (n != S) {
        lua_pushfstring(L, "model: split must be even, best, %d decoder-layer counts (\"[4,4,...]\") "
                        "or a Megatron layout (\"Et*4|t*4|...|t*4L\") of %d stages (got %s)", S, S,
                        s ? s : luaL_typename(L, -1));
        sc_lua_raise(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    md->split = counts;
    lua_pop(L, 1);
}

/* The training set-up of the model table at m (docs/model.md#bytes). */
static void set_training(lua_State *L, int m, sc_model_desc *md)
{
    static const char *const dtypes[] = {"", "bf16", "fp16", "fp32", NULL};
    static const char *const precisions[] = {"mixed", "pure", NULL};
    static const char *const optimizers[] = {"adamw", "sgd", "none", NULL};
    static const int dtype_bytes[] = {0, 2, 2, 4};
    md->dtype_bytes = dtype_bytes[choice(L, m, "dtype", dtypes, 0)];
    md->precision = (sc_precision)choice(L, m, "precision", precisions, SC_PREC_MIXED);
    md->optimizer = (sc_optimizer)choice(L, m, "optimizer", optimizers, SC_OPT_ADAMW);
    md->zero = (int)whole(L, m, "model", "zero", 0);
    md->dp = whole(L, m, "model", "dp", 1);
    md->workspace = num(L, m, "model", "workspace", md->workspace); /* 1 GiB */
    if (md->zero < 0 || md->zero > 3)
        sc_lua_raise(L, SC_ERR_ARG, "model: 'zero' must be 0 (none), 1 (optimizer states), 2 "
                                    "(and gradients) or 3 (and parameters: FSDP)");
    if (md->dp < 1)
        sc_lua_raise(L, SC_ERR_ARG, "model: 'dp' (data-parallel ranks) must be at least 1");
    if (md->zero > 0 && md->dp == 1)
        sc_lua_raise(L, SC_ERR_ARG, "model: zero > 0 shards over the data-parallel ranks: give "
                                    "dp > 1 (-D dp=N)");
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
        sc_lua_known_fields(L, m, "model", sc_fields_of(SC_FT_MODEL));
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
        set_training(L, m, &md);
        set_split(L, m, &md, sc_prog_stages(pg)); /* leaves the counts' userdata */
        sc_mdesc *desc = NULL;
        if (lua_getfield(L, m, "config") != LUA_TNIL) {
            if (!lua_istable(L, -1))
                sc_lua_raise(L, SC_ERR_ARG, "model: 'config' must be the table of sc.model(...)");
            desc = sc_lua_to_mdesc(L, -1);
        }
        lua_pop(L, 1);
        md.desc = desc;
        sc_status mst = sc_prog_set_model(pg, &md);
        sc_mdesc_free(desc);
        check(L, pg, mst);
        lua_pop(L, 1); /* the split's counts */
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
        sc_lua_known_fields(L, c, "vocab_costs", sc_fields_of(SC_FT_VOCAB_COSTS));
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
