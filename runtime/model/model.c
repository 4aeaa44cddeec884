/*
 * model.c — the built-in residual MLP (model.h) as a workload of the
 * executor, and its single-device reference.
 */
#include "model_impl.h"
#include "backend/sc_hash.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dimensions are passed to BLAS as int, and element counts of one tensor
 * must fit comfortably in size_t: bound each size, and R * max(h, V). */
#define DIM_MAX (1L << 24)
#define ELEMS_MAX (1L << 31)

#define CHUNK SC_MODEL_CHUNK

#define fill sc_model_fill

/* A failure of the vocabulary layers, with their message. */
static sc_status vocab_fail(sc_mdev *dv, sc_status st)
{
    snprintf(dv->err, sizeof dv->err, "%s", sc_mvocab_errmsg(dv->mv));
    return st;
}

/* The decoder's sizes (model.h): what sc_model_new checks besides. */
static sc_status check_decoder(const sc_model_cfg *cfg, char *err, size_t errlen)
{
    const struct { const char *name; long v; } dims[] = {
        {"heads", cfg->heads}, {"kv_heads", cfg->kv_heads}, {"head_dim", cfg->head_dim},
        {"inter", cfg->inter},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v < 1 || dims[i].v > DIM_MAX) {
            snprintf(err, errlen, "decoder size %s = %ld: must be within 1..%ld", dims[i].name,
                     dims[i].v, DIM_MAX);
            return SC_ERR_ARG;
        }
    if (cfg->heads % cfg->kv_heads || cfg->head_dim % 2) {
        snprintf(err, errlen, "decoder: kv_heads = %ld must divide heads = %ld, and head_dim = "
                 "%ld must be even (rotary pairs)", cfg->kv_heads, cfg->heads, cfg->head_dim);
        return SC_ERR_ARG;
    }
    if (!(cfg->rope_theta > 0) || !(cfg->norm_eps > 0)) {
        snprintf(err, errlen, "decoder: rope_theta = %g and rms_norm_eps = %g must be above 0",
                 cfg->rope_theta, cfg->norm_eps);
        return SC_ERR_ARG;
    }
    if (sc_vocab_split(cfg->vocab_par) || cfg->copies > 1) {
        snprintf(err, errlen, "the decoder is not trained %s yet", cfg->copies > 1
                 ? "with copies of the model (dualpipe)" : "with a split vocabulary");
        return SC_ERR_ARG;
    }
    long R = cfg->seq * cfg->batch, qd = cfg->heads * cfg->head_dim;
    long wide = qd > cfg->inter ? qd : cfg->inter;
    if (R * wide > ELEMS_MAX || cfg->hidden * wide > ELEMS_MAX ||
        cfg->batch * cfg->heads * cfg->seq > ELEMS_MAX / cfg->seq) {
        snprintf(err, errlen, "decoder too large: a tensor of more than %ld floats (seq*batch "
                 "rows of heads*head_dim or inter, or the batch*heads*seq^2 probabilities)",
                 ELEMS_MAX);
        return SC_ERR_LIMIT;
    }
    return cfg->experts ? sc_moe_check(cfg, DIM_MAX, ELEMS_MAX, err, errlen) : SC_OK;
}

