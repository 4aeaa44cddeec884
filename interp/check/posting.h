/*
 * posting.h — transfers between two devices pair in posting order
 * (docs/semantics.md#the-semantics, rule 4). Internal to interp/check.
 *
 * NCCL and gloo match the k-th SEND from device a to device b with the k-th
 * RECV on b from a, whatever the two carry. sc_check_posting_order proves
 * that every such pair is one message (direction, stage, microbatch: hence
 * one size), for every program, lowered or given. Call it on streams whose
 * transfers are in range and matched one to one by message (sc_replay's
 * checks do that first). Linear in the number of transfers (a device with
 * fewer transfers than there are devices sorts them: O(n log n)).
 *
 * On a pair that is not one message it returns SC_ERR_PROGRAM, naming both
 * instructions and the RECV of the SEND's message:
 *   transfers out of posting order: d0 #2 (SEND act s1 mb1 -> d1) and
 *   d1 #0 (RECV act s1 mb0 <- d0) pair up (send and receive 1 between d0 and
 *   d1; NCCL and gloo match in posting order) but carry different messages
 *   (its RECV is d1 #1 (RECV act s1 mb1 <- d0))
 */
#ifndef SC_POSTING_H
#define SC_POSTING_H

#include "ir/ir_impl.h"

sc_status sc_check_posting_order(sc_prog *pg);

#endif
