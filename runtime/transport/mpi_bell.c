/*
 * mpi_bell.c — doorbells between the MPI ranks of one node (mpi_bell.h):
 * a shared-memory segment of one slot per rank, and Linux futexes on it.
 */
#define _GNU_SOURCE /* syscall() */
#include "mpi_bell.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NAME_MAX_LEN 64

typedef struct slot {
    _Atomic unsigned seq;    /* rung: incremented by the peers */
    _Atomic int sleepers;    /* this rank's threads asleep on seq */
    char pad[64 - sizeof(unsigned) - sizeof(int)];
} slot;

struct sc_bell {
    slot *s;
    size_t bytes;
    int rank, size;
};

static long futex(_Atomic unsigned *addr, int op, unsigned val, const struct timespec *ts)
{
    /* Shared between processes: not FUTEX_PRIVATE_FLAG. */
    return syscall(SYS_futex, (unsigned *)addr, op, val, ts, NULL, 0);
}

void sc_bell_ring(sc_bell *b, int r)
{
    if (!b || r < 0 || r >= b->size || r == b->rank)
        return;
    slot *t = &b->s[r];
    atomic_fetch_add(&t->seq, 1u);
    if (atomic_load(&t->sleepers) > 0)
        futex(&t->seq, FUTEX_WAKE, INT_MAX, NULL);
}

void sc_bell_ring_all(sc_bell *b)
{
    for (int r = 0; b && r < b->size; r++)
        sc_bell_ring(b, r);
}

unsigned sc_bell_token(sc_bell *b)
{
    return atomic_load(&b->s[b->rank].seq);
}

void sc_bell_sleep(sc_bell *b, unsigned token, long ns)
{
    slot *me = &b->s[b->rank];
    atomic_fetch_add(&me->sleepers, 1);
    /* A ring after the token changed seq: FUTEX_WAIT returns at once
     * (EAGAIN). A ring after this check sees sleepers > 0 and wakes us. */
    if (atomic_load(&me->seq) == token) {
        struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
        futex(&me->seq, FUTEX_WAIT, token, &ts);
    }
    atomic_fetch_sub(&me->sleepers, 1);
}

/* Every rank's ok, and-ed (a polled all-reduce MIN). */
static sc_status agree(sc_bell_poll_fn poll, double timeout_s, int *ok, char *err,
                       size_t errlen)
{
    MPI_Request req;
    if (MPI_Iallreduce(MPI_IN_PLACE, ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req) !=
        MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: setting up the ranks' doorbells failed (MPI_Iallreduce)");
        return SC_ERR_RUNTIME;
    }
    return poll(&req, timeout_s, "the set-up of the doorbells", err, errlen);
}

/* Rank 0 creates the segment and names it; every rank maps it. */
static int map(sc_bell *b, char *name, int create)
{
    int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return 0;
    if (create && ftruncate(fd, (off_t)b->bytes) != 0) {
        close(fd);
        return 0;
    }
    void *p = mmap(NULL, b->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return 0;
    b->s = p; /* ftruncate zero-fills: every counter starts at 0 */
    return 1;
}

sc_bell *sc_bell_open(sc_bell_poll_fn poll, double timeout_s, sc_status *st, char *err,
                      size_t errlen)
{
    *st = SC_OK;
    const char *env = getenv("STAGECRAFT_MPI_BELLS");
    sc_bell *b = calloc(1, sizeof *b);
    char name[NAME_MAX_LEN] = "";
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ok = !(env && strcmp(env, "0") == 0) && b;
    if (b) {
        b->rank = rank;
        b->size = size;
        b->bytes = (size_t)size * sizeof(slot);
    }
    if (rank == 0 && ok) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(name, sizeof name, "/stagecraft-bell-%ld-%ld", (long)getpid(), (long)ts.tv_nsec);
        ok = map(b, name, 1);
        if (!ok)
            name[0] = 0;
    }
    MPI_Request req; /* the name, to every rank ("" when rank 0 has none) */
    if (MPI_Ibcast(name, NAME_MAX_LEN, MPI_CHAR, 0, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: setting up the ranks' doorbells failed (MPI_Ibcast)");
        *st = SC_ERR_RUNTIME;
    } else {
        *st = poll(&req, timeout_s, "the set-up of the doorbells", err, errlen);
    }
    name[NAME_MAX_LEN - 1] = 0;
    if (!*st && rank != 0 && ok)
        ok = name[0] && map(b, name, 0);
    if (!*st)
        *st = agree(poll, timeout_s, &ok, err, errlen); /* every rank has it mapped, or not */
    if (rank == 0 && name[0])
        shm_unlink(name); /* the others have opened it (or given up): no name is left */
    if (*st || !ok) {
        sc_bell_close(b);
        return NULL;
    }
    return b;
}

void sc_bell_close(sc_bell *b)
{
    if (!b)
        return;
    if (b->s)
        munmap(b->s, b->bytes);
    free(b);
}
