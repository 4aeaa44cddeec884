/*
 * reference.c — the single-device reference of the built-in model (model.h)
 * trained for the same steps with the same optimizer, and the comparison
 * of a pipeline's gradients and parameters with it.
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK SC_MODEL_CHUNK

sc_status sc_model_reference(const sc_model_cfg *cfg, int m, size_t mem_cap, sc_model **out,
                             char *err, size_t errlen)
{
    *out = NULL;
    sc_model *md;
    sc_model_cfg c = *cfg;
    c.progress = NULL; /* the pipeline's run reports its steps, not the reference */
    c.sync = SC_SYNC_NONE; /* one device: its own state is the global one */
    c.devices = 1;
    /* One device, every layer: the vocabulary layers whole (baseline). */
    c.vocab_par = cfg->vocab_par != SC_VOCAB_NONE ? SC_VOCAB_BASELINE : SC_VOCAB_NONE;
    c.stage_layers = NULL;
    c.copies = 1; /* one copy of the layers */
    if (c.slices > 1) { /* the unsliced microbatches (docs/slices.md#run) */
        m /= c.slices;
        c.slices = 1;
        c.lengths = NULL;
    }
    sc_status st = sc_model_new(&c, 1, m, &md, err, errlen);
    if (st)
        return st;
    int dev0 = 0;
    sc_workload wl;
    void *rec = NULL, *bonly = NULL;
    size_t rb = 0, bb = 0; /* the largest microbatch's (they differ with cfg.lengths) */
    for (int i = 0; i < m; i++) {
        size_t k = sc_model_record_kept_bytes(md, 0, i), b = sc_model_record_bonly_bytes(md, 0, i);
        rb = rb > k ? rb : k;
        bb = bb > b ? bb : b;
    }
    int np = sc_model_record_parts(md, 0, -1, NULL, 0);
    size_t *pb = calloc((size_t)np, sizeof(size_t));
    float **parts = calloc((size_t)np, sizeof(float *));
    if (!pb || !parts) {
        snprintf(err, errlen, "out of memory for the reference");
        st = SC_ERR_NOMEM;
        goto fail;
    }
    if ((st = sc_backend_cpu_open(mem_cap, &md->own_be, err, errlen)) != SC_OK ||
        (st = sc_model_attach(md, 0, md->own_be, &dev0, &wl, err, errlen)) != SC_OK)
        goto fail;
    if (!(rec = md->own_be->ops->alloc(md->own_be->ctx, rb)) ||
        (bb && !(bonly = md->own_be->ops->alloc(md->own_be->ctx, bb)))) {
        snprintf(err, errlen, "out of memory for the reference's activations (%zu bytes)", rb);
        st = SC_ERR_NOMEM;
        goto fail;
    }
    const struct sc_workload_ops *o = wl.ops;
    for (int k = 0; k < md->steps; k++) {
        for (int mb = k * m; mb < (k + 1) * m; mb++) {
            /* The reference keeps its one record in one buffer, cut into mb's parts. */
            sc_model_record_parts(md, 0, mb, pb, np);
            size_t off = 0;
            for (int i = 0; i < np; off += pb[i++] / sizeof(float))
                parts[i] = (float *)rec + off;
            if ((st = o->forward(wl.ctx, 0, mb, NULL, NULL, parts, bonly)) != SC_OK ||
                (!c.forward_only && /* the forward's loss only (docs/run.md#check) */
                 ((st = o->backward_input(wl.ctx, 0, mb, NULL, NULL, parts, bonly)) != SC_OK ||
                  (st = o->backward_weight(wl.ctx, 0, mb, parts)) != SC_OK))) {
                snprintf(err, errlen, "reference: step %d: %s", k, o->errmsg(wl.ctx));
                goto fail;
            }
        }
        if (c.forward_only) /* no gradients, no optimizer step */
            continue;
        /* The state of all gradients: what a synchronized pipeline sums. */
        double state[2];
        if ((st = o->grad_state(wl.ctx, k, state)) != SC_OK ||
            (st = o->optim_step(wl.ctx, k, state)) != SC_OK) {
            snprintf(err, errlen, "reference: step %d: %s", k, o->errmsg(wl.ctx));
            goto fail;
        }
    }
    md->own_be->ops->free(md->own_be->ctx, rec, rb);
    md->own_be->ops->free(md->own_be->ctx, bonly, bb);
    free(pb);
    free(parts);
    *out = md;
    return SC_OK;
fail:
    if (rec)
        md->own_be->ops->free(md->own_be->ctx, rec, rb);
    if (bonly)
        md->own_be->ops->free(md->own_be->ctx, bonly, bb);
    free(pb);
    free(parts);
    sc_model_free(md);
    return st;
}

/* The backend holding tensor t (model.h's numbering). */
static sc_backend *grad_owner(const sc_model *md, int t)
{
    size_t n;
    int s;
    sc_model_tensor_at(md, t, 0, &n, &s);
    return md->owner[s];
}

/* Tensor t of a model: gradients (params 0) or parameters (params 1). */
static const float *tensor_of(const sc_model *md, int t, int params, size_t *n)
{
    int s;
    if (t < sc_model_layer_tensors(md))
        return sc_model_tensor_at(md, t, params, n, &s);
    *n = (size_t)md->h * (size_t)md->V;
    int first, rows; /* the embedding: whole on the first stage, or in shards */
    return md->split || !md->devs[0] || !md->devs[0]->mv
               ? NULL
               : sc_mvocab_emb(md->devs[0]->mv, params, &first, &rows);
}

