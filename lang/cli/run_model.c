/*
 * run_model.c — `run --model config.json` (docs/run.md#the-decoder): the
 * decoder's sizes from a Hugging Face config (interp/formats/hfconfig.h)
 * into the model run trains, and their place in run's output.
 */
#include "cmd_run.h"
#include "cli.h"

#include <stdio.h>

#include "formats/hfconfig.h"
#include "model/mdesc.h"

int sc_cli_run_decoder(const char *path, sc_model_cfg *mc)
{
    sc_mdesc *m = NULL;
    char err[512];
    if (sc_hf_config_read(path, &m, err, sizeof err) != SC_OK)
        return sc_cli_fail(SC_EXIT_USAGE, err);
    const sc_mdesc_cfg *c = sc_mdesc_config(m);
    const char *what = c->experts > 0                   ? "MoE"
                       : c->kv_lora_rank > 0            ? "multi-head latent attention (MLA)"
                       : c->attn_bias || c->qkv_bias || c->mlp_bias ? "biases"
                       : c->qk_norm                     ? "qk_norm"
                                                        : NULL;
    if (what) {
        snprintf(err, sizeof err, "%s: model_type %s with %s: %s is not trained yet (run "
                 "trains a Llama-style decoder: RMSNorm, rotary, GQA, SwiGLU, no biases)", path,
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
}

void sc_cli_run_decoder_text(const sc_model_cfg *mc)
{
    if (mc->kind == SC_MODEL_DECODER)
        printf("decoder       heads %ld, kv_heads %ld, head_dim %ld, inter %ld, rope_theta %g, "
               "rms_norm_eps %g\n", mc->heads, mc->kv_heads, mc->head_dim, mc->inter,
               mc->rope_theta, mc->norm_eps);
}
