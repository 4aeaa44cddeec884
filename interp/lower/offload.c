/*
 * offload.c — the offload plan's driver (offload.h): the plans of all
 * devices (offload_dev.c), the policies' levels, the refusal, and the
 * streams with the host copies in their places.
 *
 * The plan works on one device at a time (a pair of devices sharing a host
 * link only agrees on the slots and, last, on its warm-up). A copy never
 * starts later than planned (the channels are served in stream order, which
 * is the planned order; on a shared link the replay starts each copy no
 * earlier than its slot, sc_offload_info's copy_at), so no pass waits; the
 * replay of the new streams checks it.
 */
#include "offload.h"
#include "offload_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_names[] = {"none", "all", "selective", "budget", "function"};

/* ---- the streams ---------------------------------------------------------- */

static int cmp_rstart(const void *pa, const void *pb)
{
    const rec *a = *(const rec *const *)pa, *b = *(const rec *const *)pb;
    return a->rstart < b->rstart ? -1 : a->rstart > b->rstart;
}

static sc_instr host_instr(int op, const rec *r)
{
    sc_instr in = {.op = (uint8_t)op, .stage = r->s, .mb = r->mb};
    double f = r->q * SC_FRAC_ONE;
    in.frac = f < 1 ? 1 : f > SC_FRAC_ONE ? SC_FRAC_ONE : (int32_t)llround(f);
    return in;
}

/* Device d's stream with the plan's host copies, into out. */
static sc_status build_stream(const dplan *p, sc_vec *out)
{
    sc_prog *pg = p->pg;
    const sc_vec *sv = &pg->stream[p->d];
    size_t *nd = sc_calloc(p->nc + 2, sizeof(size_t)), *nrl = sc_calloc(p->nc + 2, sizeof(size_t));
    const rec **drops = sc_malloc(((size_t)p->nr + 1) * sizeof(rec *));
    const rec **reloads = sc_malloc(((size_t)p->nr + 1) * sizeof(rec *));
    const rec **offl = sc_calloc(p->nc + 1, sizeof(rec *)); /* the record of compute j, if moved */
    sc_status st = SC_OK;
    if (!nd || !nrl || !drops || !reloads || !offl) {
        st = SC_ERR_NOMEM;
        goto done;
    }
    /* Bucket the DROPs and RELOADs by gap (counting sort). */
    for (int i = 0; i < p->nr; i++) {
        const rec *r = &p->r[i];
        if (r->q <= 0)
            continue;
        nd[r->drop + 1]++;
        nrl[r->reload + 1]++;
        offl[r->jF] = r;
    }
    for (size_t g = 0; g <= p->nc; g++) {
        nd[g + 1] += nd[g];
        nrl[g + 1] += nrl[g];
    }
    for (int i = 0; i < p->nr; i++) {
        const rec *r = &p->r[i];
        if (r->q > 0) {
            drops[nd[r->drop]++] = r;
            reloads[nrl[r->reload]++] = r;
        }
    }
    /* nd[g] is now the end of gap g's bucket; its start is nd[g - 1]. */
    size_t j = 0, d0 = 0, r0 = 0;
    int gap_done = 0;
    for (size_t k = 0; k <= sv->n; k++) {
        const sc_instr *in = k < sv->n ? &sv->v[k] : NULL;
        int at_gap = in ? sc_op_is_compute(in->op) || (in->op == SC_OP_REDUCE && !gap_done) : !gap_done;
        if (at_gap) {
            size_t g = j, de = nd[g], re = nrl[g];
            qsort(reloads + r0, re - r0, sizeof *reloads, cmp_rstart);
            for (; d0 < de; d0++)
                if ((st = sc_vec_push(out, host_instr(SC_OP_DROP, drops[d0]))) != SC_OK)
                    goto done;
            for (; r0 < re; r0++)
                if ((st = sc_vec_push(out, host_instr(SC_OP_RELOAD, reloads[r0]))) != SC_OK)
                    goto done;
            if (j == p->nc)
                gap_done = 1;
        }
        if (!in)
            break;
        if ((st = sc_vec_push(out, *in)) != SC_OK)
            goto done;
        if (sc_op_is_compute(in->op)) {
            if (offl[j] && (st = sc_vec_push(out, host_instr(SC_OP_OFFLOAD, offl[j]))) != SC_OK)
                goto done;
            j++;
        }
    }
done:
    sc_free(nd);
    sc_free(nrl);
    sc_free(drops);
    sc_free(reloads);
    sc_free(offl);
    return st;
}

