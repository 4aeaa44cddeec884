/*
 * flops.c — the model's costs, memory and bytes (flops.h; the formulas are
 * those of docs/model.md, the layers' FLOPs and bytes those of
 * model/mdesc.h, one description for a config.json and for the shorthand
 * `-D layers= hidden= vocab= heads=`).
 *
 * Per microbatch of R = seq x batch tokens, for a layer whose forward pass
 * costs F = R f(seq) FLOPs (sc_mdesc_flops) of which Fw = R f(0) are matrix
 * products with weights and the rest attention's core: B = Fw + 2 (F - Fw)
 * (the input gradient of the products, the core's backward twice its
 * forward), W = Fw (the weight gradient). The head: F = R (2 h V + 5 V), B
 * = W = 2 R h V; the embedding F = W = 2 R h, B = 0. For the shorthand
 * (a GPT layer) that is F = 24 R h^2 + 4 R s h, B = 24 R h^2 + 8 R s h,
 * W = 24 R h^2.
 * Split over P devices (vocab-1 computes the input gradient in S, vocab-2
 * in T): S = 2 R h V / P + 5 R V / P (+ 2 R h V / P with vocab-1),
 * T = 2 R h V / P (+ 2 R h V / P with vocab-2), E = EW = 2 R h / P.
 * Activations: R x sc_mdesc_act_bytes of each layer (FlashAttention); a unit
 * is the decoder layers' activations of one microbatch over P devices.
 * Parameters per device: its stages' layers (model/mdesc.h), and with a
 * split vocabulary its shard of the embedding and the head; their bytes by
 * the training set-up (sc_dev_bytes).
 */
#include "model/flops.h"

#include "ir/alloc.h"
#include "ir/ir_impl.h"
#include "model/mdesc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sc_model_desc sc_model_desc_default(void)
{
    return (sc_model_desc){.tflops = 400, .coll_gbps = 100, .coll_us = 10, .p2p_gbps = 0,
                           .precision = SC_PREC_MIXED, .optimizer = SC_OPT_ADAMW, .dp = 1,
                           .workspace = 1073741824.0};
}

/* Decoder layers per stage: with redis, by cost (each next layer to the
 * stage whose device ends with the least time, at least one per stage);
 * else evenly, the first layers % S stages one more (the runtime's split,
 * runtime/model/model.h). */
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

/* The contiguous split of decoders 1..L over S stages whose heaviest stage
 * is lightest (then the most even: least sum of squares), stage 0 also
 * carrying extra[0] and stage S - 1 extra[S - 1]; each stage at least one
 * decoder unless its extra is > 0. cost[i]: decoder i's F + B + W (1-based).
 * Exact: dynamic programming, O(S L^2). Returns -1 when none exists. */
static int split_best(int S, int L, const double *cost, const double *extra, int *nl)
{
    size_t n1 = (size_t)L + 1;
    double *pre = sc_calloc(n1, sizeof(double));
    double *best = sc_malloc((size_t)(S + 1) * n1 * sizeof(double)); /* [s][j]: stages 0..s-1 take 1..j */
    double *sq = sc_malloc((size_t)(S + 1) * n1 * sizeof(double));
    int *from = sc_malloc((size_t)(S + 1) * n1 * sizeof(int));
    int rc = -1;
    if (!pre || !best || !sq || !from)
        goto out;
    for (int i = 1; i <= L; i++)
        pre[i] = pre[i - 1] + cost[i];
    for (size_t k = 0; k < (size_t)(S + 1) * n1; k++)
        best[k] = INFINITY, sq[k] = INFINITY, from[k] = -1;
    best[0] = 0, sq[0] = 0;
    for (int s = 1; s <= S; s++)
        for (int j = 0; j <= L; j++)
            for (int i = 0; i <= j; i++) { /* stage s-1 takes decoders i+1 .. j */
                double prev = best[(size_t)(s - 1) * n1 + (size_t)i];
                double e = s == 1 ? extra[0] : 0;
                e += s == S ? extra[S - 1] : 0;
                if (!isfinite(prev) || (i == j && !(e > 0)))
                    continue;
                double w = pre[j] - pre[i] + e;
                double m = fmax(prev, w), q = sq[(size_t)(s - 1) * n1 + (size_t)i] + w * w;
                size_t at = (size_t)s * n1 + (size_t)j;
                if (m < best[at] * (1 - 1e-12) || (m <= best[at] * (1 + 1e-12) && q < sq[at])) {
                    best[at] = m, sq[at] = q, from[at] = i;
                }
            }
    if (!isfinite(best[(size_t)S * n1 + (size_t)L]))
        goto out;
    for (int s = S, j = L; s >= 1; s--) {
        int i = from[(size_t)s * n1 + (size_t)j];
        nl[s - 1] = j - i;
        j = i;
    }
    rc = 0;
out:
    sc_free(pre);
    sc_free(best);
    sc_free(sq);
    sc_free(from);
    return rc;
}

