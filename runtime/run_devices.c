/*
 * run_devices.c — where the devices of a run execute (run_impl.h): threads
 * of this process or MPI ranks, each with its backend and the transport
 * that follows from it; the GPU memory check before anything is allocated.
 */
#include "run_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "exec.h"
#include "transport/sc_mpi.h"
#include "transport/transport.h"

typedef struct devrun {
    const sc_prog *pg;
    int d;
    sc_backend *be;
    sc_transport *tp;
    sc_workload wl;
    double origin;
    sc_exec_out out;
    sc_status st;
} devrun;

static void *device_thread(void *p)
{
    devrun *r = p;
    r->st = sc_exec_device(r->pg, r->d, r->be, r->tp, &r->wl, r->origin, &r->out);
    return NULL;
}

/* ---- devices on GPUs: memory, transports ---- */

static double dev_param_bytes(const sc_model *md, const sc_prog *pg, int d)
{
    double b = 0;
    for (int s = 0; s < sc_prog_stages(pg); s++)
        if (sc_prog_stage_device(pg, s) == d)
            b += (double)sc_model_param_bytes(md, s);
    return b + (double)sc_model_shard_param_bytes(md);
}

/* "d1 (stages 1, 5)", "d0 (stage 0)" */
static void dev_name(const sc_prog *pg, int d, char *buf, size_t len)
{
    int count = 0;
    for (int s = 0; s < sc_prog_stages(pg); s++)
        count += sc_prog_stage_device(pg, s) == d;
    size_t n = (size_t)snprintf(buf, len, "d%d (stage%s", d, count == 1 ? "" : "s");
    int k = 0;
    for (int s = 0; s < sc_prog_stages(pg) && n < len; s++) {
        if (sc_prog_stage_device(pg, s) != d)
            continue;
        n += (size_t)snprintf(buf + n, len - n, k == 6 ? ", ..." : "%s %d", k ? "," : "", s);
        if (k++ == 6)
            break;
    }
    if (n < len)
        snprintf(buf + n, len - n, ")");
}

/* 1 when some device of pg sends anything. */
static int has_transfers(const sc_prog *pg)
{
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++)
            if (sc_op_is_transfer(in[k].op))
                return 1;
    }
    return 0;
}

#define GIB(x) ((double)(x) / (1024.0 * 1024.0 * 1024.0))

/* What a device takes besides its tensors, allocated after the check: the
 * CUDA context is already there when the free memory is read (the backends
 * are open), but cuBLAS allocates its workspace at the first product (32 MiB
 * on Hopper), and an NCCL communicator its buffers (a few MiB per protocol,
 * channel and peer) when it starts. */
#define CUBLAS_WORKSPACE_BYTES (32.0 * 1024 * 1024)
#define NCCL_BUFFER_BYTES (256.0 * 1024 * 1024)

/* Refuses a run whose parameters, gradients, predicted peak activations and
 * the libraries' own memory do not fit in the free memory of the GPUs
 * (devices sharing a GPU add up). be[i] is device devs[i]'s backend;
 * backends without meminfo pass. nccl: the devices will start NCCL. */
