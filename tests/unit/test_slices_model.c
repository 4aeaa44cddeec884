/*
 * test_slices_model.c — sequence slices in the built-in model
 * (runtime/model/model_slices.c, docs/slices.md#run) on one stage: a
 * microbatch of seq 6 (batch 2) as 3 slices of 1, 2 and 3 tokens, their
 * F in order and B, W last to first, against the same microbatch whole:
 * the rows' mapping and sizes, the loss, and every gradient tensor (the
 * unsliced one is checked against differences by test_decoder_model.c).
 */
#include "harness.h"
#include "model/model_impl.h"

#include <stdlib.h>

#define K 3

typedef struct { sc_model *model; sc_backend *be; sc_workload wl; } one;

static void open_one(one *o, int slices)
{
    char err[256];
    static const double lens[K] = {1, 2, 3};
    sc_model_cfg c = {.hidden = 16, .layers = 2, .vocab = 24, .seq = 6, .batch = 2, .seed = 3,
                      .kind = SC_MODEL_DECODER, .heads = 4, .kv_heads = 2, .head_dim = 4,
                      .inter = 20, .rope_theta = 10000, .norm_eps = 1e-5,
                      .opt = sc_optim_defaults()};
    if (slices > 1)
        c.slices = slices, c.lengths = lens;
    int dev0 = 0;
    CHECK(sc_model_new(&c, 1, slices, &o->model, err, sizeof err) == SC_OK);
    CHECK(sc_backend_cpu_open(0, &o->be, err, sizeof err) == SC_OK);
    CHECK(sc_model_attach(o->model, 0, o->be, &dev0, &o->wl, err, sizeof err) == SC_OK);
}

/* Record mb's parts and b_only, allocated. */
static float **record(const one *o, int mb, void **bonly)
{
    int np = sc_model_record_parts(o->model, 0, mb, NULL, 0);
    size_t *pb = calloc((size_t)np, sizeof *pb);
    float **parts = calloc((size_t)np + 1, sizeof *parts);
    sc_model_record_parts(o->model, 0, mb, pb, np);
    for (int i = 0; i < np; i++)
        parts[i] = malloc(pb[i]);
    *bonly = malloc(sc_model_record_bonly_bytes(o->model, 0, mb));
    parts[np] = *bonly; /* freed with the parts */
    free(pb);
    return parts;
}

static void free_record(const one *o, float **parts, int mb)
{
    int np = sc_model_record_parts(o->model, 0, mb, NULL, 0);
    for (int i = 0; i <= np; i++)
        free(parts[i]);
    free(parts);
}

TEST(mapping)
{
    one o;
    open_one(&o, K);
    int cut[K] = {0, 1, 3}, xm, xr;
    for (int j = 0; j < K; j++) {
        CHECK(sc_mslice_cut(o.model, j) == cut[j]);
        CHECK(sc_mslice_span(o.model, j) == cut[j] + j + 1);
        CHECK(sc_model_rows(o.model, j) == 2 * (j + 1));
    }
    sc_mslice_row(o.model, 2, 4, &xm, &xr); /* slice 2, sequence 1, its token 1: row 6 + 3 + 1 */
    CHECK(xm == 0 && xr == 10);
    sc_mslice_row(o.model, 1, 1, &xm, &xr);
    CHECK(xm == 0 && xr == 2);
    /* slice 1's b_only per layer: q, k, v of its R = 4 rows (batch 2, qd
     * 16, kd 8), p of its 2 queries over the 3 keys of slices 0 and 1
     * (heads 4), gate and up (inter 20); then the scratch dout (R qd) */
    size_t B = 2, R = 4, Lq = 2, kn = 3;
    CHECK(sc_model_record_bonly_bytes(o.model, 0, 1) ==
          (2 * (R * 16 + 2 * R * 8 + B * 4 * Lq * kn + 2 * R * 20) + R * 16) * sizeof(float));
    sc_model_free(o.model);
    sc_backend_free(o.be);
}

TEST(gradients)
{
    one w, s;
    open_one(&w, 1);
    open_one(&s, K);
    void *wb, *sb[K];
    float **wp = record(&w, 0, &wb), **sp[K];
    CHECK(w.wl.ops->forward(w.wl.ctx, 0, 0, NULL, NULL, wp, wb) == SC_OK);
    CHECK(w.wl.ops->backward_input(w.wl.ctx, 0, 0, NULL, NULL, wp, wb) == SC_OK);
    CHECK(w.wl.ops->backward_weight(w.wl.ctx, 0, 0, wp) == SC_OK);
    double sum = 0;
    for (int j = 0; j < K; j++) {
        sp[j] = record(&s, j, &sb[j]);
        CHECK(s.wl.ops->forward(s.wl.ctx, 0, j, NULL, NULL, sp[j], sb[j]) == SC_OK);
        sum += s.model->loss[j];
    }
    for (int j = K - 1; j >= 0; j--) {
        CHECK(s.wl.ops->backward_input(s.wl.ctx, 0, j, NULL, NULL, sp[j], sb[j]) == SC_OK);
        CHECK(s.wl.ops->backward_weight(s.wl.ctx, 0, j, sp[j]) == SC_OK);
    }
    if (!(fabs(sum - w.model->loss[0]) <= 1e-6 * fabs(w.model->loss[0])))
        fprintf(stderr, "loss %.17g sliced %.17g\n", w.model->loss[0], sum);
    CHECK(fabs(sum - w.model->loss[0]) <= 1e-6 * fabs(w.model->loss[0]));
    int bitwise;
    double rel = sc_model_compare(s.model, w.model, &bitwise);
    if (!(rel <= 1e-5))
        fprintf(stderr, "sliced gradients off by %g\n", rel);
    CHECK(rel <= 1e-5);
    CHECK(rel > 0 || bitwise); /* the comparison saw the tensors */
    free_record(&w, wp, 0);
    for (int j = 0; j < K; j++)
        free_record(&s, sp[j], j);
    sc_model_free(w.model);
    sc_model_free(s.model);
    sc_backend_free(w.be);
    sc_backend_free(s.be);
}

int main(void)
{
    RUN(mapping);
    RUN(gradients);
    return harness_done("slices_model");
}
