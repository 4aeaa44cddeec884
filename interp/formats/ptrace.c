/*
 * ptrace.c — costs from torch.profiler traces of a pipelined step (ptrace.h).
 */
#include "ptrace.h"
#include "errbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The actions of PyTorch's runtime (schedules.py, _ComputationType) as
 * they matter here: the passes, the posts of transfers, the waits. */
enum { PT_F, PT_I, PT_W, PT_B, PT_SEND_F, PT_RECV_F, PT_SEND_B, PT_RECV_B, PT_WAIT, PT_OTHER };

static const struct {
    const char *name;
    int kind;
} actions[] = {
    {"F", PT_F}, {"I", PT_I}, {"W", PT_W}, {"B", PT_B}, {"SEND_F", PT_SEND_F},
    {"RECV_F", PT_RECV_F}, {"SEND_B", PT_SEND_B}, {"RECV_B", PT_RECV_B},
    {"WAIT_SEND_F", PT_WAIT}, {"WAIT_SEND_B", PT_WAIT}, {"WAIT_REDUCE_GRAD", PT_WAIT},
    {"UNSHARD", PT_OTHER}, {"RESHARD", PT_OTHER}, {"REDUCE_GRAD", PT_OTHER},
};

typedef struct span {
    int dev, stage, mb, kind, step; /* mb -1: the action has none */
    double ts, end, first;          /* microseconds; first: its first operator's start, or NAN */
    int file, event;                /* where it is, for messages */
} span;

typedef struct dev {
    int file, rank;                 /* rank: the file's distributedInfo.rank, or -1 */
    double pid;
} dev;

struct sc_ptrace {
    span *sp;
    int n, cap;
    dev *dv;
    int ndev, devcap;
    char **files;
    int nfiles;
    char backend[32], host[64];
};


sc_ptrace *sc_ptrace_new(void) { return calloc(1, sizeof(sc_ptrace)); }

void sc_ptrace_free(sc_ptrace *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nfiles; i++)
        free(t->files[i]);
    free(t->files);
    free(t->sp);
    free(t->dv);
    free(t);
}

/* "PP:<stage><ACTION><microbatch>" -> its parts; 0 when it is no such
 * name, -1 for an action this reader cannot time (OVERLAP_F_B). */
static int parse_name(const char *s, int *stage, int *kind, int *mb)
{
    if (strncmp(s, "PP:", 3) != 0)
        return 0;
    s += 3;
    if (*s == '(')
        return -1; /* (0F1;1B0)OVERLAP_F_B: two passes in one span */
    if (*s < '0' || *s > '9')
        return 0;
    long st = strtol(s, (char **)&s, 10);
    const char *a = s;
    while ((*s >= 'A' && *s <= 'Z') || *s == '_')
        s++;
    size_t alen = (size_t)(s - a);
    *mb = -1;
    if (*s) {
        if (*s < '0' || *s > '9')
            return 0;
        long m = strtol(s, (char **)&s, 10);
        if (*s || m > 1000000)
            return 0;
        *mb = (int)m;
    }
    for (size_t i = 0; i < sizeof actions / sizeof *actions; i++)
        if (strlen(actions[i].name) == alen && strncmp(actions[i].name, a, alen) == 0) {
            if (st > 100000)
                return 0;
            *stage = (int)st;
            *kind = actions[i].kind;
            return 1;
        }
    return 0;
}

/* An operator of the trace: where it starts (for the first operator of a span). */
typedef struct op {
    double pid, tid, ts;
} op;

