/*
 * model_slices.c — sequence slices in the built-in model (model.h's
 * cfg.slices, docs/slices.md#run): record r of a sliced program is slice
 * j = r % K of microbatch r / K, tokens [c_j, c_j+1) of each of its
 * sequences (cfg.lengths holds each record's token count, the cuts the IR
 * chose). Its data are those rows of the unsliced microbatch, and the
 * decoder's attention of slice j runs over the keys and values of slices
 * 0..j of the same stage, which their records hold (model_impl.h's
 * P_DK, P_DV gather the later slices' gradients of them).
 *
 * The attention of slice j runs the backend's slots with a key/value
 * prefix (backend.h: past = c_j): its own queries, at positions c_j .., over
 * the keys and values of slices 0..j of the same stage, gathered into
 * scratch from their records. Rotary positions turn the slice's rows at
 * their places in a scratch span. The backward scatters the gradient of
 * slice i < j's keys and values into slice i's record (added); slice i's
 * own B adds its part and turns its keys' gradient back from the rotation.
 *
 * Tested by: tests/unit/test_slices_model.c, tests/slices.sh.
 */
#include "model_impl.h"
#include "backend/sc_hash.h"

#include <stdio.h>
#include <stdlib.h>

/* The four pointers of record (layer l, record r of a step) that later
 * slices reach: its keys, values (rotated, b_only) and their gradients. */
enum { E_K, E_V, E_DK, E_DV, E_N };

static float **entry(const sc_model *md, int l, int mb)
{
    return md->skv + ((size_t)l * (size_t)md->m + (size_t)(mb % md->m)) * E_N;
}

int sc_mslice_cut(const sc_model *md, int mb)
{
    if (md->slices <= 1 || mb < 0)
        return 0;
    int r = mb % md->m, c = 0;
    for (int i = r - r % md->slices; i < r; i++)
        c += md->lens[i];
    return c;
}

int sc_mslice_span(const sc_model *md, int mb)
{
    return sc_mslice_cut(md, mb) + sc_model_seq(md, mb);
}

void sc_mslice_row(const sc_model *md, int mb, int r, int *xmb, int *xr)
{
    if (md->slices <= 1) {
        *xmb = mb % md->m;
        *xr = r;
        return;
    }
    int Lq = sc_model_seq(md, mb);
    *xmb = (mb % md->m) / md->slices;
    *xr = (r / Lq) * (int)md->c.seq + sc_mslice_cut(md, mb) + r % Lq;
}

sc_status sc_mslice_check(const sc_model_cfg *cfg, int m, char *err, size_t errlen)
{
    int K = cfg->slices;
    if (K <= 1)
        return SC_OK;
    const char *no = !cfg->lengths                       ? "no slice lengths"
                     : m % K                             ? "records that are not whole microbatches"
                     : cfg->vocab_par != SC_VOCAB_NONE && cfg->vocab_par != SC_VOCAB_BASELINE
                                                         ? "vocabulary layers (vocab_par)"
                     : cfg->copies > 1                   ? "copies"
                                                         : NULL;
    if (no) {
        snprintf(err, errlen, "run: sequence slices (slices = %d) do not train with %s yet "
                 "(docs/slices.md#run)", K, no);
        return SC_ERR_ARG;
    }
    for (int r = 0; r < m; r += K) {
        double sum = 0;
        for (int j = 0; j < K; j++)
            sum += cfg->lengths[r + j];
        if (sum != (double)cfg->seq) {
            snprintf(err, errlen, "run: the %d slices of microbatch %d hold %g tokens, not "
                     "seq = %ld", K, r / K, sum, cfg->seq);
            return SC_ERR_ARG;
        }
    }
    return SC_OK;
}

sc_status sc_mslice_init(sc_model *md)
{
    md->slices = md->c.slices > 1 ? md->c.slices : 1;
    if (md->slices <= 1)
        return SC_OK;
    md->skv = calloc((size_t)md->C * (size_t)md->L * (size_t)md->m * E_N, sizeof(float *));
    return md->skv ? SC_OK : SC_ERR_NOMEM;
}

/* The device's scratch, allocated at its first slice (N = batch seq rows):
 * zeros, the gathered keys, values and their gradients [N kd] each. */
static size_t scratch_floats(const sc_model *md)
{
    size_t N = (size_t)md->c.batch * (size_t)md->c.seq;
    return N * 5 * (size_t)md->kd;
}

typedef struct { float *z, *k, *v, *dk, *dv; } scratch;

static scratch scratch_of(sc_mdev *dv)
{
    const sc_model *md = dv->md;
    size_t nk = (size_t)md->c.batch * (size_t)md->c.seq * (size_t)md->kd;
    if (!dv->ssc && (dv->ssc = dv->be->ops->alloc(dv->be->ctx, scratch_floats(md) * sizeof(float))))
        sc_model_fill_const(dv, dv->ssc, nk, 0.0f);
    scratch s = {dv->ssc, 0, 0, 0, 0};
    if (!s.z)
        return s;
    s.k = s.z + nk, s.v = s.k + nk, s.dk = s.v + nk, s.dv = s.dk + nk;
    return s;
}

sc_status sc_mslice_ready(sc_mdev *dv)
{
    if (dv->md->slices <= 1 || scratch_of(dv).z)
        return SC_OK;
    snprintf(dv->err, sizeof dv->err, "out of memory for the slices' scratch");
    return SC_ERR_NOMEM;
}

void sc_mslice_free(sc_mdev *dv)
{
    if (dv->ssc)
        dv->be->ops->free(dv->be->ctx, dv->ssc, scratch_floats(dv->md) * sizeof(float));
    dv->ssc = NULL;
}

