/*
 * pair.c — the costs of overlapped pairs (pair.h,
 * docs/guide.md#overlapped-pairs).
 */
#include "ir_impl.h"

#include <math.h>

static sc_status set_each(sc_prog *pg, int s, double *a, double v, const char *name)
{
    if (s < -1 || s >= pg->S)
        return sc_fail(pg, SC_ERR_ARG, "cost: stage %d is out of range (0..%d)", s, pg->S - 1);
    if (v == v && (!isfinite(v) || v < 0))
        return sc_fail(pg, SC_ERR_ARG, "cost: %s must be finite and >= 0 (got %g)", name, v);
    for (int i = s < 0 ? 0 : s; i < (s < 0 ? pg->S : s + 1); i++)
        a[i] = v;
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_cost_pair(sc_prog *pg, int s, double tfb)
{
    return set_each(pg, s, pg->tfb, tfb, "tfb");
}

sc_status sc_prog_set_cost_a2a(sc_prog *pg, int s, double ta)
{
    if (ta != ta)
        return sc_fail(pg, SC_ERR_ARG, "cost: ta must be finite and >= 0 (got %g)", ta);
    return set_each(pg, s, pg->ta, ta, "ta");
}

double sc_prog_tfb(const sc_prog *pg, int s) { return pg->tfb[s]; }
double sc_prog_ta(const sc_prog *pg, int s) { return pg->ta[s]; }
double sc_prog_pair_time(const sc_prog *pg, const sc_instr *in) { return sc_pair_cost(pg, in); }

double sc_prog_pair_rise(const sc_prog *pg, const sc_instr *in) { return sc_instr_mem_rise(pg, in); }

int sc_prog_has_pairs(const sc_prog *pg)
{
    for (int d = 0; d < pg->P; d++)
        for (size_t k = 0; k < pg->order[d].n; k++)
            if (sc_op_is_pair(pg->order[d].v[k].op))
                return 1;
    for (int d = 0; pg->given && d < pg->P; d++)
        for (size_t k = 0; k < pg->stream[d].n; k++)
            if (sc_op_is_pair(pg->stream[d].v[k].op))
                return 1;
    return 0;
}