/* F, B, W (FLOPs) and activation bytes of one microbatch in layer i. */
typedef struct { double f, b, w, act; } layer_cost;

static layer_cost cost_of(const sc_mdesc *m, int i, double R, long seq)
{
    sc_mlayer k = sc_mdesc_kind(m, i);
    double f = R * (double)sc_mdesc_flops(m, i, seq), fw = R * (double)sc_mdesc_flops(m, i, 0);
    double act = R * (double)sc_mdesc_act_bytes(m, i, seq, SC_ATTN_FLASH);
    double V = (double)sc_mdesc_config(m)->vocab, h = (double)sc_mdesc_config(m)->hidden;
    switch (k) {
    case SC_ML_EMBED:
        return (layer_cost){f, 0, f, act};
    case SC_ML_HEAD:
        return (layer_cost){f, 2 * R * h * V, 2 * R * h * V, act};
    default:
        return (layer_cost){f, fw + 2 * (f - fw), fw, act};
    }
}

static void add_cost(layer_cost *a, layer_cost b)
{
    a->f += b.f;
    a->b += b.b;
    a->w += b.w;
    a->act += b.act;
}

/* Elements of n shared over `ways` devices: each holds ceil(n / ways). */
static double shard(double n, long ways) { return ways > 1 ? ceil(n / (double)ways) : n; }

/* The bytes of device d's n parameters by the set-up (sc_dev_bytes), of
 * which `trained` have gradients and optimizer states (sc_mdesc_frozen). */
static sc_dev_bytes bytes_of(const sc_model_desc *md, int dtype, int64_t count, double n,
                             double trained)
{
    int zero = md->zero;
    long dp = md->dp > 1 ? md->dp : 1;
    double grad = md->precision == SC_PREC_PURE ? dtype : 4;
    double master = md->precision == SC_PREC_MIXED && dtype != 4 ? 4 : 0;
    double moments = md->optimizer == SC_OPT_ADAMW ? 2.0 * (md->precision == SC_PREC_PURE ? dtype : 4)
                                                   : 0;
    double opt = md->optimizer == SC_OPT_NONE ? 0 : master + moments;
    return (sc_dev_bytes){
        .params = count,
        .param_bytes = shard(n, zero >= 3 ? dp : 1) * dtype,
        .grads = shard(trained, zero >= 2 ? dp : 1) * grad,
        .optimizer = shard(trained, zero >= 1 ? dp : 1) * opt,
        .workspace = md->workspace,
    };
}

/* Lengths (ir/lengths.h): the linear share of each stage's F, B, W and
 * record at the model's seq. A stage's cost at length L is a L + b L^2
 * (per token, attention's scores grow with the sequence), so its value at
 * seq (c1) and at 2 seq (c2) give b seq^2 = (c2 - 2 c1) / 2, and the
 * share is 1 - that / c1. nl: the decoders per stage. */
