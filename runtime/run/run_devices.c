/*
 * run_devices.c — where the devices of a run execute (run_impl.h): threads
 * of this process or MPI ranks, each with its backend and the transport
 * that follows from it, as the device kind's table says (device/device.h);
 * the GPU memory check before anything is allocated.
 */
#include "run_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/hostlink.h"
#include "device/device.h"
#include "exec/exec.h"
#include "transport/sc_mpi.h"
#include "transport/transport.h"

void *sc_run_device_thread(void *p)
{
    sc_devrun *r = p;
    r->st = sc_exec_device(r->pg, r->d, r->be, r->tp, &r->wl, r->origin, &r->out);
    /* The executor aborts the pipeline's transport; an ep device's EP group's
     * too, so that the group's other ranks stop waiting in an all-to-all now. */
    sc_transport *g[2] = {r->out.ep_tp, r->out.ep_lane_tp};
    for (int i = 0; i < 2 && r->st; i++)
        if (g[i] && g[i]->ops->abort)
            g[i]->ops->abort(g[i]->ctx, r->out.ep_dev, r->out.err);
    return NULL;
}

/* ---- devices on GPUs: memory, transports ---- */

/* Parameters and gradients (sc_model_param_bytes), and AdamW's two
 * moments beside them on the device (runtime/model/optim.c): as much again. */