sc_status sc_model_new(const sc_model_cfg *cfg, int S, int m, sc_model **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    const struct { const char *name; long v; } dims[] = {
        {"hidden", cfg->hidden}, {"layers", cfg->layers}, {"vocab", cfg->vocab},
        {"seq", cfg->seq}, {"batch", cfg->batch},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (dims[i].v < 1) {
            snprintf(err, errlen, "model size %s = %ld: must be at least 1", dims[i].name,
                     dims[i].v);
            return SC_ERR_ARG;
        }
        if (dims[i].v > DIM_MAX) {
            snprintf(err, errlen, "model size %s = %ld is too large (at most %ld)",
                     dims[i].name, dims[i].v, DIM_MAX);
            return SC_ERR_LIMIT;
        }
    }
    sc_model_cfg big = *cfg; /* the bounds hold for the longest microbatch (cfg.lengths) */
    sc_status lst = sc_model_lengths_check(cfg, m, DIM_MAX, &big.seq, err, errlen);
    if (lst == SC_OK)
        lst = sc_mslice_check(cfg, m, err, errlen);
    if (lst != SC_OK)
        return lst;
    int dec = cfg->kind == SC_MODEL_DECODER; /* what it does not train yet, first */
    sc_status dst = dec ? check_decoder(&big, err, errlen) : SC_OK;
    if (dst != SC_OK)
        return dst;
    int split = sc_vocab_split(cfg->vocab_par) ? (cfg->vocab_par == SC_VOCAB_V1 ? 1 : 2) : 0;
    int P = cfg->devices > 0 ? cfg->devices : 1;
    if (split && cfg->vocab % P != 0) {
        snprintf(err, errlen, "vocab_par = %s splits the vocabulary over the %d devices, but "
                 "vocab = %ld is not a multiple of %d", sc_vocab_name(cfg->vocab_par), P,
                 cfg->vocab, P);
        return SC_ERR_ARG;
    }
    int C = cfg->copies > 1 ? cfg->copies : 1; /* docs/guide.md#copies */
    if (C > 1 && (S % C || m % C || cfg->vocab_par != SC_VOCAB_NONE || cfg->stage_layers)) {
        snprintf(err, errlen, "the model's %d copies need stages and microbatches in multiples "
                 "of %d and no vocabulary layers (vocab_par none)", C, C);
        return SC_ERR_ARG;
    }
    if (cfg->layers < S / C) {
        snprintf(err, errlen,
                 "model has %ld layers for %d stages: every stage needs at least one layer "
                 "(-D layers=%d or more)", cfg->layers, S / C, S / C);
        return SC_ERR_ARG;
    }
    long R = big.seq * cfg->batch, wide = cfg->hidden > cfg->vocab ? cfg->hidden : cfg->vocab;
    if (R > DIM_MAX || R * wide > ELEMS_MAX || cfg->hidden * wide > ELEMS_MAX) {
        snprintf(err, errlen,
                 "model too large: seq*batch = %ld rows of %ld floats, hidden x vocab = %ld x "
                 "%ld (one tensor may hold at most %ld floats)", R, wide, cfg->hidden,
                 cfg->vocab, ELEMS_MAX);
        return SC_ERR_LIMIT;
    }
    sc_status ost = sc_optim_check(&cfg->opt, err, errlen);
    if (ost == SC_OK)
        ost = sc_moe_ep_cfg_check(cfg, err, errlen);
    if (ost != SC_OK)
        return ost;
    int steps = cfg->steps > 1 ? cfg->steps : 1;
    sc_model *md = calloc(1, sizeof *md);
    if (!md)
        goto nomem;
    md->c = *cfg;
    md->S = S;
    md->m = m;
    md->steps = steps;
    md->M = m * steps;
    sc_moe_ep_share(md); /* ep > 1: this rank's sequences */
    md->L = (int)cfg->layers;
    md->C = C;
    md->Sc = S / C;
    md->R = (int)(cfg->seq * md->c.batch);
    md->h = (int)cfg->hidden;
    md->V = (int)cfg->vocab;
    /* The decoder's first stage embeds tokens: the whole embedding at least. */
    md->vocab = dec && cfg->vocab_par == SC_VOCAB_NONE ? SC_VOCAB_BASELINE : cfg->vocab_par;
    md->split = split;
    md->kind = dec ? SC_MODEL_DECODER : SC_MODEL_MLP;
    if (dec) {
        sc_mdec_sizes(md);
    } else {
        md->np = 2;
        md->psz[0] = md->psz[1] = (size_t)md->h * (size_t)md->h;
    }
    md->P = P;
    md->c.stage_layers = NULL; /* not kept: copied below */
    md->first = calloc((size_t)S, sizeof(int));
    md->count = calloc((size_t)S, sizeof(int));
    md->Wl = calloc((size_t)C * md->L * md->np, sizeof(float *));
    md->Gl = calloc((size_t)C * md->L * md->np, sizeof(float *));
    md->Wout = calloc((size_t)C, sizeof(float *));
    md->Gout = calloc((size_t)C, sizeof(float *));
    md->Wn = dec ? calloc((size_t)C, sizeof(float *)) : NULL;
    md->Gn = dec ? calloc((size_t)C, sizeof(float *)) : NULL;
    md->owner = calloc((size_t)S, sizeof(sc_backend *));
    md->devs = calloc((size_t)S, sizeof(sc_mdev *));
    md->loss = calloc((size_t)md->M, sizeof(double));
    md->gstep = malloc((size_t)S * sizeof(int));
    if (!md->first || !md->count || !md->Wl || !md->Gl || !md->Wout || !md->Gout ||
        (dec && (!md->Wn || !md->Gn)) || !md->owner || !md->devs || !md->loss || !md->gstep ||
        sc_model_lengths_init(md) != SC_OK || sc_mslice_init(md) != SC_OK)
        goto nomem;
    md->Rsum *= SC_MEP(md); /* the mean over the EP group's rows */
    for (int s = 0; s < S; s++)
        md->gstep[s] = -1;
    long given = 0;
    for (int s = 0; cfg->stage_layers && s < S; s++)
        given += cfg->stage_layers[s] >= 1 ? cfg->stage_layers[s] : -(1L << 40);
    if (cfg->stage_layers && given != md->L) {
        snprintf(err, errlen, "the program's split of %ld layers over %d stages does not add up",
                 cfg->layers, S);
        sc_model_free(md);
        return SC_ERR_ARG;
    }
    for (int s = 0, l = 0, Sc = md->Sc; s < S; s++) { /* each copy's layers over its stages */
        md->first[s] = l;
        md->count[s] = cfg->stage_layers ? cfg->stage_layers[s]
                                         : md->L / Sc + (s % Sc < md->L % Sc);
        l += md->count[s];
    }
    *out = md;
    return SC_OK;
nomem:
    sc_model_free(md);
    snprintf(err, errlen, "out of memory creating the model");
    return SC_ERR_NOMEM;
}

