/*
 * exec_coll.h — one device's collective channel in the executor (internal
 * to runtime/exec/; exec.h describes the semantics): collectives posted in
 * stream order, each started once the previous one has completed here,
 * with the workload's buffer and the transport's coll_start.
 *
 * Nothing here blocks: sc_cchan_progress completes and starts what it can;
 * the executor's waits poll it beside its P2P groups.
 *
 * Tested by: tests/unit/test_coll_run.c.
 */
#ifndef SC_EXEC_COLL_H
#define SC_EXEC_COLL_H

#include <stddef.h>

#include "exec.h"

typedef struct sc_cchan sc_cchan;

/* The channel of device d's stream (in[0..n)), or *out = NULL when the
 * stream has no collective and no instruction reads one. t1 receives each
 * collective's completion time (seconds since origin). xo: the EP group's
 * transport (ep_tp, ep_dev; exec.h). */
sc_status sc_cchan_new(const sc_prog *pg, int d, const sc_exec_out *xo, sc_transport *tp,
                       const sc_workload *wl, double origin, double *t1, sc_cchan **out,
                       char *err, size_t errlen);
/* Releases what is still started (after a failure the transport was
 * aborted first). */
void sc_cchan_free(sc_cchan *ch);

/* The collective instruction k waits for, or (size_t)-1. */
size_t sc_cchan_need(const sc_cchan *ch, size_t k);
/* Collective instruction k is posted. */
sc_status sc_cchan_post(sc_cchan *ch, size_t k, char *err, size_t errlen);
/* Collective instruction k is skipped in its turn (the rollback path of
 * post-validation when it does not run,
 * docs/steps.md#optimizer-synchronization: every device skips the same ones):
 * it completes without starting, in order. */
sc_status sc_cchan_skip(sc_cchan *ch, size_t k, char *err, size_t errlen);
/* Completes the running collective if it is done, starts the next posted
 * one, as far as possible; *moved = 1 when anything changed. */
sc_status sc_cchan_progress(sc_cchan *ch, int *moved, char *err, size_t errlen);
/* 1 when collective instruction k has completed; 1 for (size_t)-1 and at
 * the end when every posted one has. */
int sc_cchan_complete(const sc_cchan *ch, size_t k);
int sc_cchan_idle(const sc_cchan *ch);

#endif
