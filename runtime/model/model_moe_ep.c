/*
 * model_moe_ep.c — the routed experts of an MoE layer over an EP group
 * (model_impl.h's sc_moe_ep_*, docs/semantics.md#expert-parallelism).
 *
 * Rank q of a group of ep holds the routed experts q El .. q El + El - 1
 * (El = E / ep; its Wg, Wu, Wd are those El slices) and routes its own
 * rows. In each MoE layer, between the router and the combine:
 *   dispatch  the counts (El ints to each rank: what its experts get),
 *             then the rows: the rank's gathered copies are expert-major,
 *             so destination-major already; what comes is source-major and
 *             is laid out expert-major (expert j's rows from rank 0, 1, ..)
 *             for the experts' products, and kept so for W;
 *   experts   as at ep = 1 (model_moe_experts.c), on El experts;
 *   combine   the outputs, laid out source-major again, go back to their
 *             rank in the order they came (expert-major there: its gathered
 *             order), and the combine of model_moe.c follows.
 * The backward runs the same exchanges with the gradients (the copies'
 * output gradients out, their input gradients back). Every rank posts its
 * all-to-alls in the same order (the layers in turn), so they match.
 * The rows move in the backend's memory: the host's (cpu: the local and
 * mpi transports) or a GPU's (cuda: cuda-local, nccl), the transport's
 * copies after the compute queued so far (the backend synchronized first).
 * The counts live on the host; on a GPU they go through device scratch
 * (sb out, ye in: both free before the rows come).
 */
#include "model_impl.h"
#include "backend/sc_hash.h"
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PW(l, j) SC_MW(md, l, j)
#define PG(l, j) SC_MG(md, l, j)

/* One all-to-all's buffers: the hook's ctx. */
typedef struct xch {
    const void *send;
    const size_t *nsend;
    void *recv;
    size_t cap;
    size_t *nrecv;
} xch;

static sc_status x_out(void *ctx, const sc_ep_call *c, const void **send, size_t *nsend,
                       void **recv, size_t *cap, char *err, size_t errlen)
{
    const xch *x = ctx;
    (void)err, (void)errlen;
    memcpy(nsend, x->nsend, (size_t)c->ep * sizeof *nsend);
    *send = x->send;
    *recv = x->recv;
    *cap = x->cap;
    return SC_OK;
}

static sc_status x_in(void *ctx, const sc_ep_call *c, const void *recv, const size_t *nrecv,
                      char *err, size_t errlen)
{
    xch *x = ctx;
    (void)recv, (void)err, (void)errlen;
    memcpy(x->nrecv, nrecv, (size_t)c->ep * sizeof *nrecv);
    return SC_OK;
}

/* The backend's memory is the host's: its buffers are the transport's as they are. */
static int host_memory(const sc_mdev *dv)
{
    return strcmp(dv->be->ops->name, "cpu") == 0;
}

static sc_status exchange(sc_mdev *dv, int op, int pass, int mb, size_t row, xch *x)
{
    sc_ep_hook h = {.ctx = x, .row_bytes = row, .out = x_out, .in = x_in};
    sc_ep_call c = {.op = op, .pass = pass, .stage = -1, .mb = mb, .rank = dv->ep_dev,
                    .ep = dv->md->ep};
    if (dv->ep_failed) /* the transport failed before: the pass is failing */
        return SC_ERR_RUNTIME;
    dv->err[0] = 0;
    if (!host_memory(dv) && dv->be->ops->sync(dv->be->ctx) != SC_OK) { /* the rows produced */
        snprintf(dv->err, sizeof dv->err, "ep rank %d: the backend failed before an "
                 "all-to-all: %s", dv->md->ep_rank, dv->be->ops->errmsg(dv->be->ctx));
        dv->ep_failed = 1;
        return SC_ERR_RUNTIME;
    }
    sc_status st = dv->ep_tp ? sc_ep_exchange(&h, &c, dv->ep_tp, dv->err, sizeof dv->err)
                             : SC_ERR_PROGRAM;
    if (!dv->ep_tp)
        snprintf(dv->err, sizeof dv->err, "ep rank %d: no transport for the EP group's "
                 "all-to-alls", dv->md->ep_rank);
    dv->ep_failed = st != SC_OK;
    return st;
}

