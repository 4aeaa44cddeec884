/*
 * model_moe_experts.c — the routed experts' products over a row set
 * (model_impl.h's sc_moe_experts): the one loop of model_moe.c (ep = 1:
 * all E experts on the layer's gathered rows) and model_moe_ep.c (ep > 1:
 * a rank's E / ep experts on the rows that came). Per expert e of its n[e]
 * rows, expert-major:
 *   F  gate = xg Wg_e, up = xg Wu_e, a = swiglu(gate, up), y = a Wd_e;
 *   B  dup = dyg Wd_e^T (da, then du), dgate, y = dgate Wg_e^T + dup Wu_e^T;
 *   W  Wg_e += xg^T dgate, Wu_e += xg^T dup, Wd_e += a^T dyg.
 * xg, dyg are model_moe.c's kept M_XG, M_DYG (the first two parts after
 * P_DTOP's: L[P_LAYER], L[P_LAYER + 1]).
 */
#include "model_impl.h"

#define PW(l, j) SC_MW(md, l, j)
#define PG(l, j) SC_MG(md, l, j)

void sc_moe_experts(sc_mdev *dv, int l, int op, float **L, const sc_moe_set *x)
{
    const sc_model *md = dv->md;
    const struct sc_backend_ops *o = dv->be->ops;
    void *bc = dv->be->ctx;
    int h = md->h, Ie = md->Ie;
    const float *xg = L[P_LAYER], *dyg = L[P_LAYER + 1]; /* M_XG, M_DYG */
    size_t w = (size_t)h * (size_t)Ie, off = 0;
    for (int e = 0; e < x->ne; off += (size_t)x->n[e++]) {
        int n = x->n[e];
        if (!n)
            continue;
        float *a = L[P_A] + off * Ie, *dup = L[P_DUP] + off * Ie, *dgate = L[P_DGATE] + off * Ie;
        const float *Wg = PW(l, 7) + e * w, *Wu = PW(l, 8) + e * w, *Wd = PW(l, 9) + e * w;
        int fb = op != SC_OP_W; /* W reads L only */
        float *gate = fb ? x->gate + off * Ie : NULL, *up = fb ? x->up + off * Ie : NULL;
        float *y = fb ? x->y + off * h : NULL;
        if (op == SC_OP_F) { /* y = swiglu(xg Wg_e, xg Wu_e) Wd_e */
            o->gemm(bc, 0, 0, n, Ie, h, 1.0f, xg + off * h, Wg, 0.0f, gate);
            o->gemm(bc, 0, 0, n, Ie, h, 1.0f, xg + off * h, Wu, 0.0f, up);
            o->swiglu_fwd(bc, (size_t)n * Ie, gate, up, a);
            o->gemm(bc, 0, 0, n, h, Ie, 1.0f, a, Wd, 0.0f, y);
        } else if (op == SC_OP_B) { /* dup (da, then du), dgate; y = dxg */
            o->gemm(bc, 0, 1, n, Ie, h, 1.0f, dyg + off * h, Wd, 0.0f, dup);
            o->swiglu_bwd(bc, (size_t)n * Ie, gate, up, dup, dgate);
            o->gemm(bc, 0, 1, n, h, Ie, 1.0f, dgate, Wg, 0.0f, y);
            o->gemm(bc, 0, 1, n, h, Ie, 1.0f, dup, Wu, 1.0f, y);
        } else { /* W: the experts' gradients */
            o->gemm(bc, 1, 0, h, Ie, n, 1.0f, xg + off * h, dgate, 1.0f, PG(l, 7) + e * w);
            o->gemm(bc, 1, 0, h, Ie, n, 1.0f, xg + off * h, dup, 1.0f, PG(l, 8) + e * w);
            o->gemm(bc, 1, 0, Ie, h, n, 1.0f, a, dyg + off * h, 1.0f, PG(l, 9) + e * w);
        }
    }
}