static sc_status gpu_fits(const sc_model *md, const sc_prog *pg, const sc_run_result *r,
                          sc_backend *const *be, const int *devs, int n, int nccl, char *err,
                          size_t errlen)
{
    double extra = CUBLAS_WORKSPACE_BYTES + (nccl ? NCCL_BUFFER_BYTES : 0);
    for (int i = 0; i < n; i++) {
        int gi;
        size_t fi, ti;
        if (!be[i]->ops->meminfo)
            return SC_OK;
        if (be[i]->ops->meminfo(be[i]->ctx, &gi, &fi, &ti) != SC_OK) {
            snprintf(err, errlen, "d%d: %s", devs[i], be[i]->ops->errmsg(be[i]->ctx));
            return SC_ERR_RUNTIME;
        }
        double need = 0, params = 0, acts = 0, worst = -1;
        int on = 0, first = 1, big = devs[i];
        for (int j = 0; j < n; j++) {
            int gj;
            size_t fj, tj;
            if (be[j]->ops->meminfo(be[j]->ctx, &gj, &fj, &tj) != SC_OK || gj != gi)
                continue;
            if (j < i) {
                first = 0; /* this GPU was counted with device devs[j] */
                break;
            }
            double p = dev_param_bytes(md, pg, devs[j]), a = (double)r->predicted_bytes[devs[j]];
            params += p;
            acts += a;
            need += p + a + extra;
            on++;
            if (p + a > worst) {
                worst = p + a;
                big = devs[j];
            }
        }
        if (!first || need <= (double)fi)
            continue;
        char who[96];
        dev_name(pg, big, who, sizeof who);
        if (on == 1)
            snprintf(err, errlen, "out of memory on %s, GPU %d: predicted %.2f GiB (parameters "
                     "and gradients %.2f GiB, peak activations %.2f GiB, cuBLAS and NCCL "
                     "%.2f GiB), %.2f GiB free of %.2f GiB (make the model smaller: -D hidden, layers, "
                     "vocab, seq, batch)",
                     who, gi, GIB(need), GIB(params), GIB(acts), GIB(need - params - acts),
                     GIB(fi), GIB(ti));
        else
            snprintf(err, errlen, "out of memory on GPU %d, which holds %d devices (the largest "
                     "%s): predicted %.2f GiB (parameters and gradients %.2f GiB, peak "
                     "activations %.2f GiB, cuBLAS and NCCL %.2f GiB), %.2f GiB free of %.2f "
                     "GiB (make the model smaller, or use more GPUs)",
                     gi, on, who, GIB(need), GIB(params), GIB(acts), GIB(need - params - acts),
                     GIB(fi), GIB(ti));
        return SC_ERR_NOMEM;
    }
    return SC_OK;
}

/* After a device ran out of memory mid-step: the GPU's free memory against
 * the device's prediction, appended to err. */
static void oom_detail(const sc_model *md, const sc_prog *pg, const sc_run_result *r,
                       sc_backend *be, int d, char *err, size_t errlen)
{
    int g;
    size_t fb, tb, n = strlen(err);
    if (!be || !be->ops->meminfo || be->ops->meminfo(be->ctx, &g, &fb, &tb) != SC_OK ||
        n >= errlen)
        return;
    char who[96];
    dev_name(pg, d, who, sizeof who);
    double p = dev_param_bytes(md, pg, d), a = (double)r->predicted_bytes[d];
    snprintf(err + n, errlen - n, "; GPU %d has %.2f GiB free of %.2f GiB, predicted for %s: "
             "%.2f GiB (parameters and gradients %.2f GiB, peak activations %.2f GiB)",
             g, GIB(fb), GIB(tb), who, GIB(p + a), GIB(p), GIB(a));
}

sc_status sc_run_check_pair_order(const sc_prog *pg, char *err, size_t errlen)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_stream_microbatches(pg);
    size_t K = 2 * (size_t)S * (size_t)m;
    int *sendpos = malloc(K * sizeof(int)), *count = calloc((size_t)P, sizeof(int));
    sc_status st = SC_OK;
    if (!sendpos || !count) {
        snprintf(err, errlen, "out of memory");
        st = SC_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < K; i++)
        sendpos[i] = -1;
    /* The position of every SEND among its device's sends to that peer... */
    for (int a = 0; a < P; a++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, a, &n);
        memset(count, 0, (size_t)P * sizeof(int));
        for (size_t k = 0; k < n; k++)
            if (sc_op_is_send(in[k].op))
                sendpos[((size_t)in[k].dir * (size_t)S + (size_t)in[k].stage) * (size_t)m +
                        (size_t)in[k].mb] = count[in[k].peer]++;
    }
    /* ...equals that of its RECV among the receiver's receives from it. */
    for (int b = 0; b < P && !st; b++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, b, &n);
        memset(count, 0, (size_t)P * sizeof(int));
        for (size_t k = 0; k < n; k++) {
            if (!sc_op_is_recv(in[k].op))
                continue;
            int pos = count[in[k].peer]++;
            int sp = sendpos[((size_t)in[k].dir * (size_t)S + (size_t)in[k].stage) * (size_t)m +
                             (size_t)in[k].mb];
            if (sp != pos) {
                char buf[64];
                sc_instr_format(&in[k], buf, sizeof buf);
                snprintf(err, errlen, "d%d receives from d%d in another order than d%d sends: "
                         "%s (d%d #%zu) is its receive %d from d%d and the peer's send %d; "
                         "NCCL matches in posting order (use STAGECRAFT_TRANSPORT=cuda-local)",
                         b, in[k].peer, in[k].peer, buf, b, k, pos, in[k].peer, sp);
                st = SC_ERR_PROGRAM;
                break;
            }
        }
    }
out:
    free(sendpos);
    free(count);
    return st;
}

