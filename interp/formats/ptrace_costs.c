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

const char *sc_pt_kind_name(int k)
{
    static const char *const n[] = {"F", "I", "W", "B", "SEND_F", "RECV_F", "SEND_B", "RECV_B",
                                    "WAIT", "other"};
    return n[k];
}

/* Orders spans by action (kind, stage, microbatch), then step (or, before
 * the steps are numbered, device and time): transfers and their consumers
 * are found by bsearch. */
static int cmp_key(const void *a, const void *b)
{
    const pt_span *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    if (x->stage != y->stage)
        return x->stage - y->stage;
    if (x->mb != y->mb)
        return x->mb - y->mb;
    if (x->step != y->step)
        return x->step - y->step;
    if (x->dev != y->dev)
        return x->dev - y->dev;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Orders spans by device, then time. */
static int cmp_time(const void *a, const void *b)
{
    const pt_span *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev - y->dev;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static const pt_span *find(const pt_span *sp, int n, int kind, int stage, int mb, int step)
{
    pt_span key = {.kind = kind, .stage = stage, .mb = mb, .step = step, .dev = -1, .ts = -INFINITY};
    int lo = 0, hi = n;
    while (lo < hi) { /* the first span not before key */
        int mid = (lo + hi) / 2;
        if (cmp_key(&sp[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const pt_span *p = lo < n ? &sp[lo] : NULL;
    return p && p->kind == kind && p->stage == stage && p->mb == mb && p->step == step ? p : NULL;
}

/* The k-th occurrence of an action is in step k: numbers the steps (sp
 * sorted by cmp_key on return) and checks that every action occurs equally
 * often (whole steps) and that a stage runs on one device. */
static sc_status number_steps(sc_ptrace *t, int S, int *steps, char *err, size_t errlen)
{
    pt_span *sp = t->sp;
    int n = t->n, *where = sc_malloc((size_t)S * sizeof *where);
    if (!where)
        return SC_ERR_NOMEM;
    for (int s = 0; s < S; s++)
        where[s] = -1;
    for (int i = 0; i < n; i++) {
        pt_span *p = &sp[i];
        sp[i].step = -1;
        if (p->kind == PT_OTHER)
            continue;
        if (where[p->stage] >= 0 && sp[where[p->stage]].dev != p->dev) {
            const pt_span *q = &sp[where[p->stage]];
            sc_free(where);
            return sc_errbuf(err, errlen, "%s: event %d: stage %d runs on two ranks (also in %s, "
                       "event %d): a stage's actions come from one rank", t->files[p->file],
                       p->event, p->stage, t->files[q->file], q->event);
        }
        where[p->stage] = i;
    }
    sc_free(where);
    qsort(sp, (size_t)n, sizeof *sp, cmp_key); /* steps all -1: by action, device, time */
    *steps = 0;
    for (int i = 0, k = 0; i < n; i++) {
        int same = i > 0 && sp[i - 1].kind == sp[i].kind && sp[i - 1].stage == sp[i].stage &&
                   sp[i - 1].mb == sp[i].mb && sp[i - 1].dev == sp[i].dev;
        k = same ? k + 1 : 0;
        sp[i].step = k;
        if (sp[i].kind == PT_F && k + 1 > *steps) /* the steps: the most of any F */
            *steps = k + 1;
    }
    for (int i = 0; i < n; i++) { /* the last of each action is step steps - 1 */
        const pt_span *p = &sp[i];
        int last = i + 1 == n || sp[i + 1].kind != p->kind || sp[i + 1].stage != p->stage ||
                   sp[i + 1].mb != p->mb || sp[i + 1].dev != p->dev;
        if (last && p->step + 1 != *steps)
            return sc_errbuf(err, errlen, "%s: event %d (PP:%d%s%d): in %d step%s, but the traces hold "
                       "%d: give whole steps (start and stop the profiler between steps)",
                       t->files[p->file], p->event, p->stage, sc_pt_kind_name(p->kind), p->mb,
                       p->step + 1, p->step ? "s" : "", *steps);
    }
    qsort(sp, (size_t)n, sizeof *sp, cmp_key); /* by action, then step */
    return SC_OK;
}

/* The samples of the passes (seconds): x[kind * S + stage] gets one per
 * pass (see ptrace.h for what a pass costs); sp by device and time, bykey
 * by action. */
static void pass_samples(const pt_span *sp, const pt_span *bykey, int n, double **x, int *nx, int S)
{
    for (int i = 0; i < n; i++) {
        const pt_span *p = &sp[i];
        if (p->kind > PT_B)
            continue;
        double start = p->ts;
        if (p->kind != PT_W && /* W reads only what its stage kept */
            find(bykey, n, p->kind == PT_F ? PT_RECV_F : PT_RECV_B, p->stage, p->mb, p->step))
            start = isfinite(p->first) ? p->first : p->end; /* it waited first */
        double end = p->end, waits = 0;
        for (int j = i + 1; j < n && sp[j].dev == p->dev && sp[j].step == p->step; j++) {
            if (sp[j].kind <= PT_B) {
                end = sp[j].ts;
                break;
            }
            if (sp[j].kind == PT_WAIT)
                waits += sp[j].end - sp[j].ts;
            end = sp[j].end;
        }
        double s = (end - start - waits) * 1e-6;
        int k = p->kind * S + p->stage;
        x[k][nx[k]++] = s > 0 ? s : 0;
    }
}

/* Transfers: from the later post to the consumer's first operator, where
 * the consumer started before the SEND was posted. */
static sc_stat transfers(const pt_span *bykey, int n, double *x)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        const pt_span *s = &bykey[i];
        if (s->kind != PT_SEND_F && s->kind != PT_SEND_B)
            continue;
        int fwd = s->kind == PT_SEND_F, to = fwd ? s->stage + 1 : s->stage - 1;
        const pt_span *r = find(bykey, n, fwd ? PT_RECV_F : PT_RECV_B, to, s->mb, s->step);
        const pt_span *c = find(bykey, n, fwd ? PT_F : PT_I, to, s->mb, s->step);
        if (!fwd && !c)
            c = find(bykey, n, PT_B, to, s->mb, s->step);
        if (!r || !c || !(c->ts < s->end) || !isfinite(c->first))
            continue;
        double d = (c->first - (s->ts > r->ts ? s->ts : r->ts)) * 1e-6;
        if (d >= 0)
            x[k++] = d;
    }
    return sc_stat_of(x, k);
}

/* The steps: from the first span's start to the last span's end, over
 * all ranks; lo and hi: room for steps each. One pass over the spans. */
static sc_stat step_times(const pt_span *sp, int n, int steps, double *x, double *lo, double *hi)
{
    for (int k = 0; k < steps; k++)
        lo[k] = INFINITY, hi[k] = -INFINITY;
    for (int i = 0; i < n; i++) {
        int k = sp[i].step;
        if (k < 0 || k >= steps)
            continue;
        lo[k] = sp[i].ts < lo[k] ? sp[i].ts : lo[k];
        hi[k] = sp[i].end > hi[k] ? sp[i].end : hi[k];
    }
    for (int k = 0; k < steps; k++)
        x[k] = (hi[k] - lo[k]) * 1e-6;
    return sc_stat_of(x, steps);
}

static int cmp_dev(const void *a, const void *b)
{
    const pt_dev *x = a, *y = b;
    int rx = x->rank >= 0 ? x->rank : x->file, ry = y->rank >= 0 ? y->rank : y->file;
    if (rx != ry)
        return rx - ry;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Numbers the devices by rank (or file), then pid: sorted, each keeps its
 * old index in id, which maps the spans' devices to the new numbers. */
static sc_status order_devices(sc_ptrace *t)
{
    int *map = sc_malloc((size_t)(t->ndev ? t->ndev : 1) * sizeof *map);
    if (!map)
        return SC_ERR_NOMEM;
    qsort(t->dv, (size_t)t->ndev, sizeof *t->dv, cmp_dev);
    for (int e = 0; e < t->ndev; e++)
        map[t->dv[e].id] = e;
    for (int e = 0; e < t->ndev; e++)
        t->dv[e].id = e;
    for (int i = 0; i < t->n; i++)
        t->sp[i].dev = map[t->sp[i].dev];
    sc_free(map);
    return SC_OK;
}

/* Per stage: tf from F; tb, tw from I, W; tbw from B; a stage with B only
 * gets half of it as tb and as tw (noted). */
static sc_status stage_costs(const sc_ptrace *t, sc_costs *c, double **x, const int *nx,
                             char *note, size_t notelen, char *err, size_t errlen)
{
    int S = c->S;
    const char *f = t->files[0], *more = t->nfiles > 1 ? ", ..." : "";
    for (int s = 0; s < S; s++) {
        int nf = nx[PT_F * S + s], ni = nx[PT_I * S + s], nw = nx[PT_W * S + s],
            nb = nx[PT_B * S + s];
        if (!nf)
            return sc_errbuf(err, errlen, "%s%s: no F span of stage %d (PP:%dF<microbatch>): stages "
                       "0..%d need one each", f, more, s, s, S - 1);
        if ((ni > 0) != (nw > 0) || (!ni && !nb))
            return sc_errbuf(err, errlen, "%s%s: stage %d has %s spans but no %s: its backward pass "
                       "is not all there", f, more, s, ni ? "I" : nw ? "W" : "F",
                       ni ? "W" : nw ? "I" : "backward (B, or I and W)");
        c->kind[SC_COST_F][s] = sc_stat_of(x[PT_F * S + s], nf);
        if (nb)
            c->kind[SC_COST_BW][s] = sc_stat_of(x[PT_B * S + s], nb);
        if (ni) {
            c->kind[SC_COST_B][s] = sc_stat_of(x[PT_I * S + s], ni);
            c->kind[SC_COST_W][s] = sc_stat_of(x[PT_W * S + s], nw);
            continue;
        }
        sc_stat h = c->kind[SC_COST_BW][s];
        h.median /= 2, h.spread /= 2;
        c->kind[SC_COST_B][s] = c->kind[SC_COST_W][s] = h;
        if (!note[0])
            snprintf(note, notelen, "stage %d ran its backward as B only (no I and W): its tb "
                     "and tw are half of B each, a guess (a schedule that splits the backward, "
                     "zb-h1 or zb-v, measures them)", s);
    }
    return SC_OK;
}

/* Fills c from the numbered spans (sp by action and step on entry). */
static sc_status fill(sc_ptrace *t, sc_costs *c, int steps, int m, char *note, size_t notelen,
                      char *err, size_t errlen)
{
    int n = t->n, S = c->S, nk = (PT_B + 1) * S;
    double **x = sc_calloc((size_t)nk, sizeof *x);
    double *buf = sc_calloc((size_t)2 * (size_t)n + 3 * (size_t)steps, sizeof *buf);
    int *nx = sc_calloc((size_t)nk, sizeof *nx);
    pt_span *bytime = sc_calloc((size_t)n, sizeof *bytime);
    sc_status st = SC_ERR_NOMEM;
    if (x && buf && nx && bytime) {
        for (int i = 0; i < n; i++) /* each pass's list gets room for its count */
            if (t->sp[i].kind <= PT_B)
                nx[t->sp[i].kind * S + t->sp[i].stage]++;
        for (int k = 0, at = 0; k < nk; at += nx[k], nx[k++] = 0)
            x[k] = buf + at;
        memcpy(bytime, t->sp, (size_t)n * sizeof *bytime);
        qsort(bytime, (size_t)n, sizeof *bytime, cmp_time);
        pass_samples(bytime, t->sp, n, x, nx, S);
        st = stage_costs(t, c, x, nx, note, notelen, err, errlen);
    }
    if (st == SC_OK) {
        c->comm = transfers(t->sp, n, buf + n);
        if (c->comm.n == 0) /* no consumer waited for a transfer: none seen */
            c->comm = (sc_stat){0, NAN, 0};
        c->step = step_times(t->sp, n, steps, buf + n, buf + n + steps, buf + n + 2 * steps);
        c->m = m, c->steps = steps, c->warmup = -1;
        c->what = "torch.profiler trace (PyTorch's _PipelineScheduleRuntime)";
        c->files = (const char *const *)t->files, c->nfiles = t->nfiles;
        c->backend = t->backend[0] ? t->backend : NULL;
        c->machine = t->host[0] ? t->host : NULL;
        c->devices_as = "ranks";
    }
    sc_free(x), sc_free(buf), sc_free(nx), sc_free(bytime);
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
        return sc_errbuf(err, errlen, "%s%s: no span of PyTorch's pipelining runtime (PP:<stage><action>"
                   "<microbatch>, the record_function of _PipelineScheduleRuntime): record the "
                   "step under torch.profiler", t->nfiles ? t->files[0] : "trace",
                   t->nfiles > 1 ? ", ..." : "");
    int steps = 0, S = 0, m = 0, P = 0;
    for (int i = 0; i < t->n; i++) {
        S = t->sp[i].stage + 1 > S ? t->sp[i].stage + 1 : S;
        m = t->sp[i].mb + 1 > m ? t->sp[i].mb + 1 : m;
    }
    /* Each phase is n log n at most: the deadline is checked between them. */
    sc_status st = order_devices(t);
    if (st == SC_OK)
        st = number_steps(t, S, &steps, err, errlen);
    if (st == SC_OK)
        st = out_of_time(t, deadline, err, errlen);
    if (st != SC_OK)
        return st;
    for (int i = 0; i < t->n; i++)
        P = t->sp[i].dev + 1 > P ? t->sp[i].dev + 1 : P;
    if ((st = sc_costs_init(c, P, S)) != SC_OK)
        return st;
    if (!(c->placement = malloc((size_t)S * sizeof *c->placement))) {
        sc_costs_free(c);
        return SC_ERR_NOMEM;
    }
    for (int i = 0; i < t->n; i++)
        if (t->sp[i].kind != PT_OTHER)
            c->placement[t->sp[i].stage] = t->sp[i].dev;
    if ((st = fill(t, c, steps, m, note, notelen, err, errlen)) == SC_OK)
        st = out_of_time(t, deadline, err, errlen);
    if (st != SC_OK)
        sc_costs_free(c);
    return st;
}
