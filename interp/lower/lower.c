/*
 * lower.c — inserts transfers and the end of step into each device's order
 * (lower.h).
 */
#include "lower.h"
#include "collectives.h"
#include "ep.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"
#include "schedule/dataflow.h"

#include <stdlib.h>
#include <string.h>

typedef struct xfer {
    size_t pos;     /* goes before compute #pos of the order */
    double tau;     /* when its data is produced */
    size_t seq;     /* the producer's place in the dataflow run */
    uint64_t key;   /* tie-break: (dir, stage, mb) */
    sc_instr in;
} xfer;

static int xfer_cmp(const void *pa, const void *pb)
{
    const xfer *a = pa, *b = pb;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    if (a->tau != b->tau)
        return a->tau < b->tau ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->key > b->key) - (a->key < b->key);
}

/* Sorts xs[0..nx) by xfer_cmp: a counting sort by pos (< npos), then each
 * pos's few transfers by the rest of the key (insertion sort; qsort for a
 * long run). Transfers nearly come in pos order, but a RECV goes back to
 * the pass running when its data is produced: a plain qsort took a tenth of
 * lowering and simulating. The result is in out (xs is left as it was);
 * cnt (npos + 1) is scratch. */
static void sort_xfers(const xfer *xs, size_t nx, size_t npos, xfer *out, size_t *cnt)
{
    memset(cnt, 0, (npos + 1) * sizeof *cnt);
    for (size_t i = 0; i < nx; i++)
        cnt[xs[i].pos + 1]++;
    for (size_t p = 0; p < npos; p++)
        cnt[p + 1] += cnt[p];
    for (size_t i = 0; i < nx; i++)
        out[cnt[xs[i].pos]++] = xs[i];
    for (size_t lo = 0, hi; lo < nx; lo = hi) {
        for (hi = lo + 1; hi < nx && out[hi].pos == out[lo].pos;)
            hi++;
        if (hi - lo > 16) {
            qsort(out + lo, hi - lo, sizeof *out, xfer_cmp);
            continue;
        }
        for (size_t i = lo + 1; i < hi; i++) {
            xfer x = out[i];
            size_t j = i;
            for (; j > lo && xfer_cmp(&out[j - 1], &x) > 0; j--)
                out[j] = out[j - 1];
            out[j] = x;
        }
    }
}

/* count_before: sc_lower_count_before (collectives.h). A RECV goes before
 * the pass that is running when its data is produced: the transfer can
 * start at once, and the pass that reads it finds it there at tau +
 * T_comm, as the dataflow timing assumed. (Posted after that pass, it
 * would start only when the pass ends, and share a group with the pass's
 * SENDs.) */
#define count_before sc_lower_count_before

static uint64_t key_of(int dir, int stage, int mb)
{
    return ((uint64_t)dir << 60) | ((uint64_t)(uint32_t)stage << 30) | (uint64_t)(uint32_t)mb;
}

/* The dataflow timing of the passes (start, end, seq: of every device's
 * order in turn, global index), and of each (stage, mb), when and at which
 * position in the timing its F and its B (or BW) end: what a transfer of
 * their outputs waits for. */
typedef struct timing {
    const double *start, *end;
    const size_t *seq;
    double *endF, *endB; /* [S * m] */
    size_t *seqF, *seqB;
} timing;

/* endF, seqF, endB, seqB of the timing t from every order. */
static void producers(const sc_prog *pg, timing *t)
{
    size_t base = 0;
    for (int d = 0; d < pg->P; d++) {
        for (size_t k = 0; k < pg->order[d].n; k++) {
            sc_instr h[2];
            const sc_instr *hv = &pg->order[d].v[k];
            int nh = 1;
            if (hv->op == SC_OP_FB)
                nh = sc_instr_halves(hv, h), hv = h;
            for (int i = nh; i-- > 0;) {
                const sc_instr *in = &hv[i]; /* a pair's halves end together */
                size_t sm = SC_SM(pg, in->stage, in->mb);
                if (sc_op_is_fwd(in->op)) {
                    t->endF[sm] = t->end[base + k];
                    t->seqF[sm] = t->seq[base + k];
                } else if (sc_op_is_bgrad(in->op)) {
                    t->endB[sm] = t->end[base + k];
                    t->seqB[sm] = t->seq[base + k];
                }
            }
        }
        base += pg->order[d].n;
    }
}

/* The transfers of device d (its order's passes at base in the timing)
 * into xs, each at the position in the order it goes before: a RECV
 * before the pass running when its data is produced, a SEND right after
 * its producer. Returns their count. */
