/*
 * test_model.c — the model description (interp/model/mdesc.h) and its
 * config.json reader (interp/formats/hfconfig.h): the published parameter
 * totals of public models, exactly; the stages' parameters summing to the
 * total; the shorthand agreeing with interp/model/flops.c; the named errors.
 * Run from the repository's root (the fixtures are tests/fixtures/models/,
 * copies of the models' config.json files).
 */
#include "formats/hfconfig.h"
#include "harness.h"
#include "model/flops.h"
#include "model/mdesc.h"

#include <stdint.h>

#define FIX "tests/fixtures/models/"

static sc_mdesc *load(const char *file)
{
    sc_mdesc *m = NULL;
    char err[256] = "";
    if (sc_hf_config_read(file, &m, err, sizeof err) != SC_OK)
        fprintf(stderr, "%s\n", err);
    return m;
}

/* The published totals. Sources (each exact figure also matches the
 * rounded one of the model's card):
 *  - Llama-3-8B 8,030,261,248 and Llama-3-70B 70,553,706,496: the
 *    checkpoints' safetensors totals on their Hugging Face pages
 *    (meta-llama/Meta-Llama-3-8B "8.03B", -70B "70.6B"), the exact figures
 *    as public per-tensor recounts list them;
 *  - Qwen2.5-7B 7,615,616,512: Qwen/Qwen2.5-7B's card ("Number of
 *    Parameters: 7.61B; Non-Embedding: 6.53B") and its safetensors total;
 *  - Mixtral-8x7B-v0.1 46,702,792,704: Mistral AI's announcement ("46.7B
 *    total parameters"), the Mixtral paper (arXiv 2401.04088, "47B"), the
 *    checkpoint's safetensors total;
 *  - Mistral-7B-v0.1 7,241,732,096: its safetensors total ("7.24B");
 *  - Qwen3-0.6B 596,049,920: Qwen/Qwen3-0.6B's card ("0.6B; Non-Embedding
 *    0.44B"), tied embeddings, head_dim 128 != hidden / heads;
 *  - DeepSeek-V3 671,026,419,200: the technical report (arXiv 2412.19437,
 *    "671B total parameters") and the weights' notes of
 *    huggingface.co/deepseek-ai/DeepSeek-V3 (README_WEIGHTS): the main
 *    model (embedding, 61 layers, norm, head) is 671B; the multi-token
 *    prediction module (num_nextn_predict_layers, 11.5B unique) is NOT in
 *    it; the exact figure is the per-tensor count
 *    of the checkpoint's main model (FP8 scales excluded), as public
 *    recounts list it. */
static const struct {
    const char *file;
    int64_t total;
} published[] = {
    {FIX "llama3-8b.json", 8030261248LL},     {FIX "llama3-70b.json", 70553706496LL},
    {FIX "qwen2.5-7b.json", 7615616512LL},    {FIX "mixtral-8x7b.json", 46702792704LL},
    {FIX "mistral-7b-v0.1.json", 7241732096LL}, {FIX "qwen3-0.6b.json", 596049920LL},
    {FIX "deepseek-v3.json", 671026419200LL},
};
#define NPUB (sizeof published / sizeof published[0])

TEST(published_totals)
{
    for (size_t i = 0; i < NPUB; i++) {
        sc_mdesc *m = load(published[i].file);
        CHECK(m != NULL);
        if (!m)
            continue;
        if (sc_mdesc_params(m, -1) != published[i].total)
            fprintf(stderr, "%s: %lld, published %lld\n", published[i].file,
                    (long long)sc_mdesc_params(m, -1), (long long)published[i].total);
        CHECK(sc_mdesc_params(m, -1) == published[i].total);
        /* the total is the sum of the layers */
        int64_t sum = 0;
        for (int l = 0; l < sc_mdesc_nlayers(m); l++)
            sum += sc_mdesc_params(m, l);
        CHECK(sum == published[i].total);
        sc_mdesc_free(m);
    }
}