enum { TP_LOCAL, TP_MPI, TP_CUDA_LOCAL, TP_NCCL };
static const char *const tp_names[] = {"local", "mpi", "cuda-local", "nccl"};

static void transport_free(int kind, sc_transport *tp)
{
    switch (kind) {
    case TP_LOCAL: sc_transport_local_free(tp); break;
    case TP_MPI: sc_transport_mpi_free(tp); break;
    case TP_CUDA_LOCAL: sc_transport_cuda_local_free(tp); break;
    case TP_NCCL: sc_transport_nccl_free(tp); break;
    default: break;
    }
}

/* The GPU of a backend (meminfo), or -1. */
static int gpu_of(sc_backend *be)
{
    int g;
    size_t f, t;
    return be && be->ops->meminfo && be->ops->meminfo(be->ctx, &g, &f, &t) == SC_OK ? g : -1;
}

/* The transport of P devices as threads with backends be[0..P-1]. On cuda:
 * nccl when every device has its own GPU, NCCL loads and the pair order
 * holds; else cuda-local, with the reason in r->transport_note. A program
 * without transfers (p = 1) never starts NCCL (its bootstrap, proxy thread
 * and buffers would only add ways to fail), and when NCCL cannot create the
 * communicator the run goes on over cuda-local, saying why. */
static sc_status threads_transport(const sc_prog *pg, const sc_run_opts *o, sc_run_result *r,
                                   sc_backend *const *be, sc_transport **tp, int *kind,
                                   char *err, size_t errlen)
{
    int P = r->P, max_tag = 2 * r->S * sc_prog_stream_microbatches(pg);
    *kind = TP_LOCAL;
    if (strcmp(o->backend, "cuda") != 0) {
        if (sc_transport_local_new(P, max_tag, o->timeout_s, tp) != SC_OK) {
            snprintf(err, errlen, "out of memory creating the local transport");
            return SC_ERR_NOMEM;
        }
        return SC_OK;
    }
    const char *want = getenv("STAGECRAFT_TRANSPORT");
    if (want && *want && strcmp(want, "nccl") != 0 && strcmp(want, "cuda-local") != 0) {
        snprintf(err, errlen, "STAGECRAFT_TRANSPORT must be nccl or cuda-local for --backend "
                 "cuda (got '%s')", want);
        return SC_ERR_ARG;
    }
    int force = want && *want ? (strcmp(want, "nccl") == 0 ? TP_NCCL : TP_CUDA_LOCAL) : -1;
    char *why = r->transport_note;
    size_t whylen = sizeof r->transport_note;
    int nccl = 0;
    why[0] = 0;
    if (force == TP_CUDA_LOCAL)
        snprintf(why, whylen, "STAGECRAFT_TRANSPORT=cuda-local");
    else if (r->gpus != P)
        snprintf(why, whylen, "%d devices on %d GPUs, and NCCL needs one GPU per device", P,
                 r->gpus);
    else if (force != TP_NCCL && !has_transfers(pg))
        ; /* nothing to send: no NCCL, nothing to explain */
    else if (!sc_transport_nccl_usable(why, whylen))
        ;
    else
        nccl = sc_run_check_pair_order(pg, why, whylen) == SC_OK;
    if (force == TP_NCCL && !nccl) {
        snprintf(err, errlen, "STAGECRAFT_TRANSPORT=nccl: %s", why);
        return SC_ERR_ARG;
    }
    if (nccl) {
        int *devs = malloc((size_t)P * sizeof(int));
        if (!devs) {
            snprintf(err, errlen, "out of memory");
            return SC_ERR_NOMEM;
        }
        for (int d = 0; d < P; d++)
            devs[d] = d;
        *kind = TP_NCCL;
        sc_status st = sc_transport_nccl_new(P, P, devs, be, NULL, o->timeout_s, tp, err, errlen);
        free(devs);
        if (st == SC_OK || force == TP_NCCL || st == SC_ERR_NOMEM)
            return st;
        snprintf(why, whylen, "NCCL failed to start: %.280s", err);
        err[0] = 0;
    }
    *kind = TP_CUDA_LOCAL;
    return sc_transport_cuda_local_new(P, be, max_tag, o->timeout_s, tp, err, errlen);
}