static size_t device_xfers(const sc_prog *pg, int d, size_t base, const timing *t, xfer *xs)
{
    const sc_vec *ov = &pg->order[d];
    const double *st0 = t->start + base, *end = t->end;
    const size_t *sq0 = t->seq + base, *seq = t->seq;
    size_t nx = 0;
    for (size_t k = 0; k < ov->n; k++) {
        /* Each pass, or each half of a pair (both at #k): a pair reads
         * and sends what its two halves do, its transfers in the one
         * global order as any pass's (docs/semantics.md#overlapped-pairs). */
        sc_instr h[2];
        const sc_instr *hv = &ov->v[k];
        size_t nh = 1;
        if (hv->op == SC_OP_FB)
            nh = (size_t)sc_instr_halves(hv, h), hv = h;
        for (size_t hi = 0; hi < nh; hi++) {
            const sc_instr *in = &hv[hi];
            int s = in->stage, mb = in->mb;
            int is_f = sc_op_is_fwd(in->op), is_b = sc_op_is_bgrad(in->op);
            int from = -1, to = -1, dir = 0;
            int first = sc_mb_first(pg, mb), last = sc_mb_last(pg, mb); /* its route */
            if (is_f && s > first && pg->stage_dev[s - 1] != d)
                from = s - 1, dir = SC_DIR_ACT;
            else if (is_b && s < last && pg->stage_dev[s + 1] != d)
                from = s + 1, dir = SC_DIR_GRAD;
            if (from >= 0) {
                size_t sm = SC_SM(pg, from, mb);
                double tau = dir == SC_DIR_ACT ? t->endF[sm] : t->endB[sm];
                size_t sp = dir == SC_DIR_ACT ? t->seqF[sm] : t->seqB[sm];
                size_t pos = count_before(st0, end + base, sq0, k, tau, sp);
                xs[nx++] = (xfer){pos, tau, sp, key_of(dir, s, mb),
                                  {.op = SC_OP_RECV, .dir = (uint8_t)dir, .stage = s, .mb = mb,
                                   .peer = pg->stage_dev[from]}};
            }
            if (is_f && s < last && pg->stage_dev[s + 1] != d)
                to = s + 1, dir = SC_DIR_ACT;
            else if (is_b && s > first && pg->stage_dev[s - 1] != d)
                to = s - 1, dir = SC_DIR_GRAD;
            if (to >= 0) {
                /* Passes after k start no earlier than k ends: the SEND goes
                 * right after its producer. */
                double tau = end[base + k];
                xs[nx++] = (xfer){k + 1, tau, seq[base + k], key_of(dir, to, mb),
                                  {.op = SC_OP_SEND, .dir = (uint8_t)dir, .stage = to, .mb = mb,
                                   .peer = pg->stage_dev[to]}};
            }
        }
    }
    return nx;
}

/* Stream d written: the passes of its order, the transfers xv[nx] in
 * order, the collectives cl[ncl] at their places, the all-reduce of the
 * copies' gradients, REDUCE and OPTIM. st0: the start of d's passes. */
static sc_status emit_stream(sc_prog *pg, int d, const double *st0, const xfer *xv, size_t nx,
                             const sc_lcoll *cl, size_t ncl)
{
    const sc_vec *ov = &pg->order[d];
    sc_status st;
    sc_vec *sv = &pg->stream[d];
    sv->n = 0;
    /* the passes, their transfers and collectives, REDUCE and OPTIM */
    if (sc_vec_reserve(sv, ov->n + nx + ncl + 2 + sc_lower_ep_count(pg, ov)) != SC_OK)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering");
    size_t j = 0, jc = 0;
    for (size_t k = 0; k <= ov->n; k++) {
        /* Collectives first (they do not split the transfers' groups). */
        for (; jc < ncl && cl[jc].pos == k; jc++)
            if ((st = sc_coll_push(pg, sv, &cl[jc].c)) != SC_OK)
                return st;
        /* A RECV of data produced while pass k runs starts its own
         * group: pass k must not wait for it (nor for what follows). */
        for (size_t j0 = j; j < nx && xv[j].pos == k; j++) {
            sc_instr x = xv[j].in;
            if (j > j0 && k < ov->n && xv[j].tau > st0[k] && xv[j].tau != xv[j - 1].tau)
                x.flags |= SC_IF_GROUP;
            sv->v[sv->n++] = x;
        }
        if (k < ov->n)
            sv->v[sv->n++] = ov->v[k];
        if (k < ov->n && (st = sc_lower_ep_pass(pg, d, sv, &ov->v[k])) != SC_OK)
            return st; /* its all-to-alls (ep.h) */
    }
    /* Copies of the model (docs/guide.md#copies): before REDUCE, which
     * reads it, an all-reduce (sum) over every device of the step's
     * weight gradients (tag W): each device's buffer holds its stages'
     * gradients at their layer group's place and zeros elsewhere, so
     * the copies' gradients are summed. Its size: one copy's
     * parameters (the model's bytes; 0 without a model). */
    if (pg->copies > 1 && !pg->fwd_only) {
        double pb = 0;
        for (int e = 0; pg->pbytes && e < pg->P; e++)
            pb += pg->pbytes[e];
        sc_coll c = {.op = SC_OP_ALLREDUCE, .red = SC_RED_SUM, .what = SC_OP_W, .stage = -1,
                     .mb = -1, .root = -1, .bytes = pb / pg->copies};
        if ((st = sc_coll_push(pg, sv, &c)) != SC_OK)
            return st;
    }
    if ((st = sc_lower_ep_reduce(pg, d, sv)) != SC_OK) /* the dense gradients (ep.h) */
        return st;
    if (sc_vec_reserve(sv, sv->n + 2) != SC_OK)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering");
    if (pg->fwd_only) /* forward-only: no gradients, no step (fwdonly.h) */
        return SC_OK;
    sv->v[sv->n++] = (sc_instr){.op = SC_OP_REDUCE, .stage = -1, .mb = -1, .peer = -1};
    sv->v[sv->n++] = (sc_instr){.op = SC_OP_OPTIM, .stage = -1, .mb = -1, .peer = -1};
    return SC_OK;
}

