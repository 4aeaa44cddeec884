/*
 * backend.c — what every backend shares (backend.h): freeing one through
 * its own free_fn.
 */
#include "backend.h"

void sc_backend_free(sc_backend *be)
{
    if (be)
        be->free_fn(be);
}