/* Distinct GPUs among the backends, and the name of GPU 0, into r. */
static void count_gpus(sc_run_result *r, sc_backend *const *be, int n)
{
    r->gpus = 0;
    for (int i = 0; i < n; i++) {
        int g = gpu_of(be[i]), seen = g < 0;
        for (int j = 0; j < i && !seen; j++)
            seen = gpu_of(be[j]) == g;
        r->gpus += !seen;
    }
    if (r->gpus)
        sc_backend_cuda_devices(r->gpu_name, sizeof r->gpu_name);
}

/* Runs the devices as threads; frees md. */
sc_status sc_run_threads(sc_prog *pg, const sc_run_opts *o, sc_model *md, sc_run_result *r,
                             const sc_model *ref, char *err, size_t errlen)
{
    int P = r->P, kind = TP_LOCAL;
    sc_status st = SC_OK;
    sc_transport *tp = NULL;
    devrun *dr = calloc((size_t)P, sizeof *dr);
    pthread_t *th = calloc((size_t)P, sizeof *th);
    int *stage_dev = malloc((size_t)r->S * sizeof(int));
    sc_backend **be = calloc((size_t)P, sizeof *be);
    int *devs = calloc((size_t)P, sizeof(int));
    int started = 0;
    if (!dr || !th || !stage_dev || !be || !devs) {
        snprintf(err, errlen, "out of memory starting %d devices", P);
        st = SC_ERR_NOMEM;
        goto done;
    }
    for (int s = 0; s < r->S; s++)
        stage_dev[s] = sc_prog_stage_device(pg, s);
    /* Backends first: the GPU transports need their streams, and the GPUs'
     * free memory is checked before anything large is allocated. */
    for (int d = 0; d < P; d++) {
        dr[d] = (devrun){.pg = pg, .d = d};
        devs[d] = d;
        if ((st = sc_backend_open(o->backend, d, o->mem_cap, &dr[d].be, err, errlen)) != SC_OK)
            goto done;
        be[d] = dr[d].be;
    }
    count_gpus(r, be, P);
    if ((st = gpu_fits(md, pg, r, be, devs, P, r->gpus == P && P > 1 && has_transfers(pg), err,
                       errlen)) != SC_OK ||
        (st = threads_transport(pg, o, r, be, &tp, &kind, err, errlen)) != SC_OK)
        goto done;
    r->transport = tp_names[kind];
    for (int d = 0; d < P; d++) {
        dr[d].tp = tp;
        if ((st = sc_model_attach(md, d, dr[d].be, stage_dev, &dr[d].wl, err, errlen)) != SC_OK)
            goto done;
        dr[d].out.t0 = r->measured->t0 + r->measured->offset[d];
        dr[d].out.t1 = r->measured->t1 + r->measured->offset[d];
        dr[d].out.timeout_s = o->timeout_s;
    }
    double origin = sc_exec_now();
    for (; started < P; started++) {
        dr[started].origin = origin;
        if (pthread_create(&th[started], NULL, device_thread, &dr[started]) != 0) {
            tp->ops->abort(tp->ctx, started, "cannot start a thread");
            snprintf(err, errlen, "cannot start the thread of d%d", started);
            st = SC_ERR_RUNTIME;
            break;
        }
    }
    for (int d = 0; d < started; d++)
        pthread_join(th[d], NULL);
    if (st)
        goto done;
    /* The cause: a device's own failure first, else the transport's. */
    for (int d = 0; d < P && !st; d++)
        if (dr[d].st && dr[d].st != SC_ERR_RUNTIME) {
            st = dr[d].st;
            snprintf(err, errlen, "%s", dr[d].out.err);
            if (st == SC_ERR_NOMEM)
                oom_detail(md, pg, r, dr[d].be, d, err, errlen);
        }
    for (int d = 0; d < P && !st; d++)
        if (dr[d].st) {
            st = dr[d].st;
            const char *t = tp->ops->errmsg(tp->ctx);
            snprintf(err, errlen, "%s", t && *t ? t : dr[d].out.err);
        }
    for (int d = 0; d < P && !st; d++) {
        r->peak_bytes[d] = dr[d].out.peak_bytes;
        r->host_peak_bytes[d] = dr[d].out.host_peak_bytes;
        r->param_bytes[d] = sc_model_allocated_param_bytes(md, d);
        r->step_time_s = fmax(r->step_time_s, dr[d].out.end);
        if (dr[d].out.end_bytes || dr[d].out.host_end_bytes) {
            snprintf(err, errlen, "d%d ended the step holding %zu bytes of activations and %zu "
                     "on the host (a pass without its W, a record not reloaded)", d,
                     dr[d].out.end_bytes, dr[d].out.host_end_bytes);
            st = SC_ERR_PROGRAM;
        }
    }
    if (!st)
        sc_run_collect(md, ref, r);
done:
    /* The model's parameters go back through the backends: free it first;
     * the transport before the backends whose streams it waits on. */
    sc_model_free(md);
    transport_free(kind, tp);
    for (int d = 0; dr && d < P; d++)
        sc_backend_free(dr[d].be);
    free(dr);
    free(th);
    free(stage_dev);
    free(be);
    free(devs);
    return st;
}

