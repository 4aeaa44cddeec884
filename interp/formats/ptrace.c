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
    {"WAIT_SEND_F", PT_WAIT_SEND_F}, {"WAIT_SEND_B", PT_WAIT_SEND_B},
    {"WAIT_REDUCE_GRAD", PT_WAIT_REDUCE}, {"UNSHARD", PT_UNSHARD}, {"RESHARD", PT_RESHARD},
    {"REDUCE_GRAD", PT_REDUCE},
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
    sc_pt_gpu_free(&t->gpu);
    sc_free(t);
}

/* "<stage><ACTION>[<microbatch>]" at *s -> its parts, *s past it; 0 when
 * it is no such action. */
static int parse_action(const char **ps, int *stage, int *kind, int *mb)
{
    const char *s = *ps;
    if (*s < '0' || *s > '9')
        return 0;
    long st = strtol(s, (char **)&s, 10);
    const char *a = s;
    while ((*s >= 'A' && *s <= 'Z') || *s == '_')
        s++;
    size_t alen = (size_t)(s - a);
    *mb = -1;
    if (*s >= '0' && *s <= '9') {
        long m = strtol(s, (char **)&s, 10);
        if (m > 1000000)
            return 0;
        *mb = (int)m;
    }
    for (size_t i = 0; i < sizeof actions / sizeof *actions; i++)
        if (strlen(actions[i].name) == alen && strncmp(actions[i].name, a, alen) == 0) {
            if (st > 100000)
                return 0;
            *stage = (int)st;
            *kind = actions[i].kind;
            *ps = s;
            return 1;
        }
    return 0;
}

/* "PP:<stage><ACTION><microbatch>" or "PP:(<F>;<B>)OVERLAP_F_B" -> the
 * span's action (p's stage, kind, mb; a pair's backward in stage2, kind2,
 * mb2); 0 when it is no such name, -1 for a pair of other than one F and
 * one backward (I or B) of microbatches. */
static int parse_name(const char *s, pt_span *p)
{
    if (strncmp(s, "PP:", 3) != 0)
        return 0;
    s += 3;
    if (*s != '(') {
        p->stage2 = p->mb2 = p->kind2 = -1;
        return parse_action(&s, &p->stage, &p->kind, &p->mb) && !*s &&
               (p->mb >= 0 || pt_apart(p->kind)); /* the passes and posts name one */
    }
    int st[2], k[2], m[2];
    s++;
    if (!parse_action(&s, &st[0], &k[0], &m[0]) || *s++ != ';' ||
        !parse_action(&s, &st[1], &k[1], &m[1]) || strcmp(s, ")OVERLAP_F_B") != 0)
        return -1;
    int f = k[1] == PT_F, b = !f; /* the F's index, the backward's */
    if (k[f] != PT_F || (k[b] != PT_I && k[b] != PT_B) || m[0] < 0 || m[1] < 0)
        return -1;
    *p = (pt_span){.stage = st[f], .mb = m[f], .kind = PT_FB, .stage2 = st[b], .mb2 = m[b],
                   .kind2 = k[b]};
    return 1;
}

/* An operator of the trace: where it starts and ends (for the first
 * operator of a span, and the posts of receives before it). */
