/*
 * mpi_api.h — between the executable and the MPI module,
 * libstagecraft_mpi.so (transport_mpi.c, mpi_world.c, mpi_bell.c, the
 * only files that include <mpi.h>): the module's one exported symbol is
 * this table (mpi_world.c), which mpi_load.c finds with dlsym.
 *
 * Why a module: linking MPI loads its whole stack (OpenMPI: libmpi,
 * open-rte, open-pal, hwloc, libevent, udev, ...) into every start, and
 * resolving it was over a quarter of a small `sim`'s instructions. Only
 * `run` under mpirun (and test_coll_run under mpirun) uses MPI: mpi_load.c
 * loads the module then, once per process, and sim, show, check never do.
 *
 * Every slot has the contract of its sc_mpi.h / transport.h namesake
 * (sc_mpi_init, sc_mpi_max, ..., sc_transport_mpi_split_new; color < 0:
 * sc_transport_mpi_new, the world). The module is
 * built from the same tree as the executable; version and size catch a
 * module left over from other sources.
 *
 * Tested by: tests/runtime.sh.
 */
#ifndef SC_MPI_API_H
#define SC_MPI_API_H

#include <stddef.h>

#include "transport.h"

#define SC_MPI_API_VERSION 3 /* 2: sc_transport_ops has a2a_start; 3: transport_new splits,
                              * init may ask for threads */
#define SC_MPI_API_SYMBOL "sc_mpi_api_v1"

struct sc_mpi_api {
    int version;
    size_t size; /* sizeof(struct sc_mpi_api) where the module was built */
    sc_status (*init)(int *rank, int *size, int *threads, double timeout_s, char *err,
                      size_t errlen); /* *threads: asked, then given (sc_mpi_init_threads) */
    sc_status (*max)(double *v, int n, const char *what, double timeout_s, char *err,
                     size_t errlen);
    sc_status (*barrier)(double timeout_s, char *err, size_t errlen);
    sc_status (*bcast)(void *buf, int n, int root, double timeout_s, char *err, size_t errlen);
    sc_status (*local)(int *local_rank, int *local_size, char *err, size_t errlen);
    void (*finish)(int code);
    sc_status (*transport_new)(int color, int key, int max_tag, double timeout_s,
                               sc_transport **out, char *err, size_t errlen);
    void (*transport_free)(sc_transport *tp);
};

#endif
