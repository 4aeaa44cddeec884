/*
 * pairing.c — joining a device's neighbouring F and B into overlapped pairs
 * where the cost model gains (pairing.h).
 */
#include "pairing.h"
#include "dataflow.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <math.h>
#include <string.h>

double sc_prog_pair_gain(const sc_prog *pg)
{
    double g = 0;
    for (int s = 0; s < pg->S; s++) {
        if (pg->tfb[s] == pg->tfb[s])
            g = fmax(g, pg->tf[s] + pg->tb[s] - pg->tfb[s]);
        g = fmax(g, fmin(pg->ta[s], pg->tf[s])); /* what a pair can hide */
        g = fmax(g, pg->ta[s] - sc_prog_ep_link_time(pg, s)); /* and a latency */
    }
    return g;
}

/* The makespan of the orders' dataflow timing, or -1 for a cycle. */
static double makespan(sc_prog *pg, double *start, double *end, size_t n)
{
    char keep[sizeof pg->err];
    memcpy(keep, pg->err, sizeof keep);
    sc_status st = sc_dataflow(pg, start, end, NULL);
    memcpy(pg->err, keep, sizeof keep); /* a cycle is a refused pair, not an error */
    if (st != SC_OK)
        return -1;
    double mk = 0;
    for (size_t i = 0; i < n; i++)
        mk = end[i] > mk ? end[i] : mk;
    return mk;
}

/* Device d's peak memory over its order (memory follows the order alone:
 * a pair's F half counted before its backward half frees). */
static double peak_of(const sc_prog *pg, int d)
{
    double cur = 0, peak = 0;
    const sc_vec *ov = &pg->order[d];
    for (size_t k = 0; k < ov->n; k++) {
        const sc_instr *in = &ov->v[k];
        peak = fmax(peak, cur + sc_instr_mem_rise(pg, in));
        cur += sc_pass_mem(pg, in);
        peak = fmax(peak, cur);
    }
    return peak;
}

/* Whether a and b (neighbours on one device) can be a pair: a forward and
 * a backward of stage passes, neither of which needs the other directly
 * (a last stage's backward needs its own F). What needs the other through
 * another device shows as a cycle of the timing. */
static int joinable(const sc_prog *pg, const sc_instr *a, const sc_instr *b, sc_instr *out)
{
    const sc_instr *f = sc_op_is_fwd(a->op) ? a : b, *k = f == a ? b : a;
    if (!sc_op_is_compute(a->op) || !sc_op_is_compute(b->op) || !sc_op_is_fwd(f->op) ||
        !sc_op_is_bgrad(k->op) || ((a->flags | b->flags) & (SC_IF_ROLLBACK | SC_IF_REDO_IN)))
        return 0;
    int dop, ds;
    if (sc_pass_dep(pg, k, &dop, &ds) && dop == SC_OP_F && ds == f->stage && k->mb == f->mb)
        return 0;
    *out = sc_pair_make(f->stage, f->mb, k->op, k->stage, k->mb);
    return 1;
}

sc_status sc_pair_greedy(sc_prog *pg, double mem_limit, int *npairs)
{
    if (npairs)
        *npairs = 0;
    size_t n = 0;
    for (int d = 0; d < pg->P; d++)
        n += pg->order[d].n;
    if (n > SC_PAIR_MAX_PASSES || n == 0 || sc_prog_pair_gain(pg) <= 0)
        return SC_OK; /* nothing to gain */
    double *start = sc_malloc((n + 1) * sizeof(double)), *end = sc_malloc((n + 1) * sizeof(double));
    if (!start || !end) {
        sc_free(start);
        sc_free(end);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory pairing passes");
    }
    sc_status st = SC_OK;
    double best = makespan(pg, start, end, n);
    int made = 0;
    sc_instr *keep = NULL;
    size_t most = 0;
    for (int d = 0; d < pg->P; d++)
        most = pg->order[d].n > most ? pg->order[d].n : most;
    if (!(keep = sc_malloc((most + 1) * sizeof(sc_instr)))) {
        sc_free(start);
        sc_free(end);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory pairing passes");
    }
    for (int d = 0; d < pg->P && best >= 0; d++) {
        sc_vec *ov = &pg->order[d];
        for (size_t k = 0; k + 1 < ov->n; k++) {
            /* The pass at k with the next one, or with the first pass
             * after W's only (the W's then run after the pair: they need
             * nothing the pair makes, and wait no longer than before). */
            size_t j = k + 1;
            while (j < ov->n && j < k + 1 + SC_PAIR_LOOKAHEAD && sc_op_is_wgrad(ov->v[j].op) &&
                   !sc_op_is_bgrad(ov->v[j].op) && sc_op_is_compute(ov->v[k].op) &&
                   !sc_op_is_fwd(ov->v[j].op))
                j++;
            sc_instr p;
            if (j >= ov->n || !joinable(pg, &ov->v[k], &ov->v[j], &p))
                continue;
            size_t len = ov->n - k;
            memcpy(keep, &ov->v[k], len * sizeof(sc_instr));
            /* try it: the pair at k, the W's between after it, the rest up */
            ov->v[k] = p;
            memcpy(&ov->v[k + 1], &keep[1], (j - k - 1) * sizeof(sc_instr));
            memcpy(&ov->v[j], &keep[j - k + 1], (len - (j - k) - 1) * sizeof(sc_instr));
            ov->n--;
            double mk = makespan(pg, start, end, n - (size_t)made - 1);
            if (mk >= 0 && mk <= best + 1e-12 * fmax(1, best) &&
                peak_of(pg, d) <= mem_limit + 1e-9) {
                best = mk;
                made++;
                continue;
            }
            ov->n++; /* back as they were */
            memcpy(&ov->v[k], keep, len * sizeof(sc_instr));
        }
    }
    sc_free(keep);
    if (made)
        sc_prog_invalidate(pg);
    if (npairs)
        *npairs = made;
    sc_free(start);
    sc_free(end);
    return st;
}