static int cmp_op(const void *a, const void *b)
{
    const op *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The start of the first operator on (pid, tid) in [ts, end], or NAN. */
static double first_op(const op *ops, int n, double pid, double tid, double ts, double end)
{
    op key = {pid, tid, ts};
    int lo = 0, hi = n;
    while (lo < hi) { /* the first op not before key */
        int mid = (lo + hi) / 2;
        if (cmp_op(&ops[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && ops[lo].pid == pid && ops[lo].tid == tid && ops[lo].ts <= end)
        return ops[lo].ts;
    return NAN;
}

static int device_of(sc_ptrace *t, int file, int rank, double pid)
{
    for (int d = 0; d < t->ndev; d++)
        if (t->dv[d].file == file && t->dv[d].pid == pid)
            return d;
    if (t->ndev == t->devcap) {
        int cap = t->devcap ? 2 * t->devcap : 8;
        dev *g = realloc(t->dv, (size_t)cap * sizeof *g);
        if (!g)
            return -1;
        t->dv = g;
        t->devcap = cap;
    }
    t->dv[t->ndev] = (dev){file, rank, pid};
    return t->ndev++;
}

static void copy_str(char *dst, size_t len, const sc_jv *v)
{
    if (v && v->type == SC_JSTR && !dst[0])
        snprintf(dst, len, "%s", v->str);
}

/* The number in member key of an event, or NAN. */
static double num_of(const sc_jv *e, const char *key)
{
    const sc_jv *v = sc_jv_get(e, key);
    return v && v->type == SC_JNUM ? v->num : NAN;
}

sc_status sc_ptrace_add(sc_ptrace *t, const char *name, const sc_jv *root, char *err,
                        size_t errlen)
{
    const sc_jv *evs = sc_jv_get(root, "traceEvents");
    if (!evs || evs->type != SC_JARR)
        return sc_errbuf(err, errlen, "%s: no 'traceEvents' list (not a Chrome trace of torch.profiler: "
                   "prof.export_chrome_trace(FILE) writes one)", name);
    char **files = realloc(t->files, (size_t)(t->nfiles + 1) * sizeof *files);
    if (!files)
        return SC_ERR_NOMEM;
    t->files = files;
    if (!(files[t->nfiles] = malloc(strlen(name) + 1)))
        return SC_ERR_NOMEM;
    strcpy(files[t->nfiles], name);
    int file = t->nfiles++, rank = -1;
    const sc_jv *di = sc_jv_get(root, "distributedInfo");
    double r = num_of(di, "rank");
    if (r >= 0 && r == floor(r) && r < 1e6)
        rank = (int)r;
    for (int d = 0; d < t->ndev && rank >= 0; d++)
        if (t->dv[d].rank == rank)
            return sc_errbuf(err, errlen, "%s: rank %d again (%s is rank %d too): give each rank's "
                       "trace once", name, rank, t->files[t->dv[d].file], rank);
    copy_str(t->backend, sizeof t->backend, sc_jv_get(di, "backend"));
    copy_str(t->host, sizeof t->host, sc_jv_get(root, "host_name"));
    op *ops = malloc((evs->len ? evs->len : 1) * sizeof *ops);
    if (!ops)
        return SC_ERR_NOMEM;
    int nops = 0, n0 = t->n, single = -1;
    sc_status st = SC_OK;
    for (size_t i = 0; i < evs->len && st == SC_OK; i++) {
        const sc_jv *e = evs->item[i], *nm = sc_jv_get(e, "name"), *ph = sc_jv_get(e, "ph");
        if (e->type != SC_JOBJ || !ph || ph->type != SC_JSTR || strcmp(ph->str, "X") != 0)
            continue; /* only complete events ("ph": "X") have a span */
        const char *s = nm && nm->type == SC_JSTR ? nm->str : "";
        double ts = num_of(e, "ts"), dur = num_of(e, "dur"), pid = num_of(e, "pid"),
               tid = num_of(e, "tid");
        int stage = 0, kind = 0, mb = 0, pp = parse_name(s, &stage, &kind, &mb);
        const sc_jv *cat = sc_jv_get(e, "cat");
        int isop = cat && cat->type == SC_JSTR && strcmp(cat->str, "cpu_op") == 0;
        if (pp < 0)
            st = sc_errbuf(err, errlen, "%s: event %zu ('%.60s'): an overlapped pair (OVERLAP_F_B) "
                     "times two passes as one span: a trace of a schedule without pairs is "
                     "needed", name, i, s);
        else if ((pp || isop) && !(fabs(ts) < 1e18 && dur >= 0 && dur < 1e18)) /* µs */
            st = sc_errbuf(err, errlen, "%s: event %zu ('%.60s'): 'ts' and 'dur' must be numbers, "
                     "'dur' >= 0", name, i, s);
        else if ((pp || isop) && !(isfinite(pid) && isfinite(tid)))
            st = sc_errbuf(err, errlen, "%s: event %zu ('%.60s'): 'pid' and 'tid' must be numbers",
                     name, i, s);
        else if (isop)
            ops[nops++] = (op){pid, tid, ts};
        else if (pp) {
            int d = device_of(t, file, rank, pid);
            if (t->n == t->cap) {
                int cap = t->cap ? 2 * t->cap : 256;
                span *g = realloc(t->sp, (size_t)cap * sizeof *g);
                if (!g)
                    d = -1;
                else
                    t->sp = g, t->cap = cap;
            }
            if (d < 0)
                st = SC_ERR_NOMEM;
            else
                t->sp[t->n++] = (span){d, stage, mb, kind, -1, ts, ts + dur, tid, file, (int)i};
        } else if (single < 0 && (strncmp(s, "Forward ", 8) == 0 || strncmp(s, "Backward ", 9) == 0))
            single = (int)i;
    }
    if (st == SC_OK) {
        qsort(ops, (size_t)nops, sizeof *ops, cmp_op);
        for (int k = n0; k < t->n; k++) { /* tid was kept in first until here */
            span *p = &t->sp[k];
            p->first = first_op(ops, nops, t->dv[p->dev].pid, p->first, p->ts, p->end);
        }
        if (t->n == n0 && single >= 0)
            st = sc_errbuf(err, errlen, "%s: event %d ('%s'): a single-stage schedule (ScheduleGPipe, "
                     "Schedule1F1B) times the wait for its input with the pass; only PyTorch's "
                     "_PipelineScheduleRuntime (multi-stage schedules, CSV files) names its "
                     "actions (PP:1F0)", name, single, evs->item[single]->type == SC_JOBJ &&
                     sc_jv_get(evs->item[single], "name") ? sc_jv_get(evs->item[single], "name")->str : "");
    }
    free(ops);
    return st;
}

/* ---- costs --------------------------------------------------------------- */

static const char *kind_name(int k)
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
    const span *x = a, *y = b;
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
    const span *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev - y->dev;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static const span *find(const span *sp, int n, int kind, int stage, int mb, int step)
{
    span key = {.kind = kind, .stage = stage, .mb = mb, .step = step, .dev = -1, .ts = -INFINITY};
    int lo = 0, hi = n;
    while (lo < hi) { /* the first span not before key */
        int mid = (lo + hi) / 2;
        if (cmp_key(&sp[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const span *p = lo < n ? &sp[lo] : NULL;
    return p && p->kind == kind && p->stage == stage && p->mb == mb && p->step == step ? p : NULL;
}

/* The k-th occurrence of an action is in step k: numbers the steps (sp
 * sorted by cmp_key on return) and checks that every action occurs equally
 * often (whole steps) and that a stage runs on one device. */
static sc_status number_steps(sc_ptrace *t, int S, int *steps, char *err, size_t errlen)
{
    span *sp = t->sp;
    int n = t->n, *where = malloc((size_t)S * sizeof *where);
    if (!where)
        return SC_ERR_NOMEM;
    for (int s = 0; s < S; s++)
        where[s] = -1;
    for (int i = 0; i < n; i++) {
        span *p = &sp[i];
        sp[i].step = -1;
        if (p->kind == PT_OTHER)
            continue;
        if (where[p->stage] >= 0 && sp[where[p->stage]].dev != p->dev) {
            const span *q = &sp[where[p->stage]];
            free(where);
            return sc_errbuf(err, errlen, "%s: event %d: stage %d runs on two ranks (also in %s, "
                       "event %d): a stage's actions come from one rank", t->files[p->file],
                       p->event, p->stage, t->files[q->file], q->event);
        }
        where[p->stage] = i;
    }
    free(where);
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
        const span *p = &sp[i];
        int last = i + 1 == n || sp[i + 1].kind != p->kind || sp[i + 1].stage != p->stage ||
                   sp[i + 1].mb != p->mb || sp[i + 1].dev != p->dev;
        if (last && p->step + 1 != *steps)
            return sc_errbuf(err, errlen, "%s: event %d (PP:%d%s%d): in %d step%s, but the traces hold "
                       "%d: give whole steps (start and stop the profiler between steps)",
                       t->files[p->file], p->event, p->stage, kind_name(p->kind), p->mb,
                       p->step + 1, p->step ? "s" : "", *steps);
    }
    qsort(sp, (size_t)n, sizeof *sp, cmp_key); /* by action, then step */
    return SC_OK;
}

/* The samples of the passes (seconds): x[kind * S + stage] gets one per
 * pass (see ptrace.h for what a pass costs); sp by device and time, bykey
 * by action. */
static void pass_samples(const span *sp, const span *bykey, int n, double **x, int *nx, int S)
{
    for (int i = 0; i < n; i++) {
        const span *p = &sp[i];
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
static sc_stat transfers(const span *bykey, int n, double *x)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        const span *s = &bykey[i];
        if (s->kind != PT_SEND_F && s->kind != PT_SEND_B)
            continue;
        int fwd = s->kind == PT_SEND_F, to = fwd ? s->stage + 1 : s->stage - 1;
        const span *r = find(bykey, n, fwd ? PT_RECV_F : PT_RECV_B, to, s->mb, s->step);
        const span *c = find(bykey, n, fwd ? PT_F : PT_I, to, s->mb, s->step);
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

/* The steps: from the first span's start to the last span's end, over all ranks. */
static sc_stat step_times(const span *sp, int n, int steps, double *x)
{
    for (int k = 0; k < steps; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < n; i++)
            if (sp[i].step == k) {
                lo = sp[i].ts < lo ? sp[i].ts : lo;
                hi = sp[i].end > hi ? sp[i].end : hi;
            }
        x[k] = (hi - lo) * 1e-6;
    }
    return sc_stat_of(x, steps);
}

static int cmp_dev(const void *a, const void *b)
{
    const dev *x = a, *y = b;
    int rx = x->rank >= 0 ? x->rank : x->file, ry = y->rank >= 0 ? y->rank : y->file;
    if (rx != ry)
        return rx - ry;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Numbers the devices by rank (or file), then pid. */
static sc_status order_devices(sc_ptrace *t)
{
    int *map = malloc((size_t)(t->ndev ? t->ndev : 1) * sizeof *map);
    dev *old = malloc((size_t)(t->ndev ? t->ndev : 1) * sizeof *old);
    if (!map || !old) {
        free(map), free(old);
        return SC_ERR_NOMEM;
    }
    memcpy(old, t->dv, (size_t)t->ndev * sizeof *old);
    qsort(t->dv, (size_t)t->ndev, sizeof *t->dv, cmp_dev);
    for (int d = 0; d < t->ndev; d++)
        for (int e = 0; e < t->ndev; e++)
            if (old[d].file == t->dv[e].file && old[d].pid == t->dv[e].pid)
                map[d] = e;
    for (int i = 0; i < t->n; i++)
        t->sp[i].dev = map[t->sp[i].dev];
    free(map), free(old);
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
    double **x = calloc((size_t)nk, sizeof *x), *buf = malloc((size_t)(2 * n + steps) * sizeof *buf);
    int *nx = calloc((size_t)nk, sizeof *nx);
    span *bytime = malloc((size_t)n * sizeof *bytime);
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
        c->step = step_times(t->sp, n, steps, buf + n);
        c->m = m, c->steps = steps, c->warmup = -1;
        c->what = "torch.profiler trace (PyTorch's _PipelineScheduleRuntime)";
        c->files = (const char *const *)t->files, c->nfiles = t->nfiles;
        c->backend = t->backend[0] ? t->backend : NULL;
        c->machine = t->host[0] ? t->host : NULL;
        c->devices_as = "ranks";
    }
    free(x), free(buf), free(nx), free(bytime);
    return st;
}

sc_status sc_ptrace_costs(sc_ptrace *t, sc_costs *c, char *note, size_t notelen, char *err,
                          size_t errlen)
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
    sc_status st = order_devices(t);
    if (st == SC_OK)
        st = number_steps(t, S, &steps, err, errlen);
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
    if ((st = fill(t, c, steps, m, note, notelen, err, errlen)) != SC_OK)
        sc_costs_free(c);
    return st;
}
