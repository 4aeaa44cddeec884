/*
 * model.c — sc.model (docs/model.md#from-lua-and-python): a model's
 * description as a Lua table, from a Hugging Face config.json or from a
 * table of its sizes, and the way back (the `config` field of a program's
 * `model`).
 *
 *   local llama = sc.model("llama3-8b.json")   -- {family = "llama", hidden = 4096, ...,
 *                                              --  params = 8030261248, file = "llama3-8b.json"}
 *   sc.program{..., model = {config = llama, seq = 4096, batch = 1}}
 *
 * A path passes the rule sc.costs follows: named on the command line
 * (--model FILE, -D model=FILE: sc._granted), or allowed by the sandbox in
 * force (a recipe: its own folder; lang/sandbox/sandbox.c routes a recipe's
 * sc.model through sc._model_read).
 */
#include "sc_lua.h"
#include "sc_lua_impl.h"

#include <errno.h>
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "formats/hfconfig.h"
#include "formats/readfile.h"
#include "ir/alloc.h"
#include "model/mdesc.h"
#include "sandbox/sandbox.h"
#include "sandbox/sc_limits.h"

#define MAX_CONFIG (16L << 20)

/* The sizes of sc_mdesc_cfg by the names the table gives them (those of
 * mdesc.h's comments, shortened): X(name, member). */
#define WIDE(X)                                                                                    \
    X(hidden, hidden) X(inter, inter) X(heads, heads) X(kv_heads, kv_heads)                        \
    X(head_dim, head_dim) X(layers, layers) X(vocab, vocab) X(experts, experts)                    \
    X(experts_per_tok, experts_per_tok) X(shared_experts, shared_experts)                          \
    X(moe_inter, moe_inter) X(first_dense, first_dense) X(moe_freq, moe_freq)                      \
    X(q_lora_rank, q_lora_rank) X(kv_lora_rank, kv_lora_rank) X(qk_nope_dim, qk_nope_dim)         \
    X(qk_rope_dim, qk_rope_dim) X(v_head_dim, v_head_dim)
#define NARROW(X)                                                                                  \
    X(tie, tie) X(attn_bias, attn_bias) X(qkv_bias, qkv_bias) X(mlp_bias, mlp_bias)                \
    X(qk_norm, qk_norm) X(router_bias, router_bias) X(param_bytes, param_bytes)                    \
    X(act_bytes, act_bytes)

static const struct {
    const char *name;
    size_t off;
} wide[] = {
#define X(n, m) {#n, offsetof(sc_mdesc_cfg, m)},
    WIDE(X)
#undef X
}, narrow[] = {
#define X(n, m) {#n, offsetof(sc_mdesc_cfg, m)},
    NARROW(X)
#undef X
};
#define NWIDE (sizeof wide / sizeof *wide)
#define NNARROW (sizeof narrow / sizeof *narrow)

/* The table of m (above) on the stack top; file: its config.json, or NULL. */
static void push_desc(lua_State *L, const sc_mdesc *m, const char *file)
{
    const sc_mdesc_cfg *c = sc_mdesc_config(m);
    lua_createtable(L, 0, (int)(NWIDE + NNARROW + 3));
    lua_pushstring(L, sc_mfamily_name(c->family));
    lua_setfield(L, -2, "family");
    for (size_t i = 0; i < NWIDE; i++) {
        lua_pushinteger(L, (lua_Integer) * (const int64_t *)((const char *)c + wide[i].off));
        lua_setfield(L, -2, wide[i].name);
    }
    for (size_t i = 0; i < NNARROW; i++) {
        lua_pushinteger(L, *(const int *)((const char *)c + narrow[i].off));
        lua_setfield(L, -2, narrow[i].name);
    }
    lua_pushinteger(L, (lua_Integer)sc_mdesc_params(m, -1));
    lua_setfield(L, -2, "params");
    if (file) {
        lua_pushstring(L, file);
        lua_setfield(L, -2, "file");
    }
}

/* What a wrong value at idx was, for "(got ...)": pushed and returned. */
static const char *got(lua_State *L, int idx)
{
    int ty = lua_type(L, idx);
    if (ty == LUA_TSTRING)
        return lua_pushfstring(L, "'%s'", lua_tostring(L, idx));
    if (ty == LUA_TNUMBER)
        return lua_pushfstring(L, "%s", lua_tostring(L, idx));
    return lua_pushfstring(L, "a %s", luaL_typename(L, idx));
}

