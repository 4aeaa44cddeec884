/*
 * model_decoder.c — the decoder block of the built-in model (model.h,
 * docs/run.md#the-decoder): a Llama-style layer and the final norm, their
 * record, and F, B, W split as Zero Bubble splits them.
 *
 * Layer (x: R x h rows, row r = b seq + t):
 *   xn1 = RMSNorm(x; g1); q, k, v = xn1 Wq, Wk, Wv; rope(q), rope(k);
 *   o = attn(q, k, v); y = x + o Wo; xn2 = RMSNorm(y; g2);
 *   a = swiglu(xn2 Wg, xn2 Wu); x' = y + a Wd.
 * Head (last stage): xf = RMSNorm(x; gf), logits = xf Wout (model.c's
 * cross-entropy).
 *
 * B computes the input gradient only and leaves in the record what W
 * needs: the gradients at the outputs of every product (dq, dk, dv turned
 * back to before the rotation, dy, dgate, dup, dtop) and at the norms'
 * outputs (dxn1, dxn2; the head's dxf). W computes every weight gradient
 * from them. q, k, v, p, gate and up serve B only: they are the record's
 * b_only buffer, freed after B, with the scratch of do = dy Wo^T.
 * With experts (md->E > 0) the MLP is model_moe.c's.
 */
#include "model_impl.h"

#include <stdio.h>

/* The kept parts of one layer: model_impl.h's P_* (md->lp of them). */
/* The head's (the last stage): its input, rstd, the normed input, the
 * logits' gradient, the normed input's gradient. */
enum { H_X, H_RSTD, H_XF, H_DL, H_DXF, H_PARTS };

/* Floats of a kept part of a layer: R rows of its width. */
static size_t part_width(const sc_model *md, int i)
{
    size_t moe[8];
    if (i >= P_LAYER) { /* the MoE layer's own */
        sc_moe_parts(md, moe);
        return moe[i - P_LAYER];
    }
    if (md->E && (i == P_A || i == P_DGATE || i == P_DUP)) /* R k gathered rows of Ie */
        return (size_t)SC_MEP(md) * (size_t)md->K * (size_t)md->Ie; /* ep: what may come */
    switch (i) {
    case P_RSTD1: case P_RSTD2: return 1;
    case P_O: case P_DQ: return (size_t)md->qd;
    case P_DK: case P_DV: return (size_t)md->kd;
    case P_A: case P_DGATE: case P_DUP: return (size_t)md->I;
    default: return (size_t)md->h;
    }
}

static size_t head_width(const sc_model *md, int i)
{
    return i == H_RSTD ? 1 : i == H_DL ? (size_t)md->V : (size_t)md->h;
}

/* The first stage keeps one part more, last: its input gradient dx0, from
 * which W scatters the embedding's gradient. */
int sc_mdec_record_parts(const sc_model *md, int s, int mb, size_t *bytes, int max)
{
    int nl = md->lp * md->count[s], nh = nl + (SC_MLAST(md, s) ? H_PARTS : 0);
    int n = nh + (s == 0);
    for (int i = 0; i < n && i < max; i++)
        bytes[i] = (size_t)sc_model_rows(md, mb) * sizeof(float) *
                   (i < nl ? part_width(md, i % md->lp) : i < nh ? head_width(md, i - nl)
                                                                : (size_t)md->h);
    return n;
}

size_t sc_mdec_kept_bytes(const sc_model *md, int s, int mb)
{
    size_t layer = 0, head = 0;
    for (int i = 0; i < md->lp; i++)
        layer += part_width(md, i);
    for (int i = 0; i < H_PARTS && SC_MLAST(md, s); i++)
        head += head_width(md, i);
    if (s == 0) /* dx0 */
        head += (size_t)md->h;
    return (size_t)sc_model_rows(md, mb) * (layer * (size_t)md->count[s] + head) * sizeof(float);
}

float *sc_mdec_logits(const sc_model *md, int s, float **T)
{
    return T[md->lp * md->count[s] + H_DL];
}

