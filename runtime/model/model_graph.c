/*
 * model_graph.c — the built-in model under run --graph (exec/exec.h's
 * graph_capture and graph_replayed, docs/graphs.md): while step 2 is
 * captured, the backend keeps each loss on the device (backend.h,
 * graph_losses) and the model notes whose it is; after each replay it
 * reads them into the step's microbatches.
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void sc_model_graph_capture(void *ctx)
{
    sc_mdev *dv = ctx;
    free(dv->xmb);
    dv->xmb = calloc((size_t)dv->md->m, sizeof(int));
    dv->nx = 0;
    dv->capturing = dv->xmb != NULL;
}

void sc_model_graph_note(sc_mdev *dv, int mb)
{
    if (dv->capturing && dv->nx < dv->md->m)
        dv->xmb[dv->nx++] = mb % dv->md->m;
}

sc_status sc_model_graph_replayed(void *ctx, int step)
{
    sc_mdev *dv = ctx;
    sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    dv->capturing = 0;
    if (!dv->nx)
        return SC_OK; /* no loss on this device */
    double *loss = malloc((size_t)dv->nx * sizeof *loss);
    int n = loss && o->graph_losses ? o->graph_losses(dv->be->ctx, loss, dv->nx) : -1;
    if (n != dv->nx) {
        const char *bad = o->errmsg ? o->errmsg(dv->be->ctx) : NULL;
        snprintf(dv->err, sizeof dv->err, "%s", bad ? bad : "the backend kept no losses");
        free(loss);
        return SC_ERR_RUNTIME;
    }
    for (int i = 0; i < n; i++) {
        int mb = step * md->m + dv->xmb[i];
        if (!isfinite(loss[i])) {
            snprintf(dv->err, sizeof dv->err, "the loss of microbatch %d is not finite", mb);
            free(loss);
            return SC_ERR_RUNTIME;
        }
        md->loss[mb] = loss[i];
    }
    free(loss);
    return SC_OK;
}
