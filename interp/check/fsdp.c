/*
 * fsdp.c — the proof of UNSHARD and RESHARD (fsdp.h, docs/fsdp.md).
 *
 * One pass over each stream with a state per stage of the device: sharded,
 * unsharded (since the UNSHARD at a given instruction) and whether a pass
 * has used it since; its weight gradients in the step and whether its
 * REDUCE_GRAD is posted. Linear in the instructions.
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

/* A stage's weight gradients in the step so far (wg) and whether its
 * REDUCE_GRAD has been posted (red). */
typedef struct grads {
    int *wg;
    unsigned char *red;
} grads;

/* At the step's OPTIM or the end of the stream (end; where names it): every stage of
 * the device with a weight gradient in the step has had its REDUCE_GRAD. */
static sc_status unreduced(sc_prog *pg, int d, grads *g, const char *where, int end)
{
    for (int c = 0; c < pg->nchunks[d]; c++) {
        int s = pg->dev_stages[d][c];
        if (!g->red[s] && (!end || g->wg[s] > 0))
            return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d has no REDUCE_GRAD before it "
                           "(docs/fsdp.md#verification)", where, s);
        g->red[s] = 0;
        g->wg[s] = 0;
    }
    return SC_OK;
}

/* REDUCE_GRAD of stage s at #k (named a): once per step, after the stage's
 * last weight gradient of it (PyTorch's _add_reduce_grad counts them). */
static sc_status reduce_grad(sc_prog *pg, int s, grads *g, const char *a)
{
    if (g->red[s])
        return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d has its REDUCE_GRAD already in this step", a, s);
    if (g->wg[s] != pg->m)
        return sc_fail(pg, SC_ERR_PROGRAM, "%s: before the last weight gradient of stage %d "
                       "(%d of %d in this step; docs/fsdp.md#verification)", a, s, g->wg[s], pg->m);
    g->red[s] = 1;
    return SC_OK;
}

static sc_status device(sc_prog *pg, int d, size_t *since, unsigned char *used, grads *g)
{
    const sc_vec *sv = &pg->stream[d];
    char a[160];
    if (!pg->fsdp.dp) { /* without FSDP, an UNSHARD, RESHARD or REDUCE_GRAD is the error */
        for (size_t k = 0; k < sv->n; k++)
            if (sc_op_is_fsdp(sv->v[k].op)) {
                name_at(pg, d, k, a, sizeof a);
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: the program has no FSDP (docs/fsdp.md)", a);
            }
        return SC_OK;
    }
    for (size_t k = 0; k < sv->n; k++) {
        const sc_instr *in = &sv->v[k];
        if (sc_op_is_fsdp(in->op)) {
            int s = in->stage;
            name_at(pg, d, k, a, sizeof a);
            if (s < 0 || s >= pg->S || pg->stage_dev[s] != d)
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d is not on d%d", a, s, d);
            if (in->op == SC_OP_REDUCE_GRAD) {
                sc_status st = reduce_grad(pg, s, g, a);
                if (st)
                    return st;
            } else if (in->op == SC_OP_UNSHARD) {
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
        if (in->op == SC_OP_OPTIM) {
            sc_status st = unclosed(pg, d, since, "the optimizer step");
            name_at(pg, d, k, a, sizeof a);
            if (st == SC_OK)
                st = unreduced(pg, d, g, a, 0);
            if (st)
                return st;
        }
        if (!sc_op_is_slot(in->op))
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
            if (sc_op_is_wgrad(h[i].op) && g->red[s]) {
                name_at(pg, d, k, a, sizeof a);
                return sc_fail(pg, SC_ERR_PROGRAM, "%s: a weight gradient of stage %d after its "
                               "REDUCE_GRAD (docs/fsdp.md#verification)", a, s);
            }
            g->wg[s] += sc_op_is_wgrad(h[i].op);
        }
    }
    sc_status st = unclosed(pg, d, since, "the end of its stream");
    snprintf(a, sizeof a, "d%d: the end of its stream", d);
    return st ? st : unreduced(pg, d, g, a, 1);
}

sc_status sc_verify_fsdp(sc_prog *pg)
{
    size_t *since = sc_malloc((size_t)pg->S * sizeof(size_t));
    unsigned char *used = sc_calloc(2 * (size_t)pg->S, 1);
    grads g = {sc_calloc((size_t)pg->S, sizeof(int)), used ? used + pg->S : NULL};
    sc_status st = since && used && g.wg ? SC_OK : sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int s = 0; st == SC_OK && s < pg->S; s++)
        since[s] = SHARDED;
    for (int d = 0; st == SC_OK && d < pg->P; d++)
        st = device(pg, d, since, used, &g);
    sc_free(since);
    sc_free(used);
    sc_free(g.wg);
    return st;
}
