/*
 * run_model.c — `run --model config.json` (docs/run.md#the-decoder): the
 * decoder's sizes from a Hugging Face config (interp/formats/hfconfig.h)
 * into the model run trains, and their place in run's output; the sizes
 * given with -D or declared by the recipe (sc_cli_run_model_sizes).
 */
#include "cmd_run.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "formats/hfconfig.h"
#include "model/mdesc.h"

/* The model's sizes (integers), then the optimizer's settings
 * (docs/steps.md#running-several-steps: numbers, and the fault injection's
 * integers). */
static const char *const model_keys[] = {
#define X(name) #name,
    SC_MODEL_SIZES(X)
#undef X
    "lr", "beta1", "beta2", "eps", "weight_decay", "clip", "inf_step", "inf_device"};
#define NKEYS (int)(sizeof model_keys / sizeof model_keys[0])
_Static_assert(NKEYS == SC_RUN_MODEL_KEYS, "cmd_run.h counts the keys");
#define FIRST_FLOAT SC_MODEL_NSIZES       /* lr .. clip */
#define FIRST_INT2 (SC_MODEL_NSIZES + 6) /* inf_step, inf_device */

/* The declared default of parameter `name` (pushed), or nothing and 0. */
static int declared(lua_State *L, int decl, const char *name)
{
    lua_Integer n = luaL_len(L, decl);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, decl, i);
        lua_getfield(L, -1, "name");
        int same = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), name) == 0;
        lua_pop(L, 1);
        if (same) {
            lua_getfield(L, -1, "default");
            lua_remove(L, -2);
            return 1;
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* Fills the model sizes from -D (table t) and the recipe's declarations. */
int sc_cli_run_model_sizes(lua_State *L, const char *recipe, int t, sc_model_cfg *mc, int *given)
{
    /* The model sizes are run's own: a recipe need not read them. */
    lua_getglobal(L, "sc");
    lua_createtable(L, 0, NKEYS);
    for (int i = 0; i < NKEYS; i++) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, model_keys[i]);
    }
    lua_setfield(L, -2, "_external");
    lua_pop(L, 1);
    if (sc_eng_evaluate(L, recipe, 0, 1) != LUA_OK)
        return sc_cli_lua_fail(L);
    int decl = lua_gettop(L) - 1;
    for (int i = 0; i < NKEYS; i++) {
        const char *k = model_keys[i];
        lua_getfield(L, t, k);
        int has = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (declared(L, decl, k)) {
            if (!has && mc->kind == SC_MODEL_DECODER && i < 3) {
                lua_pop(L, 1); /* hidden, layers, vocab: the config's, not the recipe's default */
                continue;
            }
            if (!has) { /* the recipe's default sizes the model */
                lua_setfield(L, t, k);
                has = 1;
            } else {
                lua_pop(L, 1);
            }
            lua_getfield(L, t, k);
        } else if (has) {
            lua_getfield(L, t, k);
            lua_pushnil(L);
            lua_setfield(L, t, k); /* not the recipe's: take it out */
        } else {
            continue;
        }
        int isnum = 0;
        if (i >= FIRST_FLOAT && i < FIRST_INT2) {
            double x = lua_tonumberx(L, -1, &isnum);
            if (!isnum) {
                char msg[160];
                snprintf(msg, sizeof msg, "optimizer setting '%s': expected a number, got '%s'",
                         k, luaL_tolstring(L, -1, NULL));
                return sc_cli_fail(SC_EXIT_USAGE, msg);
            }
            lua_pop(L, 1);
            double *slot[] = {&mc->opt.lr, &mc->opt.beta1, &mc->opt.beta2, &mc->opt.eps,
                              &mc->opt.weight_decay, &mc->opt.clip};
            *slot[i - FIRST_FLOAT] = x;
            continue;
        }
        lua_Integer v = lua_tointegerx(L, -1, &isnum);
        if (!isnum) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s '%s': expected an integer, got '%s'",
                     i < FIRST_FLOAT ? "model size" : "fault injection", k,
                     luaL_tolstring(L, -1, NULL));
            return sc_cli_fail(SC_EXIT_USAGE, msg);
        }
        lua_pop(L, 1);
        if (i >= FIRST_INT2) {
            if (v < -1 || v > 1000000000) {
                char msg[160];
                snprintf(msg, sizeof msg, "fault injection '%s' = %lld is out of range", k,
                         (long long)v);
                return sc_cli_fail(SC_EXIT_ARG, msg);
            }
            *(i == FIRST_INT2 ? &mc->opt.inf_step : &mc->opt.inf_device) = (int)v;
            continue;
        }
        long lv = (long)v; /* LP64: the same range; sc_model_new bounds it */
        switch (i) {
        case 0: mc->hidden = lv; break;
        case 1: /* 0 (sc.MODEL's default, docs/vocab.md): 2 blocks per stage */
            if (lv != 0) {
                mc->layers = lv;
                given[1] = 1;
            }
            break;
        case 2: mc->vocab = lv; break;
        case 3: mc->seq = lv; break;
        case 4: mc->batch = lv; break;
        default: mc->seed = (long long)v; break;
        }
    }
    lua_settop(L, decl - 2);
    return 0;
}

