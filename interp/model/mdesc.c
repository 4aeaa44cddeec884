/*
 * mdesc.c — the model description (mdesc.h; the formulas are those of
 * docs/model.md#formulas, checked against the published totals in
 * tests/unit/test_model.c).
 *
 * Every count is an int64_t computed with saturating + and x (sat_add,
 * sat_mul): a config with absurd sizes gives INT64_MAX, never a wrapped
 * number, and sc_mdesc_new refuses one whose parameter total saturates.
 */
#include "model/mdesc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/alloc.h"

struct sc_mdesc {
    sc_mdesc_cfg c;   /* checked, defaults filled */
    int64_t p[SC_ML_COUNT]; /* parameters of one layer of each kind */
    int64_t total;
};

static const char *const family_names[] = {
#define X(name, str) str,
    SC_MFAMILIES(X)
#undef X
};
static const char *const layer_names[] = {
#define X(name, str) str,
    SC_MLAYERS(X)
#undef X
};

const char *sc_mfamily_name(sc_mfamily f)
{
    return f >= 0 && f < SC_MF_COUNT ? family_names[f] : "unknown";
}

const char *sc_mlayer_name(sc_mlayer k)
{
    return k >= 0 && k < SC_ML_COUNT ? layer_names[k] : "unknown";
}

sc_mfamily sc_mfamily_find(const char *name)
{
    for (int f = 0; f < SC_MF_COUNT; f++)
        if (f != SC_MF_GPT && name && strcmp(name, family_names[f]) == 0)
            return (sc_mfamily)f;
    return SC_MF_COUNT;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* a x b x c, saturating. */
static int64_t mul3(int64_t a, int64_t b, int64_t c) { return sat_mul(sat_mul(a, b), c); }

static sc_status fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static sc_status fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return SC_ERR_ARG;
}

static int is_mla(const sc_mdesc_cfg *c) { return c->kv_lora_rank > 0; }

/* Widths of attention: what q and k have per head (d_qk), what v and the
 * output have (d_v), and the heads k and v have (kv). */
static int64_t d_qk(const sc_mdesc_cfg *c)
{
    return is_mla(c) ? c->qk_nope_dim + c->qk_rope_dim : c->head_dim;
}
static int64_t d_v(const sc_mdesc_cfg *c) { return is_mla(c) ? c->v_head_dim : c->head_dim; }

/* Weights of attention's matrix products (no biases, no norms). */
static int64_t attn_weights(const sc_mdesc_cfg *c)
{
    int64_t h = c->hidden, H = c->heads;
    if (!is_mla(c)) {
        int64_t qd = H * c->head_dim, kd = c->kv_heads * c->head_dim;
        return sat_add(sat_mul(2 * h, qd), sat_mul(2 * h, kd)); /* q, o; k, v */
    }
    /* MLA (DeepSeek-V2 section 2.1): q through a rank-q_lora_rank bottleneck
     * (or straight), k and v from one rank-kv_lora_rank latent plus a shared
     * rope key, the output from H v-heads. */
    int64_t ql = c->q_lora_rank, kl = c->kv_lora_rank, r = c->qk_rope_dim;
    int64_t q = ql ? sat_add(sat_mul(h, ql), mul3(ql, H, d_qk(c))) : mul3(h, H, d_qk(c));
    int64_t kv = sat_add(sat_mul(h, kl + r), mul3(kl, H, c->qk_nope_dim + c->v_head_dim));
    return sat_add(sat_add(q, kv), mul3(H, c->v_head_dim, h));
}

/* Parameters of attention besides its weights: biases and norms. */
static int64_t attn_extra(const sc_mdesc_cfg *c)
{
    int64_t h = c->hidden, n = 0;
    if (is_mla(c)) {
        n = c->q_lora_rank + c->kv_lora_rank; /* q_a_layernorm, kv_a_layernorm */
        if (c->attn_bias) /* q_a_proj, kv_a_proj_with_mqa, o_proj */
            n += c->q_lora_rank + c->kv_lora_rank + c->qk_rope_dim + h;
        return n;
    }
    int64_t qd = c->heads * c->head_dim, kd = c->kv_heads * c->head_dim;
    if (c->attn_bias || c->qkv_bias)
        n += qd + 2 * kd;
    if (c->attn_bias)
        n += h;
    if (c->qk_norm)
        n += 2 * c->head_dim;
    return n;
}

