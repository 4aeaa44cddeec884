/*
 * profile_samples.c — a profile's samples (profile_impl.h): each timed
 * step's passes, transfers, host copies and collectives from the executor's
 * timestamps, kept in step order, and how well they know their medians
 * (precision.h).
 */
#include "profile_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precision.h"

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
            add(sm, size_slot(sm, w, SC_SAMPLES_COLL), fmax(end - start, 0));
        for (int d = 0; d < P; d++)
            prev[d] = at[d]++;
    }
    free(at);
    free(prev);
}

void sc_samples_collect(samples *sm, const sc_prog *pg, const sc_sim *ms, const double *cpu,
                        const sc_model *md)
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
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++) {
            size_t g = ms->offset[d] + k;
            double t0 = ms->t0[g], t1 = ms->t1[g];
            if (!isfinite(t0) || !isfinite(t1))
                continue;
            int op = in[k].op;
            /* A pass on the device's thread: the time that thread ran it. */
            double run = cpu && isfinite(cpu[g]) ? fmin(t1 - t0, fmax(cpu[g], 0)) : t1 - t0;
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
                add(sm, &sm->vocab[sc_op_vocab_index(op)][d], run);
                continue;
            case SC_OPC_OPTIM: add(sm, &sm->kind[SC_COST_OPT][d], run); continue;
            case SC_OPC_TR: continue; /* a recomputation: F again, timed by F's cost */
            case SC_OPC_GATHER: case SC_OPC_SCATTER: continue; /* FSDP: no data-parallel group in a run */
            case SC_OPC_COMM: { /* timed at the receive, with its send */
                if (!sc_op_has(op, SC_OPF_IN))
                    continue;
                size_t s = send[((size_t)in[k].dir * (size_t)S + (size_t)in[k].stage) *
                                (size_t)m + (size_t)in[k].mb];
                if (s == (size_t)-1 || !isfinite(ms->t0[s]) || !isfinite(ms->t1[s]))
                    continue;
                /* From the later post to the earlier observed end. */
                double t = fmin(t1, ms->t1[s]) - fmax(t0, ms->t0[s]);
                double xb = (double)sc_model_boundary_bytes(md, in[k].mb); /* mb's size */
                add(sm, size_slot(sm, xb, SC_SAMPLES_XFER), fmax(t, 0));
                continue;
            }
            case SC_OPC_LINK: {
                double b = (double)in[k].frac / SC_FRAC_ONE *
                           (double)sc_model_record_bytes(md, in[k].stage, in[k].mb);
                add(sm, size_slot(sm, round(b), sc_op_has(op, SC_OPF_OUT)), t1 - t0);
                continue;
            }
            case SC_OPC_COLL: case SC_OPC_NONE: continue; /* collectives: collect_colls */
            case SC_OPC_TFB: continue; /* a pair: its halves' costs are not apart */
            }
            /* A microbatch of its own length: its time at the reference
             * length, as the costs are (docs/lengths.md#costs-and-bytes). */
            const double *len = sc_prog_lengths(pg);
            if (len && kind <= SC_COST_W && sc_prog_slices(pg) == 1) /* the per-token fit's */
                sc_samples_add_tok(sm, kind, in[k].stage, len[in[k].mb % sc_prog_microbatches(pg)],
                                   run);
            double ref = sc_prog_pass_time(pg, op, in[k].stage, -1);
            if (sc_prog_lengths(pg) && ref > 0)
                run *= ref / sc_prog_pass_time(pg, op, in[k].stage, in[k].mb);
            add(sm, &sm->kind[kind][in[k].stage], run);
        }
    }
    free(send);
    collect_colls(sm, pg, ms);
}

sc_status sc_samples_new(samples *sm, int P, int S)
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
    for (int k = 0; k < 3; k++)
        if (!(sm->tok[k] = calloc((size_t)S, sizeof(tokpts))))
            return SC_ERR_NOMEM;
    return SC_OK;
}

static void vec_free(vec *x)
{
    free(x->v);
    free(x->end);
}

void sc_samples_free(samples *sm)
{
    for (int k = 0; k < SC_COST_KINDS; k++) {
        int n = k == SC_COST_OPT ? sm->P : sm->S;
        for (int i = 0; sm->kind[k] && i < n; i++)
            vec_free(&sm->kind[k][i]);
        free(sm->kind[k]);
    }
    for (int k = 0; k < SC_COST_VOCAB; k++) {
        for (int d = 0; sm->vocab[k] && d < sm->P; d++)
            vec_free(&sm->vocab[k][d]);
        free(sm->vocab[k]);
    }
    for (int k = 0; k < 3; k++) {
        for (int s = 0; sm->tok[k] && s < sm->S; s++)
            free(sm->tok[k][s].L), free(sm->tok[k][s].t);
        free(sm->tok[k]);
    }
    for (int i = 0; i < sm->nsz; i++)
        vec_free(&sm->sz[i].t);
    free(sm->sz);
}

