/*
 * exact_lb.c — a lower bound of the exact optimum's own (exact_impl.h,
 * docs/bound.md#the-memory-fill): the memory cap of a device counts the
 * records of all its stages, and while none of them can be freed the
 * device runs at most K forwards; the rest of that time it waits.
 *
 * For device d, with K the most records its cap holds (cap over the
 * smallest record), H its head (the earliest an F can start on it) and
 * work its passes' time:
 *   - the i-th B of stage s to end ends at least fs(s) + C(s) + i·max(cF,
 *     cB) after 0 (the i-th F starts at fs + i·cF at the earliest, and its
 *     B ends a round trip C later; the Bs run one at a time), the i-th W a
 *     cW after that; a record is freed at its B (at its W when w_keep = 1);
 *   - after the (K + j)-th F of d ends, at most K records are live, so j
 *     have been freed: it ends at or after the j-th free event, E_j, which
 *     is at least e_j, the j-th smallest of the bounds above;
 *   - so within [H, e_j) the device runs at most K + j - 1 Fs, the Bs and
 *     Ws whose bounds are below e_j, and one pass that runs past e_j; the
 *     rest of [H, e_j) is idle, and makespan >= H + idle + work.
 * The memory drain (docs/bound.md#the-memory-drain) is the same from the
 * end: the k-th last F of d ends at least g_k before the end (the k-th
 * smallest of tF(s) + i·max(cF, cB), tF the least time from the end of an
 * F of s to the end); in the last g_k at most k - 1 Fs end, and at most
 * K + k - 1 Bs and Ws (the records live at its start and those Fs'), the
 * rest of it is idle. Where the passes the two windows may hold cannot
 * fill d's work, they are disjoint and both idle times count.
 * The bound is the largest over devices and pairs (j, k).
 */
#include "exact_impl.h"
#include "ir/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Per stage: its shortest passes, the start of its first F (fs) and its
 * round trip C (F of s to the end of B of s). */
typedef struct stage_lb {
    double cF, cB, cW, fs, C;
    double tF; /* from the end of an F of s to the end of the schedule, at the least */
    double mB, mW; /* its longest B and W (what the device may run) */
} stage_lb;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stage_times(const model *md, stage_lb *st)
{
    const sc_prog *pg = md->pg;
    int S = md->S, m = md->m;
    double *comm = sc_calloc((size_t)S, sizeof *comm); /* comm[s]: s to s+1 (NULL: 0) */
    for (int s = 0; s < S; s++) {
        stage_lb *t = &st[s];
        t->cF = t->cB = t->cW = INFINITY;
        t->mB = t->mW = 0;
        for (int mb = 0; mb < m; mb++) {
            int r = s * m + mb;
            t->cF = fmin(t->cF, md->d[3 * r]);
            t->cB = fmin(t->cB, md->d[3 * r + 1]);
            t->cW = fmin(t->cW, pass_used(md, 3 * r + 2) ? md->d[3 * r + 2] : 0);
            t->mB = fmax(t->mB, md->d[3 * r + 1]);
            t->mW = fmax(t->mW, pass_used(md, 3 * r + 2) ? md->d[3 * r + 2] : 0);
            if (comm && s + 1 < S && md->dev[3 * r] != md->dev[3 * (r + m)])
                comm[s] = mb ? fmin(comm[s], sc_prog_msg_time(pg, mb)) : sc_prog_msg_time(pg, mb);
        }
    }
    for (int s = 0; s < S; s++)
        st[s].fs = s ? st[s - 1].fs + st[s - 1].cF + (comm ? comm[s - 1] : 0) : 0;
    double back = 0; /* from F of s to the end of B of s, built from the last stage */
    for (int s = S - 1; s >= 0; s--) {
        back += st[s].cF + st[s].cB + (s + 1 < S && comm ? 2 * comm[s] : 0);
        st[s].C = back;
    }
    double R = 0; /* from the end of B of s to the end: its W, or the Bs down to stage 0 */
    for (int s = 0; s < S; s++) {
        R = s ? R + st[s - 1].cB + (comm ? comm[s - 1] : 0) : 0;
        R = fmax(R, st[s].cW);
        st[s].tF = st[s].C - st[s].cF + R;
    }
    sc_free(comm);
}

/* How many k in 0 .. m-1 have k·step < room. */
static double below(double room, double step, int m)
{
    if (room <= 1e-9) /* a bound at e (rounded): that pass ends at e at the earliest, the one
                       * pass the window counts at its end */
        return 0;
    if (!(step > 0))
        return m;
    double k = ceil(room / step);
    return k < m ? k : m;
}

/* Device d's passes: what both windows need. */
typedef struct dev_lb {
    int nf;                                /* its F passes (= its records) */
    double K, H, work, fmax, pmax, mB, mW; /* mB, mW: its longest B and W */
    int by_w;                              /* a record is freed at its W (else at its B) */
} dev_lb;

/* Fills dv and the bounds of d's free events (ev, sorted: e_1 <= e_2 ...)
 * and of its F passes' distance to the end (tl, sorted). 0: no cap. */
