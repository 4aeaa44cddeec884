/*
 * capfit.c — forwards that wait for memory (capfit.h).
 */
#include "capfit.h"
#include "dataflow.h"
#include "reorder.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <math.h>
#include <string.h>

#define EPS 1e-9

/* The tables of one fit, over the orders as given. */
typedef struct fit {
    sc_prog *pg;
    char *doneF, *doneB; /* [S m] the record's F, its B (or BW) has been placed */
    size_t *posB;        /* [S m] index of the B (or BW) in its device's order */
    char *done;          /* [n] of the device being fitted */
    size_t *freeing;     /* [n] indices of the passes that free memory, in order */
} fit;

/* Whether pass `y` of device d can run before the waiting forward: its
 * record's F and the F of every later stage of this device for the same
 * microbatch have been placed. */
static int movable(const fit *f, int d, const sc_instr *y)
{
    const sc_prog *pg = f->pg;
    int c0 = pg->chunk[y->stage];
    for (int c = c0; c < pg->nchunks[d]; c++)
        if (!f->doneF[SC_SM(pg, pg->dev_stages[d][c], y->mb)])
            return 0;
    return 1;
}

static void place(fit *f, const sc_instr *in, size_t k, sc_instr *out, size_t *n, double *level,
                  double *peak)
{
    sc_prog *pg = f->pg;
    size_t sm = SC_SM(pg, in->stage, in->mb);
    out[(*n)++] = *in;
    f->done[k] = 1;
    if (sc_op_is_fwd(in->op))
        f->doneF[sm] = 1;
    if (sc_op_is_bgrad(in->op))
        f->doneB[sm] = 1;
    *level += sc_pass_mem(pg, in);
    if (*level > *peak)
        *peak = *level;
}

/* Moves the freeing pass at index j (with the passes it needs) to the end
 * of out. */
static void pull(fit *f, int d, const sc_instr *v, size_t j, sc_instr *out, size_t *n,
                 double *level, double *peak)
{
    sc_prog *pg = f->pg;
    const sc_instr *y = &v[j];
    for (int c = pg->nchunks[d] - 1; c > pg->chunk[y->stage]; c--) {
        size_t sm = SC_SM(pg, pg->dev_stages[d][c], y->mb);
        if (!f->doneB[sm])
            place(f, &v[f->posB[sm]], f->posB[sm], out, n, level, peak);
    }
    size_t sm = SC_SM(pg, y->stage, y->mb);
    if (!sc_op_is_bgrad(y->op) && !f->doneB[sm])
        place(f, &v[f->posB[sm]], f->posB[sm], out, n, level, peak);
    place(f, y, j, out, n, level, peak);
}

/* Fits device d's order v[0..n) under cap into out; returns its peak. */
static double fit_device(fit *f, int d, const sc_instr *v, size_t n, double cap, sc_instr *out)
{
    sc_prog *pg = f->pg;
    size_t nf = 0, head = 0, got = 0;
    memset(f->done, 0, n);
    for (size_t k = 0; k < n; k++) {
        size_t sm = SC_SM(pg, v[k].stage, v[k].mb);
        if (sc_op_is_bgrad(v[k].op))
            f->posB[sm] = k;
        if (sc_pass_mem(pg, &v[k]) < 0)
            f->freeing[nf++] = k;
    }
    double level = 0, peak = 0;
    for (size_t k = 0; k < n;) {
        if (f->done[k]) {
            k++;
            continue;
        }
        const sc_instr *x = &v[k];
        double a = sc_pass_mem(pg, x);
        if (a > 0 && level + a > cap + EPS * (1 + cap)) {
            while (head < nf && f->done[f->freeing[head]])
                head++;
            size_t j = n; /* none */
            for (size_t i = head; i < nf; i++) {
                size_t c = f->freeing[i];
                if (c > k && !f->done[c] && movable(f, d, &v[c])) {
                    j = c;
                    break;
                }
            }
            if (j < n) {
                pull(f, d, v, j, out, &got, &level, &peak);
                continue;
            }
        }
        place(f, x, k, out, &got, &level, &peak);
        k++;
    }
    return peak;
}

/* Fits every device under caps (NULL: 0 on every device) into dst (the
 * orders' concatenation); peaks into peak[P]. */
