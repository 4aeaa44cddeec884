/*
 * ptrace_costs.c — the cost file of the spans read from traces (ptrace.h,
 * ptrace.c): steps numbered by sorting, transfers and their consumers found
 * by binary search, every pass of the spans sorted by device and time: n
 * log n in the spans, whatever the number of devices or steps.
 */
#include "ptrace_impl.h"
#include "errbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"
#include "readfile.h"

static const pt_span *find(const pt_span *sp, int n, int kind, int stage, int mb, int step)
{
    pt_span key = {.kind = kind, .stage = stage, .mb = mb, .step = step, .dev = -1, .ts = -INFINITY};
    int lo = 0, hi = n;
    while (lo < hi) { /* the first span not before key */
        int mid = (lo + hi) / 2;
        if (sc_pt_cmp_action(&sp[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const pt_span *p = lo < n ? &sp[lo] : NULL;
    return p && p->kind == kind && p->stage == stage && p->mb == mb && p->step == step ? p : NULL;
}

/* An overlapped pair's sample: its stages (F's, the backward's), whether
 * the backward is a full B, its time. */
typedef struct pair_x {
    int f, b, full;
    double s;
} pair_x;

/* Whether pass p waited for a receive first: one posted inside it (a
 * single-stage schedule), or its RECV action (the runtime's). */
static int received(const pt_span *p, const pt_span *bykey, int n)
{
    if (p->recv || p->kind == PT_W)
        return p->recv; /* W reads only what its stage kept */
    if (p->kind == PT_FB)
        return find(bykey, n, PT_RECV_F, p->stage, p->mb, p->step) ||
               find(bykey, n, PT_RECV_B, p->stage2, p->mb2, p->step);
    return find(bykey, n, p->kind == PT_F ? PT_RECV_F : PT_RECV_B, p->stage, p->mb, p->step) != NULL;
}

/* The CPU's time of pass sp[i] in seconds (ptrace.h): from the end of
 * its wait to the rank's next pass, less the instructions of their own
 * between; sp by device and time, bykey by action. */
static double cpu_time(const pt_span *sp, int i, const pt_span *bykey, int n)
{
    const pt_span *p = &sp[i];
    double start = p->ts;
    if (received(p, bykey, n))
        start = isfinite(p->first) ? p->first : p->end; /* it waited first */
    double end = p->end, waits = 0; /* GPipe's spans end where the pass does */
    for (int j = i + 1; p->src != PT_SRC_GPIPE && j < n && sp[j].dev == p->dev && sp[j].step == p->step; j++) {
        if (pt_pass(sp[j].kind)) {
            end = sp[j].ts;
            break;
        }
        if (pt_apart(sp[j].kind)) /* a wait, FSDP's actions: instructions of their own */
            waits += sp[j].end - sp[j].ts;
        end = sp[j].end > end ? sp[j].end : end;
    }
    double s = (end - start - waits) * 1e-6;
    return s > 0 ? s : 0;
}

/* The samples of the passes (seconds): x[kind * S + stage] gets one per
 * pass, pairs one each: a pass that launched kernels, from its first
 * kernel's start to its last's end on the GPU (the gaps between are the
 * launches' time, the wait for a receive comes before the first); one that
 * launched none, its CPU time (ptrace.h). sp by device and time, bykey by
 * action. */
static void pass_samples(const pt_span *sp, const pt_span *bykey, int n, double **x, int *nx,
                         int S, pair_x *pairs, int *npairs)
{
    for (int i = 0; i < n; i++) {
        const pt_span *p = &sp[i];
        if (!pt_pass(p->kind) || p->step < 0)
            continue;
        double s = p->kfirst <= p->klast ? (p->klast - p->kfirst) * 1e-6 : cpu_time(sp, i, bykey, n);
        int k = p->kind * S + p->stage;
        x[k][nx[k]++] = s;
        if (p->kind == PT_FB)
            pairs[(*npairs)++] = (pair_x){p->stage, p->stage2, p->kind2 == PT_B, s};
    }
}

/* Transfers: where both posts launched NCCL's kernels, from the later
 * kernel's start to the end of the receive's on the GPU; else from the
 * later post to the consumer's first operator, where the consumer started
 * before the SEND was posted. */
static sc_stat transfers(const pt_span *bykey, int n, double *x)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        const pt_span *s = &bykey[i];
        if (s->kind != PT_SEND_F && s->kind != PT_SEND_B)
            continue;
        int fwd = s->kind == PT_SEND_F, to = fwd ? s->stage + 1 : s->stage - 1;
        const pt_span *r = find(bykey, n, fwd ? PT_RECV_F : PT_RECV_B, to, s->mb, s->step);
        if (r && s->nfirst <= s->nlast && r->nfirst <= r->nlast) {
            double d = (r->nlast - (s->nfirst > r->nfirst ? s->nfirst : r->nfirst)) * 1e-6;
            if (d >= 0)
                x[k++] = d;
            continue;
        }
        const pt_span *c = find(bykey, n, fwd ? PT_F : PT_I, to, s->mb, s->step);
        if (!fwd && !c)
            c = find(bykey, n, PT_B, to, s->mb, s->step);
        /* the receiver waited from its span's start (a single-stage schedule's Python
           span starts after its wait: from the post of its receive) */
        if (!r || !c || !((c->src == PT_SRC_PY ? r->ts : c->ts) < s->end) || !isfinite(c->first))
            continue;
        double d = (c->first - (s->ts > r->ts ? s->ts : r->ts)) * 1e-6;
        if (d >= 0)
            x[k++] = d;
    }
    return sc_stat_of(x, k);
}

/* FSDP's collectives where FSDP was on (an UNSHARD gathered): each
 * UNSHARD span (the all-gather, which gloo runs inside it; on a GPU its
 * launch), each REDUCE_GRAD with its WAIT_REDUCE_GRAD (the
 * reduce-scatter), in seconds. bykey by action. */
static sc_status fsdp_costs(const sc_ptrace *t, sc_costs *c, const pt_span *bykey, int n)
{
    if (!t->fsdp)
        return SC_OK;
    double *x = sc_malloc((size_t)(n ? n : 1) * sizeof *x);
    if (!x)
        return SC_ERR_NOMEM;
    for (int which = 0; which < 2; which++) {
        int k = 0;
        for (int i = 0; i < n; i++) {
            const pt_span *p = &bykey[i];
            if (p->step < 0 || p->kind != (which ? PT_REDUCE : PT_UNSHARD))
                continue;
            const pt_span *w = which ? find(bykey, n, PT_WAIT_REDUCE, p->stage, -1, p->step) : NULL;
            x[k++] = (p->end - p->ts + (w ? w->end - w->ts : 0)) * 1e-6;
        }
        *(which ? &c->reduce : &c->gather) = sc_stat_of(x, k);
    }
    sc_free(x);
    return SC_OK;
}

void sc_pt_step_times(const pt_span *sp, int n, int steps, double *x, double *lo, double *hi)
{
    for (int k = 0; k < steps; k++)
        lo[k] = INFINITY, hi[k] = -INFINITY;
    for (int i = 0; i < n; i++) {
        int k = sp[i].step;
        if (k < 0 || k >= steps)
            continue;
        lo[k] = sp[i].ts < lo[k] ? sp[i].ts : lo[k];
        double end = fmax(sp[i].end, fmax(sp[i].klast, sp[i].nlast)); /* -INFINITY: none */
        hi[k] = end > hi[k] ? end : hi[k];
    }
    for (int k = 0; k < steps; k++)
        x[k] = (hi[k] - lo[k]) * 1e-6;
}

static int cmp_dev(const void *a, const void *b)
{
    const pt_dev *x = a, *y = b;
    int rx = x->rank >= 0 ? x->rank : x->file, ry = y->rank >= 0 ? y->rank : y->file;
    if (rx != ry)
        return rx - ry;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Numbers the devices that hold spans by rank (or file), then pid:
 * sorted, each keeps its old index in id, which maps the spans' devices to
 * the new numbers. A single-stage schedule's stage is its device. */
static sc_status order_devices(sc_ptrace *t)
{
    int *map = sc_calloc((size_t)(t->ndev ? t->ndev : 1), sizeof *map);
    if (!map)
        return SC_ERR_NOMEM;
    for (int i = 0; i < t->n; i++)
        map[t->sp[i].dev] = 1;
    int used = 0;
    for (int e = 0; e < t->ndev; e++)
        if (map[t->dv[e].id])
            t->dv[used++] = t->dv[e];
    t->ndev = used;
    qsort(t->dv, (size_t)t->ndev, sizeof *t->dv, cmp_dev);
    for (int e = 0; e < t->ndev; e++)
        map[t->dv[e].id] = e;
    for (int e = 0; e < t->ndev; e++)
        t->dv[e].id = e;
    for (int i = 0; i < t->n; i++) {
        pt_span *p = &t->sp[i];
        p->dev = map[p->dev];
        if (p->stage < 0)
            p->stage = p->dev;
    }
    sc_free(map);
    return SC_OK;
}

/* The first span of stage s, for messages (sp: any order). */
static const pt_span *span_of(const sc_ptrace *t, int s)
{
    for (int i = 0; i < t->n; i++)
        if (t->sp[i].stage == s)
            return &t->sp[i];
    return NULL;
}

/* Stage s's times: tf from F; tb, tw from I, W; tbw from B; with B only,
 * half of it as tb and as tw (0 then: a guess). */
static int stage_stats(sc_costs *c, int s, double **x, const int *nx)
{
    int S = c->S, nf = nx[PT_F * S + s], ni = nx[PT_I * S + s], nw = nx[PT_W * S + s],
        nb = nx[PT_B * S + s];
    c->kind[SC_COST_F][s] = sc_stat_of(x[PT_F * S + s], nf);
    if (nb)
        c->kind[SC_COST_BW][s] = sc_stat_of(x[PT_B * S + s], nb);
    if (ni) {
        c->kind[SC_COST_B][s] = sc_stat_of(x[PT_I * S + s], ni);
        c->kind[SC_COST_W][s] = sc_stat_of(x[PT_W * S + s], nw);
        return 1;
    }
    sc_stat h = c->kind[SC_COST_BW][s];
    h.median /= 2, h.spread /= 2;
    c->kind[SC_COST_B][s] = c->kind[SC_COST_W][s] = h;
    return 0;
}

/* Per stage: its times (stage_stats), or the refusal that names a span of
 * the stage and what is missing; a stage with B only is noted. */
static sc_status stage_costs(const sc_ptrace *t, sc_costs *c, double **x, const int *nx,
                             char *note, size_t notelen, char *err, size_t errlen)
{
    int S = c->S;
    for (int s = 0; s < S; s++) {
        int nf = nx[PT_F * S + s], ni = nx[PT_I * S + s], nw = nx[PT_W * S + s],
            nb = nx[PT_B * S + s];
        if (nf && (ni > 0) == (nw > 0) && (ni || nb)) {
            if (!stage_stats(c, s, x, nx) && !note[0])
                snprintf(note, notelen, "stage %d ran its backward as B only (no I and W): its tb "
                         "and tw are half of B each, a guess (a schedule that splits the backward, "
                         "zb-h1 or zb-v, measures them)", s);
            continue;
        }
        const pt_span *p = span_of(t, s);
        char a[80], what[160];
        if (!p) /* S is one more than the largest stage seen */
            return sc_errbuf(err, errlen, "%s%s: no span of stage %d, though stage %d has spans: "
                             "give the trace of every rank", t->files[0], t->nfiles > 1 ? ", ..." : "",
                             s, S - 1);
        int pp = p->src == PT_SRC_PP;
        if (!nf && pp)
            snprintf(what, sizeof what, "no F span (PP:%dF<microbatch>) outside an overlapped "
                     "pair: its forward pass cannot be timed", s);
        else if (!nf)
            snprintf(what, sizeof what, "no %s span: its forward pass cannot be timed",
                     p->src == PT_SRC_GPIPE ? "Forward <microbatch>" : "forward_one_chunk");
        else if (ni || nw)
            snprintf(what, sizeof what, "%s spans but no %s (PP:%d%s<microbatch>): its backward "
                     "pass is not all there", ni ? "I" : "W", ni ? "W" : "I", s, ni ? "W" : "I");
        else if (pp)
            snprintf(what, sizeof what, "no backward span (PP:%dB<microbatch>, or PP:%dI and PP:%dW) "
                     "outside an overlapped pair: its backward pass cannot be timed", s, s, s);
        else
            snprintf(what, sizeof what, "no %s span: its backward pass cannot be timed",
                     p->src == PT_SRC_GPIPE ? "Backward <microbatch>" : "backward_one_chunk");
        return sc_errbuf(err, errlen, "%s: event %d (%s): stage %d has %s", t->files[p->file],
                         p->event, sc_pt_span_name(p, a, sizeof a), s, what);
    }
    return SC_OK;
}
/* tfb of every stage from the overlapped pairs (OVERLAP_F_B): a pair of F
 * of stage f and a backward of stage b saves g = tf[f] + tb[b] (+ tw[b]
 * for a full B) - its time, which the simulator splits evenly between the
 * two stages (interp/ir/pair.h); a stage's tfb is tf + tb less the median
 * saving of its pairs (a stage in none: tf + tb, no saving). */
static sc_status pair_costs(sc_costs *c, const pair_x *pairs, int np)
{
    int S = c->S;
    if (!np)
        return SC_OK;
    double *x = sc_malloc((size_t)2 * (size_t)np * sizeof *x);
    if (!x || !(c->tfb = malloc((size_t)S * sizeof *c->tfb))) {
        sc_free(x);
        return SC_ERR_NOMEM;
    }
    for (int s = 0; s < S; s++) {
        int k = 0;
        double tf = c->kind[SC_COST_F][s].median, tb = c->kind[SC_COST_B][s].median;
        for (int i = 0; i < np; i++) {
            const pair_x *q = &pairs[i];
            if (q->f != s && q->b != s)
                continue;
            double g = c->kind[SC_COST_F][q->f].median + c->kind[SC_COST_B][q->b].median +
                       (q->full ? c->kind[SC_COST_W][q->b].median : 0) - q->s;
            x[k++] = g;
            if (q->f == s && q->b == s)
                x[k++] = g;
        }
        sc_stat g = sc_stat_of(x, k);
        double t = k ? tf + tb - g.median : tf + tb;
        c->tfb[s] = (sc_stat){t > 0 ? t : 0, g.spread, k};
    }
    sc_free(x);
    return SC_OK;
}

/* Fills c from the numbered spans (sp by action and step on entry). */
static sc_status fill(sc_ptrace *t, sc_costs *c, int steps, int m, char *note, size_t notelen,
                      char *err, size_t errlen)
{
    int n = t->n, S = c->S, nk = (PT_FB + 1) * S, np = 0;
    double **x = sc_calloc((size_t)nk, sizeof *x);
    double *buf = sc_calloc((size_t)2 * (size_t)n + 3 * (size_t)steps, sizeof *buf);
    int *nx = sc_calloc((size_t)nk, sizeof *nx);
    pt_span *bytime = sc_calloc((size_t)n, sizeof *bytime);
    pair_x *pairs = sc_calloc((size_t)n, sizeof *pairs);
    sc_status st = SC_ERR_NOMEM;
    if (x && buf && nx && bytime && pairs) {
        for (int i = 0; i < n; i++) /* each pass's list gets room for its count */
            if (pt_pass(t->sp[i].kind))
                nx[t->sp[i].kind * S + t->sp[i].stage]++;
        for (int k = 0, at = 0; k < nk; at += nx[k], nx[k++] = 0)
            x[k] = buf + at;
        if (n > 0) { /* NULL and 0 are undefined for memcpy and qsort */
            memcpy(bytime, t->sp, (size_t)n * sizeof *bytime);
            qsort(bytime, (size_t)n, sizeof *bytime, sc_pt_cmp_dev_time);
        }
        pass_samples(bytime, t->sp, n, x, nx, S, pairs, &np);
        st = stage_costs(t, c, x, nx, note, notelen, err, errlen);
    }
    if (st == SC_OK)
        st = pair_costs(c, pairs, np);
    if (st == SC_OK)
        st = fsdp_costs(t, c, t->sp, n);
    if (st == SC_OK) {
        c->comm = transfers(t->sp, n, buf + n);
        if (c->comm.n == 0) /* no consumer waited for a transfer: none seen */
            c->comm = (sc_stat){0, NAN, 0};
        sc_pt_step_times(t->sp, n, steps, buf + n, buf + n + steps, buf + n + 2 * steps);
        c->step = sc_stat_of(buf + n, steps);
        c->m = m, c->steps = steps, c->warmup = -1;
        c->what = t->single ? "torch.profiler trace (PyTorch's single-stage schedule)"
                            : "torch.profiler trace (PyTorch's _PipelineScheduleRuntime)";
        c->files = (const char *const *)t->files, c->nfiles = t->nfiles;
        c->backend = t->backend[0] ? t->backend : NULL;
        c->machine = t->host[0] ? t->host : NULL;
        c->devices_as = "ranks";
        c->clock = t->gpu.linked ? "gpu kernels" : "cpu";
        c->fsdp = t->fsdp;
    }
    sc_free(x), sc_free(buf), sc_free(nx), sc_free(bytime), sc_free(pairs);
    return st;
}

/* The time limit's refusal, after a phase of sc_ptrace_costs. */
static sc_status out_of_time(const sc_ptrace *t, double deadline, char *err, size_t errlen)
{
    if (!sc_deadline_passed(deadline))
        return SC_OK;
    snprintf(err, errlen, "%s%s: time limit reached computing the costs", t->files[0],
             t->nfiles > 1 ? ", ..." : "");
    return SC_ERR_LIMIT;
}

sc_status sc_ptrace_costs(sc_ptrace *t, sc_costs *c, double deadline, char *note, size_t notelen,
                          char *err, size_t errlen)
{
    note[0] = 0;
    memset(c, 0, sizeof *c);
    if (t->n == 0)
        return sc_errbuf(err, errlen, "%s%s: no span of a pass: PyTorch's _PipelineScheduleRuntime "
                         "names each action (PP:1F0) and ScheduleGPipe each pass (Forward 0), but "
                         "Schedule1F1B names none: record a single-stage schedule with "
                         "torch.profiler.profile(with_stack=True), whose Python spans "
                         "forward_one_chunk and backward_one_chunk time each pass",
                         t->nfiles ? t->files[0] : "trace", t->nfiles > 1 ? ", ..." : "");
    int steps = 0, S = 0, m = 0, P = 0;
    /* Each phase is n log n at most: the deadline is checked between them.
     * The kernels are linked to the spans on the devices as read. */
    sc_status st = sc_pt_gpu_join(t);
    if (st == SC_OK)
        st = out_of_time(t, deadline, err, errlen);
    if (st == SC_OK)
        st = order_devices(t);
    for (int i = 0; i < t->n; i++) {
        const pt_span *p = &t->sp[i];
        S = p->stage + 1 > S ? p->stage + 1 : S;
        S = p->stage2 + 1 > S ? p->stage2 + 1 : S;
        m = p->mb + 1 > m ? p->mb + 1 : m;
        m = p->mb2 + 1 > m ? p->mb2 + 1 : m;
        P = p->dev + 1 > P ? p->dev + 1 : P;
    }
    if (st == SC_OK)
        st = sc_pt_number_steps(t, S, &steps, err, errlen);
    if (st == SC_OK)
        st = out_of_time(t, deadline, err, errlen);
    if (st != SC_OK)
        return st;
    if ((st = sc_costs_init(c, P, S)) != SC_OK)
        return st;
    if (!(c->placement = malloc((size_t)S * sizeof *c->placement))) {
        sc_costs_free(c);
        return SC_ERR_NOMEM;
    }
    for (int s = 0; s < S; s++)
        c->placement[s] = 0;
    for (int i = 0; i < t->n; i++)
        c->placement[t->sp[i].stage] = t->sp[i].dev;
    if ((st = fill(t, c, steps, m, note, notelen, err, errlen)) == SC_OK)
        st = out_of_time(t, deadline, err, errlen);
    if (st == SC_OK)
        sc_pt_gpu_note(t, note, notelen);
    if (st != SC_OK)
        sc_costs_free(c);
    return st;
}