/* Rows of a slice (batch x Lq, w floats each) to or from their places in
 * a span (batch x Lp, at c0); add: dst += src. */
static void rows_to(sc_mdev *dv, int w, int Lq, int Lp, int c0, const float *src, float *dst,
                    int to_span, int add)
{
    const struct sc_backend_ops *o = dv->be->ops;
    for (int b = 0; b < (int)dv->md->c.batch; b++) {
        size_t a = (size_t)b * Lq * w, p = ((size_t)b * Lp + c0) * w, n = (size_t)Lq * w;
        const float *s = src + (to_span ? a : p);
        float *d = dst + (to_span ? p : a);
        if (add)
            o->sgd(dv->be->ctx, n, -1.0f, s, d);
        else
            o->copy(dv->be->ctx, n, s, d);
    }
}

/* The keys and values of slices 0..j of record mb's microbatch (layer l)
 * into the span's k and v. */
static void gather(sc_mdev *dv, int l, int mb, int Lp, float *k, float *v)
{
    const sc_model *md = dv->md;
    int j = (mb % md->m) % md->slices, c = 0;
    for (int i = 0; i <= j; i++) {
        int r = mb - j + i, Li = sc_model_seq(md, r);
        float **e = entry(md, l, r);
        rows_to(dv, md->kd, Li, Lp, c, e[E_K], k, 1, 0);
        rows_to(dv, md->kd, Li, Lp, c, e[E_V], v, 1, 0);
        c += Li;
    }
}

sc_status sc_mslice_input(sc_mdev *dv, int mb, float *x)
{
    const sc_model *md = dv->md;
    int R = sc_model_rows(md, mb), h = md->h, xm, xr;
    sc_mslice_row(md, mb, 0, &xm, &xr);
    uint64_t st = sc_stream(T_INPUT, xm);
    for (int r = 0; r < R; r++) { /* a row at a time: h <= CHUNK */
        sc_mslice_row(md, mb, r, &xm, &xr);
        for (int i = 0; i < h; i++)
            dv->stage[i] = sc_urand(md->c.seed, st, (uint64_t)xr * (uint64_t)h + (uint64_t)i);
        dv->be->ops->upload(dv->be->ctx, x + (size_t)r * h, dv->stage, (size_t)h * sizeof(float));
    }
    return SC_OK;
}

/* Rotary positions (sign: 1, or -1 back) on a slice's rows x (heads
 * dim), at their positions c0 .. of the sequence. */
static void rotate(sc_mdev *dv, int heads, int Lq, int c0, float *x, int sign)
{
    const sc_model *md = dv->md;
    dv->be->ops->rope(dv->be->ctx, (int)md->c.batch * Lq, Lq, c0, heads, md->D, md->theta,
                      sign, x);
}

sc_status sc_mslice_attn_fwd(sc_mdev *dv, int l, int mb, float **T, float *q, float *k,
                             float *v, float *p)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    int B = (int)md->c.batch, Lq = sc_model_seq(md, mb), c0 = sc_mslice_cut(md, mb);
    if (sc_mslice_ready(dv) != SC_OK)
        return SC_ERR_NOMEM;
    scratch sc = scratch_of(dv);
    rotate(dv, md->H, Lq, c0, q, 1);
    rotate(dv, md->KV, Lq, c0, k, 1);
    float **e = entry(md, l, mb);
    e[E_K] = k, e[E_V] = v, e[E_DK] = T[P_DK], e[E_DV] = T[P_DV];
    gather(dv, l, mb, c0 + Lq, sc.k, sc.v);
    o->attn_fwd(dv->be->ctx, B, Lq, c0, md->H, md->KV, md->D, q, sc.k, sc.v, p, T[P_O]);
    /* the later slices add to the gradient of these keys and values */
    o->copy(dv->be->ctx, (size_t)B * Lq * md->kd, sc.z, T[P_DK]);
    o->copy(dv->be->ctx, (size_t)B * Lq * md->kd, sc.z, T[P_DV]);
    return SC_OK;
}

void sc_mslice_attn_bwd(sc_mdev *dv, int l, int mb, float **T, const float *q, float *p,
                        const float *dout)
{
    const sc_model *md = dv->md;
    int B = (int)md->c.batch, Lq = sc_model_seq(md, mb), c0 = sc_mslice_cut(md, mb);
    int Lp = c0 + Lq, kd = md->kd, j = (mb % md->m) % md->slices;
    scratch sc = scratch_of(dv); /* allocated: sc_mslice_ready */
    gather(dv, l, mb, Lp, sc.k, sc.v);
    dv->be->ops->attn_bwd(dv->be->ctx, B, Lq, c0, md->H, md->KV, md->D, q, sc.k, sc.v, p, dout,
                          T[P_DQ], sc.dk, sc.dv);
    rotate(dv, md->H, Lq, c0, T[P_DQ], -1);
    for (int i = 0, c = 0; i < j; i++) { /* into the earlier slices' records */
        int r = mb - j + i, Li = sc_model_seq(md, r);
        float **e = entry(md, l, r);
        rows_to(dv, kd, Li, Lp, c, sc.dk, e[E_DK], 0, 1);
        rows_to(dv, kd, Li, Lp, c, sc.dv, e[E_DV], 0, 1);
        c += Li;
    }
    /* its own: the later slices' share and this one's, then unrotated */
    rows_to(dv, kd, Lq, Lp, c0, sc.dk, T[P_DK], 0, 1);
    rows_to(dv, kd, Lq, Lp, c0, sc.dv, T[P_DV], 0, 1);
    rotate(dv, md->KV, Lq, c0, T[P_DK], -1);
}
