/*
 * lengths.c — microbatches of different lengths (lengths.h): the setters,
 * the scaled times and units, and the reader of a lengths list.
 */
#include "alloc.h"
#include "ir_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sc_status sc_prog_set_lengths(sc_prog *pg, const double *len, int n)
{
    sc_free(pg->len_rec); /* a run's, for the lengths it had */
    pg->len_rec = NULL;
    if (!len || n == 0) {
        sc_free(pg->len);
        pg->len = NULL;
        pg->len_mean = 0;
        sc_prog_invalidate(pg);
        return SC_OK;
    }
    if (n != pg->m)
        return sc_fail(pg, SC_ERR_ARG, "lengths: %d entries for m = %d microbatches (one length "
                       "per microbatch)", n, pg->m);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (!(len[i] > 0) || !isfinite(len[i]))
            return sc_fail(pg, SC_ERR_ARG, "lengths: entry %d is %g: a length must be a finite "
                           "number > 0", i + 1, len[i]);
        sum += len[i];
    }
    double *v = sc_malloc((size_t)n * sizeof *v);
    if (!v)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    memcpy(v, len, (size_t)n * sizeof *v);
    sc_free(pg->len);
    pg->len = v;
    pg->len_mean = sum / n;
    sc_prog_invalidate(pg);
    return SC_OK;
}

const double *sc_prog_lengths(const sc_prog *pg) { return pg->len; }

double sc_prog_length_ref(const sc_prog *pg)
{
    if (!pg->len)
        return 0;
    return pg->len_lin ? pg->len_ref : pg->len_mean;
}

double sc_prog_len_scale(const sc_prog *pg, int k, int s, int mb)
{
    if (k < 0 || k >= SC_LK_COUNT)
        return 1;
    return s < 0 ? sc_len_r(pg, mb) : sc_len_k(pg, k, s, mb);
}

double sc_prog_len_linear(const sc_prog *pg, int k, int s)
{
    if (!pg->len_lin || k < 0 || k >= SC_LK_COUNT || s < 0 || s >= pg->S)
        return 1;
    return pg->len_lin[(size_t)k * (size_t)pg->S + (size_t)s];
}

sc_status sc_prog_set_len_linear(sc_prog *pg, const double *lin, double ref)
{
    sc_free(pg->len_fix); /* a cost file's, for the shares it replaced */
    pg->len_fix = NULL;
    if (!lin) {
        sc_free(pg->len_lin);
        pg->len_lin = NULL;
        pg->len_ref = 0;
        sc_prog_invalidate(pg);
        return SC_OK;
    }
    if (!(ref > 0))
        return sc_fail(pg, SC_ERR_ARG, "lengths: the reference length must be > 0");
    size_t n = (size_t)SC_LK_COUNT * (size_t)pg->S;
    double *v = sc_malloc(n * sizeof *v);
    if (!v)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) /* within [0, 1]: rounding may step past */
        v[i] = lin[i] != lin[i] ? 1 : fmin(1, fmax(0, lin[i]));
    sc_free(pg->len_lin);
    pg->len_lin = v;
    pg->len_ref = ref;
    sc_prog_invalidate(pg);
    return SC_OK;
}

/* The shares of stage s's kind k at ref tokens from its time c and its
 * coefficients a (per token) and b (per token²): lin[i], fix[i]. */
static sc_status token_shares(sc_prog *pg, int k, int s, double c, double a, double b, double ref,
                              double *lin, double *fix)
{
    static const char *const kind[3] = {"F", "B", "W"};
    size_t i = (size_t)k * (size_t)pg->S + (size_t)s;
    if (isnan(a) && isnan(b)) { /* none for this kind: linear in the tokens */
        lin[i] = 1, fix[i] = 0;
        return SC_OK;
    }
    double at = a * ref, bt = b * ref * ref;
    if (!(a >= 0) || !(b >= 0) || !isfinite(a) || !isfinite(b) || at + bt > c * (1 + 1e-6))
        return sc_fail(pg, SC_ERR_ARG, "lengths: stage %d's %s takes %g s at %g tokens, less "
                       "than its per-token parts %g + %g s (the fixed part would be < 0)", s,
                       kind[k], c, ref, at, bt);
    lin[i] = c > 0 ? at / c : 1;
    fix[i] = c > 0 ? fmax(0, 1 - (at + bt) / c) : 0;
    return SC_OK;
}

sc_status sc_prog_set_len_tokens(sc_prog *pg, const double *a, const double *b, double ref)
{
    if (!(ref > 0) || !isfinite(ref))
        return sc_fail(pg, SC_ERR_ARG, "lengths: the reference length must be > 0");
    size_t S = (size_t)pg->S, n = (size_t)SC_LK_COUNT * S;
    double *lin = sc_malloc(2 * n * sizeof *lin), *fix = lin + n;
    if (!lin)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    sc_status st = SC_OK;
    for (size_t s = 0; s < S && st == SC_OK; s++) {
        double c[3] = {pg->tf[s], pg->tb[s], pg->tw[s]};
        for (int k = 0; k < 3 && st == SC_OK; k++)
            st = token_shares(pg, k, (int)s, c[k], a[k * S + s], b[k * S + s], ref, lin, fix);
        /* The records keep the model's split (1 without one), moved to ref:
         * a r0 / (a r0 + (1 - a) r0^2) at r0 = ref / the model's seq. */
        double am = sc_prog_len_linear(pg, SC_LK_MEM, (int)s);
        double r0 = pg->len_lin ? ref / pg->len_ref : 1;
        lin[SC_LK_MEM * S + s] = am * r0 / (am * r0 + (1 - am) * r0 * r0);
        fix[SC_LK_MEM * S + s] = 0;
    }
    if (st == SC_OK && (st = sc_prog_set_len_linear(pg, lin, ref)) == SC_OK) {
        double *v = sc_malloc(n * sizeof *v);
        if (!v) {
            sc_free(lin);
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        }
        memcpy(v, fix, n * sizeof *v);
        pg->len_fix = v; /* after sc_prog_set_len_linear, which drops it */
    }
    sc_free(lin);
    return st;
}

