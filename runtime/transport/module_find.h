/*
 * module_find.h — where a module that stagecraft loads with dlopen lies:
 * the MPI module (mpi_load.c) and the CUDA module (device/cuda_load.c)
 * are looked for the same way, from the first of:
 *   1. the environment variable env (a file; taken as it is, found or not);
 *   2. beside the executable (build/stagecraft and its modules; an install
 *      puts them beside the binary);
 *   3. build/ below the executable's folder (./stagecraft at the root of a
 *      tree finds build/<file>).
 * No path is baked in at build time: a tree copied elsewhere finds its own
 * modules, never another tree's.
 *
 *     char path[4096];
 *     if (sc_module_find("libstagecraft_mpi.so", "STAGECRAFT_MPI_MODULE", path, sizeof path) == 0)
 *         dlopen(path, ...);
 *     else   // path: the executable's folder, for the message
 *         ...
 *
 * Tested by: tests/runtime.sh (the MPI module under mpirun, and missing),
 * tests/costs.sh (the CUDA stand-in by STAGECRAFT_CUDA_MODULE).
 */
#ifndef SC_MODULE_FIND_H
#define SC_MODULE_FIND_H

#include <stddef.h>

/* 0 with the module's path in path (len bytes); -1 when it is in neither
 * place, with the executable's folder in path ("." when unknown). */
int sc_module_find(const char *file, const char *env, char *path, size_t len);

#endif