/* Stages: even splits for S = 1..8, and uneven ones with empty stages. */
TEST(stages_sum_to_total)
{
    for (size_t i = 0; i < NPUB; i++) {
        sc_mdesc *m = load(published[i].file);
        if (!m) {
            CHECK(0);
            continue;
        }
        int L = sc_mdesc_decoders(m);
        char err[256];
        for (int S = 1; S <= 8; S++) {
            int first[8];
            int64_t per[8], sum = 0;
            for (int s = 0; s < S; s++)
                first[s] = (int)((int64_t)L * s / S);
            CHECK(sc_mdesc_stage_params(m, S, first, per, err, sizeof err) == SC_OK);
            for (int s = 0; s < S; s++)
                sum += per[s];
            CHECK(sum == published[i].total);
        }
        int first[4] = {0, 0, 1, L}; /* an embedding-only stage, a head-only one */
        int64_t per[4];
        CHECK(sc_mdesc_stage_params(m, 4, first, per, err, sizeof err) == SC_OK);
        CHECK(per[0] == sc_mdesc_params(m, 0));
        CHECK(per[1] == sc_mdesc_params(m, 1));
        CHECK(per[3] == sc_mdesc_params(m, L + 1) + sc_mdesc_params(m, L + 2));
        CHECK(per[0] + per[1] + per[2] + per[3] == published[i].total);
        sc_mdesc_free(m);
    }
}

/* Llama-3-8B, layer by layer (h 4096, H 32, kv 8, d 128, i 14336, V 128256). */
TEST(llama_layers)
{
    sc_mdesc *m = load(FIX "llama3-8b.json");
    if (!m) {
        CHECK(0);
        return;
    }
    CHECK(sc_mdesc_nlayers(m) == 35);
    CHECK(sc_mdesc_kind(m, 0) == SC_ML_EMBED && sc_mdesc_kind(m, 1) == SC_ML_DENSE);
    CHECK(sc_mdesc_kind(m, 32) == SC_ML_DENSE && sc_mdesc_kind(m, 33) == SC_ML_NORM);
    CHECK(sc_mdesc_kind(m, 34) == SC_ML_HEAD);
    CHECK(sc_mdesc_params(m, 0) == 128256LL * 4096);
    /* q, o 4096^2; k, v 4096 x 1024; gate, up, down 4096 x 14336; 2 norms */
    CHECK(sc_mdesc_params(m, 1) == 2LL * 4096 * 4096 + 2LL * 4096 * 1024 + 3LL * 4096 * 14336 +
                                       2 * 4096);
    CHECK(sc_mdesc_params(m, 33) == 4096 && sc_mdesc_params(m, 34) == 128256LL * 4096);
    CHECK(sc_mdesc_tied(m) == 0);
    /* forward FLOPs per token: 2 per weight, 4 s H d for scores and values */
    CHECK(sc_mdesc_flops(m, 1, 8192) ==
          2 * (2LL * 4096 * 4096 + 2LL * 4096 * 1024 + 3LL * 4096 * 14336) + 4LL * 8192 * 4096);
    CHECK(sc_mdesc_flops(m, 34, 8192) == 2LL * 4096 * 128256 + 5 * 128256);
    /* saved bytes (bf16): 2 norms' inputs and outputs 4h, q k v o (H + 2 kv
     * + H) d, SwiGLU 3i; FlashAttention's log-sum-exp 4 H; eager: 2 H s */
    int64_t kept = 2 * (4 * 4096 + (32 + 8 + 8 + 32) * 128 + 3 * 14336);
    CHECK(sc_mdesc_act_bytes(m, 1, 8192, SC_ATTN_FLASH) == kept + 4 * 32);
    CHECK(sc_mdesc_act_bytes(m, 1, 8192, SC_ATTN_EAGER) == kept + 2LL * 32 * 8192);
    CHECK(sc_mdesc_act_bytes(m, 34, 8192, SC_ATTN_FLASH) == 2 * 4096 + 4 * 128256);
    CHECK(sc_mdesc_config(m)->param_bytes == 2);
    sc_mdesc_free(m);
}