int sc_cli_run_decoder(const char *path, sc_model_cfg *mc)
{
    sc_mdesc *m = NULL;
    char err[512];
    if (sc_hf_config_read(path, &m, err, sizeof err) != SC_OK)
        return sc_cli_fail(SC_EXIT_USAGE, err);
    const sc_mdesc_cfg *c = sc_mdesc_config(m);
    const char *what = c->kv_lora_rank > 0              ? "multi-head latent attention (MLA)"
                       : c->experts > 0 && (c->first_dense > 0 || c->moe_freq > 1)
                           ? "dense layers between the MoE ones (first_k_dense_replace, "
                             "moe_layer_freq)"
                       : c->router_bias ? "a router bias (e_score_correction_bias)"
                       : c->attn_bias || c->qkv_bias || c->mlp_bias ? "biases"
                       : c->qk_norm                     ? "qk_norm"
                                                        : NULL;
    if (what) {
        snprintf(err, sizeof err, "%s: model_type %s with %s: %s is not trained yet (run "
                 "trains a Llama-style decoder: RMSNorm, rotary, GQA, SwiGLU or Mixtral's "
                 "experts, no biases)", path,
                 sc_mfamily_name(c->family), what, what);
        sc_mdesc_free(m);
        return sc_cli_fail(SC_EXIT_USAGE, err);
    }
    mc->kind = SC_MODEL_DECODER;
    mc->hidden = (long)c->hidden;
    mc->layers = (long)c->layers;
    mc->vocab = (long)c->vocab;
    mc->heads = (long)c->heads;
    mc->kv_heads = (long)c->kv_heads;
    mc->head_dim = (long)c->head_dim;
    mc->inter = (long)c->inter;
    mc->experts = (long)c->experts; /* docs/run.md#mixture-of-experts */
    mc->experts_per_tok = (long)c->experts_per_tok;
    mc->moe_inter = (long)c->moe_inter;
    mc->shared_inter = (long)(c->shared_experts * c->moe_inter);
    mc->rope_theta = c->rope_theta > 0 ? c->rope_theta : 10000.0;
    mc->norm_eps = c->norm_eps > 0 ? c->norm_eps : 1e-5;
    sc_mdesc_free(m);
    return 0;
}

void sc_cli_run_decoder_json(sc_jw *w, const sc_model_cfg *mc)
{
    if (mc->kind != SC_MODEL_DECODER)
        return; /* the MLP's object is its sizes alone */
    sc_jw_str(w, "kind", "decoder");
    sc_jw_int(w, "heads", mc->heads);
    sc_jw_int(w, "kv_heads", mc->kv_heads);
    sc_jw_int(w, "head_dim", mc->head_dim);
    sc_jw_int(w, "inter", mc->inter);
    sc_jw_num_g(w, "rope_theta", mc->rope_theta, 17);
    sc_jw_num_g(w, "norm_eps", mc->norm_eps, 17);
    if (mc->experts > 0) {
        sc_jw_int(w, "experts", mc->experts);
        sc_jw_int(w, "experts_per_tok", mc->experts_per_tok);
        sc_jw_int(w, "moe_inter", mc->moe_inter);
        sc_jw_int(w, "shared_inter", mc->shared_inter);
    }
}

void sc_cli_run_decoder_text(const sc_model_cfg *mc)
{
    if (mc->kind == SC_MODEL_DECODER)
        printf("decoder       heads %ld, kv_heads %ld, head_dim %ld, inter %ld, rope_theta %g, "
               "rms_norm_eps %g\n", mc->heads, mc->kv_heads, mc->head_dim, mc->inter,
               mc->rope_theta, mc->norm_eps);
    if (mc->kind == SC_MODEL_DECODER && mc->experts > 0)
        printf("experts       %ld, %ld per token, inter %ld, shared inter %ld\n", mc->experts,
               mc->experts_per_tok, mc->moe_inter, mc->shared_inter);
}
