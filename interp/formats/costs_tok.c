/*
 * costs_tok.c — per-token costs of a cost file (costs_tok.h): reading,
 * writing, and the least-squares fit to times at several lengths.
 */
#include "costs_tok.h"
#include "errbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const sc_cost_tok_keys[3][2] = {{"tf_per_token", "tf_per_token2"},
                                            {"tb_per_token", "tb_per_token2"},
                                            {"tw_per_token", "tw_per_token2"}};

/* tf, tb, tw (as costs.c's sc_cost_keys, which this file does not call). */
static const char *const time_keys[3] = {"tf", "tb", "tw"};

/* List key of S coefficients >= 0 into out. */
static sc_status coef_list(const sc_jv *v, const char *key, int S, double *out, char *err,
                           size_t errlen)
{
    if (v->type != SC_JARR || (int)v->len != S)
        return sc_errbuf(err, errlen, "'%s': expected a list of %d numbers (one per stage)", key,
                         S);
    for (int s = 0; s < S; s++) {
        const sc_jv *x = v->item[s];
        if (x->type != SC_JNUM || !(x->num >= 0) || !isfinite(x->num))
            return sc_errbuf(err, errlen, "'%s'[%d]: a coefficient must be a number >= 0 (seconds "
                             "per token)", key, s);
        out[s] = x->num;
    }
    return SC_OK;
}

sc_status sc_costs_read_tok(const sc_jv *root, sc_costs *c, char *err, size_t errlen)
{
    int S = c->S, any = 0;
    for (int k = 0; k < 3; k++)
        any |= sc_jv_get(root, sc_cost_tok_keys[k][0]) || sc_jv_get(root, sc_cost_tok_keys[k][1]);
    const sc_jv *tok = sc_jv_get(root, "tokens");
    if (!any && !tok)
        return SC_OK;
    if (!tok)
        return sc_errbuf(err, errlen, "'tokens' is missing (the length at which tf, tb and tw "
                         "were measured, which per-token costs need)");
    if (tok->type != SC_JNUM || !(tok->num > 0) || !isfinite(tok->num))
        return sc_errbuf(err, errlen, "'tokens': expected a length > 0 (tokens per sequence)");
    if (!any)
        return sc_errbuf(err, errlen, "'tokens' without per-token costs (tf_per_token, "
                         "tf_per_token2, ...)");
    if (!(c->per_token = calloc(6 * (size_t)S, sizeof *c->per_token)))
        return SC_ERR_NOMEM;
    c->tokens = tok->num;
    double T = tok->num;
    for (int k = 0; k < 3; k++) {
        double *a = c->per_token + (size_t)k * S, *b = a + 3 * (size_t)S;
        const sc_jv *v;
        sc_status st;
        if (!sc_jv_get(root, sc_cost_tok_keys[k][0]) && !sc_jv_get(root, sc_cost_tok_keys[k][1])) {
            for (int s = 0; s < S; s++) /* none for this kind: it scales linearly */
                a[s] = b[s] = NAN;
            continue;
        }
        for (int j = 0; j < 2; j++)
            if ((v = sc_jv_get(root, sc_cost_tok_keys[k][j])) &&
                (st = coef_list(v, sc_cost_tok_keys[k][j], S, j ? b : a, err, errlen)) != SC_OK)
                return st;
        for (int s = 0; s < S; s++) {
            double t = c->kind[k][s].median, part = a[s] * T + b[s] * T * T;
            if (part > t * (1 + 1e-6)) /* the 9 digits written */
                return sc_errbuf(err, errlen, "'%s'[%d], '%s'[%d]: %g s at 'tokens' = %g, more "
                                 "than '%s'[%d] = %g s (the fixed part would be < 0)",
                                 sc_cost_tok_keys[k][0], s, sc_cost_tok_keys[k][1], s, part, T,
                                 time_keys[k], s, t);
        }
    }
    return SC_OK;
}

