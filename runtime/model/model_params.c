/*
 * model_params.c — the built-in model's parameters (model.h): allocated and
 * initialised where the program places the stages (attach), and the
 * numbering of its tensors that the optimizer's fault, the comparison and
 * the copies' sum share.
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A parameter tensor, or its gradient (grad 1: counted in gbytes too). */
static float *palloc(sc_mdev *dv, size_t n, int *ok, int grad)
{
    float *p = dv->be->ops->alloc(dv->be->ctx, n * sizeof(float));
    if (!p)
        *ok = 0;
    else
        dv->pbytes += n * sizeof(float);
    if (p && grad)
        dv->gbytes += n * sizeof(float);
    return p;
}

/* Layer l's parameters (ll: its index in its copy, whose hash streams it
 * takes: the copies start equal) and zero gradients. */
static void layer_params(sc_mdev *dv, int l, int ll, int *ok)
{
    sc_model *md = dv->md;
    float hs = sqrtf(3.0f / (float)md->h), ls = hs / sqrtf((float)md->L);
    for (int j = 0; j < md->np && *ok; j++) {
        if ((SC_MG(md, l, j) = palloc(dv, md->psz[j], ok, 1)))
            sc_model_fill(dv, SC_MG(md, l, j), md->psz[j], 0, 0, 0.0f);
        SC_MW(md, l, j) = palloc(dv, md->psz[j], ok, 0);
    }
    if (!*ok)
        return;
    if (md->kind == SC_MODEL_DECODER) {
        sc_mdec_init(dv, l, ll);
        return;
    }
    sc_model_fill(dv, SC_MW(md, l, 0), md->psz[0], T_W1, ll, hs);
    sc_model_fill(dv, SC_MW(md, l, 1), md->psz[1], T_W2, ll, ls);
}

/* The output layer (and the decoder's final norm) of copy c. */
static void head_params(sc_mdev *dv, int c, int *ok)
{
    sc_model *md = dv->md;
    size_t hv = (size_t)md->h * (size_t)md->V;
    if (!md->split) {
        if ((md->Wout[c] = palloc(dv, hv, ok, 0)))
            sc_model_fill(dv, md->Wout[c], hv, T_WOUT, 0, sqrtf(3.0f / (float)md->h));
        if ((md->Gout[c] = palloc(dv, hv, ok, 1)))
            sc_model_fill(dv, md->Gout[c], hv, 0, 0, 0.0f);
    }
    if (md->Wn && *ok) {
        if ((md->Wn[c] = palloc(dv, (size_t)md->h, ok, 0)))
            sc_model_fill_const(dv, md->Wn[c], (size_t)md->h, 1.0f);
        if ((md->Gn[c] = palloc(dv, (size_t)md->h, ok, 1)))
            sc_model_fill(dv, md->Gn[c], (size_t)md->h, 0, 0, 0.0f);
    }
}

static sc_mdev *mdev_new(sc_model *md, int d, sc_backend *be)
{
    sc_mdev *dv = calloc(1, sizeof *dv);
    if (dv) {
        dv->targets = malloc((size_t)md->Rmax * sizeof(int32_t));
        dv->stage = malloc(SC_MODEL_CHUNK * sizeof(float));
    }
    if (!dv || !dv->targets || !dv->stage) {
        if (dv) {
            free(dv->targets);
            free(dv->stage);
            free(dv);
        }
        return NULL;
    }
    *dv = (sc_mdev){.md = md, .d = d, .be = be, .targets = dv->targets, .stage = dv->stage};
    return dv;
}

