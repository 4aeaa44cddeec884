/*
 * run.c — one training step through a program's streams (run.h): memory
 * model, devices as threads or MPI ranks, the reference check.
 */
#include "run.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "exec.h"
#include "lower/offload.h"
#include "transport/sc_mpi.h"
#include "transport/transport.h"

sc_run_opts sc_run_defaults(int stages)
{
    sc_run_opts o = {
        .backend = "cpu",
        .model = {.hidden = 64, .layers = 2L * stages, .vocab = 128, .seq = 16, .batch = 2,
                  .seed = 1, .lr = 0.01},
        .timeout_s = 300,
    };
    const char *t = getenv("STAGECRAFT_TIMEOUT");
    if (t && atof(t) > 0)
        o.timeout_s = atof(t);
    return o;
}

void sc_run_result_free(sc_run_result *r)
{
    if (!r)
        return;
    free(r->peak_bytes);
    free(r->predicted_bytes);
    free(r->host_peak_bytes);
    free(r->predicted_host_bytes);
    sc_sim_free(r->predicted);
    sc_sim_free(r->measured);
    free(r);
}

void sc_run_finish(int code)
{
    sc_mpi_finish(code);
}

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

/* Sets the program's memory model from the model (run.h) and simulates. */
static sc_status predict(sc_prog *pg, const sc_model *md, sc_run_result *r, char *err,
                         size_t errlen)
{
    int P = r->P, S = r->S;
    double total = 0;
    for (int s = 0; s < S; s++)
        total += (double)sc_model_record_bytes(md, s);
    r->unit_bytes = total / P;
    sc_status st = sc_prog_set_w_keep(pg, 1.0); /* the model's B frees nothing (model.h) */
    for (int s = 0; s < S && !st; s++)
        st = sc_prog_set_mem(pg, s, (double)sc_model_record_bytes(md, s) / r->unit_bytes);
    /* Offload moves whole tensors: the plan rounds its fractions to them. */
    for (int s = 0; s < S && !st; s++) {
        int n = sc_model_record_parts(md, s, NULL, 0);
        size_t *b = malloc((size_t)n * sizeof(size_t));
        double *x = malloc((size_t)n * sizeof(double));
        if (!b || !x) {
            free(b);
            free(x);
            snprintf(err, errlen, "out of memory");
            return SC_ERR_NOMEM;
        }
        sc_model_record_parts(md, s, b, n);
        for (int i = 0; i < n; i++)
            x[i] = (double)b[i];
        st = sc_prog_set_offload_parts(pg, s, n, x);
        free(b);
        free(x);
    }
    if (!st)
        st = sc_simulate(pg, &r->predicted);
    if (st) {
        snprintf(err, errlen, "%s", sc_errmsg(pg));
        return st;
    }
    for (int d = 0; d < P; d++) {
        r->predicted_bytes[d] = (size_t)llround(r->predicted->peak_mem[d] * r->unit_bytes);
        if (r->predicted->host_peak)
            r->predicted_host_bytes[d] =
                (size_t)llround(r->predicted->host_peak[d] * r->unit_bytes);
    }
    return SC_OK;
}

/* Refuses a run that cannot fit in this machine's memory before trying
 * (on_host: the devices' memory is host memory, the cpu backend). */
static sc_status fits(const sc_model *md, const sc_run_result *r, const sc_prog *pg, int local,
                      int check, int on_host, char *err, size_t errlen)
{
    double need = 0, all = 0, biggest = 0;
    for (int s = 0; s < r->S; s++) {
        double pb = (double)sc_model_param_bytes(md, s);
        all += pb;
        if (local < 0 || sc_prog_stage_device(pg, s) == local)
            need += pb;
        biggest += (double)sc_model_record_bytes(md, s);
    }
    for (int d = 0; d < r->P; d++)
        if (local < 0 || d == local)
            need += (double)r->predicted_bytes[d] +
                    4.0 * r->m * (double)sc_model_boundary_bytes(md);
    if (!on_host)
        need = 0; /* on the GPUs: gpu_fits */
    if (check)
        need += all + biggest;
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (phys > 0 && need > phys) {
        snprintf(err, errlen, "out of memory: this run needs about %.0f MiB, the machine has "
                 "%.0f MiB (make the model smaller: -D hidden, layers, vocab, seq, batch)",
                 need / 1048576, phys / 1048576);
        return SC_ERR_NOMEM;
    }
    return SC_OK;
}

