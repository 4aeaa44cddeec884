/*
 * steps.c — one step's streams repeated for every step (steps.h).
 */
#include "steps.h"
#include "ir/ir_impl.h"

sc_status sc_lower_steps(sc_prog *pg)
{
    int N = pg->steps, m = pg->m;
    if (pg->sync != SC_SYNC_NONE)
        return sc_fail(pg, SC_ERR_ARG, "optim_sync %s is not built yet (it needs the collective "
                       "instructions)", sc_sync_name(pg->sync));
    for (int d = 0; d < pg->P; d++) {
        sc_vec *sv = &pg->stream[d];
        size_t n = sv->n;
        for (int k = 1; k < N; k++)
            for (size_t i = 0; i < n; i++) {
                sc_instr in = sv->v[i];
                if (in.mb >= 0)
                    in.mb += k * m;
                if (sc_vec_push(sv, in) != SC_OK)
                    return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling %d steps", N);
            }
    }
    pg->nmb = m * N;
    return SC_OK;
}