sc_status sc_lower(sc_prog *pg)
{
    int P = pg->P, S = pg->S;
    size_t N = 0, SM = (size_t)S * (size_t)pg->m, maxn = 0;
    for (int d = 0; d < P; d++) {
        N += pg->order[d].n;
        if (pg->order[d].n > maxn)
            maxn = pg->order[d].n;
    }
    sc_status st = SC_OK;
    double *start = sc_malloc((N + 1) * sizeof(double));
    double *end = sc_malloc((N + 1) * sizeof(double));
    double *endF = sc_malloc(SM * sizeof(double));
    double *endB = sc_malloc(SM * sizeof(double));
    size_t *seq = sc_malloc((N + 1) * sizeof(size_t));
    size_t *seqF = sc_malloc(SM * sizeof(size_t)), *seqB = sc_malloc(SM * sizeof(size_t));
    xfer *xs = sc_malloc((4 * maxn + 1) * sizeof(xfer)), *xs2 = NULL;
    size_t *cnt = NULL;
    sc_lcoll **cl = sc_calloc((size_t)P, sizeof *cl);
    size_t *ncl = sc_calloc((size_t)P, sizeof *ncl);
    if (!start || !end || !endF || !endB || !xs || !seq || !seqF || !seqB || !cl || !ncl) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering %zu passes", N);
        goto done;
    }
    if ((st = sc_lower_ep_prepare(pg)) != SC_OK || (st = sc_dataflow(pg, start, end, seq)) != SC_OK ||
        (st = sc_lower_colls(pg, start, end, seq, cl, ncl)) != SC_OK)
        goto done;
    double mk = 0;
    for (size_t k = 0; k < N; k++)
        mk = end[k] > mk ? end[k] : mk;
    pg->flow_mk = mk;
    timing t = {start, end, seq, endF, endB, seqF, seqB};
    producers(pg, &t);
    size_t base = 0;
    pg->ncoll = 0; /* the streams' collectives are made again with them */
    for (int d = 0; d < P; d++) {
        const sc_vec *ov = &pg->order[d];
        const double *st0 = start + base;
        size_t nx = device_xfers(pg, d, base, &t, xs);
        int sorted = 1;
        for (size_t i = 1; i < nx && sorted; i++)
            sorted = xfer_cmp(&xs[i - 1], &xs[i]) <= 0;
        xfer *xv = xs; /* the transfers in order */
        if (!sorted) {
            if (!xs2 && (!(xs2 = sc_malloc((4 * maxn + 1) * sizeof(xfer))) ||
                         !(cnt = sc_malloc((maxn + 2) * sizeof(size_t)))))
                goto nomem;
            sort_xfers(xs, nx, ov->n + 1, xs2, cnt);
            xv = xs2;
        }
        if ((st = emit_stream(pg, d, st0, xv, nx, cl[d], ncl[d])) != SC_OK)
            goto done;
        base += ov->n;
    }
    pg->lowered = 1;
    pg->verified = 0;
    goto done;
nomem:
    st = sc_fail(pg, SC_ERR_NOMEM, "out of memory lowering");
done:
    for (int d = 0; cl && d < P; d++)
        sc_free(cl[d]);
    sc_free(cl);
    sc_free(ncl);
    sc_free(start);
    sc_free(end);
    sc_free(endF);
    sc_free(endB);
    sc_free(xs);
    sc_free(xs2);
    sc_free(cnt);
    sc_free(seq);
    sc_free(seqF);
    sc_free(seqB);
    return st;
}