/* A record's place in the order of B starts. */
typedef struct bkey {
    double t;
    size_t jB;
    int i;
} bkey;

static int cmp_bkey(const void *pa, const void *pb)
{
    const bkey *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t > b->t ? -1 : 1;
    return a->jB > b->jB ? -1 : a->jB < b->jB;
}

/* ---- the whole program --------------------------------------------------- */

struct sc_offload_plan {
    sc_prog *pg;
    const sc_times *b; /* the timing without offload (the caller's) */
    double tol;         /* times closer than this are equal */
    dplan *dp;          /* [P] */
    size_t *jB_of;      /* [S*m] compute index of the B or BW of each record */
    double *scratch;    /* [2 (maxnc + 1)] */
};

typedef struct sc_offload_plan planner;

static sc_status build_plans(planner *pl)
{
    sc_prog *pg = pl->pg;
    int P = pg->P;
    size_t SM = (size_t)pg->S * (size_t)pg->m, maxnc = 0;
    pl->dp = sc_calloc((size_t)P, sizeof(dplan));
    pl->jB_of = sc_malloc(SM * sizeof(size_t));
    double *endW = sc_malloc(SM * sizeof(double));
    if (!pl->dp || !pl->jB_of || !endW) {
        sc_free(endW);
        return SC_ERR_NOMEM;
    }
    for (int d = 0; d < P; d++) {
        dplan *p = &pl->dp[d];
        const sc_vec *sv = &pg->stream[d];
        *p = (dplan){.pg = pg, .d = d, .t0 = pl->b->t0 + pl->b->offset[d],
                     .t1 = pl->b->t1 + pl->b->offset[d], .tol = pl->tol};
        for (size_t k = 0; k < sv->n; k++)
            p->nc += sc_op_is_compute(sv->v[k].op);
        maxnc = p->nc > maxnc ? p->nc : maxnc;
        p->cidx = sc_malloc((p->nc + 1) * sizeof(size_t));
        p->r = sc_calloc(p->nc + 1, sizeof(rec));
        p->byB = sc_malloc((p->nc + 1) * sizeof(int));
        p->rank = sc_calloc((size_t)pg->nchunks[d], sizeof(int));
        p->ready = sc_malloc((p->nc + 1) * sizeof(double));
        if (!p->cidx || !p->r || !p->byB || !p->rank || !p->ready) {
            sc_free(endW);
            return SC_ERR_NOMEM;
        }
        size_t j = 0;
        for (size_t k = 0; k < sv->n; k++) {
            const sc_instr *in = &sv->v[k];
            if (!sc_op_is_compute(in->op))
                continue;
            p->cidx[j] = k;
            size_t sm = SC_SM(pg, in->stage, in->mb);
            if (sc_op_is_bgrad(in->op))
                pl->jB_of[sm] = j;
            if (sc_op_is_wgrad(in->op))
                endW[sm] = p->t1[k];
            j++;
        }
        for (j = 0; j < p->nc; j++) {
            const sc_instr *in = sc_o_cpass(p, j);
            if (sc_op_is_fwd(in->op))
                p->r[p->nr++] = (rec){.s = in->stage, .mb = in->mb, .jF = j,
                                      .recomp = pg->rc_q && pg->rc_q[SC_SM(pg, in->stage, in->mb)] > 0};
        }
    }
    for (int d = 0; d < P; d++) {
        dplan *p = &pl->dp[d];
        int nch = pg->nchunks[d];
        double *sum = sc_calloc((size_t)nch, sizeof(double));
        if (!sum) {
            sc_free(endW);
            return SC_ERR_NOMEM;
        }
        bkey *keys = sc_malloc(((size_t)p->nr + 1) * sizeof(bkey));
        if (!keys) {
            sc_free(sum);
            sc_free(endW);
            return SC_ERR_NOMEM;
        }
        for (int i = 0; i < p->nr; i++) {
            rec *r = &p->r[i];
            size_t sm = SC_SM(pg, r->s, r->mb);
            r->jB = pl->jB_of[sm];
            r->life = endW[sm] - sc_o_cstart(p, r->jF);
            sum[pg->chunk[r->s]] += r->life;
            keys[i] = (bkey){sc_o_cstart(p, r->jB), r->jB, i};
        }
        qsort(keys, (size_t)p->nr, sizeof *keys, cmp_bkey);
        for (int i = 0; i < p->nr; i++)
            p->byB[i] = keys[i].i;
        sc_free(keys);
        /* Chunks by mean lifespan, longest first (ties: the lower chunk);
         * every chunk has m records, so sums compare as means. */
        for (int c = 0; c < nch; c++)
            for (int e = 0; e < nch; e++)
                if (sum[e] > sum[c] + p->tol || (fabs(sum[e] - sum[c]) <= p->tol && e < c))
                    p->rank[c]++;
        sc_free(sum);
    }
    sc_free(endW);
    /* The host links: a shared pair's slots last the longest time one
     * whole record of the pair takes, from the end of the even device's
     * first pass (as PipeOffload's schedule starts them). */
    for (int d = 0; d < P; d++) {
        dplan *p = &pl->dp[d];
        int e = d ^ 1;
        if (!pg->off.shared || e >= P)
            continue;
        int even = d & ~1;
        double slot = 0;
        for (int x = even; x <= even + 1; x++)
            for (int c = 0; c < pg->nchunks[x]; c++)
                slot = fmax(slot, sc_offload_time(pg, pg->dev_stages[x][c], 1));
        const dplan *q = &pl->dp[even];
        double anchor = q->nc ? q->t1[q->cidx[0]] : 0;
        p->link = (olink){1, d & 1, anchor, slot > 0 ? slot : 1};
    }
    pl->scratch = sc_malloc(2 * (maxnc + 2) * sizeof(double));
    return pl->scratch ? SC_OK : SC_ERR_NOMEM;
}

