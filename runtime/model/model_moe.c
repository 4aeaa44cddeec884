/*
 * model_moe.c — the mixture of experts of the decoder layer (model_impl.h,
 * docs/run.md#mixture-of-experts): what replaces the SwiGLU MLP when the
 * config has experts (Mixtral's num_local_experts, num_experts_per_tok;
 * DeepSeek's n_shared_experts).
 *
 * Layer (xn2: the R normed rows; E experts, k per token):
 *   route   prob = softmax(xn2 Wr), each row's k largest (ties: the lower
 *           expert), their weights renormalised to sum 1 (Hugging Face
 *           Mixtral's rule), and where each routed copy goes;
 *   dispatch  xg = the R k copies gathered by expert (backend moe_gather);
 *   experts   per expert e on its rows: yg = swiglu(xg Wg_e, xg Wu_e) Wd_e;
 *   combine   next += sum over the k copies of weight yg (moe_combine);
 *   shared    next += swiglu(xn2 Wgs, xn2 Wus) Wds (n_shared_experts of
 *           width moe_inter as one of their total width: the same sums).
 * No capacity: every token reaches its k experts, none is dropped. The
 * dispatch and the combine are the seams where expert parallelism cuts
 * the layer (the rows each expert receives, gathered; their outputs
 * scattered back).
 *
 * Zero-Bubble split as the dense layer's: B writes the input gradient at
 * xn2 through the combine's weights, the experts and the router's softmax,
 * and leaves for W the gradients at every product's output (dyg, dgate,
 * dup of the experts' rows, dlogits, the shared experts' dgate, dup); W
 * computes Wr's, every expert's and the shared experts' gradients.
 * Kept for W: xg, the experts' a, and those gradients; B alone reads the
 * router's state (prob, sel, wt, pos), the experts' gate, up and output,
 * and the shared experts' gate and up: the b_only part.
 *
 * Parameters of an MoE layer (model_impl.h's j): 0..5 as the dense layer
 * (g1 Wq Wk Wv Wo g2), 6 Wr (h x E), 7 Wg (E x h x Ie), 8 Wu (E x h x Ie),
 * 9 Wd (E x Ie x h), and with shared experts 10 Wgs, 11 Wus (h x Is),
 * 12 Wds (Is x h): expert e's slice of 7..9 is contiguous (an expert-
 * parallel shard is a range).
 */
#include "model_impl.h"

#include <stdio.h>
#include <string.h>

#define PW(l, j) SC_MW(md, l, j)
#define PG(l, j) SC_MG(md, l, j)

/* The kept parts after P_DTOP. */
enum { M_XG, M_DYG, M_DLOG, M_AS, M_DGS, M_DUS, M_PARTS };

int sc_moe_parts(const sc_model *md, size_t *width)
{
    size_t kh = (size_t)SC_MEP(md) * (size_t)md->K * (size_t)md->h, Is = (size_t)md->Is;
    size_t w[M_PARTS] = {kh, kh, (size_t)md->E, Is, Is, Is};
    int n = md->Is ? M_PARTS : M_AS;
    for (int i = 0; width && i < n; i++)
        width[i] = w[i];
    return n;
}

sc_status sc_moe_check(const sc_model_cfg *c, long dim_max, long elems_max, char *err,
                       size_t errlen)
{
    long Ie = c->moe_inter > 0 ? c->moe_inter : c->inter, R = c->seq * c->batch;
    if (c->experts < 1 || c->experts > 4096 || c->experts_per_tok < 1 ||
        c->experts_per_tok > c->experts || c->moe_inter < 0 || c->moe_inter > dim_max ||
        c->shared_inter < 0 || c->shared_inter > dim_max) {
        snprintf(err, errlen, "mixture of experts: experts = %ld (1..4096), experts_per_tok = "
                 "%ld (1..experts), moe_inter = %ld and shared_inter = %ld (0..%ld)",
                 c->experts, c->experts_per_tok, c->moe_inter, c->shared_inter, dim_max);
        return SC_ERR_ARG;
    }
    long wide = Ie > c->hidden ? Ie : c->hidden, rk = R * c->experts_per_tok;
    if (rk > elems_max / wide || c->experts * c->hidden > elems_max / Ie ||
        R * c->shared_inter > elems_max || c->hidden * c->shared_inter > elems_max) {
        snprintf(err, errlen, "mixture of experts too large: a tensor of more than %ld floats "
                 "(the seq*batch*experts_per_tok routed rows, or experts*hidden*moe_inter)",
                 elems_max);
        return SC_ERR_LIMIT;
    }
    return SC_OK;
}

