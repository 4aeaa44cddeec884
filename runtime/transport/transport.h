/*
 * transport.h — moving tensors between devices (runtime/README.md).
 *
 * A transport is a table of function pointers and a context shared by all
 * devices of one process (the ggml backend pattern). It executes *groups*:
 * the executor hands it each run of consecutive SEND/RECV instructions of a
 * device's stream as one group (one ncclGroupStart/End), in the order the
 * stream posts them, and starts a group only when the device's previous
 * group has completed (docs/semantics.md#communication-semantics, the semantics the verifier proved
 * deadlock-free). A group completes when every transfer in it has met its
 * matching transfer in a started group of the peer. Transfers are matched by
 * (peer, tag); the tag is unique per (direction, consuming stage,
 * microbatch) in a step.
 *
 *     sc_xfer x[2] = {{.send = 1, .peer = 1, .tag = t0, .buf = a, .bytes = n},
 *                     {.send = 0, .peer = 1, .tag = t1, .buf = b, .bytes = n}};
 *     void *g;
 *     tp->ops->start(tp->ctx, dev, x, 2, &g);   // posts both, returns at once
 *     tp->ops->wait(tp->ctx, dev, g);           // both matched and copied
 *     tp->ops->release(tp->ctx, dev, g);
 *
 * Buffers belong to the caller and must stay valid until the group has
 * completed. Thread-safety: start/test/wait/release of one device are
 * called by that device's thread; different devices call concurrently.
 * abort may be called by any thread: every wait of every device then
 * returns SC_ERR_RUNTIME soon. wait also returns SC_ERR_RUNTIME after the
 * transport's timeout (the watchdog that turns a lost peer into an error).
 *
 * Tested by: tests/unit/test_runtime.c, tests/unit/test_coll_run.c.
 */
#ifndef SC_TRANSPORT_H
#define SC_TRANSPORT_H

#include <stddef.h>

#include "ir/ir.h"

typedef struct sc_xfer {
    int send;     /* 1 send, 0 receive */
    int peer;     /* the other device */
    int tag;      /* matching key, >= 0 */
    void *buf;
    size_t bytes;
} sc_xfer;

/* Element types of a collective's buffer. */
enum { SC_DT_F32, SC_DT_F64 };

/* One device's part of a collective (docs/semantics.md#collectives): its buffer of count
 * elements, reduced in place with the other members' (all-reduce) or
 * overwritten with the root's (broadcast). */
typedef struct sc_cxfer {
    int op;       /* SC_OP_ALLREDUCE or SC_OP_BCAST */
    int red;      /* all-reduce: SC_RED_SUM or SC_RED_MAX */
    int root;     /* broadcast: the device that sends */
    int dtype;    /* SC_DT_F32 or SC_DT_F64 */
    void *buf;
    size_t count;
} sc_cxfer;

/* One member's part of an all-to-all over a group (DISPATCH, COMBINE:
 * docs/semantics.md#expert-parallelism): rows of `row` bytes (the same on
 * every member), send holding nsend[e] rows for member e, destination-major;
 * the transport writes the rows received into recv (room for rcap rows),
 * source-major, nrecv[e] of them from member e, or sets overflow when more
 * came than rcap (and copies none). */
typedef struct sc_a2a_part {
    int op;               /* SC_OP_DISPATCH or SC_OP_COMBINE */
    size_t row;
    const void *send;
    const size_t *nsend;  /* [E] */
    void *recv;
    size_t rcap;
    size_t *nrecv;        /* [E] */
    int overflow;
} sc_a2a_part;

/* Whether a transport runs collective kind op as a broadcast from its root
 * (a rooted kind, SC_OPF_ROOTED: BCAST), not as an all-reduce (one with a
 * reduction, SC_OPF_REDUCES: ALLREDUCE). Every transport implements these
 * two primitives; a collective kind with neither flag (an all-to-all)
 * needs a third in each transport (coll_host.h, MPI, NCCL, CUDA local)
 * and is refused by the executor until then (sc_cchan_new).
 * Generated from the rows, not read from sc_op_tab: the CUDA module
 * (cuda_module.c) links none of interp/. */
static inline int sc_cxfer_bcast(int op)
{
    static const unsigned char rooted[] = {
#define X(name, cls, flags, mem, cost, look) ((flags) & SC_OPF_ROOTED) != 0,
        SC_OPS(X)
#undef X
    };
    return (unsigned)op < SC_OP_COUNT && rooted[op];
}