/* Floats of one layer's b_only of mb: q, k, v, p (quadratic in its
 * sequence length), gate, up (MoE: model_moe.c's in place of gate and up). */
static size_t bonly_layer(const sc_model *md, int mb)
{
    /* sliced: p over the keys of the earlier slices too (model_slices.c) */
    size_t R = (size_t)sc_model_rows(md, mb), seq = (size_t)sc_model_seq(md, mb);
    size_t kn = (size_t)sc_mslice_span(md, mb);
    return R * (size_t)md->qd + 2 * R * (size_t)md->kd +
           (size_t)md->c.batch * (size_t)md->H * seq * kn +
           (md->E ? sc_moe_bonly_floats(md, mb) : 2 * R * (size_t)md->I);
}

size_t sc_mdec_bonly_bytes(const sc_model *md, int s, int mb)
{
    return (bonly_layer(md, mb) * (size_t)md->count[s] +
            (size_t)sc_model_rows(md, mb) * (size_t)md->qd) * sizeof(float);
}

/* Layer i's b_only tensors in the stage's buffer. */
typedef struct { float *q, *k, *v, *p, *gate, *up; } bparts;

static bparts bonly_of(const sc_model *md, int mb, float *b, int i)
{
    size_t R = (size_t)sc_model_rows(md, mb), seq = (size_t)sc_model_seq(md, mb);
    size_t kn = (size_t)sc_mslice_span(md, mb);
    bparts t;
    t.q = b + (size_t)i * bonly_layer(md, mb);
    t.k = t.q + R * (size_t)md->qd;
    t.v = t.k + R * (size_t)md->kd;
    t.p = t.v + R * (size_t)md->kd;
    t.gate = t.p + (size_t)md->c.batch * (size_t)md->H * seq * kn;
    t.up = t.gate + R * (size_t)md->I;
    return t;
}

/* Parameter j of layer l (model_impl.h's order: g1 Wq Wk Wv Wo g2 Wg Wu Wd). */
#define PW(l, j) SC_MW(md, l, j)
#define PG(l, j) SC_MG(md, l, j)

static sc_status layer_fwd(sc_mdev *dv, int l, int mb, float **T, bparts b, float *next)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, qd = md->qd, kd = md->kd, I = md->I;
    int seq = sc_model_seq(md, mb);
    o->rmsnorm_fwd(bc, R, h, T[P_X], PW(l, 0), md->eps, T[P_XN1], T[P_RSTD1]);
    o->gemm(bc, 0, 0, R, qd, h, 1.0f, T[P_XN1], PW(l, 1), 0.0f, b.q);
    o->gemm(bc, 0, 0, R, kd, h, 1.0f, T[P_XN1], PW(l, 2), 0.0f, b.k);
    o->gemm(bc, 0, 0, R, kd, h, 1.0f, T[P_XN1], PW(l, 3), 0.0f, b.v);
    if (md->slices > 1) { /* over the earlier slices' keys and values too */
        if (sc_mslice_attn_fwd(dv, l, mb, T, b.q, b.k, b.v, b.p) != SC_OK)
            return SC_ERR_NOMEM;
    } else {
        o->rope(bc, R, seq, 0, md->H, md->D, md->theta, 1, b.q);
        o->rope(bc, R, seq, 0, md->KV, md->D, md->theta, 1, b.k);
        o->attn_fwd(bc, (int)md->c.batch, seq, 0, md->H, md->KV, md->D, b.q, b.k, b.v, b.p,
                    T[P_O]);
    }
    o->copy(bc, (size_t)R * h, T[P_X], T[P_Y]);
    o->gemm(bc, 0, 0, R, h, qd, 1.0f, T[P_O], PW(l, 4), 1.0f, T[P_Y]);
    o->rmsnorm_fwd(bc, R, h, T[P_Y], PW(l, 5), md->eps, T[P_XN2], T[P_RSTD2]);
    if (md->E) {
        o->copy(bc, (size_t)R * h, T[P_Y], next);
        sc_moe_forward(dv, l, mb, T, b.gate, next);
        return SC_OK;
    }
    o->gemm(bc, 0, 0, R, I, h, 1.0f, T[P_XN2], PW(l, 6), 0.0f, b.gate);
    o->gemm(bc, 0, 0, R, I, h, 1.0f, T[P_XN2], PW(l, 7), 0.0f, b.up);
    o->swiglu_fwd(bc, (size_t)R * I, b.gate, b.up, T[P_A]);
    o->copy(bc, (size_t)R * h, T[P_Y], next);
    o->gemm(bc, 0, 0, R, h, I, 1.0f, T[P_A], PW(l, 8), 1.0f, next);
    return SC_OK;
}