sc_status sc_model_new_ep_rank(const sc_model *md, int e, sc_model **out, char *err,
                               size_t errlen)
{
    sc_model_cfg c = md->c;
    c.batch *= md->ep;
    c.ep_rank = e;
    c.stage_layers = md->count; /* copied by sc_model_new */
    c.progress = NULL;          /* rank 0 reports */
    double *len = NULL;         /* md's lengths (or slices' records): not kept in md->c */
    if (md->lens && !(c.lengths = len = sc_model_lengths_of(md))) {
        snprintf(err, errlen, "out of memory creating the model");
        return SC_ERR_NOMEM;
    }
    sc_status st = sc_model_new(&c, md->S, md->m, out, err, errlen);
    free(len);
    return st;
}

void sc_model_free(sc_model *md)
{
    if (!md)
        return;
    size_t hv = (size_t)md->h * (size_t)md->V;
    for (int s = 0; s < md->S && md->owner && md->Wl && md->Gl; s++) {
        sc_backend *be = md->owner[s];
        if (!be)
            continue;
        for (int l = md->first[s]; l < md->first[s] + md->count[s]; l++)
            for (int j = 0; j < md->np; j++) {
                be->ops->free(be->ctx, SC_MW(md, l, j), md->psz[j] * sizeof(float));
                be->ops->free(be->ctx, SC_MG(md, l, j), md->psz[j] * sizeof(float));
            }
        int c = SC_MCOPY(md, s);
        if (SC_MLAST(md, s) && !md->split) {
            be->ops->free(be->ctx, md->Wout[c], hv * sizeof(float));
            be->ops->free(be->ctx, md->Gout[c], hv * sizeof(float));
        }
        if (SC_MLAST(md, s) && md->Wn) {
            be->ops->free(be->ctx, md->Wn[c], (size_t)md->h * sizeof(float));
            be->ops->free(be->ctx, md->Gn[c], (size_t)md->h * sizeof(float));
        }
    }
    for (int s = 0; s < md->S && md->devs; s++) {
        sc_mdev *dv = md->devs[s];
        if (!dv)
            continue;
        for (int t = s; t < md->S; t++)
            if (md->devs[t] == dv)
                md->devs[t] = NULL;
        sc_mvocab_free(dv->mv);
        sc_mslice_free(dv);
        free(dv->targets);
        free(dv->stage);
        free(dv->info);
        free(dv->xmb);
        free(dv->moe_count);
        sc_adamw_free(dv->opt);
        if (dv->cdev)
            dv->be->ops->free(dv->be->ctx, dv->cdev, 10 * sizeof(double));
        if (dv->gsum) /* the copies' gradient sum (model_optim.c) */
            dv->be->ops->free(dv->be->ctx, dv->gsum, sc_model_gsum_floats(md) * sizeof(float));
        free(dv);
    }
    free(md->gstep);
    free(md->lens);
    free(md->skv);
    free(md->first);
    free(md->count);
    free(md->Wl);
    free(md->Gl);
    free(md->Wout);
    free(md->Gout);
    free(md->Wn);
    free(md->Gn);
    free(md->owner);
    free(md->devs);
    free(md->loss);
    free(md->ep_time);
    sc_backend_free(md->own_be);
    free(md);
}