void sc_moe_sizes(sc_model *md)
{
    md->E = (int)md->c.experts;
    md->K = (int)md->c.experts_per_tok;
    md->Ie = (int)(md->c.moe_inter > 0 ? md->c.moe_inter : md->c.inter);
    md->Is = (int)md->c.shared_inter;
    size_t h = (size_t)md->h, E = (size_t)md->E, Ie = (size_t)md->Ie, Is = (size_t)md->Is;
    md->psz[6] = h * E;
    md->psz[7] = md->psz[8] = md->psz[9] = E / (size_t)SC_MEP(md) * h * Ie; /* its shard */
    md->psz[10] = md->psz[11] = md->psz[12] = h * Is;
    md->np = md->Is ? 13 : 10;
    md->lp = P_LAYER + sc_moe_parts(md, NULL);
}

void sc_moe_init(sc_mdev *dv, int l, int ll)
{
    sc_model *md = dv->md;
    float sh = sqrtf(3.0f / (float)md->h), sL = sqrtf((float)md->L);
    float se = sqrtf(3.0f / (float)md->Ie) / sL, ss = md->Is ? sqrtf(3.0f / (float)md->Is) / sL : 0;
    /* as the dense layer's: inputs sqrt(3 / fan_in), outputs also / sqrt(L) */
    const float scale[SC_MODEL_MAXP] = {[6] = sh, sh, sh, se, sh, sh, ss};
    for (int j = 6; j < md->np; j++) /* the routed experts: this rank's shard (ep > 1) */
        if (j >= 7 && j <= 9)
            sc_moe_ep_init(dv, PW(l, j), md->psz[j], T_DEC + j, ll, scale[j]);
        else
            sc_model_fill(dv, PW(l, j), md->psz[j], T_DEC + j, ll, scale[j]);
}

int sc_moe_usable(const sc_backend *be)
{
    const struct sc_backend_ops *o = be->ops;
    return o->moe_route && o->moe_route_bwd && o->moe_gather && o->moe_combine &&
           o->moe_combine_bwd;
}

/* The layer's b_only past the attention's: the experts' gate and up
 * (R k rows of Ie), the router's prob (R x E), sel, wt, pos (R x k), the
 * experts' outputs yg (R k rows of h; in B then their input gradient), the
 * routing weights' gradient dwt (R x k), the shared experts' gate and up. */
typedef struct {
    float *gate, *up, *prob, *wt, *yg, *dwt, *gs, *us, *ye, *sb;
    int32_t *sel, *pos;
} moe_b;

/* With ep > 1 (model_moe_ep.c) the experts' gate and up hold the G = ep R k
 * rows a rank may receive, and two scratch tensors of G rows of h follow:
 * the experts' outputs (input gradients) and the rows as they came. */
/* moe_b's tensors as offsets in floats from the buffer's start, in order
 * (end: the layer's b_only floats, sc_moe_bonly_floats). */
enum { B_GATE, B_UP, B_PROB, B_SEL, B_WT, B_POS, B_DWT, B_YG, B_GS, B_US, B_YE, B_SB, B_END };

static void bonly_offsets(const sc_model *md, int mb, size_t *off)
{
    size_t R = (size_t)sc_model_rows(md, mb), Rk = R * (size_t)md->K;
    size_t G = (size_t)SC_MEP(md) * Rk, Gh = md->ep > 1 ? G * (size_t)md->h : 0;
    const size_t n[B_END] = {G * (size_t)md->Ie, G * (size_t)md->Ie, R * (size_t)md->E, Rk, Rk,
                             Rk, Rk, Rk * (size_t)md->h, R * (size_t)md->Is,
                             R * (size_t)md->Is, Gh, Gh};
    off[0] = 0;
    for (int i = 0; i < B_END; i++)
        off[i + 1] = off[i] + n[i];
}

size_t sc_moe_bonly_floats(const sc_model *md, int mb)
{
    size_t off[B_END + 1];
    bonly_offsets(md, mb, off);
    return off[B_END];
}