void sc_lua_known_fields(lua_State *L, int t, const char *what, const char *const *known)
{
    t = lua_absindex(L, t);
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

static int model_error(lua_State *L, sc_status st, const char *msg)
{
    lua_pushfstring(L, "model: %s", msg);
    return sc_lua_raise(L, st, lua_tostring(L, -1));
}

/* An integer field k of the table at t (dflt when absent). */
static int64_t whole(lua_State *L, int t, const char *k, int64_t dflt)
{
    int ty = lua_getfield(L, t, k), ok = 0;
    lua_Integer v = ty == LUA_TNIL ? (lua_Integer)dflt : lua_tointegerx(L, -1, &ok);
    if (ty != LUA_TNIL && !ok) {
        lua_pushfstring(L, "'%s' must be an integer (got %s)", k, got(L, -1));
        return model_error(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    return (int64_t)v;
}

sc_mdesc *sc_lua_to_mdesc(lua_State *L, int t)
{
    t = lua_absindex(L, t);
    static const char *const known[] = {
#define X(n, m) #n,
        WIDE(X) NARROW(X)
#undef X
        "family", "params", "file", NULL};
    sc_lua_known_fields(L, t, "model config", known);
    sc_mdesc_cfg c = {.param_bytes = 2, .act_bytes = 2};
    lua_getfield(L, t, "family");
    const char *fam = lua_tostring(L, -1);
    c.family = fam && strcmp(fam, "gpt") == 0 ? SC_MF_GPT : sc_mfamily_find(fam);
    if (c.family == SC_MF_COUNT) {
        lua_pushfstring(L, "config: unknown family %s (gpt, llama, mistral, qwen2, qwen3, mixtral, "
                        "deepseek_v3)", got(L, -1));
        model_error(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    for (size_t i = 0; i < NWIDE; i++)
        *(int64_t *)((char *)&c + wide[i].off) = whole(L, t, wide[i].name, 0);
    for (size_t i = 0; i < NNARROW; i++) {
        int64_t v = whole(L, t, narrow[i].name, *(int *)((char *)&c + narrow[i].off));
        if (v < 0 || v > 8) {
            lua_pushfstring(L, "config: '%s' = %I is out of range", narrow[i].name,
                            (lua_Integer)v);
            model_error(L, SC_ERR_ARG, lua_tostring(L, -1));
        }
        *(int *)((char *)&c + narrow[i].off) = (int)v;
    }
    sc_mdesc *m = NULL;
    char err[256];
    sc_status st = sc_mdesc_new(&c, &m, err, sizeof err);
    if (st != SC_OK)
        model_error(L, st, err);
    return m;
}

/* Under pcall: the description's table (m freed by the caller). */
static int push_protected(lua_State *L)
{
    push_desc(L, lua_touserdata(L, 1), lua_tostring(L, 2));
    return 1;
}

/* Pushes m's table, freeing m on every path. */
static int push_and_free(lua_State *L, sc_mdesc *m, const char *file)
{
    lua_pushcfunction(L, push_protected);
    lua_pushlightuserdata(L, m);
    if (file)
        lua_pushstring(L, file);
    else
        lua_pushnil(L);
    int rc = lua_pcall(L, 2, 1, 0);
    sc_mdesc_free(m);
    return rc == LUA_OK ? 1 : lua_error(L);
}

/* sc._model_read(path, name): the config.json at path as a table;
 * messages call it `name`. Read as the cost files are (readfile.h): at most
 * 16 MiB, not past --max-time. */
static int l_model_read(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1), *name = luaL_optstring(L, 2, path);
    sc_read rd;
    lua_pushfstring(L, "model: %s", name);
    sc_lua_read_json(L, path, lua_tostring(L, -1), MAX_CONFIG, "config.json", &rd);
    lua_pop(L, 1);
    char err[384];
    sc_status st;
    sc_mdesc *m = NULL;
    st = sc_hf_config_parse(rd.text, rd.len, name, &m, err, sizeof err);
    sc_free(rd.text);
    if (st == SC_ERR_NOMEM)
        return luaL_error(L, "not enough memory");
    if (st != SC_OK)
        return model_error(L, st, err);
    return push_and_free(L, m, name);
}

/* sc.model(path | table): a config.json (the rule above), or a table of
 * sizes checked and completed (defaults filled, params added). */
static int l_model(lua_State *L)
{
    if (lua_istable(L, 1)) {
        lua_settop(L, 1);
        lua_getfield(L, 1, "file");
        const char *file = lua_tostring(L, -1);
        sc_mdesc *m = sc_lua_to_mdesc(L, 1);
        return push_and_free(L, m, file);
    }
    const char *path = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    int granted = lua_getfield(L, -1, "stagecraft") == LUA_TTABLE &&
                  lua_getfield(L, -1, "_granted") == LUA_TTABLE &&
                  lua_getfield(L, -1, path) != LUA_TNIL;
    lua_settop(L, 1);
    if (!granted && !sc_sandbox_read_path(L, path, "sc.model")) {
        lua_pushfstring(L, "%s: %s", path, strerror(ENOENT));
        return model_error(L, SC_ERR_ARG, lua_tostring(L, -1));
    }
    lua_pushcfunction(L, l_model_read);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

void sc_lua_open_model(lua_State *L)
{
    lua_pushcfunction(L, l_model);
    lua_setfield(L, -2, "model");
    lua_pushcfunction(L, l_model_read);
    lua_setfield(L, -2, "_model_read");
}