/* Figure i of sm (kinds by stage, OPTIM by device, the vocabulary passes
 * by device, then the sizes) with its name; NULL past the last. */
static vec *figure(const samples *sm, int i, char *what, size_t len)
{
    for (int k = 0; k < SC_COST_KINDS; k++) {
        int n = k == SC_COST_OPT ? sm->P : sm->S;
        if (i < n) {
            snprintf(what, len, "%s of %s%d", sc_cost_keys[k], k == SC_COST_OPT ? "d" : "s", i);
            return &sm->kind[k][i];
        }
        i -= n;
    }
    for (int k = 0; k < SC_COST_VOCAB; k++) {
        if (i < sm->P) {
            snprintf(what, len, "%s of d%d", sc_cost_vocab_keys[k], i);
            return &sm->vocab[k][i];
        }
        i -= sm->P;
    }
    if (i >= sm->nsz)
        return NULL;
    const sized *z = &sm->sz[i];
    snprintf(what, len, "%s of %.0f bytes%s",
             z->to_host == SC_SAMPLES_XFER   ? "transfers"
             : z->to_host == SC_SAMPLES_COLL ? "collectives"
                                             : "host copies",
             z->bytes, z->to_host == 1 ? " to the host" : z->to_host == 0 ? " back" : "");
    return &sm->sz[i].t;
}

void sc_samples_mark(samples *sm)
{
    char what[64];
    sm->steps++;
    vec *x;
    for (int i = 0; (x = figure(sm, i, what, sizeof what)); i++) {
        if (x->capend < sm->steps) {
            int cap = x->capend ? 2 * x->capend : 16;
            while (cap < sm->steps)
                cap *= 2;
            int *e = realloc(x->end, (size_t)cap * sizeof *e);
            if (!e) {
                sm->bad = 1;
                return;
            }
            x->end = e;
            x->capend = cap;
        }
        while (x->nend < sm->steps) /* a figure first seen now: empty steps before */
            x->end[x->nend++] = x->n;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_unstable(const void *a, const void *b)
{
    const sc_unstable *x = a, *y = b;
    double rx = x->half / x->median, ry = y->half / y->median;
    return rx > ry ? -1 : rx < ry;
}

int sc_samples_unstable(const samples *sm, double target, double step, sc_unstable **out,
                        int *n)
{
    char what[64];
    int most = 0, cnt = 0, cap = 0;
    const vec *x;
    *out = NULL;
    *n = 0;
    for (int i = 0; (x = figure(sm, i, what, sizeof what)); i++)
        most = x->n > most ? x->n : most;
    double *scratch = malloc(((size_t)most + SC_PRECISION_B) * sizeof(double));
    double *sorted = malloc(((size_t)most + 1) * sizeof(double));
    sc_unstable *u = NULL;
    int bad = !scratch || !sorted;
    for (int i = 0; !bad && (x = figure(sm, i, what, sizeof what)); i++) {
        if (x->n < 1)
            continue;
        memcpy(sorted, x->v, (size_t)x->n * sizeof(double));
        qsort(sorted, (size_t)x->n, sizeof(double), cmp_double);
        double med = sorted[(x->n - 1) / 2];
        double half = sc_median_precision(x->v, x->n, x->end, x->nend, scratch);
        double per_step = x->nend ? (double)x->n / x->nend : 1;
        if (!(half > target * med && half > SC_PROFILE_FLOOR_S &&
              half * per_step > SC_PROFILE_SHARE * target * step))
            continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 8;
            sc_unstable *v = realloc(u, (size_t)cap * sizeof *v);
            if (!v) {
                bad = 1;
                break;
            }
            u = v;
        }
        sc_unstable *e = &u[cnt++];
        snprintf(e->what, sizeof e->what, "%s", what);
        e->median = med;
        e->half = half;
        e->iqr = (sorted[(3 * (x->n - 1)) / 4] - sorted[(x->n - 1) / 4]) / med;
        e->n = x->n;
    }
    free(scratch);
    free(sorted);
    if (bad) {
        free(u);
        return -1;
    }
    if (cnt)
        qsort(u, (size_t)cnt, sizeof *u, cmp_unstable);
    *out = u;
    *n = cnt;
    return 0;
}