/* A dense MLP's weights: gpt's two layers (h -> inter -> h, GELU), the
 * others' three (gate, up, down: SwiGLU). */
static int64_t mlp_weights(const sc_mdesc_cfg *c, int64_t width)
{
    return sat_mul(c->family == SC_MF_GPT ? 2 * c->hidden : 3 * c->hidden, width);
}

/* The norms of one decoder layer: two LayerNorms (weight and bias) for
 * gpt, two RMSNorms (weight) otherwise. */
static int64_t layer_norms(const sc_mdesc_cfg *c)
{
    return (c->family == SC_MF_GPT ? 4 : 2) * c->hidden;
}

static void count(sc_mdesc *m)
{
    const sc_mdesc_cfg *c = &m->c;
    int64_t h = c->hidden, V = c->vocab;
    int64_t attn = sat_add(attn_weights(c), attn_extra(c));
    int64_t dense = mlp_weights(c, c->inter);
    if (c->mlp_bias)
        dense = sat_add(dense, (c->family == SC_MF_GPT ? 1 : 2) * c->inter + h);
    m->p[SC_ML_EMBED] = sat_mul(V, h);
    m->p[SC_ML_DENSE] = sat_add(sat_add(attn, dense), layer_norms(c));
    m->p[SC_ML_MOE] = 0;
    if (c->experts) {
        /* routed and shared experts (SwiGLU, no biases), the router's
         * h x E weight and, in DeepSeek-V3, its E biases */
        int64_t experts = mul3(c->experts + c->shared_experts, 3 * h, c->moe_inter);
        int64_t router = sat_add(sat_mul(h, c->experts), c->router_bias ? c->experts : 0);
        m->p[SC_ML_MOE] = sat_add(sat_add(attn, experts), sat_add(router, layer_norms(c)));
    }
    m->p[SC_ML_NORM] = c->family == SC_MF_GPT ? 0 : h;
    m->p[SC_ML_HEAD] = c->tie ? 0 : sat_mul(V, h);
    int64_t t = sat_add(m->p[SC_ML_EMBED], sat_add(m->p[SC_ML_NORM], m->p[SC_ML_HEAD]));
    for (int i = 1; i <= c->layers; i++)
        t = sat_add(t, m->p[sc_mdesc_kind(m, i)]);
    m->total = t;
}

/* The largest size a field may take: far above any model's, small enough
 * that no product of two of them overflows before saturation catches it. */
#define SIZE_MAX_ 16777216

static sc_status check_size(int64_t v, int64_t lo, const char *name, char *err, size_t errlen)
{
    if (v < lo || v > SIZE_MAX_)
        return fail(err, errlen, "\"%s\" = %lld must be %s%lld and at most %d", name,
                    (long long)v, lo ? "at least " : ">= ", (long long)lo, SIZE_MAX_);
    return SC_OK;
}

