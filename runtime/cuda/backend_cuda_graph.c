/*
 * backend_cuda_graph.c — run --graph on the cuda backend (backend.h's
 * capture slots, docs/graphs.md): a step captured on the compute streams of
 * all the instances of a run, and replayed.
 *
 * Capture. The origin's compute stream starts a capture in
 * cudaStreamCaptureModeRelaxed (the loss's scratch below is allocated
 * inside the first capture); the other instances join it by `order` (a
 * wait for an event recorded on a capturing stream), the transports'
 * communication streams by the events they wait for, and everything is
 * joined back to the origin by `order` before capture_end. What runs on
 * the streams is recorded; nothing may wait for the device meanwhile
 * (cudaStreamSynchronize or cudaEventSynchronize on a capturing stream
 * invalidates the capture, and capture_end reports it).
 *
 * The loss. xent waits for the device to return the loss; inside a capture
 * it cannot. Each xent captured gets a slot of its own (device targets and
 * per-row losses, pinned copies of both): the targets are copied into the
 * slot's pinned buffer at capture time (the built-in model's targets are
 * the same in every step, sc_hash of the microbatch within its step), the
 * graph copies them up, runs the kernel and copies the rows' losses down;
 * after a replay graph_losses sums each slot's rows on the host in row
 * order, as the eager xent does, so the bits are the same.
 */
#include "backend/backend.h"
#include "backend_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sc_cuda_xslot {
    int rows;
    int32_t *dtgt, *htgt;
    double *dloss, *hloss;
};

int sc_cuda_capturing(sc_cuda *c)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    return c->compute && cudaStreamIsCapturing(c->compute, &st) == cudaSuccess &&
           st != cudaStreamCaptureStatusNone;
}

/* The next slot of this capture, for `rows` rows (allocated at its first
 * use; a replay reuses the slots of its capture). */
static struct sc_cuda_xslot *xslot(sc_cuda *c, int rows)
{
    if (c->nxs == c->xcap) {
        int nc = c->xcap ? 2 * c->xcap : 8;
        struct sc_cuda_xslot *v = realloc(c->xs, (size_t)nc * sizeof *v);
        if (!v) {
            sc_cuda_fail(c, __FILE__, __LINE__, "xent", "out of host memory for the loss slots");
            return NULL;
        }
        memset(v + c->xcap, 0, (size_t)(nc - c->xcap) * sizeof *v);
        c->xs = v;
        c->xcap = nc;
    }
    struct sc_cuda_xslot *x = &c->xs[c->nxs];
    if (x->rows && x->rows != rows) {
        sc_cuda_fail(c, __FILE__, __LINE__, "xent", "a captured loss changed its rows");
        return NULL;
    }
    size_t r = (size_t)rows;
    if (!x->rows && !(CK(c, cudaMalloc((void **)&x->dtgt, r * sizeof(int32_t))) &&
                      CK(c, cudaMalloc((void **)&x->dloss, r * sizeof(double))) &&
                      CK(c, cudaMallocHost((void **)&x->htgt, r * sizeof(int32_t))) &&
                      CK(c, cudaMallocHost((void **)&x->hloss, r * sizeof(double)))))
        return NULL;
    x->rows = rows;
    c->nxs++;
    return x;
}

double sc_cuda_graph_xent(sc_cuda *c, int rows, int V, float *logits, const int32_t *targets,
                          float scale)
{
    struct sc_cuda_xslot *x;
    if (!sc_cuda_ready(c) || !(x = xslot(c, rows)))
        return NAN;
    memcpy(x->htgt, targets, (size_t)rows * sizeof(int32_t));
    if (!CK(c, cudaMemcpyAsync(x->dtgt, x->htgt, (size_t)rows * sizeof(int32_t),
                               cudaMemcpyHostToDevice, c->compute)) ||
        !CK(c, sc_cuda_xent(c->compute, rows, V, logits, x->dtgt, scale, x->dloss)) ||
        !CK(c, cudaMemcpyAsync(x->hloss, x->dloss, (size_t)rows * sizeof(double),
                               cudaMemcpyDeviceToHost, c->compute)))
        return NAN;
    return 0.0; /* read after the replay: graph_losses */
}

sc_status sc_cuda_capture_begin(void *ctx)
{
    sc_cuda *c = ctx;
    c->nxs = 0;
    if (!sc_cuda_ready(c) ||
        !CK(c, cudaStreamBeginCapture(c->compute, cudaStreamCaptureModeRelaxed)))
        return SC_ERR_RUNTIME;
    return SC_OK;
}

/* One stream's next work waits for what another has queued so far (also
 * a pair's lane_fork and lane_join). */
void sc_cuda_order(void *ctx, void *before)
{
    sc_cuda *after = ctx, *b = before;
    if (sc_cuda_ready(b) && CK(b, cudaEventRecord(b->mark, b->compute)) && sc_cuda_ready(after))
        CK(after, cudaStreamWaitEvent(after->compute, b->mark, 0));
}

sc_status sc_cuda_capture_end(void *ctx, void **graph)
{
    sc_cuda *c = ctx;
    *graph = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    /* Ended even after a failure inside, so that the stream captures no more. */
    if (!CK(c, sc_cuda_use(c->gpu)))
        return SC_ERR_RUNTIME;
    cudaError_t e = cudaStreamEndCapture(c->compute, &g);
    if (c->failed) {
        if (g)
            cudaGraphDestroy(g);
        return SC_ERR_RUNTIME;
    }
    if (!CK(c, e) || !CK(c, cudaGraphInstantiate(&x, g, 0))) {
        if (g)
            cudaGraphDestroy(g);
        return SC_ERR_RUNTIME;
    }
    cudaGraphDestroy(g); /* the instance keeps what it needs */
    *graph = (void *)x;
    return SC_OK;
}

sc_status sc_cuda_graph_launch(void *ctx, void *graph)
{
    sc_cuda *c = ctx;
    if (!sc_cuda_ready(c) || !CK(c, cudaGraphLaunch((cudaGraphExec_t)graph, c->compute)))
        return SC_ERR_RUNTIME;
    return SC_OK;
}

void sc_cuda_graph_free(void *ctx, void *graph)
{
    sc_cuda *c = ctx;
    if (graph && sc_cuda_use(c->gpu) == cudaSuccess)
        cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

int sc_cuda_graph_losses(void *ctx, double *loss, int max)
{
    sc_cuda *c = ctx;
    if (!sc_cuda_ready(c) || !CK(c, cudaStreamSynchronize(c->compute)))
        return -1;
    int n = c->nxs < max ? c->nxs : max;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int r = 0; r < c->xs[i].rows; r++)
            s += c->xs[i].hloss[r];
        loss[i] = s;
    }
    return n;
}

void sc_cuda_graph_close(sc_cuda *c)
{
    for (int i = 0; i < c->xcap; i++) {
        cudaFree(c->xs[i].dtgt);
        cudaFree(c->xs[i].dloss);
        cudaFreeHost(c->xs[i].htgt);
        cudaFreeHost(c->xs[i].hloss);
    }
    c->nxs = c->xcap = 0;
}
