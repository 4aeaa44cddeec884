/*
 * backoff.h — how a thread waits for what it polls (an MPI request, the
 * executor's groups and collectives) when nothing can wake it.
 *
 *     sc_backoff b = {0};
 *     while (!done(...)) { if (past the deadline) give up; sc_backoff_wait(&b); }
 *     (sc_backoff_reset(&b) when something moved and the wait starts over)
 *
 * Two phases, by the number of polls:
 *   - the first SC_BACKOFF_SPINS polls back to back (a peer a few µs away);
 *   - then a sleep of SC_BACKOFF_SLEEP_NS between polls, with the thread's
 *     timer slack set to 1 µs: under the kernel's default slack of 50 µs a
 *     20 µs sleep lasted about 70 µs (issue 34: an MPI pass cost 24 µs, 8x
 *     the threads' 3 µs).
 * Sleeping rather than yielding leaves the cores to the ranks that compute
 * when the ranks oversubscribe them, and a sleeper that wakes is scheduled
 * ahead of the threads that ran meanwhile; a sched_yield phase measured
 * 3.5x slower on the loaded 2-core machine (bench/speed.md#speed-issue-34).
 * The timeouts stay with the callers.
 *
 * Tested by: tests/unit/test_runtime.c, tests/runtime.sh.
 */
#ifndef SC_BACKOFF_H
#define SC_BACKOFF_H

#include <sys/prctl.h>
#include <time.h>

#define SC_BACKOFF_SPINS 64
#define SC_BACKOFF_SLEEP_NS 20000L

typedef struct sc_backoff {
    long polls; /* since the wait (re)started */
    int slack;  /* the timer slack has been set (once per wait) */
} sc_backoff;

static inline void sc_backoff_reset(sc_backoff *b)
{
    b->polls = 0;
}

/* Waits once between two polls, by the phase the wait is in. */
static inline void sc_backoff_wait(sc_backoff *b)
{
    if (++b->polls <= SC_BACKOFF_SPINS)
        return;
    if (!b->slack) {
        /* Per thread, and harmless to repeat: a sleep of this thread ends
         * within 1 µs of its time (Linux; elsewhere the call fails). */
        prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
        b->slack = 1;
    }
    nanosleep(&(struct timespec){0, SC_BACKOFF_SLEEP_NS}, NULL);
}

#endif
