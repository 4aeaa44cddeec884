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
#include "model/model.h"

/* A growable list of samples. */
typedef struct vec {
    double *v;
    int n, cap;
} vec;

static int push(vec *x, double t)
{
    if (x->n == x->cap) {
        int cap = x->cap ? 2 * x->cap : 16;
        double *v = realloc(x->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = t;
    return 0;
}

/* Samples by size: transfers, or host copies of one direction. */
typedef struct sized {
    double bytes;
    int to_host;
    vec t;
} sized;

typedef struct samples {
    int P, S;
    vec *kind[SC_COST_KINDS]; /* [S] each (optim: [P], per device) */
    vec *vocab[SC_COST_VOCAB]; /* [P] each: S, T, E, EW */
    sized *sz;
    int nsz, capsz;
    int bad;                  /* out of memory */
} samples;

static vec *size_slot(samples *sm, double bytes, int to_host)
{
    for (int i = 0; i < sm->nsz; i++)
        if (sm->sz[i].bytes == bytes && sm->sz[i].to_host == to_host)
            return &sm->sz[i].t;
    if (sm->nsz == sm->capsz) {
        int cap = sm->capsz ? 2 * sm->capsz : 8;
        sized *z = realloc(sm->sz, (size_t)cap * sizeof *z);
        if (!z)
            return NULL;
        sm->sz = z;
        sm->capsz = cap;
    }
    sm->sz[sm->nsz] = (sized){.bytes = bytes, .to_host = to_host};
    return &sm->sz[sm->nsz++].t;
}

static void add(samples *sm, vec *x, double t)
{
    if (!x)
        sm->bad = 1;
    else if (t >= 0 && push(x, t) != 0)
        sm->bad = 1;
}

/* Host copies are marked in sized.to_host: 1 to the host, 0 back; transfers
 * use -1, collectives -2 (their bytes: factor · bytes, sc_prog_coll_weight). */
#define XFER (-1)
#define COLL (-2)

/* The collectives of a step: instance i is the i-th collective of every
 * device (the runtime's collectives are over all devices). It starts when
 * its last member has posted it and finished the one before, and ends
 * when the first member sees it complete; the simulator's collective
 * takes that long (latency + weight / bandwidth). */
static void collect_colls(samples *sm, const sc_prog *pg, const sc_sim *ms)
{
    int P = sc_prog_devices(pg);
    size_t *at = calloc((size_t)P, sizeof(size_t)), *prev = calloc((size_t)P, sizeof(size_t));
    if (!at || !prev) {
        sm->bad = 1;
        free(at);
        free(prev);
        return;
    }
    for (int d = 0; d < P; d++)
        prev[d] = (size_t)-1;
    for (;;) {
        double start = -INFINITY, end = INFINITY, w = 0;
        int all = 1, skip = 0;
        for (int d = 0; d < P && all; d++) {
            size_t n;
            const sc_instr *in = sc_prog_stream(pg, d, &n);
            while (at[d] < n && !sc_op_is_coll(in[at[d]].op))
                at[d]++;
            if (at[d] >= n) {
                all = 0;
                break;
            }
            size_t g = ms->offset[d] + at[d];
            start = fmax(start, ms->t0[g]);
            if (prev[d] != (size_t)-1)
                start = fmax(start, ms->t1[ms->offset[d] + prev[d]]);
            end = fmin(end, ms->t1[g]);
            w = sc_prog_coll_weight(pg, &in[at[d]]); /* the same on every member */
            skip |= (in[at[d]].flags & SC_IF_ROLLBACK) != 0; /* skipped or redone: not timed */
        }
        if (!all)
            break;
        if (!skip && isfinite(start) && isfinite(end))
            add(sm, size_slot(sm, w, COLL), fmax(end - start, 0));
        for (int d = 0; d < P; d++)
            prev[d] = at[d]++;
    }
    free(at);
    free(prev);
}

/* The samples of one timed step of pg (measured: its timing). */
static void collect(samples *sm, const sc_prog *pg, const sc_sim *ms, const sc_model *md)
{
    /* Keys over the streams' microbatch numbers (m·steps, docs/steps.md). */
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_stream_microbatches(pg);
    size_t K = 2 * (size_t)S * (size_t)m;
    size_t *send = malloc(K * sizeof(size_t));
    if (!send) {
        sm->bad = 1;
        return;
    }
    for (size_t i = 0; i < K; i++)
        send[i] = (size_t)-1;
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++)
            if (sc_op_is_send(in[k].op))
                send[((size_t)in[k].dir * (size_t)S + (size_t)in[k].stage) * (size_t)m +
                     (size_t)in[k].mb] = ms->offset[d] + k;
    }
    double xbytes = (double)sc_model_boundary_bytes(md);
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++) {
            size_t g = ms->offset[d] + k;
            double t0 = ms->t0[g], t1 = ms->t1[g];
            if (!isfinite(t0) || !isfinite(t1))
                continue;
            int op = in[k].op;
            if (in[k].flags & SC_IF_ROLLBACK)
                continue; /* post-validation's rollback path: skipped (no time) or redone */
            /* The sample goes to the cost that times the kind. */
            int kind = SC_COST_F;
            switch (sc_op_cost_of(op)) {
            case SC_OPC_TF: kind = SC_COST_F; break;
            case SC_OPC_TB: kind = SC_COST_B; break;
            case SC_OPC_TW: kind = SC_COST_W; break;
            case SC_OPC_TBW: kind = SC_COST_BW; break;
            case SC_OPC_TS: case SC_OPC_TT: case SC_OPC_TE: case SC_OPC_TEW:
                add(sm, &sm->vocab[sc_op_vocab_index(op)][d], t1 - t0);
                continue;
            case SC_OPC_OPTIM: add(sm, &sm->kind[SC_COST_OPT][d], t1 - t0); continue;
            case SC_OPC_TR: continue; /* a recomputation: F again, timed by F's cost */
            case SC_OPC_GATHER: continue; /* FSDP: no data-parallel group in a run */
            case SC_OPC_COMM: { /* timed at the receive, with its send */
                if (!sc_op_has(op, SC_OPF_IN))
                    continue;
                size_t s = send[((size_t)in[k].dir * (size_t)S + (size_t)in[k].stage) *
                                (size_t)m + (size_t)in[k].mb];
                if (s == (size_t)-1 || !isfinite(ms->t0[s]) || !isfinite(ms->t1[s]))
                    continue;
                /* From the later post to the earlier observed end. */
                double t = fmin(t1, ms->t1[s]) - fmax(t0, ms->t0[s]);
                add(sm, size_slot(sm, xbytes, XFER), fmax(t, 0));
                continue;
            }
            case SC_OPC_LINK: {
                double b = (double)in[k].frac / SC_FRAC_ONE *
                           (double)sc_model_record_bytes(md, in[k].stage);
                add(sm, size_slot(sm, round(b), sc_op_has(op, SC_OPF_OUT)), t1 - t0);
                continue;
            }
            case SC_OPC_COLL: case SC_OPC_NONE: continue; /* collectives: collect_colls */
            case SC_OPC_TFB: continue; /* a pair: its halves' costs are not apart */
            }
            add(sm, &sm->kind[kind][in[k].stage], t1 - t0);
        }
    }
    free(send);
    collect_colls(sm, pg, ms);
}

