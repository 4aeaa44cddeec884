/*
 * mdesc.h — one description of the model a schedule trains
 * (docs/model.md): its layers in order, and per layer the parameters, the
 * forward FLOPs per token and the activation bytes per token that training
 * saves for the backward pass. Built from a Hugging Face config.json
 * (formats/hfconfig.h) or from the `-D layers= hidden= vocab= heads=`
 * shorthand (sc_mdesc_gpt); both fill an sc_mdesc_cfg and call
 * sc_mdesc_new, so there is one set of formulas.
 *
 *     sc_mdesc *m;
 *     char err[256];
 *     if (sc_hf_config_read("config.json", &m, err, sizeof err) != SC_OK)
 *         puts(err);          // "config.json: \"hidden_size\" is missing"
 *     int64_t total = sc_mdesc_params(m, -1);          // 8030261248
 *     int first[2] = {0, 16};                          // 2 stages, 16 layers each
 *     int64_t per[2];
 *     sc_mdesc_stage_params(m, 2, first, per, err, sizeof err);
 *     sc_mdesc_free(m);
 *
 * Layers, by index i in 0 .. sc_mdesc_nlayers(m) - 1: 0 the embedding,
 * 1 .. L the decoder layers (attention and an MLP, or attention and a
 * mixture of experts), L + 1 the final norm, L + 2 the head (the output
 * projection and the loss). L is the config's num_hidden_layers.
 *
 * Conventions (docs/model.md#formulas):
 *   - parameters: exact; tied embeddings (tie_word_embeddings) are counted
 *     once, on the embedding; the head then has 0 and sc_mdesc_tied gives
 *     the size of the copy a pipeline's last stage holds besides.
 *   - FLOPs: of the forward pass per token, a multiply-add is 2, matrix
 *     products only (norms, activations and biases are not counted) except
 *     that the embedding counts 2 h (a lookup) and the head 5 V (softmax
 *     and loss), as interp/model/flops.c does. Attention's scores and values
 *     cost 2 s H (d_qk + d_v) per token for sequences of s tokens, the whole
 *     s x s square (no saving for the causal mask: the convention of
 *     Narayanan et al. 2021 and of flops.c). Mixture of experts: the
 *     experts a token is routed to (num_experts_per_tok), not all of them.
 *   - activation bytes: what one token's forward pass keeps for the
 *     backward pass, Korthikanti et al. 2022 (arXiv 2205.05198, section 4.1)
 *     adapted: no dropout, RMSNorm, GQA, a fused SwiGLU, experts; with
 *     FlashAttention (the default) the s x s probabilities are not kept.
 *
 * Ownership: sc_mdesc_free frees (NULL is a no-op). Thread-safety: an
 * sc_mdesc is immutable once built; no global state.
 *
 * Tested by: tests/unit/test_model.c, tests/unit/test_moe_model.c.
 */
#ifndef SC_MDESC_H
#define SC_MDESC_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* The families: X(NAME, "model_type"). gpt is the shorthand's (no
 * config.json has it): LayerNorm with biases, biases on every linear
 * layer, a 4h GELU MLP, as interp/model/flops.c counts. */
#define SC_MFAMILIES(X)                                                                            \
    X(GPT, "gpt")                                                                                  \
    X(LLAMA, "llama")                                                                              \
    X(MISTRAL, "mistral")                                                                          \
    X(QWEN2, "qwen2")                                                                              \
    X(QWEN3, "qwen3")                                                                              \
    X(MIXTRAL, "mixtral")                                                                          \
    X(DEEPSEEK_V3, "deepseek_v3")

typedef enum sc_mfamily {
#define X(name, str) SC_MF_##name,
    SC_MFAMILIES(X)
#undef X
    SC_MF_COUNT
} sc_mfamily;

