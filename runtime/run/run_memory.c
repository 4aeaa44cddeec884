/*
 * run_memory.c — the prediction's memory model from the model (run.h):
 * each stage's record, its parts and the share W keeps; with microbatches
 * of different lengths (docs/lengths.md#running-them) each record's
 * measured size, as the executor allocates it (run_impl.h).
 */
#include "run_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/offload_cfg.h"
#include "ir/recompute_cfg.h"

double sc_run_unit_bytes(const sc_model *md, int P, int S)
{
    double total = 0;
    for (int s = 0; s < S; s++)
        total += (double)sc_model_record_bytes(md, s, -1);
    return total / P;
}

sc_status sc_run_set_memory(sc_prog *pg, const sc_model *md, double *unit_bytes, char *err,
                            size_t errlen)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg);
    *unit_bytes = sc_run_unit_bytes(md, P, S);
    /* The MLP's B frees nothing (model/model.h); the decoder's frees its
     * b_only parts, a share of the record that differs by stage. */
    sc_status st = sc_prog_set_w_keep(pg, 1.0);
    for (int s = 0; s < S && !st; s++) {
        double all = (double)sc_model_record_bytes(md, s, -1);
        st = sc_prog_set_mem(pg, s, all / *unit_bytes);
        if (!st && sc_model_record_bonly_bytes(md, s, -1))
            st = sc_prog_set_stage_w_keep(pg, s, sc_model_record_kept_bytes(md, s, -1) / all);
    }
    /* A split vocabulary: S's record, held until T, and the sizes of its
     * collectives (docs/vocab.md#running-the-split-model): a row of hidden floats per row of the
     * microbatch, or one float per row (the sums carry two). */
    if (!st && sc_vocab_split(sc_prog_vocab(pg)))
        st = sc_prog_set_vocab_mem(pg, -1, (double)sc_model_vocab_record_bytes(md) / *unit_bytes);
    if (!st && sc_vocab_split(sc_prog_vocab(pg)))
        st = sc_prog_set_vocab_bytes(pg, (double)sc_model_boundary_bytes(md, -1),
                                     (double)sc_model_row_bytes(md));
    /* Offload moves whole tensors: the plan rounds its fractions to them. */
    for (int s = 0; s < S && !st; s++) {
        int n = sc_model_record_parts(md, s, -1, NULL, 0);
        int nb = n + !!sc_model_record_bonly_bytes(md, s, -1);
        size_t *b = malloc((size_t)nb * sizeof(size_t));
        double *x = malloc((size_t)nb * sizeof(double));
        if (!b || !x) {
            free(b);
            free(x);
            snprintf(err, errlen, "out of memory");
            return SC_ERR_NOMEM;
        }
        sc_model_record_parts(md, s, -1, b, n);
        if (nb > n) /* the executor's last part: b_only (exec/exec.h) */
            b[n] = sc_model_record_bonly_bytes(md, s, -1);
        for (int i = 0; i < nb; i++)
            x[i] = (double)b[i];
        st = sc_prog_set_offload_parts(pg, s, nb, x);
        free(b);
        free(x);
    }
    if (st)
        snprintf(err, errlen, "%s", sc_errmsg(pg));
    return st;
}

sc_status sc_run_set_len_records(sc_prog *pg, const sc_model *md, double unit_bytes, char *err,
                                 size_t errlen)
{
    if (!sc_prog_lengths(pg) && sc_prog_slices(pg) <= 1)
        return SC_OK; /* slices: each record's measured size too */
    if (sc_vocab_split(sc_prog_vocab(pg))) {
        snprintf(err, errlen, "run: microbatches of different lengths with a split vocabulary "
                 "(%s) are not trained yet (docs/lengths.md)", sc_vocab_name(sc_prog_vocab(pg)));
        return SC_ERR_ARG;
    }
    int S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    /* A recomputation drops the last tensors of a record, a share that the
     * plan rounds per stage: the same for every length only when all of
     * them grow alike (not the decoder's b_only: its attention
     * probabilities grow with the square). */
    if (sc_prog_recompute(pg)->policy != SC_RECOMPUTE_NONE &&
        sc_model_record_bonly_bytes(md, 0, -1)) {
        snprintf(err, errlen, "run: recomputation of the decoder with microbatches of different "
                 "lengths is not trained yet (docs/lengths.md)");
        return SC_ERR_ARG;
    }
    size_t n = (size_t)S * (size_t)m;
    double *units = malloc(n * sizeof *units), *kept = malloc(n * sizeof *kept);
    if (!units || !kept) {
        free(units);
        free(kept);
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    /* Record (s, i): all of it in units, and the share W keeps (B frees the
     * rest: the decoder's b_only, partly quadratic in the length). */
    for (size_t i = 0; i < n; i++) {
        int s = (int)(i / (size_t)m), mb = (int)(i % (size_t)m);
        double all = (double)sc_model_record_bytes(md, s, mb);
        units[i] = all / unit_bytes;
        kept[i] = all > 0 ? (double)sc_model_record_kept_bytes(md, s, mb) / all : 1;
    }
    sc_status st = sc_prog_set_len_records(pg, units, kept);
    if (st)
        snprintf(err, errlen, "%s", sc_errmsg(pg));
    free(units);
    free(kept);
    return st;
}

sc_status sc_run_slice_lengths(const sc_prog *pg, long seq, double **out, char *err,
                               size_t errlen)
{
    int m = sc_prog_microbatches(pg), K = sc_prog_slices(pg);
    double *v = malloc((size_t)m * sizeof *v);
    *out = v;
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    for (int r = 0; r < m; r++) {
        int j = r % K;
        double c0 = llround(sc_prog_slice_cut(pg, j) * (double)seq);
        v[r] = (double)llround(sc_prog_slice_cut(pg, j + 1) * (double)seq) - c0;
        if (v[r] < 1) {
            snprintf(err, errlen, "run: slice %d of %d of seq = %ld tokens is empty (use fewer "
                     "slices or a longer seq)", j, K, seq);
            return SC_ERR_ARG;
        }
    }
    return SC_OK;
}

size_t sc_run_record_max(const sc_model *md, int s, int m, int boundary)
{
    size_t most = 0;
    for (int mb = -1; mb < m; mb++) {
        size_t b = boundary ? sc_model_boundary_bytes(md, mb) : sc_model_record_bytes(md, s, mb);
        most = b > most ? b : most;
    }
    return most;
}
