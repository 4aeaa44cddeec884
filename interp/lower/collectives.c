/*
 * collectives.c — ranking and placing the collectives of the lowered
 * streams (collectives.h).
 */
#include "collectives.h"
#include "ir/alloc.h"

#include <stdlib.h>

/* A pass is before data produced at tau by the seq-th pass of the dataflow
 * run when it ends before tau, or ends at tau and either ran (it has a
 * length) or takes no time and ran no later than the producer. End times
 * ascend along a device, and of the passes that end at tau only the first
 * can have a length (the rest start at tau), the others in the order the
 * run took them (sq ascends): the passes before come first, and a search
 * finds where they end. The answer is mostly a few passes before n (the
 * reader's place): steps of 1, 2, 4, ... down from n, then halving. */
static inline int before(const double *start, const double *end, const size_t *sq, size_t i,
                         double tau, size_t seq)
{
    return end[i] < tau || (end[i] == tau && (start[i] < tau || sq[i] <= seq));
}

size_t sc_lower_count_before(const double *start, const double *end, const size_t *sq, size_t n,
                             double tau, size_t seq)
{
    size_t lo = 0, hi = n; /* before: every pass below lo; not: every one from hi */
    for (size_t step = 1; hi > 0; step *= 2) {
        size_t i = hi > step ? hi - step : 0;
        if (before(start, end, sq, i, tau, seq)) {
            lo = i + 1;
            break;
        }
        hi = i;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (before(start, end, sq, mid, tau, seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

typedef struct ranked {
    double tau;
    size_t seq;
    uint64_t key;
    sc_lcoll lc;
} ranked;

static int rank_cmp(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->tau != b->tau)
        return a->tau < b->tau ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->key > b->key) - (a->key < b->key);
}

static uint64_t key_of(const sc_coll *c)
{
    return ((uint64_t)(uint8_t)c->what << 56) | ((uint64_t)(c->part & 15) << 52) |
           ((uint64_t)((uint32_t)(c->stage + 1) & 0x3ffffu) << 34) |
           ((uint64_t)(uint32_t)(c->mb + 1) & 0x3ffffffffULL);
}

/* When the collectives' data is produced: the latest end and dataflow
 * place of every vocabulary pass (by kind and microbatch: v, [4 * m]), of
 * F of the last stage (f, [m]) and of B or BW of stage 0 (b, [m]). */
typedef struct produced {
    double *vend, *fend, *bend;
    size_t *vseq, *fseq, *bseq;
} produced;

/* The times of pr from the dataflow timing (end, seq: every device's order
 * in turn); returns the longest order's length. */
static size_t producer_times(const sc_prog *pg, const double *end, const size_t *seq,
                             const produced *pr)
{
    int P = pg->P, m = pg->m;
    size_t base = 0, maxn = 0;
    for (int d = 0; d < P; d++) {
        const sc_vec *ov = &pg->order[d];
        for (size_t k = 0; k < ov->n; k++) {
            const sc_instr *in = &ov->v[k];
            size_t g = base + k, i;
            double *te;
            size_t *ts;
            if (sc_op_is_vocab(in->op)) {
                i = (size_t)sc_op_vocab_index(in->op) * (size_t)m + (size_t)in->mb;
                te = pr->vend;
                ts = pr->vseq;
            } else if (sc_op_is_fwd(in->op) && in->stage == pg->S - 1) {
                i = (size_t)in->mb;
                te = pr->fend;
                ts = pr->fseq;
            } else if (sc_op_is_bgrad(in->op) && in->stage == 0) {
                i = (size_t)in->mb;
                te = pr->bend;
                ts = pr->bseq;
            } else {
                continue;
            }
            if (end[g] > te[i] || (end[g] == te[i] && seq[g] > ts[i])) {
                te[i] = end[g];
                ts[i] = seq[g];
            }
        }
        base += ov->n;
        if (ov->n > maxn)
            maxn = ov->n;
    }
    return maxn;
}

/* Device d's collectives into rk, ranked by when their data is produced:
 * those of its passes (before the pass after their producer), and the
 * broadcasts it receives, posted like a RECV (start, end, seq: d's part of
 * the timing). Returns their count. */
static size_t device_colls(const sc_prog *pg, int d, const double *start, const double *end,
                           const size_t *seq, const produced *pr, ranked *rk)
{
    const sc_vec *ov = &pg->order[d];
    int m = pg->m;
    size_t nr = 0;
    for (size_t k = 0; k < ov->n; k++) {
        const sc_instr *in = &ov->v[k];
        sc_coll cs[3];
        int nc = sc_vocab_colls(pg, in, cs);
        for (int j = 0; j < nc; j++) {
            double tau;
            size_t sq;
            if (!sc_op_is_vocab(in->op)) { /* the broadcast of F's or B's output */
                tau = (sc_op_is_fwd(in->op) ? pr->fend : pr->bend)[in->mb];
                sq = (sc_op_is_fwd(in->op) ? pr->fseq : pr->bseq)[in->mb];
            } else {
                size_t i = (size_t)sc_op_vocab_index(in->op) * (size_t)m + (size_t)in->mb;
                tau = pr->vend[i];
                sq = pr->vseq[i];
            }
            rk[nr++] = (ranked){tau, sq, key_of(&cs[j]), {k + 1, cs[j]}};
        }
    }
    /* Broadcasts from another device: posted like a RECV. */
    for (int mb = 0; mb < m; mb++)
        for (int w = 0; w < 2; w++) {
            int stage = w ? 0 : pg->S - 1;
            if (pg->stage_dev[stage] == d)
                continue;
            sc_instr prod = {.op = (uint8_t)(w ? SC_OP_B : SC_OP_F), .stage = stage, .mb = mb};
            sc_coll c;
            sc_vocab_colls(pg, &prod, &c);
            double tau = (w ? pr->bend : pr->fend)[mb];
            size_t sq = (w ? pr->bseq : pr->fseq)[mb];
            size_t pos = sc_lower_count_before(start, end, seq, ov->n, tau, sq);
            rk[nr++] = (ranked){tau, sq, key_of(&c), {pos, c}};
        }
    return nr;
}

sc_status sc_lower_colls(sc_prog *pg, const double *start, const double *end, const size_t *seq,
                         sc_lcoll **lists, size_t *n)
{
    int P = pg->P, m = pg->m;
    for (int d = 0; d < P; d++) {
        lists[d] = NULL;
        n[d] = 0;
    }
    if (!sc_vocab_split(pg->vocab))
        return SC_OK;
    /* The producers' times: every device's vocabulary passes (the latest
     * end and dataflow place of each kind and microbatch), F of the last
     * stage and B (or BW) of stage 0. */
    size_t nv = 4 * (size_t)m;
    double *vend = sc_malloc((nv + 2 * (size_t)m) * sizeof(double));
    size_t *vseq = sc_malloc((nv + 2 * (size_t)m) * sizeof(size_t));
    ranked *rk = NULL;
    sc_status st = SC_OK;
    if (!vend || !vseq) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the collectives");
        goto done;
    }
    double *fend = vend + nv, *bend = fend + m;
    size_t *fseq = vseq + nv, *bseq = fseq + m;
    for (size_t i = 0; i < nv + 2 * (size_t)m; i++) {
        vend[i] = -1;
        vseq[i] = 0;
    }
    produced pr = {vend, fend, bend, vseq, fseq, bseq};
    size_t maxn = producer_times(pg, end, seq, &pr), base = 0;
    /* Per device: the collectives of its passes, and the broadcasts it
     * receives; ranked, then positions made non-decreasing. */
    rk = sc_malloc((3 * maxn + 2 * (size_t)m + 1) * sizeof *rk);
    if (!rk) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the collectives");
        goto done;
    }
    for (int d = 0; d < P && st == SC_OK; d++) {
        const sc_vec *ov = &pg->order[d];
        size_t nr = device_colls(pg, d, start + base, end + base, seq + base, &pr, rk);
        qsort(rk, nr, sizeof *rk, rank_cmp);
        lists[d] = sc_malloc((nr + 1) * sizeof(sc_lcoll));
        if (!lists[d]) {
            st = sc_fail(pg, SC_ERR_NOMEM, "out of memory placing the collectives");
            break;
        }
        for (size_t i = 0; i < nr; i++) {
            if (i > 0 && rk[i].lc.pos < lists[d][i - 1].pos)
                rk[i].lc.pos = lists[d][i - 1].pos;
            lists[d][i] = rk[i].lc;
        }
        n[d] = nr;
        base += ov->n;
    }
done:
    sc_free(vend);
    sc_free(vseq);
    sc_free(rk);
    if (st)
        for (int d = 0; d < P; d++) {
            sc_free(lists[d]);
            lists[d] = NULL;
            n[d] = 0;
        }
    return st;
}
