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
    sc_status st = sc_model_new(&c, 1, m, &md, err, errlen);
    if (st)
        return st;
    int dev0 = 0;
    sc_workload wl;
    void *rec = NULL;
    size_t rb = sc_model_record_bytes(md, 0);
    int np = sc_model_record_parts(md, 0, NULL, 0);
    size_t *pb = calloc((size_t)np, sizeof(size_t));
    float **parts = calloc((size_t)np, sizeof(float *));
    if (!pb || !parts) {
        snprintf(err, errlen, "out of memory for the reference");
        st = SC_ERR_NOMEM;
        goto fail;
    }
    sc_model_record_parts(md, 0, pb, np);
    if ((st = sc_backend_open("cpu", 0, mem_cap, &md->own_be, err, errlen)) != SC_OK ||
        (st = sc_model_attach(md, 0, md->own_be, &dev0, &wl, err, errlen)) != SC_OK)
        goto fail;
    if (!(rec = md->own_be->ops->alloc(md->own_be->ctx, rb))) {
        snprintf(err, errlen, "out of memory for the reference's activations (%zu bytes)", rb);
        st = SC_ERR_NOMEM;
        goto fail;
    }
    /* The reference keeps its one record in one buffer, cut into the parts. */
    size_t off = 0;
    for (int i = 0; i < np; off += pb[i++] / sizeof(float))
        parts[i] = (float *)rec + off;
    const struct sc_workload_ops *o = wl.ops;
    for (int k = 0; k < md->steps; k++) {
        for (int mb = k * m; mb < (k + 1) * m; mb++) {
            if ((st = o->forward(wl.ctx, 0, mb, NULL, NULL, parts, NULL)) != SC_OK ||
                (st = o->backward_input(wl.ctx, 0, mb, NULL, NULL, parts, NULL)) != SC_OK ||
                (st = o->backward_weight(wl.ctx, 0, mb, parts)) != SC_OK) {
                snprintf(err, errlen, "reference: step %d: %s", k, o->errmsg(wl.ctx));
                goto fail;
            }
        }
        /* The state of all gradients: what a synchronized pipeline sums. */
        double state[2];
        if ((st = o->grad_state(wl.ctx, k, state)) != SC_OK ||
            (st = o->optim_step(wl.ctx, k, state)) != SC_OK) {
            snprintf(err, errlen, "reference: step %d: %s", k, o->errmsg(wl.ctx));
            goto fail;
        }
    }
    md->own_be->ops->free(md->own_be->ctx, rec, rb);
    free(pb);
    free(parts);
    *out = md;
    return SC_OK;
fail:
    if (rec)
        md->own_be->ops->free(md->own_be->ctx, rec, rb);
    free(pb);
    free(parts);
    sc_model_free(md);
    return st;
}

/* The backend holding gradient tensor t (model.h's numbering). */
static sc_backend *grad_owner(const sc_model *md, int t)
{
    if (t >= 2 * md->L)
        return md->owner[md->S - 1];
    int l = t / 2, s = 0;
    while (s + 1 < md->S && md->first[s + 1] <= l)
        s++;
    return md->owner[s];
}

/* Tensor t of a model: gradients (params 0) or parameters (params 1). */
static const float *tensor_of(const sc_model *md, int t, int params, size_t *n)
{
    if (!params)
        return sc_model_grad(md, t, n);
    if (t < 2 * md->L) {
        *n = (size_t)md->h * (size_t)md->h;
        return t % 2 ? md->W2[t / 2] : md->W1[t / 2];
    }
    *n = (size_t)md->h * (size_t)md->V;
    return md->Wout;
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
        if (!gd || !rd || !gb || !rb || n != nr)
            continue;
        double diff = 0, mag = 0;
        for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
            size_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
            gb->ops->download(gb->ctx, g, gd + i0, c * sizeof(float));
            rb->ops->download(rb->ctx, r, rd + i0, c * sizeof(float));
            for (size_t i = 0; i < c; i++) {
                diff = fmax(diff, fabs((double)g[i] - r[i]) - slack);
                mag = fmax(mag, fabs((double)r[i]));
            }
            if (memcmp(g, r, c * sizeof(float)) != 0)
                *bitwise = 0;
        }
        double rel = mag > 0 ? diff / mag : diff;
        worst = fmax(worst, rel);
        if (gb->ops->errmsg && gb->ops->errmsg(gb->ctx)) { /* a download failed */
            *bitwise = 0;
            worst = NAN;
            break;
        }
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
