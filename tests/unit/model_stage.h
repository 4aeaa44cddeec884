/*
 * model_stage.h — the built-in model on one stage of the cpu backend, for
 * the model's unit tests: opened from a config with its record of
 * microbatch 0 allocated (parts zeroed, b_only), a tensor's gradient and
 * weights by its number (sc_model_tensors; the embedding's last, host
 * pointers on cpu), closed. Header-only; include it after harness.h and
 * model/model_impl.h.
 *
 *     mstage st;
 *     mstage_open(&st, &cfg);
 *     st.wl.ops->forward(st.wl.ctx, 0, 0, NULL, NULL, st.parts, st.bonly);
 *     float *g = mstage_tensor(&st, t, 0, &n);
 *     mstage_close(&st);
 *
 * Tested by: tests/unit/test_decoder_model.c, tests/unit/test_moe_model.c
 * and tests/unit/test_moe_ep.c (which open their models with it).
 */
#ifndef SC_MODEL_STAGE_H
#define SC_MODEL_STAGE_H

#include <stdlib.h>

typedef struct mstage {
    sc_model *model;
    sc_backend *be;
    sc_workload wl;
    void **parts; /* the record's np parts (kept bytes in all), b_only */
    void *bonly;
    int np;
    size_t kept;
} mstage;

/* A failed step is a failed check and leaves what it could not make NULL
 * (mstage_close frees what there is). */
static void mstage_open(mstage *m, const sc_model_cfg *c)
{
    char err[256];
    int dev0 = 0;
    memset(m, 0, sizeof *m);
    CHECK(sc_model_new(c, 1, 1, &m->model, err, sizeof err) == SC_OK);
    CHECK(sc_backend_cpu_open(0, &m->be, err, sizeof err) == SC_OK);
    if (!m->model || !m->be)
        return;
    CHECK(sc_model_attach(m->model, 0, m->be, &dev0, &m->wl, err, sizeof err) == SC_OK);
    m->np = sc_model_record_parts(m->model, 0, 0, NULL, 0);
    size_t *pb = calloc((size_t)m->np, sizeof *pb);
    m->parts = calloc((size_t)m->np, sizeof *m->parts);
    sc_model_record_parts(m->model, 0, 0, pb, m->np);
    for (int i = 0; i < m->np; i++) {
        m->parts[i] = calloc(1, pb[i]);
        m->kept += pb[i];
    }
    m->bonly = calloc(1, sc_model_record_bonly_bytes(m->model, 0, 0));
    free(pb);
}

/* Tensor t's gradient (which 0) or weights (1), n floats. */
static float *mstage_tensor(const mstage *m, int t, int which, size_t *n)
{
    int s, first, rows;
    if (t < sc_model_layer_tensors(m->model))
        return sc_model_tensor_at(m->model, t, which, n, &s);
    float *x = (float *)sc_mvocab_emb(m->model->devs[0]->mv, which, &first, &rows);
    *n = (size_t)rows * (size_t)m->model->h;
    return x;
}

static void mstage_close(mstage *m)
{
    for (int i = 0; m->parts && i < m->np; i++)
        free(m->parts[i]);
    free(m->parts);
    free(m->bonly);
    sc_model_free(m->model);
    sc_backend_free(m->be);
    memset(m, 0, sizeof *m);
}

#endif
