/*
 * copies.c — copies of the model: the stages as several copies of the
 * layers, each microbatch through one of them (ir.h, docs/guide.md#copies).
 */
#include "ir_impl.h"

sc_status sc_prog_set_copies(sc_prog *pg, int copies)
{
    if (copies < 1 || pg->S % copies || pg->m % copies)
        return sc_fail(pg, SC_ERR_ARG,
                       "copies = %d: the stages (%d) and the microbatches (%d) must be multiples "
                       "of it", copies, pg->S, pg->m);
    pg->copies = copies;
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_copies(const sc_prog *pg) { return pg->copies; }
int sc_prog_first_stage(const sc_prog *pg, int mb) { return sc_mb_first(pg, mb); }
int sc_prog_last_stage(const sc_prog *pg, int mb) { return sc_mb_last(pg, mb); }

double sc_prog_param_share(const sc_prog *pg, int d)
{
    return (double)pg->nchunks[d] / (pg->S / pg->copies);
}
