/*
 * run_ep.c — an expert-parallel program's p x E devices as threads
 * (run_impl.h's sc_run_ep_threads, docs/semantics.md#expert-parallelism).
 *
 * EP rank e of pipeline device d is device d·E + e. The E ranks of the
 * pipeline are E models (model.h's cfg.ep, cfg.ep_rank), each training
 * batch / E of the batch's sequences on its E-th of the routed experts:
 * rank e runs the program's p streams on its own transport (the pipeline
 * of that share), and the E ranks of device d share the transport of their
 * EP group, where the MoE layers' all-to-alls (inside the passes) and the
 * dense gradients' all-reduce (the program's group collective) run, and a
 * second one for the passes an overlapped pair runs on its lane. The
 * step's loss is the sum of the ranks' shares (each a mean over the whole
 * batch's rows); each rank's dense gradients, summed over the group, and
 * its experts' are compared with the single-device reference's. The E
 * models share md's lengths (-D lengths, or a sliced program's records:
 * sc_model_new_ep_rank), so each record has one size on every rank of a
 * group: its batch / E sequences at the record's length, and the room its
 * all-to-alls receive into E times the rank's routed copies of it.
 *
 * On GPUs (--backend cuda) device i is GPU i mod the GPUs visible (one each,
 * or devices emulated on a GPU sharing it), and the transports are the
 * device kind's over those devices' backends: nccl with a GPU each (its
 * all-to-all: ncclSend/ncclRecv of the counts, then of the rows) or
 * cuda-local (through the host; any number of devices a GPU); the model
 * synchronizes its backend before each all-to-all (model_moe_ep.c).
 * Under mpirun each rank is one device (run_ep_mpi.c, --backend cpu).
 */
#include "run_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "transport/sc_mpi.h"

#define SC_EP_TRANSPORT_MAX 256 /* devices in one transport of an ep run */

/* The E models: md (rank 0) and E - 1 more of the same config. */
static sc_status ep_models(sc_model *md, int E, sc_model **mds, char *err, size_t errlen)
{
    mds[0] = md;
    for (int e = 1; e < E; e++) {
        sc_status st = sc_model_new_ep_rank(md, e, &mds[e], err, errlen);
        if (st)
            return st;
    }
    return SC_OK;
}

/* The run's figures: each pipeline device's largest over its ranks, the
 * step's loss the sum of the ranks' shares, the comparison the worst. */
static void ep_collect(sc_model **mds, int E, const sc_devrun *dr, const sc_model *ref,
                       sc_run_result *r)
{
    for (int d = 0; d < r->P; d++)
        for (int e = 0; e < E; e++) {
            const sc_exec_out *x = &dr[d * E + e].out;
            r->peak_bytes[d] = e ? (r->peak_bytes[d] > x->peak_bytes ? r->peak_bytes[d]
                                                                     : x->peak_bytes)
                                 : x->peak_bytes;
            r->host_peak_bytes[d] = x->host_peak_bytes;
            r->step_time_s = fmax(r->step_time_s, x->end);
        }
    for (int d = 0; d < r->P; d++) {
        r->param_bytes[d] = sc_model_allocated_param_bytes(mds[0], d);
        r->optim_bytes[d] = sc_model_allocated_optim_bytes(mds[0], d);
        r->grad_bytes[d] = sc_model_allocated_grad_bytes(mds[0], d);
    }
    sc_run_collect(mds[0], ref, r);
    free(r->ep_a2a);
    if ((r->ep_a2a = malloc(2 * (size_t)r->S * sizeof(double))) != NULL)
        for (int s = 0; s < r->S; s++)
            sc_model_ep_times(mds[0], s, &r->ep_a2a[s], &r->ep_a2a[r->S + s]);
    for (int k = 0; k < r->steps; k++)
        for (int e = 1; e < E; e++)
            r->step_loss[k] += sc_model_step_loss(mds[e], k);
    r->loss = r->step_loss[r->steps - 1];
    for (int e = 1; ref && !r->forward_only && e < E; e++) {
        int bg = 1, bp = 1;
        r->max_grad_rel_err = fmax(r->max_grad_rel_err, sc_model_compare(mds[e], ref, &bg));
        r->max_param_rel_err =
            fmax(r->max_param_rel_err, sc_model_compare_params(mds[e], ref, &bp));
        r->bitwise = r->bitwise && bg && bp;
    }
}

