/*
 * model_optim.c — the built-in model's optimizer steps (model.h, optim.h):
 * the state of a device's gradients at REDUCE, the update at OPTIM, the
 * validation of an eager update at VALIDATE, and what each step did.
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The device's gradient tensor t (model.h's numbering), or NULL. */
static float *grad_here(sc_mdev *dv, int t, size_t *n)
{
    sc_model *md = dv->md;
    int s;
    if (t == sc_model_layer_tensors(md)) { /* the embedding's: its first row's holder */
        int first, rows;
        if (!dv->mv)
            return NULL;
        float *g = (float *)sc_mvocab_emb(dv->mv, 0, &first, &rows);
        *n = (size_t)md->h * (size_t)rows;
        return first == 0 ? g : NULL;
    }
    float *g = sc_model_tensor_at(md, t, 0, n, &s);
    return g && md->devs[s] == dv ? g : NULL;
}

sc_status sc_model_optim_attach(sc_mdev *dv)
{
    sc_model *md = dv->md;
    dv->info = calloc((size_t)md->steps, sizeof(sc_step_info));
    dv->opt = sc_adamw_new(&md->c.opt);
    dv->cdev = dv->be->ops->alloc(dv->be->ctx, 10 * sizeof(double));
    if (!dv->info || !dv->opt || !dv->cdev)
        return SC_ERR_NOMEM;
    for (int s = 0; s < md->S; s++) {
        if (md->devs[s] != dv)
            continue;
        /* A copy other than the first (docs/guide.md#copies) is a replica:
         * updated the same, left out of the state (its gradients are the
         * same sum). */
        int c = SC_MCOPY(md, s);
        for (int l = md->first[s]; l < md->first[s] + md->count[s]; l++)
            for (int j = 0; j < md->np; j++)
                if (sc_adamw_add(dv->opt, dv->be, SC_MW(md, l, j), SC_MG(md, l, j), md->psz[j],
                                 c > 0) != SC_OK)
                    return SC_ERR_NOMEM;
        if (SC_MLAST(md, s) && !md->split &&
            sc_adamw_add(dv->opt, dv->be, md->Wout[c], md->Gout[c],
                         (size_t)md->h * (size_t)md->V, c > 0) != SC_OK)
            return SC_ERR_NOMEM;
        if (SC_MLAST(md, s) && md->Wn &&
            sc_adamw_add(dv->opt, dv->be, md->Wn[c], md->Gn[c], (size_t)md->h, c > 0) != SC_OK)
            return SC_ERR_NOMEM;
    }
    /* The vocabulary layers it holds: the embedding (rows), the output
     * layer's columns (split). */
    float *w, *g;
    size_t n;
    for (int i = 0; dv->mv && sc_mvocab_tensor(dv->mv, i, &w, &g, &n); i++)
        if (sc_adamw_add(dv->opt, dv->be, w, g, n, 0) != SC_OK)
            return SC_ERR_NOMEM;
    return SC_OK;
}

static sc_status fail(sc_mdev *dv, sc_status st, const char *what)
{
    snprintf(dv->err, sizeof dv->err, "%s", what);
    return st;
}

sc_status sc_model_grad_state(void *ctx, int step, double state[2])
{
    sc_mdev *dv = ctx;
    const sc_optim_cfg *c = &dv->md->c.opt;
    if (step == c->inf_step && c->inf_tensor >= 0) { /* the fault asked for */
        size_t n;
        float *g = grad_here(dv, c->inf_tensor, &n), inf = INFINITY;
        if (g)
            dv->be->ops->upload(dv->be->ctx, g, &inf, sizeof inf);
    }
    if (sc_adamw_state(dv->opt, dv->state) != SC_OK)
        return fail(dv, SC_ERR_NOMEM, "out of memory reading the gradients");
    state[0] = dv->state[0];
    state[1] = dv->state[1];
    return SC_OK;
}

static void record(sc_mdev *dv, int step, const sc_optim_verdict *v)
{
    if (step < 0 || step >= dv->md->steps)
        return;
    sc_step_info *i = &dv->info[step];
    i->norm = v->norm;
    i->coef = v->coef;
    i->skipped = v->skip;
}

