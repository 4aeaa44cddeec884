/*
 * hfconfig.c — config.json to a model description (hfconfig.h). The
 * reading stops at the first bad member; its message names the file, the
 * member and, for the members a family needs, the model_type.
 */
#include "formats/hfconfig.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "formats/jsonread.h"
#include "formats/readfile.h"
#include "ir/alloc.h"

/* The state of one reading: the tree, the file's name and the message. */
typedef struct reader {
    const sc_jv *root;
    const char *name;
    const char *type; /* model_type, once known */
    char *err;
    size_t errlen;
} reader;

static sc_status refuse(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static sc_status refuse(reader *r, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s: %s", r->name, what);
    return SC_ERR_ARG;
}

/* Member key as a whole number >= 0 into *v. Absent or null: *v = dflt,
 * or, when required, an error. */
static sc_status get_int(reader *r, const char *key, int required, int64_t dflt, int64_t *v)
{
    const sc_jv *j = sc_jv_get(r->root, key);
    if (!j || j->type == SC_JNULL) {
        if (required)
            return refuse(r, "\"%s\" is %s (model_type %s)", key, j ? "null" : "missing",
                          r->type);
        *v = dflt;
        return SC_OK;
    }
    if (j->type != SC_JNUM)
        return refuse(r, "line %d: \"%s\" is %s, expected a whole number", j->line, key,
                      sc_jv_typename(j->type));
    if (!(j->num >= 0) || j->num > 9007199254740992.0 || j->num != floor(j->num))
        return refuse(r, "line %d: \"%s\" = %g, expected a whole number >= 0", j->line, key,
                      j->num);
    *v = (int64_t)j->num;
    return SC_OK;
}

/* Member key as a boolean into *v (absent or null: dflt). */
static sc_status get_bool(reader *r, const char *key, int dflt, int *v)
{
    const sc_jv *j = sc_jv_get(r->root, key);
    if (!j || j->type == SC_JNULL) {
        *v = dflt;
        return SC_OK;
    }
    if (j->type != SC_JBOOL)
        return refuse(r, "line %d: \"%s\" is %s, expected true or false", j->line, key,
                      sc_jv_typename(j->type));
    *v = j->num != 0;
    return SC_OK;
}

/* Member key as a number > 0 into *v (absent or null: dflt). */
static sc_status get_pos(reader *r, const char *key, double dflt, double *v)
{
    const sc_jv *j = sc_jv_get(r->root, key);
    if (!j || j->type == SC_JNULL) {
        *v = dflt;
        return SC_OK;
    }
    if (j->type != SC_JNUM || !(j->num > 0) || !isfinite(j->num))
        return refuse(r, "line %d: \"%s\" is %s, expected a number > 0", j->line, key,
                      j->type == SC_JNUM ? "not above 0" : sc_jv_typename(j->type));
    *v = j->num;
    return SC_OK;
}

/* torch_dtype (or transformers' newer name, dtype): bytes per parameter. */
static sc_status get_dtype(reader *r, int *bytes)
{
    static const struct { const char *name; int bytes; } types[] = {
        {"bfloat16", 2}, {"float16", 2}, {"float32", 4}};
    const char *key = "torch_dtype";
    const sc_jv *j = sc_jv_get(r->root, key);
    if (!j || j->type == SC_JNULL)
        j = sc_jv_get(r->root, key = "dtype");
    *bytes = 2;
    if (!j || j->type == SC_JNULL)
        return SC_OK;
    if (j->type == SC_JSTR)
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcmp(j->str, types[i].name) == 0) {
                *bytes = types[i].bytes;
                return SC_OK;
            }
    return refuse(r, "line %d: \"%s\" is %s%s%s, expected \"bfloat16\", \"float16\" or "
                  "\"float32\"", j->line, key, j->type == SC_JSTR ? "\"" : sc_jv_typename(j->type),
                  j->type == SC_JSTR ? j->str : "", j->type == SC_JSTR ? "\"" : "");
}

/* The members every family has. */
static sc_status read_common(reader *r, sc_mdesc_cfg *c)
{
    const struct { const char *key; int required; int64_t *v; } f[] = {
        {"hidden_size", 1, &c->hidden}, {"intermediate_size", 1, &c->inter},
        {"num_attention_heads", 1, &c->heads}, {"num_hidden_layers", 1, &c->layers},
        {"vocab_size", 1, &c->vocab}, {"num_key_value_heads", 0, &c->kv_heads},
        {"head_dim", 0, &c->head_dim},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        sc_status st = get_int(r, f[i].key, f[i].required, 0, f[i].v);
        if (st)
            return st;
    }
    sc_status st = get_bool(r, "tie_word_embeddings", 0, &c->tie);
    if (!st)
        st = get_dtype(r, &c->param_bytes);
    if (!st)
        st = get_pos(r, "rope_theta", 10000.0, &c->rope_theta);
    if (!st)
        st = get_pos(r, "rms_norm_eps", 1e-5, &c->norm_eps);
    c->act_bytes = 2;
    return st;
}

