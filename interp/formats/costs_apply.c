/*
 * costs_apply.c — a cost file's times into a program (costs.h): what
 * `import FILE.csv -D costs=FILE` does in C, and the share of a stage when
 * the file's stages are not the program's (--force-costs).
 */
#include "costs.h"
#include "errbuf.h"

#include <math.h>
#include <stdlib.h>

#include "ir/fsdp.h"
#include "ir/pair.h"

void sc_costs_resample(const double *in, int from, double *out, int to)
{
    /* On a grid of from * to: stage s of `to` is [s * from, (s + 1) * from),
     * stage j of `from` is [j * to, (j + 1) * to); s takes of j its overlap
     * over j's length. Linear in from + to. */
    for (int s = 0; s < to; s++) {
        long long lo = (long long)s * from, hi = lo + from;
        double x = 0;
        for (long long j = lo / to; j < from && j * to < hi; j++) {
            long long a = j * to > lo ? j * to : lo, b = (j + 1) * to < hi ? (j + 1) * to : hi;
            x += (double)(b - a) / (double)to * in[j];
        }
        out[s] = x;
    }
}

/* One kind's medians (S values) as the program's P stages, in out. */
static void kind_as(const sc_stat *v, int S, double *tmp, double *out, int P)
{
    for (int s = 0; s < S; s++)
        tmp[s] = v[s].median;
    if (S == P)
        for (int s = 0; s < S; s++)
            out[s] = tmp[s];
    else
        sc_costs_resample(tmp, S, out, P);
}

static int measured(const sc_stat *v, int S)
{
    for (int s = 0; s < S; s++)
        if (!isfinite(v[s].median))
            return 0;
    return 1;
}

/* The per-token coefficients of c on the program's P stages. */
static sc_status apply_tok(const sc_costs *c, sc_prog *pg)
{
    int S = c->S, P = sc_prog_stages(pg);
    double *v = malloc(6 * (size_t)P * sizeof *v);
    if (!v)
        return SC_ERR_NOMEM;
    for (int k = 0; k < 6; k++)
        sc_costs_resample(c->per_token + (size_t)k * S, S, v + (size_t)k * P, P);
    sc_status st = sc_prog_set_len_tokens(pg, v, v + 3 * (size_t)P, c->tokens);
    free(v);
    return st;
}

sc_status sc_costs_apply(const sc_costs *c, sc_prog *pg, int force, char *err, size_t errlen)
{
    int S = c->S, P = sc_prog_stages(pg);
    if (S != P && !force)
        return sc_errbuf(err, errlen, "'stages' is %d, but the program has %d stages (record or "
                         "profile the model split in %d stages, or give --force-costs to share "
                         "each stage's times among the program's)", S, P, P);
    double *x = malloc((size_t)(8 * P + S) * sizeof *x);
    if (!x)
        return SC_ERR_NOMEM;
    double *tf = x, *tb = x + P, *tw = x + 2 * P, *bw = x + 3 * P, *opt = x + 4 * P,
           *fb = x + 5 * P, *a2a = x + 6 * P, *tmp = x + 8 * P;
    kind_as(c->kind[SC_COST_F], S, tmp, tf, P);
    kind_as(c->kind[SC_COST_B], S, tmp, tb, P);
    kind_as(c->kind[SC_COST_W], S, tmp, tw, P);
    int has_bw = measured(c->kind[SC_COST_BW], S), has_opt = measured(c->kind[SC_COST_OPT], S);
    if (has_bw)
        kind_as(c->kind[SC_COST_BW], S, tmp, bw, P);
    if (has_opt)
        kind_as(c->kind[SC_COST_OPT], S, tmp, opt, P);
    if (c->tfb)
        kind_as(c->tfb, S, tmp, fb, P);
    sc_status st = SC_OK;
    for (int s = 0; s < P && st == SC_OK; s++)
        if ((st = sc_prog_set_cost(pg, s, tf[s], tb[s], tw[s])) == SC_OK &&
            (st = sc_prog_set_cost_bw(pg, s, has_bw ? bw[s] : NAN)) == SC_OK &&
            (st = sc_prog_set_cost_optim(pg, s, has_opt ? opt[s] : 0)) == SC_OK && c->tfb)
            st = sc_prog_set_cost_pair(pg, s, fb[s]);
    for (int k = 0; k < 2; k++) /* expert parallelism: DISPATCH + COMBINE (ir/ep.h) */
        if (c->a2a[k])
            kind_as(c->a2a[k], S, tmp, a2a + k * P, P);
    for (int s = 0; s < P && st == SC_OK && (c->a2a[0] || c->a2a[1]); s++)
        st = sc_prog_set_ep_time(pg, s, (c->a2a[0] ? a2a[s] : 0) + (c->a2a[1] ? a2a[P + s] : 0));
    if (st == SC_OK)
        st = sc_prog_set_comm(pg, isfinite(c->comm.median) ? c->comm.median : 0);
    if (st == SC_OK && c->per_token) /* per-token costs (costs_tok.h), as P stages */
        st = apply_tok(c, pg);
    sc_fsdp_cfg f = *sc_prog_fsdp(pg); /* FSDP's collectives, where both have them */
    if (st == SC_OK && f.dp && (c->gather.n > 0 || c->reduce.n > 0)) {
        f.time = c->gather.n > 0 ? c->gather.median : f.time;
        f.reduce_time = c->reduce.n > 0 ? c->reduce.median : f.reduce_time;
        st = sc_prog_set_fsdp(pg, &f);
    }
    if (st == SC_OK)
        sc_prog_set_seconds(pg, 1);
    free(x);
    if (st != SC_OK)
        snprintf(err, errlen, "%s", sc_errmsg(pg));
    return st;
}