struct sc_transport_ops {
    const char *name;
    /* Posts a group of n transfers of device dev; *group is its handle. */
    sc_status (*start)(void *ctx, int dev, const sc_xfer *x, int n, void **group);
    /* *done = 1 once the group has completed; never blocks. */
    sc_status (*test)(void *ctx, int dev, void *group, int *done);
    /* Blocks until the group has completed, the transport is aborted, or
     * the timeout passes. */
    sc_status (*wait)(void *ctx, int dev, void *group);
    /* Frees a completed group's handle. */
    void (*release)(void *ctx, int dev, void *group);
    /* Optional: make every device's waits fail (another device failed). */
    void (*abort)(void *ctx, int dev, const char *why);
    /* Message of the last failure (valid until the transport is freed). */
    const char *(*errmsg)(void *ctx);
    /* Optional (NULL: no collectives). Collectives over every device, on a
     * channel of their own (a duplicated communicator, a second NCCL
     * communicator and stream): the k-th coll_start of every device is the
     * same collective, with the same op, red, root, dtype and count (the
     * verifier proves the programs post them so). Returns at once; the
     * result is in buf once coll_test says done or coll_wait returns.
     * The executor starts a device's next collective only when the
     * previous one has completed there. Results are the same on every
     * member and from run to run (a fixed order of reduction). */
    sc_status (*coll_start)(void *ctx, int dev, const sc_cxfer *c, void **h);
    /* Optional (NULL: none). An all-to-all over every device on the same
     * channel, in the same order as the other collectives (a handle for
     * coll_test, coll_wait and coll_release); x is the caller's until it
     * has completed. The local, mpi, nccl and cuda-local transports have
     * one; a GPU transport's rows are device memory that the caller's
     * backend has finished writing (it synchronized, model_moe_ep.c). */
    sc_status (*a2a_start)(void *ctx, int dev, sc_a2a_part *x, void **h);
    sc_status (*coll_test)(void *ctx, int dev, void *h, int *done);
    sc_status (*coll_wait)(void *ctx, int dev, void *h);
    void (*coll_release)(void *ctx, int dev, void *h);
    /* Optional (NULL: the caller backs off, backoff.h): for a caller that
     * polls test and coll_test itself. watch returns a token before the
     * polls; idle, after polls that found nothing done, sleeps until
     * something of dev's may have moved since the token (a peer rang, MPI's
     * doorbells) or a short time passes, and returns 1; 0 when it cannot
     * (then the caller backs off). */
    unsigned (*watch)(void *ctx, int dev);
    int (*idle)(void *ctx, int dev, unsigned token);
};

typedef struct sc_transport {
    const struct sc_transport_ops *ops;
    void *ctx;
} sc_transport;

/* In-process transport between the threads of P devices; max_tag bounds
 * the tags (exclusive); timeout_s > 0 bounds every wait. */
sc_status sc_transport_local_new(int P, int max_tag, double timeout_s, sc_transport **out);
/* Bytes the local transport's tables take (a slot per tag). */
size_t sc_transport_local_bytes(int P, int max_tag);
void sc_transport_local_free(sc_transport *tp);

/* MPI transport: this process is device `rank` of MPI_COMM_WORLD (the
 * caller has initialised MPI). Unavailable (SC_ERR_ARG) when stagecraft was
 * built without MPI. */
sc_status sc_transport_mpi_new(int max_tag, double timeout_s, sc_transport **out, char *err,
                               size_t errlen);
/* The same over the ranks of MPI_COMM_WORLD that pass this color (>= 0),
 * this process device number its place among them by key (every rank
 * calls it, in the same order: MPI_Comm_split). Expert parallelism on MPI
 * ranks (run_ep_mpi.c): a pipeline per EP rank, a group per device. */
sc_status sc_transport_mpi_split_new(int color, int key, int max_tag, double timeout_s,
                                     sc_transport **out, char *err, size_t errlen);
void sc_transport_mpi_free(sc_transport *tp);

struct sc_backend;

/* ---- GPU transports (built with CUDA; see docs/run.md#devices-threads-mpi-ranks-gpus) ----
 *
 * In the CUDA module, which device/cuda_load.c loads at the first call.
 *
 * Both take the cuda backends of their devices (be[i] for devs[i]): a
 * group's data moves after the compute each device had queued on its
 * backend's compute stream when it posted the group (an event recorded there
 * and waited for by the communication stream), and a group has completed
 * when the host sees its events done, so compute queued afterwards reads
 * received data and send buffers may be freed.
 *
 * cuda-local: the devices are threads of this process, any number per GPU
 * (emulated devices). Matching exactly as `local` (by tag); the side that
 * starts second queues cudaMemcpyPeerAsync on its own communication stream.
 * abort and the timeout as `local`. */
sc_status sc_transport_cuda_local_new(int P, struct sc_backend *const *be, int max_tag,
                                      double timeout_s, sc_transport **out, char *err,
                                      size_t errlen);
void sc_transport_cuda_local_free(sc_transport *tp);

/* nccl: one NCCL communicator over the P devices, one GPU each (NCCL refuses
 * two ranks on one GPU). This process holds n of them, devs[0..n-1] (all P as
 * threads, or one under MPI). Each group is one ncclGroupStart, an
 * ncclSend/ncclRecv per transfer, ncclGroupEnd on the device's communication
 * stream. NCCL matches the transfers between two devices in the order they are
 * posted, not by tag: the caller must give programs whose transfers between
 * each pair come in the same order on both sides (every lowered program does,
 * docs/semantics.md#why-lowered-programs-cannot-hang; sc_run checks). The
 * communicators are non-blocking, so no call can hang: a wait polls the
 * group's event and ncclCommGetAsyncError, and on an NCCL error, abort, or the
 * timeout, every device's communicator is aborted (ncclCommAbort, by its own
 * thread) and its waits fail. id: the communicator's unique id, the same bytes
 * on every process (from sc_transport_nccl_id on one of them); NULL when
 * n == P. */
#define SC_NCCL_ID_BYTES 128
/* 1 when the nccl transport is built in, its module loads and NCCL itself
 * loads (the module opens libnccl.so.2 at run time: from
 * STAGECRAFT_NCCL_LIBRARY, the loader path, or the nvidia-nccl-cu* Python
 * wheel). sc_transport_nccl_usable also says why not (why may be NULL). */
int sc_transport_nccl_available(void);
int sc_transport_nccl_usable(char *why, size_t whylen);
sc_status sc_transport_nccl_id(unsigned char *id, char *err, size_t errlen);
sc_status sc_transport_nccl_new(int P, int n, const int *devs, struct sc_backend *const *be,
                                const unsigned char *id, double timeout_s, sc_transport **out,
                                char *err, size_t errlen);
void sc_transport_nccl_free(sc_transport *tp);

#endif
