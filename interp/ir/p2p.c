/*
 * p2p.c — the point-to-point mode of a program (p2p.h), its names, and
 * what its lowering is for.
 */
#include "p2p.h"
#include "alloc.h"
#include "ir_impl.h"

#include <math.h>
#include <stdio.h>
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

sc_status sc_prog_set_eager(sc_prog *pg, double eager_bytes, double msg_bytes)
{
    if (!(eager_bytes >= 0) || !(msg_bytes >= 0) || !isfinite(eager_bytes) || !isfinite(msg_bytes))
        return sc_fail(pg, SC_ERR_ARG, "eager sends: sizes are bytes >= 0 (eager %g, message %g)",
                       eager_bytes, msg_bytes);
    int was = sc_prog_eager(pg);
    pg->eager_bytes = eager_bytes;
    pg->msg_bytes = msg_bytes;
    if (sc_prog_eager(pg) != was)
        sc_prog_invalidate(pg); /* a file's lowering chooses by the proof of its cells */
    return SC_OK;
}

int sc_prog_eager(const sc_prog *pg) { return pg->msg_bytes > 0 && pg->msg_bytes <= pg->eager_bytes; }

sc_status sc_prog_note_cell(sc_prog *pg, int d, int cell)
{
    if (d < 0 || d >= pg->P || pg->stream[d].n == 0)
        return sc_fail(pg, SC_ERR_ARG, "a cell noted for device %d, which has no instruction", d);
    if (!pg->cells && !(pg->cells = sc_calloc((size_t)pg->P, sizeof *pg->cells)))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    sc_cellv *c = &pg->cells[d];
    size_t k = pg->stream[d].n - 1;
    if (k >= c->cap) {
        size_t cap = c->cap ? c->cap : 64;
        while (cap <= k)
            cap *= 2;
        int32_t *v = sc_realloc(c->v, cap * sizeof *v);
        if (!v)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        c->v = v;
        c->cap = cap;
    }
    for (; c->n < k; c->n++)
        c->v[c->n] = 0; /* instructions without a cell of their own */
    c->v[k] = cell;
    c->n = k + 1;
    return SC_OK;
}

int sc_prog_cell(const sc_prog *pg, int d, size_t k)
{
    return pg->cells && d >= 0 && d < pg->P && k < pg->cells[d].n ? pg->cells[d].v[k] : 0;
}

void sc_transfer_token(const sc_instr *in, char *buf, size_t len)
{
    int act = in->dir == SC_DIR_ACT;
    if (sc_op_has(in->op, SC_OPF_OUT))
        snprintf(buf, len, "%d%s%d", act ? in->stage - 1 : in->stage + 1, act ? "SEND_F" : "SEND_B",
                 in->mb);
    else
        snprintf(buf, len, "%d%s%d", in->stage, act ? "RECV_F" : "RECV_B", in->mb);
}

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