static double dev_param_bytes(const sc_model *md, const sc_prog *pg, int d)
{
    double b = 0;
    for (int s = 0; s < sc_prog_stages(pg); s++)
        if (sc_prog_stage_device(pg, s) == d)
            b += (double)sc_model_param_bytes(md, s);
    return 2 * (b + (double)sc_model_shard_param_bytes(md));
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

/* Refuses a run whose parameters, gradients, predicted peak activations and
 * the libraries' own memory (extra bytes per device: the kind's and the
 * transport's start_bytes) do not fit in the free memory of the GPUs
 * (devices sharing a GPU add up). be[i] is device devs[i]'s backend; a kind
 * without gpu_memory, and backends without meminfo, pass. */
static sc_status gpu_fits(const sc_device_kind *k, const sc_model *md, const sc_prog *pg,
                          const sc_run_result *r, sc_backend *const *be, const int *devs, int n,
                          double extra, char *err, size_t errlen)
{
    for (int i = 0; k->gpu_memory && i < n; i++) {
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
            snprintf(err, errlen, "out of memory on %s, GPU %d: predicted %.2f GiB (parameters, "
                     "gradients and AdamW moments %.2f GiB, peak activations %.2f GiB, cuBLAS "
                     "and NCCL %.2f GiB), %.2f GiB free of %.2f GiB (make the model smaller: -D "
                     "hidden, layers, vocab, seq, batch)",
                     who, gi, GIB(need), GIB(params), GIB(acts), GIB(need - params - acts),
                     GIB(fi), GIB(ti));
        else
            snprintf(err, errlen, "out of memory on GPU %d, which holds %d devices (the largest "
                     "%s): predicted %.2f GiB (parameters, gradients and AdamW moments "
                     "%.2f GiB, peak activations %.2f GiB, cuBLAS and NCCL %.2f GiB), %.2f GiB "
                     "free of %.2f GiB (make the model smaller, or use more GPUs)",
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
             "%.2f GiB (parameters, gradients and AdamW moments %.2f GiB, peak activations "
             "%.2f GiB)",
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

static void transport_free(const sc_transport_kind *t, sc_transport *tp)
{
    if (t && t->free)
        t->free(tp);
}

/* The GPU of a backend (meminfo), or -1. */
static int gpu_of(sc_backend *be)
{
    int g;
    size_t f, t;
    return be && be->ops->meminfo && be->ops->meminfo(be->ctx, &g, &f, &t) == SC_OK ? g : -1;
}

/* 1 when transport t may start for the P devices of r as threads (the
 * memory it takes then counts in the GPU memory check). */
static int may_start(const sc_transport_kind *t, const sc_prog *pg, const sc_run_result *r)
{
    return (!t->gpu_each || r->gpus == r->P) && (!t->lazy || (r->P > 1 && has_transfers(pg)));
}

/* The transport of P devices of kind k as threads with backends
 * be[0..P-1]: the first of the kind's transports that can start, the last
 * one else, with the reason why the others did not in r->transport_note
 * (one GPU per device, NCCL that does not load, transfers posted in
 * another order between a pair). A lazy transport is not started for a
 * program without transfers (p = 1): nothing to explain. When a preferred
 * one fails to start, the run goes on over the next, saying why.
 * STAGECRAFT_TRANSPORT names the one to use when the kind has several (an
 * impossible one is an error). */
static sc_status threads_transport(const sc_device_kind *k, const sc_prog *pg,
                                   const sc_run_opts *o, sc_run_result *r, sc_backend *const *be,
                                   sc_transport **tp, const sc_transport_kind **used, char *err,
                                   size_t errlen)
{
    int P = r->P, max_tag = 2 * r->S * sc_prog_stream_microbatches(pg), n = 0;
    const sc_transport_kind *const *c = k->threads, *force = NULL;
    while (c[n])
        n++;
    const char *want = n > 1 ? getenv("STAGECRAFT_TRANSPORT") : NULL;
    if (want && *want) {
        for (int i = 0; i < n && !force; i++)
            if (strcmp(want, c[i]->name) == 0)
                force = c[i];
        if (!force) {
            size_t len = (size_t)snprintf(err, errlen, "STAGECRAFT_TRANSPORT must be");
            for (int i = 0; i < n && len < errlen; i++)
                len += (size_t)snprintf(err + len, errlen - len, "%s %s",
                                        i == 0 ? "" : i == n - 1 ? " or" : ",", c[i]->name);
            if (len < errlen)
                snprintf(err + len, errlen - len, " for --backend %s (got '%s')", k->name, want);
            return SC_ERR_ARG;
        }
    }
    char *why = r->transport_note;
    size_t whylen = sizeof r->transport_note;
    why[0] = 0;
    for (int i = 0; i < n - 1; i++) {
        const sc_transport_kind *t = c[i];
        int ok = 0;
        if (force && force != t)
            snprintf(why, whylen, "STAGECRAFT_TRANSPORT=%s", force->name);
        else if (o->graph && !t->graph)
            snprintf(why, whylen, "--graph: %s is not captured (docs/graphs.md)", t->label);
        else if (t->gpu_each && r->gpus != P)
            snprintf(why, whylen, "%d devices on %d GPUs, and %s needs one GPU per device", P,
                     r->gpus, t->label);
        else if (force != t && t->lazy && !has_transfers(pg))
            ; /* nothing to send: nothing to start, nothing to explain */
        else if (t->usable && !t->usable(why, whylen))
            ;
        else
            ok = !t->in_order || sc_run_check_pair_order(pg, why, whylen) == SC_OK;
        if (force == t && !ok) {
            snprintf(err, errlen, "STAGECRAFT_TRANSPORT=%s: %s", t->name, why);
            return SC_ERR_ARG;
        }
        if (!ok)
            continue;
        *used = t;
        sc_status st = t->threads_new(P, be, max_tag, o->timeout_s, tp, err, errlen);
        if (st == SC_OK || force == t || st == SC_ERR_NOMEM)
            return st;
        snprintf(why, whylen, "%s failed to start: %.280s", t->label, err);
        err[0] = 0;
    }
    *used = c[n - 1];
    if (o->graph && !c[n - 1]->graph) { /* (a backend that captures has one that does) */
        snprintf(err, errlen, "--graph: the %s transport is not captured", c[n - 1]->name);
        return SC_ERR_ARG;
    }
    return c[n - 1]->threads_new(P, be, max_tag, o->timeout_s, tp, err, errlen);
}

/* Distinct GPUs among the backends, and the name of GPU 0 (the kind's
 * count), into r. */
static void count_gpus(const sc_device_kind *k, sc_run_result *r, sc_backend *const *be, int n)
{
    r->gpus = 0;
    for (int i = 0; i < n; i++) {
        int g = gpu_of(be[i]), seen = g < 0;
        for (int j = 0; j < i && !seen; j++)
            seen = gpu_of(be[j]) == g;
        r->gpus += !seen;
    }
    if (r->gpus && k->count)
        k->count(r->gpu_name, sizeof r->gpu_name);
}

/* Runs the devices as threads; frees md. */
sc_status sc_run_threads(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k,
                         sc_model *md, sc_run_result *r, const sc_model *ref, char *err,
                         size_t errlen)
{
    int P = r->P;
    const sc_transport_kind *used = NULL;
    sc_status st = SC_OK;
    sc_transport *tp = NULL;
    sc_devrun *dr = calloc((size_t)P, sizeof *dr);
    pthread_t *th = calloc((size_t)P, sizeof *th);
    int *stage_dev = malloc((size_t)r->S * sizeof(int));
    sc_backend **be = calloc((size_t)P, sizeof *be);
    int *devs = calloc((size_t)P, sizeof(int));
    sc_hostlinks *links = NULL; /* offload's copy engines (hostlink.h) */
    sc_exec_graph *gr = NULL;   /* --graph */
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
        dr[d] = (sc_devrun){.pg = pg, .d = d};
        devs[d] = d;
        if ((st = k->open(d, o->mem_cap, &dr[d].be, err, errlen)) != SC_OK)
            goto done;
        be[d] = dr[d].be;
    }
    count_gpus(k, r, be, P);
    if (o->graph && (st = sc_exec_graph_new(P, be, &gr, err, errlen)) != SC_OK)
        goto done;
    /* The memory of the libraries: the kind's, and the largest a
     * transport that may start takes. */
    double extra = 0;
    for (int i = 0; k->threads[i]; i++)
        if (may_start(k->threads[i], pg, r))
            extra = fmax(extra, k->threads[i]->start_bytes);
    if ((st = gpu_fits(k, md, pg, r, be, devs, P, k->start_bytes + extra, err, errlen)) !=
            SC_OK ||
        (st = threads_transport(k, pg, o, r, be, &tp, &used, err, errlen)) != SC_OK ||
        (st = sc_hostlinks_open(pg, be, 0, P, &links, err, errlen)) != SC_OK)
        goto done;
    r->transport = used->name;
    for (int d = 0; d < P; d++) {
        dr[d].tp = tp;
        dr[d].out.graph = gr;
        if ((st = sc_model_attach(md, d, dr[d].be, stage_dev, &dr[d].wl, err, errlen)) != SC_OK)
            goto done;
        dr[d].out.t0 = r->measured->t0 + r->measured->offset[d];
        dr[d].out.t1 = r->measured->t1 + r->measured->offset[d];
        dr[d].out.cpu = r->pass_cpu_s ? r->pass_cpu_s + r->measured->offset[d] : NULL;
        dr[d].out.timeout_s = o->timeout_s;
    }
    double origin = sc_exec_now();
    for (; started < P; started++) {
        dr[started].origin = origin;
        if (pthread_create(&th[started], NULL, sc_run_device_thread, &dr[started]) != 0) {
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
        r->optim_bytes[d] = sc_model_allocated_optim_bytes(md, d);
        r->grad_bytes[d] = sc_model_allocated_grad_bytes(md, d);
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
    if (!st && sc_exec_graph_captured(gr))
        r->graph_replays = sc_prog_steps(pg) - 1;
done:
    sc_exec_graph_free(gr); /* the graph, before the backends it runs on */
    /* The model's parameters go back through the backends: free it first;
     * the transport before the backends whose streams it waits on. */
    sc_model_free(md);
    transport_free(used, tp);
    sc_hostlinks_free(links); /* no device runs: every copy was waited for */
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

/* Refuses two ranks on one physical device (the same UUID: the kind's
 * uuid of device dev, exchanged between the ranks), for a transport that
 * needs one GPU each. ls: ranks on this node, ngpu: the devices it sees. */
static sc_status one_gpu_each(const sc_device_kind *k, const sc_transport_kind *t, int P,
                              int rank, int dev, int ls, int ngpu, double timeout_s, char *err,
                              size_t errlen)
{
    unsigned char mine[16] = {0}, *all = calloc((size_t)P, 16);
    if (!all) {
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    (void)k->uuid(dev, mine);
    int a, b;
    sc_status st = gather_uuids(P, rank, mine, all, timeout_s, err, errlen);
    if (st == SC_OK && sc_run_same_gpu(all, P, &a, &b)) {
        snprintf(err, errlen, "ranks %d and %d are on the same GPU (mpirun started %d ranks on "
                 "this node, which %s %d GPU%s): %s needs one GPU per rank (give each rank "
                 "its own GPU, or run without mpirun to emulate several devices on one GPU)",
                 a, b, ls, ngpu == 1 ? "lets each rank see" : "has", ngpu, ngpu == 1 ? "" : "s",
                 t->label);
        st = SC_ERR_ARG;
    }
    free(all);
    return st;
}

/* This rank's backend of kind k, the GPU memory check and the kind's
 * transport between ranks, its id (if it has one) broadcast from rank 0.
 * A kind that counts its devices (GPUs) gives the rank the one of its local
 * rank modulo those it sees, or the only one it sees (schedulers that give
 * each rank its own GPU through CUDA_VISIBLE_DEVICES); else device `rank`.
 * A transport that needs one GPU each refuses two ranks on one physical
 * GPU (the same UUID). */
static sc_status rank_device(const sc_device_kind *k, const sc_prog *pg, const sc_run_opts *o,
                             const sc_model *md, sc_run_result *r, int rank, sc_backend **be,
                             sc_transport **tp, const sc_transport_kind **used, char *err,
                             size_t errlen)
{
    const sc_transport_kind *t = k->ranks;
    int lr = 0, ls = 1, ngpu = 0, dev = rank;
    sc_status st;
    if (k->count) {
        ngpu = k->count(NULL, 0);
        if ((st = sc_mpi_local(&lr, &ls, err, errlen)) != SC_OK)
            return st;
        dev = sc_run_rank_gpu(lr, ngpu);
    }
    if ((st = k->open(dev, o->mem_cap, be, err, errlen)) != SC_OK)
        return st;
    if (t->gpu_each && k->uuid &&
        (st = one_gpu_each(k, t, r->P, rank, dev, ls, ngpu, o->timeout_s, err, errlen)) != SC_OK)
        return st;
    count_gpus(k, r, be, 1);
    if ((st = gpu_fits(k, md, pg, r, be, &rank, 1,
                       k->start_bytes + (r->P > 1 ? t->start_bytes : 0), err, errlen)) != SC_OK)
        return st;
    char why[512];
    if (t->usable && !t->usable(why, sizeof why)) {
        snprintf(err, errlen, "under mpirun the %s backend needs %s: %s", k->name, t->label, why);
        return SC_ERR_ARG;
    }
    unsigned char id[SC_TRANSPORT_ID_MAX] = {0};
    if ((t->in_order && (st = sc_run_check_pair_order(pg, err, errlen)) != SC_OK) ||
        (t->id_bytes && rank == 0 && (st = t->id_new(id, err, errlen)) != SC_OK) ||
        (t->id_bytes &&
         (st = sc_mpi_bcast(id, (int)t->id_bytes, 0, o->timeout_s, err, errlen)) != SC_OK))
        return st;
    *used = t;
    return t->rank_new(r->P, rank, *be, id, 2 * r->S * sc_prog_stream_microbatches(pg),
                       o->timeout_s, tp, err, errlen);
}

/* Runs this rank's device; frees md. */
sc_status sc_run_mpi(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k, sc_model *md,
                     sc_run_result *r, int rank, const sc_model *ref, char *err, size_t errlen)
{
    int P = r->P;
    const sc_transport_kind *used = NULL;
    sc_status st;
    sc_transport *tp = NULL;
    sc_backend *be = NULL;
    sc_workload wl;
    sc_exec_out out = {0};
    sc_hostlinks *links = NULL; /* this rank's own link: ranks share none */
    int *stage_dev = malloc((size_t)r->S * sizeof(int));
    double *v = calloc((size_t)(7 * P + 3), sizeof(double));
    if (o->graph) { /* docs/graphs.md */
        snprintf(err, errlen, "--graph: the devices capture one graph together, as threads of "
                 "one process; not under mpirun");
        st = SC_ERR_ARG;
        goto done;
    }
    if (!stage_dev || !v) {
        snprintf(err, errlen, "out of memory");
        st = SC_ERR_NOMEM;
        goto done;
    }
    for (int s = 0; s < r->S; s++)
        stage_dev[s] = sc_prog_stage_device(pg, s);
    if ((st = rank_device(k, pg, o, md, r, rank, &be, &tp, &used, err, errlen)) != SC_OK ||
        (st = sc_model_attach(md, rank, be, stage_dev, &wl, err, errlen)) != SC_OK ||
        (st = sc_hostlinks_open(pg, &be, rank, 1, &links, err, errlen)) != SC_OK)
        goto done;
    r->transport = used->name;
    out.t0 = r->measured->t0 + r->measured->offset[rank];
    out.t1 = r->measured->t1 + r->measured->offset[rank];
    out.cpu = r->pass_cpu_s ? r->pass_cpu_s + r->measured->offset[rank] : NULL;
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
    for (int i = 0; i < 7 * P + 3; i++)
        v[i] = -INFINITY;
    v[rank] = (double)out.peak_bytes;
    v[3 * P + 3 + rank] = (double)out.host_peak_bytes;
    v[4 * P + 3 + rank] = (double)sc_model_allocated_param_bytes(md, rank);
    v[5 * P + 3 + rank] = (double)sc_model_allocated_optim_bytes(md, rank);
    v[6 * P + 3 + rank] = (double)sc_model_allocated_grad_bytes(md, rank);
    v[P + rank] = out.end;
    sc_run_collect(md, ref, r);
    size_t N = r->measured->offset[P];
    const char *res = "the allreduce of the results";
    if ((st = sc_run_combine(r, rank, 0, 1, stage_dev[0] == rank, ref != NULL, o->timeout_s,
                             err, errlen)) != SC_OK ||
        (st = sc_mpi_max(v, 7 * P + 3, res, o->timeout_s, err, errlen)) != SC_OK ||
        (st = sc_mpi_max(r->measured->t0, (int)N, res, o->timeout_s, err, errlen)) != SC_OK ||
        (st = sc_mpi_max(r->measured->t1, (int)N, res, o->timeout_s, err, errlen)) != SC_OK ||
        (r->pass_cpu_s &&
         (st = sc_mpi_max(r->pass_cpu_s, (int)N, res, o->timeout_s, err, errlen)) != SC_OK))
        goto done;
    for (int d = 0; d < P; d++) {
        r->peak_bytes[d] = (size_t)v[d];
        r->host_peak_bytes[d] = (size_t)v[3 * P + 3 + d];
        r->param_bytes[d] = (size_t)v[4 * P + 3 + d];
        r->optim_bytes[d] = (size_t)v[5 * P + 3 + d];
        r->grad_bytes[d] = (size_t)v[6 * P + 3 + d];
        r->step_time_s = fmax(r->step_time_s, v[P + d]);
    }
done:
    if (st == SC_ERR_NOMEM && out.err[0])
        oom_detail(md, pg, r, be, rank, err, errlen);
    sc_model_free(md);
    transport_free(used, tp);
    sc_hostlinks_free(links);
    sc_backend_free(be);
    free(stage_dev);
    free(v);
    return st;
}
