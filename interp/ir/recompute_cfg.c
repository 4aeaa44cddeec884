/*
 * recompute_cfg.c — the recomputation configuration of a program
 * (recompute_cfg.h): the policy, the fractions of a table, what the
 * runtime can drop. The plan itself is a stage of the pipeline
 * (lower/recompute.c).
 */
#include "recompute_cfg.h"
#include "alloc.h"
#include "ir_impl.h"

#include <math.h>

sc_status sc_prog_set_recompute(sc_prog *pg, const sc_recompute_cfg *cfg)
{
    if ((unsigned)cfg->policy > SC_RECOMPUTE_TABLE)
        return sc_fail(pg, SC_ERR_ARG, "recompute: unknown policy %d", (int)cfg->policy);
    if (!(cfg->frac > 0 && cfg->frac <= 1))
        return sc_fail(pg, SC_ERR_ARG,
                       "recompute: frac (the part of a record dropped and recomputed) must be "
                       "within (0, 1] (got %g)", cfg->frac);
    if (!(cfg->time > 0) || !isfinite(cfg->time))
        return sc_fail(pg, SC_ERR_ARG,
                       "recompute: time (a recomputation's time as a fraction of F's) must be "
                       "> 0 (got %g)", cfg->time);
    if (cfg->policy == SC_RECOMPUTE_SELECTIVE && (!isfinite(cfg->chunks) || cfg->chunks < 0))
        return sc_fail(pg, SC_ERR_ARG, "recompute: chunks must be a number >= 0 (got %g)",
                       cfg->chunks);
    if (cfg->policy == SC_RECOMPUTE_BUDGET && !(isfinite(cfg->mem) && cfg->mem > 0))
        return sc_fail(pg, SC_ERR_ARG,
                       "recompute: 'budget' needs mem, the peak to reach in units (> 0; got %g)",
                       cfg->mem);
    if (cfg->policy == SC_RECOMPUTE_TABLE && !pg->rc_frac &&
        !(pg->rc_frac = sc_calloc((size_t)pg->S * (size_t)pg->m, sizeof(double))))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    pg->rc = *cfg;
    sc_prog_invalidate(pg);
    return SC_OK;
}

const sc_recompute_cfg *sc_prog_recompute(const sc_prog *pg) { return &pg->rc; }

sc_status sc_prog_set_recompute_fraction(sc_prog *pg, int s, int mb, double frac)
{
    if (s < 0 || s >= pg->S || mb < 0 || mb >= pg->m)
        return sc_fail(pg, SC_ERR_ARG, "recompute: record s%d mb%d is out of range", s, mb);
    if (!(frac >= 0 && frac <= 1))
        return sc_fail(pg, SC_ERR_ARG,
                       "recompute: the fraction of s%d mb%d must be within [0, 1] (got %g)", s,
                       mb, frac);
    if (!pg->rc_frac && !(pg->rc_frac = sc_calloc((size_t)pg->S * (size_t)pg->m, sizeof(double))))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    pg->rc_frac[SC_SM(pg, s, mb)] = frac;
    sc_prog_invalidate(pg);
    return SC_OK;
}

double sc_recompute_max(const sc_prog *pg, int s)
{
    int n;
    const double *lv = sc_prog_offload_levels(pg, s, &n);
    return lv ? lv[n - 1] : 1; /* the last n-1 parts: all but the input */
}

double sc_recompute_quantize(const sc_prog *pg, int s, double q)
{
    int n;
    const double *lv = sc_prog_offload_levels(pg, s, &n);
    if (!lv)
        return q;
    double best = 0;
    for (int k = 0; k < n; k++) /* levels[0..n-1]: never the input part */
        if (fabs(lv[k] - q) < fabs(best - q) - 1e-12)
            best = lv[k];
    return best;
}

const sc_recompute_info *sc_prog_recompute_info(const sc_prog *pg)
{
    return pg->lowered ? pg->rc_info : NULL;
}
