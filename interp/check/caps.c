/*
 * caps.c — the memory cap, checked on the lowered streams (caps.h).
 */
#include "caps.h"
#include "model/flops.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <math.h>
#include <stdio.h>

/* Levels closer than this to the cap are within it (sums of units). */
#define CAP_EPS 1e-9

/* The level while instruction in runs: a forward-only F holds its record
 * only then (docs/guide.md#forward-only); cur after the rest. */
static double level_in(const sc_prog *pg, double cur, const sc_instr *in)
{
    return pg->fwd_only ? cur + sc_instr_mem_rise(pg, in) : cur;
}

void sc_stream_peaks(const sc_prog *pg, double *peak)
{
    for (int d = 0; d < pg->P; d++) {
        const sc_vec *sv = &pg->stream[d];
        double cur = 0, top = 0;
        for (size_t k = 0; k < sv->n; k++) {
            top = fmax(top, level_in(pg, cur, &sv->v[k]));
            cur += sc_instr_mem(pg, &sv->v[k]);
            top = fmax(top, cur);
        }
        peak[d] = top;
    }
}

/* What the program's memory policies are, for the message ("" without). */
static void policy_text(const sc_prog *pg, char *buf, size_t len)
{
    static const char *const names[] = {"none", "all", "selective", "budget", "function"};
    int n = 0;
    buf[0] = 0;
    if (pg->off.policy != SC_OFFLOAD_NONE)
        n = snprintf(buf, len, " with offload '%s' (ratio %g%s)", names[pg->off.policy],
                     pg->off.ratio, pg->off.shared ? ", shared link" : "");
    if (pg->rc.policy != SC_RECOMPUTE_NONE && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%s recompute '%s'", n ? " and" : " with",
                 names[pg->rc.policy]);
}

/* Device d's cap: mem, and a budget's target (the peak it promises). */
static double cap_of(const sc_prog *pg, int d)
{
    double cap = sc_prog_mem_cap(pg, d);
    if (pg->off.policy == SC_OFFLOAD_BUDGET)
        cap = fmin(cap, pg->off.mem);
    if (pg->rc.policy == SC_RECOMPUTE_BUDGET)
        cap = fmin(cap, pg->rc.mem);
    return cap;
}

sc_status sc_verify_caps(sc_prog *pg)
{
    int worst = -1;
    double over = 0;
    for (int d = 0; d < pg->P; d++) {
        double cap = cap_of(pg, d);
        if (!isfinite(cap))
            continue;
        const sc_vec *sv = &pg->stream[d];
        double cur = 0;
        for (size_t k = 0; k < sv->n; k++) {
            double lv = level_in(pg, cur, &sv->v[k]);
            cur += sc_instr_mem(pg, &sv->v[k]);
            lv = fmax(lv, cur);
            if (lv > cap + CAP_EPS * (1 + cap) && (worst < 0 || lv - cap > over)) {
                worst = d;
                over = lv - cap;
                break;
            }
        }
    }
    if (worst < 0)
        return SC_OK;
    /* The first point where the worst device passes its cap, and its peak. */
    int d = worst;
    double cap = cap_of(pg, d), cur = 0, peak = 0, level = 0;
    const sc_vec *sv = &pg->stream[d];
    size_t at = sv->n;
    for (size_t k = 0; k < sv->n; k++) {
        double lv = level_in(pg, cur, &sv->v[k]);
        cur += sc_instr_mem(pg, &sv->v[k]);
        lv = fmax(lv, cur);
        if (lv > cap + CAP_EPS * (1 + cap) && at == sv->n) {
            at = k;
            level = lv;
        }
        peak = fmax(peak, lv);
    }
    char where[96], pol[96], need[160];
    sc_prog_instr_format(pg, &sv->v[at], where, sizeof where); /* slices: mbM.J */
    policy_text(pg, pol, sizeof pol);
    double least = pg->cap_need ? pg->cap_need[d] : peak;
    if (pg->cap_need)
        snprintf(need, sizeof need, "its least peak, with the fewest forwards in flight its "
                                    "schedule allows");
    else if (pg->units_moved)
        snprintf(need, sizeof need, "its peak as built: its orders were made for other memory "
                                    "units than these, the model's record bytes");
    else if (pol[0])
        snprintf(need, sizeof need, "its peak with this policy; budget plans for the cap, and "
                                    "recompute budget beside offload budget goes further");
    else
        snprintf(need, sizeof need, "its order runs as written; fit = true lets its forwards "
                                    "wait for memory");
    /* A cap given in bytes (a cost file's or run's unit, memcap.c): in bytes too. */
    char capb[80] = "", leastb[64] = "", needb[64] = "";
    int own = sc_prog_mem_per_device(pg);
    if (sc_prog_has_model(pg)) { /* a model's: the whole device (docs/model.md#caps) */
        double held = sc_prog_static_bytes(pg, d), u = sc_prog_unit_bytes(pg), gib = 1073741824.0;
        snprintf(capb, sizeof capb, " (units of activations; %.4g GiB in all on d%d)",
                 (held + cap * u) / gib, d);
        snprintf(needb, sizeof needb, " units, %.4g GiB in all on d%d", (held + least * u) / gib,
                 d);
    } else if (pg->byte_unit > 0) {
        snprintf(capb, sizeof capb, " (%s%.0f bytes)", own ? "its own cap, " : "",
                 cap * pg->byte_unit);
        snprintf(leastb, sizeof leastb, "%.0f bytes; ", least * pg->byte_unit);
    } else if (own) {
        snprintf(capb, sizeof capb, " (its own cap)");
    }
    return sc_fail_cap(pg,
                       "mem: d%d passes mem = %g%s at %s (#%zu), holding %g units (peak %g%s); "
                       "it needs mem >= %g%s (%s%s)",
                       d, cap, capb, where, at, level, peak, pol, least, needb, leastb, need);
}