static int device_events(const model *md, const stage_lb *st, int d, dev_lb *dv, double *ev,
                         double *tl)
{
    const sc_prog *pg = md->pg;
    int m = md->m;
    double cap = sc_prog_mem_cap(pg, d), umin = INFINITY;
    memset(dv, 0, sizeof *dv);
    dv->H = INFINITY;
    dv->by_w = !md->fold && sc_prog_w_keep(pg) >= 1 - 1e-12;
    for (int i = 0; i < md->n; i++) {
        if (md->dev[i] != d || !pass_used(md, i))
            continue;
        int s = (i / 3) / m, k = (i / 3) % m;
        dv->work += md->d[i];
        dv->pmax = fmax(dv->pmax, md->d[i]);
        if (i % 3 == 1)
            dv->mB = fmax(dv->mB, md->d[i]);
        if (i % 3 == 2)
            dv->mW = fmax(dv->mW, md->d[i]);
        if (i % 3)
            continue;
        dv->fmax = fmax(dv->fmax, md->d[i]);
        umin = fmin(umin, sc_prog_rec_units(pg, s, k));
        dv->H = fmin(dv->H, st[s].fs);
        double step = fmax(st[s].cF, st[s].cB); /* the k-th free event of s, at the earliest */
        double eB = st[s].fs + st[s].C + k * step;
        ev[dv->nf] = dv->by_w ? eB + st[s].cW : eB;
        tl[dv->nf++] = st[s].tF + k * step; /* the k-th last F of s ends this before the end */
    }
    if (!isfinite(cap) || !(umin > 0) || !dv->nf)
        return 0;
    dv->K = floor(cap / umin * (1 + 1e-9) + 1e-9);
    qsort(ev, (size_t)dv->nf, sizeof *ev, cmp_double);
    qsort(tl, (size_t)dv->nf, sizeof *tl, cmp_double);
    return 1;
}

/* The fill window [H, e_j): at most K + j - 1 whole Fs, the Bs and Ws
 * whose bounds lie below e_j and one pass across e_j run in it; their time
 * in busy[j-1], the window's length less it in idle[j-1] (docs/bound.md#the-memory-fill). */
static int fill_window(const model *md, const stage_lb *st, int d, const dev_lb *dv,
                       const double *ev, double *busy, double *idle)
{
    int S = md->S, m = md->m, nj = 0;
    for (int j = 1; j <= dv->nf && dv->K + j <= dv->nf && j <= 4096; j++, nj++) {
        double e = ev[j - 1], b = (dv->K + j - 1) * dv->fmax + dv->pmax;
        for (int s = 0; s < S; s++) { /* the Bs and Ws of d that can end before e */
            if (md->dev[3 * s * m] != d)
                continue;
            double eB = st[s].fs + st[s].C, step = fmax(st[s].cF, st[s].cB);
            b += st[s].mB * below(e - eB, step, m);
            b += st[s].mW * below(e - eB - st[s].cW, step, m);
        }
        busy[nj] = b;
        idle[nj] = e - dv->H - b;
    }
    return nj;
}

/* The drain window (ms - g_k, ms], g_k the k-th smallest distance of an F
 * to the end: at most k - 1 Fs end in it, so at most K + k - 1 records are
 * freed in it (the live ones at its start and those Fs'), and every pass
 * in it ends in it: k - 1 Fs, K + k - 1 Bs, and as many Ws when W frees
 * the record (else all of d's Ws) (docs/bound.md#the-memory-drain). */
static int drain_window(const dev_lb *dv, const double *tl, double *busy, double *idle)
{
    int nk = 0;
    for (int k = 1; k <= dv->nf && k <= 4096; k++, nk++) {
        double r = fmin(dv->K + k - 1, dv->nf), b = (k - 1) * dv->fmax + r * dv->mB;
        b += (dv->by_w ? r : dv->nf) * dv->mW; /* W frees the record, or Ws run anywhere */
        busy[nk] = b;
        idle[nk] = tl[k - 1] - b;
    }
    return nk;
}

/* Device d's bound (0: none); ev, tl: scratch of S·m doubles each; bf, idf,
 * bd, idd: of 4096 + 1 each. Where the windows' passes cannot fill d's work
 * the windows are disjoint and both idle times count. */
static double device_lb(const model *md, const stage_lb *st, int d, double *ev, double *tl,
                        double *sc)
{
    dev_lb dv;
    if (!device_events(md, st, d, &dv, ev, tl))
        return 0;
    double *bf = sc, *idf = sc + 4097, *bd = sc + 2 * 4097, *idd = sc + 3 * 4097, best = 0;
    int nj = fill_window(md, st, d, &dv, ev, bf, idf);
    int nk = drain_window(&dv, tl, bd, idd);
    for (int j = 0; j < nj; j++)
        if (ev[j] > dv.H)
            best = fmax(best, idf[j]);
    for (int k = 0; k < nk; k++) {
        if (!(idd[k] > 0))
            continue;
        if (dv.work > bd[k])
            best = fmax(best, idd[k]);
        for (int j = 0; j < nj; j++)
            if (ev[j] > dv.H && idf[j] > 0 && dv.work > bf[j] + bd[k])
                best = fmax(best, idf[j] + idd[k]);
    }
    return best > 0 ? dv.H + best + dv.work : 0;
}

double sc_exact_memory_lb(const model *md)
{
    int P = sc_prog_devices(md->pg);
    stage_lb *st = sc_calloc((size_t)md->S, sizeof *st);
    double *ev = sc_calloc((size_t)md->n / 3 + 1, sizeof *ev), lb = 0;
    double *tl = sc_calloc((size_t)md->n / 3 + 1, sizeof *tl);
    double *sc = sc_calloc(4 * 4097, sizeof *sc);
    if (st && ev && tl && sc) {
        stage_times(md, st);
        for (int d = 0; d < P; d++)
            lb = fmax(lb, device_lb(md, st, d, ev, tl, sc));
    }
    sc_free(st), sc_free(ev), sc_free(tl), sc_free(sc);
    return lb * (1 - 1e-12); /* rounding never lifts it above a schedule */
}
