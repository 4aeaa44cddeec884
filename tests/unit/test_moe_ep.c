/*
 * test_moe_ep.c — the MoE layer over an EP group (runtime/model/
 * model_moe_ep.c, docs/semantics.md#expert-parallelism): one layer's
 * forward, input gradient and weight gradients on ep ranks (threads on the
 * local transport), each holding E / ep experts and a share of the batch's
 * sequences, against the same layer on one device over the whole batch:
 * the outputs and input gradients of each rank's rows, the router's
 * gradient summed over the ranks, each expert's gradients on the rank
 * holding it. ep = 2 and 4 of 4 experts, top 2; an ep that does not divide
 * the experts, or a backend without host memory, refused in one line.
 */
#include "harness.h"
#include "model/model_impl.h"
#include "model_stage.h"
#include "transport/transport.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { H = 16, E = 4, K = 2, IE = 12, SEQ = 3, BATCH = 4, R = SEQ * BATCH, MAXEP = 4 };

/* One layer on one device (rank of ep; ep 1: the reference) and its
 * tensors. */
typedef struct lay {
    sc_model md;
    sc_mdev dv;
    float *W[10], *G[10];
    float *parts[P_LAYER + 3], *bo, *next;
    int rows, cnt[2 * E];
    sc_status st;
} lay;

static float val(unsigned i, unsigned t)
{
    unsigned x = i * 2654435761u ^ (t + 1) * 40503u;
    x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
    return (float)((x % 2001u) / 1000.0 - 1.0);
}

static size_t width(const sc_model *md, int i)
{
    size_t w[8];
    if (i >= P_LAYER) {
        sc_moe_parts(md, w);
        return w[i - P_LAYER];
    }
    if (i == P_A || i == P_DGATE || i == P_DUP)
        return (size_t)SC_MEP(md) * K * IE;
    return H;
}

/* Layer of rank q of ep over rows q R/ep ..: the router whole, experts
 * q E/ep .. of the reference's, the inputs xn2 and the top gradient. */
static void lay_init(lay *t, int ep, int q, sc_backend *be)
{
    memset(t, 0, sizeof *t);
    sc_model *md = &t->md;
    md->c.seq = SEQ, md->c.batch = BATCH / ep;
    md->E = E, md->K = K, md->h = H, md->Ie = IE, md->C = md->L = md->M = 1, md->np = 10;
    md->ep = ep, md->ep_rank = q;
    md->psz[6] = H * E;
    md->psz[7] = md->psz[8] = md->psz[9] = (size_t)(E / ep) * H * IE;
    md->Wl = t->W, md->Gl = t->G;
    t->rows = R / ep;
    for (int j = 6; j < 10; j++) {
        t->W[j] = malloc(md->psz[j] * sizeof(float));
        t->G[j] = calloc(md->psz[j], sizeof(float));
        size_t off = j == 6 ? 0 : (size_t)q * md->psz[j];
        for (size_t i = 0; i < md->psz[j]; i++)
            t->W[j][i] = 0.3f * val((unsigned)(off + i), (unsigned)j);
    }
    for (int i = 0; i < P_LAYER + 3; i++)
        t->parts[i] = calloc((size_t)t->rows * width(md, i), sizeof(float));
    size_t r0 = (size_t)q * (size_t)t->rows;
    for (size_t i = 0; i < (size_t)t->rows * H; i++) {
        t->parts[P_XN2][i] = val((unsigned)(r0 * H + i), 20);
        t->parts[P_DTOP][i] = val((unsigned)(r0 * H + i), 21);
    }
    t->bo = calloc(sc_moe_bonly_floats(md, 0), sizeof(float));
    t->next = calloc((size_t)t->rows * H, sizeof(float));
    sc_mdev *dv = &t->dv;
    dv->md = md, dv->be = be, dv->moe_count = t->cnt, dv->ep_dev = q;
}

static void lay_free(lay *t)
{
    for (int j = 6; j < 10; j++)
        free(t->W[j]), free(t->G[j]);
    for (int i = 0; i < P_LAYER + 3; i++)
        free(t->parts[i]);
    free(t->bo);
    free(t->next);
}

static void *run(void *arg)
{
    lay *t = arg;
    t->st = sc_moe_forward(&t->dv, 0, 0, t->parts, t->bo, t->next);
    if (!t->st)
        t->st = sc_moe_backward(&t->dv, 0, 0, t->parts, t->bo);
    if (!t->st)
        sc_moe_weight(&t->dv, 0, 0, t->parts);
    if (t->st)
        fprintf(stderr, "rank %d: %s\n", t->md.ep_rank, t->dv.err);
    return NULL;
}