void sc_costs_write_tok(sc_jw *w, const sc_costs *c)
{
    if (!c->per_token)
        return;
    sc_jw_num_g(w, "tokens", c->tokens, 9);
    for (int j = 0; j < 2; j++)
        for (int k = 0; k < 3; k++) {
            if (isnan(c->per_token[(size_t)k * c->S])) /* none for this kind */
                continue;
            sc_jw_array(w, sc_cost_tok_keys[k][j]);
            for (int s = 0; s < c->S; s++)
                sc_jw_num_g(w, NULL, c->per_token[(size_t)(3 * j + k) * c->S + s], 9);
            sc_jw_end(w);
        }
}

void sc_costs_write_tok_fit(sc_jw *w, const sc_costs *c)
{
    if (!c->per_token || c->tok_lengths < 1)
        return;
    sc_jw_object(w, "per_token_fit");
    sc_jw_str(w, "method", "least squares, coefficients >= 0");
    sc_jw_int(w, "lengths", c->tok_lengths);
    sc_jw_array(w, "rms_residual_s");
    for (int k = 0; k < 3; k++)
        sc_jw_num_g(w, NULL, c->tok_rms[k], 9);
    sc_jw_end(w);
    sc_jw_end(w);
}

/* ---- the fit ------------------------------------------------------------ */

/* Least squares on the terms in mask (bit j: L^j), L scaled by u; k[j] of
 * the terms (0 for the others). 0 when singular. */
static int fit_terms(const double *L, const double *t, int n, int mask, double u, double k[3])
{
    double A[3][4] = {{0}};
    int idx[3], m = 0;
    for (int j = 0; j < 3; j++)
        if (mask >> j & 1)
            idx[m++] = j;
    for (int i = 0; i < n; i++) {
        double x = L[i] / u, p[3] = {1, x, x * x};
        for (int r = 0; r < m; r++) {
            for (int q = 0; q < m; q++)
                A[r][q] += p[idx[r]] * p[idx[q]];
            A[r][3] += p[idx[r]] * t[i];
        }
    }
    for (int col = 0; col < m; col++) { /* Gauss-Jordan, partial pivoting */
        int piv = col;
        for (int r = col + 1; r < m; r++)
            if (fabs(A[r][col]) > fabs(A[piv][col]))
                piv = r;
        if (!(fabs(A[piv][col]) > 1e-12 * (fabs(A[0][0]) + 1e-300)))
            return 0;
        for (int q = 0; q < 4; q++) {
            double tmp = A[col][q];
            A[col][q] = A[piv][q], A[piv][q] = tmp;
        }
        for (int r = 0; r < m; r++)
            if (r != col) {
                double f = A[r][col] / A[col][col];
                for (int q = col; q < 4; q++)
                    A[r][q] -= f * A[col][q];
            }
    }
    k[0] = k[1] = k[2] = 0;
    for (int r = 0; r < m; r++)
        k[idx[r]] = A[r][3] / A[r][r] / pow(u, idx[r]);
    return 1;
}

sc_status sc_costs_fit_tok(const double *L, const double *t, int n, int quad, double k[3],
                           double *rms)
{
    int distinct = 0;
    double u = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = L[j] == L[i];
        distinct += !seen;
        u = fmax(u, fabs(L[i]));
    }
    k[0] = k[1] = k[2] = 0;
    *rms = NAN;
    if (distinct < (quad ? 3 : 2) || !(u > 0))
        return SC_ERR_ARG;
    double best = INFINITY;
    for (int mask = 1; mask < (quad ? 8 : 4); mask++) {
        double c[3], ss = 0;
        if (!fit_terms(L, t, n, mask, u, c) || c[0] < 0 || c[1] < 0 || c[2] < 0)
            continue;
        for (int i = 0; i < n; i++) {
            double e = c[0] + c[1] * L[i] + c[2] * L[i] * L[i] - t[i];
            ss += e * e;
        }
        if (ss < best * (1 - 1e-12)) /* the fewest terms among equals */
            best = ss, memcpy(k, c, sizeof c);
    }
    *rms = isfinite(best) ? sqrt(best / n) : NAN;
    return isfinite(best) ? SC_OK : SC_ERR_ARG;
}
