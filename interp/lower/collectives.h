/*
 * collectives.h — where lowering posts collectives (internal to lower/;
 * docs/semantics.md#collectives, docs/vocab.md#placements).
 *
 * The collectives of a program (the vocabulary passes' for now,
 * sc_vocab_colls) are ranked in one global order by when their data is
 * ready in the dataflow timing (the latest end of the passes that produce
 * it, then that pass's place in the dataflow run, then the tag), and every
 * member posts them in that order: right after the pass that produces its
 * part of the data, or, on a broadcast's receivers, before the pass that
 * runs when the root produces it (as a RECV, lower.h). A position is never
 * before the one of the collective ranked before it on the device. So the
 * k-th collective is the same on every member, and a pass that reads one
 * finds it posted before it.
 *
 * Tested by: tests/unit/test_count_before.c, tests/unit/test_coll.c.
 */
#ifndef SC_LOWER_COLLECTIVES_H
#define SC_LOWER_COLLECTIVES_H

#include "ir/ir_impl.h"

/* A collective of one device's stream: it goes before pass #pos of the
 * device's order (pos = the order's length: at the end). */
typedef struct sc_lcoll {
    size_t pos;
    sc_coll c;
} sc_lcoll;

/* The collectives of every device, in posting order: lists[d][0..n[d]),
 * malloc'd (the caller frees each list and may pass NULL lists for a
 * program without collectives). start, end, seq: the dataflow timing of
 * the orders (dataflow.h). */
sc_status sc_lower_colls(sc_prog *pg, const double *start, const double *end, const size_t *seq,
                         sc_lcoll **lists, size_t *n);

/* Number of passes (from index 0) of a device that come before data
 * produced at tau by the pass that ran seq-th in the dataflow timing
 * (start, end, sq: the device's n passes). */
size_t sc_lower_count_before(const double *start, const double *end, const size_t *sq, size_t n,
                             double tau, size_t seq);

#endif