sc_status sc_mdec_forward(sc_mdev *dv, int s, int mb, void *out, float **T, void *b_only)
{
    const sc_model *md = dv->md;
    int n = md->count[s], last = SC_MLAST(md, s);
    for (int i = 0; i < n; i++) {
        float *next = i + 1 < n || last ? T[md->lp * (i + 1)] : out;
        sc_status st = layer_fwd(dv, md->first[s] + i, mb, T + md->lp * i,
                                 bonly_of(md, mb, b_only, i), next);
        if (st != SC_OK)
            return st;
    }
    if (dv->ep_failed) /* an all-to-all of expert parallelism (dv->err) */
        return SC_ERR_RUNTIME;
    if (last) { /* the final norm and the logits, into the head's parts */
        const struct sc_backend_ops *o = dv->be->ops;
        float **Hd = T + md->lp * n;
        int c = SC_MCOPY(md, s), R = sc_model_rows(md, mb);
        o->rmsnorm_fwd(dv->be->ctx, R, md->h, Hd[H_X], md->Wn[c], md->eps, Hd[H_XF],
                       Hd[H_RSTD]);
        o->gemm(dv->be->ctx, 0, 0, R, md->V, md->h, 1.0f, Hd[H_XF], md->Wout[c], 0.0f,
                Hd[H_DL]);
    }
    return SC_OK;
}

/* Layer l's input gradient into dst (NULL: not needed), from its top
 * gradient T[P_DTOP]; writes what W reads into T. dout: R x qd scratch. */
static void layer_bwd(sc_mdev *dv, int l, int mb, float **T, bparts b, float *dout,
                      float *dst)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, qd = md->qd, kd = md->kd, I = md->I;
    int seq = sc_model_seq(md, mb);
    size_t Rh = (size_t)R * h;
    if (md->E) {
        sc_moe_backward(dv, l, mb, T, b.gate);
    } else {
        o->gemm(bc, 0, 1, R, I, h, 1.0f, T[P_DTOP], PW(l, 8), 0.0f, T[P_DUP]); /* da */
        o->swiglu_bwd(bc, (size_t)R * I, b.gate, b.up, T[P_DUP], T[P_DGATE]);
        o->gemm(bc, 0, 1, R, h, I, 1.0f, T[P_DGATE], PW(l, 6), 0.0f, T[P_DXN2]);
        o->gemm(bc, 0, 1, R, h, I, 1.0f, T[P_DUP], PW(l, 7), 1.0f, T[P_DXN2]);
    }
    o->copy(bc, Rh, T[P_DTOP], T[P_DY]);
    o->rmsnorm_bwd(bc, R, h, T[P_Y], PW(l, 5), T[P_RSTD2], T[P_DXN2], 1.0f, T[P_DY]);
    o->gemm(bc, 0, 1, R, qd, h, 1.0f, T[P_DY], PW(l, 4), 0.0f, dout);
    if (md->slices > 1) { /* adding into the earlier slices' records (model_slices.c) */
        sc_mslice_attn_bwd(dv, l, mb, T, b.q, b.p, dout);
    } else {
        o->attn_bwd(bc, (int)md->c.batch, seq, 0, md->H, md->KV, md->D, b.q, b.k, b.v, b.p,
                    dout, T[P_DQ], T[P_DK], T[P_DV]);
        o->rope(bc, R, seq, 0, md->H, md->D, md->theta, -1, T[P_DQ]);
        o->rope(bc, R, seq, 0, md->KV, md->D, md->theta, -1, T[P_DK]);
    }
    o->gemm(bc, 0, 1, R, h, qd, 1.0f, T[P_DQ], PW(l, 1), 0.0f, T[P_DXN1]);
    o->gemm(bc, 0, 1, R, h, kd, 1.0f, T[P_DK], PW(l, 2), 1.0f, T[P_DXN1]);
    o->gemm(bc, 0, 1, R, h, kd, 1.0f, T[P_DV], PW(l, 3), 1.0f, T[P_DXN1]);
    if (!dst)
        return;
    o->copy(bc, Rh, T[P_DY], dst);
    o->rmsnorm_bwd(bc, R, h, T[P_X], PW(l, 0), T[P_RSTD1], T[P_DXN1], 1.0f, dst);
}

