/*
 * run.c — one training step through a program's streams (run.h): memory
 * model, devices as threads or MPI ranks, the reference check.
 */
#include "run_impl.h"

#include <math.h>
#include <stdint.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallopt */
#endif
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "cgroup.h"
#include "exec/exec.h"
#include "ir/recompute_cfg.h"
#include "ir/alloc.h"
#include "model/flops.h"
#include "ir/offload_cfg.h"
#include "transport/sc_mpi.h"
#include "transport/transport.h"

sc_run_opts sc_run_defaults(int stages)
{
    sc_run_opts o = {
        .backend = "cpu",
        .model = {.hidden = 64, .layers = 2L * stages, .vocab = 128, .seq = 16, .batch = 2,
                  .seed = 1, .steps = 1, .opt = sc_optim_defaults()},
        .timeout_s = 300,
    };
    const char *t = getenv("STAGECRAFT_TIMEOUT");
    double v;
    if (t && sc_run_parse_timeout(t, &v) == 0)
        o.timeout_s = v;
    return o;
}

int sc_run_parse_timeout(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0 && v <= 1e6))
        return -1;
    *out = v;
    return 0;
}

void sc_run_result_free(sc_run_result *r)
{
    if (!r)
        return;
    free(r->peak_bytes);
    free(r->predicted_bytes);
    free(r->host_peak_bytes);
    free(r->predicted_host_bytes);
    free(r->param_bytes);
    free(r->predicted_param_bytes);
    free(r->step_loss);
    free(r->step_info);
    free(r->rollbacks);
    free(r->ep_a2a);
    sc_sim_free(r->predicted);
    sc_sim_free(r->measured);
    sc_free(r->pass_cpu_s);
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
    int P = r->P;
    if (sc_prog_recompute(pg)->policy != SC_RECOMPUTE_NONE && sc_vocab_split(sc_prog_vocab(pg))) {
        snprintf(err, errlen, "run: recomputation with a split vocabulary is not supported yet "
                 "(the last stage's forward broadcasts its output; docs/recompute.md)");
        return SC_ERR_ARG;
    }
    sc_status st = sc_run_set_memory(pg, md, &r->unit_bytes, err, errlen);
    if (st || (st = sc_run_set_len_records(pg, md, r->unit_bytes, err, errlen)) != SC_OK)
        return st; /* and each microbatch's records (lengths) */
    st = sc_simulate(pg, &r->predicted);
    if (st) {
        snprintf(err, errlen, "%s", sc_errmsg(pg));
        return st;
    }
    if ((st = sc_run_predict_params(pg, md, r, err, errlen)) != SC_OK)
        return st;
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
 * first gradient tensor of its lowest stage (model/model.h's numbering). */
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
            long first = s * (L / S) + (s < L % S ? s : L % S); /* model/model.h's split */
            c->inf_tensor = (int)(2 * first);
            break;
        }
    return SC_OK;
}

/* What a thread of a device takes in address space besides the data: its
 * stack (8 MiB, the default) and, on the cpu backend, the buffer OpenBLAS
 * maps for each thread inside a BLAS call (BUFFER_SIZE: 128 MiB on x86-64).
 * When OpenBLAS cannot map it, it retries forever: a run that would not fit
 * under the address-space limit (ulimit -v) is refused before it starts. */
#define STACK_BYTES ((double)(8u << 20))
#define BLAS_BUFFER_BYTES ((double)(128u << 20))

/* Address space this process may still map under RLIMIT_AS and RLIMIT_DATA
 * (ulimit -v, -d); a negative number when neither is set. */
static double address_room(void)
{
    double room = -1;
    struct rlimit rl;
    long page = sysconf(_SC_PAGESIZE);
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        unsigned long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (f && fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        if (f)
            fclose(f);
        room = (double)rl.rlim_cur - (double)pages * (double)page;
    }
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        unsigned long kb = 0;
        char line[128];
        FILE *f = fopen("/proc/self/status", "r");
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "VmData: %lu kB", &kb) == 1)
                break;
        if (f)
            fclose(f);
        double d = (double)rl.rlim_cur - (double)kb * 1024;
        room = room < 0 || d < room ? d : room;
    }
    return room;
}