static moe_b bonly(const sc_model *md, int mb, float *b)
{
    size_t o[B_END + 1];
    bonly_offsets(md, mb, o);
    return (moe_b){.gate = b + o[B_GATE], .up = b + o[B_UP], .prob = b + o[B_PROB],
                   .sel = (int32_t *)(b + o[B_SEL]), .wt = b + o[B_WT],
                   .pos = (int32_t *)(b + o[B_POS]), .dwt = b + o[B_DWT], .yg = b + o[B_YG],
                   .gs = b + o[B_GS], .us = b + o[B_US], .ye = b + o[B_YE], .sb = b + o[B_SB]};
}

int sc_moe_act_tensors(const sc_model *md, sc_mact *t)
{
    size_t o[B_END + 1], kept[M_PARTS], R = (size_t)sc_model_rows(md, 0);
    bonly_offsets(md, 0, o);
    sc_moe_parts(md, kept);
#define W(i) (int64_t)((o[(i) + 1] - o[i]) / R) /* b_only tensor i's floats a row */
    int64_t h = md->h, a = (int64_t)SC_MEP(md) * md->K * md->Ie; /* P_A's width */
    const sc_mact all[SC_MACT_MOE_MAX] = {
        {"y", h, 4}, {"xn2", h, 4}, {"prob", W(B_PROB), 4}, {"sel", W(B_SEL), 4},
        {"wt", W(B_WT), 4}, {"pos", W(B_POS), 4}, {"xg", (int64_t)kept[M_XG], 4},
        {"gate", W(B_GATE), 4}, {"up", W(B_UP), 4}, {"a", a, 4}, {"yg", W(B_YG), 4},
        {"gs", W(B_GS), 4}, {"us", W(B_US), 4},
        {"as", md->Is ? (int64_t)kept[M_AS] : 0, 4},
    };
#undef W
    int n = md->Is ? SC_MACT_MOE_MAX : SC_MACT_MOE_MAX - 3;
    memcpy(t, all, (size_t)n * sizeof *t);
    return n;
}

/* The rows each expert received in microbatch mb's layer l (host). */
static int *counts(sc_mdev *dv, int l, int mb)
{
    const sc_model *md = dv->md;
    return dv->moe_count + ((size_t)mb * (size_t)(md->C * md->L) + (size_t)l) * (size_t)md->E;
}

/* ep > 1: the rows this rank's experts got from each rank ([ep][E / ep]). */
static int *counts_in(sc_mdev *dv, int l, int mb)
{
    const sc_model *md = dv->md;
    return counts(dv, l, mb) + (size_t)md->M * (size_t)(md->C * md->L) * (size_t)md->E;
}

static sc_moe_rows ep_rows(sc_mdev *dv, int l, int mb, moe_b b)
{
    return (sc_moe_rows){.xl = b.yg, .ye = b.ye, .sb = b.sb, .gate = b.gate, .up = b.up,
                         .cnt = counts(dv, l, mb), .cin = counts_in(dv, l, mb)};
}

sc_status sc_moe_forward(sc_mdev *dv, int l, int mb, float **L, float *bo, float *next)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, E = md->E, K = md->K, Is = md->Is;
    moe_b b = bonly(md, mb, bo);
    int *cnt = counts(dv, l, mb);
    o->gemm(bc, 0, 0, R, E, h, 1.0f, L[P_XN2], PW(l, 6), 0.0f, b.prob);
    o->moe_route(bc, R, E, K, b.prob, b.sel, b.wt, b.pos, cnt);
    if (md->ep > 1) { /* the copies to their experts' ranks and back */
        o->moe_gather(bc, R, K, h, b.pos, L[P_XN2], b.yg);
        sc_moe_rows r = ep_rows(dv, l, mb, b);
        sc_status st = sc_moe_ep_forward(dv, l, mb, L, &r);
        if (st)
            return st;
    } else {
        o->moe_gather(bc, R, K, h, b.pos, L[P_XN2], L[P_LAYER + M_XG]); /* dispatch */
        sc_moe_set x = {.ne = E, .n = cnt, .gate = b.gate, .up = b.up, .y = b.yg};
        sc_moe_experts(dv, l, SC_OP_F, L, &x);
    }
    o->moe_combine(bc, R, K, h, b.pos, b.wt, b.yg, 1.0f, next); /* combine */
    if (!Is)
        return SC_OK;
    o->gemm(bc, 0, 0, R, Is, h, 1.0f, L[P_XN2], PW(l, 10), 0.0f, b.gs);
    o->gemm(bc, 0, 0, R, Is, h, 1.0f, L[P_XN2], PW(l, 11), 0.0f, b.us);
    o->swiglu_fwd(bc, (size_t)R * Is, b.gs, b.us, L[P_LAYER + M_AS]);
    o->gemm(bc, 0, 0, R, h, Is, 1.0f, L[P_LAYER + M_AS], PW(l, 12), 1.0f, next);
    return SC_OK;
}

