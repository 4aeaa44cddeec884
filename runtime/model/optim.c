/*
 * optim.c — AdamW, global-norm clipping and inf/NaN skipping (optim.h).
 */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The moments live beside the parameters, in device memory, and the step
 * and the gradients' state are the backend's ops (adamw, sumsq): on a GPU
 * nothing crosses to the host but the two numbers of the state. Zeros go
 * up CHUNK floats at a time. */
#define CHUNK ((size_t)1 << 16)

typedef struct tensor {
    sc_backend *be;
    float *w, *g;          /* device memory */
    size_t n;
    float *m, *v;          /* moments (device memory) */
    float *wk, *mk, *vk;   /* the kept copy (host), or NULL */
    int replica;           /* left out of the state (sc_adamw_add) */
} tensor;

struct sc_adamw {
    sc_optim_cfg c;
    tensor *t;
    int n, cap;
    long steps;            /* steps taken */
    long kept_steps;
    int kept;              /* a copy is held */
    float *zero;           /* [CHUNK] zeros, for the moments' start */
    size_t bytes;          /* of the moments allocated */
};

sc_optim_cfg sc_optim_defaults(void)
{
    return (sc_optim_cfg){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                          .weight_decay = 0.01, .clip = 0, .inf_step = -1, .inf_device = 0,
                          .inf_tensor = -1};
}

sc_status sc_optim_check(const sc_optim_cfg *c, char *err, size_t errlen)
{
    const struct { const char *name; double v, lo, hi; int open_hi; } r[] = {
        {"lr", c->lr, 0, INFINITY, 1},
        {"beta1", c->beta1, 0, 1, 1},
        {"beta2", c->beta2, 0, 1, 1},
        {"eps", c->eps, 0, INFINITY, 1},
        {"weight_decay", c->weight_decay, 0, INFINITY, 1},
        {"clip", c->clip, 0, INFINITY, 1},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (!(r[i].v >= r[i].lo && r[i].v < r[i].hi)) {
            snprintf(err, errlen, "optimizer: %s = %g is out of range ([%g, %g))", r[i].name,
                     r[i].v, r[i].lo, r[i].hi);
            return SC_ERR_ARG;
        }
    if (!(c->eps > 0)) {
        snprintf(err, errlen, "optimizer: eps must be > 0 (got %g)", c->eps);
        return SC_ERR_ARG;
    }
    return SC_OK;
}

sc_optim_verdict sc_optim_decide(const sc_optim_cfg *c, const double state[2])
{
    sc_optim_verdict v = {.skip = state[1] != 0 || !isfinite(state[0]), .coef = 1};
    v.norm = sqrt(state[0]);
    if (!v.skip && c->clip > 0) {
        double coef = c->clip / (v.norm + 1e-6);
        if (coef < 1)
            v.coef = coef;
    }
    return v;
}

int sc_optim_amends(const sc_optim_verdict *v)
{
    return v->skip || v->coef < 1;
}

sc_adamw *sc_adamw_new(const sc_optim_cfg *c)
{
    sc_adamw *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->c = *c;
    a->zero = calloc(CHUNK, sizeof(float));
    if (!a->zero) {
        sc_adamw_free(a);
        return NULL;
    }
    return a;
}

static void drop_copy(tensor *t)
{
    free(t->wk);
    free(t->mk);
    free(t->vk);
    t->wk = t->mk = t->vk = NULL;
}

void sc_adamw_free(sc_adamw *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++) {
        tensor *t = &a->t[i];
        size_t b = (t->n ? t->n : 1) * sizeof(float);
        t->be->ops->free(t->be->ctx, t->m, b);
        t->be->ops->free(t->be->ctx, t->v, b);
        drop_copy(t);
    }
    free(a->t);
    free(a->zero);
    free(a);
}

