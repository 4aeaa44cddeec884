/*
 * recompute_out.c — what `sim` adds for recomputation (docs/recompute.md):
 * the policy, the records recomputed, the R passes' time, the peak without.
 */
#include "cli.h"

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

static void list(const double *v, int n)
{
    printf("[");
    for (int i = 0; i < n; i++)
        printf("%s%.15g", i ? ", " : "", v[i]);
    printf("]");
}

void sc_cli_print_recompute(const sc_prog *pg, int json)
{
    const sc_recompute_info *ri = sc_prog_recompute_info(pg);
    const sc_recompute_cfg *c = sc_prog_recompute(pg);
    if (!ri)
        return;
    int P = sc_prog_devices(pg);
    if (json) {
        printf(", \"recompute\": {\"policy\": \"%s\", \"frac\": %.15g, \"time\": %.15g, "
               "\"records\": %d, \"units\": %.15g, \"recompute_time\": %.15g, \"chunks\": ",
               names[c->policy], c->frac, c->time, ri->records, ri->units, ri->time);
        list(ri->level, P);
        printf(", \"per_device\": [");
        for (int d = 0; d < P; d++)
            printf("%s%d", d ? ", " : "", ri->count[d]);
        printf("], \"peak_memory_without\": ");
        list(ri->base_peak, P);
        printf(", \"peak_memory_without_max\": %.15g}", max_of(ri->base_peak, P));
        return;
    }
    printf("recompute     %s, %.4g of a record for %.4g of F: %d records, %.4g units, R "
           "passes %.6g%s; without: peak %.4g units (max)\n",
           names[c->policy], c->frac, c->time, ri->records, ri->units, ri->time,
           sc_prog_seconds(pg) ? " s" : "", max_of(ri->base_peak, P));
}
