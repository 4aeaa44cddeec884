/*
 * lengths_out.c — what `sim` says of microbatches of different lengths
 * (docs/lengths.md): in --json the members "lengths" (tokens per
 * microbatch) and "length_ref" (the length the costs are given for); in
 * text one line. Nothing when the microbatches are alike.
 */
#include "sim_out.h"

#include "model/flops.h"

#include <math.h>

void sc_eng_print_lengths(FILE *out, const sc_prog *pg, sc_jw *w)
{
    const double *len = sc_prog_lengths(pg);
    if (!len)
        return;
    int m = sc_prog_microbatches(pg);
    double lo = INFINITY, hi = 0, sum = 0;
    for (int i = 0; i < m; i++) {
        lo = fmin(lo, len[i]);
        hi = fmax(hi, len[i]);
        sum += len[i];
    }
    if (w) {
        sc_jw_nums(w, "lengths", len, m);
        sc_jw_num(w, "length_ref", sc_prog_length_ref(pg));
        return;
    }
    fprintf(out, "lengths       %.6g to %.6g tokens per microbatch, %.6g in all; costs and bytes "
            "scale from %.6g (%s)\n", lo, hi, sum, sc_prog_length_ref(pg),
            sc_prog_len_per_token(pg) ? "the cost file's tokens, its per-token costs"
            : sc_prog_has_model(pg) ? "the model's seq" : "their mean");
}
