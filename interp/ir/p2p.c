/*
 * p2p.c — the point-to-point mode of a program (p2p.h), its names, and
 * what its lowering is for.
 */
#include "p2p.h"
#include "ir_impl.h"

#include <string.h>

static const char *const names[] = {"nccl", "gloo", "per-link"};

sc_status sc_prog_set_p2p(sc_prog *pg, int mode)
{
    if (mode < SC_P2P_NCCL || mode > SC_P2P_LINK)
        return sc_fail(pg, SC_ERR_ARG, "unknown point-to-point mode %d", mode);
    pg->p2p = mode;
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_p2p(const sc_prog *pg) { return pg->p2p; }

sc_status sc_prog_set_lower_target(sc_prog *pg, int target)
{
    if (target != SC_LOWER_STREAMS && target != SC_LOWER_FILE)
        return sc_fail(pg, SC_ERR_ARG, "unknown lowering target %d", target);
    if (pg->target != target) {
        pg->target = target;
        sc_prog_invalidate(pg);
    }
    return SC_OK;
}

int sc_prog_lower_target(const sc_prog *pg) { return pg->target; }

const char *sc_p2p_name(int mode)
{
    return mode >= SC_P2P_NCCL && mode <= SC_P2P_LINK ? names[mode] : "?";
}

int sc_p2p_parse(const char *name)
{
    for (int i = SC_P2P_NCCL; i <= SC_P2P_LINK; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}
