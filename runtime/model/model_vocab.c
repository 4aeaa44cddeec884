/*
 * model_vocab.c — the embedding and the split output layer of the built-in
 * model (model_vocab.h).
 */
#include "model_vocab.h"
#include "backend/sc_hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Streams of the model's hash (model.c's kinds: the output weight and the
 * targets are the same tensors there). */
enum { K_WOUT = 3, K_TARGET = 5, K_EMB = 6, K_TOKEN = 7 };

struct sc_mvocab {
    sc_mvocab_cfg c;
    sc_backend *be;
    int Vd, off;        /* this device's rows / columns of the vocabulary */
    float *emb, *gemb;  /* [Vd x h] */
    float *wout, *gout; /* [h x Vd] (split) */
    float *whost;       /* host copy of wout (valid until optim), or NULL */
    float **ebuf, **xbuf, **gx, **gbuf, **st0, **st1; /* [m] device buffers */
    float **mloc;       /* [m] host: the shard's row maxima m_d */
    void **rec;         /* [m] S's record */
    char *tdone, *p2;   /* [m] T ran; the input gradient's all-reduce started */
    double *loss;       /* [m] */
    float *h1, *h2;     /* host scratch: R x max(Vd, h), and 3 R */
    size_t pbytes;      /* parameters and gradients allocated */
    char err[256];
};

static const struct sc_backend_ops *O(const sc_mvocab *v) { return v->be->ops; }
#define BC (v->be->ctx)

/* Sequence slices: record mb's row r is row *r of microbatch *mb. */
static void slice_row(const sc_mvocab_cfg *c, int *mb, int *r)
{
    if (c->slices <= 1 || !c->rows)
        return;
    int i = *mb % c->m, Lq = c->rows[i], c0 = 0;
    for (int k = i - i % c->slices; k < i; k++)
        c0 += c->rows[k];
    *r = (*r / Lq) * c->seq + c0 + *r % Lq;
    *mb = i / c->slices;
}

/* Record mb's row r's microbatch (*mb) and index in the whole batch
 * (expert parallelism: the rank's share, of the microbatch's rows: a
 * sliced record's are those of its whole microbatch). */
static uint64_t row_of(const sc_mvocab_cfg *c, int *mb, int r)
{
    size_t rows = !c->rows          ? (size_t)c->R
                  : c->slices > 1   ? (size_t)c->seq * (size_t)c->batch
                                    : (size_t)c->rows[*mb % c->m] * (size_t)c->batch;
    slice_row(c, mb, &r);
    return (uint64_t)c->share * rows + (uint64_t)r;
}

int32_t sc_mvocab_token(const sc_mvocab_cfg *c, int mb, int r)
{
    uint64_t row = row_of(c, &mb, r);
    return (int32_t)(sc_hash3(c->seed, sc_stream(K_TOKEN, mb % c->m), row) % (uint64_t)c->V);
}

int32_t sc_mvocab_target(const sc_mvocab_cfg *c, int mb, int r)
{
    uint64_t row = row_of(c, &mb, r);
    return (int32_t)(sc_hash3(c->seed, sc_stream(K_TARGET, mb % c->m), row) % (uint64_t)c->V);
}

static sc_status fail(sc_mvocab *v, sc_status st, const char *what)
{
    if (!v->err[0])
        snprintf(v->err, sizeof v->err, "%s", what);
    return st;
}

static float *dalloc(sc_mvocab *v, size_t n)
{
    return O(v)->alloc(BC, n * sizeof(float));
}

static void dfree(sc_mvocab *v, float **p, size_t n)
{
    if (*p)
        O(v)->free(BC, *p, n * sizeof(float));
    *p = NULL;
}

static void down(sc_mvocab *v, float *host, const float *dev, size_t n)
{
    O(v)->download(BC, host, dev, n * sizeof(float));
}

static void up(sc_mvocab *v, float *dev, const float *host, size_t n)
{
    O(v)->upload(BC, dev, host, n * sizeof(float));
}

/* x[0..n) = scale * urand(stream, first + i), generated on the host;
 * zeros on the device when the backend can (queued: run --graph captures
 * the gradients' zeroing, docs/graphs.md). */