sc_status sc_model_optim_step(void *ctx, int step, const double state[2])
{
    sc_mdev *dv = ctx;
    sc_model *md = dv->md;
    double st[2] = {state[0], state[1]};
    int eager = 0;
    if (md->c.sync == SC_SYNC_SYNC) { /* the all-reduced state */
        st[0] = dv->sync[0];
        st[1] = dv->sync[1];
    } else if (md->c.sync == SC_SYNC_POSTVAL) { /* devices 0..d: eager but the last */
        for (int i = 0; i < 2; i++)
            st[i] = dv->part_out[i] = dv->part_in[i] + state[i];
        eager = dv->d != md->c.devices - 1;
    }
    sc_optim_verdict v = sc_optim_decide(&md->c.opt, st);
    sc_status s = SC_OK;
    dv->eager = 0;
    dv->final = !eager;
    if (!eager) {
        s = sc_adamw_step(dv->opt, &v, 0);
    } else if (!sc_optim_amends(&v)) { /* the partial state allows it: step now */
        s = sc_adamw_step(dv->opt, &v, 1);
        dv->eager = s == SC_OK;
    }
    record(dv, step, &v);
    if (dv->mv)
        sc_mvocab_params_changed(dv->mv);
    if (step >= 0 && step < md->steps)
        dv->info[step].eager = dv->eager;
    if (md->c.progress && md->devs[md->S - 1] == dv)
        md->c.progress(md->c.progress_arg, step, md->steps, sc_model_step_loss(md, step));
    return s == SC_OK ? SC_OK : fail(dv, s, "out of memory keeping the parameters");
}

sc_status sc_model_validate(void *ctx, int step, int *redo)
{
    sc_mdev *dv = ctx;
    sc_model *md = dv->md;
    const double *g = dv->d == md->c.devices - 1 ? dv->part_out : dv->global;
    sc_optim_verdict v = sc_optim_decide(&md->c.opt, g);
    record(dv, step, &v);
    *redo = sc_optim_amends(&v); /* then every device's passes since are redone */
    if (!*redo || dv->final) { /* the eager step was right, or the step was final */
        sc_adamw_forget(dv->opt);
        return SC_OK;
    }
    sc_status st = SC_OK;
    if (dv->eager && (st = sc_adamw_restore(dv->opt)) != SC_OK)
        return fail(dv, st, "no kept copy to roll the step back to");
    if (step >= 0 && step < md->steps)
        dv->info[step].rolled_back = dv->eager;
    dv->eager = 0;
    st = sc_adamw_step(dv->opt, &v, 0);
    if (dv->mv)
        sc_mvocab_params_changed(dv->mv);
    return st == SC_OK ? SC_OK : fail(dv, st, "the optimizer step failed");
}

/* The collectives of a split vocabulary (model_vocab.h): the embedding's
 * output (E), the last stage's output (F), the first stage's input gradient
 * (B), the statistics and the input gradient of the output layer (S, T). */
static int vocab_coll(const sc_mdev *dv, const sc_coll *c)
{
    if (!dv->mv || !dv->md->split)
        return 0;
    switch ((sc_op)c->what) { /* the tag: the kind whose output it carries */
    case SC_OP_E: case SC_OP_F: case SC_OP_B: case SC_OP_S: case SC_OP_T: return 1;
    default: return 0;
    }
}

static sc_status vocab_status(sc_mdev *dv, sc_status st)
{
    if (st)
        snprintf(dv->err, sizeof dv->err, "%s", sc_mvocab_errmsg(dv->mv));
    return st;
}

/* The host numbers of an optimizer collective (postval.h, steps.h):
 * doubles; NULL when c is none of them. */
static double *opt_numbers(sc_mdev *dv, const sc_coll *c, size_t *count)
{
    *count = 2;
    if (c->what == SC_OP_REDUCE && c->part < 2) { /* sync: the sum, the count */
        *count = 1;
        return &dv->sync[c->part];
    }
    if (c->what == SC_OP_OPTIM && c->part == 0) /* the chain of partial states */
        return c->root == dv->d ? dv->part_out : c->root == dv->d - 1 ? dv->part_in
                                                                       : dv->scratch;
    if (c->what == SC_OP_OPTIM && c->part == 1) /* the global state */
        return c->root == dv->d ? dv->part_out : dv->global;
    return NULL;
}