/* The layer kinds: X(NAME, "name"). */
#define SC_MLAYERS(X)                                                                              \
    X(EMBED, "embedding")                                                                          \
    X(DENSE, "decoder")                                                                            \
    X(MOE, "decoder-moe")                                                                          \
    X(NORM, "final-norm")                                                                          \
    X(HEAD, "head")

typedef enum sc_mlayer {
#define X(name, str) SC_ML_##name,
    SC_MLAYERS(X)
#undef X
    SC_ML_COUNT
} sc_mlayer;

/* How attention keeps its activations: FLASH (a fused kernel keeps Q, K,
 * V, the output and 4 bytes of softmax statistics per head; the default:
 * what every trainer of these models runs, and the only one whose memory
 * does not grow with s^2) or EAGER (also the H x s softmax probabilities
 * per token, Korthikanti's 2as^2b term without its dropout). */
typedef enum sc_attn_mem { SC_ATTN_FLASH, SC_ATTN_EAGER } sc_attn_mem;

/* The sizes of a model, as config.json names them (in comments). 0 means
 * "none" for the optional parts. sc_mdesc_new checks them. */
typedef struct sc_mdesc_cfg {
    sc_mfamily family;
    int64_t hidden;     /* hidden_size: h */
    int64_t inter;      /* intermediate_size: a dense MLP's width */
    int64_t heads;      /* num_attention_heads: H */
    int64_t kv_heads;   /* num_key_value_heads (GQA) */
    int64_t head_dim;   /* head_dim, else hidden / heads */
    int64_t layers;     /* num_hidden_layers: L */
    int64_t vocab;      /* vocab_size: V */
    int tie;            /* tie_word_embeddings */
    int attn_bias;      /* biases on q, k, v and o (llama's attention_bias, gpt) */
    int qkv_bias;       /* biases on q, k, v only (qwen2) */
    int mlp_bias;       /* biases on the MLP's layers (llama's mlp_bias, gpt) */
    int qk_norm;        /* RMSNorm of each head's q and k (qwen3) */
    /* mixture of experts (experts > 0) */
    int64_t experts;        /* num_local_experts (mixtral), n_routed_experts (deepseek) */
    int64_t experts_per_tok; /* num_experts_per_tok: k */
    int64_t shared_experts; /* n_shared_experts */
    int64_t moe_inter;      /* moe_intermediate_size; 0: inter */
    int64_t first_dense;    /* first_k_dense_replace: the first layers stay dense */
    int64_t moe_freq;       /* moe_layer_freq (0 taken as 1): every n-th layer after them */
    int router_bias;        /* the router's e_score_correction_bias (deepseek_v3) */
    /* multi-head latent attention (kv_lora_rank > 0; deepseek_v3) */
    int64_t q_lora_rank;    /* 0: q_proj straight from h */
    int64_t kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
    /* rotary positions and the norms (what `run --model` trains with) */
    double rope_theta;      /* rope_theta (default 10000) */
    double norm_eps;        /* rms_norm_eps (default 1e-5) */
    /* dtypes, bytes per element */
    int param_bytes;    /* torch_dtype: bfloat16, float16 2, float32 4 */
    int act_bytes;      /* activations: 2 (bf16 mixed precision) */
} sc_mdesc_cfg;

typedef struct sc_mdesc sc_mdesc;

/* Builds the description. SC_ERR_ARG with a message naming the field
 * (config.json's name) for a size below 1 where one is needed, heads that
 * kv_heads does not divide, hidden that heads does not divide (no
 * head_dim), experts_per_tok out of 1..experts, a dtype size other than 2
 * or 4; SC_ERR_NOMEM. */
sc_status sc_mdesc_new(const sc_mdesc_cfg *cfg, sc_mdesc **out, char *err, size_t errlen);

/* The shorthand of `-D layers= hidden= vocab= heads=`
 * (docs/vocab.md#the-model-flops-and-bytes): the gpt family, untied, heads 0 meaning hidden /
 * 128 (1 when 128 does not divide hidden). Its parameters are those of
 * interp/model/flops.c: L (12 h^2 + 13 h) + 2 V h (no final norm there, so
 * none here). seq and batch are not the model's: they are arguments of the
 * FLOPs and bytes. Errors as sc_mdesc_new, naming layers, hidden, vocab,
 * heads. */
