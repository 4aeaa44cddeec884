/*
 * mpi_stop_double.c — a TEST DOUBLE, never linked into stagecraft: a
 * library that tests/runtime.sh preloads (LD_PRELOAD) into the ranks of an
 * `mpirun ... stagecraft run` job. Through MPI's profiling interface it
 * wraps the MPI calls stagecraft makes and, on the rank named by
 * SC_TEST_STOP_RANK, stops the whole process with SIGSTOP when it enters
 * the call named by SC_TEST_STOP_AT ("MPI_Comm_idup", or "MPI_Isend:3" for
 * the third call): a rank stopped at a chosen point, where a signal sent
 * from outside lands wherever the rank happens to be. Every wrapped call
 * then goes on to the real one (PMPI_...), so an unstopped rank behaves as
 * without the double. The others must end the job in bounded time
 * (STAGECRAFT_TIMEOUT) with one message, whatever the point.
 */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void maybe_stop(const char *name)
{
    static int calls[16];
    static const char *names[16];
    const char *at = getenv("SC_TEST_STOP_AT"), *rank = getenv("SC_TEST_STOP_RANK");
    const char *me = getenv("OMPI_COMM_WORLD_RANK");
    if (!at || !rank || !me || strcmp(rank, me) != 0)
        return;
    size_t len = strcspn(at, ":");
    if (strlen(name) != len || strncmp(at, name, len) != 0)
        return;
    int want = at[len] == ':' ? atoi(at + len + 1) : 1, i = 0;
    while (i < 15 && names[i] && strcmp(names[i], name) != 0)
        i++;
    names[i] = name;
    if (++calls[i] == want)
        raise(SIGSTOP);
}

int MPI_Init(int *argc, char ***argv)
{
    maybe_stop("MPI_Init");
    return PMPI_Init(argc, argv);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out)
{
    maybe_stop("MPI_Comm_dup");
    return PMPI_Comm_dup(comm, out);
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *out, MPI_Request *req)
{
    maybe_stop("MPI_Comm_idup");
    return PMPI_Comm_idup(comm, out, req);
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out)
{
    maybe_stop("MPI_Comm_split_type");
    return PMPI_Comm_split_type(comm, type, key, info, out);
}

int MPI_Iallreduce(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    maybe_stop("MPI_Iallreduce");
    return PMPI_Iallreduce(in, out, n, t, op, comm, req);
}

int MPI_Iallgather(const void *in, int n, MPI_Datatype t, void *out, int n_out,
                   MPI_Datatype t_out, MPI_Comm comm, MPI_Request *req)
{
    maybe_stop("MPI_Iallgather");
    return PMPI_Iallgather(in, n, t, out, n_out, t_out, comm, req);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    maybe_stop("MPI_Ibarrier");
    return PMPI_Ibarrier(comm, req);
}

int MPI_Isend(const void *buf, int n, MPI_Datatype t, int peer, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    maybe_stop("MPI_Isend");
    return PMPI_Isend(buf, n, t, peer, tag, comm, req);
}

int MPI_Comm_free(MPI_Comm *comm)
{
    maybe_stop("MPI_Comm_free");
    return PMPI_Comm_free(comm);
}

int MPI_Finalize(void)
{
    maybe_stop("MPI_Finalize");
    return PMPI_Finalize();
}