sc_status sc_model_attach(sc_model *md, int d, sc_backend *be, const int *stage_dev,
                          sc_workload *wl, char *err, size_t errlen)
{
    if (md->kind == SC_MODEL_DECODER && !sc_mdec_usable(be)) {
        snprintf(err, errlen, "the %s backend has no decoder layers (backend.h: rmsnorm, rope, "
                 "attn, swiglu)", be->ops->name);
        return SC_ERR_ARG;
    }
    sc_status est = sc_moe_ep_check(md, be, err, errlen);
    if (est != SC_OK)
        return est;
    if (md->E && !sc_moe_usable(be)) {
        snprintf(err, errlen, "the %s backend has no mixture-of-experts slots (backend.h: "
                 "moe_route, moe_gather, moe_combine)", be->ops->name);
        return SC_ERR_ARG;
    }
    sc_mdev *dv = mdev_new(md, d, be);
    if (dv && md->E && !(dv->moe_count = calloc((size_t)(md->ep > 1 ? 2 : 1) * (size_t)md->M *
                                                    (size_t)(md->C * md->L) * (size_t)md->E,
                                                sizeof(int)))) {
        free(dv->targets);
        free(dv->stage);
        free(dv);
        dv = NULL;
    }
    if (!dv) {
        snprintf(err, errlen, "out of memory attaching d%d", d);
        return SC_ERR_NOMEM;
    }
    int ok = 1, any = 0;
    for (int s = 0; s < md->S; s++) {
        if (stage_dev[s] != d)
            continue;
        md->owner[s] = be;
        md->devs[s] = dv;
        any = 1;
        for (int l = md->first[s]; l < md->first[s] + md->count[s] && ok; l++)
            layer_params(dv, l, l % md->L, &ok); /* the copies start from the same parameters */
        if (SC_MLAST(md, s) && ok)
            head_params(dv, SC_MCOPY(md, s), &ok);
        if (s == md->S - 1)
            md->have_loss = 1; /* with copies: only the losses of its own copy */
    }
    /* The vocabulary layers: a shard on every device (split), or the whole
     * embedding on the first stage's (model_vocab.h). */
    if (any && ok && md->vocab != SC_VOCAB_NONE && (md->split || stage_dev[0] == d)) {
        sc_mvocab_cfg vc = {.R = md->Rmax, .rows = md->lens, .batch = (int)md->c.batch,
                            .h = md->h, .V = md->V, .m = md->m, .M = md->M,
                            .P = md->split ? md->P : 1, .d = md->split ? d : 0,
                            .split = md->split, .last_dev = stage_dev[md->S - 1],
                            .first_dev = stage_dev[0], .seed = md->c.seed,
                            .slices = md->slices, .seq = (int)md->c.seq,
                            .init_scale = sqrtf(3.0f / (float)md->h), .share = md->ep_rank};
        if (!(dv->mv = sc_mvocab_new(&vc, be, err, errlen)))
            return SC_ERR_NOMEM; /* sc_model_free releases what was allocated */
    }
    if (!any) {
        free(dv->moe_count);
        free(dv->targets);
        free(dv->stage);
        free(dv);
        dv = NULL;
    }
    const char *bad = be->ops->errmsg ? be->ops->errmsg(be->ctx) : NULL;
    if (ok && bad) {
        snprintf(err, errlen, "d%d: initialising the parameters: %s", d, bad);
        return SC_ERR_RUNTIME;
    }
    if (ok && dv && sc_model_optim_attach(dv) != SC_OK)
        ok = 0;
    if (!ok) {
        snprintf(err, errlen, "out of memory on d%d allocating the parameters (%s backend)", d,
                 be->ops->name);
        return SC_ERR_NOMEM; /* sc_model_free releases what was allocated */
    }
    wl->ops = &sc_model_ops;
    wl->ctx = dv;
    return SC_OK;
}

int sc_model_tensors(const sc_model *md)
{
    return sc_model_layer_tensors(md) + (md->vocab != SC_VOCAB_NONE); /* ... Gemb */
}

const float *sc_model_grad(const sc_model *md, int t, size_t *n)
{
    int s;
    if (t < sc_model_layer_tensors(md))
        return sc_model_tensor_at(md, t, 0, n, &s);
    *n = (size_t)md->h * (size_t)md->V;
    int first, rows; /* Gemb: whole on the first stage, or in shards */
    return md->split || !md->devs[0] || !md->devs[0]->mv
               ? NULL
               : sc_mvocab_emb(md->devs[0]->mv, 0, &first, &rows);
}

size_t sc_model_allocated_optim_bytes(const sc_model *md, int d)
{
    for (int s = 0; s < md->S; s++)
        if (md->devs[s] && md->devs[s]->d == d)
            return sc_adamw_bytes(md->devs[s]->opt);
    return 0;
}

size_t sc_model_allocated_grad_bytes(const sc_model *md, int d)
{
    for (int s = 0; s < md->S; s++) /* the vocabulary layers: half of theirs */
        if (md->devs[s] && md->devs[s]->d == d)
            return md->devs[s]->gbytes +
                   (md->devs[s]->mv ? sc_mvocab_param_bytes(md->devs[s]->mv) / 2 : 0);
    return 0;
}

const sc_model_cfg *sc_model_config(const sc_model *md)
{
    return &md->c;
}