int sc_prog_len_per_token(const sc_prog *pg) { return pg->len_fix != NULL; }

sc_status sc_prog_set_len_records(sc_prog *pg, const double *units, const double *kept)
{
    if (units && !pg->len && pg->slices <= 1)
        return sc_fail(pg, SC_ERR_ARG, "lengths: records per microbatch without lengths");
    size_t n = (size_t)pg->S * (size_t)pg->m;
    double *v = units ? sc_malloc(2 * n * sizeof *v) : NULL;
    if (units && !v)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; units && i < n; i++) {
        if (!(units[i] >= 0) || !(kept[i] >= 0 && kept[i] <= 1)) {
            sc_free(v);
            return sc_fail(pg, SC_ERR_ARG, "lengths: record %zu has %g units, kept share %g",
                           i, units[i], kept[i]);
        }
        v[i] = units[i], v[n + i] = kept[i];
    }
    sc_free(pg->len_rec);
    pg->len_rec = v;
    sc_prog_invalidate(pg);
    return SC_OK;
}

double sc_prog_pass_time(const sc_prog *pg, int op, int s, int mb)
{
    if (op < 0 || op >= SC_OP_COUNT || s < 0)
        return 0;
    if (sc_op_is_vocab(op) ? s >= pg->P : s >= pg->S)
        return 0;
    return sc_op_cost_mb(pg, op, s, mb);
}

double sc_prog_rec_units(const sc_prog *pg, int s, int mb)
{
    return s >= 0 && s < pg->S ? sc_rec_units(pg, s, mb) : 0;
}

double sc_prog_msg_time(const sc_prog *pg, int mb) { return pg->tcomm * sc_len_r(pg, mb); }

/* ---- the list's text ---------------------------------------------------- */

sc_status sc_lengths_parse(const char *text, size_t len, int m, double **out, int *nout,
                           char *err, size_t errlen)
{
    *out = NULL;
    *nout = 0;
    size_t cap = m > 0 ? (size_t)m : 64;
    double *v = sc_malloc(cap * sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    const char *p = text, *end = text + len;
    while (p < end && isspace((unsigned char)*p))
        p++;
    int json = p < end && *p == '[', n = 0, closed = !json, line = 1;
    if (json)
        p++;
    for (;;) {
        /* blanks, separators, comments (text only), counting lines */
        while (p < end && (isspace((unsigned char)*p) || *p == ',' || (!json && *p == '#'))) {
            if (*p == '#')
                while (p < end && *p != '\n')
                    p++;
            else if (*p++ == '\n')
                line++;
        }
        if (p >= end)
            break;
        if (json && *p == ']') {
            closed = 1;
            p++;
            while (p < end && isspace((unsigned char)*p))
                p++;
            if (p < end) {
                snprintf(err, errlen, "text after the closing ']'");
                goto bad;
            }
            break;
        }
        char *e;
        double x = strtod(p, &e);
        if (e == p || (e < end && !isspace((unsigned char)*e) && *e != ',' && *e != ']' &&
                       *e != '#')) {
            const char *q = p;
            while (q < end && q - p < 20 && !isspace((unsigned char)*q) && *q != ',' &&
                   *q != ']')
                q++;
            snprintf(err, errlen, "entry %d (line %d) is '%.*s': not a number", n + 1, line,
                     (int)(q - p), p);
            goto bad;
        }
        if (!(x > 0) || !isfinite(x)) {
            snprintf(err, errlen, "entry %d (line %d) is %g: a length must be a number > 0",
                     n + 1, line, x);
            goto bad;
        }
        if (m == 0 && (size_t)n == cap) {
            if (n >= SC_MAX_MICROBATCHES) {
                snprintf(err, errlen, "more than %d lengths", SC_MAX_MICROBATCHES);
                goto bad;
            }
            double *w = sc_realloc(v, 2 * cap * sizeof *v);
            if (!w) {
                sc_free(v);
                snprintf(err, errlen, "out of memory");
                return SC_ERR_NOMEM;
            }
            v = w;
            cap *= 2;
        }
        if ((size_t)n < cap)
            v[n] = x;
        n++;
        p = e;
    }
    if (!closed) {
        snprintf(err, errlen, "the JSON array has no closing ']'");
        goto bad;
    }
    if (m > 0 && n != m) {
        snprintf(err, errlen, "%d lengths for m = %d microbatches (one per microbatch)", n, m);
        goto bad;
    }
    if (n == 0) {
        snprintf(err, errlen, "no lengths");
        goto bad;
    }
    *out = v;
    *nout = n;
    return SC_OK;
bad:
    sc_free(v);
    return SC_ERR_ARG;
}
