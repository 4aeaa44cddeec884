/*
 * mpi_bell.h — doorbells between the MPI ranks of one node, so that a rank
 * waiting for a message sleeps until a peer rings instead of polling
 * (issue 47: 2 MPI ranks took 4.4x the time of 2 threads, whose waits
 * block on a condition variable). Part of the MPI module (transport_mpi.c
 * only). Tested by: tests/run.sh (every run under mpirun), bench/bench_speed.sh mpi.
 *
 * Each rank has a 64-byte slot in one shared-memory segment: a counter
 * that its peers increment when they give it reason to poll again (a
 * transfer posted towards it, a group or collective of theirs completed),
 * and the number of its threads asleep on the counter (a futex). A wait:
 *
 *     unsigned tok = sc_bell_token(b);        // before the poll
 *     if (!poll()) sc_bell_sleep(b, tok, ns); // returns when rung, or after ns
 *
 * A ring between the token and the sleep makes the sleep return at once.
 * The bells are an optimisation: a sleep always ends after ns, so a ring
 * that never comes (a message whose progress needs a poll of this rank)
 * costs what the fixed sleep of backoff.h costs, never a hang.
 *
 * Only when every rank of the job is on this node (the segment is named
 * by rank 0 and opened by name); otherwise sc_bell_open returns NULL and
 * the waits back off as before (backoff.h). The segment's name is removed
 * once every rank has opened it: nothing is left in /dev/shm by a run that
 * ends, however it ends, after the transport started.
 */
#ifndef SC_MPI_BELL_H
#define SC_MPI_BELL_H

#include <stddef.h>

#include <mpi.h>

#include "transport.h"

typedef struct sc_bell sc_bell;

/* A polled wait for one request (transport_mpi.c's), for the set-up. */
typedef sc_status (*sc_bell_poll_fn)(MPI_Request *req, double timeout_s, const char *what,
                                     char *err, size_t errlen);

/* Collective over MPI_COMM_WORLD (every rank calls it). NULL with *st SC_OK
 * when the bells cannot be used (ranks on several nodes, no shared memory,
 * STAGECRAFT_MPI_BELLS=0); NULL with an error in err when a collective of
 * the set-up failed or timed out. */
sc_bell *sc_bell_open(sc_bell_poll_fn poll, double timeout_s, sc_status *st, char *err,
                      size_t errlen);
void sc_bell_close(sc_bell *b);

/* Rings rank r's bell (wakes its sleepers); every rank's but this one's. */
void sc_bell_ring(sc_bell *b, int r);
void sc_bell_ring_all(sc_bell *b);

/* This rank's counter, to pass to sc_bell_sleep after the poll. */
unsigned sc_bell_token(sc_bell *b);
/* Sleeps until this rank's bell rings after token was read, or ns pass. */
void sc_bell_sleep(sc_bell *b, unsigned token, long ns);

#endif
