/*
 * flops.c — the model's costs, memory and parameters (flops.h; the formulas
 * are those of docs/vocab.md#the-model-flops-and-bytes).
 *
 * Per microbatch of R = seq x batch tokens, in FLOPs (a multiply-add is 2):
 *   transformer layer  F = 24 R h^2 + 4 R s h   (QKV, projection, 4h MLP;
 *                      B = 24 R h^2 + 8 R s h    attention scores and
 *                      W = 24 R h^2              values: no weights, so no W)
 *   output layer       F = 2 R h V + 5 R V   (logits, softmax, loss)
 *                      B = 2 R h V           (input gradient)
 *                      W = 2 R h V           (weight gradient)
 *   input embedding    F = W = 2 R h         (a lookup and its scatter-add)
 * Split over P devices (vocab-1 computes the input gradient in S, vocab-2
 * in T): S = 2 R h V / P + 5 R V / P (+ 2 R h V / P with vocab-1),
 * T = 2 R h V / P (+ 2 R h V / P with vocab-2), E = EW = 2 R h / P.
 * Activations (bytes; bf16, attention recomputed by a fused kernel): a
 * transformer layer keeps 34 R h, the output layer 4 R V + 2 R h (fp32
 * probabilities and its input), S 4 R V / P + 2 R h. Parameters: 12 h^2 +
 * 13 h per layer, V h for the embedding and for the output layer (untied).
 */
#include "ir/alloc.h"
#include "flops.h"
#include "ir_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sc_model_desc sc_model_desc_default(void)
{
    return (sc_model_desc){.tflops = 400, .coll_gbps = 100, .coll_us = 10, .p2p_gbps = 0,
                           .bytes_per_param = 18};
}

/* Layers per stage: with redis, by cost (each next layer to the stage whose
 * device ends with the least time, at least one per stage); else evenly, the
 * first layers % S stages one more (the runtime's split, runtime/model/model.h). */
static void split_layers(const sc_prog *pg, long L, const double *extra, double layer, int *nl)
{
    int S = pg->S, P = pg->P;
    if (pg->vocab != SC_VOCAB_REDIS) {
        for (int s = 0; s < S; s++)
            nl[s] = (int)(L / S + (s < L % S));
        return;
    }
    double *dev = sc_calloc((size_t)P, sizeof(double));
    for (int s = 0; s < S; s++) {
        nl[s] = 1;
        if (dev)
            dev[pg->stage_dev[s]] += layer + extra[s];
    }
    for (long l = S; l < L; l++) {
        int best = -1;
        double bt = 0;
        for (int s = 0; s < S; s++) {
            double t = dev ? dev[pg->stage_dev[s]] + layer : nl[s];
            if (best < 0 || t < bt - 1e-12 * bt || (t <= bt + 1e-12 * bt && nl[s] < nl[best])) {
                bt = t;
                best = s;
            }
        }
        nl[best]++;
        if (dev)
            dev[pg->stage_dev[best]] += layer;
    }
    sc_free(dev);
}

