/*
 * model_check.c — the built-in model's loss and gradients, its
 * single-device reference, and the comparison of the two (model.h).
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double sc_model_loss(const sc_model *md)
{
    if (!md->have_loss)
        return NAN;
    double sum = 0;
    for (int i = 0; i < md->m; i++)
        sum += md->loss[i];
    return sum / ((double)md->m * md->R);
}

int sc_model_tensors(const sc_model *md)
{
    return 2 * md->L + 1 + (md->vocab != SC_VOCAB_NONE); /* ... Gout, Gemb */
}

/* The first stage's vocabulary layers (baseline: the whole embedding). */
static const sc_mvocab *first_mv(const sc_model *md)
{
    return md->devs[0] ? md->devs[0]->mv : NULL;
}

const float *sc_model_grad(const sc_model *md, int t, size_t *n)
{
    if (t < 2 * md->L) {
        *n = (size_t)md->h * (size_t)md->h;
        return t % 2 ? md->G2[t / 2] : md->G1[t / 2];
    }
    *n = (size_t)md->h * (size_t)md->V;
    if (t == 2 * md->L)
        return md->split ? NULL : md->Gout;
    int first, rows; /* Gemb, whole in baseline; in shards when split */
    return md->split || !first_mv(md) ? NULL : sc_mvocab_gemb(first_mv(md), &first, &rows);
}

sc_status sc_model_reference(const sc_model_cfg *cfg, int m, size_t mem_cap, sc_model **out,
                             char *err, size_t errlen)
{
    *out = NULL;
    sc_model *md;
    /* One device, every layer: the vocabulary layers whole (baseline). */
    sc_model_cfg rc = *cfg;
    rc.vocab_par = cfg->vocab_par != SC_VOCAB_NONE ? SC_VOCAB_BASELINE : SC_VOCAB_NONE;
    rc.devices = 1;
    rc.stage_layers = NULL;
    sc_status st = sc_model_new(&rc, 1, m, &md, err, errlen);
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
    for (int mb = 0; mb < m; mb++) {
        if ((st = wl.ops->forward(wl.ctx, 0, mb, NULL, NULL, parts, NULL)) != SC_OK ||
            (st = wl.ops->backward_input(wl.ctx, 0, mb, NULL, NULL, parts, NULL)) != SC_OK ||
            (st = wl.ops->backward_weight(wl.ctx, 0, mb, parts)) != SC_OK) {
            snprintf(err, errlen, "reference: %s", wl.ops->errmsg(wl.ctx));
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
    if (t > 2 * md->L)
        return md->owner[0];
    if (t == 2 * md->L)
        return md->owner[md->S - 1];
    int l = t / 2, s = 0;
    while (s + 1 < md->S && md->first[s + 1] <= l)
        s++;
    return md->owner[s];
}

double sc_model_compare(const sc_model *md, const sc_model *ref, int *bitwise)
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
        const float *gd = sc_model_grad(md, t, &n), *rd = sc_model_grad(ref, t, &nr);
        sc_backend *gb = grad_owner(md, t), *rb = grad_owner(ref, t);
        if (!gd || !rd || !gb || !rb || n != nr)
            continue;
        double diff = 0, mag = 0;
        for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
            size_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
            gb->ops->download(gb->ctx, g, gd + i0, c * sizeof(float));
            rb->ops->download(rb->ctx, r, rd + i0, c * sizeof(float));
            for (size_t i = 0; i < c; i++) {
                diff = fmax(diff, fabs((double)g[i] - r[i]));
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
    /* The shards of a split vocabulary: each device's rows of the
     * embedding's gradient and columns of the head's, against the
     * reference's whole tensors (the first stage holds both there). */
    const sc_mvocab *rv = first_mv(ref);
    size_t h = (size_t)md->h;
    for (int s = 0; s < md->S && md->split && rv && !isnan(worst); s++) {
        const dev *dv = md->devs[s];
        int dup = 0;
        for (int t = 0; t < s && dv; t++)
            dup |= md->devs[t] == dv;
        if (!dv || !dv->mv || dup)
            continue;
        int a, n, ra, rn;
        const float *ge = sc_mvocab_gemb(dv->mv, &a, &n), *re = sc_mvocab_gemb(rv, &ra, &rn);
        const float *go = sc_mvocab_gout(dv->mv, &a, &n);
        sc_backend *gb = sc_mvocab_backend(dv->mv), *rb = ref->owner[0];
        double ediff = 0, emag = 0, odiff = 0, omag = 0;
        for (size_t k = 0; k < (size_t)n; k++) { /* embedding rows a + k */
            gb->ops->download(gb->ctx, g, ge + k * h, h * sizeof(float));
            rb->ops->download(rb->ctx, r, re + ((size_t)a + k) * h, h * sizeof(float));
            for (size_t i = 0; i < h; i++) {
                ediff = fmax(ediff, fabs((double)g[i] - r[i]));
                emag = fmax(emag, fabs((double)r[i]));
            }
            *bitwise &= memcmp(g, r, h * sizeof(float)) == 0;
        }
        for (size_t k = 0; k < h; k++) { /* head rows k, columns a .. a + n */
            gb->ops->download(gb->ctx, g, go + k * (size_t)n, (size_t)n * sizeof(float));
            rb->ops->download(rb->ctx, r, ref->Gout + k * (size_t)md->V + (size_t)a,
                              (size_t)n * sizeof(float));
            for (size_t i = 0; i < (size_t)n; i++) {
                odiff = fmax(odiff, fabs((double)g[i] - r[i]));
                omag = fmax(omag, fabs((double)r[i]));
            }
            *bitwise &= memcmp(g, r, (size_t)n * sizeof(float)) == 0;
        }
        worst = fmax(worst, emag > 0 ? ediff / emag : ediff);
        worst = fmax(worst, omag > 0 ? odiff / omag : odiff);
        if (gb->ops->errmsg && gb->ops->errmsg(gb->ctx))
            worst = NAN;
    }
    free(g);
    free(r);
    return worst;
}
