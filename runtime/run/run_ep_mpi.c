/*
 * run_ep_mpi.c — an expert-parallel program's p x E devices as MPI ranks
 * (run_impl.h's sc_run_ep_mpi, docs/semantics.md#expert-parallelism).
 *
 * World rank d·E + e is EP rank e of pipeline device d, as device d·E + e
 * of the threads run (run_ep.c): it runs d's stream with model rank e.
 * Three communicators split from the world, each an mpi transport
 * (sc_transport_mpi_split_new): the pipeline of share e (ranks e, E + e,
 * ...; device d is its rank d), and twice the EP group of device d (ranks
 * dE .. dE + E - 1; rank e is its member e): the MoE layers' all-to-alls
 * and the dense gradients' all-reduce on the first, the passes an
 * overlapped pair runs on its lane on the second, which a second thread of
 * the rank posts: run.c starts MPI with MPI_THREAD_MULTIPLE for ep
 * (sc_mpi_init_threads). An MPI without it gets no lane transport, and a
 * pair's halves run in turn (exec_pair.c's lane_open), which changes no
 * bit. What rank 0 reports is
 * gathered as sc_run_mpi gathers it (element-wise maximum over the ranks):
 * the step's loss the shares' sum in share order, each device's peak the
 * largest over its ranks, its parameter bytes and all-to-all times share
 * 0's, so that the result is the threads run's, bit for bit.
 */
#include "run_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "transport/sc_mpi.h"
#include "transport/transport.h"

/* This rank's transports: its share's pipeline, its device's EP group,
 * and with threads the group's lane (every rank creates them in this
 * order; MPI gives every rank the same thread level). */
static sc_status ep_transports(const sc_prog *pg, double timeout_s, int d, int e,
                               sc_transport **tp, char *err, size_t errlen)
{
    int max_tag = 2 * sc_prog_stages(pg) * sc_prog_stream_microbatches(pg);
    sc_status st = sc_transport_mpi_split_new(e, d, max_tag, timeout_s, &tp[0], err, errlen);
    for (int j = 1; j < (sc_mpi_threads() ? 3 : 2) && !st; j++)
        st = sc_transport_mpi_split_new(d, e, max_tag, timeout_s, &tp[j], err, errlen);
    return st;
}

/* This rank's figures combined with every rank's into r (element-wise
 * maximum): each device's peak the largest over its ranks, its parameter,
 * optimizer and gradient bytes and its stages' all-to-all times share 0's,
 * the step's time the longest; the measured timeline share 0's. */