static void fit_all(fit *f, const double *caps, sc_instr *dst, double *peak)
{
    sc_prog *pg = f->pg;
    size_t SM = (size_t)pg->S * (size_t)pg->m, at = 0;
    memset(f->doneF, 0, SM);
    memset(f->doneB, 0, SM);
    for (int d = 0; d < pg->P; d++) {
        const sc_vec *o = &pg->order[d];
        peak[d] = fit_device(f, d, o->v, o->n, caps ? caps[d] : 0, dst + at);
        at += o->n;
    }
}

/* Puts the concatenated orders src into the program; 1 when they form no
 * cycle across devices (0: cycle, -1: out of memory). */
static int install(sc_prog *pg, const sc_instr *src, double *times)
{
    size_t at = 0;
    for (int d = 0; d < pg->P; d++) {
        memcpy(pg->order[d].v, src + at, pg->order[d].n * sizeof *src);
        at += pg->order[d].n;
    }
    sc_prog_invalidate(pg);
    sc_status st = sc_dataflow(pg, times, times + at, NULL);
    if (st == SC_ERR_NOMEM)
        return -1;
    pg->err[0] = 0;
    return st == SC_OK;
}

sc_status sc_cap_fit(sc_prog *pg)
{
    int P = pg->P, finite = 0;
    for (int d = 0; d < P; d++)
        finite |= isfinite(sc_prog_mem_cap(pg, d));
    if (!finite)
        return SC_OK;
    size_t N = 0, maxn = 0, SM = (size_t)pg->S * (size_t)pg->m;
    for (int d = 0; d < P; d++) {
        N += pg->order[d].n;
        maxn = pg->order[d].n > maxn ? pg->order[d].n : maxn;
    }
    fit f = {pg, sc_calloc(SM, 1), sc_calloc(SM, 1), sc_malloc(SM * sizeof(size_t)),
             sc_malloc(maxn + 1), sc_malloc((maxn + 1) * sizeof(size_t))};
    sc_instr *given = sc_malloc((N + 1) * sizeof *given), *cand = sc_malloc((N + 1) * sizeof *cand);
    double *caps = sc_malloc((size_t)P * sizeof *caps), *peak = sc_malloc((size_t)P * sizeof *peak);
    double *times = sc_malloc(2 * (N + 1) * sizeof *times);
    sc_free(pg->cap_need);
    pg->cap_need = sc_malloc((size_t)P * sizeof(double));
    sc_status st = SC_OK;
    if (!f.doneF || !f.doneB || !f.posB || !f.done || !f.freeing || !given || !cand || !caps ||
        !peak || !times || !pg->cap_need) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory fitting the orders to mem");
        goto done;
    }
    size_t at = 0;
    for (int d = 0; d < P; d++) {
        memcpy(given + at, pg->order[d].v, pg->order[d].n * sizeof *given);
        at += pg->order[d].n;
        caps[d] = sc_prog_mem_cap(pg, d);
    }
    /* What each device needs at least: every forward waits as long as it can. */
    fit_all(&f, NULL, cand, pg->cap_need);
    fit_all(&f, caps, cand, peak);
    int ok = install(pg, cand, times);
    if (ok == 0 && sc_prog_mem_per_device(pg)) { /* the smallest cap everywhere */
        for (int d = 0; d < P; d++)
            caps[d] = pg->mem_limit;
        fit_all(&f, caps, cand, peak);
        ok = install(pg, cand, times);
    }
    if (ok == 0)
        ok = install(pg, given, times) < 0 ? -1 : 1; /* as given: the check refuses */
    else if (ok > 0 && memcmp(given, cand, N * sizeof *given) != 0) {
        /* The waits cost idle time: the reorder of blocks fills it, within
         * the caps (reorder.h). */
        int within = 1;
        for (int d = 0; d < P; d++)
            within &= peak[d] <= caps[d] + EPS * (1 + caps[d]);
        if (within && (st = sc_reorder(pg, caps, NULL, 0)) != SC_OK)
            goto done;
    }
    if (ok < 0)
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory fitting the orders to mem");
done:
    sc_free(f.doneF);
    sc_free(f.doneB);
    sc_free(f.posB);
    sc_free(f.done);
    sc_free(f.freeing);
    sc_free(given);
    sc_free(cand);
    sc_free(caps);
    sc_free(peak);
    sc_free(times);
    return st;
}

void sc_order_peaks(const sc_prog *pg, double *peak)
{
    for (int d = 0; d < pg->P; d++) {
        double cur = 0, top = 0;
        for (size_t k = 0; k < pg->order[d].n; k++) {
            cur += sc_pass_mem(pg, &pg->order[d].v[k]);
            top = fmax(top, cur);
        }
        peak[d] = top;
    }
}
