/*
 * transport_nccl_a2a.c — the nccl transport's all-to-all (transport.h's
 * a2a_start: DISPATCH, COMBINE of docs/semantics.md#expert-parallelism) on
 * the collectives' communicator and stream, in their order, in two groups:
 *
 *   counts  ncclGroupStart, to each member e an ncclSend of nsend[e] and an
 *           ncclRecv of e's count for this member (through a device buffer
 *           of 2 P counts, after the compute queued so far), ncclGroupEnd;
 *   rows    once the counts are done (the test that finds them so brings
 *           them to the host and posts this group): an ncclSend of the
 *           nsend[e] rows for e, an ncclRecv of the nrecv[e] rows from e,
 *           source-major into recv; when more came than rcap, into scratch
 *           that is dropped (overflow), so every send still meets a receive.
 *
 * A transfer of no rows is posted by neither side (both know the count).
 * NCCL sends to the member itself as to any other member (a copy on its GPU).
 */
#include "nccl_impl.h"

#include <stdlib.h>

typedef struct na2a {
    const sc_nccl_lib *N;
    sc_a2a_part *x;
    int phase;     /* 0 the counts, 1 the rows */
    size_t *dcnt;  /* device: [P] counts sent, [P] received */
    void *sink;    /* device: an overflow's rows, dropped */
} na2a;

static int going(ncclResult_t r)
{
    return r == ncclSuccess || r == ncclInProgress;
}

sc_status sc_nccl_a2a_start(nctx *c, const sc_nccl_lib *nl, int dev, sc_a2a_part *x, void **h)
{
    cudaError_t err_;
    ndev *v = sc_nccl_dev_of(c, dev);
    sc_status st = sc_nccl_group_begin(c, v, v ? &v->cstream : NULL, h);
    if (st)
        return st;
    ngroup *g = *h;
    na2a *a = calloc(1, sizeof *a);
    if (!(g->a2a = a))
        return SC_ERR_NOMEM;
    *a = (na2a){.N = nl, .x = x};
    size_t bytes = (size_t)c->P * sizeof(size_t);
    if (!CUDA_OK(v, cudaMallocAsync((void **)&a->dcnt, 2 * bytes, v->cstream)) ||
        !CUDA_OK(v, cudaMemcpyAsync(a->dcnt, x->nsend, bytes, cudaMemcpyHostToDevice,
                                    v->cstream)))
        return SC_ERR_RUNTIME;
    ncclResult_t r = nl->GroupStart();
    for (int e = 0; e < c->P && going(r); e++) {
        r = nl->Send(a->dcnt + e, sizeof(size_t), ncclInt8, e, v->cc, v->cstream);
        if (going(r))
            r = nl->Recv(a->dcnt + c->P + e, sizeof(size_t), ncclInt8, e, v->cc, v->cstream);
    }
    ncclResult_t r2 = nl->GroupEnd();
    return sc_nccl_group_queued(c, v, g, v->cstream, going(r) ? r2 : r, v->cc,
                                "ncclGroupEnd (all-to-all counts)");
}

/* The counts done: on the host, then the rows' group. */
static sc_status rows(nctx *c, ndev *v, ngroup *g)
{
    cudaError_t err_;
    na2a *a = g->a2a;
    sc_a2a_part *x = a->x;
    const sc_nccl_lib *nl = a->N;
    if (!CUDA_OK(v, sc_cuda_use(v->gpu)) ||
        !CUDA_OK(v, cudaMemcpyAsync(x->nrecv, a->dcnt + c->P, (size_t)c->P * sizeof(size_t),
                                    cudaMemcpyDeviceToHost, v->cstream)) ||
        !CUDA_OK(v, cudaStreamSynchronize(v->cstream)))
        return SC_ERR_RUNTIME;
    size_t total = 0, at = 0, off = 0;
    for (int e = 0; e < c->P; e++)
        total += x->nrecv[e];
    char *dst = x->recv;
    x->overflow = total > x->rcap;
    if (x->overflow) {
        if (!CUDA_OK(v, cudaMallocAsync(&a->sink, total * x->row, v->cstream)))
            return SC_ERR_RUNTIME;
        dst = a->sink;
    }
    a->phase = 1;
    g->enqueued = 0;
    ncclResult_t r = nl->GroupStart();
    for (int e = 0; e < c->P && going(r); e++) {
        if (x->nsend[e])
            r = nl->Send((const char *)x->send + at * x->row, x->nsend[e] * x->row, ncclInt8, e,
                         v->cc, v->cstream);
        if (x->nrecv[e] && going(r))
            r = nl->Recv(dst + off * x->row, x->nrecv[e] * x->row, ncclInt8, e, v->cc,
                         v->cstream);
        at += x->nsend[e];
        off += x->nrecv[e];
    }
    ncclResult_t r2 = nl->GroupEnd();
    return sc_nccl_group_queued(c, v, g, v->cstream, going(r) ? r2 : r, v->cc,
                                "ncclGroupEnd (all-to-all rows)");
}

sc_status sc_nccl_a2a_test(nctx *c, ndev *v, ngroup *g, int *done)
{
    sc_status st = sc_nccl_test_on(c, v, g, v->cc, v->cstream, done);
    if (st || !*done || g->a2a->phase == 1)
        return st;
    *done = 0;
    return rows(c, v, g);
}

void sc_nccl_a2a_free(ndev *v, ngroup *g)
{
    na2a *a = g->a2a;
    if (v && sc_cuda_use(v->gpu) == cudaSuccess) {
        if (a->dcnt)
            (void)cudaFreeAsync(a->dcnt, v->cstream);
        if (a->sink)
            (void)cudaFreeAsync(a->sink, v->cstream);
        (void)cudaGetLastError();
    }
    free(a);
    g->a2a = NULL;
}