/* The terms each family adds, one by one: dropping any changes the total. */
TEST(family_terms)
{
    sc_mdesc *q = load(FIX "qwen2.5-7b.json");
    sc_mdesc *t = load(FIX "qwen3-0.6b.json");
    sc_mdesc *x = load(FIX "mixtral-8x7b.json");
    sc_mdesc *d = load(FIX "deepseek-v3.json");
    if (!q || !t || !x || !d) {
        CHECK(0);
        goto out;
    }
    /* qwen2: q, k, v biases (3584 + 2 x 512), none on o */
    CHECK(sc_mdesc_params(q, 1) == 2LL * 3584 * 3584 + 2LL * 3584 * 512 + 3584 + 2 * 512 +
                                       3LL * 3584 * 18944 + 2 * 3584);
    /* qwen3: head_dim 128 (not 1024 / 16), q and k norms, tied */
    CHECK(sc_mdesc_params(t, 1) == 2LL * 1024 * 2048 + 2LL * 1024 * 1024 + 2 * 128 +
                                       3LL * 1024 * 3072 + 2 * 1024);
    CHECK(sc_mdesc_params(t, 30) == 0 && sc_mdesc_tied(t) == 151936LL * 1024);
    /* mixtral: 8 experts and a 4096 x 8 router */
    CHECK(sc_mdesc_kind(x, 1) == SC_ML_MOE);
    CHECK(sc_mdesc_params(x, 1) == 2LL * 4096 * 4096 + 2LL * 4096 * 1024 +
                                       8 * 3LL * 4096 * 14336 + 4096 * 8 + 2 * 4096);
    /* two experts per token */
    CHECK(sc_mdesc_flops(x, 1, 1) == 2 * (2LL * 4096 * 4096 + 2LL * 4096 * 1024 +
                                          2 * 3LL * 4096 * 14336 + 4096 * 8) + 4 * 4096);
    /* deepseek-v3: 3 dense layers, then MoE; MLA; 256 + 1 experts of 2048,
     * the router's 256 x 7168 weight and 256 correction biases */
    CHECK(sc_mdesc_kind(d, 3) == SC_ML_DENSE && sc_mdesc_kind(d, 4) == SC_ML_MOE);
    int64_t mla = 7168LL * 1536 + 1536 + 1536LL * 128 * 192 + 7168LL * 576 + 512 +
                  512LL * 128 * 256 + 128LL * 128 * 7168;
    CHECK(sc_mdesc_params(d, 1) == mla + 3LL * 7168 * 18432 + 2 * 7168);
    CHECK(sc_mdesc_params(d, 4) ==
          mla + 257 * 3LL * 7168 * 2048 + 256LL * 7168 + 256 + 2 * 7168);
    /* the router's 256 correction biases have no gradient (58 MoE layers);
     * mixtral's router is all weights */
    CHECK(sc_mdesc_frozen(d, 4) == 256 && sc_mdesc_frozen(d, 3) == 0);
    CHECK(sc_mdesc_frozen(d, -1) == 58 * 256 && sc_mdesc_frozen(x, -1) == 0);
    /* MLA's attention core: 2 s H (192 + 128) */
    CHECK(sc_mdesc_flops(d, 4, 1000) - sc_mdesc_flops(d, 4, 0) == 2LL * 1000 * 128 * 320);
out:
    sc_mdesc_free(q);
    sc_mdesc_free(t);
    sc_mdesc_free(x);
    sc_mdesc_free(d);
}

/* The shorthand -D layers= hidden= vocab= agrees with interp/model/flops.c:
 * 12 h^2 + 13 h per layer, V h twice; F 24 h^2 + 4 s h per token; 34 h
 * bytes per token (Korthikanti's, no s^2 term; plus FlashAttention's 4 H),
 * 34 h + 5 H s without FlashAttention; head 2 h V + 5 V, 2 h + 4 V bytes. */
