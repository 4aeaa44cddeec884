/*
 * mpi_main.h — the start and end of a unit test that also runs under
 * mpirun (tests/runtime.sh starts it with a few ranks): MPI started with a
 * 60 s timeout, this rank's checks, harness_done, MPI finished. Header-only;
 * include it after harness.h.
 *
 *   static void ranks(int rank, int size) { CHECK(...); }
 *   int main(void)
 *   {
 *       if (sc_mpi_launched())
 *           return mpi_main(ranks, "coll_run (mpi)");
 *       RUN(...);
 *       return harness_done("coll_run");
 *   }
 *
 * Tested by: tests/unit/test_a2a_run.c and tests/unit/test_coll_run.c (run
 * by tests/runtime.sh under mpirun).
 */
#ifndef SC_MPI_MAIN_H
#define SC_MPI_MAIN_H

#include "transport/sc_mpi.h"

#include <stdio.h>

/* body's checks on this rank of size; the exit code (1 and a line on
 * stderr when MPI does not start). */
static int mpi_main(void (*body)(int rank, int size), const char *name)
{
    int rank, size;
    char err[256];
    if (sc_mpi_init(&rank, &size, 60, err, sizeof err) != SC_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    body(rank, size);
    int rc = harness_done(name);
    sc_mpi_finish(0);
    return rc;
}

#endif
