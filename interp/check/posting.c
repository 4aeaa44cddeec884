/*
 * posting.c — the message of a pair out of posting order (posting.h).
 */
#include "posting.h"

#include <stdio.h>

static int same_message(const sc_instr *x, const sc_instr *y)
{
    return x->dir == y->dir && x->stage == y->stage && x->mb == y->mb;
}

static void describe(const sc_prog *pg, int d, size_t k, char *buf, size_t len)
{
    char tmp[96];
    sc_instr_format(&pg->stream[d].v[k], tmp, sizeof tmp);
    snprintf(buf, len, "d%d #%zu (%s)", d, k, tmp);
}

sc_status sc_posting_mismatch(sc_prog *pg, int a, size_t ks, int b, size_t q)
{
    const sc_instr *in = &pg->stream[a].v[ks];
    const sc_vec *bv = &pg->stream[b];
    size_t kr = 0, seen = 0; /* the q-th RECV on b from a: there is one (posting.h) */
    for (size_t j = 0; j < bv->n; j++)
        if (bv->v[j].op == SC_OP_RECV && bv->v[j].peer == a && seen++ == q) {
            kr = j;
            break;
        }
    size_t own = bv->n;
    for (size_t j = 0; j < bv->n && own == bv->n; j++)
        if (sc_op_is_recv(bv->v[j].op) && bv->v[j].peer == a && same_message(&bv->v[j], in))
            own = j;
    char x[128], y[128], z[128];
    describe(pg, a, ks, x, sizeof x);
    describe(pg, b, kr, y, sizeof y);
    if (own < bv->n)
        describe(pg, b, own, z, sizeof z);
    else
        snprintf(z, sizeof z, "missing");
    return sc_fail(pg, SC_ERR_PROGRAM,
                   "transfers out of posting order: %s and %s pair up (send and receive %zu "
                   "between d%d and d%d; NCCL and gloo match in posting order) but carry "
                   "different messages (its RECV is %s)",
                   x, y, q + 1, a, b, z);
}