typedef struct op {
    double pid, tid, ts, end;
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

/* The index of the first op of ops[0..n) (sorted) not before (pid, tid, ts). */
static size_t op_at(const op *ops, size_t n, double pid, double tid, double ts)
{
    op key = {pid, tid, ts, ts};
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_op(&ops[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The start of the first operator on (pid, tid) in [ts, end], or NAN. */
static double first_op(const op *ops, size_t n, double pid, double tid, double ts, double end)
{
    size_t i = op_at(ops, n, pid, tid, ts);
    if (i < n && ops[i].pid == pid && ops[i].tid == tid && ops[i].ts <= end)
        return ops[i].ts;
    return NAN;
}

/* A pass's first operator after the last receive it posted (a
 * single-stage schedule posts its receives inside the pass's span, then
 * waits, which records no operator): p->first and p->recv. */
static void first_of(pt_span *p, double pid, double tid, const op *ops, size_t nops,
                     const op *recvs, size_t nrecv)
{
    double from = p->ts;
    size_t r = op_at(recvs, nrecv, pid, tid, p->end + 1e-3); /* past the last at or before end */
    if (r > 0 && recvs[r - 1].pid == pid && recvs[r - 1].tid == tid && recvs[r - 1].ts >= p->ts) {
        p->recv = 1;
        from = recvs[r - 1].end;
    }
    p->first = first_op(ops, nops, pid, tid, from, p->end);
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

/* GPipe's "Forward <mb>" leaves out the loss, which ScheduleGPipe computes
 * right after it: a Forward span ends with the last operator that starts
 * before the rank's next pass (there is none on other stages than the
 * last: the waits for the sends record no operator). sp[0..n): the file's
 * spans, all GPipe's; sorted by device and time on return. */
static void gpipe_ends(sc_ptrace *t, pt_span *sp, int n, const op *ops, size_t nops)
{
    if (n > 0)
        qsort(sp, (size_t)n, sizeof *sp, sc_pt_cmp_dev_time);
    for (int k = 0; k < n; k++) {
        pt_span *p = &sp[k];
        double next = k + 1 < n && sp[k + 1].dev == p->dev ? sp[k + 1].ts : INFINITY;
        double pid = t->dv[p->dev].pid, tid = p->first;
        if (p->kind != PT_F)
            continue;
        for (size_t i = op_at(ops, nops, pid, tid, p->end);
             i < nops && ops[i].pid == pid && ops[i].tid == tid && ops[i].ts < next; i++)
            p->end = ops[i].end > p->end ? ops[i].end : p->end;
    }
}

/* GPipe's transfers: the posts inside each of its spans (c10d::recv_,
 * c10d::send) as the runtime's RECV and SEND of that pass's stage and
 * microbatch (Forward: RECV_F, SEND_F; Backward: RECV_B, SEND_B), so
 * that transfers are timed as the runtime's are (ptrace.h). */
static sc_status gpipe_posts(sc_ptrace *t, int n0, const op *recvs, size_t nrecv,
                             const op *sends, size_t nsend)
{
    int n1 = t->n;
    for (int k = n0; k < n1; k++) {
        pt_span p = t->sp[k]; /* a copy: adding spans moves them */
        double pid = t->dv[p.dev].pid, tid = p.first;
        for (int dir = 0; dir < 2; dir++) {
            const op *v = dir ? sends : recvs;
            size_t n = dir ? nsend : nrecv;
            for (size_t i = op_at(v, n, pid, tid, p.ts);
                 i < n && v[i].pid == pid && v[i].tid == tid && v[i].ts <= p.end; i++) {
                pt_span q = p;
                q.kind = p.kind == PT_F ? (dir ? PT_SEND_F : PT_RECV_F) : (dir ? PT_SEND_B : PT_RECV_B);
                q.ts = v[i].ts, q.end = v[i].end;
                sc_status st = sc_pt_add_span(t, &q);
                if (st != SC_OK)
                    return st;
            }
        }
    }
    return SC_OK;
}

/* A post of a single-stage schedule's transfer, found for a pass: the
 * pass's index, the action it is (SEND_* of the pass before the post,
 * RECV_* of the pass after it), when it was posted. */
typedef struct py_post {
    int at, kind;
    double ts, end;
} py_post;

static int cmp_post(const void *a, const void *b)
{
    const py_post *x = a, *y = b;
    if (x->at != y->at)
        return x->at - y->at;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The pass of sp[lo..hi) (one device's spans by time) last to start at or
 * before ts (dir 1), or first to start at or after it (dir 0); -1: none. */
static int pass_near(const pt_span *sp, int lo, int hi, double ts, int dir)
{
    int a = lo, b = hi;
    while (a < b) { /* the first span starting after ts */
        int mid = a + (b - a) / 2;
        if (sp[mid].ts <= ts)
            a = mid + 1;
        else
            b = mid;
    }
    if (dir)
        for (int j = a - 1; j >= lo; j--)
            if (pt_pass(sp[j].kind))
                return j;
    for (int j = a; !dir && j < hi; j++)
        if (pt_pass(sp[j].kind))
            return j;
    return -1;
}

/* Schedule1F1B's transfers (with_stack: the Python spans): each post of a
 * send (c10d::send) as SEND_F or SEND_B of the pass before it on its
 * process, each post of a receive (c10d::recv_) as RECV_F or RECV_B of the
 * pass after it (its consumer), the posts of one pass and direction as one
 * action; so that transfers are timed as the runtime's are (ptrace.h).
 * sp[n0..n): the file's spans, by device and time. */
static sc_status py_posts(sc_ptrace *t, int n0, const op *recvs, size_t nrecv, const op *sends,
                          size_t nsend)
{
    py_post *v = sc_malloc((nrecv + nsend + 1) * sizeof *v);
    if (!v)
        return SC_ERR_NOMEM;
    size_t k = 0;
    for (int lo = n0, hi; lo < t->n; lo = hi) { /* each device's spans */
        for (hi = lo + 1; hi < t->n && t->sp[hi].dev == t->sp[lo].dev;)
            hi++;
        double pid = t->dv[t->sp[lo].dev].pid;
        for (int dir = 0; dir < 2; dir++) {
            const op *o = dir ? sends : recvs;
            size_t no = dir ? nsend : nrecv;
            for (size_t i = op_at(o, no, pid, -INFINITY, -INFINITY); i < no && o[i].pid == pid;
                 i++) {
                int j = pass_near(t->sp, lo, hi, o[i].ts, dir);
                if (j < 0)
                    continue; /* outside the passes: not of a step */
                int f = t->sp[j].kind == PT_F;
                v[k++] = (py_post){j, dir ? (f ? PT_SEND_F : PT_SEND_B) : (f ? PT_RECV_F : PT_RECV_B),
                                   o[i].ts, o[i].end};
            }
        }
    }
    if (k > 0)
        qsort(v, k, sizeof *v, cmp_post);
    sc_status st = SC_OK;
    for (size_t i = 0; i < k && st == SC_OK; i++) {
        pt_span q = t->sp[v[i].at];
        q.kind = v[i].kind, q.ts = v[i].ts, q.end = v[i].end;
        while (i + 1 < k && v[i + 1].at == v[i].at && v[i + 1].kind == v[i].kind)
            q.end = v[++i].end > q.end ? v[i].end : q.end; /* a pass's tensors, one action */
        st = sc_pt_add_span(t, &q);
    }
    sc_free(v);
    return st;
}

/* One file as it is read: the operators and the posts of receives
 * (sorted at its end), where its spans start, what a single-stage schedule
 * recorded (ptrace_single.c). */
typedef struct file_rd {
    sc_ptrace *t;
    const char *name;
    int file, n0;
    op *ops, *recvs, *sends;
    size_t nops, opcap, nrecv, recvcap, nsend, sendcap;
    pt_cand cand;
} file_rd;

static sc_status add_op(op **v, size_t *n, size_t *cap, op o)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        op *g = sc_realloc(*v, c * sizeof *g);
        if (!g)
            return SC_ERR_NOMEM;
        *v = g, *cap = c;
    }
    (*v)[(*n)++] = o;
    return SC_OK;
}

/* One event of "traceEvents" (jsonread.h's item function); err without
 * the file's name (sc_ptrace_read puts it in front). */
static sc_status event(void *ud, size_t i, const sc_jv *e, char *err, size_t errlen)
{
    file_rd *f = ud;
    const sc_jv *nm = sc_jv_get(e, "name"), *ph = sc_jv_get(e, "ph"), *cv = sc_jv_get(e, "cat");
    if (e->type != SC_JOBJ || !ph || ph->type != SC_JSTR || strcmp(ph->str, "X") != 0)
        return SC_OK; /* only complete events ("ph": "X") have a span */
    const char *s = nm && nm->type == SC_JSTR ? nm->str : "";
    const char *cat = cv && cv->type == SC_JSTR ? cv->str : "";
    double ts = num_of(e, "ts"), dur = num_of(e, "dur"), pid = num_of(e, "pid"),
           tid = num_of(e, "tid");
    pt_span sp = {0};
    int pp = parse_name(s, &sp), isop = strcmp(cat, "cpu_op") == 0;
    int single = !pp && !isop && sc_pt_single_name(s, cat) > 0;
    int gpu = !pp && !isop && !single ? sc_pt_gpu_kind(s, cat) : 0; /* a kernel, a launch */
    if (pp < 0)
        return sc_errbuf(err, errlen, "event %zu ('%.60s'): not an overlapped pair of PyTorch 2.15 "
                         "(OVERLAP_F_B of one F and one backward, I or B, each with its stage and "
                         "microbatch)", i, s);
    if ((pp || isop || single || gpu) && !(fabs(ts) < 1e18 && dur >= 0 && dur < 1e18)) /* µs */
        return sc_errbuf(err, errlen, "event %zu ('%.60s'): 'ts' and 'dur' must be numbers, "
                         "'dur' >= 0", i, s);
    /* a kernel's pid and tid are the GPU's and its stream's: not needed */
    if ((pp || isop || single || gpu == PT_LAUNCH) && !(isfinite(pid) && isfinite(tid)))
        return sc_errbuf(err, errlen, "event %zu ('%.60s'): 'pid' and 'tid' must be numbers", i,
                         s);
    if (isop) {
        op o = {pid, tid, ts, ts + dur};
        if (strncmp(s, "c10d::recv", 10) == 0 &&
            add_op(&f->recvs, &f->nrecv, &f->recvcap, o) != SC_OK)
            return SC_ERR_NOMEM;
        if (strncmp(s, "c10d::send", 10) == 0 &&
            add_op(&f->sends, &f->nsend, &f->sendcap, o) != SC_OK)
            return SC_ERR_NOMEM;
        return add_op(&f->ops, &f->nops, &f->opcap, o);
    }
    if (gpu) { /* linked to the spans when the costs are made (ptrace_gpu.c) */
        int d = gpu == PT_LAUNCH ? device_of(f->t, f->file, pid) : -1;
        if (gpu == PT_LAUNCH && d < 0)
            return SC_ERR_NOMEM;
        return sc_pt_gpu_add(&f->t->gpu, gpu, s, e, f->file, d, ts, ts + dur);
    }
    if (!pp && !single)
        return SC_OK;
    if (i > (size_t)1 << 30)
        return sc_errbuf(err, errlen, "more than 2^30 events");
    int d = device_of(f->t, f->file, pid);
    if (d < 0)
        return SC_ERR_NOMEM;
    /* tid is kept in first until the operators are sorted (file_end) */
    sp.dev = d, sp.step = -1, sp.ts = ts, sp.end = ts + dur, sp.first = tid;
    sp.file = f->file, sp.event = (int)i;
    if (single)
        return sc_pt_single_add(&f->cand, s, cat, &sp);
    sp.src = PT_SRC_PP;
    return sc_pt_add_span(f->t, &sp);
}

/* After the events: the file's rank (which may come after them in the
 * file), a single-stage schedule's spans where the file has no PP:
 * span, its operators matched to its spans. */
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
    if (t->n == f->n0) { /* no PP: span: a single-stage schedule's, if any */
        sc_status st = sc_pt_single_end(t, &f->cand, name, err, errlen);
        if (st != SC_OK)
            return st;
    }
    if (f->nops) /* ops is NULL without operators */
        qsort(f->ops, f->nops, sizeof *f->ops, cmp_op);
    if (f->nrecv)
        qsort(f->recvs, f->nrecv, sizeof *f->recvs, cmp_op);
    if (f->nsend)
        qsort(f->sends, f->nsend, sizeof *f->sends, cmp_op);
    if (t->n > f->n0 && t->sp[f->n0].src == PT_SRC_GPIPE) { /* tids still in first */
        gpipe_ends(t, t->sp + f->n0, t->n - f->n0, f->ops, f->nops);
        sc_status st = gpipe_posts(t, f->n0, f->recvs, f->nrecv, f->sends, f->nsend);
        if (st != SC_OK)
            return st;
    }
    for (int k = f->n0; k < t->n; k++) {
        pt_span *p = &t->sp[k];
        if (p->src == PT_SRC_PY) { /* a Python function's span: it is the pass itself */
            p->first = p->ts;
            continue;
        }
        first_of(p, t->dv[p->dev].pid, p->first, f->ops, f->nops, f->recvs, f->nrecv);
        if (p->kind == PT_UNSHARD && isfinite(p->first))
            t->fsdp = 1; /* without FSDP, the runtime's UNSHARD does nothing */
    }
    if (t->n > f->n0 && t->sp[f->n0].src == PT_SRC_PY)
        return py_posts(t, f->n0, f->recvs, f->nrecv, f->sends, f->nsend);
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
    file_rd f = {.t = t, .name = t->files[file], .file = file, .n0 = t->n};
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
    sc_free(f.recvs);
    sc_free(f.sends);
    sc_pt_single_free(&f.cand);
    return st;
}
