/*
 * offload_cfg.c — the offload configuration of a program (offload_cfg.h):
 * the policy, the fractions of a table, the runtime's parts, the link's
 * time. The plan itself is a stage of the pipeline (lower/offload.c).
 */
#include "offload_cfg.h"
#include "ir/alloc.h"
#include "ir_impl.h"

#include <math.h>
#include <stdlib.h>

/* ---- configuration ------------------------------------------------------ */

static int max_chunks(const sc_prog *pg)
{
    int c = 0;
    for (int d = 0; d < pg->P; d++)
        c = pg->nchunks[d] > c ? pg->nchunks[d] : c;
    return c;
}

sc_status sc_prog_set_offload(sc_prog *pg, const sc_offload_cfg *cfg)
{
    if ((unsigned)cfg->policy > SC_OFFLOAD_TABLE)
        return sc_fail(pg, SC_ERR_ARG, "offload: unknown policy %d", (int)cfg->policy);
    if (!isfinite(cfg->ratio) || cfg->ratio < 0)
        return sc_fail(pg, SC_ERR_ARG,
                       "offload: the ratio (host-link time of one unit relative to tf+tb+tw) must "
                       "be finite and >= 0 (got %g)",
                       cfg->ratio);
    if (!(cfg->margin >= 0) || !isfinite(cfg->margin))
        return sc_fail(pg, SC_ERR_ARG,
                       "offload: margin (durations of B a copy back ends before it) must be "
                       ">= 0 (got %g)", cfg->margin);
    if (cfg->policy == SC_OFFLOAD_SELECTIVE) {
        if (!isfinite(cfg->chunks) || cfg->chunks < 0)
            return sc_fail(pg, SC_ERR_ARG, "offload: chunks must be a number >= 0 (got %g)",
                           cfg->chunks);
        if (cfg->chunks > max_chunks(pg))
            return sc_fail(pg, SC_ERR_ARG,
                           "offload: chunks = %g, but a device holds at most %d chunk%s",
                           cfg->chunks, max_chunks(pg), max_chunks(pg) == 1 ? "" : "s");
    }
    if (cfg->policy == SC_OFFLOAD_BUDGET && !(isfinite(cfg->mem) && cfg->mem > 0))
        return sc_fail(pg, SC_ERR_ARG,
                       "offload: 'budget' needs mem, the peak to reach in units (> 0; got %g)",
                       cfg->mem);
    if (cfg->policy == SC_OFFLOAD_TABLE && !pg->off_frac) {
        pg->off_frac = sc_calloc((size_t)pg->S * (size_t)pg->m, sizeof(double));
        if (!pg->off_frac)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    pg->off = *cfg;
    sc_prog_invalidate(pg);
    return SC_OK;
}

const sc_offload_cfg *sc_prog_offload(const sc_prog *pg) { return &pg->off; }

sc_status sc_prog_set_offload_fraction(sc_prog *pg, int s, int mb, double frac)
{
    if (s < 0 || s >= pg->S || mb < 0 || mb >= pg->m)
        return sc_fail(pg, SC_ERR_ARG, "offload: record s%d mb%d is out of range", s, mb);
    if (!(frac >= 0 && frac <= 1))
        return sc_fail(pg, SC_ERR_ARG,
                       "offload: the fraction of s%d mb%d must be within [0, 1] (got %g)", s, mb,
                       frac);
    if (!pg->off_frac && !(pg->off_frac = sc_calloc((size_t)pg->S * (size_t)pg->m, sizeof(double))))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    pg->off_frac[SC_SM(pg, s, mb)] = frac;
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_offload_parts(sc_prog *pg, int s, int n, const double *sizes)
{
    if (s < 0 || s >= pg->S || n < 0)
        return sc_fail(pg, SC_ERR_ARG, "offload: parts of stage %d: bad arguments", s);
    double total = 0, *lv = NULL;
    for (int i = 0; i < n; i++) {
        if (!(sizes[i] > 0) || !isfinite(sizes[i]))
            return sc_fail(pg, SC_ERR_ARG, "offload: part %d of stage %d has size %g", i, s,
                           sizes[i]);
        total += sizes[i];
    }
    if (!pg->off_levels) {
        pg->off_levels = sc_calloc((size_t)pg->S, sizeof(double *));
        pg->off_nlevels = sc_calloc((size_t)pg->S, sizeof(int));
        if (!pg->off_levels || !pg->off_nlevels)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    if (n > 0) {
        if (!(lv = sc_malloc(((size_t)n + 1) * sizeof(double))))
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        double acc = 0;
        lv[0] = 0;
        for (int k = 1; k <= n; k++) {
            acc += sizes[n - k]; /* the last k parts */
            lv[k] = acc / total;
        }
        lv[n] = 1;
    }
    sc_free(pg->off_levels[s]);
    pg->off_levels[s] = lv;
    pg->off_nlevels[s] = n;
    sc_prog_invalidate(pg);
    return SC_OK;
}

const double *sc_prog_offload_levels(const sc_prog *pg, int s, int *n)
{
    *n = pg->off_levels ? pg->off_nlevels[s] : 0;
    return *n ? pg->off_levels[s] : NULL;
}

const sc_offload_info *sc_prog_offload_info(const sc_prog *pg)
{
    return pg->lowered ? pg->off_info : NULL;
}

double sc_offload_time(const sc_prog *pg, int s, double q)
{
    int d = pg->stage_dev[s];
    double share = 0;
    for (int c = 0; c < pg->nchunks[d]; c++) {
        int t = pg->dev_stages[d][c];
        share += pg->tf[t] + pg->tb[t] + pg->tw[t];
    }
    return q * pg->mem[s] * pg->off.ratio * share;
}

