/*
 * replay_coll_impl.h — the state of the collective channels in a replay
 * (internal to replay_coll.c and replay_coll_cache.c).
 *
 * Tested by: tests/unit/test_coll.c.
 */
#ifndef SC_REPLAY_COLL_IMPL_H
#define SC_REPLAY_COLL_IMPL_H

#include "replay_coll.h"

#include <stdint.h>

struct rcoll {
    sc_prog *pg;
    const size_t *offset;
    size_t N;
    size_t *need;      /* [N] the collective an instruction waits for, or NONE */
    int32_t *inst;     /* [N] instance of a collective instruction, else -1 */
    double *post;      /* [N] when a collective was posted (< 0: not yet) */
    char *begun;       /* [N] the collective has started on its device */
    size_t *chan;      /* [ncoll] each device's collectives in order (global indices) */
    size_t *choff;     /* [P+1] */
    size_t *head;      /* [P] first collective of the device not complete */
    double *last;      /* [P] when the device's previous collective completed */
    int ninst;
    int *members;      /* [ninst] */
    int *started;      /* [ninst] members that started it */
    double *tstart;    /* [ninst] the latest start of a member */
    double *done;      /* [ninst] completion, < 0 before */
    size_t *ioff;      /* [ninst + 1] into memb */
    size_t *memb;      /* [ncoll] the member instructions of each instance */
    int *mdev;         /* [ncoll] their devices */
    size_t *waiting;   /* [P] the collective a blocked device waits for, or NONE */
    int *wake;         /* [P] devices to wake, a stack */
    char *queued;      /* [P] */
    int nwake;
    int *todo;         /* [P] devices whose channel may start its head */
    char *intodo;      /* [P] */
    int ntodo;
    int borrowed;      /* need .. mdev, members and ninst are pg->rcache's */
};

/* A verified program's matching (need .. mdev, members, ninst) depends on
 * its streams only: kept in pg->rcache after one timed replay and lent to
 * the next ones (sc_simulate after sc_check replays the same streams).
 * sc_rcoll_reuse: for a verified program, *key = the hash of its streams
 * and collectives' descriptions; 1 when pg->rcache holds their matching,
 * which c then borrows (c->borrowed = 1). sc_rcoll_keep: the matching c
 * built moves to pg->rcache under key (c borrows it from then on); kept
 * only when it can be allocated. */
int sc_rcoll_reuse(rcoll *c, uint64_t *key);
void sc_rcoll_keep(rcoll *c, uint64_t key);

#endif