static sc_status set_linear(sc_prog *pg, const sc_mdesc *m, const int *nl, int vocab, int split,
                            long seq, double batch)
{
    int S = pg->S, last = sc_mdesc_nlayers(m) - 1;
    double *lin = sc_malloc((size_t)SC_LK_COUNT * (size_t)S * sizeof *lin);
    if (!lin)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    double R = (double)seq * batch;
    for (int s = 0, first = 1; s < S; first += nl[s], s++) {
        layer_cost c[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
        for (int j = 0; j < 2; j++) {
            for (int i = first; i < first + nl[s]; i++)
                add_cost(&c[j], cost_of(m, i, R * (j + 1), seq * (j + 1)));
            if (vocab && !split && s == 0)
                add_cost(&c[j], cost_of(m, 0, R * (j + 1), seq * (j + 1)));
            if (vocab && !split && s == S - 1) {
                add_cost(&c[j], cost_of(m, last - 1, R * (j + 1), seq * (j + 1)));
                add_cost(&c[j], cost_of(m, last, R * (j + 1), seq * (j + 1)));
            }
        }
        double one[SC_LK_COUNT] = {c[0].f, c[0].b, c[0].w, c[0].act};
        double two[SC_LK_COUNT] = {c[1].f, c[1].b, c[1].w, c[1].act};
        for (int k = 0; k < SC_LK_COUNT; k++)
            lin[(size_t)k * (size_t)S + (size_t)s] =
                one[k] > 0 ? 1 - (two[k] - 2 * one[k]) / 2 / one[k] : 1;
    }
    sc_status st = sc_prog_set_len_linear(pg, lin, (double)seq);
    sc_free(lin);
    return st;
}

/* The program's copy, freed with it (ir.c knows no model/: a destructor). */
static void free_mdesc(struct sc_mdesc *m) { sc_mdesc_free(m); }

/* The program's description: a copy of md->desc, or the shorthand's. */
static sc_status describe(sc_prog *pg, const sc_model_desc *md, sc_mdesc **out)
{
    char err[256];
    sc_status st;
    if (md->desc) {
        const sc_mdesc_cfg *c = sc_mdesc_config(md->desc);
        const struct { const char *name; long given; int64_t own; } same[] = {
            {"layers", md->layers, c->layers}, {"hidden", md->hidden, c->hidden},
            {"vocab", md->vocab, c->vocab}, {"heads", md->heads, c->heads}};
        for (size_t i = 0; i < sizeof same / sizeof *same; i++)
            if (same[i].given > 0 && same[i].given != same[i].own)
                return sc_fail(pg, SC_ERR_ARG, "model: %s = %ld, but the model's config (%s) "
                               "has %lld: give one or the other", same[i].name, same[i].given,
                               sc_mfamily_name(c->family), (long long)same[i].own);
        st = sc_mdesc_new(c, out, err, sizeof err);
    } else {
        st = sc_mdesc_gpt(md->layers, md->hidden, md->vocab, md->heads, out, err, sizeof err);
    }
    return st == SC_OK ? SC_OK : sc_fail(pg, st, "model: %s", err);
}

/* The sizes and rates of md in range, or SC_ERR_ARG with the one that is
 * not. */
static sc_status check_desc(sc_prog *pg, const sc_model_desc *md)
{
    const struct { const char *name; long v; } dims[] = {
        {"layers", md->desc ? 1 : md->layers}, {"hidden", md->desc ? 1 : md->hidden},
        {"seq", md->seq}, {"vocab", md->desc ? 1 : md->vocab}, {"batch", md->batch},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v < 1)
            return sc_fail(pg, SC_ERR_ARG, "model: %s = %ld must be at least 1", dims[i].name,
                           dims[i].v);
    if (md->heads < 0 || !(md->tflops > 0) || !(md->coll_gbps > 0) || !(md->coll_us >= 0) ||
        !(md->p2p_gbps >= 0) || !isfinite(md->tflops))
        return sc_fail(pg, SC_ERR_ARG, "model: tflops and coll_gbps must be > 0, coll_us and "
                       "p2p_gbps >= 0, heads >= 0");
    if (md->dtype_bytes != 0 && md->dtype_bytes != 2 && md->dtype_bytes != 4)
        return sc_fail(pg, SC_ERR_ARG, "model: a parameter's bytes must be 2 (bf16, fp16) or 4 "
                       "(fp32), got %d", md->dtype_bytes);
    if (md->zero < 0 || md->zero > 3 || md->dp < 1 || (int)md->precision < 0 ||
        md->precision > SC_PREC_PURE || (int)md->optimizer < 0 || md->optimizer > SC_OPT_NONE)
        return sc_fail(pg, SC_ERR_ARG, "model: zero must be 0 to 3 and dp at least 1 (got zero "
                       "%d, dp %ld)", md->zero, md->dp);
    if (!(md->workspace >= 0) || !isfinite(md->workspace))
        return sc_fail(pg, SC_ERR_ARG, "model: workspace must be >= 0 bytes (got %g)",
                       md->workspace);
    return SC_OK;
}

/* The decoder layers of each stage into nl[S]: md's split as given (no
 * stage empty but the first and last when they hold the embedding or the
 * head, own: vocab and not split), the best split of the layers' costs, or
 * the even split of mean-cost layers; extra: each stage's cost besides its
 * layers. */
static sc_status stage_layers(sc_prog *pg, const sc_model_desc *md, const sc_mdesc *m, long L,
                              int own, double R, const double *extra, double mean, int *nl)
{
    int S = pg->S;
    if (md->split) { /* given: S counts summing to L, no stage empty */
        long sum = 0;
        for (int s = 0; s < S; s++) {
            nl[s] = md->split[s];
            sum += nl[s] >= 0 ? nl[s] : -1000000;
            if (nl[s] < 0 || (nl[s] == 0 && !(own && (s == 0 || s == S - 1))))
                return sc_fail(pg, SC_ERR_ARG, "split: stage %d holds %d decoder layers: every "
                               "stage needs a layer (the embedding or the head count on the "
                               "first and last)", s, nl[s]);
        }
        if (sum != L)
            return sc_fail(pg, SC_ERR_ARG, "split: the %d stages hold %ld decoder layers, but the "
                           "model has %ld", S, sum, L);
    } else if (md->split_best) {
        double *cost = sc_calloc((size_t)L + 1, sizeof(double));
        int bad = !cost;
        for (int i = 1; !bad && i <= L; i++) {
            layer_cost c = cost_of(m, i, R, md->seq);
            cost[i] = c.f + c.b + c.w;
        }
        bad = bad || split_best(S, (int)L, cost, extra, nl) != 0;
        sc_free(cost);
        if (bad)
            return sc_fail(pg, SC_ERR_ARG, "split: %ld decoder layers do not split into %d stages",
                           L, S);
    } else {
        split_layers(pg, L, extra, mean, nl);
    }
    return SC_OK;
}

/* Each stage's costs (seconds at rate) and activation memory (in units)
 * from its layers nl[s], the embedding on the first and the final norm and
 * head on the last (own); their parameters added to count, the frozen ones
 * to frozen, on the stage's device. */
static sc_status stage_costs(sc_prog *pg, const sc_mdesc *m, const int *nl, int own, double R,
                             long seq, double rate, double unit, int64_t *count, int64_t *frozen)
{
    int S = pg->S, last = sc_mdesc_nlayers(m) - 1;
    layer_cost emb = cost_of(m, 0, R, seq), head = cost_of(m, last, R, seq);
    layer_cost norm = cost_of(m, last - 1, R, seq);
    sc_status st = SC_OK;
    for (int s = 0, first = 1; s < S && !st; first += nl[s], s++) {
        layer_cost c = {0, 0, 0, 0};
        int64_t n = 0;
        for (int i = first; i < first + nl[s]; i++) {
            add_cost(&c, cost_of(m, i, R, seq));
            n += sc_mdesc_params(m, i);
            frozen[pg->stage_dev[s]] += sc_mdesc_frozen(m, i);
        }
        if (own && s == 0) {
            add_cost(&c, emb);
            n += sc_mdesc_params(m, 0);
        }
        if (own && s == S - 1) {
            add_cost(&c, norm);
            add_cost(&c, head);
            n += sc_mdesc_params(m, last - 1) + sc_mdesc_params(m, last);
        }
        st = sc_prog_set_cost(pg, s, c.f / rate, c.b / rate, c.w / rate);
        if (!st)
            st = sc_prog_set_mem(pg, s, c.act / unit);
        count[pg->stage_dev[s]] += n;
    }
    return st;
}

/* Expert parallelism (ir/ep.h): each stage's all-to-all bytes, tokens x k
 * x hidden x the activation dtype over its MoE layers, and each device's
 * dense (all but the routed experts') parameter bytes, dtype each. */
static sc_status set_ep(sc_prog *pg, const sc_mdesc *m, const int *nl, double R, int dtype,
                        const sc_dev_bytes *db)
{
    const sc_mdesc_cfg *c = sc_mdesc_config(m);
    if (!c->experts)
        return SC_OK;
    double tok = R * (double)c->experts_per_tok * (double)c->hidden * c->act_bytes;
    double routed = (double)c->experts * 3.0 * (double)c->hidden * (double)c->moe_inter;
    sc_status st = SC_OK;
    double *dense = sc_calloc(2 * (size_t)pg->P, sizeof(double)), *rt = dense + pg->P;
    if (!dense)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int s = 0, first = 1; s < pg->S && !st; first += nl[s], s++) {
        int moe = 0;
        for (int i = first; i < first + nl[s]; i++) {
            int is = sc_mdesc_kind(m, i) == SC_ML_MOE;
            moe += is;
            dense[pg->stage_dev[s]] += ((double)sc_mdesc_params(m, i) - is * routed) * dtype;
            rt[pg->stage_dev[s]] += is * routed * dtype;
        }
        st = sc_prog_set_ep_bytes(pg, s, moe * tok);
        if (!st && moe > 0)
            st = sc_prog_set_ep_layers(pg, s, moe);
    }
    for (int d = 0; d < pg->P && !st; d++) {
        st = sc_prog_set_ep_dense(pg, d, dense[d]);
        if (!st && db[d].param_bytes > 0) /* the share of its parameters' bytes */
            st = sc_prog_set_ep_routed(pg, d, fmin(1, rt[d] / db[d].param_bytes));
    }
    sc_free(dense);
    return st;
}

