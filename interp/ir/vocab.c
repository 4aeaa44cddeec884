/*
 * vocab.c — the vocabulary layers in the IR (ir.h, docs/vocab.md): where
 * they go, the costs and memory of the vocabulary passes, the sizes of
 * their collectives.
 */
#include "ir/alloc.h"
#include "ir_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const vocab_names[] = {
#define X(name, text) text,
    SC_VOCABS(X)
#undef X
};
_Static_assert(sizeof(vocab_names) / sizeof(vocab_names[0]) == SC_VOCAB_COUNT, "vocab table");

const char *sc_vocab_name(int v)
{
    return (unsigned)v < SC_VOCAB_COUNT ? vocab_names[v] : "?";
}

int sc_vocab_parse(const char *name)
{
    for (int v = 0; v < SC_VOCAB_COUNT; v++)
        if (strcmp(name, vocab_names[v]) == 0)
            return v;
    return -1;
}

static sc_status ensure(sc_prog *pg)
{
    for (int i = 0; i < 4; i++)
        if (!pg->vcost[i] && !(pg->vcost[i] = sc_calloc((size_t)pg->P, sizeof(double))))
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    if (!pg->vmem && !(pg->vmem = sc_calloc((size_t)pg->P, sizeof(double))))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    return SC_OK;
}

sc_status sc_prog_set_vocab(sc_prog *pg, sc_vocab v)
{
    if ((unsigned)v >= SC_VOCAB_COUNT)
        return sc_fail(pg, SC_ERR_ARG, "unknown vocabulary placement %d", (int)v);
    if (sc_vocab_split(v)) {
        if ((long)(3L * pg->S + 4L * pg->P) * pg->m > SC_MAX_PASSES)
            return sc_fail(pg, SC_ERR_LIMIT,
                           "stages x microbatches = %d x %d with the vocabulary passes of %d "
                           "devices is too large (at most %ld passes)",
                           pg->S, pg->m, pg->P, SC_MAX_PASSES);
        sc_status st = ensure(pg);
        if (st)
            return st;
    }
    pg->vocab = v;
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_vocab sc_prog_vocab(const sc_prog *pg) { return pg->vocab; }

static int bad(double t) { return !isfinite(t) || t < 0; }

sc_status sc_prog_set_vocab_cost(sc_prog *pg, int d, double ts, double tt, double te, double tew)
{
    if (d < -1 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "vocabulary costs: device %d is out of range", d);
    if (bad(ts) || bad(tt) || bad(te) || bad(tew))
        return sc_fail(pg, SC_ERR_ARG, "vocabulary costs: times must be finite and >= 0 (ts=%g "
                       "tt=%g te=%g tew=%g)", ts, tt, te, tew);
    sc_status st = ensure(pg);
    if (st)
        return st;
    double t[4] = {ts, tt, te, tew};
    for (int i = d < 0 ? 0 : d; i < (d < 0 ? pg->P : d + 1); i++)
        for (int k = 0; k < 4; k++)
            pg->vcost[k][i] = t[k];
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_vocab_mem(sc_prog *pg, int d, double units)
{
    if (d < -1 || d >= pg->P || bad(units))
        return sc_fail(pg, SC_ERR_ARG, "vocabulary memory: device %d, %g units (finite, >= 0)",
                       d, units);
    sc_status st = ensure(pg);
    if (st)
        return st;
    for (int i = d < 0 ? 0 : d; i < (d < 0 ? pg->P : d + 1); i++)
        pg->vmem[i] = units;
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_vocab_bytes(sc_prog *pg, double act_bytes, double row_bytes)
{
    if (bad(act_bytes) || bad(row_bytes))
        return sc_fail(pg, SC_ERR_ARG, "vocabulary collectives: sizes must be finite and >= 0");
    pg->vact_bytes = act_bytes;
    pg->vrow_bytes = row_bytes;
    sc_prog_invalidate(pg);
    return SC_OK;
}

double sc_prog_vocab_cost(const sc_prog *pg, int op, int d)
{
    return sc_op_is_vocab(op) && d >= 0 && d < pg->P ? sc_op_cost(pg, op, d) : 0;
}

double sc_prog_vocab_mem(const sc_prog *pg, int d)
{
    return pg->vmem && d >= 0 && d < pg->P ? pg->vmem[d] : 0;
}

double sc_prog_vocab_bytes(const sc_prog *pg, int what, int part)
{
    return sc_vocab_coll_bytes(pg, what, part);
}
