/*
 * fsdp.c — the proof of UNSHARD and RESHARD (fsdp.h, docs/fsdp.md).
 *
 * One pass over each stream with a state per stage of the device: sharded,
 * unsharded (since the UNSHARD at a given instruction) and whether a pass
 * has used it since. Linear in the instructions.
 */
#include "fsdp.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <stdio.h>

#define SHARDED ((size_t)-1)

/* "d0 #12 (UNSHARD s0)" into buf. */
static void name_at(const sc_prog *pg, int d, size_t k, char *buf, size_t len)
{
    char tmp[112];
    sc_prog_instr_format(pg, &pg->stream[d].v[k], tmp, sizeof tmp);
    snprintf(buf, len, "d%d #%zu (%s)", d, k, tmp);
}

/* The first stage of the device still unsharded, or -1. */
static int open_stage(const sc_prog *pg, int d, const size_t *since)
{
    for (int c = 0; c < pg->nchunks[d]; c++)
        if (since[pg->dev_stages[d][c]] != SHARDED)
            return pg->dev_stages[d][c];
    return -1;
}

static sc_status unclosed(sc_prog *pg, int d, const size_t *since, const char *where)
{
    int s = open_stage(pg, d, since);
    if (s < 0)
        return SC_OK;
    char a[160];
    name_at(pg, d, since[s], a, sizeof a);
    return sc_fail(pg, SC_ERR_PROGRAM, "%s has no RESHARD of stage %d before %s (docs/fsdp.md#verification)",
                   a, s, where);
}

static sc_status device(sc_prog *pg, int d, size_t *since, unsigned char *used)
{
    const sc_vec *sv = &pg->stream[d];
    char a[160];
    for (size_t k = 0; k < sv->n; k++) {
        const sc_instr *in = &sv->v[k];
        if (sc_op_is_fsdp(in->op)) {
            int s = in->stage;
            name_at(pg, d, k, a, sizeof a);
            if (!pg->fsdp.dp)
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: the program has no FSDP (docs/fsdp.md)", a);
            if (s < 0 || s >= pg->S || pg->stage_dev[s] != d)
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d is not on d%d", a, s, d);
            if (in->op == SC_OP_UNSHARD) {
                if (since[s] != SHARDED)
                    return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d is already unsharded (since #%zu)",
                                   a, s, since[s]);
                since[s] = k;
                used[s] = 0;
            } else if (since[s] == SHARDED) {
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d is not unsharded (no UNSHARD of it "
                               "before)", a, s);
            } else if (!used[s]) {
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: no pass of stage %d since its UNSHARD at #%zu "
                               "(PyTorch asserts: resharding before finishing unshard)", a, s, since[s]);
            } else {
                since[s] = SHARDED;
            }
            continue;
        }
        if (in->op == SC_OP_OPTIM && pg->fsdp.dp) {
            sc_status st = unclosed(pg, d, since, "the optimizer step");
            if (st)
                return st;
        }
        if (!sc_op_is_slot(in->op) || !pg->fsdp.dp)
            continue;
        sc_instr h[2];
        for (int i = sc_instr_halves(in, h); i-- > 0;) {
            int s = h[i].stage;
            if (since[s] == SHARDED) {
                name_at(pg, d, k, a, sizeof a);
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d is sharded (no UNSHARD of it "
                               "before; docs/fsdp.md#verification)", a, s);
            }
            used[s] = 1;
        }
    }
    return pg->fsdp.dp ? unclosed(pg, d, since, "the end of its stream") : SC_OK;
}

sc_status sc_verify_fsdp(sc_prog *pg)
{
    size_t *since = sc_malloc((size_t)pg->S * sizeof(size_t));
    unsigned char *used = sc_calloc((size_t)pg->S, 1);
    sc_status st = since && used ? SC_OK : sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int s = 0; st == SC_OK && s < pg->S; s++)
        since[s] = SHARDED;
    for (int d = 0; st == SC_OK && d < pg->P; d++)
        st = device(pg, d, since, used);
    sc_free(since);
    sc_free(used);
    return st;
}
