/*
 * vocab_out.c — what `sim` adds for collectives and a model (docs/vocab.md):
 * the vocabulary placement, the collectives' time, and with a model the
 * parameter and activation bytes of every device.
 */
#include "cli.h"

#include <stdio.h>

#include "ir/flops.h"

/* "key": [v * scale...], "key_max": the largest. */
static void array(sc_jw *w, const char *key, const double *v, int n, double scale)
{
    double mx = 0;
    char kmax[64];
    sc_jw_array(w, key);
    for (int i = 0; i < n; i++) {
        sc_jw_num(w, NULL, v[i] * scale);
        mx = v[i] * scale > mx ? v[i] * scale : mx;
    }
    sc_jw_end(w);
    snprintf(kmax, sizeof kmax, "%s_max", key);
    sc_jw_num(w, kmax, mx);
}

void sc_cli_print_vocab(const sc_prog *pg, const sc_sim *sim, sc_jw *w)
{
    int P = sc_prog_devices(pg), model = sc_prog_has_model(pg);
    double pb[SC_MAX_DEVICES];
    for (int d = 0; d < P; d++)
        pb[d] = sc_prog_param_bytes(pg, d);
    double unit = sc_prog_unit_bytes(pg);
    if (w) {
        if (sc_prog_vocab(pg) != SC_VOCAB_NONE)
            sc_jw_str(w, "vocab_par", sc_vocab_name(sc_prog_vocab(pg)));
        if (sim->coll_busy) {
            sc_jw_int(w, "collectives", (long long)sim->colls);
            array(w, "coll_busy", sim->coll_busy, P, 1);
        }
        if (model) {
            array(w, "param_bytes", pb, P, 1);
            array(w, "peak_activation_bytes", sim->peak_mem, P, unit);
            sc_jw_num(w, "unit_bytes", unit);
        }
        return;
    }
    if (sc_prog_vocab(pg) != SC_VOCAB_NONE)
        printf("vocabulary    %s\n", sc_vocab_name(sc_prog_vocab(pg)));
    if (sim->coll_busy)
        printf("collectives   %zu instructions\n", sim->colls);
    if (!model && !sim->coll_busy)
        return;
    int c = sim->coll_busy != NULL;
    printf("device   %s%s\n", model ? (c ? "params GB   activations GB   " : "params GB   activations GB")
                                   : "", c ? "collectives busy" : "");
    for (int d = 0; d < P; d++) {
        printf("%-8d ", d);
        if (model && c)
            printf("%-11.4g %-16.4g ", pb[d] / 1e9, sim->peak_mem[d] * unit / 1e9);
        else if (model)
            printf("%-11.4g %.4g", pb[d] / 1e9, sim->peak_mem[d] * unit / 1e9);
        if (c)
            printf("%.6g", sim->coll_busy[d]);
        printf("\n");
    }
}