/* Rows (of w floats) between the source-major order they came in (src)
 * and the expert-major order of the experts' products (exp): to_exp 1
 * copies src into exp, 0 back. cin: [ep][El]. */
static void reorder(const sc_mdev *dv, const int *cin, size_t w, float *src, float *exp,
                    int to_exp)
{
    const sc_model *md = dv->md;
    int ep = md->ep, El = md->E / ep;
    size_t e_off = 0;
    for (int j = 0; j < El; j++) {
        size_t s_off = 0;
        for (int q = 0; q < ep; q++) {
            size_t before = 0, n = (size_t)cin[q * El + j];
            for (int i = 0; i < j; i++)
                before += (size_t)cin[q * El + i];
            float *a = src + (s_off + before) * w, *b = exp + e_off * w;
            if (n)
                dv->be->ops->copy(dv->be->ctx, n * w, to_exp ? a : b, to_exp ? b : a);
            e_off += n;
            for (int i = 0; i < El; i++)
                s_off += (size_t)cin[q * El + i];
        }
    }
}

/* Rows per destination rank of this rank's copies (cnt: [E]), and the
 * total per local expert of what came (cin). */
static void per_rank(const sc_model *md, const int *cnt, size_t *n)
{
    int El = md->E / md->ep;
    for (int q = 0; q < md->ep; q++) {
        n[q] = 0;
        for (int j = 0; j < El; j++)
            n[q] += (size_t)cnt[q * El + j];
    }
}

static void per_expert(const sc_model *md, const int *cin, int *tot)
{
    int El = md->E / md->ep;
    for (int j = 0; j < El; j++) {
        tot[j] = 0;
        for (int q = 0; q < md->ep; q++)
            tot[j] += cin[q * El + j];
    }
}

/* Moves rows between this rank's copies (xl, R k rows) and the experts'
 * (src: source-major): out 1 sends xl and receives into src, 0 sends
 * src and receives into xl. */
static sc_status move_rows(sc_mdev *dv, int op, int pass, int mb, const int *cnt,
                           const int *cin, float *xl, float *src, int out)
{
    const sc_model *md = dv->md;
    size_t mine[SC_MEP_MAX], theirs[SC_MEP_MAX], got[SC_MEP_MAX];
    size_t G = (size_t)md->ep * (size_t)sc_model_rows(md, mb) * (size_t)md->K;
    per_rank(md, cnt, mine);
    int El = md->E / md->ep;
    for (int q = 0; q < md->ep; q++) {
        theirs[q] = 0;
        for (int j = 0; j < El; j++)
            theirs[q] += (size_t)cin[q * El + j];
    }
    xch x = {.send = out ? xl : src, .nsend = out ? mine : theirs, .recv = out ? src : xl,
             .cap = G, .nrecv = got};
    sc_status st = exchange(dv, op, pass, mb, (size_t)md->h * sizeof(float), &x);
    for (int q = 0; q < md->ep && !st; q++)
        if (got[q] != (out ? theirs[q] : mine[q])) {
            snprintf(dv->err, sizeof dv->err, "ep rank %d: %zu rows came from rank %d, its "
                     "counts said %zu", md->ep_rank, got[q], q, out ? theirs[q] : mine[q]);
            st = SC_ERR_RUNTIME;
        }
    return st;
}

/* Monotonic seconds. */
static double ep_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* md->ep_time: per layer and kind (0 dispatch, 1 combine) a count, then
 * one time per pass: 2 M passes (F and B or BW of each microbatch). */
static size_t ep_slots(const sc_model *md)
{
    return 2 * (size_t)md->m * (size_t)(md->c.steps > 1 ? md->c.steps : 1) + 1;
}

/* Layer l's exchanges of kind k took the seconds since t0 (a lane's are
 * not noted: its passes run beside the device's, on the lane transport). */
