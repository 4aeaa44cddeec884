/*
 * mpi_mod.h — what the two files of the MPI module share (module-private,
 * hidden visibility): transport_mpi.c, the transport; mpi_world.c, the
 * helpers of sc_mpi.h over MPI_COMM_WORLD, the guard of the calls that
 * cannot be polled, and the module's table (mpi_api.h).
 * Tested by: tests/runtime.sh, tests/moe.sh (expert parallelism on MPI ranks).
 */
#ifndef SC_MPI_MOD_H
#define SC_MPI_MOD_H

#include <stddef.h>

#include <mpi.h>

#include "transport.h"

/* Waits for one request, polling, at most timeout_s (> 0). */
sc_status sc_mpimod_poll_one(MPI_Request *req, double timeout_s, const char *what, char *err,
                             size_t errlen);
/* The guard of a call that waits for every rank and cannot be polled
 * (what: "to split the ranks (MPI_Comm_split)"): with sc_mpi_init's
 * timeout, a watchdog ends the job unless guard_end comes first. */
void sc_mpimod_guard_begin(const char *what);
void sc_mpimod_guard_end(void);
/* mpi_api.h's transport_new and transport_free (transport_mpi.c). */
sc_status sc_mpimod_transport_new(int color, int key, int max_tag, double timeout_s,
                                  sc_transport **out, char *err, size_t errlen);
void sc_mpimod_transport_free(sc_transport *tp);

#endif
