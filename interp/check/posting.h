/*
 * posting.h — transfers between two devices pair in posting order
 * (docs/semantics.md#the-semantics, rule 4). Internal to interp/check.
 *
 * NCCL and gloo match the k-th SEND from device a to device b with the k-th
 * RECV on b from a, whatever the two carry. The replay proves that every
 * such pair is one message (direction, stage, microbatch: hence one size),
 * for every program, lowered or given: once its checks have matched the
 * transfers one to one by message, the pairs are one message each exactly
 * when every SEND's rank among a's SENDs to b equals its match's rank among
 * b's RECVs from a (sc_posting_rank numbers them in one pass). A
 * mismatch is reported at the first such pair in the order (a, b, k), as
 * SC_ERR_PROGRAM naming both instructions and the RECV of the SEND's message:
 *   transfers out of posting order: d0 #2 (SEND act s1 mb1 -> d1) and
 *   d1 #0 (RECV act s1 mb0 <- d0) pair up (send and receive 1 between d0 and
 *   d1; NCCL and gloo match in posting order) but carry different messages
 *   (its RECV is d1 #1 (RECV act s1 mb1 <- d0))
 *
 * Tested by: tests/unit/test_replay.c.
 */
#ifndef SC_POSTING_H
#define SC_POSTING_H

#include "ir/ir_impl.h"

/* The rank of the transfer in of device d among d's transfers of its kind
 * (SEND or RECV) with its peer so far: cnt holds 2P counters, zeroed for
 * each device. */
static inline int sc_posting_rank(const sc_prog *pg, const sc_instr *in, int *cnt)
{
    return cnt[(sc_op_is_send(in->op) ? pg->P : 0) + in->peer]++;
}

/* The error for the q-th SEND (from 0) from a to b, at #ks of a's stream,
 * which pairs with the q-th RECV on b from a but carries another message. */
sc_status sc_posting_mismatch(sc_prog *pg, int a, size_t ks, int b, size_t q);

#endif
