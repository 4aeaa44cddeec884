/*
 * order.c — planning the order of microbatches of different lengths
 * (order.h).
 */
#include "plan/order.h"

#include "ir/alloc.h"
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *sc_len_order_name(int o)
{
    static const char *const names[] = {
#define X(name, text) text,
        SC_LORDERS(X)
#undef X
    };
    return o >= 0 && o < SC_LORDER_COUNT ? names[o] : "?";
}

static int longer(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

void sc_len_order_apply(int o, const double *given, int m, double *out)
{
    if (o == SC_LORDER_GIVEN) {
        memcpy(out, given, (size_t)m * sizeof *out);
        return;
    }
    double *d = out; /* descending, then arranged in place from a copy */
    memcpy(d, given, (size_t)m * sizeof *d);
    qsort(d, (size_t)m, sizeof *d, longer);
    if (o == SC_LORDER_LONGEST)
        return;
    if (o == SC_LORDER_SHORTEST) {
        for (int i = 0, j = m - 1; i < j; i++, j--) {
            double t = d[i];
            d[i] = d[j], d[j] = t;
        }
        return;
    }
    double *c = sc_malloc((size_t)m * sizeof *c);
    if (!c)
        return; /* longest first: still a permutation */
    memcpy(c, d, (size_t)m * sizeof *c);
    if (o == SC_LORDER_VALLEY) { /* the shortest at both ends, the longest in the middle */
        int lo = 0, hi = m - 1;
        for (int i = m - 1; i >= 0; i--) /* shortest first into the ends */
            d[(m - 1 - i) % 2 ? hi-- : lo++] = c[i];
    } else { /* zigzag: alternate the longest and the shortest left */
        int lo = 0, hi = m - 1, k = 0, from_long = o == SC_LORDER_ZIGZAG;
        while (lo <= hi) {
            d[k++] = from_long ? c[lo++] : c[hi--];
            from_long = !from_long;
        }
    }
    sc_free(c);
}

void sc_len_order_free(sc_len_order *o)
{
    if (!o)
        return;
    sc_free(o->lengths);
    o->lengths = NULL;
}

sc_status sc_len_order_plan(sc_prog *pg, sc_len_order *out)
{
    memset(out, 0, sizeof *out);
    const double *len = sc_prog_lengths(pg);
    int m = sc_prog_microbatches(pg);
    if (!len)
        return SC_ERR_ARG;
    double *given = sc_malloc((size_t)m * sizeof *given);
    double *cur = sc_malloc((size_t)m * sizeof *cur);
    out->lengths = sc_malloc((size_t)m * sizeof *out->lengths);
    out->m = m;
    sc_status st = SC_OK;
    if (!given || !cur || !out->lengths) {
        st = SC_ERR_NOMEM;
        goto exit;
    }
    memcpy(given, len, (size_t)m * sizeof *given);
    out->best = SC_LORDER_GIVEN;
    for (int o = 0; o < SC_LORDER_COUNT; o++) {
        out->makespan[o] = INFINITY;
        sc_len_order_apply(o, given, m, cur);
        if ((st = sc_prog_set_lengths(pg, cur, m)) != SC_OK)
            goto exit;
        sc_sim *sim = NULL;
        st = sc_simulate(pg, &sim);
        if (st == SC_OK)
            out->makespan[o] = sim->makespan;
        sc_sim_free(sim);
        if (st != SC_OK && !(st == SC_ERR_PROGRAM && sc_prog_cap_refused(pg)))
            goto exit; /* not the cap's refusal: the program's own error */
        st = SC_OK;
        /* strictly faster (by more than rounding) than the best so far */
        if (out->makespan[o] < out->makespan[out->best] * (1 - 1e-12)) {
            out->best = o;
            memcpy(out->lengths, cur, (size_t)m * sizeof *cur);
        } else if (o == SC_LORDER_GIVEN) {
            memcpy(out->lengths, cur, (size_t)m * sizeof *cur);
        }
    }
    /* Swaps of neighbours from the best order, kept while they gain. */
    out->final = out->makespan[out->best];
    memcpy(cur, out->lengths, (size_t)m * sizeof *cur);
    for (int pass = 0; pass < 2 && isfinite(out->final); pass++)
        for (int i = 0; i + 1 < m; i++) {
            if (cur[i] == cur[i + 1])
                continue;
            double t = cur[i];
            cur[i] = cur[i + 1], cur[i + 1] = t;
            double ms = INFINITY;
            if ((st = sc_prog_set_lengths(pg, cur, m)) != SC_OK)
                goto exit;
            sc_sim *sim = NULL;
            st = sc_simulate(pg, &sim);
            if (st == SC_OK)
                ms = sim->makespan;
            sc_sim_free(sim);
            if (st != SC_OK && !(st == SC_ERR_PROGRAM && sc_prog_cap_refused(pg)))
                goto exit;
            st = SC_OK;
            if (ms < out->final * (1 - 1e-12)) {
                out->final = ms;
                out->swaps++;
                memcpy(out->lengths, cur, (size_t)m * sizeof *cur);
            } else { /* back */
                cur[i + 1] = cur[i], cur[i] = t;
            }
        }
    st = sc_prog_set_lengths(pg, out->lengths, m);
    if (st == SC_OK) { /* lowered and verified again in the order found */
        sc_sim *sim = NULL;
        st = sc_simulate(pg, &sim);
        sc_sim_free(sim);
    }
exit:
    if (st != SC_OK && given) /* as it came */
        sc_prog_set_lengths(pg, given, m);
    sc_free(given);
    sc_free(cur);
    if (st != SC_OK)
        sc_len_order_free(out);
    return st;
}