int sc_run_rank_gpu(int local_rank, int ngpu)
{
    return ngpu > 1 ? local_rank % ngpu : 0;
}

int sc_run_same_gpu(const unsigned char *uuids, int P, int *a, int *b)
{
    static const unsigned char none[16];
    for (int i = 0; i < P; i++)
        for (int j = 0; j < i; j++)
            if (memcmp(uuids + 16 * i, none, 16) != 0 &&
                memcmp(uuids + 16 * i, uuids + 16 * j, 16) == 0) {
                *a = j;
                *b = i;
                return 1;
            }
    return 0;
}

/* Every rank's GPU UUID (16 bytes each, rank order), through sc_mpi_max:
 * each rank fills its own row, the others are -inf. */
static sc_status gather_uuids(int P, int rank, const unsigned char *mine, unsigned char *all,
                              double timeout_s, char *err, size_t errlen)
{
    double *v = malloc((size_t)P * 16 * sizeof(double));
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    for (int i = 0; i < 16 * P; i++)
        v[i] = -INFINITY;
    for (int k = 0; k < 16; k++)
        v[16 * rank + k] = mine[k];
    sc_status st = sc_mpi_max(v, 16 * P, "the exchange of GPU identities", timeout_s, err,
                                errlen);
    for (int i = 0; i < 16 * P && !st; i++)
        all[i] = (unsigned char)v[i];
    free(v);
    return st;
}

/* This rank's cuda backend, the GPU memory check and the nccl transport,
 * its unique id broadcast from rank 0. The GPU: local rank modulo the GPUs
 * this rank sees, or the only one it sees (schedulers that give each rank
 * its own GPU through CUDA_VISIBLE_DEVICES); two ranks on one physical GPU
 * (the same UUID) are refused, since NCCL needs one GPU per rank. */