TEST(shorthand)
{
    sc_mdesc *m = NULL;
    char err[256];
    int64_t L = 32, h = 3072, V = 256000, s = 2048, H = 24;
    CHECK(sc_mdesc_gpt(L, h, V, 0, &m, err, sizeof err) == SC_OK);
    if (!m)
        return;
    CHECK(sc_mdesc_config(m)->heads == H);
    CHECK(sc_mdesc_params(m, -1) == L * (12 * h * h + 13 * h) + 2 * V * h);
    CHECK(sc_mdesc_flops(m, 1, s) == 24 * h * h + 4 * s * h);
    CHECK(sc_mdesc_act_bytes(m, 1, s, SC_ATTN_FLASH) == 34 * h + 4 * H);
    CHECK(sc_mdesc_act_bytes(m, 1, s, SC_ATTN_EAGER) == 34 * h + 5 * H * s);
    CHECK(sc_mdesc_flops(m, 0, s) == 2 * h);
    CHECK(sc_mdesc_flops(m, L + 2, s) == 2 * h * V + 5 * V);
    CHECK(sc_mdesc_act_bytes(m, L + 2, s, SC_ATTN_FLASH) == 2 * h + 4 * V);
    CHECK(sc_mdesc_params(m, L + 1) == 0 && sc_mdesc_act_bytes(m, L + 1, s, 0) == 0);
    int first[3] = {0, 11, 22};
    int64_t per[3];
    CHECK(sc_mdesc_stage_params(m, 3, first, per, err, sizeof err) == SC_OK);
    CHECK(per[0] == 11 * (12 * h * h + 13 * h) + V * h);
    CHECK(per[0] + per[1] + per[2] == sc_mdesc_params(m, -1));
    sc_mdesc_free(m);
    CHECK(sc_mdesc_gpt(4, 100, 10, 0, &m, err, sizeof err) == SC_OK); /* heads 1 */
    sc_mdesc_free(m);
    CHECK(sc_mdesc_gpt(0, 4096, 10, 0, &m, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "layers = 0");
    CHECK(sc_mdesc_gpt(2, 4096, 10, 3, &m, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "heads = 3 must divide hidden = 4096");
    CHECK(m == NULL);
}

/* A program sized by the shorthand holds what the description says:
 * each device's parameters (baseline placement, 8 layers a stage) and their
 * bytes by the training set-up (docs/model.md#bytes), and a unit is the
 * decoder layers' activations of one microbatch over the devices. */
TEST(program_bytes)
{
    int64_t L = 32, h = 1024, V = 32000, s = 512;
    sc_prog *pg = sc_prog_new(4, 4, 4);
    sc_mdesc *m = NULL;
    char err[256];
    CHECK(sc_mdesc_gpt(L, h, V, 0, &m, err, sizeof err) == SC_OK);
    CHECK(pg && sc_prog_set_vocab(pg, SC_VOCAB_BASELINE) == SC_OK);
    sc_model_desc md = sc_model_desc_default();
    md.layers = L;
    md.hidden = h;
    md.seq = s;
    md.batch = 1;
    md.vocab = V;
    md.workspace = 1e9;
    if (!m || !pg || sc_prog_set_model(pg, &md) != SC_OK) {
        CHECK(0);
        goto out;
    }
    int first[4] = {0, 8, 16, 24};
    int64_t per[4];
    CHECK(sc_mdesc_stage_params(m, 4, first, per, err, sizeof err) == SC_OK);
    for (int d = 0; d < 4; d++) {
        sc_dev_bytes b = sc_prog_dev_bytes(pg, d);
        CHECK(b.params == per[d]);
        CHECK_NEAR(b.param_bytes, 2.0 * (double)per[d], 0.5);         /* bf16 */
        CHECK_NEAR(b.grads, 4.0 * (double)per[d], 0.5);               /* fp32 */
        CHECK_NEAR(b.optimizer, 12.0 * (double)per[d], 0.5);          /* master, 2 moments */
        CHECK_NEAR(sc_prog_param_bytes(pg, d), 18.0 * (double)per[d], 0.5);
        CHECK_NEAR(sc_prog_static_bytes(pg, d), 18.0 * (double)per[d] + 1e9, 0.5);
    }
    CHECK_NEAR(sc_prog_unit_bytes(pg), (double)sc_mdesc_act_bytes(m, 1, s, SC_ATTN_FLASH) * s * L / 4,
               0.5);
    /* a cap on the total: less what the device holds, in units */
    double u = 0;
    CHECK(sc_prog_bytes_cap(pg, 1, 18.0 * (double)per[1] + 1e9 + 3 * sc_prog_unit_bytes(pg), &u) ==
          SC_OK);
    CHECK_NEAR(u, 3, 1e-9);
    CHECK(sc_prog_bytes_cap(pg, 0, 1e9, &u) == SC_ERR_PROGRAM && sc_prog_cap_refused(pg));
    CHECK_STR(sc_errmsg(pg), "nothing is left for activations");
    /* pure fp32, ZeRO-1 over 8: 4 + 4 + ceil(n / 8) x 8 */
    md.dtype_bytes = 4;
    md.precision = SC_PREC_PURE;
    md.zero = 1;
    md.dp = 8;
    CHECK(sc_prog_set_model(pg, &md) == SC_OK);
    for (int d = 0; d < 4; d++) {
        sc_dev_bytes b = sc_prog_dev_bytes(pg, d);
        CHECK_NEAR(b.param_bytes + b.grads, 8.0 * (double)per[d], 0.5);
        CHECK_NEAR(b.optimizer, 8.0 * (double)((per[d] + 7) / 8), 0.5);
    }
out:
    sc_mdesc_free(m);
    sc_prog_free(pg);
}

/* A tied head: its copy on the last stage is in the bytes, not in the
 * counts, which sum to the total. */
TEST(tied_copy)
{
    sc_mdesc *m = NULL;
    char err[256];
    CHECK(sc_hf_config_read(FIX "qwen3-0.6b.json", &m, err, sizeof err) == SC_OK);
    sc_prog *pg = sc_prog_new(4, 4, 4);
    if (!m || !pg || sc_prog_set_vocab(pg, SC_VOCAB_BASELINE) != SC_OK) {
        CHECK(0);
        goto out;
    }
    sc_model_desc md = sc_model_desc_default();
    md.desc = m;
    md.seq = 1024;
    md.batch = 1;
    md.precision = SC_PREC_PURE;
    CHECK(sc_prog_set_model(pg, &md) == SC_OK);
    int64_t sum = 0;
    for (int d = 0; d < 4; d++)
        sum += sc_prog_dev_bytes(pg, d).params;
    CHECK(sum == sc_mdesc_params(m, -1));
    sc_dev_bytes last = sc_prog_dev_bytes(pg, 3);
    CHECK_NEAR(last.param_bytes, 2.0 * (double)(last.params + sc_mdesc_tied(m)), 0.5);
    md.layers = 27; /* the config has 28 */
    CHECK(sc_prog_set_model(pg, &md) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "layers = 27, but the model's config (qwen3) has 28");
out:
    sc_mdesc_free(m);
    sc_prog_free(pg);
}

static void refused(const char *json, const char *want)
{
    sc_mdesc *m = NULL;
    char err[256] = "";
    CHECK(sc_hf_config_parse(json, strlen(json), "bad.json", &m, err, sizeof err) ==
          SC_ERR_ARG);
    CHECK(m == NULL);
    CHECK_STR(err, "bad.json: ");
    CHECK_STR(err, want);
}

#define BASE "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, " \
             "\"num_hidden_layers\": 2, \"vocab_size\": 100"

TEST(errors)
{
    sc_mdesc *m = NULL;
    char err[256];
    const char *ok = "{\"model_type\": \"llama\", " BASE "}";
    CHECK(sc_hf_config_parse(ok, strlen(ok), "ok.json", &m, err, sizeof err) == SC_OK);
    CHECK(m && sc_mdesc_config(m)->kv_heads == 4 && sc_mdesc_config(m)->head_dim == 16);
    sc_mdesc_free(m);
    refused("{\"model_type\": \"gpt2\", " BASE "}",
            "model_type \"gpt2\" is not supported (known: llama, mistral, qwen2, qwen3, "
            "mixtral, deepseek_v3)");
    refused("{" BASE "}", "\"model_type\" is missing");
    refused("{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, "
            "\"num_attention_heads\": 4, \"num_hidden_layers\": 2}",
            "\"vocab_size\" is missing (model_type llama)");
    refused("{\"model_type\": \"qwen2\", \"hidden_size\": null, \"intermediate_size\": 128, "
            "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 100}",
            "\"hidden_size\" is null (model_type qwen2)");
    refused("{\"model_type\": \"llama\", \"hidden_size\": \"64\", \"intermediate_size\": 128, "
            "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 100}",
            "line 1: \"hidden_size\" is a string, expected a whole number");
    refused("{\"model_type\": \"llama\", \"hidden_size\": 64.5, \"intermediate_size\": 128, "
            "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 100}",
            "\"hidden_size\" = 64.5, expected a whole number >= 0");
    refused("{\"model_type\": \"mixtral\", " BASE ", \"num_experts_per_tok\": 2}",
            "\"num_local_experts\" is missing (model_type mixtral)");
    refused("{\"model_type\": \"mixtral\", " BASE ", \"num_local_experts\": 2, "
            "\"num_experts_per_tok\": 3}",
            "\"num_experts_per_tok\" = 3 must be 1 to the 2 experts");
    refused("{\"model_type\": \"deepseek_v3\", " BASE ", \"n_routed_experts\": 4, "
            "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, \"kv_lora_rank\": 16, "
            "\"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8}",
            "\"v_head_dim\" is missing (model_type deepseek_v3)");
    refused("{\"model_type\": \"llama\", " BASE ", \"num_key_value_heads\": 3}",
            "\"num_key_value_heads\" = 3 must divide \"num_attention_heads\" = 4");
    refused("{\"model_type\": \"llama\", " BASE ", \"tie_word_embeddings\": 1}",
            "\"tie_word_embeddings\" is a number, expected true or false");
    refused("{\"model_type\": \"llama\", " BASE ", \"torch_dtype\": \"int8\"}",
            "\"torch_dtype\" is \"int8\", expected \"bfloat16\", \"float16\" or \"float32\"");
    refused("{\"model_type\": \"llama\", " BASE ", \"hidden_size\": 64}", "appears twice");
    refused("[1]", "the top level is a list");
    refused("{\"model_type\": \"llama\",", "line 1");
    /* float32 and dtype, transformers' newer name */
    const char *f32 = "{\"model_type\": \"mistral\", " BASE ", \"dtype\": \"float32\"}";
    CHECK(sc_hf_config_parse(f32, strlen(f32), "f.json", &m, err, sizeof err) == SC_OK);
    CHECK(m && sc_mdesc_config(m)->param_bytes == 4);
    sc_mdesc_free(m);
    /* a file that is not there: its name in the message */
    CHECK(sc_hf_config_read(FIX "no-such.json", &m, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, FIX "no-such.json: ");
    CHECK(m == NULL);
    /* a bad partition */
    m = load(FIX "llama3-8b.json");
    if (!m) {
        CHECK(0);
        return;
    }
    int64_t per[3];
    int bad0[3] = {1, 2, 3}, bad1[3] = {0, 20, 10}, bad2[3] = {0, 10, 33};
    CHECK(sc_mdesc_stage_params(m, 3, bad0, per, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "stage 0 starts at layer 1");
    CHECK(sc_mdesc_stage_params(m, 3, bad1, per, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "stage 2 starts at layer 10: expected 20 to 32");
    CHECK(sc_mdesc_stage_params(m, 3, bad2, per, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "stage 2 starts at layer 33");
    sc_mdesc_free(m);
}

int main(void)
{
    RUN(published_totals);
    RUN(stages_sum_to_total);
    RUN(llama_layers);
    RUN(family_terms);
    RUN(shorthand);
    RUN(program_bytes);
    RUN(tied_copy);
    RUN(errors);
    return harness_done("model");
}