static void gen(sc_mvocab *v, float *x, size_t n, uint64_t stream, uint64_t first, float scale)
{
    if (scale == 0 && O(v)->fill_uniform) {
        O(v)->fill_uniform(BC, x, n, v->c.seed, stream, 0.0f);
        return;
    }
    size_t chunk = (size_t)v->c.R * (size_t)(v->Vd > v->c.h ? v->Vd : v->c.h);
    for (size_t i0 = 0; i0 < n; i0 += chunk) {
        size_t k = n - i0 < chunk ? n - i0 : chunk;
        for (size_t i = 0; i < k; i++)
            v->h1[i] = scale == 0 ? 0.0f : scale * sc_urand(v->c.seed, stream, first + i0 + i);
        up(v, x + i0, v->h1, k);
    }
}

static int in_shard(const sc_mvocab *v, int32_t t) { return t >= v->off && t < v->off + v->Vd; }

sc_mvocab *sc_mvocab_new(const sc_mvocab_cfg *c, sc_backend *be, char *err, size_t errlen)
{
    sc_mvocab *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->c = *c;
    v->be = be;
    v->Vd = c->split ? c->V / c->P : c->V;
    v->off = c->split ? c->d * v->Vd : 0;
    size_t m = (size_t)c->M, R = (size_t)c->R, h = (size_t)c->h, Vd = (size_t)v->Vd;
    size_t wide = Vd > h ? Vd : h;
    wide = wide > 5 ? wide : 5; /* the sums' prologue uses 5 R floats */
    v->ebuf = calloc(m, sizeof(float *));
    v->xbuf = calloc(m, sizeof(float *));
    v->gx = calloc(m, sizeof(float *));
    v->gbuf = calloc(m, sizeof(float *));
    v->st0 = calloc(m, sizeof(float *));
    v->st1 = calloc(m, sizeof(float *));
    v->mloc = calloc(m, sizeof(float *));
    v->rec = calloc(m, sizeof(void *));
    v->tdone = calloc(m, 1);
    v->p2 = calloc(m, 1);
    v->loss = malloc(m * sizeof(double));
    v->h1 = malloc(R * wide * sizeof(float));
    v->h2 = malloc(3 * R * sizeof(float));
    int ok = v->ebuf && v->xbuf && v->gx && v->gbuf && v->st0 && v->st1 && v->mloc && v->rec &&
             v->tdone && v->p2 && v->loss && v->h1 && v->h2;
    if (ok) {
        for (size_t i = 0; i < m; i++)
            v->loss[i] = NAN;
        v->emb = dalloc(v, Vd * h);
        v->gemb = dalloc(v, Vd * h);
        ok = v->emb && v->gemb;
        v->pbytes = 2 * Vd * h * sizeof(float);
    }
    if (ok && c->split) {
        v->wout = dalloc(v, h * Vd);
        v->gout = dalloc(v, h * Vd);
        ok = v->wout && v->gout;
        v->pbytes += 2 * h * Vd * sizeof(float);
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory on d%d allocating the vocabulary layers (%s backend)",
                 c->d, be->ops->name);
        sc_mvocab_free(v);
        return NULL;
    }
    gen(v, v->emb, Vd * h, sc_stream(K_EMB, 0), (uint64_t)v->off * h, 1.0f);
    gen(v, v->gemb, Vd * h, 0, 0, 0.0f);
    if (c->split) {
        /* Wout's columns off .. off + Vd of every row. */
        for (size_t k = 0; k < h; k++)
            gen(v, v->wout + k * Vd, Vd, sc_stream(K_WOUT, 0), k * (size_t)c->V + (size_t)v->off,
                c->init_scale);
        gen(v, v->gout, h * Vd, 0, 0, 0.0f);
    }
    const char *bad = be->ops->errmsg ? be->ops->errmsg(be->ctx) : NULL;
    if (bad) {
        snprintf(err, errlen, "d%d: initialising the vocabulary layers: %s", c->d, bad);
        sc_mvocab_free(v);
        return NULL;
    }
    return v;
}