static double rel(const float *a, const float *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0 ? d / m : d;
}

static void group(int ep)
{
    sc_backend *be = NULL;
    char err[256];
    CHECK(sc_backend_cpu_open(0, &be, err, sizeof err) == SC_OK);
    static lay ref, rk[MAXEP];
    lay_init(&ref, 1, 0, be);
    run(&ref);
    CHECK(ref.st == SC_OK);
    sc_transport *tp = NULL;
    CHECK(sc_transport_local_new(ep, 16, 20.0, &tp) == SC_OK);
    pthread_t th[MAXEP];
    for (int q = 0; q < ep; q++) {
        lay_init(&rk[q], ep, q, be);
        rk[q].dv.ep_tp = tp;
        CHECK(sc_moe_ep_check(&rk[q].md, be, err, sizeof err) == SC_OK);
    }
    for (int q = 0; q < ep; q++)
        pthread_create(&th[q], NULL, run, &rk[q]);
    for (int q = 0; q < ep; q++)
        pthread_join(th[q], NULL);
    float *dr = calloc(H * E, sizeof(float));
    for (int q = 0; q < ep; q++) {
        lay *t = &rk[q];
        CHECK(t->st == SC_OK);
        size_t rh = (size_t)t->rows * H, off = (size_t)q * rh;
        CHECK(rel(t->next, ref.next + off, rh) < 1e-5);
        CHECK(rel(t->parts[P_DXN2], ref.parts[P_DXN2] + off, rh) < 1e-5);
        for (int j = 7; j < 10; j++) {
            size_t n = t->md.psz[j];
            CHECK(rel(t->G[j], ref.G[j] + (size_t)q * n, n) < 1e-5);
        }
        for (int i = 0; i < H * E; i++)
            dr[i] += t->G[6][i];
        int sum = 0;
        for (int i = 0; i < E; i++)
            sum += t->cnt[E + i];
        CHECK(sum > 0); /* its experts got rows */
    }
    CHECK(rel(dr, ref.G[6], H * E) < 1e-5);
    free(dr);
    for (int q = 0; q < ep; q++)
        lay_free(&rk[q]);
    lay_free(&ref);
    sc_transport_local_free(tp);
    sc_backend_free(be);
}

/* The whole decoder (one stage, one microbatch) on ep ranks: rank q
 * trains sequences q batch / ep .. of the batch on its experts; the sum
 * of the ranks' losses and dense gradients is the reference's, and each
 * expert's gradients are the reference's on the rank holding it. */
typedef struct whole {
    mstage m;
    sc_status st;
} whole;

static void whole_new(whole *w, int ep, int q, sc_transport *tp)
{
    sc_model_cfg c = {.hidden = 16, .layers = 2, .vocab = 24, .seq = 6, .batch = 4, .seed = 5,
                      .kind = SC_MODEL_DECODER, .heads = 4, .kv_heads = 2, .head_dim = 4,
                      .inter = 12, .rope_theta = 10000, .norm_eps = 1e-5, .experts = 4,
                      .experts_per_tok = 2, .moe_inter = 12, .shared_inter = 8, .ep = ep,
                      .ep_rank = q, .opt = sc_optim_defaults()};
    w->st = SC_OK;
    mstage_open(&w->m, &c);
    if (w->m.parts)
        w->m.model->devs[0]->ep_tp = tp, w->m.model->devs[0]->ep_dev = q;
}

static void *whole_run(void *arg)
{
    whole *w = arg;
    const struct sc_workload_ops *o = w->m.wl.ops;
    void *ctx = w->m.wl.ctx;
    w->st = o->forward(ctx, 0, 0, NULL, NULL, w->m.parts, w->m.bonly);
    if (!w->st)
        w->st = o->backward_input(ctx, 0, 0, NULL, NULL, w->m.parts, w->m.bonly);
    if (!w->st)
        w->st = o->backward_weight(ctx, 0, 0, w->m.parts);
    if (w->st)
        fprintf(stderr, "%s\n", o->errmsg(ctx));
    return NULL;
}

