/*
 * run_params.c — the parameter bytes a run predicts per device (run_impl.h):
 * parameters and their gradients, and AdamW's two moments, all float32.
 *
 * The decoder's come from interp/model's description (mdesc.h) of the same
 * config: its per-stage parameter count over the runtime's split of the
 * layers (stage 0 the embedding, the last stage the final norm and the
 * output layer, untied as run trains it), so that `run --check` holds the
 * byte model to what the devices allocate (docs/run.md#parameter-bytes).
 * The built-in MLP has no description there: its own sizes
 * (sc_model_param_bytes) predict it.
 */
#include "run_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/mdesc.h"

/* The decoder's description: Mixtral's family with experts, else Llama's. */
static sc_status describe(const sc_model_cfg *c, sc_mdesc **m, char *err, size_t errlen)
{
    sc_mdesc_cfg d = {
        .family = c->experts > 0 ? SC_MF_MIXTRAL : SC_MF_LLAMA, .hidden = c->hidden,
        .inter = c->inter, .heads = c->heads, .kv_heads = c->kv_heads,
        .head_dim = c->head_dim, .layers = c->layers, .vocab = c->vocab,
        .experts = c->experts, .experts_per_tok = c->experts_per_tok,
        .moe_inter = c->moe_inter,
        .shared_experts = c->shared_inter > 0 && c->moe_inter > 0 ? c->shared_inter / c->moe_inter
                                                                  : 0,
        .rope_theta = c->rope_theta, .norm_eps = c->norm_eps, .param_bytes = 4, .act_bytes = 4};
    return sc_mdesc_new(&d, m, err, errlen);
}

static sc_status decoder_params(const sc_prog *pg, const sc_model *md, size_t *per_dev,
                                char *err, size_t errlen)
{
    int S = sc_prog_stages(pg);
    sc_mdesc *m = NULL;
    sc_status st = describe(sc_model_config(md), &m, err, errlen);
    int *first = malloc((size_t)S * sizeof(int));
    int64_t *n = malloc((size_t)S * sizeof(int64_t));
    if (!st && (!first || !n)) {
        snprintf(err, errlen, "out of memory");
        st = SC_ERR_NOMEM;
    }
    for (int s = 0; s < S && !st; s++)
        sc_model_stage_layers(md, s, &first[s]);
    if (!st)
        st = sc_mdesc_stage_params(m, S, first, n, err, errlen);
    const sc_model_cfg *c = sc_model_config(md);
    int ep = c->ep > 1 ? c->ep : 1;
    int64_t routed = c->experts * 3 * c->hidden * (c->moe_inter > 0 ? c->moe_inter : c->inter);
    for (int s = 0; s < S && !st; s++) { /* with its gradient, float32 */
        int count = sc_model_stage_layers(md, s, &first[s]);
        n[s] -= count * (routed - routed / ep); /* ep > 1: 1/ep of each layer's experts */
        per_dev[sc_prog_stage_device(pg, s)] += 2 * (size_t)n[s] * sizeof(float);
    }
    free(first);
    free(n);
    sc_mdesc_free(m);
    return st;
}

sc_status sc_run_predict_params(const sc_prog *pg, const sc_model *md, sc_run_result *r,
                                char *err, size_t errlen)
{
    if (sc_model_config(md)->kind == SC_MODEL_DECODER) {
        sc_status st = decoder_params(pg, md, r->predicted_param_bytes, err, errlen);
        if (st)
            return st;
    } else {
        for (int s = 0; s < r->S; s++)
            r->predicted_param_bytes[sc_prog_stage_device(pg, s)] += sc_model_param_bytes(md, s);
    }
    for (int d = 0; d < r->P; d++) { /* m and v: as many bytes as w and g */
        r->predicted_param_bytes[d] += sc_model_shard_param_bytes(md);
        r->predicted_optim_bytes[d] = r->predicted_param_bytes[d];
    }
    return SC_OK;
}
