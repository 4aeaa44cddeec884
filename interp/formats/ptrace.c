/*
 * ptrace.c — reading torch.profiler traces of a pipelined step (ptrace.h):
 * the spans of PyTorch's runtime and the operators inside them, one event
 * at a time as the JSON reader hands them over. Linear in the events: a
 * device is found through a hash of (file, pid), not a scan of the devices
 * (a merged trace of 40k processes took 10 s that way), and the operators
 * are sorted once per file and found by binary search.
 */
#include "ptrace_impl.h"
#include "errbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"

static const struct {
    const char *name;
    int kind;
} actions[] = {
    {"F", PT_F}, {"I", PT_I}, {"W", PT_W}, {"B", PT_B}, {"SEND_F", PT_SEND_F},
    {"RECV_F", PT_RECV_F}, {"SEND_B", PT_SEND_B}, {"RECV_B", PT_RECV_B},
    {"WAIT_SEND_F", PT_WAIT}, {"WAIT_SEND_B", PT_WAIT}, {"WAIT_REDUCE_GRAD", PT_WAIT},
    {"UNSHARD", PT_OTHER}, {"RESHARD", PT_OTHER}, {"REDUCE_GRAD", PT_OTHER},
};

sc_ptrace *sc_ptrace_new(void) { return sc_calloc(1, sizeof(sc_ptrace)); }