void sc_mvocab_free(sc_mvocab *v)
{
    if (!v)
        return;
    size_t R = (size_t)v->c.R, h = (size_t)v->c.h, Vd = (size_t)v->Vd;
    for (int i = 0; i < v->c.M && v->ebuf; i++) {
        dfree(v, &v->ebuf[i], R * h);
        dfree(v, &v->xbuf[i], R * h);
        dfree(v, &v->gx[i], R * h);
        dfree(v, &v->gbuf[i], R * h);
        dfree(v, &v->st0[i], R);
        dfree(v, &v->st1[i], 2 * R);
        free(v->mloc[i]);
    }
    dfree(v, &v->emb, Vd * h);
    dfree(v, &v->gemb, Vd * h);
    dfree(v, &v->wout, h * Vd);
    dfree(v, &v->gout, h * Vd);
    free(v->whost);
    free(v->ebuf);
    free(v->xbuf);
    free(v->gx);
    free(v->gbuf);
    free(v->st0);
    free(v->st1);
    free(v->mloc);
    free(v->rec);
    free(v->tdone);
    free(v->p2);
    free(v->loss);
    free(v->h1);
    free(v->h2);
    free(v);
}

size_t sc_mvocab_param_bytes(const sc_mvocab *v) { return v->pbytes; }

size_t sc_mvocab_record_bytes(const sc_mvocab *v)
{
    size_t R = (size_t)v->c.R;
    return (R * (size_t)v->Vd + R * (size_t)v->c.h + 3 * R) * sizeof(float);
}

/* The parts of S's record. */
static float *rec_P(const sc_mvocab *v, void *r) { (void)v; return r; }
static float *rec_X(const sc_mvocab *v, void *r)
{
    return (float *)r + (size_t)v->c.R * (size_t)v->Vd;
}
static float *rec_stats(const sc_mvocab *v, void *r)
{
    return rec_X(v, r) + (size_t)v->c.R * (size_t)v->c.h;
}

/* A buffer of n floats at slot (allocated when absent). */
static float *buf(sc_mvocab *v, float **slot, size_t n)
{
    if (!*slot)
        *slot = dalloc(v, n);
    return *slot;
}

/* Rows of microbatch mb (its length's, baseline; docs/lengths.md). */
static size_t rows_of(const sc_mvocab *v, int mb)
{
    return v->c.rows ? (size_t)v->c.rows[mb % v->c.m] * (size_t)v->c.batch : (size_t)v->c.R;
}

sc_status sc_mvocab_input(sc_mvocab *v, int mb, float *x)
{
    size_t R = rows_of(v, mb), h = (size_t)v->c.h;
    if (v->c.split) {
        if (!v->ebuf[mb])
            return fail(v, SC_ERR_PROGRAM, "the embedding of F s0 is not here");
        O(v)->copy(BC, R * h, v->ebuf[mb], x);
        dfree(v, &v->ebuf[mb], R * h);
        return SC_OK;
    }
    for (size_t r = 0; r < R; r++)
        O(v)->copy(BC, h, v->emb + (size_t)sc_mvocab_token(&v->c, mb, (int)r) * h, x + r * h);
    return SC_OK;
}

float *sc_mvocab_dx0(sc_mvocab *v, int mb)
{
    float *g = buf(v, &v->gbuf[mb], rows_of(v, mb) * (size_t)v->c.h);
    if (!g)
        fail(v, SC_ERR_NOMEM, "out of memory for the embedding's gradient");
    return g;
}

sc_status sc_mvocab_dx0_done(sc_mvocab *v, int mb)
{
    size_t R = rows_of(v, mb), h = (size_t)v->c.h;
    if (v->c.split || !v->gbuf[mb])
        return SC_OK; /* split: broadcast to EW */
    /* Gemb[tok] += dx0, row by row in order (x -= -1 g). */
    for (size_t r = 0; r < R; r++)
        O(v)->sgd(BC, h, -1.0f, v->gbuf[mb] + r * h,
                  v->gemb + (size_t)sc_mvocab_token(&v->c, mb, (int)r) * h);
    dfree(v, &v->gbuf[mb], R * h);
    return SC_OK;
}

float *sc_mvocab_output_buf(sc_mvocab *v, int mb)
{
    float *b = buf(v, &v->xbuf[mb], (size_t)v->c.R * (size_t)v->c.h);
    if (!b)
        fail(v, SC_ERR_NOMEM, "out of memory for the last stage's output");
    return b;
}

sc_status sc_mvocab_output_grad(sc_mvocab *v, int mb, float *dy)
{
    size_t n = (size_t)v->c.R * (size_t)v->c.h;
    if (!v->gx[mb])
        return fail(v, SC_ERR_PROGRAM, "the last stage's input gradient is not here");
    O(v)->copy(BC, n, v->gx[mb], dy);
    dfree(v, &v->gx[mb], n);
    return SC_OK;
}

/* The statistics' buffers of mb are no longer needed once T ran and the
 * input gradient's all-reduce (vocab-1) started. */
