/*
 * replay_coll.h — collectives in the replay (internal to check/): the
 * collective channel of every device under the semantics of docs/semantics.md#collectives
 * and docs/semantics.md#collectives, beside the P2P groups of replay.c.
 *
 *   - posting a collective does not block the device's stream;
 *   - a device's collectives run in the order it posted them: each starts
 *     when posted and the previous one on the device has completed;
 *   - a collective completes when every member has started it (it is at
 *     the head of every member's channel), after its cost (latency + ring
 *     factor x bytes / bandwidth);
 *   - an instruction waits only for the collectives it reads
 *     (sc_coll_readers).
 *
 * sc_rcoll_prepare checks the collective instructions first and matches
 * them: the k-th collective of a group on one member is the k-th on every
 * member, with the same description (kind, reduction, tag, root, size);
 * every member posts it; the device posting it is a member, a broadcast's
 * root too; data a collective carries is produced before it is posted (the
 * tagged pass, where the device runs it; a broadcast's root must) and
 * read after it. Errors name the devices, instructions and the first
 * mismatch. For a program already verified (the timed replay of sc_simulate
 * after sc_check), these checks are proved and skipped, and the matching
 * (with what each instruction waits for) is kept in the program after the
 * first timed replay and lent to the next ones, while the streams hash the
 * same (replay_coll_impl.h).
 *
 * Tested by: tests/unit/test_coll.c.
 */
#ifndef SC_REPLAY_COLL_H
#define SC_REPLAY_COLL_H

#include "ir/ir_impl.h"

typedef struct rcoll rcoll;

/* *out = NULL (and SC_OK) when no stream holds a collective and no
 * instruction reads one. offset as in sc_replay. */
sc_status sc_rcoll_prepare(sc_prog *pg, const size_t *offset, rcoll **out);
void sc_rcoll_free(rcoll *c);

/* For every instruction (global index), the collective it waits for, or
 * (size_t)-1; NULL without collectives. */
const size_t *sc_rcoll_needs(const rcoll *c);
/* Device d stopped at an instruction that waits for collective gi: it is
 * woken (sc_rcoll_woken) when gi completes. */
void sc_rcoll_block(rcoll *c, int d, size_t gi);
/* When collective gi completed, or < 0 while it has not. */
double sc_rcoll_done(const rcoll *c, size_t gi);
/* Device d posts collective gi at time t (t0[gi] = t; t1 of every member's
 * instruction = the completion, when it completes). */
sc_status sc_rcoll_post(rcoll *c, int d, size_t gi, double t, double *t0, double *t1);
/* Pops a device whose awaited collective completed since the last call
 * (into *d); 0 when there is none. */
int sc_rcoll_woken(rcoll *c, int *d);
/* 1 when every collective of device d has completed. */
int sc_rcoll_channel_done(const rcoll *c, int d);
/* For a deadlock: the device that device d's channel waits for (its first
 * collective not complete, or the one gi needs when gi != (size_t)-1), with
 * a description in buf; -1 when the channel waits for nothing. */
int sc_rcoll_waits(const rcoll *c, int d, size_t gi, char *buf, size_t len);

#endif
