/*
 * ncclstub_comm.c — communicators of the NCCL stand-in (a test double,
 * tests/cudastub/; what it models: ncclstub.c): ncclCommInitRankConfig and
 * ncclCommSplit post a join in the thread's group (ncclstub_group.c);
 * finalize, destroy, abort, the asynchronous error; NCCL's INFO line.
 */
#define _GNU_SOURCE
#include "nccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclstub_impl.h"

/* NCCL's debug log: stdout unless NCCL_DEBUG_FILE names a file. */
static void debug_line(int rank, int nranks, int gpu)
{
    if (!getenv("NCCL_DEBUG"))
        return;
    const char *f = getenv("NCCL_DEBUG_FILE");
    FILE *out = stdout;
    if (f && *f) {
        char name[512], host[64] = "host";
        size_t n = 0;
        gethostname(host, sizeof host);
        for (const char *c = f; *c && n + 80 < sizeof name; c++) {
            if (c[0] == '%' && c[1] == 'h')
                n += (size_t)snprintf(name + n, sizeof name - n, "%s", host), c++;
            else if (c[0] == '%' && c[1] == 'p')
                n += (size_t)snprintf(name + n, sizeof name - n, "%ld", (long)getpid()), c++;
            else
                name[n++] = *c;
        }
        name[n] = 0;
        out = fopen(name, "a");
        if (!out)
            return;
    }
    fprintf(out, "cudastub:%ld [%d] NCCL INFO comm rank %d nranks %d cudaDev %d - Init START\n",
            (long)getpid(), gpu, rank, nranks, gpu);
    fflush(out);
    if (out != stdout)
        fclose(out);
}

/* Never freed (a destroyed communicator stays marked, so a later use is
 * caught); reachable from here. */
static struct sc_stub_comm **comms;
static int ncomms, commcap;

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *cfg)
{
    char want[32];
    snprintf(want, sizeof want, "ncclstub %ld ", (long)getpid());
    if (strncmp(id.internal, want, strlen(want)) != 0)
        return nstub_failed(NULL, ncclInvalidUsage, "the stand-in NCCL works within one process (the "
                      "unique id comes from another)");
    if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
        return nstub_failed(NULL, ncclInvalidArgument, "rank %d of %d", rank, nranks);
    struct sc_stub_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclSystemError;
    *c = (struct sc_stub_comm){.magic = COMM_MAGIC, .rank = rank,
                               .gpu = sc_cudastub_current(),
                               .blocking = !cfg || cfg->blocking};
    pthread_mutex_lock(&nstub_mu);
    if (ncomms == commcap) {
        commcap = commcap ? 2 * commcap : 16;
        comms = realloc(comms, (size_t)commcap * sizeof *comms);
    }
    comms[ncomms++] = c;
    pthread_mutex_unlock(&nstub_mu);
    debug_line(rank, nranks, c->gpu);
    *out = c;
    int implicit = nstub_T.depth == 0;
    if (implicit)
        ncclGroupStart();
    gop g = {.kind = 0, .c = c, .nranks = nranks};
    memcpy(g.id, id.internal, sizeof g.id);
    ncclResult_t r = nstub_add_op(g);
    if (r != ncclSuccess)
        nstub_T.err = r;
    if (!implicit)
        return r;
    return ncclGroupEnd();
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *async)
{
    if (!c || c->magic != COMM_MAGIC || c->destroyed) {
        sc_cudastub_violation(-1, "ncclCommGetAsyncError on a %s communicator",
                              c ? "destroyed" : "NULL");
        return ncclInvalidArgument;
    }
    nstub_reap(c);
    pthread_mutex_lock(&nstub_mu);
    if (c->error)
        *async = c->error;
    else if (!c->q || c->q->joined < c->q->nranks || c->busy)
        *async = ncclInProgress;
    else
        *async = ncclSuccess;
    pthread_mutex_unlock(&nstub_mu);
    return ncclSuccess;
}