int sc_model_stage_layers(const sc_model *md, int s, int *first)
{
    if (first)
        *first = md->first[s];
    return md->count[s];
}

/* ---- the workload: F, B, W of one stage ---- */

static size_t w_boundary(void *ctx, int s, int mb)
{
    (void)s;
    return sc_model_boundary_bytes(((sc_mdev *)ctx)->md, mb);
}

static void w_record(void *ctx, int s, int mb, size_t *kept, size_t *b_only)
{
    *kept = sc_model_record_kept_bytes(((sc_mdev *)ctx)->md, s, mb);
    *b_only = sc_model_record_bonly_bytes(((sc_mdev *)ctx)->md, s, mb);
}

/* The record in parts, one per tensor (offload moves whole parts): x, a,
 * dZ, dY of each block, then x and dlogits of the head. */
int sc_model_record_parts(const sc_model *md, int s, int mb, size_t *bytes, int max)
{
    if (md->kind == SC_MODEL_DECODER)
        return sc_mdec_record_parts(md, s, mb, bytes, max);
    size_t R = (size_t)sc_model_rows(md, mb), Rh = R * (size_t)md->h * sizeof(float);
    int n = 4 * md->count[s] + (SC_MLAST(md, s) && !md->split ? 2 : 0);
    for (int i = 0; i < n && i < max; i++)
        bytes[i] = i < 4 * md->count[s] || i == n - 2 ? Rh : R * (size_t)md->V * sizeof(float);
    return n;
}

static int w_parts(void *ctx, int s, int mb, size_t *bytes, int max)
{
    return sc_model_record_parts(((sc_mdev *)ctx)->md, s, mb, bytes, max);
}

/* The loss of microbatch mb from the logits in dl (R x V), overwritten by
 * their gradient (the last stage, the whole output layer). */
static sc_status head_loss(sc_mdev *dv, int mb, float *dl)
{
    sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    int R = sc_model_rows(md, mb);
    /* ep > 1: the rank's share of its microbatch's rows (a slice's: the whole one's) */
    uint64_t share = (uint64_t)md->ep_rank * (uint64_t)(md->slices > 1 ? md->R : R);
    for (int r = 0, xm, xr; r < R; r++) { /* a slice's: its microbatch's rows */
        sc_mslice_row(md, mb, r, &xm, &xr);
        dv->targets[r] = (int32_t)(sc_hash3(md->c.seed, sc_stream(T_TARGET, xm),
                                            share + (uint64_t)xr) % (uint64_t)md->V);
    }
    float scale = (float)(1.0 / md->Rsum); /* the mean over a step's rows */
    md->loss[mb] = o->xent(dv->be->ctx, R, md->V, dl, dv->targets, scale);
    sc_model_graph_note(dv, mb); /* run --graph: read after the replay */
    const char *bad = o->errmsg ? o->errmsg(dv->be->ctx) : NULL;
    if (bad) {
        snprintf(dv->err, sizeof dv->err, "%s", bad);
        return SC_ERR_RUNTIME;
    }
    if (!isfinite(md->loss[mb])) {
        snprintf(dv->err, sizeof dv->err, "the loss of microbatch %d is not finite", mb);
        return SC_ERR_RUNTIME;
    }
    return SC_OK;
}