/* pg takes the model: md (a copy into keep, its description m), the
 * stages' layers nl, the devices' bytes pb and db, the unit of memory;
 * what it held before is freed. */
static void adopt(sc_prog *pg, const sc_model_desc *md, sc_mdesc *m, sc_model_desc *keep,
                  int dtype, int *nl, double *pb, sc_dev_bytes *db, double unit)
{
    const sc_mdesc_cfg *mc = sc_mdesc_config(m);
    sc_free(pg->slayers);
    sc_free(pg->pbytes);
    sc_free(pg->dbytes);
    sc_free(pg->model);
    if (pg->mdesc_free)
        pg->mdesc_free(pg->mdesc);
    *keep = *md;
    keep->split = NULL; /* the caller's; the split is pg->slayers */
    keep->desc = m;
    keep->layers = (long)mc->layers;
    keep->hidden = (long)mc->hidden;
    keep->vocab = (long)mc->vocab;
    keep->heads = (long)mc->heads;
    keep->dtype_bytes = dtype;
    pg->model = keep;
    pg->mdesc = m;
    pg->mdesc_free = free_mdesc;
    pg->slayers = nl;
    pg->pbytes = pb;
    pg->dbytes = db;
    pg->unit_bytes = unit;
}

sc_status sc_prog_set_model(sc_prog *pg, const sc_model_desc *md)
{
    sc_status st = check_desc(pg, md);
    if (st)
        return st;
    sc_mdesc *m = NULL;
    st = describe(pg, md, &m);
    if (st)
        return st;
    const sc_mdesc_cfg *mc = sc_mdesc_config(m);
    int S = pg->S, P = pg->P;
    long L = (long)mc->layers;
    if (L < S && !md->split && !md->split_best) {
        sc_mdesc_free(m);
        return sc_fail(pg, SC_ERR_ARG, "model has %ld layers for %d stages: every stage needs "
                       "at least one layer (-D layers=%d or more)", L, S, S);
    }
    int split = sc_vocab_split(pg->vocab), vocab = pg->vocab != SC_VOCAB_NONE;
    if (split && mc->vocab % P != 0) {
        long long vocab_size = (long long)mc->vocab; /* mc is m's: read before freeing */
        sc_mdesc_free(m);
        return sc_fail(pg, SC_ERR_ARG, "vocab_par = %s splits the vocabulary over the %d devices, "
                       "but vocab = %lld is not a multiple of %d", sc_vocab_name(pg->vocab), P,
                       vocab_size, P);
    }
    double h = (double)mc->hidden, V = (double)mc->vocab;
    double R = (double)md->seq * (double)md->batch, rate = md->tflops * 1e12;
    int nl_all = sc_mdesc_nlayers(m), last = nl_all - 1;
    layer_cost dec = {0, 0, 0, 0};
    for (int i = 1; i <= L; i++)
        add_cost(&dec, cost_of(m, i, R, md->seq));
    double unit = dec.act / P;
    layer_cost emb = cost_of(m, 0, R, md->seq), head = cost_of(m, last, R, md->seq);
    layer_cost norm = cost_of(m, last - 1, R, md->seq);
    int *nl = sc_malloc((size_t)S * sizeof(int));
    double *extra = sc_calloc((size_t)S, sizeof(double));
    double *pb = sc_calloc((size_t)P, sizeof(double));
    double *elems = sc_calloc((size_t)P, sizeof(double));
    int64_t *count = sc_calloc((size_t)P, sizeof(int64_t));
    int64_t *frozen = sc_calloc((size_t)P, sizeof(int64_t));
    sc_dev_bytes *db = sc_calloc((size_t)P, sizeof *db);
    sc_model_desc *keep = sc_malloc(sizeof *keep);
    if (!nl || !extra || !pb || !elems || !count || !frozen || !db || !keep) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (vocab && !split) {
        extra[0] += emb.f + emb.b + emb.w;
        extra[S - 1] += head.f + head.b + head.w + norm.f + norm.b + norm.w;
    }
    st = stage_layers(pg, md, m, L, vocab && !split, R, extra, (dec.f + dec.b + dec.w) / (double)L, nl);
    if (st)
        goto fail;
    st = stage_costs(pg, m, nl, vocab && !split, R, md->seq, rate, unit, count, frozen);
    if (!st && vocab && !split && sc_mdesc_tied(m) && pg->stage_dev[0] != pg->stage_dev[S - 1])
        elems[pg->stage_dev[S - 1]] += (double)sc_mdesc_tied(m); /* the head's own copy */
    if (!st && split) {
        double v1 = pg->vocab == SC_VOCAB_V1;
        double ts = (2 * R * h * V + 5 * R * V + v1 * 2 * R * h * V) / P,
               tt = (2 * R * h * V + (1 - v1) * 2 * R * h * V) / P;
        st = sc_prog_set_vocab_cost(pg, -1, ts / rate, tt / rate, emb.f / P / rate,
                                    emb.w / P / rate);
        if (!st)
            st = sc_prog_set_vocab_mem(pg, -1, (head.act / P + (head.act - 4 * R * V)) / unit);
        /* each device: its shard of the embedding and the head (a tied
         * head shares the embedding's); the final norm on the last stage */
        int64_t vrows = (sc_mdesc_params(m, 0) + sc_mdesc_params(m, last)) / P;
        for (int d = 0; d < P; d++)
            count[d] += vrows;
        count[pg->stage_dev[S - 1]] += sc_mdesc_params(m, last - 1);
    }
    if (!st)
        st = sc_prog_set_vocab_bytes(pg, 2 * R * h, 4 * R);
    if (!st)
        st = set_linear(pg, m, nl, vocab, split, md->seq, (double)md->batch);
    if (!st)
        st = sc_prog_set_coll_cost(pg, md->coll_us * 1e-6, md->coll_gbps * 1e9);
    if (!st && md->p2p_gbps > 0)
        st = sc_prog_set_comm(pg, 2 * R * h / (md->p2p_gbps * 1e9));
    if (st)
        goto fail;
    int dtype = md->dtype_bytes ? md->dtype_bytes : mc->param_bytes;
    for (int d = 0; d < P; d++) {
        db[d] = bytes_of(md, dtype, count[d], (double)count[d] + elems[d],
                         (double)(count[d] - frozen[d]) + elems[d]);
        pb[d] = db[d].param_bytes + db[d].grads + db[d].optimizer;
    }
    if ((st = set_ep(pg, m, nl, R, dtype, db)) != SC_OK)
        goto fail;
    sc_free(extra);
    sc_free(elems);
    sc_free(count);
    sc_free(frozen);
    adopt(pg, md, m, keep, dtype, nl, pb, db, unit);
    sc_prog_set_seconds(pg, 1);
    return SC_OK;
fail:
    sc_free(nl);
    sc_free(extra);
    sc_free(pb);
    sc_free(elems);
    sc_free(count);
    sc_free(frozen);
    sc_free(db);
    sc_free(keep);
    sc_mdesc_free(m);
    return st;
}

