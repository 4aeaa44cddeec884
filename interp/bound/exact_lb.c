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
 * The bound is the largest over devices and j.
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
    sc_free(comm);
}

/* How many k in 0 .. m-1 have k·step < room. */
static double below(double room, double step, int m)
{
    if (room <= 0)
        return 0;
    if (!(step > 0))
        return m;
    double k = ceil(room / step);
    return k < m ? k : m;
}

/* Device d's bound (0: none); ev: scratch of 2·m·S doubles. */
static double device_lb(const model *md, const stage_lb *st, int d, double *ev)
{
    const sc_prog *pg = md->pg;
    int S = md->S, m = md->m, nf = 0, ne = 0;
    double cap = sc_prog_mem_cap(pg, d), umin = INFINITY, H = INFINITY, work = 0;
    double fmax_ = 0, pmax = 0;
    int by_w = !md->fold && sc_prog_w_keep(pg) >= 1 - 1e-12;
    for (int i = 0; i < md->n; i++) {
        if (md->dev[i] != d || !pass_used(md, i))
            continue;
        int s = (i / 3) / m;
        work += md->d[i];
        pmax = fmax(pmax, md->d[i]);
        if (i % 3 == 0) {
            nf++;
            fmax_ = fmax(fmax_, md->d[i]);
            umin = fmin(umin, sc_prog_rec_units(pg, s, (i / 3) % m));
            H = fmin(H, st[s].fs);
            int k = (i / 3) % m; /* the k-th free event of stage s, at the earliest */
            double eB = st[s].fs + st[s].C + k * fmax(st[s].cF, st[s].cB);
            ev[ne++] = by_w ? eB + st[s].cW : eB;
        }
    }
    if (!isfinite(cap) || !(umin > 0) || !nf)
        return 0;
    double K = floor(cap / umin * (1 + 1e-9) + 1e-9), best = 0;
    qsort(ev, (size_t)ne, sizeof *ev, cmp_double);
    for (int j = 1; j <= ne && K + j <= nf && j <= 4096; j++) {
        double e = ev[j - 1], busy = (K + j - 1) * fmax_ + pmax;
        if (e <= H)
            continue;
        for (int s = 0; s < S; s++) { /* the Bs and Ws of d that can end before e */
            if (md->dev[3 * s * m] != d)
                continue;
            double eB = st[s].fs + st[s].C, step = fmax(st[s].cF, st[s].cB);
            busy += st[s].mB * below(e - eB, step, m);
            busy += st[s].mW * below(e - eB - st[s].cW, step, m);
        }
        if (e - H - busy > best)
            best = e - H - busy;
    }
    return best > 0 ? H + best + work : 0;
}

double sc_exact_memory_lb(const model *md)
{
    int P = sc_prog_devices(md->pg);
    stage_lb *st = sc_calloc((size_t)md->S, sizeof *st);
    double *ev = sc_calloc((size_t)md->n / 3 + 1, sizeof *ev), lb = 0;
    if (st && ev) {
        stage_times(md, st);
        for (int d = 0; d < P; d++)
            lb = fmax(lb, device_lb(md, st, d, ev));
    }
    sc_free(st), sc_free(ev);
    return lb * (1 - 1e-12); /* rounding never lifts it above a schedule */
}
