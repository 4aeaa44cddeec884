/*
 * profile.c — measuring a program's costs (profile.h): timed steps, the
 * samples from the executor's timestamps, medians, and the prediction of
 * the same streams from them.
 */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "compile.h"
#include "ir/offload_cfg.h"
#include "profile_impl.h"

/* The same orders with every BW split into B and W (split) or every B
 * fused with its W into a BW at the B's place (fuse): a valid program of
 * the same shape, placement and model, for the kinds pg lacks. */
static sc_status variant(const sc_prog *pg, int split, sc_prog **out, char *err, size_t errlen)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    sc_prog *v = sc_prog_new(P, S, m);
    int *table = malloc((size_t)S * sizeof(int));
    sc_status st = v && table ? SC_OK : SC_ERR_NOMEM;
    snprintf(err, errlen, "out of memory");
    for (int s = 0; s < S && !st; s++)
        table[s] = sc_prog_stage_device(pg, s);
    if (!st)
        st = sc_prog_set_placement(v, SC_PLACE_TABLE, table);
    if (!st) /* the vocabulary passes are copied as they are */
        st = sc_prog_set_vocab(v, sc_prog_vocab(pg));
    if (!st) /* and the lengths, with their scales */
        st = sc_profile_copy_lengths(pg, v);
    if (!st && sc_prog_ep(pg) > 1) /* expert parallelism, as pg's (ir/ep.h) */
        st = sc_prog_set_ep(v, sc_prog_ep(pg));
    for (int s = 0; s < S && !st && sc_prog_ep(pg) > 1; s++)
        st = sc_prog_set_ep_bytes(v, s, sc_prog_ep_bytes(pg, s));
    for (int d = 0; d < P && !st && sc_prog_ep(pg) > 1; d++)
        st = sc_prog_set_ep_dense(v, d, sc_prog_ep_dense(pg, d));
    for (int d = 0; d < P && !st; d++) {
        size_t n;
        const sc_instr *in = sc_prog_order(pg, d, &n);
        for (size_t k = 0; k < n && !st; k++) {
            int op = in[k].op, s = in[k].stage, mb = in[k].mb;
            int b = sc_op_is_bgrad(op), w = sc_op_is_wgrad(op);
            if (split && b && w) { /* BW: B, then W */
                if (!(st = sc_prog_push(v, d, SC_OP_B, s, mb)))
                    st = sc_prog_push(v, d, SC_OP_W, s, mb);
            } else if (!split && b != w) { /* B or W alone: BW where the B was */
                if (b)
                    st = sc_prog_push(v, d, SC_OP_BW, s, mb);
            } else {
                st = sc_prog_push(v, d, op, s, mb);
            }
        }
    }
    if (!st)
        st = sc_check(v);
    free(table);
    if (st) {
        if (v)
            snprintf(err, errlen, "%s", sc_errmsg(v));
        sc_prog_free(v);
        v = NULL;
    }
    *out = v;
    return st;
}

static int has_op(const sc_prog *pg, int op)
{
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *in = sc_prog_order(pg, d, &n);
        for (size_t k = 0; k < n; k++)
            if (in[k].op == op)
                return 1;
    }
    return 0;
}

/* "Intel(R) Xeon(R) Processor, 2 cores" from /proc/cpuinfo, or the
 * machine's architecture; with GPUs their name. */
static void machine_name(const sc_run_result *r, char *buf, size_t len)
{
    if (r->gpus > 0) {
        snprintf(buf, len, "%d x %s", r->gpus, r->gpu_name);
        return;
    }
    char model[128] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            const char *v = strchr(line, ':') + 1;
            while (*v == ' ')
                v++;
            snprintf(model, sizeof model, "%.*s", (int)strcspn(v, "\n"), v);
            break;
        }
    if (f)
        fclose(f);
    if (!model[0]) {
        struct utsname u;
        snprintf(model, sizeof model, "%s", uname(&u) == 0 ? u.machine : "unknown");
    }
    snprintf(buf, len, "%s, %ld cores", model, sysconf(_SC_NPROCESSORS_ONLN));
}

/* Medians into pf->costs and the program that holds them. */
/* The line latency + per_byte · weight through the medians of the
 * collectives' sizes (least squares, both terms >= 0; one size: its median
 * is the latency). */