/* ncclCommFinalize's helper: done once the communicator's operations ran. */
static void *finalize_later(void *p)
{
    struct sc_stub_comm *c = p;
    pthread_mutex_lock(&nstub_mu);
    while (c->pending > 0 && !c->dead)
        pthread_cond_wait(&nstub_cv, &nstub_mu);
    c->busy = 0;
    pthread_cond_broadcast(&nstub_cv);
    pthread_mutex_unlock(&nstub_mu);
    return NULL;
}

ncclResult_t ncclCommFinalize(ncclComm_t c)
{
    if (!nstub_usable(c, "ncclCommFinalize"))
        return ncclInvalidUsage;
    if (c->blocking) {
        finalize_later(c);
        return ncclSuccess;
    }
    pthread_mutex_lock(&nstub_mu);
    c->busy = 1;
    pthread_mutex_unlock(&nstub_mu);
    pthread_t th;
    if (pthread_create(&th, NULL, finalize_later, c) != 0) {
        finalize_later(c);
        return ncclSuccess;
    }
    pthread_mutex_lock(&nstub_mu);
    c->helper = th;
    c->has_helper = 1;
    pthread_mutex_unlock(&nstub_mu);
    return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    if (!nstub_usable(c, "ncclCommDestroy"))
        return ncclInvalidUsage;
    pthread_mutex_lock(&nstub_mu);
    while (c->pending > 0 && !c->dead) /* blocking, as in NCCL: its work ends first */
        pthread_cond_wait(&nstub_cv, &nstub_mu);
    c->destroyed = 1;
    pthread_mutex_unlock(&nstub_mu);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c)
{
    if (!c || c->magic != COMM_MAGIC || c->destroyed) {
        sc_cudastub_violation(-1, "ncclCommAbort on a %s communicator", c ? "destroyed" : "NULL");
        return ncclInvalidArgument;
    }
    pthread_mutex_lock(&nstub_mu);
    c->dead = 1;
    pthread_cond_broadcast(&nstub_cv);
    /* Blocking, as in NCCL: the helper enqueuing its last group finishes. */
    while (c->busy == 1 && c->pending > 0)
        pthread_cond_wait(&nstub_cv, &nstub_mu);
    pthread_mutex_unlock(&nstub_mu);
    while (c->has_helper) { /* its helper ends once busy is clear */
        nstub_reap(c);
        if (c->has_helper)
            usleep(100);
    }
    pthread_mutex_lock(&nstub_mu);
    c->destroyed = 1;
    pthread_mutex_unlock(&nstub_mu);
    return ncclSuccess;
}

/* ---- split and collectives ---- */

ncclResult_t ncclCommSplit(ncclComm_t parent, int color, int key, ncclComm_t *out,
                           ncclConfig_t *cfg)
{
    (void)color;
    if (!nstub_usable(parent, "ncclCommSplit"))
        return ncclInvalidUsage;
    if (!parent->q || key != parent->rank)
        return nstub_failed(parent, ncclInvalidArgument, "the stand-in splits with key = rank only");
    struct sc_stub_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclSystemError;
    *c = (struct sc_stub_comm){.magic = COMM_MAGIC, .rank = parent->rank,
                               .gpu = sc_cudastub_current(), .blocking = !cfg || cfg->blocking};
    gop g = {.kind = 0, .c = c, .nranks = parent->q->nranks};
    pthread_mutex_lock(&nstub_mu);
    if (ncomms == commcap) {
        commcap = commcap ? 2 * commcap : 16;
        comms = realloc(comms, (size_t)commcap * sizeof *comms);
    }
    comms[ncomms++] = c;
    snprintf(g.id, sizeof g.id, "%.100s/split%d", parent->q->id, parent->nsplit++);
    pthread_mutex_unlock(&nstub_mu);
    *out = c;
    int implicit = nstub_T.depth == 0;
    if (implicit)
        ncclGroupStart();
    ncclResult_t r = nstub_add_op(g);
    if (r != ncclSuccess)
        nstub_T.err = r;
    return implicit ? ncclGroupEnd() : r;
}