static void release_stats(sc_mvocab *v, int mb)
{
    if (!v->tdone[mb] || (v->c.split == 1 && !v->p2[mb]))
        return;
    size_t R = (size_t)v->c.R;
    dfree(v, &v->st0[mb], R);
    dfree(v, &v->st1[mb], 2 * R);
    free(v->mloc[mb]);
    v->mloc[mb] = NULL;
}

/* Host copies of the global maxima M and sums Z (and target logits) of mb. */
static void global_stats(sc_mvocab *v, int mb, float *M, float *Z)
{
    size_t R = (size_t)v->c.R;
    down(v, M, v->st0[mb], R);
    down(v, Z, v->st1[mb], 2 * R);
}

static sc_status pass_S(sc_mvocab *v, int mb, void *rec)
{
    size_t R = (size_t)v->c.R, h = (size_t)v->c.h, Vd = (size_t)v->Vd;
    if (!v->xbuf[mb])
        return fail(v, SC_ERR_PROGRAM, "S: the last stage's output is not here");
    float *P = rec_P(v, rec), *X = rec_X(v, rec), *st = rec_stats(v, rec);
    O(v)->copy(BC, R * h, v->xbuf[mb], X);
    dfree(v, &v->xbuf[mb], R * h);
    O(v)->gemm(BC, 0, 0, (int)R, (int)Vd, (int)h, 1.0f, X, v->wout, 0.0f, P);
    float *Y = v->h1, *m = v->h2, *s = m + R, *z = s + R;
    down(v, Y, P, R * Vd);
    for (size_t r = 0; r < R; r++) {
        float *y = Y + r * Vd, mx = y[0];
        for (size_t j = 1; j < Vd; j++)
            mx = y[j] > mx ? y[j] : mx;
        int32_t t = sc_mvocab_target(&v->c, mb, (int)r);
        z[r] = in_shard(v, t) ? y[t - v->off] : 0.0f;
        double sum = 0;
        for (size_t j = 0; j < Vd; j++) {
            y[j] = expf(y[j] - mx);
            sum += y[j];
        }
        m[r] = mx;
        s[r] = (float)sum;
    }
    up(v, P, Y, R * Vd);
    up(v, st, v->h2, 3 * R);
    if (!(v->mloc[mb] = malloc(R * sizeof(float))))
        return fail(v, SC_ERR_NOMEM, "out of memory");
    memcpy(v->mloc[mb], m, R * sizeof(float));
    v->rec[mb] = rec;
    if (v->c.split == 1) { /* vocab-1: the unscaled input gradient G_d = P Wout_d^T */
        float *g = buf(v, &v->gx[mb], R * h);
        if (!g)
            return fail(v, SC_ERR_NOMEM, "out of memory for the input gradient");
        O(v)->gemm(BC, 0, 1, (int)R, (int)h, (int)Vd, 1.0f, P, v->wout, 0.0f, g);
    }
    return SC_OK;
}

/* dY = (P exp(m_d - M) / Z - onehot) / (m R) in place of P; then the
 * weight gradient and, with vocab-2, the input gradient. */
static sc_status pass_T(sc_mvocab *v, int mb, void *rec)
{
    size_t R = (size_t)v->c.R, h = (size_t)v->c.h, Vd = (size_t)v->Vd;
    if (!v->st0[mb] || !v->st1[mb] || !v->mloc[mb])
        return fail(v, SC_ERR_PROGRAM, "T: the statistics are not here");
    float *P = rec_P(v, rec), *X = rec_X(v, rec), *Y = v->h1, *M = v->h2, *Z = M + R;
    global_stats(v, mb, M, Z);
    down(v, Y, P, R * Vd);
    float scale = (float)(1.0 / ((double)v->c.m * (double)R));
    for (size_t r = 0; r < R; r++) {
        float k = expf(v->mloc[mb][r] - M[r]) / Z[r];
        float *y = Y + r * Vd;
        for (size_t j = 0; j < Vd; j++)
            y[j] = y[j] * k * scale;
        int32_t t = sc_mvocab_target(&v->c, mb, (int)r);
        if (in_shard(v, t))
            y[t - v->off] -= scale;
    }
    up(v, P, Y, R * Vd);
    O(v)->gemm(BC, 1, 0, (int)h, (int)Vd, (int)R, 1.0f, X, P, 1.0f, v->gout);
    if (v->c.split == 2) {
        float *g = buf(v, &v->gx[mb], R * h);
        if (!g)
            return fail(v, SC_ERR_NOMEM, "out of memory for the input gradient");
        O(v)->gemm(BC, 0, 1, (int)R, (int)h, (int)Vd, 1.0f, P, v->wout, 0.0f, g);
    }
    v->tdone[mb] = 1;
    v->rec[mb] = NULL;
    release_stats(v, mb);
    return SC_OK;
}