void sc_ptrace_free(sc_ptrace *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nfiles; i++)
        sc_free(t->files[i]);
    sc_free(t->files);
    sc_free(t->rank);
    sc_free(t->sp);
    sc_free(t->dv);
    sc_free(t->slot);
    sc_free(t);
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
static double first_op(const op *ops, size_t n, double pid, double tid, double ts, double end)
{
    op key = {pid, tid, ts};
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first op not before key */
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_op(&ops[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && ops[lo].pid == pid && ops[lo].tid == tid && ops[lo].ts <= end)
        return ops[lo].ts;
    return NAN;
}

/* The hash of a device's key; -0.0 and 0.0 are one pid. */
static size_t dev_hash(int file, double pid)
{
    unsigned long long b = 0;
    if (pid != 0)
        memcpy(&b, &pid, sizeof b);
    b ^= (unsigned long long)(unsigned)file * 0x9E3779B97F4A7C15ull;
    b ^= b >> 31;
    b *= 0xBF58476D1CE4E5B9ull;
    return (size_t)(b ^ (b >> 29));
}

/* Puts device d into the table (which has room). */
static void dev_put(sc_ptrace *t, int d)
{
    size_t mask = (size_t)t->nslot - 1, j = dev_hash(t->dv[d].file, t->dv[d].pid) & mask;
    while (t->slot[j])
        j = (j + 1) & mask;
    t->slot[j] = d + 1;
}

/* The device of (file, pid), made when new; -1 out of memory. */
static int device_of(sc_ptrace *t, int file, double pid)
{
    if (t->nslot) {
        size_t mask = (size_t)t->nslot - 1;
        for (size_t j = dev_hash(file, pid) & mask; t->slot[j]; j = (j + 1) & mask) {
            const pt_dev *v = &t->dv[t->slot[j] - 1];
            if (v->file == file && v->pid == pid)
                return t->slot[j] - 1;
        }
    }
    if (t->ndev == t->devcap) {
        int cap = t->devcap ? 2 * t->devcap : 8;
        pt_dev *g = sc_realloc(t->dv, (size_t)cap * sizeof *g);
        if (!g)
            return -1;
        t->dv = g;
        t->devcap = cap;
    }
    if (2 * (t->ndev + 1) > t->nslot) { /* at most half full: rebuilt twice as large */
        int ns = t->nslot ? 2 * t->nslot : 32;
        int *s = sc_calloc((size_t)ns, sizeof *s);
        if (!s)
            return -1;
        sc_free(t->slot);
        t->slot = s;
        t->nslot = ns;
        for (int d = 0; d < t->ndev; d++)
            dev_put(t, d);
    }
    t->dv[t->ndev] = (pt_dev){file, -1, pid, t->ndev};
    dev_put(t, t->ndev);
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

/* One file as it is read: the operators (sorted at its end), where its
 * spans start, and the first event of a single-stage schedule. */
typedef struct file_rd {
    sc_ptrace *t;
    const char *name;
    int file, n0;
    op *ops;
    size_t nops, opcap;
    long single;                  /* -1: none */
    char single_name[100];
} file_rd;

static sc_status add_span(sc_ptrace *t, pt_span s)
{
    if (t->n == t->cap) {
        if (t->cap > (1 << 29))
            return SC_ERR_NOMEM;
        int cap = t->cap ? 2 * t->cap : 256;
        pt_span *g = sc_realloc(t->sp, (size_t)cap * sizeof *g);
        if (!g)
            return SC_ERR_NOMEM;
        t->sp = g, t->cap = cap;
    }
    t->sp[t->n++] = s;
    return SC_OK;
}

static sc_status add_op(file_rd *f, op o)
{
    if (f->nops == f->opcap) {
        size_t cap = f->opcap ? 2 * f->opcap : 256;
        op *g = sc_realloc(f->ops, cap * sizeof *g);
        if (!g)
            return SC_ERR_NOMEM;
        f->ops = g, f->opcap = cap;
    }
    f->ops[f->nops++] = o;
    return SC_OK;
}

/* One event of "traceEvents" (jsonread.h's item function); err without
 * the file's name (sc_ptrace_read puts it in front). */
static sc_status event(void *ud, size_t i, const sc_jv *e, char *err, size_t errlen)
{
    file_rd *f = ud;
    const sc_jv *nm = sc_jv_get(e, "name"), *ph = sc_jv_get(e, "ph");
    if (e->type != SC_JOBJ || !ph || ph->type != SC_JSTR || strcmp(ph->str, "X") != 0)
        return SC_OK; /* only complete events ("ph": "X") have a span */
    const char *s = nm && nm->type == SC_JSTR ? nm->str : "";
    double ts = num_of(e, "ts"), dur = num_of(e, "dur"), pid = num_of(e, "pid"),
           tid = num_of(e, "tid");
    int stage = 0, kind = 0, mb = 0, pp = parse_name(s, &stage, &kind, &mb);
    const sc_jv *cat = sc_jv_get(e, "cat");
    int isop = cat && cat->type == SC_JSTR && strcmp(cat->str, "cpu_op") == 0;
    if (pp < 0)
        return sc_errbuf(err, errlen, "event %zu ('%.60s'): an overlapped pair (OVERLAP_F_B) times "
                         "two passes as one span: a trace of a schedule without pairs is needed",
                         i, s);
    if ((pp || isop) && !(fabs(ts) < 1e18 && dur >= 0 && dur < 1e18)) /* µs */
        return sc_errbuf(err, errlen, "event %zu ('%.60s'): 'ts' and 'dur' must be numbers, "
                         "'dur' >= 0", i, s);
    if ((pp || isop) && !(isfinite(pid) && isfinite(tid)))
        return sc_errbuf(err, errlen, "event %zu ('%.60s'): 'pid' and 'tid' must be numbers", i,
                         s);
    if (isop)
        return add_op(f, (op){pid, tid, ts});
    if (pp) {
        if (i > (size_t)1 << 30)
            return sc_errbuf(err, errlen, "more than 2^30 events");
        int d = device_of(f->t, f->file, pid);
        /* tid is kept in first until the operators are sorted (file_end) */
        return d < 0 ? SC_ERR_NOMEM
                     : add_span(f->t, (pt_span){d, stage, mb, kind, -1, ts, ts + dur, tid, f->file,
                                                (int)i});
    }
    if (f->single < 0 && (strncmp(s, "Forward ", 8) == 0 || strncmp(s, "Backward ", 9) == 0)) {
        f->single = (long)i;
        snprintf(f->single_name, sizeof f->single_name, "%s", s);
    }
    return SC_OK;
}

/* After the events: the file's rank (which may come after them in the
 * file), its operators matched to its spans. */
static sc_status file_end(file_rd *f, const sc_jv *root, int ndev0, char *err, size_t errlen)
{
    sc_ptrace *t = f->t;
    const char *name = f->name;
    const sc_jv *evs = sc_jv_get(root, "traceEvents");
    if (!evs || evs->type != SC_JARR)
        return sc_errbuf(err, errlen, "%s: no 'traceEvents' list (not a Chrome trace of "
                         "torch.profiler: prof.export_chrome_trace(FILE) writes one)", name);
    const sc_jv *di = sc_jv_get(root, "distributedInfo");
    double r = num_of(di, "rank");
    int rank = r >= 0 && r == floor(r) && r < 1e6 ? (int)r : -1;
    for (int k = 0; k < f->file && rank >= 0; k++) /* one per file named: argv-bounded */
        if (t->rank[k] == rank)
            return sc_errbuf(err, errlen, "%s: rank %d again (%s is rank %d too): give each rank's "
                             "trace once", name, rank, t->files[k], rank);
    t->rank[f->file] = rank;
    for (int d = ndev0; d < t->ndev; d++) /* the devices of this file: made since ndev0 */
        t->dv[d].rank = rank;
    copy_str(t->backend, sizeof t->backend, sc_jv_get(di, "backend"));
    copy_str(t->host, sizeof t->host, sc_jv_get(root, "host_name"));
    if (f->nops) /* ops is NULL without operators */
        qsort(f->ops, f->nops, sizeof *f->ops, cmp_op);
    for (int k = f->n0; k < t->n; k++) {
        pt_span *p = &t->sp[k];
        p->first = first_op(f->ops, f->nops, t->dv[p->dev].pid, p->first, p->ts, p->end);
    }
    if (t->n == f->n0 && f->single >= 0)
        return sc_errbuf(err, errlen, "%s: event %ld ('%s'): a single-stage schedule "
                         "(ScheduleGPipe, Schedule1F1B) times the wait for its input with the "
                         "pass; only PyTorch's _PipelineScheduleRuntime (multi-stage schedules, "
                         "CSV files) names its actions (PP:1F0)", name, f->single, f->single_name);
    return SC_OK;
}

/* Names the file (t->files, t->rank); its index, or -1 out of memory. */
static int add_file(sc_ptrace *t, const char *name)
{
    char **files = sc_realloc(t->files, (size_t)(t->nfiles + 1) * sizeof *files);
    if (files)
        t->files = files;
    int *rank = files ? sc_realloc(t->rank, (size_t)(t->nfiles + 1) * sizeof *rank) : NULL;
    if (rank)
        t->rank = rank;
    char *copy = rank ? sc_malloc(strlen(name) + 1) : NULL;
    if (!copy)
        return -1;
    strcpy(copy, name);
    t->files[t->nfiles] = copy;
    t->rank[t->nfiles] = -1;
    return t->nfiles++;
}

sc_status sc_ptrace_read(sc_ptrace *t, const char *name, const char *text, size_t len,
                         double deadline, char *err, size_t errlen)
{
    if (errlen)
        err[0] = 0;
    int file = add_file(t, name);
    if (file < 0) {
        snprintf(err, errlen, "%s: out of memory", name);
        return SC_ERR_NOMEM;
    }
    file_rd f = {.t = t, .name = t->files[file], .file = file, .n0 = t->n, .single = -1};
    int ndev0 = t->ndev;
    sc_json_opts o = {.each = "traceEvents", .item = event, .ud = &f, .deadline = deadline};
    sc_jv *root = NULL;
    char jerr[384] = ""; /* the JSON reader's "line 3: ...", or event()'s */
    sc_status st = sc_json_parse_opts(text, len, &o, &root, jerr, sizeof jerr);
    if (st != SC_OK)
        snprintf(err, errlen, "%s: %s", name, jerr[0] ? jerr : "out of memory");
    else
        st = file_end(&f, root, ndev0, err, errlen);
    sc_jv_free(root);
    sc_free(f.ops);
    return st;
}
