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
 *
 * Tested by: tests/unit/test_coll_run.c.
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

#endif
