/*
 * model_tensors.c — below the rest of runtime/model/'s files (model_impl.h):
 * device tensors filled from the model's hash or with a constant, and the
 * numbering of the model's tensors (model.h: sc_model_tensors) that the
 * optimizer's fault, the comparison and the reference share.
 */
#include "model_impl.h"
#include "backend/sc_hash.h"

#define CHUNK SC_MODEL_CHUNK

/* Device tensor x[0..n) = scale * sc_urand(kind, idx, i), or 0 when scale
 * is 0: by the backend's fill_uniform, else generated on the host and
 * uploaded in chunks. */
void sc_model_fill(sc_mdev *dv, float *x, size_t n, int kind, long idx, float scale)
{
    const struct sc_backend_ops *o = dv->be->ops;
    long long seed = dv->md->c.seed;
    if (o->fill_uniform) { /* on the device: the same bits (sc_hash.h) */
        o->fill_uniform(dv->be->ctx, x, n, seed, sc_stream(kind, idx), scale);
        return;
    }
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (size_t i = 0; i < c; i++)
            dv->stage[i] = scale == 0 ? 0.0f : scale * sc_urand(seed, sc_stream(kind, idx), i0 + i);
        o->upload(dv->be->ctx, x + i0, dv->stage, c * sizeof(float));
    }
}

void sc_model_fill_const(sc_mdev *dv, float *x, size_t n, float v)
{
    for (size_t i = 0; i < CHUNK; i++)
        dv->stage[i] = v;
    for (size_t i0 = 0; i0 < n; i0 += CHUNK)
        dv->be->ops->upload(dv->be->ctx, x + i0, dv->stage,
                            (n - i0 < CHUNK ? n - i0 : CHUNK) * sizeof(float));
}

int sc_model_layer_tensors(const sc_model *md)
{
    return md->np * md->L + 1 + (md->Wn != NULL);
}

float *sc_model_tensor_at(const sc_model *md, int t, int params, size_t *n, int *stage)
{
    int nl = md->np * md->L;
    *stage = md->Sc - 1; /* the head: copy 0's last stage */
    if (t < nl) {
        int l = t / md->np, j = t % md->np, s = 0;
        while (s + 1 < md->S && md->first[s + 1] <= l)
            s++;
        *stage = s;
        *n = md->psz[j];
        return params ? SC_MW(md, l, j) : SC_MG(md, l, j);
    }
    if (t == nl) {
        *n = (size_t)md->h * (size_t)md->V;
        return md->split ? NULL : params ? md->Wout[0] : md->Gout[0];
    }
    if (t == nl + 1 && md->Wn) {
        *n = (size_t)md->h;
        return params ? md->Wn[0] : md->Gn[0];
    }
    *stage = 0;
    return NULL;
}
