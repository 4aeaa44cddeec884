/*
 * ncclstub.c — NCCL of the CUDA STAND-IN (a test double, tests/cudastub/):
 * point-to-point transfers between the communicators of one process, built
 * as its own shared object that the module loads at run time exactly as it
 * loads libnccl.so.2 (STAGECRAFT_NCCL_LIBRARY).
 *
 * What it models:
 *   - a communicator is usable once all ranks of its unique id have called
 *     ncclCommInitRankConfig; until then a non-blocking one reports
 *     ncclInProgress from ncclCommGetAsyncError; two ranks on one GPU are
 *     refused (as NCCL <= 2.29 does);
 *   - each ncclGroupEnd of sends and receives becomes one operation on the
 *     stream they name, which posts them and completes when all have met
 *     their peers: sends from a to b pair with b's receives from a in
 *     posting order (NCCL's rule; tags do not exist); a size mismatch is a
 *     violation;
 *   - a non-blocking ncclGroupEnd returns ncclInProgress and enqueues from a
 *     helper thread after a random delay, as NCCL 2.28 does; using a
 *     communicator while its last operation is in progress is a violation;
 *   - ncclCommSplit (every rank, same color, key = rank) makes a new
 *     communicator of the same ranks; ncclAllReduce (sum or max, in rank
 *     order) and ncclBroadcast are matched by the order each rank calls
 *     them on the communicator, and run once every rank's has started;
 *   - ncclCommAbort ends the communicator's operations on their streams;
 *     ncclCommFinalize completes (non-blocking: in progress) once its
 *     operations have run;
 *   - a buffer is checked when the copy happens (the stand-in's registry):
 *     a send buffer freed before the transfer ran is a use after free;
 *   - with NCCL_DEBUG set, an INFO line per communicator goes where NCCL
 *     sends its log: NCCL_DEBUG_FILE (%h host, %p pid), else stdout.
 *
 * This file: the state the NCCL stand-in's files share (ncclstub_impl.h),
 * errors, unique ids; groups and point-to-point transfers are in
 * ncclstub_group.c, communicators in ncclstub_comm.c, collectives in
 * ncclstub_coll.c.
 */
#define _GNU_SOURCE
#include "nccl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclstub_impl.h"

pthread_mutex_t nstub_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t nstub_cv = PTHREAD_COND_INITIALIZER;
clique *nstub_cliques;
static long ids;
static char last_global[256];

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

ncclResult_t nstub_failed(struct sc_stub_comm *c, ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c ? c->last : last_global, sizeof last_global, fmt, ap);
    va_end(ap);
    return r;
}

const char *ncclGetLastError(ncclComm_t c)
{
    return c && c->magic == COMM_MAGIC ? c->last : last_global;
}

ncclResult_t ncclGetVersion(int *version)
{
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    pthread_mutex_lock(&nstub_mu);
    long n = ++ids;
    pthread_mutex_unlock(&nstub_mu);
    snprintf(id->internal, sizeof id->internal, "ncclstub %ld %ld", (long)getpid(), n);
    return ncclSuccess;
}

/* Joins the helper thread of c's last non-blocking operation once it is
 * done (a thread still ending when the process exits crashes
 * LeakSanitizer's scan of the threads). */
void nstub_reap(struct sc_stub_comm *c)
{
    pthread_mutex_lock(&nstub_mu);
    int join = c->has_helper && !c->busy;
    pthread_t th = c->helper;
    if (join)
        c->has_helper = 0;
    pthread_mutex_unlock(&nstub_mu);
    if (join)
        pthread_join(th, NULL);
}

/* A communicator the caller may use (not destroyed, not busy). */
int nstub_usable(struct sc_stub_comm *c, const char *call)
{
    if (c && c->magic == COMM_MAGIC)
        nstub_reap(c);
    if (!c || c->magic != COMM_MAGIC || c->destroyed) {
        sc_cudastub_violation(-1, "%s on a %s communicator", call, c ? "destroyed" : "NULL");
        return 0;
    }
    if (c->busy) {
        sc_cudastub_violation(c->gpu, "%s on a communicator whose last operation is still in "
                              "progress (ncclCommGetAsyncError said ncclInProgress)", call);
        return 0;
    }
    return 1;
}