/* Largest |g - r| - slack and |r| over n floats of a (backend ga) and b
 * (backend gb), read in chunks through g and r; *bitwise &= identical. */
static void diff_span(sc_backend *ga, const float *a, sc_backend *gb, const float *b, size_t n,
                      double slack, float *g, float *r, double *diff, double *mag, int *bitwise)
{
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
        ga->ops->download(ga->ctx, g, a + i0, c * sizeof(float));
        gb->ops->download(gb->ctx, r, b + i0, c * sizeof(float));
        for (size_t i = 0; i < c; i++) {
            *diff = fmax(*diff, fabs((double)g[i] - r[i]) - slack);
            *mag = fmax(*mag, fabs((double)r[i]));
        }
        if (memcmp(g, r, c * sizeof(float)) != 0)
            *bitwise = 0;
    }
}

/* The shards of a split vocabulary: each device's rows of the embedding
 * and columns of the output layer, against the reference's whole tensors
 * (the first stage holds both there). */
static double compare_shards(const sc_model *md, const sc_model *ref, int params, double slack,
                             float *g, float *r, int *bitwise)
{
    double worst = 0;
    const sc_mdev *rv = ref->devs[0];
    size_t h = (size_t)md->h;
    for (int s = 0; s < md->S && md->split && rv && rv->mv; s++) {
        const sc_mdev *dv = md->devs[s];
        int dup = 0;
        for (int t = 0; t < s && dv; t++)
            dup |= md->devs[t] == dv;
        if (!dv || !dv->mv || dup)
            continue;
        int a, n, ra, rn;
        const float *ge = sc_mvocab_emb(dv->mv, params, &a, &n);
        const float *re = sc_mvocab_emb(rv->mv, params, &ra, &rn);
        const float *go = sc_mvocab_out(dv->mv, params, &a, &n);
        const float *ro = params ? ref->Wout[0] : ref->Gout[0];
        sc_backend *gb = dv->be, *rb = ref->owner[0];
        double ed = 0, em = 0, od = 0, om = 0;
        /* embedding rows a .. a + n: one span */
        diff_span(gb, ge, rb, re + (size_t)a * h, (size_t)n * h, slack, g, r, &ed, &em, bitwise);
        for (size_t k = 0; k < h; k++) /* output layer row k, columns a .. a + n */
            diff_span(gb, go + k * (size_t)n, rb, ro + k * (size_t)md->V + (size_t)a, (size_t)n,
                      slack, g, r, &od, &om, bitwise);
        worst = fmax(worst, em > 0 ? ed / em : ed);
        worst = fmax(worst, om > 0 ? od / om : od);
        if (gb->ops->errmsg && gb->ops->errmsg(gb->ctx))
            return NAN;
    }
    return worst;
}

static double compare(const sc_model *md, const sc_model *ref, int params, double slack,
                      int *bitwise)
{
    double worst = 0;
    *bitwise = 1;
    float *g = malloc(CHUNK * sizeof(float)), *r = malloc(CHUNK * sizeof(float));
    if (!g || !r) {
        free(g);
        free(r);
        *bitwise = 0;
        return NAN;
    }
    for (int t = 0; t < sc_model_tensors(md) && t < sc_model_tensors(ref); t++) {
        size_t n, nr;
        const float *gd = tensor_of(md, t, params, &n), *rd = tensor_of(ref, t, params, &nr);
        sc_backend *gb = grad_owner(md, t), *rb = grad_owner(ref, t);
        int j = t % md->np;
        if (rd && md->ep > 1 && md->E && t < md->np * md->L && j >= 7 && j <= 9 &&
            n * (size_t)md->ep == nr) /* an EP rank's experts: its slice of the reference's */
            rd += (size_t)md->ep_rank * n, nr = n;
        if (!gd || !rd || !gb || !rb || n != nr)
            continue;
        double diff = 0, mag = 0;
        diff_span(gb, gd, rb, rd, n, slack, g, r, &diff, &mag, bitwise);
        double rel = mag > 0 ? diff / mag : diff;
        worst = fmax(worst, rel);
        if (gb->ops->errmsg && gb->ops->errmsg(gb->ctx)) { /* a download failed */
            *bitwise = 0;
            worst = NAN;
            break;
        }
    }
    if (!isnan(worst)) {
        double sh = compare_shards(md, ref, params, slack, g, r, bitwise);
        worst = isnan(sh) ? sh : fmax(worst, sh);
    }
    free(g);
    free(r);
    return worst;
}

double sc_model_compare(const sc_model *md, const sc_model *ref, int *bitwise)
{
    return compare(md, ref, 0, 0, bitwise);
}

double sc_model_compare_params(const sc_model *md, const sc_model *ref, int *bitwise)
{
    /* An AdamW step moves a parameter by about lr whatever the size of its
     * gradient (m / sqrt(v) is about 1): a gradient near zero that rounds to
     * the other sign in another order of summation moves it the other way.
     * Differences up to 2 lr per step taken are that, not an error. */
    const sc_mdev *dv = NULL;
    for (int s = 0; s < ref->S && !dv; s++)
        dv = ref->devs[s];
    double taken = dv && dv->opt ? (double)sc_adamw_steps(dv->opt) : ref->steps;
    return compare(md, ref, 1, 2 * ref->c.opt.lr * taken, bitwise);
}