sc_status sc_mdec_backward_input(sc_mdev *dv, int s, int mb, const void *gin, void *gout,
                                 float **T, void *b_only)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int n = md->count[s], R = sc_model_rows(md, mb);
    float *dtop = T[md->lp * (n - 1) + P_DTOP];
    if (SC_MLAST(md, s)) { /* through the logits and the final norm */
        float **Hd = T + md->lp * n;
        int c = SC_MCOPY(md, s);
        o->gemm(bc, 0, 1, R, md->h, md->V, 1.0f, Hd[H_DL], md->Wout[c], 0.0f, Hd[H_DXF]);
        o->rmsnorm_bwd(bc, R, md->h, Hd[H_X], md->Wn[c], Hd[H_RSTD], Hd[H_DXF], 0.0f, dtop);
    } else {
        o->copy(bc, (size_t)R * md->h, gin, dtop);
    }
    if (s == 0) /* the embedding's W reads it (sc_mdec_backward_weight) */
        gout = T[sc_mdec_record_parts(md, s, mb, NULL, 0) - 1];
    float *dout = (float *)b_only + bonly_layer(md, mb) * (size_t)n;
    if (sc_mslice_ready(dv) != SC_OK) /* a lane's B may be its first slice */
        return SC_ERR_NOMEM;
    for (int i = n - 1; i >= 0; i--) {
        float *dst = i > 0 ? T[md->lp * (i - 1) + P_DTOP] : gout;
        layer_bwd(dv, md->first[s] + i, mb, T + md->lp * i, bonly_of(md, mb, b_only, i), dout,
                  dst);
    }
    return dv->ep_failed ? SC_ERR_RUNTIME : SC_OK; /* ep: dv->err */
}