static sc_status alloc_result(sc_prog *pg, sc_run_result **out)
{
    sc_run_result *r = calloc(1, sizeof *r);
    *out = r;
    if (!r)
        return SC_ERR_NOMEM;
    r->P = sc_prog_devices(pg);
    r->S = sc_prog_stages(pg);
    r->m = sc_prog_microbatches(pg);
    r->loss = r->reference_loss = r->max_grad_rel_err = NAN;
    r->peak_bytes = calloc((size_t)r->P, sizeof(size_t));
    r->predicted_bytes = calloc((size_t)r->P, sizeof(size_t));
    r->host_peak_bytes = calloc((size_t)r->P, sizeof(size_t));
    r->predicted_host_bytes = calloc((size_t)r->P, sizeof(size_t));
    return r->peak_bytes && r->predicted_bytes && r->host_peak_bytes && r->predicted_host_bytes
               ? SC_OK
               : SC_ERR_NOMEM;
}

/* An sc_sim of the predicted one's shape for the measured times. */
static sc_status alloc_measured(sc_run_result *r)
{
    int P = r->P;
    size_t N = r->predicted->offset[P];
    sc_sim *m = calloc(1, sizeof *m);
    r->measured = m;
    if (!m)
        return SC_ERR_NOMEM;
    m->P = P;
    m->busy = calloc((size_t)P, sizeof(double));
    m->start = calloc((size_t)P, sizeof(double));
    m->end = calloc((size_t)P, sizeof(double));
    m->peak_mem = calloc((size_t)P, sizeof(double));
    m->offset = malloc(((size_t)P + 1) * sizeof(size_t));
    m->t0 = malloc((N + 1) * sizeof(double));
    m->t1 = malloc((N + 1) * sizeof(double));
    if (!m->busy || !m->start || !m->end || !m->peak_mem || !m->offset || !m->t0 || !m->t1)
        return SC_ERR_NOMEM;
    memcpy(m->offset, r->predicted->offset, ((size_t)P + 1) * sizeof(size_t));
    for (size_t i = 0; i < N; i++)
        m->t0[i] = m->t1[i] = -INFINITY;
    return SC_OK;
}

/* Busy time, start and end of each device from the measured times. */
static void summarize(sc_prog *pg, sc_run_result *r)
{
    sc_sim *m = r->measured;
    for (int d = 0; d < r->P; d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        double b = 0, first = INFINITY, last = 0;
        for (size_t k = 0; k < n; k++) {
            size_t g = m->offset[d] + k;
            if (!sc_op_is_compute(in[k].op))
                continue;
            b += m->t1[g] - m->t0[g];
            first = fmin(first, m->t0[g]);
            last = fmax(last, m->t1[g]);
        }
        m->busy[d] = b;
        m->start[d] = isfinite(first) ? first : 0;
        m->end[d] = last;
        m->peak_mem[d] = (double)r->peak_bytes[d] / r->unit_bytes;
        double span = last - m->start[d];
        if (span > m->makespan)
            m->makespan = span;
    }
    double busy = 0;
    for (int d = 0; d < r->P; d++)
        busy = fmax(busy, m->busy[d]);
    m->bubble_rate = m->makespan > 0 ? 1 - busy / m->makespan : 0;
}


/* ---- devices on GPUs: memory, transports ---- */

