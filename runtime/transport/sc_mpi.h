/*
 * sc_mpi.h — the little of MPI that the runtime needs besides the transport
 * (start, collectives over small arrays, end). Built without MPI, every
 * function fails or does nothing and sc_mpi_available() is 0; nothing else
 * in the runtime includes <mpi.h>.
 *
 * Tested by: tests/runtime.sh.
 */
#ifndef SC_SC_MPI_H
#define SC_SC_MPI_H

#include <stddef.h>

#include "ir/ir.h"

/* 1 when this process was started by mpirun (OMPI_COMM_WORLD_SIZE or
 * PMI_SIZE in the environment). */
int sc_mpi_launched(void);
/* 1 when stagecraft was built with MPI. */
int sc_mpi_available(void);
/* MPI_Init once; this process's rank and the world size. MPI_Init waits
 * for every rank to start it and cannot be polled: a watchdog thread ends
 * the process (exit code 9, one line on stderr) when it has not returned
 * after timeout_s (> 0), so that a rank stopped or stuck before MPI_Init
 * (during its evaluation) cannot hang the others; mpirun then ends the job.
 * timeout_s also guards the later calls that wait for every rank and cannot
 * be polled (sc_mpi_local's MPI_Comm_split_type, sc_mpi_finish's
 * MPI_Finalize) the same way; the transport's MPI_Comm_idup is polled. */
sc_status sc_mpi_init(int *rank, int *size, double timeout_s, char *err, size_t errlen);
/* The same asking MPI for MPI_THREAD_MULTIPLE (MPI_Init_thread), so that
 * two threads of a rank may call it at once (expert parallelism's lane:
 * run_ep_mpi.c); sc_mpi_threads() is then 1 when MPI gave it. Any other
 * run starts MPI single-threaded (sc_mpi_init, MPI_Init). */
sc_status sc_mpi_init_threads(int *rank, int *size, double timeout_s, char *err, size_t errlen);
int sc_mpi_threads(void);
/* In place, over all ranks: element-wise maximum. Both collectives poll
 * non-blocking operations and give up after timeout_s (> 0), so that a rank
 * that vanished cannot hang the others (SC_ERR_RUNTIME, one line in err
 * naming what: "the allreduce of the results"). */
sc_status sc_mpi_max(double *v, int n, const char *what, double timeout_s, char *err,
                     size_t errlen);
sc_status sc_mpi_barrier(double timeout_s, char *err, size_t errlen);
/* In place, over all ranks: root's n bytes everywhere (polled, bounded by
 * timeout_s like the collectives above). */
sc_status sc_mpi_bcast(void *buf, int n, int root, double timeout_s, char *err, size_t errlen);
/* This rank's index among the ranks on its node, and how many there are
 * (MPI_Comm_split_type, shared memory): which GPU a rank takes. */
sc_status sc_mpi_local(int *local_rank, int *local_size, char *err, size_t errlen);
/* The end of a run: MPI_Finalize, or with code != 0 MPI_Abort(code), which
 * ends every rank of the job. No-ops when MPI was not started. A rank that
 * waits in MPI_Finalize longer than sc_mpi_init's timeout for a peer ends
 * with exit code 9 and one line (its output is written by then). */
void sc_mpi_finish(int code);

#endif
