/*
 * hfconfig.h — a model description (model/mdesc.h) from a Hugging Face
 * config.json: the file `--model FILE` names (docs/model.md#hugging-face-configs).
 *
 *     sc_mdesc *m;
 *     char err[256];
 *     if (sc_hf_config_read("llama3-8b.json", &m, err, sizeof err) != SC_OK)
 *         puts(err);   // "llama3-8b.json: \"vocab_size\" is missing (model_type llama)"
 *
 * Read: model_type (llama, mistral, qwen2, qwen3, mixtral, deepseek_v3),
 * hidden_size, intermediate_size, num_attention_heads, num_hidden_layers,
 * vocab_size (required); num_key_value_heads (default: the heads),
 * head_dim (default hidden_size / heads), tie_word_embeddings (default
 * false), torch_dtype or dtype (default bfloat16), rope_theta (default
 * 10000) and rms_norm_eps (default 1e-5; numbers > 0); llama's attention_bias
 * and mlp_bias, qwen3's attention_bias; mixtral's num_local_experts and
 * num_experts_per_tok; deepseek_v3's n_routed_experts, num_experts_per_tok,
 * moe_intermediate_size, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
 * v_head_dim (required), q_lora_rank, n_shared_experts (null: none),
 * first_k_dense_replace, moe_layer_freq, attention_bias. Other members are
 * ignored (DeepSeek-V3's num_nextn_predict_layers too: the multi-token
 * prediction module is not part of the model's published total). A null
 * member is an absent one. Every error names the file and the member.
 *
 * Ownership: *out belongs to the caller (sc_mdesc_free). Thread-safety:
 * none needed (no global state).
 *
 * Tested by: tests/unit/test_model.c.
 */
#ifndef SC_HFCONFIG_H
#define SC_HFCONFIG_H

#include <stddef.h>

#include "model/mdesc.h"

/* Reads path (at most 16 MiB, within 10 s) and describes its model.
 * SC_ERR_ARG with "PATH: what" in err (a file that cannot be read, is not
 * JSON, has an unknown model_type, a missing or mistyped member, sizes
 * that sc_mdesc_new refuses); SC_ERR_LIMIT, SC_ERR_NOMEM. */
sc_status sc_hf_config_read(const char *path, sc_mdesc **out, char *err, size_t errlen);

/* The same from text[0..len) in memory, `name` standing for the file in
 * messages. */
sc_status sc_hf_config_parse(const char *text, size_t len, const char *name, sc_mdesc **out,
                             char *err, size_t errlen);

#endif