static sc_status ep_gather(const sc_model *md, sc_run_result *r, const sc_exec_out *out,
                           const int *stage_dev, int d, int e, double timeout_s, char *err,
                           size_t errlen)
{
    int P = r->P, S = r->S;
    size_t n = 5 * (size_t)P + 1 + 2 * (size_t)S, N = r->measured->offset[P];
    double *v = malloc(n * sizeof *v), *a2a = v + 5 * P + 1;
    if (!v || (!r->ep_a2a && !(r->ep_a2a = malloc(2 * (size_t)S * sizeof(double))))) {
        free(v);
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = -INFINITY;
    v[d] = (double)out->peak_bytes;
    v[P + d] = (double)out->host_peak_bytes;
    if (e == 0) {
        v[2 * P + d] = (double)sc_model_allocated_param_bytes(md, d);
        v[3 * P + d] = (double)sc_model_allocated_optim_bytes(md, d);
        v[4 * P + d] = (double)sc_model_allocated_grad_bytes(md, d);
        for (int s = 0; s < S; s++)
            if (stage_dev[s] == d)
                sc_model_ep_times(md, s, &a2a[s], &a2a[S + s]);
    }
    v[5 * P] = out->end;
    const char *res = "the allreduce of the results";
    sc_status st = sc_mpi_max(v, (int)n, res, timeout_s, err, errlen);
    if (!st)
        st = sc_mpi_max(r->measured->t0, (int)N, res, timeout_s, err, errlen);
    if (!st)
        st = sc_mpi_max(r->measured->t1, (int)N, res, timeout_s, err, errlen);
    for (int i = 0; i < P && !st; i++) {
        r->peak_bytes[i] = (size_t)v[i];
        r->host_peak_bytes[i] = (size_t)v[P + i];
        r->param_bytes[i] = (size_t)v[2 * P + i];
        r->optim_bytes[i] = (size_t)v[3 * P + i];
        r->grad_bytes[i] = (size_t)v[4 * P + i];
    }
    if (!st)
        r->step_time_s = v[5 * P];
    for (int i = 0; i < 2 * S && !st; i++)
        r->ep_a2a[i] = a2a[i];
    free(v);
    return st;
}

/* Runs the step on this rank (its backend, model and transports made);
 * then every rank's figures into r. */
static sc_status ep_step(const sc_prog *pg, const sc_run_opts *o, sc_model *md,
                         sc_run_result *r, sc_backend *be, sc_transport *const *tp,
                         const int *stage_dev, int rank, double *times, const sc_model *ref,
                         char *err, size_t errlen)
{
    int E = sc_prog_ep(pg), d = rank / E, e = rank % E;
    size_t n = r->measured->offset[d + 1] - r->measured->offset[d];
    sc_workload wl;
    sc_exec_out out = {0};
    sc_status st = sc_model_attach(md, d, be, stage_dev, &wl, err, errlen);
    if (st)
        return st;
    sc_model_set_ep(&wl, tp[1], tp[2], e);
    out.t0 = e ? times : r->measured->t0 + r->measured->offset[d];
    out.t1 = e ? times + n : r->measured->t1 + r->measured->offset[d];
    out.timeout_s = o->timeout_s;
    out.ep_tp = tp[1];
    out.ep_lane_tp = tp[2]; /* or NULL: no lane (above) */
    out.ep_dev = e;
    if ((st = sc_mpi_barrier(o->timeout_s, err, errlen)) != SC_OK)
        return st;
    if ((st = sc_exec_device(pg, d, be, tp[0], &wl, sc_exec_now(), &out)) != SC_OK) {
        snprintf(err, errlen, "%s", out.err);
        return st; /* the caller aborts the job */
    }
    if (out.end_bytes || out.host_end_bytes) {
        snprintf(err, errlen, "device %d ended the step holding %zu bytes of activations", rank,
                 out.end_bytes);
        return SC_ERR_PROGRAM;
    }
    sc_run_collect(md, ref, r);
    if ((st = sc_run_combine(r, d, e, E, e == 0 && stage_dev[0] == d, ref != NULL,
                             o->timeout_s, err, errlen)) != SC_OK)
        return st;
    return ep_gather(md, r, &out, stage_dev, d, e, o->timeout_s, err, errlen);
}

sc_status sc_run_ep_mpi(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k,
                        sc_model *md, sc_run_result *r, int rank, const sc_model *ref,
                        char *err, size_t errlen)
{
    int E = sc_prog_ep(pg), d = rank / E, e = rank % E;
    size_t n = r->measured->offset[d + 1] - r->measured->offset[d];
    sc_transport *tp[3] = {NULL, NULL, NULL};
    sc_backend *be = NULL;
    sc_model *mine = e ? NULL : md; /* rank e of the EP group: made from md's config */
    int *stage_dev = malloc((size_t)r->S * sizeof(int));
    double *times = malloc((2 * n + 1) * sizeof(double)); /* e > 0: its pass times */
    sc_status st = SC_OK;
    if (!stage_dev || !times) {
        snprintf(err, errlen, "out of memory");
        st = SC_ERR_NOMEM;
        goto done;
    }
    for (int s = 0; s < r->S; s++)
        stage_dev[s] = sc_prog_stage_device(pg, s);
    if (e) { /* md only lends its config (copied) */
        st = sc_model_new_ep_rank(md, e, &mine, err, errlen);
        sc_model_free(md);
        md = NULL;
        if (st)
            goto done;
    }
    if ((st = ep_transports(pg, o->timeout_s, d, e, tp, err, errlen)) != SC_OK ||
        (st = k->open(rank, o->mem_cap, &be, err, errlen)) != SC_OK)
        goto done;
    r->transport = tp[0]->ops->name;
    st = ep_step(pg, o, mine, r, be, tp, stage_dev, rank, times, ref, err, errlen);
done:
    /* The models' parameters go back through the backend: first; the
     * transports before the backend too. */
    if (mine != md)
        sc_model_free(mine);
    sc_model_free(md);
    for (int j = 2; j >= 0; j--)
        sc_transport_mpi_free(tp[j]);
    sc_backend_free(be);
    free(stage_dev);
    free(times);
    return st;
}
