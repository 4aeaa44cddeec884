/*
 * fwdonly.c — forward-only programs (fwdonly.h, docs/guide.md#forward-only).
 */
#include "ir_impl.h"

sc_status sc_prog_set_forward_only(sc_prog *pg, int on)
{
    pg->fwd_only = on != 0;
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_forward_only(const sc_prog *pg) { return pg->fwd_only; }

sc_status sc_prog_check_forward_only(sc_prog *pg)
{
    if (!pg->fwd_only)
        return SC_OK;
    const char *no = pg->steps > 1 || pg->sync != SC_SYNC_NONE ? "training steps (steps, optim_sync)"
                     : pg->off.policy != SC_OFFLOAD_NONE      ? "offload"
                     : pg->rc.policy != SC_RECOMPUTE_NONE     ? "recompute"
                     : pg->fsdp.dp                            ? "FSDP"
                     : sc_vocab_split(pg->vocab)              ? "a split vocabulary (vocab_par)"
                                                              : NULL;
    if (no)
        return sc_fail(pg, SC_ERR_ARG,
                       "program: a forward-only program (docs/guide.md#forward-only) has no "
                       "backward, so it does not go with %s",
                       no);
    return SC_OK;
}
