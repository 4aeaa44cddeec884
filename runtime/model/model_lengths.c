/*
 * model_lengths.c — microbatches of different lengths in the built-in model
 * (model.h's cfg.lengths, docs/lengths.md#running-them): the check of the
 * lengths and the sizes that follow from them (model_impl.h's
 * sc_model_seq, sc_model_rows).
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

sc_status sc_model_lengths_check(const sc_model_cfg *cfg, int m, long dim_max, long *seq_max,
                                 char *err, size_t errlen)
{
    *seq_max = cfg->seq;
    for (int i = 0; cfg->lengths && i < m; i++) {
        double L = cfg->lengths[i];
        if (!(L >= 1) || L != floor(L)) {
            snprintf(err, errlen, "lengths: entry %d is %g: run trains whole tokens (a length "
                     "must be a whole number >= 1)", i + 1, L);
            return SC_ERR_ARG;
        }
        if (L * (double)(cfg->batch > 0 ? cfg->batch : 1) > (double)dim_max) {
            snprintf(err, errlen, "lengths: entry %d is %g: %g rows of batch %ld is too large "
                     "(at most %ld)", i + 1, L, L * (double)cfg->batch, cfg->batch, dim_max);
            return SC_ERR_LIMIT;
        }
        if ((long)L > *seq_max)
            *seq_max = (long)L;
    }
    return SC_OK;
}

sc_status sc_model_lengths_init(sc_model *md)
{
    const double *len = md->c.lengths;
    md->c.lengths = NULL; /* not kept: copied */
    md->Rmax = md->R;
    md->Rsum = (double)md->m * md->R;
    if (!len)
        return SC_OK;
    if (!(md->lens = malloc((size_t)md->m * sizeof(int))))
        return SC_ERR_NOMEM;
    md->Rsum = 0;
    for (int i = 0; i < md->m; i++) {
        md->lens[i] = (int)len[i];
        md->Rsum += sc_model_rows(md, i);
        if (sc_model_rows(md, i) > md->Rmax)
            md->Rmax = sc_model_rows(md, i);
    }
    return SC_OK;
}

double *sc_model_lengths_of(const sc_model *md)
{
    double *len = malloc((size_t)md->m * sizeof(double));
    for (int i = 0; len && i < md->m; i++)
        len[i] = md->lens[i];
    return len;
}
