/*
 * ptrace_check.c — a trace's steps beside their prediction (ptrace.h,
 * sc_ptrace_check): the schedule the traces ran, rebuilt from the actions
 * of their first step as PyTorch's CSV (torchcsv.h), timed by the
 * simulator with the traces' own costs, against every step the traces
 * measured. Linear in the spans, after one sort of them.
 */
#include "ptrace_impl.h"
#include "errbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "ir/alloc.h"
#include "sim/sim.h"
#include "torchcsv.h"

/* The CSV of step 0 (sp by device and time): every action of the runtime
 * (compute_comms), or the passes alone of a single-stage schedule
 * (compute_only: stagecraft adds the transfers). A cell is at most 48
 * bytes: room for every span and a newline per device. */
static char *step_csv(const sc_ptrace *t, const pt_span *sp, int n, size_t *len)
{
    size_t cap = (size_t)n * 48 + (size_t)t->ndev + 1, at = 0;
    char *s = sc_malloc(cap);
    if (!s)
        return NULL;
    int dev = 0, cells = 0;
    for (int i = 0; i <= n; i++) {
        const pt_span *p = i < n ? &sp[i] : NULL;
        while (dev < t->ndev && (!p || p->dev > dev)) { /* the rows up to p's device */
            s[at++] = '\n';
            dev++, cells = 0;
        }
        if (!p || p->step != 0 || (t->single && !pt_pass(p->kind)))
            continue;
        char name[96];
        const char *a = p->src == PT_SRC_PP ? sc_pt_span_name(p, name, sizeof name) + 3 : name;
        if (p->src != PT_SRC_PP)
            snprintf(name, sizeof name, "%d%s%d", p->stage, p->kind == PT_F ? "F" : "B", p->mb);
        at += (size_t)snprintf(s + at, cap - at, "%s%s", cells++ ? "," : "", a);
    }
    *len = at;
    return s;
}

/* The schedule of csv with the costs c, simulated: its step into *out. */
static sc_status predict(const char *csv, size_t len, const sc_costs *c, double *out,
                         char *err, size_t errlen)
{
    sc_torch_dialect dialect;
    sc_status st;
    char why[400];
    sc_prog *pg = sc_torchcsv_read(csv, len, &dialect, &st, why, sizeof why);
    if (!pg)
        return st == SC_ERR_NOMEM ? st : sc_errbuf(err, errlen, "the schedule of the traces' "
                                                   "first step, as PyTorch's CSV: %s", why);
    sc_sim *sim = NULL;
    if ((st = sc_costs_apply(c, pg, 0, why, sizeof why)) != SC_OK)
        snprintf(err, errlen, "the traces' costs do not fit their schedule: %s", why);
    else if ((st = sc_check(pg)) != SC_OK || (st = sc_simulate(pg, &sim)) != SC_OK)
        snprintf(err, errlen, "the schedule of the traces' first step: %s", sc_errmsg(pg));
    else
        *out = sim->step;
    sc_sim_free(sim);
    sc_prog_free(pg);
    return st;
}

static int cmp_step(const void *a, const void *b)
{
    const pt_span *x = a, *y = b;
    return x->step != y->step ? (x->step > y->step) - (x->step < y->step) : sc_pt_cmp_dev_time(a, b);
}

/* A step's own prediction: the schedule timed with the costs of its spans
 * sp[0..n) alone (copied into mine, numbered again as the one step of a
 * copy of t), NAN where they make no cost file (a stage of that step
 * without a pass of some kind: a trace cut inside it). The copy shares t's
 * devices, already in order (sc_ptrace_costs puts them in the same order
 * again), and its kernels, already linked to the spans. */
static sc_status own_step(const sc_ptrace *t, const pt_span *sp, int n, pt_span *mine,
                          const char *csv, size_t len, double *out)
{
    sc_ptrace u = *t;
    u.sp = mine, u.n = n, u.cap = n;
    for (int i = 0; i < n; i++) {
        mine[i] = sp[i];
        mine[i].step = -1;
    }
    sc_costs c;
    char note[600], err[512];
    *out = NAN;
    sc_status st = sc_ptrace_costs(&u, &c, 0, note, sizeof note, err, sizeof err);
    if (st == SC_ERR_NOMEM)
        return st;
    if (st != SC_OK)
        return SC_OK;
    st = predict(csv, len, &c, out, err, sizeof err);
    sc_costs_free(&c);
    return st == SC_ERR_NOMEM ? st : SC_OK;
}

sc_status sc_ptrace_check(const sc_ptrace *t, const sc_costs *c, sc_ptrace_checked *out,
                          char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int n = t->n, steps = c->steps;
    pt_span *sp = sc_malloc((size_t)(n ? n : 1) * sizeof *sp);
    pt_span *mine = sc_malloc((size_t)(n ? n : 1) * sizeof *mine);
    double *x = sc_malloc((size_t)(3 * steps + 1) * sizeof *x);
    size_t len = 0;
    char *csv = NULL;
    sc_status st = SC_ERR_NOMEM;
    if (sp && mine && x) {
        if (n > 0) /* NULL and 0 are undefined for memcpy and qsort */
            memcpy(sp, t->sp, (size_t)n * sizeof *sp);
        if (n > 0)
            qsort(sp, (size_t)n, sizeof *sp, sc_pt_cmp_dev_time);
        csv = step_csv(t, sp, n, &len);
    }
    if (csv)
        st = predict(csv, len, c, &out->predicted, err, errlen);
    int own = steps < SC_PTRACE_OWN_STEPS ? steps : SC_PTRACE_OWN_STEPS;
    if (st == SC_OK && !(out->own = sc_malloc((size_t)(own ? own : 1) * sizeof *out->own)))
        st = SC_ERR_NOMEM;
    if (st == SC_OK && n > 0)
        qsort(sp, (size_t)n, sizeof *sp, cmp_step); /* each step's spans together */
    for (int k = 0, i = 0; k < own && st == SC_OK; k++) {
        while (i < n && sp[i].step < k)
            i++;
        int j = i;
        while (j < n && sp[j].step == k)
            j++;
        st = own_step(t, sp + i, j - i, mine, csv, len, &out->own[k]);
    }
    out->nown = st == SC_OK ? own : 0;
    if (st == SC_OK) {
        sc_pt_step_times(t->sp, n, steps, x, x + steps, x + 2 * steps);
        out->steps = x, out->nsteps = steps;
        x = NULL;
        double *y = sc_malloc((size_t)(steps ? steps : 1) * sizeof *y);
        if (!y) {
            st = SC_ERR_NOMEM;
        } else {
            memcpy(y, out->steps, (size_t)steps * sizeof *y);
            out->step = sc_stat_of(y, steps); /* sorts its samples */
            int no = 0;
            for (int k = 0; k < out->nown; k++)
                if (out->own[k] > 0) /* not NAN */
                    y[no++] = out->steps[k] / out->own[k] - 1;
            out->own_error = sc_stat_of(y, no);
            sc_free(y);
        }
    }
    sc_free(csv), sc_free(sp), sc_free(mine), sc_free(x);
    if (st != SC_OK)
        sc_ptrace_checked_free(out);
    return st;
}

void sc_ptrace_checked_free(sc_ptrace_checked *k)
{
    sc_free(k->steps);
    sc_free(k->own);
    memset(k, 0, sizeof *k);
}