static double dev_param_bytes(const sc_model *md, const sc_prog *pg, int d)
{
    double b = 0;
    for (int s = 0; s < sc_prog_stages(pg); s++)
        if (sc_prog_stage_device(pg, s) == d)
            b += (double)sc_model_param_bytes(md, s);
    return b;
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

#define GIB(x) ((double)(x) / (1024.0 * 1024.0 * 1024.0))

/* Refuses a run whose parameters, gradients and predicted peak activations
 * do not fit in the free memory of the GPUs (devices sharing a GPU add up).
 * be[i] is device devs[i]'s backend; backends without meminfo pass. */
static sc_status gpu_fits(const sc_model *md, const sc_prog *pg, const sc_run_result *r,
                          sc_backend *const *be, const int *devs, int n, char *err,
                          size_t errlen)
{
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
            need += p + a;
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
                     "and gradients %.2f GiB, peak activations %.2f GiB), %.2f GiB free of "
                     "%.2f GiB (make the model smaller: -D hidden, layers, vocab, seq, batch)",
                     who, gi, GIB(need), GIB(params), GIB(acts), GIB(fi), GIB(ti));
        else
            snprintf(err, errlen, "out of memory on GPU %d, which holds %d devices (the largest "
                     "%s): predicted %.2f GiB (parameters and gradients %.2f GiB, peak "
                     "activations %.2f GiB), %.2f GiB free of %.2f GiB (make the model "
                     "smaller, or use more GPUs)",
                     gi, on, who, GIB(need), GIB(params), GIB(acts), GIB(fi), GIB(ti));
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
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
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
            if (in[k].op == SC_OP_SEND)
                sendpos[((size_t)in[k].dir * (size_t)S + (size_t)in[k].stage) * (size_t)m +
                        (size_t)in[k].mb] = count[in[k].peer]++;
    }
    /* ...equals that of its RECV among the receiver's receives from it. */
    for (int b = 0; b < P && !st; b++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, b, &n);
        memset(count, 0, (size_t)P * sizeof(int));
        for (size_t k = 0; k < n; k++) {
            if (in[k].op != SC_OP_RECV)
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

/* The transport of P devices as threads with backends be[0..P-1]. */
static sc_status threads_transport(const sc_prog *pg, const sc_run_opts *o, sc_run_result *r,
                                   sc_backend *const *be, sc_transport **tp, int *kind,
                                   char *err, size_t errlen)
{
    int P = r->P, max_tag = 2 * r->S * r->m;
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
    char why[384] = "";
    int nccl = force != TP_CUDA_LOCAL && r->gpus == P;
    if (!sc_transport_nccl_available()) {
        nccl = 0;
        snprintf(why, sizeof why, "this stagecraft was built without NCCL");
    } else if (r->gpus != P) {
        snprintf(why, sizeof why, "%d devices on %d GPUs, and NCCL needs one GPU per device", P,
                 r->gpus);
    } else if (nccl && sc_run_check_pair_order(pg, why, sizeof why) != SC_OK) {
        nccl = 0;
    }
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
        return st;
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
static sc_status run_threads(sc_prog *pg, const sc_run_opts *o, sc_model *md, sc_run_result *r,
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
    if ((st = gpu_fits(md, pg, r, be, devs, P, err, errlen)) != SC_OK ||
        (st = threads_transport(pg, o, r, be, &tp, &kind, err, errlen)) != SC_OK)
        goto done;
    r->transport = tp_names[kind];
    for (int d = 0; d < P; d++) {
        dr[d].tp = tp;
        if ((st = sc_model_attach(md, d, dr[d].be, stage_dev, &dr[d].wl, err, errlen)) != SC_OK)
            goto done;
        dr[d].out.t0 = r->measured->t0 + r->measured->offset[d];
        dr[d].out.t1 = r->measured->t1 + r->measured->offset[d];
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
        r->step_time_s = fmax(r->step_time_s, dr[d].out.end);
        if (dr[d].out.end_bytes || dr[d].out.host_end_bytes) {
            snprintf(err, errlen, "d%d ended the step holding %zu bytes of activations and %zu "
                     "on the host (a pass without its W, a record not reloaded)", d,
                     dr[d].out.end_bytes, dr[d].out.host_end_bytes);
            st = SC_ERR_PROGRAM;
        }
    }
    if (!st) {
        r->loss = sc_model_loss(md);
        if (ref)
            r->max_grad_rel_err = sc_model_compare(md, ref, &r->bitwise);
    }
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

/* This rank's cuda backend on GPU (local rank), the GPU memory check and
 * the nccl transport, its unique id broadcast from rank 0. */
static sc_status mpi_cuda(const sc_prog *pg, const sc_run_opts *o, const sc_model *md,
                          sc_run_result *r, int rank, sc_backend **be, sc_transport **tp,
                          int *kind, char *err, size_t errlen)
{
    int lr, ls;
    sc_status st;
    int ngpu = sc_backend_cuda_devices(NULL, 0);
    if ((st = sc_mpi_local(&lr, &ls, err, errlen)) != SC_OK)
        return st;
    if (ngpu > 0 && ls > ngpu) {
        snprintf(err, errlen, "mpirun started %d ranks on this node, which has %d GPUs: NCCL "
                 "needs one GPU per rank (run without mpirun to emulate several devices on one "
                 "GPU)", ls, ngpu);
        return SC_ERR_ARG;
    }
    if ((st = sc_backend_open("cuda", lr, o->mem_cap, be, err, errlen)) != SC_OK)
        return st;
    count_gpus(r, be, 1);
    if ((st = gpu_fits(md, pg, r, be, &rank, 1, err, errlen)) != SC_OK)
        return st;
    if (!sc_transport_nccl_available()) {
        snprintf(err, errlen, "under mpirun the cuda backend needs NCCL, and this stagecraft "
                 "was built without it");
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
static sc_status run_mpi(sc_prog *pg, const sc_run_opts *o, sc_model *md, sc_run_result *r,
                         int rank, const sc_model *ref, char *err, size_t errlen)
{
    int P = r->P, kind = TP_MPI;
    sc_status st;
    sc_transport *tp = NULL;
    sc_backend *be = NULL;
    sc_workload wl;
    sc_exec_out out = {0};
    int *stage_dev = malloc((size_t)r->S * sizeof(int));
    double *v = calloc((size_t)(4 * P + 3), sizeof(double));
    if (!stage_dev || !v) {
        snprintf(err, errlen, "out of memory");
        st = SC_ERR_NOMEM;
        goto done;
    }
    for (int s = 0; s < r->S; s++)
        stage_dev[s] = sc_prog_stage_device(pg, s);
    if (strcmp(o->backend, "cuda") == 0)
        st = mpi_cuda(pg, o, md, r, rank, &be, &tp, &kind, err, errlen);
    else if ((st = sc_transport_mpi_new(2 * r->S * r->m, o->timeout_s, &tp, err, errlen)) ==
             SC_OK)
        st = sc_backend_open(o->backend, rank, o->mem_cap, &be, err, errlen);
    if (st || (st = sc_model_attach(md, rank, be, stage_dev, &wl, err, errlen)) != SC_OK)
        goto done;
    r->transport = tp_names[kind];
    out.t0 = r->measured->t0 + r->measured->offset[rank];
    out.t1 = r->measured->t1 + r->measured->offset[rank];
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
    for (int i = 0; i < 4 * P + 3; i++)
        v[i] = -INFINITY;
    v[rank] = (double)out.peak_bytes;
    v[3 * P + 3 + rank] = (double)out.host_peak_bytes;
    v[P + rank] = out.end;
    double loss = sc_model_loss(md);
    if (!isnan(loss))
        v[2 * P] = loss;
    if (ref) {
        int bw = 1;
        v[2 * P + 1] = sc_model_compare(md, ref, &bw);
        v[2 * P + 2] = bw ? 0 : 1;
    }
    size_t N = r->measured->offset[P];
    if ((st = sc_mpi_max(v, 4 * P + 3, o->timeout_s, err, errlen)) != SC_OK ||
        (st = sc_mpi_max(r->measured->t0, (int)N, o->timeout_s, err, errlen)) != SC_OK ||
        (st = sc_mpi_max(r->measured->t1, (int)N, o->timeout_s, err, errlen)) != SC_OK)
        goto done;
    for (int d = 0; d < P; d++) {
        r->peak_bytes[d] = (size_t)v[d];
        r->host_peak_bytes[d] = (size_t)v[3 * P + 3 + d];
        r->step_time_s = fmax(r->step_time_s, v[P + d]);
    }
    r->loss = v[2 * P];
    if (ref) {
        r->max_grad_rel_err = v[2 * P + 1];
        r->bitwise = v[2 * P + 2] == 0;
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

/* Every rank evaluated the recipe itself: they must have built the same
 * streams (a recipe that depends on timing, like a time-limited search,
 * could differ, and different streams could hang). FNV-1a of the streams,
 * compared through a max of (h, -h) in two exact 32-bit halves. */
static sc_status same_program(const sc_prog *pg, double timeout_s, char *err, size_t errlen)
{
    uint64_t h = 1469598103934665603ULL;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        const unsigned char *b = (const unsigned char *)in;
        for (size_t i = 0; i < n * sizeof *in; i++)
            h = (h ^ b[i]) * 1099511628211ULL;
        h = (h ^ (uint64_t)n) * 1099511628211ULL;
    }
    double hi = (double)(h >> 32), lo = (double)(h & 0xffffffffu);
    double v[4] = {hi, lo, -hi, -lo};
    sc_status st = sc_mpi_max(v, 4, timeout_s, err, errlen);
    if (st)
        return st;
    if (v[0] != hi || v[1] != lo || -v[2] != hi || -v[3] != lo) {
        snprintf(err, errlen, "the ranks built different programs from the recipe (one that "
                 "depends on time, like a search under a time limit: give --time-limit 0)");
        return SC_ERR_ARG;
    }
    return SC_OK;
}

sc_status sc_run(sc_prog *pg, const sc_run_opts *o, sc_run_result **out, char *err,
                 size_t errlen)
{
    sc_run_result *r;
    sc_model *md = NULL, *ref = NULL;
    sc_status st = alloc_result(pg, &r);
    *out = NULL;
    err[0] = 0;
    if (st) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* An unknown or unavailable backend is refused before anything else
     * (cuda: counting the GPUs, without starting one). */
    r->tolerance = strcmp(o->backend, "cuda") == 0 ? 1e-4 : 1e-5;
    r->transport = "local";
    if (strcmp(o->backend, "cuda") != 0 || sc_backend_cuda_devices(NULL, 0) < 1) {
        sc_backend *probe;
        if ((st = sc_backend_open(o->backend, 0, 0, &probe, err, errlen)) != SC_OK)
            goto fail;
        sc_backend_free(probe);
    }
    if ((st = sc_model_new(&o->model, r->S, r->m, &md, err, errlen)) != SC_OK ||
        (st = predict(pg, md, r, err, errlen)) != SC_OK)
        goto fail;
    int rank = 0, size = 1;
    if (sc_mpi_launched()) {
        if ((st = sc_mpi_init(&rank, &size, err, errlen)) != SC_OK)
            goto fail;
        r->mpi = 1;
        r->rank = rank;
        if (size != r->P) {
            snprintf(err, errlen, "mpirun started %d ranks for a program of %d devices (use "
                     "mpirun -np %d)", size, r->P, r->P);
            st = SC_ERR_ARG;
            goto fail;
        }
    }
    if (r->mpi && (st = same_program(pg, o->timeout_s, err, errlen)) != SC_OK)
        goto fail;
    if ((st = fits(md, r, pg, r->mpi ? rank : -1, o->check, strcmp(o->backend, "cpu") == 0, err,
                   errlen)) != SC_OK)
        goto fail;
    if ((st = alloc_measured(r)) != SC_OK) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (o->check &&
        (st = sc_model_reference(&o->model, r->m, o->mem_cap, &ref, err, errlen)) != SC_OK)
        goto fail;
    sc_model *run_md = md;
    md = NULL; /* freed by the runner */
    st = r->mpi ? run_mpi(pg, o, run_md, r, rank, ref, err, errlen)
                : run_threads(pg, o, run_md, r, ref, err, errlen);
    if (st)
        goto fail;
    if (ref)
        r->reference_loss = sc_model_loss(ref);
    if (ref && r->loss != r->reference_loss)
        r->bitwise = 0;
    summarize(pg, r);
    sc_model_free(ref);
    *out = r;
    return SC_OK;
fail:
    sc_model_free(md);
    sc_model_free(ref);
    sc_run_result_free(r);
    return st;
}