static void ep_note(const sc_mdev *dv, int l, int k, double t0)
{
    const sc_model *md = dv->md;
    if (!md->ep_time || dv->ep_tp == dv->ep_lane_tp)
        return;
    double *t = md->ep_time + ((size_t)l * 2 + (size_t)k) * ep_slots(md);
    if (t[0] + 1 < (double)ep_slots(md))
        t[1 + (size_t)t[0]++] = ep_clock() - t0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over stage s's passes of its layers' kind-k exchanges. */
static double ep_median(const sc_model *md, int s, int k)
{
    size_t w = ep_slots(md), n = (size_t)md->ep_time[(size_t)md->first[s] * 2 * w + (size_t)k * w];
    double *v = calloc(n + 1, sizeof(double)), m = 0;
    for (int l = md->first[s]; v && l < md->first[s] + md->count[s]; l++) {
        const double *t = md->ep_time + ((size_t)l * 2 + (size_t)k) * w;
        for (size_t i = 0; i < n && i < (size_t)t[0]; i++)
            v[i] += t[1 + i];
    }
    if (v && n) {
        qsort(v, n, sizeof *v, cmp_d);
        m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    free(v);
    return m;
}

/* The counts: El ints to each rank, destination-major as cnt is; on a
 * GPU through sb (out) and ye (in), which hold G h >= E floats. */
static sc_status exchange_counts(sc_mdev *dv, int mb, const sc_moe_rows *r)
{
    const sc_model *md = dv->md;
    size_t ones[SC_MEP_MAX], got[SC_MEP_MAX], bytes = (size_t)md->E * sizeof(int);
    for (int q = 0; q < md->ep; q++)
        ones[q] = 1;
    int host = host_memory(dv);
    if (!host && (size_t)md->ep * (size_t)sc_model_rows(md, mb) * (size_t)md->K *
                         (size_t)md->h < (size_t)md->E) {
        snprintf(dv->err, sizeof dv->err, "ep rank %d: %d experts' counts do not fit the "
                 "layer's scratch on the device", md->ep_rank, md->E);
        return SC_ERR_ARG;
    }
    xch xc = {.send = host ? (void *)r->cnt : (void *)r->sb, .nsend = ones,
              .recv = host ? (void *)r->cin : (void *)r->ye, .cap = (size_t)md->ep,
              .nrecv = got};
    if (!host)
        dv->be->ops->upload(dv->be->ctx, r->sb, r->cnt, bytes);
    sc_status st = exchange(dv, SC_OP_DISPATCH, SC_OP_F, mb,
                            (size_t)(md->E / md->ep) * sizeof(int), &xc);
    if (!st && !host)
        dv->be->ops->download(dv->be->ctx, r->cin, r->ye, bytes);
    return st;
}

sc_status sc_moe_ep_forward(sc_mdev *dv, int l, int mb, float **L, const sc_moe_rows *r)
{
    const sc_model *md = dv->md;
    int h = md->h, El = md->E / md->ep;
    sc_status st = exchange_counts(dv, mb, r);
    double t0 = ep_clock(); /* the rows' (the counts' count as F's own: B has none) */
    if (!st)
        st = move_rows(dv, SC_OP_DISPATCH, SC_OP_F, mb, r->cnt, r->cin, r->xl, r->sb, 1);
    if (st)
        return st;
    ep_note(dv, l, 0, t0);
    float *xg = L[P_LAYER]; /* model_moe.c's M_XG: kept, expert-major */
    reorder(dv, r->cin, (size_t)h, r->sb, xg, 1);
    int tot[SC_MOE_MAXE];
    per_expert(md, r->cin, tot);
    sc_moe_set x = {.ne = El, .n = tot, .gate = r->gate, .up = r->up, .y = r->ye};
    sc_moe_experts(dv, l, SC_OP_F, L, &x);
    reorder(dv, r->cin, (size_t)h, r->sb, r->ye, 0);
    t0 = ep_clock();
    st = move_rows(dv, SC_OP_COMBINE, SC_OP_F, mb, r->cnt, r->cin, r->xl, r->sb, 0);
    ep_note(dv, l, 1, t0);
    return st;
}

sc_status sc_moe_ep_backward(sc_mdev *dv, int l, int mb, float **L, const sc_moe_rows *r)
{
    const sc_model *md = dv->md;
    int h = md->h, El = md->E / md->ep;
    double t0 = ep_clock();
    sc_status st = move_rows(dv, SC_OP_DISPATCH, SC_OP_B, mb, r->cnt, r->cin, r->xl, r->sb, 1);
    if (st)
        return st;
    ep_note(dv, l, 0, t0);
    float *dyg = L[P_LAYER + 1]; /* model_moe.c's M_DYG: kept, expert-major */
    reorder(dv, r->cin, (size_t)h, r->sb, dyg, 1);
    int tot[SC_MOE_MAXE];
    per_expert(md, r->cin, tot);
    sc_moe_set x = {.ne = El, .n = tot, .gate = r->gate, .up = r->up, .y = r->ye};
    sc_moe_experts(dv, l, SC_OP_B, L, &x); /* the input gradients over ye */
    reorder(dv, r->cin, (size_t)h, r->sb, r->ye, 0);
    t0 = ep_clock();
    st = move_rows(dv, SC_OP_COMBINE, SC_OP_B, mb, r->cnt, r->cin, r->xl, r->sb, 0);
    ep_note(dv, l, 1, t0);
    return st;
}

void sc_moe_ep_weight(sc_mdev *dv, int l, float **L, const int *cin)
{
    int tot[SC_MOE_MAXE];
    per_expert(dv->md, cin, tot);
    sc_moe_set x = {.ne = dv->md->E / dv->md->ep, .n = tot}; /* W reads only L */
    sc_moe_experts(dv, l, SC_OP_W, L, &x);
}

sc_status sc_moe_ep_check(const sc_model *md, const sc_backend *be, char *err, size_t errlen)
{
    if (md->ep < 1 || md->ep > SC_MEP_MAX || md->E % md->ep) {
        snprintf(err, errlen, "ep = %d: expert parallelism needs 1..%d ranks dividing the %d "
                 "experts", md->ep, SC_MEP_MAX, md->E);
        return SC_ERR_ARG;
    }
    if (md->ep > 1 && strcmp(be->ops->name, "cpu") && (!be->ops->copy || !be->ops->sync)) {
        snprintf(err, errlen, "ep = %d: the %s backend has no all-to-all of its memory yet "
                 "(docs/run.md#expert-parallelism: cpu and cuda)", md->ep, be->ops->name);
        return SC_ERR_ARG;
    }
    return SC_OK;
}

sc_status sc_moe_ep_cfg_check(const sc_model_cfg *cfg, char *err, size_t errlen)
{
    int ep = cfg->ep > 1 ? cfg->ep : 1;
    if (ep == 1)
        return SC_OK;
    if (ep > SC_MEP_MAX || cfg->experts < 1 || cfg->experts % ep || cfg->batch % ep ||
        cfg->ep_rank < 0 || cfg->ep_rank >= ep) {
        snprintf(err, errlen, "ep = %d: expert parallelism needs a model with experts and a "
                 "batch that %d divides (experts = %ld, batch = %ld; ep at most %d)", ep, ep,
                 cfg->experts, cfg->batch, SC_MEP_MAX);
        return SC_ERR_ARG;
    }
    if (sc_vocab_split(cfg->vocab_par) || cfg->copies > 1) {
        snprintf(err, errlen, "ep = %d: expert parallelism with a split vocabulary or copies "
                 "of the model is not run yet", ep);
        return SC_ERR_ARG;
    }
    return SC_OK;
}

void sc_moe_ep_share(sc_model *md)
{
    md->ep = md->c.ep > 1 ? md->c.ep : 1;
    md->ep_rank = md->ep > 1 ? md->c.ep_rank : 0;
    md->c.batch /= md->ep;
    if (md->ep > 1) /* NULL: not timed */
        md->ep_time = calloc(2 * (size_t)md->c.layers * (size_t)ep_slots(md), sizeof(double));
}

void sc_model_ep_times(const sc_model *md, int s, double *dispatch, double *combine)
{
    *dispatch = md->ep_time ? ep_median(md, s, 0) : 0;
    *combine = md->ep_time ? ep_median(md, s, 1) : 0;
}

void sc_moe_ep_init(sc_mdev *dv, float *x, size_t n, int kind, int ll, float scale)
{
    const sc_model *md = dv->md;
    if (md->ep <= 1) {
        sc_model_fill(dv, x, n, kind, ll, scale);
        return;
    }
    uint64_t first = (uint64_t)md->ep_rank * n; /* the shard's place in the whole tensor */
    for (size_t i0 = 0; i0 < n; i0 += SC_MODEL_CHUNK) {
        size_t c = n - i0 < SC_MODEL_CHUNK ? n - i0 : SC_MODEL_CHUNK;
        for (size_t i = 0; i < c; i++)
            dv->stage[i] = scale * sc_urand(md->c.seed, sc_stream(kind, ll), first + i0 + i);
        dv->be->ops->upload(dv->be->ctx, x + i0, dv->stage, c * sizeof(float));
    }
}