void sc_offload_plan_free(planner *pl)
{
    if (!pl)
        return;
    if (pl->dp)
        for (int d = 0; d < pl->pg->P; d++) {
            sc_free(pl->dp[d].cidx);
            sc_free(pl->dp[d].r);
            sc_free(pl->dp[d].byB);
            sc_free(pl->dp[d].rank);
            sc_free(pl->dp[d].ready);
        }
    sc_free(pl->dp);
    sc_free(pl->jB_of);
    sc_free(pl->scratch);
    sc_free(pl);
}

static double peak_of(planner *pl, const dplan *p)
{
    return sc_o_peak(p, pl->scratch);
}

/* Budget: the least level (in 1/64 chunks) that brings the device under
 * mem, backing off what the link cannot take. */
static sc_status budget_device(planner *pl, dplan *p, double *level, sc_offload_info *oi)
{
    sc_prog *pg = pl->pg;
    double M = pg->off.mem;
    long lo = 0, hi = 64L * pg->nchunks[p->d]; /* peak(lo) > M, peak(hi) <= M */
    *level = 0;
    if (oi->base_peak[p->d] <= M + p->tol) /* the plan of level 0 is in place */
        return SC_OK;
    sc_o_assign_level(p, hi / 64.0);
    sc_o_plan_backing_off(p);
    double best = peak_of(pl, p);
    if (best > M + p->tol && pg->off.soft) {
        *level = hi / 64.0; /* all the link takes; the caller checks the peak */
        return SC_OK;
    }
    if (best > M + p->tol)
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "offload 'budget': d%d cannot get under mem = %g: its peak is %g units "
                       "without offload and %g with all the host link takes (ratio %g)",
                       p->d, M, oi->base_peak[p->d], best, pg->off.ratio);
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        sc_o_assign_level(p, mid / 64.0);
        sc_o_plan_backing_off(p);
        if (peak_of(pl, p) <= M + p->tol)
            hi = mid;
        else
            lo = mid;
    }
    sc_o_assign_level(p, hi / 64.0);
    sc_o_plan_backing_off(p);
    *level = hi / 64.0;
    return SC_OK;
}

