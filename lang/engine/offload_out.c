/*
 * offload_out.c — what `sim` adds for activation offload (docs/offload.md#figures):
 * the policy, the records moved, host memory, the host links' use.
 */
#include "sim_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/offload_cfg.h"

static double max_of(const double *v, int n)
{
    double x = 0;
    for (int i = 0; i < n; i++)
        x = fmax(x, v[i]);
    return x;
}

void sc_eng_print_offload(FILE *out, const sc_prog *pg, const sc_sim *sim, sc_jw *w)
{
    static const char *const names[] = {"none", "all", "selective", "budget", "function"};
    const sc_offload_info *oi = sc_prog_offload_info(pg);
    const sc_offload_cfg *c = sc_prog_offload(pg);
    if (!oi && !sim->host_peak)
        return;
    int P = sim->P;
    double span = sim->makespan > 0 ? sim->makespan : 1;
    double *busy = calloc(2 * (size_t)P, sizeof(double));
    double *usage = calloc(SC_USAGE_BINS, sizeof(double));
    double *zero = calloc((size_t)P, sizeof(double));
    if (!busy || !usage || !zero) {
        free(busy);
        free(usage);
        free(zero);
        return;
    }
    for (int i = 0; i < 2 * P && sim->link_busy; i++)
        busy[i] = sim->link_busy[i] / span;
    const double *host = sim->host_peak ? sim->host_peak : zero;
    if (w) {
        sc_jw_object(w, "offload");
        sc_jw_str(w, "policy", names[c->policy]);
        sc_jw_num(w, "ratio", c->ratio);
        sc_jw_bool(w, "shared_link", c->shared);
        if (oi) {
            sc_jw_int(w, "records", oi->records);
            sc_jw_int(w, "moved", oi->moved);
            sc_jw_int(w, "skipped", oi->skipped);
            sc_jw_int(w, "backed_off", oi->backed_off);
            sc_jw_nums(w, "chunks", oi->level, P);
            sc_jw_nums(w, "peak_memory_without", oi->base_peak, P);
            sc_jw_num(w, "peak_memory_without_max", max_of(oi->base_peak, P));
        }
        sc_jw_num(w, "units_moved", sim->moved);
        sc_jw_nums(w, "host_peak", host, P);
        sc_jw_num(w, "host_peak_max", max_of(host, P));
        for (int k = 0; k < 2; k++) {
            sc_jw_array(w, k ? "link_busy_h2d" : "link_busy_d2h");
            for (int d = 0; d < P; d++)
                sc_jw_num(w, NULL, busy[2 * d + k]);
            sc_jw_end(w);
        }
        for (int k = 0; k < 2; k++) {
            sc_jw_array(w, k ? "link_usage_h2d" : "link_usage_d2h");
            for (int d = 0; d < P; d++) {
                sc_sim_link_usage(pg, sim, d, k, SC_USAGE_BINS, usage);
                sc_jw_nums(w, NULL, usage, SC_USAGE_BINS);
            }
            sc_jw_end(w);
        }
        sc_jw_end(w);
    } else {
        fprintf(out, "offload       %s, ratio %.4g (%s)", names[c->policy], c->ratio,
               c->shared ? "devices 2k, 2k+1 share a host link" : "a host link per device");
        if (oi)
            fprintf(out, ": %d of %d records moved, %.4g units", oi->moved, oi->records, sim->moved);
        if (oi && oi->skipped + oi->backed_off)
            fprintf(out, " (%d left: window shorter than three transfers, %d: the link is busy)",
                   oi->skipped, oi->backed_off);
        fprintf(out, "\n");
        if (oi)
            fprintf(out, "without       peak %.4g units (max)\n", max_of(oi->base_peak, P));
        double bd = 0, bh = 0;
        for (int d = 0; d < P; d++) {
            bd = fmax(bd, busy[2 * d]);
            bh = fmax(bh, busy[2 * d + 1]);
        }
        fprintf(out, "host memory   peak %.4g units (max)\nhost link     busy %.2f%% to the host, "
               "%.2f%% back (max over devices)\n", max_of(host, P), 100 * bd, 100 * bh);
    }
    free(busy);
    free(usage);
    free(zero);
}