sc_status sc_mvocab_pass(sc_mvocab *v, int op, int mb, void *record)
{
    size_t R = (size_t)v->c.R, h = (size_t)v->c.h;
    switch ((sc_op)op) {
    case SC_OP_S: return pass_S(v, mb, record);
    case SC_OP_T: return pass_T(v, mb, record);
    case SC_OP_E: {
        float *e = buf(v, &v->ebuf[mb], R * h);
        if (!e)
            return fail(v, SC_ERR_NOMEM, "out of memory for the embedding's output");
        memset(v->h1, 0, R * h * sizeof(float));
        up(v, e, v->h1, R * h);
        for (size_t r = 0; r < R; r++) {
            int32_t t = sc_mvocab_token(&v->c, mb, (int)r);
            if (in_shard(v, t))
                O(v)->copy(BC, h, v->emb + (size_t)(t - v->off) * h, e + r * h);
        }
        return SC_OK;
    }
    case SC_OP_EW:
        if (!v->gbuf[mb])
            return fail(v, SC_ERR_PROGRAM, "EW: the embedding's gradient is not here");
        for (size_t r = 0; r < R; r++) {
            int32_t t = sc_mvocab_token(&v->c, mb, (int)r);
            if (in_shard(v, t))
                O(v)->sgd(BC, h, -1.0f, v->gbuf[mb] + r * h,
                          v->gemb + (size_t)(t - v->off) * h);
        }
        dfree(v, &v->gbuf[mb], R * h);
        return SC_OK;
    default: return fail(v, SC_ERR_ARG, "not a vocabulary pass");
    }
}

/* The buffers of the collectives of S (sc_mvocab_coll_buffer): the row
 * maxima (part 0), the sums (1), vocab-1's input gradient (2). */
static sc_status stats_buffer(sc_mvocab *v, const sc_coll *c, sc_cxfer *x)
{
    size_t R = (size_t)v->c.R, h = (size_t)v->c.h;
    int mb = c->mb;
    if (c->part == 0) {
        if (!v->rec[mb] || !(x->buf = buf(v, &v->st0[mb], R)))
            return fail(v, SC_ERR_PROGRAM, "the row maxima are not here");
        O(v)->copy(BC, R, rec_stats(v, v->rec[mb]), x->buf);
        x->count = R;
    } else if (c->part == 1) {
        /* The maxima are reduced: s_d exp(m_d - M), and the target logits. */
        if (!v->rec[mb] || !v->st0[mb] || !(x->buf = buf(v, &v->st1[mb], 2 * R)))
            return fail(v, SC_ERR_PROGRAM, "the sums are not here");
        float *M = v->h2, *loc = v->h1;
        down(v, M, v->st0[mb], R);
        down(v, loc, rec_stats(v, v->rec[mb]), 3 * R);
        for (size_t r = 0; r < R; r++) {
            loc[3 * R + r] = loc[R + r] * expf(loc[r] - M[r]);
            loc[4 * R + r] = loc[2 * R + r];
        }
        up(v, x->buf, loc + 3 * R, 2 * R);
        x->count = 2 * R;
    } else if (c->part == 2) {
        /* vocab-1: G_d rescaled by the global statistics, less the target's
         * column: this device's part of the input gradient. */
        if (!v->gx[mb] || !v->st0[mb] || !v->st1[mb] || !v->mloc[mb])
            return fail(v, SC_ERR_PROGRAM, "the input gradient's parts are not here");
        size_t Vd = (size_t)v->Vd;
        if (!v->whost) {
            if (!(v->whost = malloc(h * Vd * sizeof(float))))
                return fail(v, SC_ERR_NOMEM, "out of memory");
            down(v, v->whost, v->wout, h * Vd);
        }
        float *G = v->h1, *M = v->h2, *Z = M + R;
        global_stats(v, mb, M, Z);
        down(v, G, v->gx[mb], R * h);
        float scale = (float)(1.0 / ((double)v->c.m * (double)R));
        for (size_t r = 0; r < R; r++) {
            float k = expf(v->mloc[mb][r] - M[r]) / Z[r] * scale;
            int32_t t = sc_mvocab_target(&v->c, mb, (int)r);
            float *g = G + r * h;
            for (size_t i = 0; i < h; i++)
                g[i] = g[i] * k - (in_shard(v, t) ? v->whost[i * Vd + (size_t)(t - v->off)] * scale
                                                  : 0.0f);
        }
        up(v, v->gx[mb], G, R * h);
        x->buf = v->gx[mb];
        x->count = R * h;
        v->p2[mb] = 1;
        release_stats(v, mb);
    } else {
        return fail(v, SC_ERR_PROGRAM, "an unknown vocabulary collective");
    }
    return SC_OK;
}