/* The refusal: the record the link cannot take whose B comes first. */
static sc_status refuse(planner *pl)
{
    sc_prog *pg = pl->pg;
    const rec *worst = NULL;
    const dplan *wp = NULL;
    int count = 0;
    for (int d = 0; d < pg->P; d++) {
        const dplan *p = &pl->dp[d];
        for (int i = 0; i < p->nr; i++) {
            const rec *r = &p->r[i];
            if (r->q <= 0 || r->short_by <= 0)
                continue;
            count++;
            if (!worst || sc_o_cstart(p, r->jB) < sc_o_cstart(wp, worst->jB)) {
                worst = r;
                wp = p;
            }
        }
    }
    if (!worst)
        return SC_OK;
    char b[96];
    sc_instr_format(sc_o_cpass(wp, worst->jB), b, sizeof b);
    return sc_fail(pg, SC_ERR_PROGRAM,
                   "offload '%s' (ratio %g%s): the host link of d%d cannot bring s%d mb%d back "
                   "in time: its RELOAD must start by %g to complete before %s at %g, but the "
                   "record leaves the device only at %g (short by %g; %d record%s short in all); "
                   "offload less (selective, budget) or give a faster link",
                   policy_names[pg->off.policy], pg->off.ratio, pg->off.shared ? ", shared" : "",
                   wp->d, worst->s, worst->mb, worst->rstart, b, sc_o_cstart(wp, worst->jB),
                   worst->rstart + worst->short_by, worst->short_by, count, count == 1 ? "" : "s");
}

/* Full offload where the link cannot keep up (PipeOffload's rule,
 * docs/offload.md#the-host-link): each direction carries a device's unit
 * per T_F + T_B + T_W at ratio k, so k <= 1, and k <= 1/2 where two
 * devices share the link. */
static sc_status refuse_all(sc_prog *pg)
{
    double most = pg->off.shared ? 0.5 : 1;
    if (pg->off.policy != SC_OFFLOAD_ALL || pg->off.ratio <= most * (1 + 1e-12))
        return SC_OK;
    return sc_fail(pg, SC_ERR_PROGRAM,
                   "offload 'all' (ratio %g%s): the host link cannot carry every record: full "
                   "offload needs ratio <= %g on %s (PipeOffload's rule); offload less "
                   "(selective, budget) or give a faster link",
                   pg->off.ratio, pg->off.shared ? ", shared" : "", most,
                   pg->off.shared ? "a link devices 2k, 2k+1 share" : "a link of its own");
}

sc_status sc_offload_plan_check(const planner *pl, const sc_times *nb)
{
    sc_prog *pg = pl->pg;
    sc_status st = SC_OK;
    for (int d = 0; d < pg->P && st == SC_OK; d++) {
        const dplan *p = &pl->dp[d];
        const sc_vec *sv = &pg->stream[d];
        size_t j = 0;
        for (size_t k = 0; k < sv->n && st == SC_OK; k++) {
            if (!sc_op_is_compute(sv->v[k].op))
                continue;
            double late = nb->t0[nb->offset[d] + k] - sc_o_cstart(p, j);
            if (late > pl->tol) {
                char a[96];
                sc_instr_format(&sv->v[k], a, sizeof a);
                st = sc_fail(pg, SC_ERR_PROGRAM,
                             "offload '%s' (ratio %g): the host copies delay %s on d%d by %g",
                             policy_names[pg->off.policy], pg->off.ratio, a, d, late);
            }
            j++;
        }
    }
    if (st)
        sc_prog_free_offload_info(pg);
    return st;
}

/* Device d's plan by the offload policy: the chunks' level (all,
 * selective), the recipe's fractions (table), or the budget's search. */
static sc_status device_policy(planner *pl, dplan *p, int d, sc_offload_info *oi)
{
    sc_prog *pg = pl->pg;
    switch (pg->off.policy) {
    case SC_OFFLOAD_ALL:
    case SC_OFFLOAD_SELECTIVE: {
        double L = pg->off.policy == SC_OFFLOAD_ALL ? pg->nchunks[d] : pg->off.chunks;
        oi->level[d] = L < pg->nchunks[d] ? L : pg->nchunks[d];
        sc_o_assign_level(p, oi->level[d]);
        /* all: every record the link takes (it backs off, as budget does,
         * and counts what stayed); selective names its records. */
        if (pg->off.policy == SC_OFFLOAD_ALL)
            sc_o_plan_backing_off(p);
        else
            sc_o_plan_device(p);
        break;
    }
    case SC_OFFLOAD_TABLE:
        for (int i = 0; i < p->nr; i++) {
            rec *r = &p->r[i];
            r->want = r->recomp ? 0 : sc_o_quantize(pg, r->s, pg->off_frac[SC_SM(pg, r->s, r->mb)]);
        }
        sc_o_plan_device(p);
        break;
    case SC_OFFLOAD_BUDGET:
        return budget_device(pl, p, &oi->level[d], oi);
    default:
        break;
    }
    return SC_OK;
}