static void fit_colls(sc_costs *c, samples *sm)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0, n = 0;
    for (int i = 0; i < sm->nsz; i++) {
        sized *z = &sm->sz[i];
        if (z->to_host != SC_SAMPLES_COLL || z->t.n < 1)
            continue;
        n += z->t.n;
        double y = sc_stat_of(z->t.v, z->t.n).median, x = z->bytes;
        sx += x, sy += y, sxx += x * x, sxy += x * y, k++;
    }
    if (k == 0)
        return;
    double den = k * sxx - sx * sx, b = den > 0 ? (k * sxy - sx * sy) / den : 0;
    double a = (sy - b * sx) / k;
    if (b < 0) /* larger ones no slower: a constant */
        b = 0, a = sy / k;
    if (a < 0) /* through the origin */
        a = 0, b = sxx > 0 ? sxy / sxx : 0;
    c->coll_lat = a;
    c->coll_per_byte = b;
    c->coll_n = n;
}

/* Expert parallelism (run_ep.c): each stage's dispatch and combine of one
 * pass, measured inside its F, B and BW passes, as the cost file's
 * `dispatch` and `combine`; the passes' own times without them (the
 * simulator adds them back to each pass, ir/ep.h). */
static sc_status ep_costs(sc_costs *c, const double *a2a, int S)
{
    for (int k = 0; k < 2; k++)
        if (!(c->a2a[k] = malloc((size_t)S * sizeof *c->a2a[k])))
            return SC_ERR_NOMEM;
    for (int s = 0; s < S; s++) {
        double t = a2a[s] + a2a[S + s];
        for (int k = 0; k < 2; k++)
            c->a2a[k][s] = (sc_stat){a2a[k * S + s], 0, 1};
        for (int k = 0; k < SC_COST_KINDS; k++)
            if (k == SC_COST_F || k == SC_COST_B || k == SC_COST_BW)
                c->kind[k][s].median = fmax(0, c->kind[k][s].median - t);
    }
    return SC_OK;
}

static sc_status summarize(sc_profile *pf, const sc_prog *pg, samples *sm, const sc_model *md)
{
    int P = sm->P, S = sm->S;
    sc_costs *c = &pf->costs;
    if (sc_costs_init(c, P, S) != SC_OK || !(c->placement = malloc((size_t)S * sizeof(int))))
        return SC_ERR_NOMEM;
    for (int s = 0; s < S; s++)
        c->placement[s] = sc_prog_stage_device(pg, s);
    for (int k = 0; k < SC_COST_OPT; k++)
        for (int s = 0; s < S; s++)
            c->kind[k][s] = sc_stat_of(sm->kind[k][s].v, sm->kind[k][s].n);
    /* OPTIM is per device: its stages share it by parameter bytes. */
    for (int d = 0; d < P; d++) {
        sc_stat o = sc_stat_of(sm->kind[SC_COST_OPT][d].v, sm->kind[SC_COST_OPT][d].n);
        double all = 0;
        for (int s = 0; s < S; s++)
            if (c->placement[s] == d)
                all += (double)sc_model_param_bytes(md, s);
        for (int s = 0; s < S; s++)
            if (c->placement[s] == d) {
                double q = all > 0 ? (double)sc_model_param_bytes(md, s) / all : 0;
                c->kind[SC_COST_OPT][s] = (sc_stat){o.median * q, o.spread * q, o.n};
            }
    }
    /* The vocabulary passes (a split vocabulary), per device. */
    int nv = 0;
    for (int d = 0; d < P; d++)
        nv += sm->vocab[0][d].n;
    if (nv > 0 && sc_costs_init_vocab(c) != SC_OK)
        return SC_ERR_NOMEM;
    for (int k = 0; k < SC_COST_VOCAB && nv > 0; k++)
        for (int d = 0; d < P; d++)
            c->vocab[k][d] = sc_stat_of(sm->vocab[k][d].v, sm->vocab[k][d].n);
    fit_colls(c, sm);
    if (pf->run && pf->run->ep_a2a && ep_costs(c, pf->run->ep_a2a, S) != SC_OK)
        return SC_ERR_NOMEM;
    int nx = 0, nh = 0;
    for (int i = 0; i < sm->nsz; i++)
        if (sm->sz[i].to_host != SC_SAMPLES_COLL)
            *(sm->sz[i].to_host == SC_SAMPLES_XFER ? &nx : &nh) += 1;
    c->xfer = calloc((size_t)nx + 1, sizeof *c->xfer);
    c->host = calloc((size_t)nh + 1, sizeof *c->host);
    if (!c->xfer || !c->host)
        return SC_ERR_NOMEM;
    for (int i = 0; i < sm->nsz; i++) {
        sized *z = &sm->sz[i];
        if (z->to_host == SC_SAMPLES_COLL)
            continue;
        sc_cost_size e = {.bytes = z->bytes, .t = sc_stat_of(z->t.v, z->t.n),
                          .to_host = z->to_host == 1};
        if (z->to_host == SC_SAMPLES_XFER) {
            c->xfer[c->nxfer++] = e;
            if (e.t.n > c->comm.n)
                c->comm = e.t; /* the model's transfers: all of one size */
        } else {
            c->host[c->nhost++] = e;
        }
    }
    if (!isfinite(c->comm.median))
        c->comm = (sc_stat){0, NAN, 0};
    /* The host link: the slower direction's time per byte, for one unit,
     * relative to a device's mean share of tf + tb + tw. */
    double per_byte = -1, share = 0;
    for (int i = 0; i < c->nhost; i++)
        if (c->host[i].bytes > 0)
            per_byte = fmax(per_byte, c->host[i].t.median / c->host[i].bytes);
    for (int s = 0; s < S; s++)
        share += (c->kind[SC_COST_F][s].median + c->kind[SC_COST_B][s].median +
                  c->kind[SC_COST_W][s].median) / P;
    if (per_byte >= 0 && share > 0 && pf->run && pf->run->unit_bytes > 0)
        c->offload_ratio = per_byte * pf->run->unit_bytes / share;
    return SC_OK;
}