/* Refuses a run that cannot fit in this machine's memory before trying
 * (on_host: the devices' memory is host memory, the cpu backend): the
 * model's tensors and the run's own tables against physical memory, the
 * tables against table_cap (what --max-mem leaves), and everything with the
 * threads' stacks and BLAS buffers against the address-space limit. */
static sc_status fits(const sc_model *md, const sc_run_result *r, const sc_prog *pg, int local,
                      int check, int on_host, size_t table_cap, char *err, size_t errlen)
{
    double tables = local < 0 ? (double)sc_transport_local_bytes(r->P, 2 * r->S * r->m) : 0;
    for (int d = 0; d < r->P; d++)
        if (local < 0 || d == local)
            tables += (double)sc_exec_table_bytes(pg, d);
    if (table_cap && tables > (double)table_cap) {
        snprintf(err, errlen, "run: the executor's tables need %.0f MiB (%d device%s, %d stages x "
                 "%d microbatches each), more than the %.0f MiB --max-mem leaves (--max-mem "
                 "BYTES raises it; 0 for no limit)", tables / 1048576, local < 0 ? r->P : 1,
                 local < 0 && r->P > 1 ? "s" : "", r->S, r->m, (double)table_cap / 1048576);
        return SC_ERR_LIMIT;
    }
    double need = 0, all = 0, biggest = 0;
    for (int s = 0; s < r->S; s++) {
        double pb = (double)sc_model_param_bytes(md, s);
        all += pb;
        if (local < 0 || sc_prog_stage_device(pg, s) == local)
            need += pb;
        biggest += (double)sc_run_record_max(md, s, r->m, 0);
    }
    for (int d = 0; d < r->P; d++)
        if (local < 0 || d == local)
            need += (double)r->predicted_bytes[d] +
                    4.0 * r->m * (double)sc_run_record_max(md, 0, r->m, 1);
    if (!on_host)
        need = 0; /* on the GPUs: gpu_fits */
    if (check)
        need += all + biggest;
    need += tables;
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (phys > 0 && need > phys) {
        snprintf(err, errlen, "out of memory: this run needs about %.0f MiB, the machine has "
                 "%.0f MiB (make the model smaller: -D hidden, layers, vocab, seq, batch%s)",
                 need / 1048576, phys / 1048576, tables > need / 2 ? "; or fewer microbatches" : "");
        return SC_ERR_NOMEM;
    }
    double cg = sc_cgroup_room();
    if (cg >= 0 && need > cg) {
        snprintf(err, errlen, "out of memory: this run needs about %.0f MiB, the memory limit "
                 "of its cgroup leaves %.0f MiB (make the model smaller: -D hidden, layers, "
                 "vocab, seq, batch%s)", need / 1048576, cg / 1048576,
                 tables > need / 2 ? "; or fewer microbatches" : "");
        return SC_ERR_NOMEM;
    }
    int threads = (local < 0 ? r->P : 1) + (check ? 1 : 0); /* the reference: this thread */
    double room = address_room(), per = STACK_BYTES + (on_host ? BLAS_BUFFER_BYTES : 0);
#ifdef __GLIBC__
    /* Under an address-space limit, one malloc arena: glibc reserves 64 MiB
     * of address space for each thread's own arena, which this count does
     * not see; with them, OpenBLAS's buffer could find no room after the
     * check passed, and OpenBLAS retries a failed map forever (a hang in
     * about one run of three near the limit). */
    if (room >= 0)
        mallopt(M_ARENA_MAX, 1);
#endif
    if (room >= 0 && need + threads * per > room) {
        snprintf(err, errlen, "out of memory: the address-space limit (ulimit -v or -d) leaves "
                 "%.0f MiB, and this run needs about %.0f MiB (%.0f MiB of data, and %d "
                 "thread%s with a stack%s)", room / 1048576, (need + threads * per) / 1048576,
                 need / 1048576, threads, threads == 1 ? "" : "s",
                 on_host ? " and OpenBLAS's buffer of 128 MiB each" : " each");
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
    r->param_bytes = calloc(3 * (size_t)r->P, sizeof(size_t)); /* optim, grad_bytes after */
    r->predicted_param_bytes = calloc(2 * (size_t)r->P, sizeof(size_t));
    r->step_loss = malloc(2 * N * sizeof(double));
    r->step_info = calloc(2 * N, sizeof(sc_step_info));
    r->rollbacks = calloc(N, sizeof(int));
    if (!r->peak_bytes || !r->predicted_bytes || !r->host_peak_bytes ||
        !r->predicted_host_bytes || !r->param_bytes || !r->predicted_param_bytes || !r->step_loss || !r->step_info || !r->rollbacks)
        return SC_ERR_NOMEM;
    r->optim_bytes = r->param_bytes + r->P;
    r->grad_bytes = r->param_bytes + 2 * r->P;
    r->predicted_optim_bytes = r->predicted_param_bytes + r->P;
    r->reference_step_loss = r->step_loss + N;
    r->reference_step_info = r->step_info + N;
    for (size_t k = 0; k < 2 * N; k++)
        r->step_loss[k] = NAN;
    return SC_OK;
}

/* An sc_sim of the predicted one's shape for the measured times. */
/* (through ir/alloc.h, as sc_sim_free frees it) */
static sc_status alloc_measured(sc_run_result *r)
{
    int P = r->P;
    size_t N = r->predicted->offset[P];
    sc_sim *m = sc_calloc(1, sizeof *m);
    r->measured = m;
    if (!m)
        return SC_ERR_NOMEM;
    m->P = P;
    m->busy = sc_calloc((size_t)P, sizeof(double));
    m->start = sc_calloc((size_t)P, sizeof(double));
    m->end = sc_calloc((size_t)P, sizeof(double));
    m->peak_mem = sc_calloc((size_t)P, sizeof(double));
    m->offset = sc_malloc(((size_t)P + 1) * sizeof(size_t));
    m->t0 = sc_malloc((N + 1) * sizeof(double));
    m->t1 = sc_malloc((N + 1) * sizeof(double));
    if (!m->busy || !m->start || !m->end || !m->peak_mem || !m->offset || !m->t0 || !m->t1)
        return SC_ERR_NOMEM;
    memcpy(m->offset, r->predicted->offset, ((size_t)P + 1) * sizeof(size_t));
    /* Host memory follows the stream's order, so the measured timeline's
     * is the predicted one's (and with it, the trace's host-link row). */
    if (r->predicted->host) {
        if (!(m->host = sc_malloc((N + 1) * sizeof(double))))
            return SC_ERR_NOMEM;
        memcpy(m->host, r->predicted->host, N * sizeof(double));
    }
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

/* FNV-1a over bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#define FNV0 1469598103934665603ULL

/* The streams as they are now. */
static uint64_t streams_hash(const sc_prog *pg)
{
    uint64_t h = FNV0;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        h = fnv(h, in, n * sizeof *in);
        h = fnv(h, &n, sizeof n);
    }
    return h;
}

/* The cost and memory model and the offload policy: what the prediction
 * and the offload plan follow from. */
static uint64_t model_hash(const sc_prog *pg)
{
    uint64_t h = FNV0;
    for (int s = 0; s < sc_prog_stages(pg); s++) {
        double v[4] = {sc_prog_tf(pg, s), sc_prog_tb(pg, s), sc_prog_tw(pg, s),
                       sc_prog_mem(pg, s)};
        h = fnv(h, v, sizeof v);
    }
    double g[3] = {sc_prog_tcomm(pg), sc_prog_w_keep(pg), sc_prog_mem_limit(pg)};
    h = fnv(h, g, sizeof g);
    const sc_offload_cfg *c = sc_prog_offload(pg);
    double oc[5] = {(double)c->policy, c->chunks, c->ratio, (double)c->shared, c->mem};
    return fnv(h, oc, sizeof oc);
}

/* Every rank evaluated the recipe and read its own command line: before
 * anything is allocated from them, the ranks must agree on everything that
 * must be the same everywhere (a model of another size would overrun the
 * buffers of the transfers; another seed or program gives a loss that
 * belongs to no configuration, or hangs). Each value goes through one
 * element-wise max of (v, -v): max and min over the ranks, exact for
 * integers below 2^53 (hashes and seeds in 32-bit halves). */
enum { A_P, A_S, A_M, A_HIDDEN, A_LAYERS, A_VOCAB, A_SEQ, A_BATCH, A_SEED_HI, A_SEED_LO, A_LR,
       A_BETA1, A_BETA2, A_EPS, A_WD, A_CLIP, A_INF_STEP, A_INF_DEVICE, A_BACKEND, A_CHECK, A_PROG_HI, A_PROG_LO, A_COST_HI, A_COST_LO,
       A_KIND, A_HEADS, A_KV_HEADS, A_HEAD_DIM, A_INTER, A_THETA, A_NORM_EPS, A_N };

static sc_status agree(const sc_prog *pg, const sc_run_opts *o, double timeout_s, char *err,
                       size_t errlen)
{
    static const char *const what[A_N] = {
        "the number of devices", "the number of stages", "the number of microbatches",
        "the model size 'hidden'", "the model size 'layers'", "the model size 'vocab'",
        "the model size 'seq'", "the model size 'batch'", "the model's seed", "the model's seed",
        "the learning rate", "the optimizer's beta1", "the optimizer's beta2",
        "the optimizer's eps", "the weight decay", "the clipping threshold", "inf_step",
        "inf_device", "the backend", "--check", "the program", "the program",
        "the cost and memory model", "the cost and memory model",
        "the model's kind (MLP or decoder, --model)",
        "the decoder's heads", "the decoder's kv_heads", "the decoder's head_dim",
        "the decoder's inter", "the decoder's rope_theta", "the decoder's rms_norm_eps"};
    const sc_model_cfg *mc = &o->model;
    uint64_t seed = (uint64_t)mc->seed, prog = streams_hash(pg), cost = model_hash(pg);
    uint64_t be = fnv(FNV0, o->backend, strlen(o->backend));
    double v[2 * A_N] = {
        sc_prog_devices(pg), sc_prog_stages(pg), sc_prog_microbatches(pg), (double)mc->hidden,
        (double)mc->layers, (double)mc->vocab, (double)mc->seq, (double)mc->batch,
        (double)(seed >> 32), (double)(seed & 0xffffffffu), mc->opt.lr,
        mc->opt.beta1, mc->opt.beta2, mc->opt.eps, mc->opt.weight_decay, mc->opt.clip,
        mc->opt.inf_step, mc->opt.inf_device,
        (double)(be & 0xffffffffu), o->check, (double)(prog >> 32), (double)(prog & 0xffffffffu),
        (double)(cost >> 32), (double)(cost & 0xffffffffu), mc->kind, (double)mc->heads,
        (double)mc->kv_heads, (double)mc->head_dim, (double)mc->inter, mc->rope_theta,
        mc->norm_eps};
    for (int i = 0; i < A_N; i++)
        v[A_N + i] = -v[i];
    sc_status st = sc_mpi_max(v, 2 * A_N, "the check that the ranks agree (model, program)",
                                timeout_s, err, errlen);
    if (st)
        return st;
    for (int i = 0; i < A_N; i++) {
        double hi = v[i], lo = -v[A_N + i];
        if (hi == lo)
            continue;
        const char *why = "(every rank evaluates the recipe and reads its own command line: a "
                          "parameter drawn at random or read from the rank, the time or the "
                          "environment differs)";
        if (i == A_PROG_HI || i == A_PROG_LO)
            snprintf(err, errlen, "the ranks built different programs from the recipe (one that "
                     "depends on time, like a search under a time limit: give --time-limit 0; "
                     "or on chance or the rank) %s", why);
        else if (i <= A_BATCH || (i >= A_LR && i <= A_INF_DEVICE) || i >= A_KIND)
            snprintf(err, errlen, "the ranks disagree on %s: from %.17g to %.17g across ranks %s",
                     what[i], lo, hi, why);
        else
            snprintf(err, errlen, "the ranks disagree on %s %s", what[i], why);
        return SC_ERR_ARG;
    }
    return SC_OK;
}

/* After the prediction (which may re-plan offload): the same streams on
 * every rank, as the agreement above implies; a guard against a prediction
 * that is not deterministic. */
static sc_status same_program(const sc_prog *pg, double timeout_s, char *err, size_t errlen)
{
    uint64_t h = streams_hash(pg);
    double hi = (double)(h >> 32), lo = (double)(h & 0xffffffffu);
    double v[4] = {hi, lo, -hi, -lo};
    sc_status st = sc_mpi_max(v, 4, "the check that the ranks built one program", timeout_s,
                                err, errlen);
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
    double *slens = NULL; /* sequence slices: each record's tokens */
    sc_status st = alloc_result(pg, &r);
    *out = NULL;
    err[0] = 0;
    if (st) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* An unknown or unavailable backend is refused before anything else
     * (a kind that counts its devices: by counting them, without starting
     * one; else by opening one). */
    const sc_device_kind *kind = sc_device_kind_find(o->backend, err, errlen);
    if (!kind || (o->graph && !sc_exec_graph_check(pg, err, errlen))) { /* docs/graphs.md */
        st = SC_ERR_ARG;
        goto fail;
    }
    r->tolerance = kind->tolerance;
    if (sc_prog_slices(pg) > 1 && r->tolerance < 1e-4) /* docs/slices.md#run: */
        r->tolerance = 1e-4; /* the weight gradients sum per slice, then over the slices */
    r->transport = "local";
    if (!kind->count || kind->count(NULL, 0) < 1) {
        sc_backend *probe;
        if ((st = kind->open(0, 0, &probe, err, errlen)) != SC_OK)
            goto fail;
        sc_backend_free(probe);
    }
    /* The model trains the program's steps, synchronized as it says. */
    sc_model_cfg mc = o->model;
    mc.steps = sc_prog_steps(pg);
    mc.sync = sc_prog_optim_sync(pg);
    mc.devices = r->P;
    /* The vocabulary layers where the program places them (docs/vocab.md#running-the-split-model),
     * and with redis the program's split of the layers. */
    mc.vocab_par = sc_prog_vocab(pg);
    mc.stage_layers = NULL;
    mc.copies = sc_prog_copies(pg); /* docs/guide.md#copies */
    mc.forward_only = r->forward_only = sc_prog_forward_only(pg);
    mc.lengths = sc_prog_lengths(pg); /* each microbatch's tokens (docs/lengths.md) */
    mc.ep = sc_prog_ep(pg); /* rank 0 of the EP group; run_ep.c makes the others */
    if (mc.ep > 1 && (st = sc_run_ep_check(o, kind, pg, err, errlen)) != SC_OK)
        goto fail;
    mc.slices = sc_prog_slices(pg); /* or each slice's (docs/slices.md#run) */
    if (mc.slices > 1 && (st = sc_run_slice_lengths(pg, mc.seq, &slens, err, errlen)) != SC_OK)
        goto fail;
    if (slens)
        mc.lengths = slens;
    if ((st = optim_fault(pg, &mc, err, errlen)) != SC_OK)
        goto fail;
    /* MPI ranks: started, and agreeing on the configuration, before the
     * model or anything that follows from it is allocated. */
    int rank = 0, size = 1;
    if (sc_mpi_launched()) {
        if ((st = (mc.ep > 1 ? sc_mpi_init_threads : sc_mpi_init)(&rank, &size, o->timeout_s, err,
                                                                  errlen)) != SC_OK)
            goto fail;
        r->mpi = 1;
        r->rank = rank;
        if (mc.copies > 1) { /* each rank would know one copy's losses only */
            snprintf(err, errlen, "a program with %d copies of the model runs on threads "
                     "(without mpirun) for now", mc.copies);
            st = SC_ERR_ARG;
            goto fail;
        }
        if ((st = agree(pg, o, o->timeout_s, err, errlen)) != SC_OK)
            goto fail;
        int E = mc.ep > 1 ? mc.ep : 1; /* p x E devices (docs/semantics.md#expert-parallelism) */
        if (size != r->P * E) {
            if (E > 1)
                snprintf(err, errlen, "mpirun started %d ranks for a program of %d x %d devices "
                         "(p x ep; use mpirun -np %d)", size, r->P, E, r->P * E);
            else
                snprintf(err, errlen, "mpirun started %d ranks for a program of %d devices (use "
                         "mpirun -np %d)", size, r->P, r->P);
            st = SC_ERR_ARG;
            goto fail;
        }
    }
    int *layers = NULL;
    if (mc.vocab_par == SC_VOCAB_REDIS && sc_prog_stage_layers(pg, 0) > 0) {
        if (!(layers = malloc((size_t)r->S * sizeof(int)))) {
            snprintf(err, errlen, "out of memory");
            st = SC_ERR_NOMEM;
            goto fail;
        }
        for (int s = 0; s < r->S; s++)
            layers[s] = sc_prog_stage_layers(pg, s);
        mc.stage_layers = layers;
    }
    st = sc_model_new(&mc, r->S, r->m, &md, err, errlen);
    free(layers); /* the model keeps its own split */
    mc.stage_layers = NULL;
    if (st != SC_OK || (st = predict(pg, md, r, err, errlen)) != SC_OK)
        goto fail;
    if (r->mpi && (st = same_program(pg, o->timeout_s, err, errlen)) != SC_OK)
        goto fail;
    if ((st = fits(md, r, pg, r->mpi ? rank / (mc.ep > 1 ? mc.ep : 1) : -1, o->check, kind->host_memory, o->table_cap,
                   err, errlen)) != SC_OK)
        goto fail;
    if ((st = alloc_measured(r)) != SC_OK ||
        (o->pass_cpu && !(r->pass_cpu_s = sc_malloc((r->measured->offset[r->P] + 1) *
                                                    sizeof(double))))) {
        snprintf(err, errlen, "out of memory");
        st = SC_ERR_NOMEM;
        goto fail;
    }
    for (size_t i = 0; r->pass_cpu_s && i < r->measured->offset[r->P]; i++)
        r->pass_cpu_s[i] = -INFINITY;
    sc_model_cfg rc = mc; /* the reference: one device, the whole batch */
    rc.ep = 0;
    if (o->check &&
        (st = sc_model_reference(&rc, r->m, o->mem_cap, &ref, err, errlen)) != SC_OK)
        goto fail;
    sc_model *run_md = md;
    md = NULL; /* freed by the runner */
    st = r->mpi && mc.ep > 1 ? sc_run_ep_mpi(pg, o, kind, run_md, r, rank, ref, err, errlen)
         : r->mpi ? sc_run_mpi(pg, o, kind, run_md, r, rank, ref, err, errlen)
         : mc.ep > 1 ? sc_run_ep_threads(pg, o, kind, run_md, r, ref, err, errlen)
                     : sc_run_threads(pg, o, kind, run_md, r, ref, err, errlen);
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
    free(slens);
    *out = r;
    return SC_OK;
fail:
    free(slens);
    sc_model_free(md);
    sc_model_free(ref);
    sc_run_result_free(r);
    return st;
}