static sc_status samples_new(samples *sm, int P, int S)
{
    memset(sm, 0, sizeof *sm);
    sm->P = P;
    sm->S = S;
    for (int k = 0; k < SC_COST_KINDS; k++)
        if (!(sm->kind[k] = calloc((size_t)(k == SC_COST_OPT ? P : S), sizeof(vec))))
            return SC_ERR_NOMEM;
    for (int k = 0; k < SC_COST_VOCAB; k++)
        if (!(sm->vocab[k] = calloc((size_t)P, sizeof(vec))))
            return SC_ERR_NOMEM;
    return SC_OK;
}

static void samples_free(samples *sm)
{
    for (int k = 0; k < SC_COST_KINDS; k++) {
        int n = k == SC_COST_OPT ? sm->P : sm->S;
        for (int i = 0; sm->kind[k] && i < n; i++)
            free(sm->kind[k][i].v);
        free(sm->kind[k]);
    }
    for (int k = 0; k < SC_COST_VOCAB; k++) {
        for (int d = 0; sm->vocab[k] && d < sm->P; d++)
            free(sm->vocab[k][d].v);
        free(sm->vocab[k]);
    }
    for (int i = 0; i < sm->nsz; i++)
        free(sm->sz[i].t.v);
    free(sm->sz);
}

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
        if (z->to_host != COLL || z->t.n < 1)
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
    int nx = 0, nh = 0;
    for (int i = 0; i < sm->nsz; i++)
        if (sm->sz[i].to_host != COLL)
            *(sm->sz[i].to_host == XFER ? &nx : &nh) += 1;
    c->xfer = calloc((size_t)nx + 1, sizeof *c->xfer);
    c->host = calloc((size_t)nh + 1, sizeof *c->host);
    if (!c->xfer || !c->host)
        return SC_ERR_NOMEM;
    for (int i = 0; i < sm->nsz; i++) {
        sized *z = &sm->sz[i];
        if (z->to_host == COLL)
            continue;
        sc_cost_size e = {.bytes = z->bytes, .t = sc_stat_of(z->t.v, z->t.n),
                          .to_host = z->to_host == 1};
        if (z->to_host == XFER) {
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

/* warmup + steps runs of prog; the samples of the timed ones into sm, their
 * times into times (when not NULL), the run of median time into *keep. */
static sc_status steps_of(sc_prog *prog, const sc_run_opts *o, int warmup, int steps,
                          samples *sm, double *times, sc_run_result **keep, char *err,
                          size_t errlen)
{
    sc_run_opts oo = *o;
    sc_run_result **rs = calloc((size_t)steps, sizeof *rs);
    sc_model *md = NULL;
    sc_status st = rs ? SC_OK : SC_ERR_NOMEM;
    if (!st)
        st = sc_model_new(&o->model, sc_prog_stages(prog), sc_prog_microbatches(prog), &md, err,
                          errlen);
    for (int i = 0; i < warmup + steps && !st; i++) {
        sc_run_result *r = NULL;
        if ((st = sc_run(prog, &oo, &r, err, errlen)) != SC_OK)
            break;
        if (i < warmup) {
            sc_run_result_free(r);
            continue;
        }
        collect(sm, prog, r->measured, md);
        rs[i - warmup] = r;
    }
    if (!st && sm->bad) {
        snprintf(err, errlen, "out of memory collecting the profile");
        st = SC_ERR_NOMEM;
    }
    if (!st && times) {
        double *sorted = malloc((size_t)steps * sizeof(double));
        if (!sorted) {
            st = SC_ERR_NOMEM;
        } else {
            for (int i = 0; i < steps; i++)
                sorted[i] = times[i] = rs[i]->step_time_s;
            qsort(sorted, (size_t)steps, sizeof(double), cmp_double);
            double med = sorted[(steps - 1) / 2];
            for (int i = 0; i < steps && !*keep; i++)
                if (rs[i]->step_time_s == med) {
                    *keep = rs[i];
                    rs[i] = NULL;
                }
            free(sorted);
        }
    }
    for (int i = 0; rs && i < steps; i++)
        sc_run_result_free(rs[i]);
    free(rs);
    sc_model_free(md);
    return st;
}

sc_status sc_profile_run(sc_prog *pg, const sc_run_opts *o, const char *recipe, int warmup,
                         int steps, sc_profile **out, char *err, size_t errlen)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg);
    sc_profile *pf = calloc(1, sizeof *pf);
    samples sm;
    sc_model *md = NULL;
    sc_prog *var = NULL;
    *out = NULL;
    err[0] = 0;
    sc_status st = pf && samples_new(&sm, P, S) == SC_OK ? SC_OK : SC_ERR_NOMEM;
    if (pf && st) {
        free(pf);
        pf = NULL;
    }
    if (st) {
        snprintf(err, errlen, "out of memory");
        return st;
    }
    if (warmup < 0 || steps < 1) {
        snprintf(err, errlen, "a profile needs at least one timed step (got %d)", steps);
        st = SC_ERR_ARG;
        goto done;
    }
    pf->steps = steps;
    pf->warmup = warmup;
    if (!(pf->step_times = calloc((size_t)steps, sizeof(double)))) {
        st = SC_ERR_NOMEM;
        goto done;
    }
    if ((st = steps_of(pg, o, warmup, steps, &sm, pf->step_times, &pf->run, err, errlen)))
        goto done;
    /* The kinds the program lacks, from the same order fused or split. */
    int bw = has_op(pg, SC_OP_BW), split = has_op(pg, SC_OP_B);
    if (bw != split) {
        char why[256];
        if ((st = variant(pg, !split, &var, why, sizeof why)) != SC_OK) {
            snprintf(err, errlen, "profile: the %s variant of the program: %s",
                     split ? "fused" : "split", why);
            goto done;
        }
        sc_run_opts vo = *o;
        vo.check = 0;
        if ((st = steps_of(var, &vo, 0, steps, &sm, NULL, NULL, err, errlen)) != SC_OK)
            goto done;
        pf->calibrated = split ? 2 : 1;
    }
    if ((st = sc_model_new(&o->model, S, sc_prog_microbatches(pg), &md, err, errlen)) != SC_OK)
        goto done;
    if ((st = summarize(pf, pg, &sm, md)) != SC_OK || (st = cost_program(pf, pg)) != SC_OK ||
        (st = sc_simulate_costs(pg, pf->cost_prog, &pf->predicted)) != SC_OK) {
        snprintf(err, errlen, "profile: %s", st == SC_ERR_NOMEM ? "out of memory"
                                             : pf->cost_prog ? sc_errmsg(pg) : "no costs");
        goto done;
    }
    /* What the cost file says about where it was measured. */
    sc_costs *c = &pf->costs;
    const sc_model_cfg *mc = &o->model;
    const sc_cost_int sizes[] = {
#define X(name) {#name, mc->name},
        SC_MODEL_SIZES(X)
#undef X
    };
    memcpy(pf->model, sizes, sizeof sizes);
    machine_name(pf->run, pf->machine, sizeof pf->machine);
    c->recipe = recipe;
    c->backend = o->backend;
    c->transport = pf->run->transport;
    c->machine = pf->machine;
    c->model = pf->model;
    c->nmodel = SC_MODEL_NSIZES;
    c->unit_bytes = pf->run->unit_bytes;
    c->mpi = pf->run->mpi;
    c->m = sc_prog_microbatches(pg);
    c->steps = steps;
    c->warmup = warmup;
    double *x = malloc((size_t)steps * sizeof(double));
    if (!x) {
        st = SC_ERR_NOMEM;
        goto done;
    }
    memcpy(x, pf->step_times, (size_t)steps * sizeof(double));
    c->step = sc_stat_of(x, steps);
    c->step.median = pf->run->step_time_s; /* the step kept (the lower middle one when even) */
    free(x);
    c->predicted_step = pf->predicted->step;
done:
    if (st && !err[0])
        snprintf(err, errlen, "out of memory");
    samples_free(&sm);
    sc_model_free(md);
    sc_prog_free(var);
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
    free(p);
}