/* A program of pg's shape holding the measured costs. */
static sc_status cost_program(sc_profile *pf, const sc_prog *pg)
{
    const sc_costs *c = &pf->costs;
    int S = c->S;
    sc_prog *cp = sc_prog_new(c->P, S, sc_prog_microbatches(pg));
    if (!(pf->cost_prog = cp))
        return SC_ERR_NOMEM;
    sc_status st = SC_OK;
    for (int s = 0; s < S && !st; s++) {
        double f = c->kind[SC_COST_F][s].median, b = c->kind[SC_COST_B][s].median,
               w = c->kind[SC_COST_W][s].median, bw = c->kind[SC_COST_BW][s].median,
               o = c->kind[SC_COST_OPT][s].median;
        st = sc_prog_set_cost(cp, s, isfinite(f) ? f : 0, isfinite(b) ? b : 0,
                              isfinite(w) ? w : 0);
        if (!st)
            st = sc_prog_set_cost_bw(cp, s, isfinite(bw) ? bw : NAN);
        if (!st)
            st = sc_prog_set_cost_optim(cp, s, isfinite(o) ? o : 0);
    }
    if (!st)
        st = sc_prog_set_comm(cp, c->comm.median);
    if (!st && c->per_token) /* fitted per-token costs (formats/costs_tok.h) */
        st = sc_prog_set_len_tokens(cp, c->per_token, c->per_token + 3 * (size_t)S, c->tokens);
    /* ep > 1: each pass's all-to-alls on the compute stream (ir/ep.h, pair.h) */
    for (int s = 0; s < S && !st && c->a2a[0] && c->a2a[1]; s++)
        st = sc_prog_set_cost_a2a(cp, s, c->a2a[0][s].median + c->a2a[1][s].median);
    if (!st && c->coll_n > 0)
        st = sc_prog_set_coll_cost(cp, c->coll_lat,
                                   c->coll_per_byte > 0 ? 1 / c->coll_per_byte : INFINITY);
    for (int d = 0; d < c->P && c->vocab[0] && !st; d++) { /* a split vocabulary's passes */
        double t[SC_COST_VOCAB];
        for (int k = 0; k < SC_COST_VOCAB; k++)
            t[k] = isfinite(c->vocab[k][d].median) ? c->vocab[k][d].median : 0;
        st = sc_prog_set_vocab_cost(cp, d, t[0], t[1], t[2], t[3]);
    }
    sc_offload_cfg oc = *sc_prog_offload(pg);
    oc.policy = SC_OFFLOAD_NONE;
    if (isfinite(c->offload_ratio))
        oc.ratio = c->offload_ratio;
    if (!st)
        st = sc_prog_set_offload(cp, &oc);
    sc_prog_set_seconds(cp, 1);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The program's timed runs, in order. */
typedef struct runlist {
    sc_run_result **r;
    int n, cap;
} runlist;

/* warmup + steps runs of prog; the samples of the timed ones into sm (a
 * mark after each), the timed runs appended to keep (freed when NULL), the
 * sum of their step times added to *spent. */
static sc_status steps_of(sc_prog *prog, const sc_run_opts *o, int warmup, int steps,
                          samples *sm, runlist *keep, double *spent, char *err, size_t errlen)
{
    sc_model *md = NULL;
    sc_model_cfg mc = o->model;
    mc.lengths = sc_prog_lengths(prog); /* the sizes of its transfers and records */
    sc_status st = sc_model_new(&mc, sc_prog_stages(prog), sc_prog_microbatches(prog), &md, err,
                                errlen);
    if (!st && keep && keep->n + steps > keep->cap) {
        int cap = keep->n + steps;
        sc_run_result **r = realloc(keep->r, (size_t)cap * sizeof *r);
        if (!r)
            st = SC_ERR_NOMEM;
        else
            keep->r = r, keep->cap = cap;
    }
    for (int i = 0; i < warmup + steps && !st; i++) {
        sc_run_result *r = NULL;
        if ((st = sc_run(prog, o, &r, err, errlen)) != SC_OK)
            break;
        if (i >= warmup) {
            sc_samples_collect(sm, prog, r->measured, r->pass_cpu_s, md);
            sc_samples_mark(sm);
            *spent += r->step_time_s;
        }
        if (i >= warmup && keep)
            keep->r[keep->n++] = r;
        else
            sc_run_result_free(r);
    }
    if (!st && sm->bad) {
        snprintf(err, errlen, "out of memory collecting the profile");
        st = SC_ERR_NOMEM;
    }
    sc_model_free(md);
    return st;
}

/* The step times of the runs into pf, and the run of median time (the lower
 * middle one when even) into pf->run; the others are freed. */
static sc_status keep_median(sc_profile *pf, runlist *rl)
{
    int n = rl->n;
    double *sorted = malloc((size_t)n * sizeof(double));
    if (!sorted || !(pf->step_times = malloc((size_t)n * sizeof(double)))) {
        free(sorted);
        return SC_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++)
        sorted[i] = pf->step_times[i] = rl->r[i]->step_time_s;
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    for (int i = 0; i < n && !pf->run; i++)
        if (rl->r[i]->step_time_s == sorted[(n - 1) / 2]) {
            pf->run = rl->r[i];
            rl->r[i] = NULL;
        }
    pf->steps = n;
    free(sorted);
    return SC_OK;
}

int sc_profile_cpu_clock(const sc_run_opts *o)
{
    const char *v[] = {getenv("OPENBLAS_NUM_THREADS"), getenv("OMP_NUM_THREADS")};
    for (int i = 0; i < 2; i++)
        if (v[i] && *v[i] && strcmp(v[i], "1") != 0)
            return 0;
    return !o->backend || strcmp(o->backend, "cpu") == 0;
}

/* The median step time of the runs so far (the upper middle one). */
static double median_step(const runlist *rl)
{
    double med = 0;
    for (int i = 0; i < rl->n; i++) { /* the one with as many below as above */
        int below = 0;
        for (int j = 0; j < rl->n; j++)
            below += rl->r[j]->step_time_s < rl->r[i]->step_time_s;
        if (below <= rl->n / 2)
            med = fmax(med, rl->r[i]->step_time_s);
    }
    return med;
}

/* The rounds (profile.h): the first of o->steps, then as many steps as so
 * far while a figure is not known within the target and the caps allow. */
static sc_status rounds(sc_profile *pf, sc_prog *pg, sc_prog *var, const sc_run_opts *ro,
                        const sc_profile_opts *o, samples *sm, runlist *rl, char *err,
                        size_t errlen)
{
    sc_run_opts vo = *ro;
    vo.check = 0;
    double spent = 0;
    sc_status st = SC_OK;
    for (int n = o->steps; n > 0;) {
        if ((st = steps_of(pg, ro, pf->rounds ? 0 : o->warmup, n, sm, rl, &spent, err,
                           errlen)) != SC_OK ||
            (var && (st = steps_of(var, &vo, 0, n, sm, NULL, &spent, err, errlen)) != SC_OK))
            return st;
        pf->rounds++;
        pf->steps = rl->n;
        pf->spent_s = spent;
        if (o->target <= 0)
            break;
        free(pf->unstable);
        if (sc_samples_unstable(sm, o->target, median_step(rl), &pf->unstable,
                                &pf->nunstable) != 0) {
            pf->unstable = NULL;
            return SC_ERR_NOMEM;
        }
        if (!pf->nunstable)
            break;
        if (rl->n >= o->max_steps) {
            pf->capped = 1;
            break;
        }
        if (o->max_s > 0 && spent >= o->max_s) {
            pf->capped = 2;
            break;
        }
        n = rl->n < o->max_steps - rl->n ? rl->n : o->max_steps - rl->n;
        if (o->round)
            o->round(o->round_arg, pf, n);
    }
    return SC_OK;
}

sc_status sc_profile_run(sc_prog *pg, const sc_run_opts *ro, const char *recipe,
                         const sc_profile_opts *o, sc_profile **out, char *err, size_t errlen)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg);
    sc_profile *pf = calloc(1, sizeof *pf);
    samples sm;
    sc_model *md = NULL;
    sc_prog *var = NULL;
    runlist rl = {0};
    *out = NULL;
    err[0] = 0;
    sc_status st = pf && sc_samples_new(&sm, P, S) == SC_OK ? SC_OK : SC_ERR_NOMEM;
    if (pf && st) {
        free(pf);
        pf = NULL;
    }
    if (st) {
        snprintf(err, errlen, "out of memory");
        return st;
    }
    if (o->warmup < 0 || o->steps < 1 || o->max_steps < o->steps) {
        snprintf(err, errlen, "a profile needs at least one timed step, and a cap of at least "
                 "as many (got %d, at most %d)", o->steps, o->max_steps);
        st = SC_ERR_ARG;
        goto done;
    }
    pf->warmup = o->warmup;
    pf->target = o->target;
    sc_run_opts co = *ro;
    co.pass_cpu = !o->wall && sc_profile_cpu_clock(ro);
    pf->clock_cpu = co.pass_cpu;
    ro = &co;
    /* The kinds the program lacks, from the same order fused or split,
     * whose steps run beside the program's in every round. */
    int bw = has_op(pg, SC_OP_BW), split = has_op(pg, SC_OP_B);
    if (bw != split) {
        char why[256];
        if ((st = variant(pg, !split, &var, why, sizeof why)) != SC_OK) {
            snprintf(err, errlen, "profile: the %s variant of the program: %s",
                     split ? "fused" : "split", why);
            goto done;
        }
        pf->calibrated = split ? 2 : 1;
    }
    if ((st = rounds(pf, pg, var, ro, o, &sm, &rl, err, errlen)) != SC_OK ||
        (st = keep_median(pf, &rl)) != SC_OK)
        goto done;
    sc_model_cfg lc = ro->model;
    lc.lengths = sc_prog_lengths(pg); /* the sizes of its transfers and records */
    if ((st = sc_model_new(&lc, S, sc_prog_microbatches(pg), &md, err, errlen)) != SC_OK)
        goto done;
    if ((st = summarize(pf, pg, &sm, md)) != SC_OK ||
        (st = sc_samples_fit_tok(&sm, sc_prog_length_ref(pg), &pf->costs)) != SC_OK ||
        (st = cost_program(pf, pg)) != SC_OK ||
        (st = sc_simulate_costs(pg, pf->cost_prog, &pf->predicted)) != SC_OK) {
        snprintf(err, errlen, "profile: %s", st == SC_ERR_NOMEM ? "out of memory"
                                             : pf->cost_prog ? sc_errmsg(pg) : "no costs");
        goto done;
    }
    /* What the cost file says about where it was measured. */
    sc_costs *c = &pf->costs;
    const sc_model_cfg *mc = &ro->model;
    const sc_cost_int sizes[] = {
#define X(name) {#name, mc->name},
        SC_MODEL_SIZES(X)
#undef X
    };
    memcpy(pf->model, sizes, sizeof sizes);
    machine_name(pf->run, pf->machine, sizeof pf->machine);
    c->recipe = recipe;
    c->backend = ro->backend;
    c->transport = pf->run->transport;
    c->machine = pf->machine;
    c->model = pf->model;
    c->nmodel = SC_MODEL_NSIZES;
    c->unit_bytes = pf->run->unit_bytes;
    c->mpi = pf->run->mpi;
    c->m = sc_prog_microbatches(pg);
    c->steps = pf->steps;
    c->warmup = pf->warmup;
    double *x = malloc((size_t)pf->steps * sizeof(double));
    if (!x) {
        st = SC_ERR_NOMEM;
        goto done;
    }
    memcpy(x, pf->step_times, (size_t)pf->steps * sizeof(double));
    c->step = sc_stat_of(x, pf->steps);
    c->step.median = pf->run->step_time_s; /* the step kept (the lower middle one when even) */
    free(x);
    c->predicted_step = pf->predicted->step;
done:
    if (st && !err[0])
        snprintf(err, errlen, "out of memory");
    sc_samples_free(&sm);
    sc_model_free(md);
    sc_prog_free(var);
    for (int i = 0; i < rl.n; i++)
        sc_run_result_free(rl.r[i]);
    free(rl.r);
    if (st) {
        sc_profile_free(pf);
        pf = NULL;
    }
    *out = pf;
    return st;
}

void sc_profile_free(sc_profile *p)
{
    if (!p)
        return;
    sc_costs_free(&p->costs);
    sc_run_result_free(p->run);
    sc_sim_free(p->predicted);
    sc_prog_free(p->cost_prog);
    free(p->step_times);
    free(p->unstable);
    free(p);
}
