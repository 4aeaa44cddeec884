/*
 * hostlink.h — a host-link copy engine: one thread that does the copies of
 * offload (OFFLOAD to the host, RELOAD back) for the devices that share one
 * host link, so that they overlap the devices' compute as the simulator
 * assumes (docs/offload.md#the-host-link, docs/offload.md#running).
 *
 * The CPU backend's copies are memcpy; without an engine they run on the
 * device's own thread inside OFFLOAD and RELOAD, and nothing hides them.
 * With one (backend.h, use_link), copy_start queues the copy on the link
 * and returns; copy_wait blocks until it is done. A link is full duplex,
 * as the simulator's: one thread copies to the host, one back, each its
 * copies one at a time in the order they were queued, whichever device
 * queued them. Two devices sharing a link (the recipe's `shared`, devices
 * 2k and 2k+1) take turns on its threads; a device with its own link has
 * its own. The runtime does not wait for the plan's slots: a copy goes
 * when it is posted and its channel is free (the simulation from measured
 * costs does the same, interp/sim/sim.h). A copy depends on nothing but
 * its buffers, so every queued copy ends and every wait returns: the
 * engine adds no way to hang.
 *
 *     sc_hostlinks *ls;
 *     sc_hostlinks_open(pg, be, 0, P, &ls, err, sizeof err); // after the backends
 *     ... run the devices (their copies go through ls's threads) ...
 *     sc_hostlinks_free(ls);                                  // joins the threads
 *
 * Thread-safety: start and wait may be called from any thread; a ticket is
 * waited for exactly once (the wait frees it). sc_hostlinks_free runs the
 * copies still queued, then joins the threads; call it once no device runs.
 * Tested by: tests/runtime.sh (offload under STAGECRAFT_HOST_LINK_GBPS), tests/gpu/test_backend_cuda.c.
 */
#ifndef SC_HOSTLINK_H
#define SC_HOSTLINK_H

#include <stddef.h>

#include "backend.h"

typedef struct sc_hostlink sc_hostlink;
typedef struct sc_hostlinks sc_hostlinks;

/* Queues a copy of `bytes` from src to dst on the link's channel to the
 * host (to_host 1) or back (0); *ticket for
 * sc_hostlink_wait. SC_ERR_NOMEM when the ticket cannot be allocated. */
sc_status sc_hostlink_start(sc_hostlink *l, int to_host, void *dst, const void *src,
                            size_t bytes, void **ticket);
/* Blocks until the ticket's copy is done and frees the ticket; *t0 and *t1
 * (either may be NULL) get when the link's thread started and ended it, on
 * sc_exec_now's clock (CLOCK_MONOTONIC seconds). */
sc_status sc_hostlink_wait(sc_hostlink *l, void *ticket, double *t0, double *t1);

/* One copy as a link does it: memcpy, then, when STAGECRAFT_HOST_LINK_GBPS
 * gives the link a speed (a stand-in for the PCIe link a CPU does not
 * have), a sleep until the copy has taken bytes / speed; *t0 and *t1 (may
 * be NULL) when it started and ended. The CPU backend copies with it too
 * when it has no link. */
void sc_hostlink_copy(void *dst, const void *src, size_t bytes, double *t0, double *t1);

/* The links of devices first .. first+n-1 (be[i] is device first+i), one
 * per pair when the program's offload configuration shares links and both
 * devices of the pair are here (else one per device), attached to the
 * backends through use_link. *out is NULL, and nothing starts, when no
 * stream of pg holds a host copy, a backend has no use_link (cuda: its
 * copy streams are its engine), or STAGECRAFT_HOST_LINK=inline asks for
 * the copies on the devices' own threads (the runtime before the engine:
 * for comparisons, bench/bench_hostlink.sh). SC_ERR_ARG for a bad
 * STAGECRAFT_HOST_LINK_GBPS. */
sc_status sc_hostlinks_open(const sc_prog *pg, sc_backend *const *be, int first, int n,
                            sc_hostlinks **out, char *err, size_t errlen);
/* Runs the copies still queued, stops and joins the threads; NULL is a
 * no-op. */
void sc_hostlinks_free(sc_hostlinks *ls);

#endif