sc_status sc_mdec_backward_weight(sc_mdev *dv, int s, int mb, float **T)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, qd = md->qd, kd = md->kd, I = md->I;
    int n = md->count[s];
    for (int i = 0; i < n; i++) {
        int l = md->first[s] + i;
        float **L = T + md->lp * i;
        o->rmsnorm_wgrad(bc, R, h, L[P_X], L[P_RSTD1], L[P_DXN1], PG(l, 0));
        o->gemm(bc, 1, 0, h, qd, R, 1.0f, L[P_XN1], L[P_DQ], 1.0f, PG(l, 1));
        o->gemm(bc, 1, 0, h, kd, R, 1.0f, L[P_XN1], L[P_DK], 1.0f, PG(l, 2));
        o->gemm(bc, 1, 0, h, kd, R, 1.0f, L[P_XN1], L[P_DV], 1.0f, PG(l, 3));
        o->gemm(bc, 1, 0, qd, h, R, 1.0f, L[P_O], L[P_DY], 1.0f, PG(l, 4));
        o->rmsnorm_wgrad(bc, R, h, L[P_Y], L[P_RSTD2], L[P_DXN2], PG(l, 5));
        if (md->E) {
            sc_moe_weight(dv, l, mb, L);
            continue;
        }
        o->gemm(bc, 1, 0, h, I, R, 1.0f, L[P_XN2], L[P_DGATE], 1.0f, PG(l, 6));
        o->gemm(bc, 1, 0, h, I, R, 1.0f, L[P_XN2], L[P_DUP], 1.0f, PG(l, 7));
        o->gemm(bc, 1, 0, I, h, R, 1.0f, L[P_A], L[P_DTOP], 1.0f, PG(l, 8));
    }
    if (SC_MLAST(md, s)) {
        float **Hd = T + md->lp * n;
        int c = SC_MCOPY(md, s);
        o->gemm(bc, 1, 0, h, md->V, R, 1.0f, Hd[H_XF], Hd[H_DL], 1.0f, md->Gout[c]);
        o->rmsnorm_wgrad(bc, R, h, Hd[H_X], Hd[H_RSTD], Hd[H_DXF], md->Gn[c]);
    }
    if (s == 0 && dv->mv) { /* Gemb[token] += dx0, row by row in order (x -= -1 g) */
        int first, rows;
        float *gemb = (float *)sc_mvocab_emb(dv->mv, 0, &first, &rows);
        const float *dx0 = T[sc_mdec_record_parts(md, s, mb, NULL, 0) - 1];
        sc_mvocab_cfg vc = {.R = R, .V = md->V, .m = md->m, .seed = md->c.seed, .rows = md->lens,
                            .batch = (int)md->c.batch, .slices = md->slices,
                            .seq = (int)md->c.seq, .share = md->ep_rank};
        for (int r = 0; r < R; r++)
            o->sgd(bc, (size_t)h, -1.0f, dx0 + (size_t)r * h,
                   gemb + (size_t)sc_mvocab_token(&vc, mb, r) * h);
    }
    return SC_OK;
}

/* ---- parameters ---- */

void sc_mdec_sizes(sc_model *md)
{
    md->H = (int)md->c.heads;
    md->KV = (int)md->c.kv_heads;
    md->D = (int)md->c.head_dim;
    md->I = (int)md->c.inter;
    md->qd = md->H * md->D;
    md->kd = md->KV * md->D;
    md->theta = (float)md->c.rope_theta;
    md->eps = (float)md->c.norm_eps;
    size_t h = (size_t)md->h, qd = (size_t)md->qd, kd = (size_t)md->kd, I = (size_t)md->I;
    const size_t sz[SC_MDEC_NP] = {h, h * qd, h * kd, h * kd, qd * h, h, h * I, h * I, I * h};
    md->np = SC_MDEC_NP;
    md->lp = P_LAYER;
    for (int j = 0; j < SC_MDEC_NP; j++)
        md->psz[j] = sz[j];
    if (md->c.experts > 0)
        sc_moe_sizes(md); /* np, lp, psz[6 ..] */
}

void sc_mdec_init(sc_mdev *dv, int l, int ll)
{
    sc_model *md = dv->md;
    float sh = sqrtf(3.0f / (float)md->h), sq = sqrtf(3.0f / (float)md->qd) /
                                                  sqrtf((float)md->L),
          si = sqrtf(3.0f / (float)md->I) / sqrtf((float)md->L);
    /* scale of each parameter: norms 1, inputs sqrt(3 / fan_in), output
     * projections also / sqrt(L) (as the MLP's W2) */
    const float scale[SC_MDEC_NP] = {1, sh, sh, sh, sq, 1, sh, sh, si};
    for (int j = 0; j < (md->E ? 6 : SC_MDEC_NP); j++) {
        if (j == 0 || j == 5)
            sc_model_fill_const(dv, PW(l, j), md->psz[j], 1.0f);
        else
            sc_model_fill(dv, PW(l, j), md->psz[j], T_DEC + j, ll, scale[j]);
    }
    if (md->E)
        sc_moe_init(dv, l, ll);
}

int sc_mdec_usable(const sc_backend *be)
{
    const struct sc_backend_ops *o = be->ops;
    return o->rmsnorm_fwd && o->rmsnorm_bwd && o->rmsnorm_wgrad && o->rope && o->attn_fwd &&
           o->attn_bwd && o->swiglu_fwd && o->swiglu_bwd;
}