int sc_prog_has_model(const sc_prog *pg) { return pg->model != NULL; }
const sc_model_desc *sc_prog_model(const sc_prog *pg) { return pg->model; }
const sc_mdesc *sc_prog_mdesc(const sc_prog *pg) { return pg->mdesc; }

int sc_prog_stage_layers(const sc_prog *pg, int s)
{
    return pg->slayers && s >= 0 && s < pg->S ? pg->slayers[s] : 0;
}

sc_dev_bytes sc_prog_dev_bytes(const sc_prog *pg, int d)
{
    if (!pg->dbytes || d < 0 || d >= pg->P)
        return (sc_dev_bytes){0, 0, 0, 0, 0};
    sc_dev_bytes b = pg->dbytes[d];
    double f = sc_prog_ep_param_scale(pg, d); /* 1/E of the routed experts (ir/ep.h) */
    b.params = (int64_t)llround((double)b.params * f);
    b.param_bytes *= f;
    b.grads *= f;
    b.optimizer *= f;
    return b;
}

double sc_prog_param_bytes(const sc_prog *pg, int d)
{
    return pg->pbytes && d >= 0 && d < pg->P ? pg->pbytes[d] * sc_prog_ep_param_scale(pg, d) : 0;
}

double sc_prog_static_bytes(const sc_prog *pg, int d)
{
    sc_dev_bytes b = sc_prog_dev_bytes(pg, d);
    return b.param_bytes + b.grads + b.optimizer + b.workspace;
}

double sc_prog_total_bytes(const sc_prog *pg, int d, double peak_units)
{
    return sc_prog_static_bytes(pg, d) + peak_units * sc_prog_unit_bytes(pg);
}

sc_status sc_prog_bytes_cap(sc_prog *pg, int d, double bytes, double *units)
{
    if (!pg->model || !(pg->unit_bytes > 0) || d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "a cap on the total bytes needs a model");
    sc_dev_bytes b = sc_prog_dev_bytes(pg, d);
    double held = sc_prog_static_bytes(pg, d), gib = 1073741824.0;
    *units = (bytes - held) / pg->unit_bytes;
    if (*units > 0)
        return SC_OK;
    return sc_fail_cap(pg, "mem = %.4g GiB caps each device's total, but d%d holds %.4g GiB "
                       "before any activation (parameters %.4g, gradients %.4g, optimizer "
                       "states %.4g, workspace %.4g GiB): nothing is left for activations",
                       bytes / gib, d, held / gib, b.param_bytes / gib, b.grads / gib,
                       b.optimizer / gib, b.workspace / gib);
}

double sc_prog_unit_bytes(const sc_prog *pg) { return pg->model ? pg->unit_bytes : 0; }