static sc_status mpi_cuda(const sc_prog *pg, const sc_run_opts *o, const sc_model *md,
                          sc_run_result *r, int rank, sc_backend **be, sc_transport **tp,
                          int *kind, char *err, size_t errlen)
{
    int lr, ls;
    sc_status st;
    int ngpu = sc_backend_cuda_devices(NULL, 0);
    if ((st = sc_mpi_local(&lr, &ls, err, errlen)) != SC_OK)
        return st;
    int gpu = sc_run_rank_gpu(lr, ngpu);
    if ((st = sc_backend_open("cuda", gpu, o->mem_cap, be, err, errlen)) != SC_OK)
        return st;
    unsigned char mine[16] = {0}, *all = calloc((size_t)r->P, 16);
    if (!all) {
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    (void)sc_backend_cuda_uuid(gpu, mine);
    int a, b;
    if ((st = gather_uuids(r->P, rank, mine, all, o->timeout_s, err, errlen)) == SC_OK &&
        sc_run_same_gpu(all, r->P, &a, &b)) {
        snprintf(err, errlen, "ranks %d and %d are on the same GPU (mpirun started %d ranks on "
                 "this node, which %s %d GPU%s): NCCL needs one GPU per rank (give each rank "
                 "its own GPU, or run without mpirun to emulate several devices on one GPU)",
                 a, b, ls, ngpu == 1 ? "lets each rank see" : "has", ngpu, ngpu == 1 ? "" : "s");
        st = SC_ERR_ARG;
    }
    free(all);
    if (st)
        return st;
    count_gpus(r, be, 1);
    if ((st = gpu_fits(md, pg, r, be, &rank, 1, r->P > 1, err, errlen)) != SC_OK)
        return st;
    char why[512];
    if (!sc_transport_nccl_usable(why, sizeof why)) {
        snprintf(err, errlen, "under mpirun the cuda backend needs NCCL: %s", why);
        return SC_ERR_ARG;
    }
    unsigned char id[SC_NCCL_ID_BYTES] = {0};
    if ((st = sc_run_check_pair_order(pg, err, errlen)) != SC_OK ||
        (rank == 0 && (st = sc_transport_nccl_id(id, err, errlen)) != SC_OK) ||
        (st = sc_mpi_bcast(id, SC_NCCL_ID_BYTES, 0, o->timeout_s, err, errlen)) != SC_OK)
        return st;
    *kind = TP_NCCL;
    return sc_transport_nccl_new(r->P, 1, &rank, be, id, o->timeout_s, tp, err, errlen);
}

/* Runs this rank's device; frees md. */
sc_status sc_run_mpi(sc_prog *pg, const sc_run_opts *o, sc_model *md, sc_run_result *r,
                         int rank, const sc_model *ref, char *err, size_t errlen)
{
    int P = r->P, kind = TP_MPI;
    sc_status st;
    sc_transport *tp = NULL;
    sc_backend *be = NULL;
    sc_workload wl;
    sc_exec_out out = {0};
    int *stage_dev = malloc((size_t)r->S * sizeof(int));
    double *v = calloc((size_t)(5 * P + 3), sizeof(double));
    if (!stage_dev || !v) {
        snprintf(err, errlen, "out of memory");
        st = SC_ERR_NOMEM;
        goto done;
    }
    for (int s = 0; s < r->S; s++)
        stage_dev[s] = sc_prog_stage_device(pg, s);
    if (strcmp(o->backend, "cuda") == 0)
        st = mpi_cuda(pg, o, md, r, rank, &be, &tp, &kind, err, errlen);
    else if ((st = sc_transport_mpi_new(2 * r->S * sc_prog_stream_microbatches(pg), o->timeout_s, &tp, err, errlen)) ==
             SC_OK)
        st = sc_backend_open(o->backend, rank, o->mem_cap, &be, err, errlen);
    if (st || (st = sc_model_attach(md, rank, be, stage_dev, &wl, err, errlen)) != SC_OK)
        goto done;
    r->transport = tp_names[kind];
    out.t0 = r->measured->t0 + r->measured->offset[rank];
    out.t1 = r->measured->t1 + r->measured->offset[rank];
    out.timeout_s = o->timeout_s;
    if ((st = sc_mpi_barrier(o->timeout_s, err, errlen)) != SC_OK)
        goto done;
    if ((st = sc_exec_device(pg, rank, be, tp, &wl, sc_exec_now(), &out)) != SC_OK) {
        snprintf(err, errlen, "%s", out.err);
        goto done; /* the caller aborts the job */
    }
    if (out.end_bytes || out.host_end_bytes) {
        snprintf(err, errlen, "d%d ended the step holding %zu bytes of activations and %zu on "
                 "the host", rank, out.end_bytes, out.host_end_bytes);
        st = SC_ERR_PROGRAM;
        goto done;
    }
    /* Everything rank 0 reports, combined by element-wise maximum. */
    for (int i = 0; i < 5 * P + 3; i++)
        v[i] = -INFINITY;
    v[rank] = (double)out.peak_bytes;
    v[3 * P + 3 + rank] = (double)out.host_peak_bytes;
    v[4 * P + 3 + rank] = (double)sc_model_allocated_param_bytes(md, rank);
    v[P + rank] = out.end;
    sc_run_collect(md, ref, r);
    size_t N = r->measured->offset[P];
    const char *res = "the allreduce of the results";
    if ((st = sc_run_combine(r, rank, stage_dev[0] == rank, ref != NULL, o->timeout_s, err,
                             errlen)) != SC_OK ||
        (st = sc_mpi_max(v, 5 * P + 3, res, o->timeout_s, err, errlen)) != SC_OK ||
        (st = sc_mpi_max(r->measured->t0, (int)N, res, o->timeout_s, err, errlen)) != SC_OK ||
        (st = sc_mpi_max(r->measured->t1, (int)N, res, o->timeout_s, err, errlen)) != SC_OK)
        goto done;
    for (int d = 0; d < P; d++) {
        r->peak_bytes[d] = (size_t)v[d];
        r->host_peak_bytes[d] = (size_t)v[3 * P + 3 + d];
        r->param_bytes[d] = (size_t)v[4 * P + 3 + d];
        r->step_time_s = fmax(r->step_time_s, v[P + d]);
    }
done:
    if (st == SC_ERR_NOMEM && out.err[0])
        oom_detail(md, pg, r, be, rank, err, errlen);
    sc_model_free(md);
    transport_free(kind, tp);
    sc_backend_free(be);
    free(stage_dev);
    free(v);
    return st;
}
