/*
 * nccl_impl.h — private to the nccl transport (transport_nccl.c, and its
 * all-to-all in transport_nccl_a2a.c): its devices, groups and context, and
 * the steps every group takes (begin after the compute queued, queued once
 * NCCL has enqueued it, tested by its event).
 * Tested by: tests/cudastub/run.sh (the stand-in's NCCL), tests/gpu/run.sh.
 */
#ifndef SC_NCCL_IMPL_H
#define SC_NCCL_IMPL_H

#include <pthread.h>

#include "cuda_impl.h"
#include "transport/transport.h"

#ifdef SC_HAVE_NCCL

typedef struct ndev {
    int dev, gpu;
    cudaStream_t compute;  /* the backend's */
    cudaStream_t comm;
    cudaEvent_t mark;      /* compute progress when a group is posted */
    ncclComm_t nc;
    ncclComm_t cc;         /* the collectives' communicator */
    cudaStream_t cstream;  /* the collectives' stream */
    int dead;              /* its communicators were aborted */
} ndev;

typedef struct ngroup {
    int enqueued;          /* 0 while ncclGroupEnd's work is still in progress */
    cudaEvent_t ev;
    struct na2a *a2a;      /* an all-to-all's state (transport_nccl_a2a.c), or NULL */
} ngroup;

typedef struct nctx {
    int P, n;
    ndev *d;               /* [n] */
    int *local;            /* [P] index into d, or -1 */
    double timeout_s;
    pthread_mutex_t mu;
    int aborted;
    char err[384];
} nctx;

/* Records the failure of a call of device v and aborts v's communicator. */
sc_status sc_nccl_fail_dev(nctx *c, ndev *v, const char *file, int line, const char *call,
                          const char *reason);
/* Device dev's state in this process, or NULL. */
ndev *sc_nccl_dev_of(nctx *c, int dev);
/* The start of a group (or collective) of device v on stream st: its
 * handle in *out (freed by the transport's release, also on failure), an
 * event for its completion, st ordered after the compute queued so far. */
sc_status sc_nccl_group_begin(nctx *c, ndev *v, cudaStream_t *st, void **out);
/* After the NCCL call r that queued g on st: its completion event once queued. */
sc_status sc_nccl_group_queued(nctx *c, ndev *v, ngroup *g, cudaStream_t st, ncclResult_t r,
                               ncclComm_t nc, const char *what);
/* Whether g on communicator nc and stream st has completed. */
sc_status sc_nccl_test_on(nctx *c, ndev *v, ngroup *g, ncclComm_t nc, cudaStream_t st,
                          int *done);
/* transport_nccl_a2a.c: an all-to-all on the collectives' communicator
 * (transport.h's a2a_start), its test (the phases: counts, then rows) and
 * the release of its state. */
sc_status sc_nccl_a2a_start(nctx *c, const sc_nccl_lib *nl, int dev, sc_a2a_part *x, void **h);
sc_status sc_nccl_a2a_test(nctx *c, ndev *v, ngroup *g, int *done);
void sc_nccl_a2a_free(ndev *v, ngroup *g);

#define CUDA_OK(v, call)                                                        \
    ((err_ = (call)) == cudaSuccess ||                                          \
     (sc_nccl_fail_dev(c, (v), __FILE__, __LINE__, #call, cudaGetErrorString(err_)), 0))

#endif
#endif
