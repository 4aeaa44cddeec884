/*
 * coll_host.h — a collective of the devices of one process, completed on
 * the host (transport.h's sc_cxfer): the members' buffers (host memory, one
 * per device) are reduced in device order, or overwritten with the root's.
 * Shared by the local transport (threads, their buffers) and the
 * cuda-local transport (host copies of device buffers); inline, so that the
 * CUDA module, which links nothing of the runtime's library, has it too.
 *
 * Device order: a = buf[0]; a = a (+ or max) buf[d] for d = 1 .. P-1; every
 * member gets a. The same bits on every run, whatever the threads' timing.
 * An all-to-all (sc_a2a_part) moves each member's rows to the others.
 *
 * Tested by: tests/unit/test_coll_run.c, tests/unit/test_a2a_run.c.
 */
#ifndef SC_COLL_HOST_H
#define SC_COLL_HOST_H

#include <string.h>

#include "transport.h"

static inline size_t sc_coll_dtype_size(int dtype)
{
    return dtype == SC_DT_F64 ? sizeof(double) : sizeof(float);
}

/* Whether two members describe the same collective (kind, reduction,
 * root of a broadcast, element type and count). */
static inline int sc_coll_same(const sc_cxfer *a, const sc_cxfer *b)
{
    return a->op == b->op && a->red == b->red && a->dtype == b->dtype && a->count == b->count &&
           (!sc_cxfer_bcast(a->op) || a->root == b->root);
}

/* Completes collective x over buf[0..P) (x->count elements each). */
static inline void sc_coll_host_complete(const sc_cxfer *x, void *const *buf, int P)
{
    if (sc_cxfer_bcast(x->op)) {
        for (int d = 0; d < P; d++)
            if (d != x->root)
                memcpy(buf[d], buf[x->root], x->count * sc_coll_dtype_size(x->dtype));
        return;
    }
    int mx = x->red == SC_RED_MAX;
    for (size_t i = 0; i < x->count; i++) {
        if (x->dtype == SC_DT_F64) {
            double a = ((const double *)buf[0])[i];
            for (int d = 1; d < P; d++) {
                double b = ((const double *)buf[d])[i];
                a = mx ? (b > a ? b : a) : a + b;
            }
            for (int d = 0; d < P; d++)
                ((double *)buf[d])[i] = a;
        } else {
            float a = ((const float *)buf[0])[i];
            for (int d = 1; d < P; d++) {
                float b = ((const float *)buf[d])[i];
                a = mx ? (b > a ? b : a) : a + b;
            }
            for (int d = 0; d < P; d++)
                ((float *)buf[d])[i] = a;
        }
    }
}

/* An all-to-all (DISPATCH, COMBINE: transport.h's a2a_start) completed over
 * the E members' parts: member r receives, source-major, the rows each
 * member e sent it (e's rows for r follow e's rows for 0..r-1 in e's send
 * buffer); nrecv[e] = nsend_e[r]; more than rcap rows set overflow and copy
 * none. The same bytes on every run. */
static inline void sc_a2a_host_complete(sc_a2a_part *const *part, int E)
{
    for (int r = 0; r < E; r++) {
        sc_a2a_part *to = part[r];
        size_t total = 0, off = 0;
        for (int e = 0; e < E; e++)
            total += part[e]->nsend[r];
        to->overflow = total > to->rcap;
        for (int e = 0; e < E; e++) {
            const sc_a2a_part *from = part[e];
            size_t at = 0;
            for (int j = 0; j < r; j++)
                at += from->nsend[j];
            size_t n = from->nsend[r];
            to->nrecv[e] = n;
            if (!to->overflow && n)
                memcpy((char *)to->recv + off * to->row, (const char *)from->send + at * from->row,
                       n * to->row);
            off += n;
        }
    }
}

#endif