sc_status sc_moe_backward(sc_mdev *dv, int l, int mb, float **L, float *bo)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, E = md->E, K = md->K, Is = md->Is;
    moe_b b = bonly(md, mb, bo);
    const int *cnt = counts(dv, l, mb);
    float **X = L + P_LAYER;
    /* combine's backward, the experts', dispatch's (the copies summed) */
    if (md->ep > 1) { /* the copies' gradients to the experts' ranks and back */
        o->moe_combine_bwd(bc, R, K, h, b.pos, b.wt, b.yg, L[P_DTOP], b.ye, b.dwt);
        o->copy(bc, (size_t)R * K * h, b.ye, b.yg);
        sc_moe_rows r = ep_rows(dv, l, mb, b);
        sc_status st = sc_moe_ep_backward(dv, l, mb, L, &r);
        if (st)
            return st;
    } else {
        o->moe_combine_bwd(bc, R, K, h, b.pos, b.wt, b.yg, L[P_DTOP], X[M_DYG], b.dwt);
        sc_moe_set x = {.ne = E, .n = cnt, .gate = b.gate, .up = b.up, .y = b.yg};
        sc_moe_experts(dv, l, SC_OP_B, L, &x); /* dxg over yg: read by nothing after dwt */
    }
    o->moe_combine(bc, R, K, h, b.pos, NULL, b.yg, 0.0f, L[P_DXN2]);
    o->moe_route_bwd(bc, R, E, K, b.prob, b.sel, b.wt, b.dwt, X[M_DLOG]);
    o->gemm(bc, 0, 1, R, h, E, 1.0f, X[M_DLOG], PW(l, 6), 1.0f, L[P_DXN2]);
    if (!Is)
        return SC_OK;
    o->gemm(bc, 0, 1, R, Is, h, 1.0f, L[P_DTOP], PW(l, 12), 0.0f, X[M_DUS]);
    o->swiglu_bwd(bc, (size_t)R * Is, b.gs, b.us, X[M_DUS], X[M_DGS]);
    o->gemm(bc, 0, 1, R, h, Is, 1.0f, X[M_DGS], PW(l, 10), 1.0f, L[P_DXN2]);
    o->gemm(bc, 0, 1, R, h, Is, 1.0f, X[M_DUS], PW(l, 11), 1.0f, L[P_DXN2]);
    return SC_OK;
}

void sc_moe_weight(sc_mdev *dv, int l, int mb, float **L)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int R = sc_model_rows(md, mb), h = md->h, E = md->E, Is = md->Is;
    float **X = L + P_LAYER;
    o->gemm(bc, 1, 0, h, E, R, 1.0f, L[P_XN2], X[M_DLOG], 1.0f, PG(l, 6));
    if (md->ep > 1) {
        sc_moe_ep_weight(dv, l, L, counts_in(dv, l, mb));
    } else {
        sc_moe_set x = {.ne = E, .n = counts(dv, l, mb)}; /* W reads only L */
        sc_moe_experts(dv, l, SC_OP_W, L, &x);
    }
    if (!Is)
        return;
    o->gemm(bc, 1, 0, h, Is, R, 1.0f, L[P_XN2], X[M_DGS], 1.0f, PG(l, 10));
    o->gemm(bc, 1, 0, h, Is, R, 1.0f, L[P_XN2], X[M_DUS], 1.0f, PG(l, 11));
    o->gemm(bc, 1, 0, Is, h, R, 1.0f, X[M_AS], L[P_DTOP], 1.0f, PG(l, 12));
}