/* The twin in the backend's memory of host numbers h (model_impl.h). */
static double *twin(sc_mdev *dv, const double *h)
{
    const double *base[5] = {dv->sync, dv->part_in, dv->part_out, dv->global, dv->scratch};
    for (int i = 0; i < 5; i++)
        if (h >= base[i] && h < base[i] + 2)
            return dv->cdev + 2 * i + (h - base[i]);
    return NULL;
}

/* The copies' gradient sum (docs/guide.md#copies): one copy's gradients,
 * the layers' then Gout, in a buffer of the device's (model
 * order, the numbering of sc_model_tensors); each device writes its stages'
 * gradients at their layer's place and zeros elsewhere, the all-reduce
 * sums them, and each reads its layers' sums back (gsum_done). */
static size_t layer_floats(const sc_model *md)
{
    size_t n = 0;
    for (int j = 0; j < md->np; j++)
        n += md->psz[j];
    return n;
}

size_t sc_model_gsum_floats(const sc_model *md)
{
    /* ep > 1: the embedding's and the final norm's after the head's (the EP
     * group's dense sum) */
    return (size_t)md->L * layer_floats(md) + (SC_MEP(md) > 1 ? 2 : 1) * (size_t)md->h *
                                                  (size_t)md->V +
           (SC_MEP(md) > 1 && md->Gn ? (size_t)md->h : 0);
}

/* Copies between the buffer and the device's gradients: back = 0 into the
 * buffer, 1 out of it. */
static void gsum_move(sc_mdev *dv, int back)
{
    sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    size_t lf = layer_floats(md);
    for (int s = 0; s < md->S; s++) {
        if (md->devs[s] != dv)
            continue;
        for (int l = md->first[s]; l < md->first[s] + md->count[s]; l++) {
            float *slot = dv->gsum + (size_t)(l % md->L) * lf;
            for (int j = 0; j < md->np; slot += md->psz[j++]) {
                float *g = SC_MG(md, l, j);
                if (md->ep > 1 && md->E && j >= 7 && j <= 9)
                    continue; /* the routed experts: each rank's own (zero in the sum) */
                o->copy(dv->be->ctx, md->psz[j], back ? slot : g, back ? g : slot);
            }
        }
        if (SC_MLAST(md, s)) {
            float *slot = dv->gsum + (size_t)md->L * lf, *g = md->Gout[SC_MCOPY(md, s)];
            o->copy(dv->be->ctx, (size_t)md->h * (size_t)md->V, back ? slot : g, back ? g : slot);
            float *gn = md->Gn ? md->Gn[SC_MCOPY(md, s)] : NULL, *ns = slot + 2 * (size_t)md->h *
                                                                    (size_t)md->V;
            if (md->ep > 1 && gn) /* ep > 1: the final norm's too */
                o->copy(dv->be->ctx, (size_t)md->h, back ? ns : gn, back ? gn : ns);
        }
    }
    int first, rows;
    float *ge = md->ep > 1 && dv->mv ? (float *)sc_mvocab_emb(dv->mv, 0, &first, &rows) : NULL;
    float *slot = dv->gsum + (size_t)md->L * lf + (size_t)md->h * (size_t)md->V;
    if (ge) /* ep > 1: the embedding's too */
        o->copy(dv->be->ctx, (size_t)rows * (size_t)md->h, back ? slot : ge, back ? ge : slot);
}

static sc_status gsum_buffer(sc_mdev *dv, sc_cxfer *x)
{
    size_t n = sc_model_gsum_floats(dv->md);
    const struct sc_backend_ops *o = dv->be->ops;
    if (!dv->gsum && !(dv->gsum = o->alloc(dv->be->ctx, n * sizeof(float))))
        return fail(dv, SC_ERR_NOMEM, "out of memory for the sum of the copies' gradients");
    if (o->fill_uniform) {
        o->fill_uniform(dv->be->ctx, dv->gsum, n, 0, 0, 0.0f);
    } else {
        memset(dv->stage, 0, SC_MODEL_CHUNK * sizeof(float));
        for (size_t i = 0; i < n; i += SC_MODEL_CHUNK)
            o->upload(dv->be->ctx, dv->gsum + i, dv->stage,
                      (n - i < SC_MODEL_CHUNK ? n - i : SC_MODEL_CHUNK) * sizeof(float));
    }
    gsum_move(dv, 0);
    x->dtype = SC_DT_F32;
    x->count = n;
    x->buf = dv->gsum;
    return SC_OK;
}