/* The MLP's blocks and logits (model.h). */
static void mlp_forward(sc_mdev *dv, int s, int mb, void *out, float **T)
{
    sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, last = SC_MLAST(md, s), n = md->count[s];
    size_t Rh = (size_t)R * (size_t)h;
    for (int i = 0; i < n; i++) {
        int l = md->first[s] + i;
        float *x = T[4 * i], *a = T[4 * i + 1];
        o->gemm(bc, 0, 0, R, h, h, 1.0f, x, SC_MW(md, l, 0), 0.0f, a);
        o->tanh_fwd(bc, Rh, a);
        /* The last block's output: the next stage's input, the head's
         * (kept in the record), or, with a split vocabulary, the broadcast. */
        float *next = i + 1 < n || (last && !md->split) ? T[4 * i + 4] : out;
        o->copy(bc, Rh, x, next);
        o->gemm(bc, 0, 0, R, h, h, 1.0f, a, SC_MW(md, l, 1), 1.0f, next);
    }
    if (last && !md->split)
        o->gemm(bc, 0, 0, R, md->V, h, 1.0f, T[4 * n], md->Wout[SC_MCOPY(md, s)], 0.0f,
                T[4 * n + 1]);
}

static sc_status w_forward(void *ctx, int s, int mb, const void *in, void *out, void *kept,
                           void *b_only)
{
    sc_mdev *dv = ctx;
    sc_model *md = dv->md;
    size_t Rh = (size_t)sc_model_rows(md, mb) * (size_t)md->h;
    int last = SC_MLAST(md, s);
    float **T = kept; /* the record's parts (record_parts) */
    if (s == 0 && dv->mv) { /* the embedding's rows (model_vocab.h) */
        if (sc_mvocab_input(dv->mv, mb, T[0]) != SC_OK)
            return vocab_fail(dv, SC_ERR_PROGRAM);
    } else if (SC_MFIRST(md, s) && md->slices > 1) { /* its microbatch's rows (model_slices.c) */
        sc_mslice_input(dv, mb, T[0]);
    } else if (SC_MFIRST(md, s)) { /* the input (each copy's first stage) */
        fill(dv, T[0], Rh, T_INPUT, mb % md->m, 1.0f);
    } else if (in != T[0]) { /* a redone F (exec/exec.h) may hand back the input it kept */
        dv->be->ops->copy(dv->be->ctx, Rh, in, T[0]);
    }
    if (last && md->split && !(out = sc_mvocab_output_buf(dv->mv, mb)))
        return vocab_fail(dv, SC_ERR_NOMEM); /* the output is broadcast to every S */
    if (md->kind == SC_MODEL_DECODER) {
        sc_status st = sc_mdec_forward(dv, s, mb, out, T, b_only);
        if (st != SC_OK)
            return st;
        return last ? head_loss(dv, mb, sc_mdec_logits(md, s, T)) : SC_OK;
    }
    mlp_forward(dv, s, mb, out, T);
    return last && !md->split ? head_loss(dv, mb, T[4 * md->count[s] + 1]) : SC_OK;
}