sc_status sc_adamw_add(sc_adamw *a, sc_backend *be, float *w, float *g, size_t n, int replica)
{
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        tensor *t = realloc(a->t, (size_t)cap * sizeof *t);
        if (!t)
            return SC_ERR_NOMEM;
        a->t = t;
        a->cap = cap;
    }
    tensor *t = &a->t[a->n];
    *t = (tensor){.be = be, .w = w, .g = g, .n = n, .replica = replica};
    size_t b = (n ? n : 1) * sizeof(float);
    t->m = be->ops->alloc(be->ctx, b);
    t->v = be->ops->alloc(be->ctx, b);
    if (!t->m || !t->v) {
        be->ops->free(be->ctx, t->m, b);
        be->ops->free(be->ctx, t->v, b);
        return SC_ERR_NOMEM;
    }
    a->bytes += 2 * b;
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
        be->ops->upload(be->ctx, t->m + i0, a->zero, c * sizeof(float));
        be->ops->upload(be->ctx, t->v + i0, a->zero, c * sizeof(float));
    }
    a->n++;
    return SC_OK;
}

sc_status sc_adamw_state(sc_adamw *a, double state[2])
{
    double sum = 0, bad = 0;
    for (int i = 0; i < a->n; i++) {
        const tensor *t = &a->t[i];
        if (t->replica)
            continue;
        double ts[2];
        sc_status st = t->be->ops->sumsq(t->be->ctx, t->n, t->g, ts);
        if (st != SC_OK)
            return st;
        sum += ts[0];
        bad += ts[1];
    }
    state[0] = sum;
    state[1] = bad;
    return SC_OK;
}

static sc_status keep_copy(sc_adamw *a)
{
    for (int i = 0; i < a->n; i++) {
        tensor *t = &a->t[i];
        size_t b = (t->n ? t->n : 1) * sizeof(float);
        drop_copy(t);
        t->wk = malloc(b);
        t->mk = malloc(b);
        t->vk = malloc(b);
        if (!t->wk || !t->mk || !t->vk)
            return SC_ERR_NOMEM;
        t->be->ops->download(t->be->ctx, t->wk, t->w, t->n * sizeof(float));
        t->be->ops->download(t->be->ctx, t->mk, t->m, t->n * sizeof(float));
        t->be->ops->download(t->be->ctx, t->vk, t->v, t->n * sizeof(float));
    }
    a->kept = 1;
    a->kept_steps = a->steps;
    return SC_OK;
}

sc_status sc_adamw_step(sc_adamw *a, const sc_optim_verdict *v, int keep)
{
    if (keep) {
        sc_status st = keep_copy(a);
        if (st != SC_OK) {
            sc_adamw_forget(a);
            return st;
        }
    }
    if (v->skip)
        return SC_OK;
    long t = ++a->steps;
    const sc_optim_cfg *c = &a->c;
    double bc1 = 1 - pow(c->beta1, (double)t), bc2 = 1 - pow(c->beta2, (double)t);
    const struct sc_adamw_k k = {
        .b1 = (float)c->beta1, .b2 = (float)c->beta2, .coef = (float)v->coef,
        .decay = (float)(1 - c->lr * c->weight_decay), .step = (float)(c->lr / bc1),
        .sbc2 = (float)sqrt(bc2), .eps = (float)c->eps};
    for (int i = 0; i < a->n; i++) {
        tensor *T = &a->t[i];
        T->be->ops->adamw(T->be->ctx, T->n, T->w, T->g, T->m, T->v, &k);
    }
    return SC_OK;
}

sc_status sc_adamw_restore(sc_adamw *a)
{
    if (!a->kept)
        return SC_ERR_ARG;
    for (int i = 0; i < a->n; i++) {
        tensor *t = &a->t[i];
        t->be->ops->upload(t->be->ctx, t->w, t->wk, t->n * sizeof(float));
        t->be->ops->upload(t->be->ctx, t->m, t->mk, t->n * sizeof(float));
        t->be->ops->upload(t->be->ctx, t->v, t->vk, t->n * sizeof(float));
    }
    a->steps = a->kept_steps;
    sc_adamw_forget(a);
    return SC_OK;
}

void sc_adamw_forget(sc_adamw *a)
{
    for (int i = 0; i < a->n; i++)
        drop_copy(&a->t[i]);
    a->kept = 0;
}

long sc_adamw_steps(const sc_adamw *a)
{
    return a->steps;
}

size_t sc_adamw_bytes(const sc_adamw *a)
{
    return a ? a->bytes : 0;
}