/* The records moved, skipped and backed off, their units, and on a shared
 * link when each copy goes, into oi. */
static void count_moves(const planner *pl, sc_offload_info *oi)
{
    const sc_prog *pg = pl->pg;
    for (int d = 0; d < pg->P; d++) {
        const dplan *p = &pl->dp[d];
        for (int i = 0; i < p->nr; i++) {
            const rec *r = &p->r[i];
            oi->records += r->want > 0;
            oi->skipped += r->skipped;
            oi->backed_off += r->want > 0 && r->banned;
            if (r->q > 0) {
                size_t sm = SC_SM(pg, r->s, r->mb), SM = (size_t)pg->S * (size_t)pg->m;
                oi->moved++;
                oi->units += r->q * sc_rec_units(pg, r->s, r->mb);
                if (p->link.shared) { /* own links: copies go when posted */
                    oi->copy_at[sm] = r->ostart;
                    oi->copy_dur[sm] = r->odur;
                    oi->copy_at[SM + sm] = r->rstart;
                    oi->copy_dur[SM + sm] = r->dur;
                }
            }
        }
    }
}

sc_status sc_offload_plan_new(sc_prog *pg, const sc_times *base, planner **out)
{
    *out = NULL;
    sc_prog_free_offload_info(pg);
    int P = pg->P;
    size_t N = base->offset[P];
    double span = 0;
    for (size_t i = 0; i < N; i++)
        span = fmax(span, base->t1[i]);
    planner *pl = sc_calloc(1, sizeof *pl);
    sc_offload_info *oi = pg->off_info = sc_calloc(1, sizeof *oi);
    sc_status st = SC_OK;
    size_t SM2 = 2 * (size_t)pg->S * (size_t)pg->m;
    if (!pl || !oi || !(oi->base_peak = sc_calloc((size_t)P, sizeof(double))) ||
        !(oi->level = sc_calloc((size_t)P, sizeof(double))) ||
        !(oi->copy_at = sc_malloc(SM2 * sizeof(double))) ||
        !(oi->copy_dur = sc_malloc(SM2 * sizeof(double)))) {
        st = SC_ERR_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < SM2; i++)
        oi->copy_at[i] = oi->copy_dur[i] = -1;
    *pl = (planner){.pg = pg, .b = base, .tol = 1e-9 * (1 + span)};
    if ((st = refuse_all(pg)) != SC_OK || (st = build_plans(pl)) != SC_OK)
        goto fail;
    for (int d = 0; d < P; d++) {
        dplan *p = &pl->dp[d];
        p->skip = pg->off.policy != SC_OFFLOAD_TABLE;
        sc_o_assign_level(p, 0);
        sc_o_plan_device(p);
        oi->base_peak[d] = peak_of(pl, p);
        if ((st = device_policy(pl, p, d, oi)) != SC_OK)
            goto fail;
    }
    /* A shared pair's warm-up: its copies out alone on the link, faster. */
    for (int d = 0; d + 1 < P; d += 2)
        if (pl->dp[d].link.shared)
            sc_o_plan_solo(&pl->dp[d], &pl->dp[d + 1], pl->scratch);
    if ((st = refuse(pl)) != SC_OK)
        goto fail;
    count_moves(pl, oi);
    /* The new streams replace the old ones. The plans keep the old timing
     * (pl->b) for sc_offload_plan_check, not the old streams. */
    for (int d = 0; d < P; d++) {
        sc_vec nv = {0};
        if ((st = build_stream(&pl->dp[d], &nv)) != SC_OK) {
            sc_vec_free(&nv);
            goto fail;
        }
        sc_vec old = pg->stream[d];
        pg->stream[d] = nv;
        sc_vec_free(&old);
    }
    *out = pl;
    return SC_OK;
fail:
    if (st == SC_ERR_NOMEM)
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory planning the offload");
    sc_offload_plan_free(pl);
    sc_prog_free_offload_info(pg);
    return st;
}