/* The MLP's input gradient (model.h's B); gout NULL: not needed. */
static sc_status mlp_backward_input(sc_mdev *dv, int s, int mb, const void *gin, void *gout,
                                    float **T)
{
    sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, n = md->count[s];
    size_t Rh = (size_t)R * (size_t)h;
    float *dytop = T[4 * n - 1];
    if (s == md->S - 1 && md->split) { /* the all-reduced input gradient */
        if (sc_mvocab_output_grad(dv->mv, mb, dytop) != SC_OK)
            return vocab_fail(dv, SC_ERR_PROGRAM);
    } else if (SC_MLAST(md, s)) {
        float *dl = T[4 * n + 1];
        o->gemm(bc, 0, 1, R, h, md->V, 1.0f, dl, md->Wout[SC_MCOPY(md, s)], 0.0f, dytop);
    } else {
        o->copy(bc, Rh, gin, dytop);
    }
    for (int i = n - 1; i >= 0; i--) {
        int l = md->first[s] + i;
        float *a = T[4 * i + 1], *dz = T[4 * i + 2], *dy = T[4 * i + 3];
        o->gemm(bc, 0, 1, R, h, h, 1.0f, dy, SC_MW(md, l, 1), 0.0f, dz);
        o->tanh_bwd(bc, Rh, a, dz);
        float *dst = i > 0 ? T[4 * i - 1] : gout; /* the block before's dY */
        if (!dst)
            continue; /* the input gradient of stage 0 is not needed */
        o->copy(bc, Rh, dy, dst);
        o->gemm(bc, 0, 1, R, h, h, 1.0f, dz, SC_MW(md, l, 0), 1.0f, dst);
    }
    return SC_OK;
}

static sc_status w_backward_input(void *ctx, int s, int mb, const void *gin, void *gout,
                                  void *kept, void *b_only)
{
    sc_mdev *dv = ctx;
    sc_model *md = dv->md;
    if (md->kind == SC_MODEL_DECODER) /* its embedding's gradient is W's */
        return sc_mdec_backward_input(dv, s, mb, gin, gout, kept, b_only);
    if (s == 0 && dv->mv && !(gout = sc_mvocab_dx0(dv->mv, mb)))
        return vocab_fail(dv, SC_ERR_NOMEM);
    sc_status st = mlp_backward_input(dv, s, mb, gin, gout, kept);
    if (st)
        return st;
    /* The embedding's gradient: scattered into it (whole), or broadcast to
     * every EW (split); in a new step after its gradients are zeroed. */
    if (s == 0 && dv->mv) {
        sc_model_grads_for(dv, s, mb / md->m);
        if (sc_mvocab_dx0_done(dv->mv, mb) != SC_OK)
            return vocab_fail(dv, SC_ERR_PROGRAM);
    }
    return SC_OK;
}

static sc_status w_backward_weight(void *ctx, int s, int mb, void *kept)
{
    sc_mdev *dv = ctx;
    sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, n = md->count[s];
    float **T = kept;
    sc_model_grads_for(dv, s, mb / md->m);
    if (md->kind == SC_MODEL_DECODER)
        return sc_mdec_backward_weight(dv, s, mb, T);
    for (int i = 0; i < n; i++) {
        int l = md->first[s] + i;
        float *x = T[4 * i], *a = T[4 * i + 1], *dz = T[4 * i + 2], *dy = T[4 * i + 3];
        o->gemm(bc, 1, 0, h, h, R, 1.0f, a, dy, 1.0f, SC_MG(md, l, 1));
        o->gemm(bc, 1, 0, h, h, R, 1.0f, x, dz, 1.0f, SC_MG(md, l, 0));
    }
    if (SC_MLAST(md, s) && !md->split) {
        float *xh = T[4 * n], *dl = T[4 * n + 1];
        o->gemm(bc, 1, 0, h, md->V, R, 1.0f, xh, dl, 1.0f, md->Gout[SC_MCOPY(md, s)]);
    }
    return SC_OK;
}