sc_status sc_mvocab_coll_buffer(sc_mvocab *v, const sc_coll *c, sc_cxfer *x)
{
    size_t R = (size_t)v->c.R, h = (size_t)v->c.h;
    int mb = c->mb;
    sc_status st;
    if (mb < 0 || mb >= v->c.M)
        return fail(v, SC_ERR_PROGRAM, "a collective of no microbatch");
    x->dtype = SC_DT_F32;
    x->count = R * h;
    switch ((sc_op)c->what) { /* the tag: the kind whose output it carries */
    case SC_OP_E: x->buf = v->ebuf[mb]; break;
    case SC_OP_F: x->buf = buf(v, &v->xbuf[mb], R * h); break; /* the root filled it */
    case SC_OP_B: x->buf = buf(v, &v->gbuf[mb], R * h); break;
    case SC_OP_T: x->buf = v->gx[mb]; break;
    case SC_OP_S:
        if ((st = stats_buffer(v, c, x)) != SC_OK)
            return st;
        break;
    default: return fail(v, SC_ERR_PROGRAM, "an unknown vocabulary collective");
    }
    if (!x->buf)
        return fail(v, SC_ERR_NOMEM, "out of memory for a collective's buffer");
    return SC_OK;
}

sc_status sc_mvocab_coll_done(sc_mvocab *v, const sc_coll *c)
{
    size_t R = (size_t)v->c.R, h = (size_t)v->c.h;
    int mb = c->mb, d = v->c.d;
    int grad_in = c->what == SC_OP_T || (c->what == SC_OP_S && c->part == 2); /* input gradient */
    if (c->what == SC_OP_E && d != v->c.first_dev)
        dfree(v, &v->ebuf[mb], R * h);
    else if (grad_in && d != v->c.last_dev)
        dfree(v, &v->gx[mb], R * h);
    else if (c->what == SC_OP_S && c->part == 1) {
        /* The loss of mb: sum over rows of log Z + M - z (in double). */
        float *M = v->h2, *Z = M + R;
        global_stats(v, mb, M, Z);
        double loss = 0;
        for (size_t r = 0; r < R; r++)
            loss += log((double)Z[r]) + (double)M[r] - (double)Z[R + r];
        v->loss[mb] = loss;
    }
    return SC_OK;
}

double sc_mvocab_loss(const sc_mvocab *v, int mb)
{
    return v->loss[mb];
}

int sc_mvocab_tensor(sc_mvocab *v, int i, float **w, float **g, size_t *n)
{
    size_t hv = (size_t)v->c.h * (size_t)v->Vd;
    if (i == 0) {
        *w = v->emb, *g = v->gemb, *n = hv;
        return 1;
    }
    if (i == 1 && v->wout) {
        *w = v->wout, *g = v->gout, *n = hv;
        return 1;
    }
    return 0;
}

void sc_mvocab_params_changed(sc_mvocab *v)
{
    free(v->whost);
    v->whost = NULL;
}

const float *sc_mvocab_emb(const sc_mvocab *v, int params, int *first_row, int *rows)
{
    *first_row = v->off;
    *rows = v->Vd;
    return params ? v->emb : v->gemb;
}

const float *sc_mvocab_out(const sc_mvocab *v, int params, int *first_col, int *cols)
{
    *first_col = v->off;
    *cols = v->Vd;
    return params ? v->wout : v->gout;
}

sc_backend *sc_mvocab_backend(const sc_mvocab *v) { return v->be; }
const char *sc_mvocab_errmsg(const sc_mvocab *v) { return v->err; }