/* Starts the N threads, joins them; the first failure's message. */
static sc_status ep_start(sc_devrun *dr, int N, char *err, size_t errlen)
{
    pthread_t *th = calloc((size_t)N, sizeof *th);
    if (!th) {
        snprintf(err, errlen, "out of memory starting %d devices", N);
        return SC_ERR_NOMEM;
    }
    double origin = sc_exec_now();
    int started = 0;
    sc_status st = SC_OK;
    for (; started < N; started++) {
        dr[started].origin = origin;
        if (pthread_create(&th[started], NULL, sc_run_device_thread, &dr[started]) != 0) {
            dr[started].tp->ops->abort(dr[started].tp->ctx, dr[started].d, "no thread");
            snprintf(err, errlen, "cannot start the thread of device %d", started);
            st = SC_ERR_RUNTIME;
            break;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    for (int pass = 0; pass < 2 && !st; pass++) /* a device's own failure first */
        for (int i = 0; i < N && !st; i++)
            if (dr[i].st && (pass || dr[i].st != SC_ERR_RUNTIME)) {
                st = dr[i].st;
                snprintf(err, errlen, "%s", dr[i].out.err);
            }
    for (int i = 0; i < N && !st; i++)
        if (dr[i].out.end_bytes || dr[i].out.host_end_bytes) {
            snprintf(err, errlen, "device %d ended the step holding %zu bytes of activations",
                     i, dr[i].out.end_bytes);
            st = SC_ERR_PROGRAM;
        }
    return st;
}

/* Device i = d E + e (its backend x->be open): its share's pipeline
 * transport and its EP group's, its model's workload, where its times go. */
static sc_status ep_device(const sc_prog *pg, const sc_run_opts *o, sc_run_result *r, int i,
                           sc_model *md, sc_transport *pipe, sc_transport *const *group,
                           const int *stage_dev, double *times, sc_devrun *x, char *err,
                           size_t errlen)
{
    int E = sc_prog_ep(pg), d = i / E, e = i % E;
    x->pg = pg;
    x->d = d;
    x->tp = pipe;
    sc_status st = sc_model_attach(md, d, x->be, stage_dev, &x->wl, err, errlen);
    if (st)
        return st;
    sc_model_set_ep(&x->wl, group[0], group[1], e);
    size_t n = r->measured->offset[d + 1] - r->measured->offset[d];
    x->out.t0 = e ? times : r->measured->t0 + r->measured->offset[d];
    x->out.t1 = e ? times + n : r->measured->t1 + r->measured->offset[d];
    x->out.timeout_s = o->timeout_s;
    x->out.ep_tp = group[0];
    x->out.ep_lane_tp = group[1];
    x->out.ep_dev = e;
    return SC_OK;
}

/* The GPUs an ep run's N devices use: device i on GPU i mod n (devices
 * emulated on a GPU share it, as without ep), N on the cpu. */
static int ep_gpus_used(const sc_device_kind *k, int N)
{
    int n = k->host_memory || !k->count ? N : k->count(NULL, 0);
    return n < N ? n : N;
}

/* The kind of an ep run's transports: STAGECRAFT_TRANSPORT's when the
 * device kind has several, else the first that can start, whose order the
 * program keeps and, with devices sharing a GPU (shared), that does not
 * need a GPU each (nccl on GPUs), else the last (local, cuda-local). NULL
 * with the reason in err when the one asked for cannot serve. */
static const sc_transport_kind *ep_tkind(const sc_device_kind *k, const sc_prog *pg, int shared,
                                         char *err, size_t errlen)
{
    const sc_transport_kind *const *c = k->threads;
    char why[512];
    int n = 0;
    while (c[n])
        n++;
    const char *want = n > 1 ? getenv("STAGECRAFT_TRANSPORT") : NULL;
    for (int i = 0; want && *want && i <= n; i++) {
        if (i == n)
            snprintf(err, errlen, "run: STAGECRAFT_TRANSPORT=%s is not a transport of "
                     "--backend %s", want, k->name);
        else if (strcmp(want, c[i]->name))
            continue;
        else if (shared && c[i]->gpu_each)
            snprintf(err, errlen, "run: STAGECRAFT_TRANSPORT=%s needs a GPU for each of the "
                     "program's devices, and they share GPUs (use cuda-local)", want);
        else
            return c[i];
        return NULL;
    }
    for (int i = 0; i < n - 1; i++)
        if (!(shared && c[i]->gpu_each) && (!c[i]->usable || c[i]->usable(why, sizeof why)) &&
            (!c[i]->in_order || sc_run_check_pair_order(pg, why, sizeof why) == SC_OK))
            return c[i];
    return c[n - 1];
}

/* Transport j of the run, of kind t: j < E the pipeline of EP rank j
 * (devices d E + j), then each device d's EP group (d E .. d E + E - 1)
 * twice, over those devices' backends. */
static sc_status ep_transport(const sc_transport_kind *t, int P, int E, int j, int max_tag,
                              double timeout_s, const sc_devrun *dr, sc_transport **tp, char *err,
                              size_t errlen)
{
    int n = j < E ? P : E;
    sc_backend *be[SC_EP_TRANSPORT_MAX];
    if (n > SC_EP_TRANSPORT_MAX) {
        snprintf(err, errlen, "run: ep > 1: %d devices in a transport, at most %d", n,
                 SC_EP_TRANSPORT_MAX);
        return SC_ERR_ARG;
    }
    for (int i = 0; i < n; i++)
        be[i] = dr[j < E ? i * E + j : (j - E) / 2 * E + i].be;
    return t->threads_new(n, be, max_tag, timeout_s, tp, err, errlen);
}

sc_status sc_run_ep_threads(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k,
                            sc_model *md, sc_run_result *r, const sc_model *ref, char *err,
                            size_t errlen)
{
    int P = r->P, E = sc_prog_ep(pg), N = P * E, S = r->S;
    int max_tag = 2 * S * sc_prog_stream_microbatches(pg);
    size_t most = 0;
    for (int d = 0; d < P; d++)
        if (r->measured->offset[d + 1] - r->measured->offset[d] > most)
            most = r->measured->offset[d + 1] - r->measured->offset[d];
    sc_model **mds = calloc((size_t)E, sizeof *mds);
    sc_transport **tp = calloc((size_t)(E + 2 * P), sizeof *tp);
    sc_devrun *dr = calloc((size_t)N, sizeof *dr);
    int *stage_dev = malloc((size_t)S * sizeof(int));
    double *times = malloc((size_t)N * (2 * most + 1) * sizeof(double));
    const sc_transport_kind *t = NULL;
    sc_status st = SC_OK;
    if (!mds || !tp || !dr || !stage_dev || !times) {
        snprintf(err, errlen, "out of memory starting %d x %d devices", P, E);
        st = SC_ERR_NOMEM;
        goto done;
    }
    if ((st = ep_models(md, E, mds, err, errlen)) != SC_OK)
        goto done;
    for (int s = 0; s < S; s++)
        stage_dev[s] = sc_prog_stage_device(pg, s);
    for (int i = 0; i < N && !st; i++) /* the backends first: GPU transports need them */
        st = k->open(i, o->mem_cap, &dr[i].be, err, errlen);
    int gpus = ep_gpus_used(k, N);
    if (!st && !(t = ep_tkind(k, pg, gpus < N, err, errlen)))
        st = SC_ERR_ARG;
    for (int j = 0; j < E + 2 * P && !st; j++) /* E pipelines of P, P groups of E, twice */
        st = ep_transport(t, P, E, j, max_tag, o->timeout_s, dr, &tp[j], err, errlen);
    for (int i = 0; i < N && !st; i++)
        st = ep_device(pg, o, r, i, mds[i % E], tp[i % E], tp + E + 2 * (i / E), stage_dev,
                       times + (size_t)i * (2 * most + 1), &dr[i], err, errlen);
    if (!st && !k->host_memory) {
        r->gpus = gpus;
        r->transport = t->name;
        if (k->count)
            k->count(r->gpu_name, sizeof r->gpu_name);
    }
    if (!st)
        st = ep_start(dr, N, err, errlen);
    if (!st)
        ep_collect(mds, E, dr, ref, r);
done:
    for (int e = 0; mds && e < E; e++) /* md among them: the runner frees it */
        sc_model_free(mds[e]);
    if (!mds)
        sc_model_free(md);
    for (int j = 0; tp && j < E + 2 * P; j++)
        if (tp[j])
            t->free(tp[j]);
    for (int i = 0; dr && i < N; i++)
        sc_backend_free(dr[i].be);
    free(mds);
    free(tp);
    free(dr);
    free(stage_dev);
    free(times);
    return st;
}

/* On GPUs: at least one for the p x E devices (several devices share a
 * GPU when there are fewer: cuda-local between them). */
static sc_status ep_gpus(const sc_device_kind *k, const sc_prog *pg, char *err, size_t errlen)
{
    int P = sc_prog_devices(pg), E = sc_prog_ep(pg);
    if (k->host_memory || k->count(NULL, 0) > 0)
        return SC_OK;
    snprintf(err, errlen, "run: ep = %d runs its %d x %d devices on GPUs, and none is visible "
             "(docs/run.md#expert-parallelism)", E, P, E);
    return SC_ERR_ARG;
}

sc_status sc_run_ep_check(const sc_run_opts *o, const sc_device_kind *k, const sc_prog *pg,
                          char *err, size_t errlen)
{
    if (sc_mpi_launched() && strcmp(k->name, "cpu")) {
        snprintf(err, errlen, "run: ep > 1 under mpirun runs on --backend cpu for now (on GPUs "
                 "one process drives a GPU each; docs/semantics.md#expert-parallelism)");
        return SC_ERR_ARG;
    }
    if ((!k->host_memory && !k->count) || o->graph) {
        snprintf(err, errlen, "run: ep > 1 runs its p x E devices as threads, on the cpu or a "
                 "GPU each, for now (%s; docs/semantics.md#expert-parallelism)",
                 o->graph ? "no --graph" : "not this backend");
        return SC_ERR_ARG;
    }
    return ep_gpus(k, pg, err, errlen);
}
