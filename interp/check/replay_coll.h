/*
 * replay_coll.h — collectives in the replay (internal to check/): the
 * collective channel of every device under the semantics of design.md §6
 * and SPEC.md §8.6, beside the P2P groups of replay.c.
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
 * mismatch.
 */
#ifndef SC_REPLAY_COLL_H
#define SC_REPLAY_COLL_H

#include "ir/ir_impl.h"

typedef struct rcoll rcoll;

/* *out = NULL (and SC_OK) when no stream holds a collective and no
 * instruction reads one. offset as in sc_replay. */
sc_status sc_rcoll_prepare(sc_prog *pg, const size_t *offset, rcoll **out);
void sc_rcoll_free(rcoll *c);

/* The collective instruction gi (global index) waits for, or (size_t)-1. */
size_t sc_rcoll_need(const rcoll *c, size_t gi);
/* When collective gi completed, or < 0 while it has not. */
double sc_rcoll_done(const rcoll *c, size_t gi);
/* Device d posts collective gi at time t (t0[gi] = t; t1 of every member's
 * instruction = the completion, when it completes). */
sc_status sc_rcoll_post(rcoll *c, int d, size_t gi, double t, double *t0, double *t1);
/* Pops a device one of whose collectives completed since the last call
 * (into *d); 0 when there is none. */
int sc_rcoll_woken(rcoll *c, int *d);
/* 1 when every collective of device d has completed. */
int sc_rcoll_channel_done(const rcoll *c, int d);
/* For a deadlock: the device that device d's channel waits for (its first
 * collective not complete, or the one gi needs when gi != (size_t)-1), with
 * a description in buf; -1 when the channel waits for nothing. */
int sc_rcoll_waits(const rcoll *c, int d, size_t gi, char *buf, size_t len);

#endif
