/*
 * steps.c — one step's streams repeated for every step, and the
 * synchronization of their optimizer steps (steps.h).
 */
#include "steps.h"
#include "ir/ir_impl.h"
#include "postval.h"

/* The optimizer state a device sends: sum of squares, count of non-finite
 * values (two doubles). */
#define STATE_BYTES 16.0

/* sync: after every REDUCE, an all-reduce of the sum of squares (part 0)
 * and one of the count of non-finite values (part 1), over every device;
 * OPTIM reads every collective posted before it. */
static sc_status add_sync(sc_prog *pg)
{
    for (int d = 0; d < pg->P; d++) {
        sc_vec out = {0};
        const sc_vec *sv = &pg->stream[d];
        int step = 0;
        sc_status st = SC_OK;
        for (size_t k = 0; k < sv->n && st == SC_OK; k++) {
            if ((st = sc_vec_push(&out, sv->v[k])) != SC_OK)
                break;
            if (sv->v[k].op != SC_OP_REDUCE)
                continue;
            for (int part = 0; part < 2 && st == SC_OK; part++) {
                sc_coll c = {.op = SC_OP_ALLREDUCE, .red = part ? SC_RED_MAX : SC_RED_SUM,
                             .what = SC_OP_REDUCE, .part = part, .stage = -1, .mb = -1,
                             .step = step, .root = -1, .group = 0, .bytes = STATE_BYTES / 2};
                st = sc_coll_push(pg, &out, &c);
            }
            step++;
        }
        if (st != SC_OK) {
            sc_vec_free(&out);
            return st == SC_ERR_NOMEM ? sc_fail(pg, st, "out of memory unrolling the steps") : st;
        }
        sc_vec_free(&pg->stream[d]);
        pg->stream[d] = out;
    }
    return SC_OK;
}

sc_status sc_lower_steps(sc_prog *pg)
{
    int N = pg->steps, m = pg->m;
    for (int d = 0; d < pg->P; d++) {
        sc_vec *sv = &pg->stream[d];
        size_t n = sv->n;
        for (int k = 1; k < N; k++)
            for (size_t i = 0; i < n; i++) {
                sc_instr in = sv->v[i];
                sc_instr_shift_mb(&in, k * m); /* a pair: both halves */
                if (sc_op_is_coll(in.op)) { /* step 0's collective, again for step k */
                    sc_coll c;
                    sc_prog_coll(pg, &sv->v[i], &c);
                    c.step = k;
                    sc_status st = sc_coll_push(pg, sv, &c);
                    if (st != SC_OK)
                        return st;
                } else if (sc_vec_push(sv, in) != SC_OK) {
                    return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling %d steps", N);
                }
            }
    }
    pg->nmb = m * N;
    if (pg->sync == SC_SYNC_SYNC)
        return add_sync(pg);
    if (pg->sync == SC_SYNC_POSTVAL)
        return sc_lower_postval(pg, STATE_BYTES);
    return SC_OK;
}