/* The members of one family. */
static sc_status read_family(reader *r, sc_mdesc_cfg *c)
{
    sc_status st = SC_OK;
    switch (c->family) {
    case SC_MF_LLAMA:
        st = get_bool(r, "attention_bias", 0, &c->attn_bias);
        if (!st)
            st = get_bool(r, "mlp_bias", 0, &c->mlp_bias);
        return st;
    case SC_MF_QWEN2:
        c->qkv_bias = 1; /* Qwen2Attention: q, k and v with biases, o without */
        return SC_OK;
    case SC_MF_QWEN3:
        c->qk_norm = 1; /* Qwen3Attention: an RMSNorm of head_dim on q and on k */
        return get_bool(r, "attention_bias", 0, &c->attn_bias);
    case SC_MF_MIXTRAL:
        st = get_int(r, "num_local_experts", 1, 0, &c->experts);
        if (!st)
            st = get_int(r, "num_experts_per_tok", 1, 0, &c->experts_per_tok);
        /* DeepSeek's shared experts and expert width, optional here (0: none,
         * intermediate_size): docs/run.md#mixture-of-experts trains them */
        if (!st)
            st = get_int(r, "n_shared_experts", 0, 0, &c->shared_experts);
        if (!st)
            st = get_int(r, "moe_intermediate_size", 0, 0, &c->moe_inter);
        return st;
    case SC_MF_DEEPSEEK_V3: {
        const struct { const char *key; int required; int64_t dflt; int64_t *v; } f[] = {
            {"n_routed_experts", 1, 0, &c->experts},
            {"num_experts_per_tok", 1, 0, &c->experts_per_tok},
            {"moe_intermediate_size", 1, 0, &c->moe_inter},
            {"kv_lora_rank", 1, 0, &c->kv_lora_rank},
            {"qk_nope_head_dim", 1, 0, &c->qk_nope_dim},
            {"qk_rope_head_dim", 1, 0, &c->qk_rope_dim},
            {"v_head_dim", 1, 0, &c->v_head_dim},
            {"q_lora_rank", 0, 0, &c->q_lora_rank},
            {"n_shared_experts", 0, 0, &c->shared_experts},
            {"first_k_dense_replace", 0, 0, &c->first_dense},
            {"moe_layer_freq", 0, 1, &c->moe_freq},
        };
        for (size_t i = 0; i < sizeof f / sizeof f[0] && !st; i++)
            st = get_int(r, f[i].key, f[i].required, f[i].dflt, f[i].v);
        if (!st && c->kv_lora_rank == 0)
            st = refuse(r, "\"kv_lora_rank\" is 0: deepseek_v3's attention needs a latent");
        if (!st && c->moe_freq == 0)
            st = refuse(r, "\"moe_layer_freq\" is 0, expected 1 or more");
        c->router_bias = 1; /* DeepseekV3TopkRouter's e_score_correction_bias */
        c->head_dim = 0;    /* MLA's widths are its own */
        if (!st)
            st = get_bool(r, "attention_bias", 0, &c->attn_bias);
        return st;
    }
    default: /* mistral: no biases, no extras */
        return SC_OK;
    }
}

static sc_status describe(reader *r, sc_mdesc **out)
{
    const sc_jv *root = r->root;
    if (root->type != SC_JOBJ)
        return refuse(r, "the top level is %s, expected an object", sc_jv_typename(root->type));
    const sc_jv *t = sc_jv_get(root, "model_type");
    if (!t)
        return refuse(r, "\"model_type\" is missing");
    if (t->type != SC_JSTR)
        return refuse(r, "line %d: \"model_type\" is %s, expected a string", t->line,
                      sc_jv_typename(t->type));
    sc_mdesc_cfg c = {0};
    c.family = sc_mfamily_find(t->str);
    if (c.family == SC_MF_COUNT) {
        char known[160] = "";
        for (int f = SC_MF_GPT + 1; f < SC_MF_COUNT; f++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                     f > SC_MF_GPT + 1 ? ", " : "", sc_mfamily_name((sc_mfamily)f));
        return refuse(r, "line %d: model_type \"%.40s\" is not supported (known: %s)", t->line,
                      t->str, known);
    }
    r->type = t->str;
    sc_status st = read_common(r, &c);
    if (!st)
        st = read_family(r, &c);
    if (st)
        return st;
    char why[200];
    st = sc_mdesc_new(&c, out, why, sizeof why);
    if (st == SC_ERR_ARG)
        return refuse(r, "%s", why);
    if (st && r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s: %s", r->name, why);
    return st;
}

sc_status sc_hf_config_parse(const char *text, size_t len, const char *name, sc_mdesc **out,
                             char *err, size_t errlen)
{
    *out = NULL;
    reader r = {.name = name, .type = "?", .err = err, .errlen = errlen};
    sc_jv *root = NULL;
    char why[200];
    sc_status st = sc_json_parse(text, len, &root, why, sizeof why);
    if (st == SC_ERR_ARG)
        st = refuse(&r, "%s", why);
    else if (st && err && errlen)
        snprintf(err, errlen, "%s: %s", name, why);
    if (!st) {
        r.root = root;
        st = describe(&r, out);
    }
    sc_jv_free(root);
    return st;
}

sc_status sc_hf_config_read(const char *path, sc_mdesc **out, char *err, size_t errlen)
{
    *out = NULL;
    sc_read rd = {.format = SC_READ_JSON, .max_bytes = 16u << 20,
                  .deadline = sc_clock_now() + 10};
    char why[200];
    sc_status st = sc_read_file(path, &rd, why, sizeof why);
    if (st) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, why);
        return st;
    }
    st = sc_hf_config_parse(rd.text, rd.len, path, out, err, errlen);
    sc_free(rd.text);
    return st;
}