static void model_group(int ep)
{
    static whole ref, rk[MAXEP];
    whole_new(&ref, 1, 0, NULL);
    whole_run(&ref);
    CHECK(ref.st == SC_OK);
    sc_transport *tp = NULL;
    CHECK(sc_transport_local_new(ep, 16, 20.0, &tp) == SC_OK);
    pthread_t th[MAXEP];
    for (int q = 0; q < ep; q++)
        whole_new(&rk[q], ep, q, tp);
    for (int q = 0; q < ep; q++)
        pthread_create(&th[q], NULL, whole_run, &rk[q]);
    for (int q = 0; q < ep; q++)
        pthread_join(th[q], NULL);
    double loss = 0;
    for (int q = 0; q < ep; q++) {
        CHECK(rk[q].st == SC_OK);
        CHECK(rk[q].m.model->R * ep == ref.m.model->R);
        loss += rk[q].m.model->loss[0] / rk[q].m.model->Rsum;
    }
    CHECK_NEAR(loss, ref.m.model->loss[0] / ref.m.model->Rsum, 1e-5);
    int nt = sc_model_tensors(ref.m.model), np = ref.m.model->np;
    for (int t = 0; t < nt; t++) {
        size_t n, nq;
        const float *g = mstage_tensor(&ref.m, t, 0, &n);
        int routed = t < np * ref.m.model->L && t % np >= 7 && t % np <= 9;
        float *sum = calloc(n, sizeof(float));
        for (int q = 0; q < ep; q++) {
            const float *gq = mstage_tensor(&rk[q].m, t, 0, &nq);
            CHECK(nq == (routed ? n / (size_t)ep : n));
            if (routed)
                CHECK(rel(gq, g + (size_t)q * nq, nq) < 1e-4);
            for (size_t i = 0; i < nq && !routed; i++)
                sum[i] += gq[i];
        }
        if (!routed && rel(sum, g, n) >= 1e-4)
            fprintf(stderr, "tensor %d: %g\n", t, rel(sum, g, n));
        CHECK(routed || rel(sum, g, n) < 1e-4);
        free(sum);
    }
    for (int q = 0; q < ep; q++)
        mstage_close(&rk[q].m);
    mstage_close(&ref.m);
    sc_transport_local_free(tp);
}

TEST(ep2) { group(2); }
TEST(ep4) { group(4); }
TEST(model_ep2) { model_group(2); }
TEST(model_ep4) { model_group(4); }

TEST(refused)
{
    sc_backend *be = NULL;
    char err[256];
    CHECK(sc_backend_cpu_open(0, &be, err, sizeof err) == SC_OK);
    sc_model md = {.E = 4, .ep = 3};
    CHECK(sc_moe_ep_check(&md, be, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "ep = 3: expert parallelism needs 1..64 ranks dividing the 4 experts");
    struct sc_backend_ops ops = *be->ops;
    ops.name = "cuda";
    sc_backend fake = {.ops = &ops, .ctx = be->ctx};
    md.ep = 2;
    CHECK(sc_moe_ep_check(&md, &fake, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "the cuda backend has no all-to-all");
    sc_backend_free(be);
    whole w; /* a rank without its group's transport: the pass fails in one line */
    whole_new(&w, 2, 1, NULL);
    const struct sc_workload_ops *o = w.m.wl.ops;
    CHECK(o->forward(w.m.wl.ctx, 0, 0, NULL, NULL, w.m.parts, w.m.bonly) == SC_ERR_RUNTIME);
    CHECK_STR(o->errmsg(w.m.wl.ctx), "ep rank 1: no transport for the EP group's all-to-alls");
    mstage_close(&w.m);
    sc_model *bad = NULL; /* a batch the group does not divide */
    sc_model_cfg c = {.hidden = 16, .layers = 2, .vocab = 24, .seq = 6, .batch = 3, .seed = 5,
                      .kind = SC_MODEL_DECODER, .heads = 4, .kv_heads = 2, .head_dim = 4,
                      .inter = 12, .rope_theta = 10000, .norm_eps = 1e-5, .experts = 4,
                      .experts_per_tok = 2, .ep = 2, .opt = sc_optim_defaults()};
    CHECK(sc_model_new(&c, 1, 1, &bad, err, sizeof err) == SC_ERR_ARG && !bad);
    CHECK_STR(err, "ep = 2: expert parallelism needs a model with experts and a batch that 2 "
                   "divides (experts = 4, batch = 3");
}

int main(void)
{
    RUN(ep2);
    RUN(ep4);
    RUN(model_ep2);
    RUN(model_ep4);
    RUN(refused);
    return harness_done("moe_ep");
}
