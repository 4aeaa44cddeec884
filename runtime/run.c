/*
 * run.c — one training step through a program's streams (run.h): memory
 * model, devices as threads or MPI ranks, the reference check.
 */
#include "run_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "exec.h"
#include "ir/offload_cfg.h"
#include "transport/sc_mpi.h"

sc_run_opts sc_run_defaults(int stages)
{
    sc_run_opts o = {
        .backend = "cpu",
        .model = {.hidden = 64, .layers = 2L * stages, .vocab = 128, .seq = 16, .batch = 2,
                  .seed = 1, .steps = 1, .opt = sc_optim_defaults()},
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
    free(r->step_loss);
    free(r->step_info);
    free(r->rollbacks);
    sc_sim_free(r->predicted);
    sc_sim_free(r->measured);
    free(r);
}

void sc_run_finish(int code)
{
    sc_mpi_finish(code);
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

/* Clipping and skipping need the global state of the gradients, which
 * only a synchronization gives; the fault injection's device becomes the
 * first gradient tensor of its lowest stage (model.h's numbering). */
static sc_status optim_fault(const sc_prog *pg, sc_model_cfg *mc, char *err, size_t errlen)
{
    sc_optim_cfg *c = &mc->opt;
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg);
    if (mc->sync == SC_SYNC_NONE && (c->clip > 0 || c->inf_step >= 0)) {
        snprintf(err, errlen, "%s needs -D optim_sync=sync or post-validation: under none every "
                 "device steps on its own, and none knows the global gradient norm or whether "
                 "another device's gradients hold inf",
                 c->clip > 0 ? "clipping (-D clip)" : "skipping a step on inf (-D inf_step)");
        return SC_ERR_ARG;
    }
    c->inf_tensor = -1;
    if (c->inf_step < 0)
        return SC_OK;
    if (c->inf_step >= mc->steps || c->inf_device < 0 || c->inf_device >= P) {
        snprintf(err, errlen, "inf_step = %d, inf_device = %d: the program has steps 0..%d and "
                 "devices 0..%d", c->inf_step, c->inf_device, mc->steps - 1, P - 1);
        return SC_ERR_ARG;
    }
    long L = mc->layers;
    for (int s = 0; s < S; s++)
        if (sc_prog_stage_device(pg, s) == c->inf_device) {
            long first = s * (L / S) + (s < L % S ? s : L % S); /* model.h's split */
            c->inf_tensor = (int)(2 * first);
            break;
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
    r->loss = r->reference_loss = r->max_grad_rel_err = r->max_param_rel_err = NAN;
    r->steps = sc_prog_steps(pg);
    size_t N = (size_t)r->steps;
    r->peak_bytes = calloc((size_t)r->P, sizeof(size_t));
    r->predicted_bytes = calloc((size_t)r->P, sizeof(size_t));
    r->host_peak_bytes = calloc((size_t)r->P, sizeof(size_t));
    r->predicted_host_bytes = calloc((size_t)r->P, sizeof(size_t));
    r->step_loss = malloc(2 * N * sizeof(double));
    r->step_info = calloc(2 * N, sizeof(sc_step_info));
    r->rollbacks = calloc(N, sizeof(int));
    if (!r->peak_bytes || !r->predicted_bytes || !r->host_peak_bytes ||
        !r->predicted_host_bytes || !r->step_loss || !r->step_info || !r->rollbacks)
        return SC_ERR_NOMEM;
    r->reference_step_loss = r->step_loss + N;
    r->reference_step_info = r->step_info + N;
    for (size_t k = 0; k < 2 * N; k++)
        r->step_loss[k] = NAN;
    return SC_OK;
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
    /* The model trains the program's steps, synchronized as it says. */
    sc_model_cfg mc = o->model;
    mc.steps = sc_prog_steps(pg);
    mc.sync = sc_prog_optim_sync(pg);
    mc.devices = r->P;
    if ((st = optim_fault(pg, &mc, err, errlen)) != SC_OK)
        goto fail;
    if ((st = sc_model_new(&mc, r->S, r->m, &md, err, errlen)) != SC_OK ||
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
        (st = sc_model_reference(&mc, r->m, o->mem_cap, &ref, err, errlen)) != SC_OK)
        goto fail;
    sc_model *run_md = md;
    md = NULL; /* freed by the runner */
    st = r->mpi ? sc_run_mpi(pg, o, run_md, r, rank, ref, err, errlen)
                : sc_run_threads(pg, o, run_md, r, ref, err, errlen);
    if (st)
        goto fail;
    if (ref)
        r->reference_loss = sc_model_loss(ref);
    for (int k = 0; ref && k < r->steps; k++)
        if (r->step_loss[k] != r->reference_step_loss[k])
            r->bitwise = 0;
    summarize(pg, r);
    if ((st = sc_sim_steps(pg, r->measured)) != SC_OK) {
        snprintf(err, errlen, "%s", sc_errmsg(pg));
        goto fail;
    }
    sc_model_free(ref);
    *out = r;
    return SC_OK;
fail:
    sc_model_free(md);
    sc_model_free(ref);
    sc_run_result_free(r);
    return st;
}
