/*
 * recompute.c — the recomputation plan (recompute.h): which records drop
 * part of themselves after F and recompute it before B, and the streams
 * with their DROP and R.
 */
#include "recompute.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct plan {
    sc_prog *pg;
    const sc_times *b;
    double *q;      /* [S m] the fraction recomputed, 0: kept */
    double *life;   /* [S m] lifespans in the base timing */
    int *rank;      /* [max chunks] of the device being planned */
    double tol;
} plan;

/* Lifespans of device d's records, and its chunks ranked by their mean
 * lifespan, longest first (ties: the lower chunk), as offload ranks them. */
static void rank_chunks(plan *pl, int d)
{
    sc_prog *pg = pl->pg;
    const sc_vec *sv = &pg->stream[d];
    const double *t0 = pl->b->t0 + pl->b->offset[d], *t1 = pl->b->t1 + pl->b->offset[d];
    int nch = pg->nchunks[d];
    double sum[64] = {0}; /* chunks beyond 64 rank as the 64th */
    for (size_t k = 0; k < sv->n; k++) {
        const sc_instr *in = &sv->v[k];
        if (!sc_op_is_compute(in->op) || in->mb >= pg->m)
            continue;
        size_t sm = SC_SM(pg, in->stage, in->mb);
        if (sc_op_is_fwd(in->op))
            pl->life[sm] = -t0[k];
        if (sc_op_is_wgrad(in->op))
            pl->life[sm] += t1[k];
    }
    for (int c = 0; c < nch; c++) {
        int s = pg->dev_stages[d][c], cc = c < 64 ? c : 63;
        for (int mb = 0; mb < pg->m; mb++)
            sum[cc] += pl->life[SC_SM(pg, s, mb)];
    }
    for (int c = 0; c < nch; c++) {
        int cc = c < 64 ? c : 63;
        pl->rank[c] = 0;
        for (int e = 0; e < nch && e < 64; e++)
            if (sum[e] > sum[cc] + pl->tol || (fabs(sum[e] - sum[cc]) <= pl->tol && e < cc))
                pl->rank[c]++;
    }
}

/* Fractions of device d's records at level L (chunks, longest lifespans
 * first). */
static void assign_level(plan *pl, int d, double L)
{
    sc_prog *pg = pl->pg;
    for (int c = 0; c < pg->nchunks[d]; c++) {
        int s = pg->dev_stages[d][c];
        double x = L - pl->rank[c];
        x = x < 0 ? 0 : x > 1 ? 1 : x;
        double q = sc_recompute_quantize(pg, s, fmin(x * pg->rc.frac, sc_recompute_max(pg, s)));
        for (int mb = 0; mb < pg->m; mb++)
            pl->q[SC_SM(pg, s, mb)] = q;
    }
}

/* Device d's peak with the fractions q: its stream with each recomputed
 * record's DROP after F and R before B, in stream order. */
static double peak_of(const plan *pl, int d)
{
    sc_prog *pg = pl->pg;
    const sc_vec *sv = &pg->stream[d];
    double cur = 0, peak = 0;
    for (size_t k = 0; k < sv->n; k++) {
        const sc_instr *in = &sv->v[k];
        double q = sc_op_is_compute(in->op) && in->mb < pg->m
                       ? pl->q[SC_SM(pg, in->stage, in->mb)] * sc_rec_units(pg, in->stage, in->mb)
                       : 0;
        if (q > 0 && sc_op_is_bgrad(in->op))
            peak = fmax(peak, cur += q); /* R */
        cur += sc_instr_mem(pg, in);
        peak = fmax(peak, cur);
        if (q > 0 && sc_op_is_fwd(in->op))
            cur -= q; /* DROP */
    }
    return peak;
}

/* Budget: the least level (in 1/64 chunks) that brings device d under mem;
 * when none does, *short_of is its peak with every record recomputed. */
static void budget_device(plan *pl, int d, double *level, double *base, double *short_of)
{
    sc_prog *pg = pl->pg;
    double M = pg->rc.mem;
    long lo = 0, hi = 64L * pg->nchunks[d];
    assign_level(pl, d, 0);
    *base = peak_of(pl, d);
    *level = *short_of = 0;
    if (*base <= M + pl->tol)
        return;
    assign_level(pl, d, (double)hi / 64);
    double best = peak_of(pl, d);
    if (best > M + pl->tol) {
        *level = (double)hi / 64;
        *short_of = best;
        return;
    }
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        assign_level(pl, d, (double)mid / 64);
        if (peak_of(pl, d) <= M + pl->tol)
            hi = mid;
        else
            lo = mid;
    }
    *level = (double)hi / 64;
    assign_level(pl, d, *level);
}

static sc_instr frac_instr(int op, const sc_instr *pass, double q)
{
    sc_instr in = {.op = (uint8_t)op, .stage = pass->stage, .mb = pass->mb};
    double f = q * SC_FRAC_ONE;
    in.frac = f < 1 ? 1 : f > SC_FRAC_ONE ? SC_FRAC_ONE : (int32_t)llround(f);
    return in;
}

/* Device d's stream with its DROPs and Rs. */
static sc_status rewrite(plan *pl, int d)
{
    sc_prog *pg = pl->pg;
    sc_vec *sv = &pg->stream[d], out = {0};
    sc_status st = sc_vec_reserve(&out, sv->n + 8);
    for (size_t k = 0; k < sv->n && st == SC_OK; k++) {
        const sc_instr *in = &sv->v[k];
        double q = sc_op_is_compute(in->op) ? pl->q[SC_SM(pg, in->stage, in->mb)] : 0;
        if (q > 0 && sc_op_is_bgrad(in->op))
            st = sc_vec_push(&out, frac_instr(SC_OP_R, in, q));
        if (st == SC_OK)
            st = sc_vec_push(&out, *in);
        if (st == SC_OK && q > 0 && sc_op_is_fwd(in->op))
            st = sc_vec_push(&out, frac_instr(SC_OP_DROP, in, q));
    }
    if (st != SC_OK) {
        sc_vec_free(&out);
        return st;
    }
    sc_vec_free(sv);
    *sv = out;
    return SC_OK;
}

