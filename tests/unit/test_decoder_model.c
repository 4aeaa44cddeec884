/*
 * test_decoder_model.c — the decoder of the built-in model
 * (runtime/model/model_decoder.c) end to end on one stage: every gradient
 * tensor (the 9 of each layer, the output layer, the final norm, the
 * embedding) that B and W compute against central differences of the loss
 * F computes, at the tensor's largest gradient and at three fixed places.
 * `run --check` compares a pipeline with the same code on one device; this
 * is what says that code is the gradient. Also the record's sizes.
 */
#include "harness.h"
#include "model/model_impl.h"
#include "model_stage.h"

#include <stdlib.h>

#define EPS 2e-2

static mstage st; /* the model, its record */

static double loss(void)
{
    if (st.wl.ops->forward(st.wl.ctx, 0, 0, NULL, NULL, st.parts, st.bonly) != SC_OK)
        return NAN;
    return st.model->loss[0] / st.model->R; /* the mean over rows: m = 1 */
}

/* One tensor: the analytic gradient g (n floats) against differences of
 * the loss in w, within 5% of the tensor's largest gradient. */
static void check_tensor(int t, float *w, const float *g, size_t n)
{
    size_t at[4] = {0, n / 3, 2 * n / 3, n - 1};
    double gmax = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(g[i]) > gmax)
            gmax = fabs(g[i]), at[0] = i;
    CHECK(gmax > 0);
    for (int k = 0; k < 4; k++) {
        size_t i = at[k];
        float w0 = w[i];
        w[i] = w0 + (float)EPS;
        double lp = loss();
        w[i] = w0 - (float)EPS;
        double lm = loss();
        w[i] = w0;
        double fd = (lp - lm) / ((double)(w0 + (float)EPS) - (double)(w0 - (float)EPS));
        if (!(fabs(fd - g[i]) <= 0.05 * gmax))
            fprintf(stderr, "tensor %d [%zu]: gradient %.6g, differences %.6g (max %.3g)\n", t,
                    i, g[i], fd, gmax);
        CHECK(fabs(fd - g[i]) <= 0.05 * gmax);
    }
}

TEST(gradients)
{
    sc_model_cfg c = {.hidden = 16, .layers = 2, .vocab = 24, .seq = 6, .batch = 2, .seed = 3,
                      .kind = SC_MODEL_DECODER, .heads = 4, .kv_heads = 2, .head_dim = 4,
                      .inter = 20, .rope_theta = 10000, .norm_eps = 1e-5,
                      .opt = sc_optim_defaults()};
    mstage_open(&st, &c);
    if (!st.model)
        return;
    sc_model *md = st.model;
    /* 17 parts a layer, 5 of the head, the first stage's dx0; the sizes of
     * docs/run.md#the-decoder (h 16, q 16, k 8, i 20; H 4, s 6) */
    CHECK(st.np == 2 * 17 + 5 + 1);
    size_t R = 12, layer = 8 * 16 + 2 * 16 + 2 * 8 + 3 * 20 + 2;
    CHECK(st.kept == sc_model_record_kept_bytes(md, 0, 0));
    CHECK(st.kept == R * (2 * layer + 3 * 16 + 24 + 1 + 16) * sizeof(float));
    CHECK(sc_model_record_bonly_bytes(md, 0, 0) ==
          R * (2 * (16 + 2 * 8 + 2 * 20 + 4 * 6) + 16) * sizeof(float));
    CHECK(!isnan(loss()));
    CHECK(st.wl.ops->backward_input(st.wl.ctx, 0, 0, NULL, NULL, st.parts, st.bonly) == SC_OK);
    CHECK(st.wl.ops->backward_weight(st.wl.ctx, 0, 0, st.parts) == SC_OK);
    int nt = sc_model_tensors(md);
    CHECK(nt == 9 * 2 + 2 + 1);
    for (int t = 0; t < nt; t++) {
        size_t n;
        const float *g = mstage_tensor(&st, t, 0, &n);
        float *w = mstage_tensor(&st, t, 1, &n);
        float *gc = malloc(n * sizeof(float)); /* the forward passes below do not change it */
        for (size_t i = 0; i < n; i++)
            gc[i] = g[i];
        check_tensor(t, w, gc, n);
        free(gc);
    }
    mstage_close(&st);
}

int main(void)
{
    RUN(gradients);
    return harness_done("decoder_model");
}
