/*
 * ep.c — DISPATCH, COMBINE and the dense gradients' all-reduce of
 * expert parallelism in the lowered streams (ep.h).
 */
#include "ep.h"

sc_status sc_lower_ep_prepare(sc_prog *pg)
{
    if (pg->ep <= 1)
        return SC_OK;
    const char *no = sc_vocab_split(pg->vocab) ? "a split vocabulary"
                     : pg->sync == SC_SYNC_POSTVAL ? "post-validation"
                     : pg->fsdp.dp > 0              ? "fsdp"
                     : pg->fwd_only                 ? "forward-only"
                                                    : NULL;
    if (no)
        return sc_fail(pg, SC_ERR_ARG, "ep = %d is not combined with %s yet", pg->ep, no);
    for (int s = 0; s < pg->S; s++)
        if (sc_prog_ep_stage(pg, s))
            pg->ta[s] = sc_prog_ep_time(pg, s);
    return SC_OK;
}

size_t sc_lower_ep_count(const sc_prog *pg, const sc_vec *ov)
{
    if (pg->ep <= 1)
        return 0;
    return 4 * ov->n + 1;
}

sc_status sc_lower_ep_pass(sc_prog *pg, int d, sc_vec *sv, const sc_instr *in)
{
    if (pg->ep <= 1)
        return SC_OK;
    sc_instr h[2];
    int n = sc_instr_halves(in, h);
    for (int i = 0; i < n; i++) {
        double bytes = sc_prog_ep_bytes(pg, h[i].stage);
        if (!sc_prog_ep_stage(pg, h[i].stage) || !sc_op_is_compute(h[i].op) || h[i].op == SC_OP_W)
            continue; /* W: the experts' weight gradients stay local */
        int g = sc_prog_ep_group(pg, d);
        if (g < 0)
            return SC_ERR_NOMEM;
        for (int part = 0; part < 2; part++) {
            sc_coll c = {.op = part ? SC_OP_COMBINE : SC_OP_DISPATCH, .what = h[i].op,
                         .part = part, .stage = h[i].stage, .mb = h[i].mb, .root = -1,
                         .group = g, .bytes = bytes};
            sc_status st = sc_coll_push(pg, sv, &c);
            if (st)
                return st;
        }
    }
    return SC_OK;
}

sc_status sc_lower_ep_reduce(sc_prog *pg, int d, sc_vec *sv)
{
    if (pg->ep <= 1)
        return SC_OK;
    int g = sc_prog_ep_group(pg, d);
    if (g < 0)
        return SC_ERR_NOMEM;
    sc_coll c = {.op = SC_OP_ALLREDUCE, .red = SC_RED_SUM, .what = SC_OP_W, .stage = -1,
                 .mb = -1, .root = -1, .group = g, .bytes = sc_prog_ep_dense(pg, d)};
    return sc_coll_push(pg, sv, &c);
}