/* The recipe's fraction of each record of device d (the TABLE policy),
 * quantized; a record both offloaded and recomputed is refused. */
static sc_status table_device(plan *pl, int d)
{
    sc_prog *pg = pl->pg;
    sc_status st = SC_OK;
    for (int c = 0; c < pg->nchunks[d]; c++) {
        int s = pg->dev_stages[d][c];
        for (int mb = 0; mb < pg->m; mb++) {
            size_t sm = SC_SM(pg, s, mb);
            pl->q[sm] = sc_recompute_quantize(pg, s, fmin(pg->rc_frac[sm],
                                                          sc_recompute_max(pg, s)));
            if (pl->q[sm] > 0 && pg->off.policy == SC_OFFLOAD_TABLE && pg->off_frac &&
                pg->off_frac[sm] > 0)
                st = sc_fail(pg, SC_ERR_ARG,
                             "recompute: record s%d mb%d is both offloaded (%g) and "
                             "recomputed (%g): a record is kept, offloaded or "
                             "recomputed", s, mb, pg->off_frac[sm], pg->rc_frac[sm]);
        }
    }
    return st;
}

/* Device d's recomputed records, their units and R's time into ri. */
static void count_device(const plan *pl, sc_recompute_info *ri, int d)
{
    const sc_prog *pg = pl->pg;
    for (int c = 0; c < pg->nchunks[d]; c++) {
        int s = pg->dev_stages[d][c];
        for (int mb = 0; mb < pg->m; mb++) {
            double q = pl->q[SC_SM(pg, s, mb)];
            if (q <= 0)
                continue;
            ri->records++;
            ri->count[d]++;
            ri->units += q * sc_rec_units(pg, s, mb);
            ri->time += q * sc_op_cost_mb(pg, SC_OP_R, s, mb);
        }
    }
}

sc_status sc_recompute_plan(sc_prog *pg, const sc_times *base, const double *levels)
{
    sc_prog_free_recompute_info(pg);
    int P = pg->P, maxc = 1;
    size_t SM = (size_t)pg->S * (size_t)pg->m, N = base->offset[P];
    double span = 0;
    for (size_t i = 0; i < N; i++)
        span = fmax(span, base->t1[i]);
    for (int d = 0; d < P; d++)
        maxc = pg->nchunks[d] > maxc ? pg->nchunks[d] : maxc;
    plan pl = {pg, base, sc_calloc(SM, sizeof(double)), sc_calloc(SM, sizeof(double)),
               sc_calloc((size_t)maxc, sizeof(int)), 1e-9 * (1 + span)};
    sc_recompute_info *ri = pg->rc_info = sc_calloc(1, sizeof *ri);
    sc_status st = SC_OK;
    if (!pl.q || !pl.life || !pl.rank || !ri ||
        !(ri->base_peak = sc_calloc((size_t)P, sizeof(double))) ||
        !(ri->level = sc_calloc((size_t)P, sizeof(double))) ||
        !(ri->count = sc_calloc((size_t)P, sizeof(int)))) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory planning the recomputation");
        goto fail;
    }
    int worst = -1;
    double wbase = 0, wshort = 0;
    for (int d = 0; d < P && st == SC_OK; d++) {
        rank_chunks(&pl, d);
        ri->base_peak[d] = peak_of(&pl, d); /* q is 0 here */
        double L = 0;
        if (levels)
            L = levels[d];
        else if (pg->rc.policy == SC_RECOMPUTE_ALL)
            L = pg->nchunks[d];
        else if (pg->rc.policy == SC_RECOMPUTE_SELECTIVE)
            L = fmin(pg->rc.chunks, pg->nchunks[d]);
        if (pg->rc.policy == SC_RECOMPUTE_BUDGET && !levels) {
            double b0, short_of;
            budget_device(&pl, d, &L, &b0, &short_of);
            if (short_of > wshort)
                worst = d, wbase = b0, wshort = short_of;
        } else if (pg->rc.policy == SC_RECOMPUTE_TABLE && !levels) {
            st = table_device(&pl, d);
        } else {
            assign_level(&pl, d, L);
        }
        ri->level[d] = L;
    }
    if (st == SC_OK && worst >= 0) /* the device that needs the most */
        st = sc_fail_cap(pg,
                         "recompute 'budget': d%d cannot get under mem = %g: its peak is %g "
                         "units without recomputation and %g with every record's %g "
                         "recomputed; it needs mem >= %g",
                         worst, pg->rc.mem, wbase, wshort, pg->rc.frac, wshort);
    if (st != SC_OK)
        goto fail;
    for (int d = 0; d < P && st == SC_OK; d++) {
        count_device(&pl, ri, d);
        if ((st = rewrite(&pl, d)) != SC_OK)
            st = sc_fail(pg, SC_ERR_NOMEM, "out of memory planning the recomputation");
    }
    if (st != SC_OK)
        goto fail;
    sc_free(pl.life);
    sc_free(pl.rank);
    pg->rc_q = pl.q;
    return SC_OK;
fail:
    sc_free(pl.q);
    sc_free(pl.life);
    sc_free(pl.rank);
    sc_prog_free_recompute_info(pg);
    return st;
}