/* The buffers of the optimizer's collectives: the host numbers uploaded
 * to their twins, which the transport reduces in place (NCCL reduces
 * device memory only; on the CPU backend the twin is host memory too). */
sc_status sc_model_coll_buffer(void *ctx, const sc_coll *c, sc_cxfer *x)
{
    sc_mdev *dv = ctx;
    if (vocab_coll(dv, c))
        return vocab_status(dv, sc_mvocab_coll_buffer(dv->mv, c, x));
    if (c->what == SC_OP_W) /* the copies' gradient sum */
        return gsum_buffer(dv, x);
    size_t n;
    double *h = opt_numbers(dv, c, &n);
    if (!h) {
        char name[96];
        snprintf(name, sizeof name, "the built-in model has no buffer for a collective of %s "
                 "part %d", sc_op_name(c->what), c->part);
        return fail(dv, SC_ERR_ARG, name);
    }
    if (c->what == SC_OP_REDUCE)
        *h = dv->state[c->part];
    x->dtype = SC_DT_F64;
    x->count = n;
    x->buf = twin(dv, h);
    dv->be->ops->upload(dv->be->ctx, x->buf, h, n * sizeof(double));
    return SC_OK;
}

sc_status sc_model_coll_done(void *ctx, const sc_coll *c)
{
    sc_mdev *dv = ctx;
    sc_model *md = dv->md;
    if (c->what == SC_OP_W) { /* the copies' sums into their gradients */
        gsum_move(dv, 1);
        const char *bad = dv->be->ops->errmsg ? dv->be->ops->errmsg(dv->be->ctx) : NULL;
        return bad ? fail(dv, SC_ERR_RUNTIME, bad) : SC_OK;
    }
    if (!vocab_coll(dv, c)) { /* an optimizer collective: its result read back */
        size_t n;
        double *h = opt_numbers(dv, c, &n);
        if (h)
            dv->be->ops->download(dv->be->ctx, h, twin(dv, h), n * sizeof(double));
        const char *bad = dv->be->ops->errmsg ? dv->be->ops->errmsg(dv->be->ctx) : NULL;
        return bad ? fail(dv, SC_ERR_RUNTIME, bad) : SC_OK;
    }
    sc_status st = sc_mvocab_coll_done(dv->mv, c);
    if (st)
        return vocab_status(dv, st);
    /* The statistics are reduced: the loss of the microbatch is known (kept
     * by the last stage's device, as without a split). */
    if (c->what == SC_OP_S && c->part == 1 && md->devs[md->S - 1] == dv)
        md->loss[c->mb] = sc_mvocab_loss(dv->mv, c->mb);
    return SC_OK;
}

double sc_model_step_loss(const sc_model *md, int k)
{
    if (!md->have_loss || k < 0 || k >= md->steps)
        return NAN;
    double sum = 0;
    for (int i = k * md->m; i < (k + 1) * md->m; i++)
        sum += md->loss[i];
    return sum / md->Rsum;
}

double sc_model_loss(const sc_model *md)
{
    return sc_model_step_loss(md, md->steps - 1);
}

/* The device context of the lowest stage attached here, or NULL. */
static const sc_mdev *first_dev(const sc_model *md)
{
    for (int s = 0; s < md->S; s++)
        if (md->devs[s])
            return md->devs[s];
    return NULL;
}

int sc_model_step_info(const sc_model *md, int k, sc_step_info *out)
{
    const sc_mdev *dv = first_dev(md);
    if (!dv || k < 0 || k >= md->steps)
        return 0;
    *out = dv->info[k];
    return 1;
}

int sc_model_rollbacks(const sc_model *md, int k)
{
    int n = 0;
    for (int s = 0; s < md->S && k >= 0 && k < md->steps; s++) {
        const sc_mdev *dv = md->devs[s];
        int seen = 0;
        for (int t = 0; t < s && !seen; t++)
            seen = md->devs[t] == dv;
        n += dv && !seen && dv->info[k].rolled_back;
    }
    return n;
}
