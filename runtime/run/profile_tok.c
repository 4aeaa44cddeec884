/*
 * profile_tok.c — the per-token costs of a profile of microbatches of
 * different lengths (profile_impl.h, formats/costs_tok.h): each pass's raw
 * time beside its length, and the least-squares fit of F, B and W of every
 * stage to them.
 */
#include "formats/costs_tok.h"
#include "profile_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sc_samples_add_tok(samples *sm, int k, int s, double L, double t)
{
    tokpts *p = &sm->tok[k][s];
    if (!(t >= 0))
        return;
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        double *a = realloc(p->L, (size_t)cap * sizeof *a);
        if (a)
            p->L = a;
        double *b = a ? realloc(p->t, (size_t)cap * sizeof *b) : NULL;
        if (!b) {
            sm->bad = 1;
            return;
        }
        p->t = b;
        p->cap = cap;
    }
    p->L[p->n] = L, p->t[p->n] = t;
    p->n++;
}

sc_status sc_profile_copy_lengths(const sc_prog *pg, sc_prog *v)
{
    const double *len = sc_prog_lengths(pg);
    int S = sc_prog_stages(pg), m = sc_prog_microbatches(pg), shares = 0;
    if (!len)
        return SC_OK;
    sc_status st = sc_prog_set_lengths(v, len, m);
    double *lin = malloc((size_t)SC_LK_COUNT * (size_t)S * sizeof *lin);
    if (!lin)
        return SC_ERR_NOMEM;
    for (int k = 0; k < SC_LK_COUNT; k++)
        for (int s = 0; s < S; s++)
            shares |= (lin[k * S + s] = sc_prog_len_linear(pg, k, s)) != 1;
    if (!st && shares) /* the model's (pg's per-token costs are not a run's) */
        st = sc_prog_set_len_linear(v, lin, sc_prog_length_ref(pg));
    free(lin);
    return st;
}

static int by_length(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* The median time of each distinct length of p into L, t (as robust as the
 * medians of the cost file): their number, or -1 when out of memory. */
static int medians(const tokpts *p, double *L, double *t)
{
    double *x = malloc(2 * (size_t)p->n * sizeof *x);
    if (!x)
        return -1;
    for (int i = 0; i < p->n; i++)
        x[2 * i] = p->L[i], x[2 * i + 1] = p->t[i];
    qsort(x, (size_t)p->n, 2 * sizeof *x, by_length);
    int d = 0;
    for (int i = 0, j; i < p->n; i = j) {
        for (j = i; j < p->n && x[2 * j] == x[2 * i]; j++)
            ;
        L[d] = x[2 * i];
        t[d++] = (x[2 * (i + (j - i - 1) / 2) + 1] + x[2 * (i + (j - i) / 2) + 1]) / 2;
    }
    free(x);
    return d;
}

sc_status sc_samples_fit_tok(const samples *sm, double ref, sc_costs *c)
{
    int S = sm->S, lengths = 0;
    if (!(ref > 0) || sm->bad)
        return SC_OK;
    double *v = calloc(9 * (size_t)S, sizeof *v), rms[3] = {0, 0, 0};
    if (!v)
        return SC_ERR_NOMEM;
    double *at = v + 6 * (size_t)S; /* each time at ref, fitted (NAN: not measured apart) */
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < S; s++) {
            const tokpts *p = &sm->tok[k][s];
            double q[3], r;
            at[k * S + s] = NAN;
            if (p->n == 0) { /* not measured apart (BW fused): linear, as without */
                v[(size_t)k * S + s] = v[(size_t)(3 + k) * S + s] = NAN;
                continue;
            }
            double *L = malloc(2 * (size_t)p->n * sizeof *L);
            int d = L ? medians(p, L, L + p->n) : -1;
            sc_status st = d >= 2 ? sc_costs_fit_tok(L, L + p->n, d, d >= 3, q, &r) : SC_ERR_ARG;
            free(L);
            if (st != SC_OK) { /* out of memory, or one length: nothing to fit */
                free(v);
                return d < 0 ? SC_ERR_NOMEM : SC_OK;
            }
            lengths = d > lengths ? d : lengths;
            v[(size_t)k * S + s] = q[1], v[(size_t)(3 + k) * S + s] = q[2];
            at[k * S + s] = q[0] + q[1] * ref + q[2] * ref * ref;
            rms[k] = fmax(rms[k], r);
        }
    if (!lengths) {
        free(v);
        return SC_OK;
    }
    for (int k = 0; k < 3; k++) /* each time at the reference: the fit's */
        for (int s = 0; s < S; s++)
            if (isfinite(at[k * S + s]))
                c->kind[k][s].median = at[k * S + s];
    free(c->per_token);
    c->per_token = v; /* its first 6 S; the rest is the scratch above */
    c->tokens = ref;
    c->tok_lengths = lengths;
    memcpy(c->tok_rms, rms, sizeof rms);
    return SC_OK;
}