sc_status sc_prog_set_model(sc_prog *pg, const sc_model_desc *md)
{
    const struct { const char *name; long v; } dims[] = {
        {"layers", md->layers}, {"hidden", md->hidden}, {"seq", md->seq},
        {"vocab", md->vocab}, {"batch", md->batch},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v < 1)
            return sc_fail(pg, SC_ERR_ARG, "model: %s = %ld must be at least 1", dims[i].name,
                           dims[i].v);
    if (md->heads < 0 || !(md->tflops > 0) || !(md->coll_gbps > 0) || !(md->coll_us >= 0) ||
        !(md->p2p_gbps >= 0) || !(md->bytes_per_param >= 0) || !isfinite(md->tflops))
        return sc_fail(pg, SC_ERR_ARG, "model: tflops and coll_gbps must be > 0, coll_us, "
                       "p2p_gbps and bytes_per_param >= 0, heads >= 0");
    int S = pg->S, P = pg->P;
    if (md->layers < S)
        return sc_fail(pg, SC_ERR_ARG, "model has %ld layers for %d stages: every stage needs "
                       "at least one layer (-D layers=%d or more)", md->layers, S, S);
    int split = sc_vocab_split(pg->vocab), vocab = pg->vocab != SC_VOCAB_NONE;
    if (split && md->vocab % P != 0)
        return sc_fail(pg, SC_ERR_ARG, "vocab_par = %s splits the vocabulary over the %d devices, "
                       "but vocab = %ld is not a multiple of %d", sc_vocab_name(pg->vocab), P,
                       md->vocab, P);
    double h = (double)md->hidden, V = (double)md->vocab, sq = (double)md->seq;
    double R = sq * (double)md->batch, rate = md->tflops * 1e12;
    double lf = 24 * R * h * h + 4 * R * sq * h, lb = 24 * R * h * h + 8 * R * sq * h,
           lw = 24 * R * h * h;
    double of = 2 * R * h * V + 5 * R * V, ob = 2 * R * h * V, ow = 2 * R * h * V;
    double ef = 2 * R * h, ew = 2 * R * h;
    double act = 34 * R * h, unit = act * (double)md->layers / P;
    int *nl = sc_malloc((size_t)S * sizeof(int));
    double *extra = sc_calloc((size_t)S, sizeof(double));
    double *pb = sc_calloc((size_t)P, sizeof(double));
    sc_model_desc *keep = sc_malloc(sizeof *keep);
    if (!nl || !extra || !pb || !keep) {
        sc_free(nl);
        sc_free(extra);
        sc_free(pb);
        sc_free(keep);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    if (vocab && !split) {
        extra[0] += ef + ew;
        extra[S - 1] += of + ob + ow;
    }
    split_layers(pg, md->layers, extra, lf + lb + lw, nl);
    sc_status st = SC_OK;
    double lparams = 12 * h * h + 13 * h;
    for (int s = 0; s < S && !st; s++) {
        double n = nl[s], f = n * lf, b = n * lb, w = n * lw, units = n * act;
        if (vocab && !split && s == 0) {
            f += ef;
            w += ew;
        }
        if (vocab && !split && s == S - 1) {
            f += of;
            b += ob;
            w += ow;
            units += 4 * R * V + 2 * R * h;
        }
        st = sc_prog_set_cost(pg, s, f / rate, b / rate, w / rate);
        if (!st)
            st = sc_prog_set_mem(pg, s, units / unit);
        pb[pg->stage_dev[s]] += n * lparams;
    }
    if (vocab && !split) {
        pb[pg->stage_dev[0]] += V * h;
        pb[pg->stage_dev[S - 1]] += V * h;
    }
    if (!st && split) {
        double v1 = pg->vocab == SC_VOCAB_V1;
        double ts = (2 * R * h * V + 5 * R * V + v1 * 2 * R * h * V) / P,
               tt = (2 * R * h * V + (1 - v1) * 2 * R * h * V) / P;
        st = sc_prog_set_vocab_cost(pg, -1, ts / rate, tt / rate, ef / P / rate, ew / P / rate);
        if (!st)
            st = sc_prog_set_vocab_mem(pg, -1, (4 * R * V / P + 2 * R * h) / unit);
        for (int d = 0; d < P; d++)
            pb[d] += 2 * V * h / P;
    }
    if (!st)
        st = sc_prog_set_vocab_bytes(pg, 2 * R * h, 4 * R);
    if (!st)
        st = sc_prog_set_coll_cost(pg, md->coll_us * 1e-6, md->coll_gbps * 1e9);
    if (!st && md->p2p_gbps > 0)
        st = sc_prog_set_comm(pg, 2 * R * h / (md->p2p_gbps * 1e9));
    if (st) {
        sc_free(nl);
        sc_free(extra);
        sc_free(pb);
        sc_free(keep);
        return st;
    }
    for (int d = 0; d < P; d++)
        pb[d] *= md->bytes_per_param;
    sc_free(extra);
    sc_free(pg->slayers);
    sc_free(pg->pbytes);
    sc_free(pg->model);
    *keep = *md;
    pg->model = keep;
    pg->slayers = nl;
    pg->pbytes = pb;
    pg->unit_bytes = unit;
    sc_prog_set_seconds(pg, 1);
    return SC_OK;
}

int sc_prog_has_model(const sc_prog *pg) { return pg->model != NULL; }
const sc_model_desc *sc_prog_model(const sc_prog *pg) { return pg->model; }

int sc_prog_stage_layers(const sc_prog *pg, int s)
{
    return pg->slayers && s >= 0 && s < pg->S ? pg->slayers[s] : 0;
}

double sc_prog_param_bytes(const sc_prog *pg, int d)
{
    return pg->pbytes && d >= 0 && d < pg->P ? pg->pbytes[d] : 0;
}

double sc_prog_unit_bytes(const sc_prog *pg) { return pg->model ? pg->unit_bytes : 0; }