/* Checks c and fills the defaults. */
static sc_status check_cfg(sc_mdesc_cfg *c, char *err, size_t errlen)
{
    if (c->family < 0 || c->family >= SC_MF_COUNT)
        return fail(err, errlen, "unknown model family %d", (int)c->family);
    const struct { int64_t *v; int64_t lo; const char *name; } f[] = {
        {&c->hidden, 1, "hidden_size"}, {&c->inter, 1, "intermediate_size"},
        {&c->heads, 1, "num_attention_heads"}, {&c->kv_heads, 0, "num_key_value_heads"},
        {&c->head_dim, 0, "head_dim"}, {&c->layers, 1, "num_hidden_layers"},
        {&c->vocab, 1, "vocab_size"}, {&c->experts, 0, "n_routed_experts"},
        {&c->experts_per_tok, 0, "num_experts_per_tok"},
        {&c->shared_experts, 0, "n_shared_experts"},
        {&c->moe_inter, 0, "moe_intermediate_size"}, {&c->first_dense, 0, "first_k_dense_replace"},
        {&c->moe_freq, 0, "moe_layer_freq"}, {&c->q_lora_rank, 0, "q_lora_rank"},
        {&c->kv_lora_rank, 0, "kv_lora_rank"}, {&c->qk_nope_dim, 0, "qk_nope_head_dim"},
        {&c->qk_rope_dim, 0, "qk_rope_head_dim"}, {&c->v_head_dim, 0, "v_head_dim"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        sc_status st = check_size(*f[i].v, f[i].lo, f[i].name, err, errlen);
        if (st)
            return st;
    }
    if (c->layers > 65536)
        return fail(err, errlen, "\"num_hidden_layers\" = %lld must be at most 65536",
                    (long long)c->layers);
    if (!c->kv_heads)
        c->kv_heads = c->heads;
    if (c->heads % c->kv_heads)
        return fail(err, errlen, "\"num_key_value_heads\" = %lld must divide "
                    "\"num_attention_heads\" = %lld", (long long)c->kv_heads, (long long)c->heads);
    if (!c->head_dim && !(c->kv_lora_rank)) {
        if (c->hidden % c->heads)
            return fail(err, errlen, "\"num_attention_heads\" = %lld must divide \"hidden_size\" "
                        "= %lld (or \"head_dim\" be given)", (long long)c->heads,
                        (long long)c->hidden);
        c->head_dim = c->hidden / c->heads;
    }
    if (c->kv_lora_rank) {
        const struct { int64_t v; const char *name; } mla[] = {
            {c->qk_nope_dim, "qk_nope_head_dim"}, {c->qk_rope_dim, "qk_rope_head_dim"},
            {c->v_head_dim, "v_head_dim"}};
        for (int i = 0; i < 3; i++)
            if (mla[i].v < 1)
                return fail(err, errlen, "\"%s\" must be at least 1 with \"kv_lora_rank\"",
                            mla[i].name);
    }
    if (c->experts) {
        if (c->experts_per_tok < 1 || c->experts_per_tok > c->experts)
            return fail(err, errlen, "\"num_experts_per_tok\" = %lld must be 1 to the %lld "
                        "experts", (long long)c->experts_per_tok, (long long)c->experts);
        if (!c->moe_inter)
            c->moe_inter = c->inter;
        if (!c->moe_freq)
            c->moe_freq = 1;
    }
    if (c->param_bytes != 2 && c->param_bytes != 4)
        return fail(err, errlen, "\"torch_dtype\": %d bytes per parameter, expected 2 or 4",
                    c->param_bytes);
    if (c->act_bytes != 2 && c->act_bytes != 4)
        return fail(err, errlen, "activations: %d bytes per element, expected 2 or 4",
                    c->act_bytes);
    return SC_OK;
}

sc_status sc_mdesc_new(const sc_mdesc_cfg *cfg, sc_mdesc **out, char *err, size_t errlen)
{
    *out = NULL;
    sc_mdesc_cfg c = *cfg;
    sc_status st = check_cfg(&c, err, errlen);
    if (st)
        return st;
    sc_mdesc *m = sc_calloc(1, sizeof *m);
    if (!m) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    m->c = c;
    count(m);
    if (m->total == INT64_MAX) {
        sc_mdesc_free(m);
        return fail(err, errlen, "the model's parameter count overflows 64 bits");
    }
    *out = m;
    return SC_OK;
}

sc_status sc_mdesc_gpt(int64_t layers, int64_t hidden, int64_t vocab, int64_t heads,
                       sc_mdesc **out, char *err, size_t errlen)
{
    *out = NULL;
    const struct { int64_t v; const char *name; } f[] = {
        {layers, "layers"}, {hidden, "hidden"}, {vocab, "vocab"}};
    for (int i = 0; i < 3; i++)
        if (f[i].v < 1 || f[i].v > SIZE_MAX_)
            return fail(err, errlen, "%s = %lld must be 1 to %d", f[i].name, (long long)f[i].v,
                        SIZE_MAX_);
    if (heads == 0)
        heads = hidden % 128 == 0 ? hidden / 128 : 1;
    if (heads < 1 || hidden % heads)
        return fail(err, errlen, "heads = %lld must divide hidden = %lld", (long long)heads,
                    (long long)hidden);
    sc_mdesc_cfg c = {
        .family = SC_MF_GPT, .hidden = hidden, .inter = 4 * hidden, .heads = heads,
        .kv_heads = heads, .layers = layers, .vocab = vocab, .attn_bias = 1, .mlp_bias = 1,
        .param_bytes = 2, .act_bytes = 2,
    };
    return sc_mdesc_new(&c, out, err, errlen);
}

void sc_mdesc_free(sc_mdesc *m) { sc_free(m); }

const sc_mdesc_cfg *sc_mdesc_config(const sc_mdesc *m) { return &m->c; }
int sc_mdesc_nlayers(const sc_mdesc *m) { return (int)m->c.layers + 3; }
int sc_mdesc_decoders(const sc_mdesc *m) { return (int)m->c.layers; }

sc_mlayer sc_mdesc_kind(const sc_mdesc *m, int i)
{
    int L = (int)m->c.layers;
    if (i <= 0)
        return SC_ML_EMBED;
    if (i == L + 1)
        return SC_ML_NORM;
    if (i > L)
        return SC_ML_HEAD;
    int64_t l = i - 1; /* config.json's layer_idx */
    const sc_mdesc_cfg *c = &m->c;
    return c->experts && l >= c->first_dense && l % c->moe_freq == 0 ? SC_ML_MOE : SC_ML_DENSE;
}

int64_t sc_mdesc_params(const sc_mdesc *m, int i)
{
    return i < 0 ? m->total : m->p[sc_mdesc_kind(m, i)];
}

int64_t sc_mdesc_frozen(const sc_mdesc *m, int i)
{
    const sc_mdesc_cfg *c = &m->c;
    int64_t per = c->router_bias ? c->experts : 0;
    if (i >= 0)
        return sc_mdesc_kind(m, i) == SC_ML_MOE ? per : 0;
    int64_t n = 0;
    for (int j = 1; j <= (int)c->layers; j++)
        n += sc_mdesc_kind(m, j) == SC_ML_MOE ? per : 0;
    return n;
}

int64_t sc_mdesc_tied(const sc_mdesc *m) { return m->c.tie ? m->p[SC_ML_EMBED] : 0; }

/* Forward FLOPs per token of one layer of kind k (see mdesc.h). */
static int64_t kind_flops(const sc_mdesc *m, sc_mlayer k, int64_t seq)
{
    const sc_mdesc_cfg *c = &m->c;
    int64_t h = c->hidden, V = c->vocab;
    switch (k) {
    case SC_ML_EMBED:
        return 2 * h;
    case SC_ML_NORM:
        return 0;
    case SC_ML_HEAD:
        return sat_add(sat_mul(2 * h, V), 5 * V);
    default:
        break;
    }
    /* scores q k^T and the weighted sum of v over the whole s x s square */
    int64_t core = mul3(2 * seq, c->heads, d_qk(c) + d_v(c));
    int64_t w = attn_weights(c);
    if (k == SC_ML_MOE)
        w = sat_add(w, sat_add(mul3(c->experts_per_tok + c->shared_experts, 3 * h, c->moe_inter),
                               sat_mul(h, c->experts)));
    else
        w = sat_add(w, mlp_weights(c, c->inter));
    return sat_add(sat_mul(2, w), core);
}

int sc_mdesc_moe_act(const sc_mdesc *m, sc_mact *t)
{
    const sc_mdesc_cfg *c = &m->c;
    int64_t h = c->hidden, k = c->experts_per_tok, I = c->moe_inter;
    int64_t S = sat_mul(c->shared_experts, I);
    int e = c->act_bytes;
    const sc_mact all[SC_MACT_MOE_MAX] = {
        {"y", h, e}, {"xn2", h, e},      /* the norm's input and output */
        {"prob", c->experts, 4},          /* the router's softmax, fp32 */
        {"sel", k, 8}, {"wt", k, e},      /* each copy's expert (int64), weight */
        {"pos", k, 8},                    /* its place in the gathered rows */
        {"xg", sat_mul(k, h), e},         /* per copy: its input, */
        {"gate", sat_mul(k, I), e}, {"up", sat_mul(k, I), e}, /* the SwiGLU's */
        {"a", sat_mul(k, I), e},          /* inputs and product, */
        {"yg", sat_mul(k, h), e},         /* the expert's output (dwt reads it) */
        {"gs", S, e}, {"us", S, e}, {"as", S, e}, /* the shared experts' SwiGLU */
    };
    int n = S ? SC_MACT_MOE_MAX : SC_MACT_MOE_MAX - 3;
    memcpy(t, all, (size_t)n * sizeof *t);
    return n;
}

/* Bytes per token one layer of kind k keeps for backward (see
 * docs/model.md#formulas for each term). e: an activation's element. */
static int64_t kind_act(const sc_mdesc *m, sc_mlayer k, int64_t seq, sc_attn_mem attn)
{
    const sc_mdesc_cfg *c = &m->c;
    int64_t h = c->hidden, e = c->act_bytes, H = c->heads;
    int gpt = c->family == SC_MF_GPT;
    switch (k) {
    case SC_ML_EMBED:
        return 0;
    case SC_ML_NORM:
        return gpt ? 0 : e * h;            /* its input */
    case SC_ML_HEAD:
        return sat_add(e * h, sat_mul(4, c->vocab)); /* its input, fp32 probabilities */
    default:
        break;
    }
    /* attention: the norm's input and output (the projections' input) */
    int64_t a = 2 * e * h;
    if (is_mla(c)) {
        int64_t ql = c->q_lora_rank, kl = c->kv_lora_rank;
        a += 2 * e * ql;                         /* q_a's output, its norm's output */
        a += e * (kl + c->qk_rope_dim) + e * kl; /* kv_a's output, its norm's output */
    } else if (c->qk_norm) {
        a += e * (H + c->kv_heads) * c->head_dim; /* the q and k norms' inputs */
    }
    int64_t kvh = is_mla(c) ? H : c->kv_heads;
    /* q and k (after rope), v, and the core's output (o_proj's input) */
    a = sat_add(a, sat_mul(e, sat_add(mul3(H + kvh, 1, d_qk(c)), mul3(kvh + H, 1, d_v(c)))));
    if (gpt)
        a += h; /* the attention output's dropout mask, a byte each */
    if (attn == SC_ATTN_FLASH)
        a += 4 * H; /* the softmax's log-sum-exp, fp32 */
    else /* the probabilities (gpt: also their dropout mask and output) */
        a = sat_add(a, mul3(gpt ? 2 * e + 1 : e, H, seq));
    /* the MLP: the norm's input and output (the MLP's input) */
    int64_t f = 2 * e * h;
    if (k == SC_ML_MOE) { /* the block's tensors, one by one */
        sc_mact t[SC_MACT_MOE_MAX];
        f = 0;
        for (int i = 0, n = sc_mdesc_moe_act(m, t); i < n; i++)
            f = sat_add(f, sat_mul(t[i].elems, t[i].bytes));
    } else if (gpt) {
        f += 2 * e * c->inter + h; /* GELU's input, fc2's input; dropout mask */
    } else {
        f += 3 * e * c->inter; /* a fused SwiGLU: gate, up; down's input */
    }
    return sat_add(a, f);
}

int64_t sc_mdesc_flops(const sc_mdesc *m, int i, int64_t seq)
{
    if (i >= 0)
        return kind_flops(m, sc_mdesc_kind(m, i), seq);
    int64_t t = 0;
    for (int j = 0; j < sc_mdesc_nlayers(m); j++)
        t = sat_add(t, kind_flops(m, sc_mdesc_kind(m, j), seq));
    return t;
}

int64_t sc_mdesc_act_bytes(const sc_mdesc *m, int i, int64_t seq, sc_attn_mem attn)
{
    if (i >= 0)
        return kind_act(m, sc_mdesc_kind(m, i), seq, attn);
    int64_t t = 0;
    for (int j = 0; j < sc_mdesc_nlayers(m); j++)
        t = sat_add(t, kind_act(m, sc_mdesc_kind(m, j), seq, attn));
    return t;
}

sc_status sc_mdesc_stage_params(const sc_mdesc *m, int S, const int *first, int64_t *out,
                                char *err, size_t errlen)
{
    int L = (int)m->c.layers;
    if (S < 1)
        return fail(err, errlen, "%d stages: at least 1", S);
    if (first[0] != 0)
        return fail(err, errlen, "stage 0 starts at layer %d: it must start at layer 0",
                    first[0]);
    for (int s = 1; s < S; s++)
        if (first[s] < first[s - 1] || first[s] > L)
            return fail(err, errlen, "stage %d starts at layer %d: expected %d to %d (the "
                        "start of stage %d to the %d layers)", s, first[s], first[s - 1], L,
                        s - 1, L);
    for (int s = 0; s < S; s++) {
        int end = s + 1 < S ? first[s + 1] : L;
        int64_t n = s == 0 ? m->p[SC_ML_EMBED] : 0;
        for (int l = first[s]; l < end; l++)
            n = sat_add(n, m->p[sc_mdesc_kind(m, l + 1)]);
        if (s == S - 1)
            n = sat_add(n, m->p[SC_ML_NORM] + m->p[SC_ML_HEAD]);
        out[s] = n;
    }
    return SC_OK;
}
