/*
 * recompute_out.c — what `sim` adds for recomputation (docs/recompute.md):
 * the policy, the records recomputed, the R passes' time, the peak without.
 */
#include "sim_out.h"

#include <stdio.h>

#include "ir/recompute_cfg.h"

static const char *const names[] = {"none", "all", "selective", "budget", "function"};

static double max_of(const double *v, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

void sc_eng_print_recompute(FILE *out, const sc_prog *pg, sc_jw *w)
{
    const sc_recompute_info *ri = sc_prog_recompute_info(pg);
    const sc_recompute_cfg *c = sc_prog_recompute(pg);
    if (!ri)
        return;
    int P = sc_prog_devices(pg);
    if (w) {
        sc_jw_object(w, "recompute");
        sc_jw_str(w, "policy", names[c->policy]);
        sc_jw_num(w, "frac", c->frac);
        sc_jw_num(w, "time", c->time);
        sc_jw_int(w, "records", ri->records);
        sc_jw_num(w, "units", ri->units);
        sc_jw_num(w, "recompute_time", ri->time);
        sc_jw_nums(w, "chunks", ri->level, P);
        sc_jw_ints(w, "per_device", ri->count, P);
        sc_jw_nums(w, "peak_memory_without", ri->base_peak, P);
        sc_jw_num(w, "peak_memory_without_max", max_of(ri->base_peak, P));
        sc_jw_end(w);
        return;
    }
    fprintf(out, "recompute     %s, %.4g of a record for %.4g of F: %d records, %.4g units, R "
           "passes %.6g%s; without: peak %.4g units (max)\n",
           names[c->policy], c->frac, c->time, ri->records, ri->units, ri->time,
           sc_prog_seconds(pg) ? " s" : "", max_of(ri->base_peak, P));
}
