/*
 * model_optim.c — the built-in model's optimizer steps (model.h, optim.h):
 * the state of a device's gradients at REDUCE, the update at OPTIM, the
 * validation of an eager update at VALIDATE, and what each step did.
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The device's gradient tensor t (model.h's numbering), or NULL. */
static float *grad_here(sc_mdev *dv, int t, size_t *n)
{
    sc_model *md = dv->md;
    float *g;
    int s = 0;
    if (t < 2 * md->L) {
        g = t % 2 ? md->G2[t / 2] : md->G1[t / 2];
        *n = (size_t)md->h * (size_t)md->h;
        while (s + 1 < md->S && md->first[s + 1] <= t / 2)
            s++;
    } else {
        g = md->Gout;
        *n = (size_t)md->h * (size_t)md->V;
        s = md->S - 1;
    }
    return md->devs[s] == dv ? g : NULL;
}

sc_status sc_model_optim_attach(sc_mdev *dv)
{
    sc_model *md = dv->md;
    size_t hh = (size_t)md->h * (size_t)md->h;
    dv->info = calloc((size_t)md->steps, sizeof(sc_step_info));
    dv->opt = sc_adamw_new(&md->c.opt);
    if (!dv->info || !dv->opt)
        return SC_ERR_NOMEM;
    for (int s = 0; s < md->S; s++) {
        if (md->devs[s] != dv)
            continue;
        for (int l = md->first[s]; l < md->first[s] + md->count[s]; l++)
            if (sc_adamw_add(dv->opt, dv->be, md->W1[l], md->G1[l], hh) != SC_OK ||
                sc_adamw_add(dv->opt, dv->be, md->W2[l], md->G2[l], hh) != SC_OK)
                return SC_ERR_NOMEM;
        if (s == md->S - 1 &&
            sc_adamw_add(dv->opt, dv->be, md->Wout, md->Gout, (size_t)md->h * (size_t)md->V) !=
                SC_OK)
            return SC_ERR_NOMEM;
    }
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
    return st == SC_OK ? SC_OK : fail(dv, st, "the optimizer step failed");
}

/* The buffers of the optimizer's collectives (postval.h, steps.h): doubles. */
sc_status sc_model_coll_buffer(void *ctx, const sc_coll *c, sc_cxfer *x)
{
    sc_mdev *dv = ctx;
    x->dtype = SC_DT_F64;
    x->count = 2;
    if (c->what == SC_OP_REDUCE && c->part < 2) { /* sync: the sum, the count */
        dv->sync[c->part] = dv->state[c->part];
        x->buf = &dv->sync[c->part];
        x->count = 1;
    } else if (c->what == SC_OP_OPTIM && c->part == 0) { /* the chain of partial states */
        x->buf = c->root == dv->d ? dv->part_out : c->root == dv->d - 1 ? dv->part_in
                                                                         : dv->scratch;
    } else if (c->what == SC_OP_OPTIM && c->part == 1) { /* the global state */
        x->buf = c->root == dv->d ? dv->part_out : dv->global;
    } else {
        char name[96];
        snprintf(name, sizeof name, "the built-in model has no buffer for a collective of %s "
                 "part %d", sc_op_name(c->what), c->part);
        return fail(dv, SC_ERR_ARG, name);
    }
    return SC_OK;
}

double sc_model_step_loss(const sc_model *md, int k)
{
    if (!md->have_loss || k < 0 || k >= md->steps)
        return NAN;
    double sum = 0;
    for (int i = k * md->m; i < (k + 1) * md->m; i++)
        sum += md->loss[i];
    return sum / ((double)md->m * md->R);
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