sc_status sc_mdesc_gpt(int64_t layers, int64_t hidden, int64_t vocab, int64_t heads,
                       sc_mdesc **out, char *err, size_t errlen);

void sc_mdesc_free(sc_mdesc *m);

/* The checked sizes (defaults filled in: kv_heads, head_dim, moe_inter). */
const sc_mdesc_cfg *sc_mdesc_config(const sc_mdesc *m);

/* L + 3 (see above); L. */
int sc_mdesc_nlayers(const sc_mdesc *m);
int sc_mdesc_decoders(const sc_mdesc *m);
/* The kind of layer i (0 .. nlayers - 1). */
sc_mlayer sc_mdesc_kind(const sc_mdesc *m, int i);
const char *sc_mlayer_name(sc_mlayer k);
const char *sc_mfamily_name(sc_mfamily f);
/* The family whose model_type is name; SC_MF_COUNT when none (gpt is not
 * a model_type: it is never found). */
sc_mfamily sc_mfamily_find(const char *name);

/* Parameters of layer i; i = -1: the model's total. */
int64_t sc_mdesc_params(const sc_mdesc *m, int i);
/* Of those, the ones training does not update by gradient (i = -1: all):
 * DeepSeek-V3's router e_score_correction_bias, E per MoE layer, set by
 * the load-balancing rule (a buffer in transformers and Megatron-LM: no
 * gradient, no optimizer state; tests/torch/model_bytes.py). */
int64_t sc_mdesc_frozen(const sc_mdesc *m, int i);
/* Parameters of the tied copy the last stage holds (V h when tied, else 0). */
int64_t sc_mdesc_tied(const sc_mdesc *m);
/* Forward FLOPs per token of layer i (i = -1: all), sequences of seq tokens. */
int64_t sc_mdesc_flops(const sc_mdesc *m, int i, int64_t seq);
/* Bytes per token layer i keeps for the backward pass (i = -1: all). */
int64_t sc_mdesc_act_bytes(const sc_mdesc *m, int i, int64_t seq, sc_attn_mem attn);

/* The tensors a MoE layer keeps for its backward after attention, per
 * token, one by one: name, elements, bytes of one (e = act_bytes; the
 * router's probabilities fp32, indices int64): the norm's input y and
 * output xn2; the router's prob (E); per routed copy (k of them) its
 * expert sel, weight wt and place in the gathered rows pos, its input xg
 * (h), the SwiGLU's gate, up and product a (moe_i each) and the expert's
 * output yg (h); with shared experts their gs, us, as (n_shared moe_i
 * each). The same tensors as the runtime's MoE layer keeps
 * (runtime/model/model_moe.c's sc_moe_act_tensors, in its own dtype;
 * tests/unit/test_moe_model.c). Fills t, returns the count. */
#define SC_MACT_MOE_MAX 14
typedef struct sc_mact {
    const char *name;
    int64_t elems;
    int bytes;
} sc_mact;
int sc_mdesc_moe_act(const sc_mdesc *m, sc_mact *t);

/* Parameters per stage for S stages: first[s] is the first decoder layer
 * (0 .. L) of stage s, first[0] = 0, non-decreasing (a stage may hold no
 * decoder layer); stage s holds decoders first[s] .. first[s+1] - 1 (the
 * last up to L - 1), stage 0 the embedding, stage S - 1 the final norm and
 * the head. out[0 .. S-1] sums to sc_mdesc_params(m, -1) exactly (a tied
 * head's copy is not in it: sc_mdesc_tied). SC_ERR_ARG naming the first
 * bad entry. */
sc_status sc_mdesc_stage_params(const sc_mdesc *m, int S, const int *first, int64_t *out,
                                char *err, size_t errlen);

#endif