void sc_model_grads_for(sc_mdev *dv, int s, int step)
{
    sc_model *md = dv->md;
    if (md->gstep[s] == step)
        return;
    if (md->gstep[s] >= 0) { /* an earlier step's: start again from zero */
        for (int l = md->first[s]; l < md->first[s] + md->count[s]; l++)
            for (int j = 0; j < md->np; j++)
                fill(dv, SC_MG(md, l, j), md->psz[j], 0, 0, 0.0f);
        if (SC_MLAST(md, s) && !md->split)
            fill(dv, md->Gout[SC_MCOPY(md, s)], (size_t)md->h * (size_t)md->V, 0, 0, 0.0f);
        if (SC_MLAST(md, s) && md->Gn)
            fill(dv, md->Gn[SC_MCOPY(md, s)], (size_t)md->h, 0, 0, 0.0f);
        if (s == 0 && dv->mv && !md->split) { /* the whole embedding's, through dv's
                                                * backend (a lane's: model_decoder.c) */
            int first, rows;
            float *g = (float *)sc_mvocab_emb(dv->mv, 0, &first, &rows);
            fill(dv, g, (size_t)rows * (size_t)md->h, 0, 0, 0.0f);
        }
    }
    md->gstep[s] = step;
}

static const char *w_errmsg(void *ctx)
{
    return ((sc_mdev *)ctx)->err;
}

/* The vocabulary passes (model_vocab.h): S, T, E, EW. */
static size_t w_vocab_bytes(void *ctx)
{
    return sc_model_vocab_record_bytes(((sc_mdev *)ctx)->md);
}

static sc_status w_vocab_pass(void *ctx, int op, int mb, void *record)
{
    sc_mdev *dv = ctx;
    if (!dv->mv || !dv->md->split) {
        snprintf(dv->err, sizeof dv->err, "the model's vocabulary is not split here");
        return SC_ERR_PROGRAM;
    }
    sc_status st = sc_mvocab_pass(dv->mv, op, mb, record);
    return st ? vocab_fail(dv, st) : SC_OK;
}

/* A pair's lane (exec.h): the device's context computing through backend
 * be, with host scratch of its own; the model, its parameters and
 * gradients are the device's (a pass writes only its own stage's). */
static void *w_lane(void *ctx, sc_backend *be)
{
    sc_mdev *dv = ctx, *ln = malloc(sizeof *ln);
    /* A split vocabulary's passes are not paired. The MLP's whole embedding
     * is where slots finish when they return (no lane_fork: the cpu): its B
     * s0 scatters the gradient through the device's backend, not the
     * lane's. The decoder's is everywhere: its W scatters through the
     * lane's backend (model_decoder.c), its B leaves the vocabulary alone. */
    if (!ln || (dv->mv && (dv->md->split || (dv->md->kind != SC_MODEL_DECODER &&
                                              dv->be->ops->lane_fork)))) {
        free(ln);
        return NULL;
    }
    *ln = *dv;
    ln->be = be;
    ln->ep_tp = dv->ep_lane_tp; /* ep > 1: the lane's all-to-alls on their own transport */
    ln->err[0] = 0;
    ln->ssc = NULL; /* the slices' scratch: its own (model_slices.c) */
    ln->targets = malloc((size_t)dv->md->Rmax * sizeof(int32_t));
    ln->stage = malloc(CHUNK * sizeof(float));
    if (!ln->targets || !ln->stage) {
        free(ln->targets);
        free(ln->stage);
        free(ln);
        return NULL;
    }
    return ln;
}

static void w_lane_free(void *p)
{
    sc_mdev *ln = p;
    if (ln) {
        sc_mslice_free(ln);
        free(ln->targets);
        free(ln->stage);
        free(ln);
    }
}

const struct sc_workload_ops sc_model_ops = {
    .boundary_bytes = w_boundary,
    .record_bytes = w_record,
    .record_parts = w_parts,
    .forward = w_forward,
    .backward_input = w_backward_input,
    .backward_weight = w_backward_weight,
    .reduce = NULL, /* one replica: nothing to reduce */
    .optim = NULL,  /* the optimizer in parts (model_optim.c): */
    .grad_state = sc_model_grad_state,
    .optim_step = sc_model_optim_step,
    .validate = sc_model_validate,
    .coll_buffer = sc_model_coll_buffer,
    .coll_done = sc_model_coll_done,
    .vocab_record_bytes = w_vocab_bytes,
    .vocab_pass = w_vocab_pass,
    .lane = w_lane,
    .lane_free = w_lane_free,
    .graph_capture = sc_model_graph_capture,
    .graph_replayed = sc_model_graph_replayed,
    .errmsg = w_errmsg,
};
