/*
 * ptrace_gpu.c — the GPU's side of a trace (ptrace_impl.h, pt_gpu). With
 * torch.profiler's CUDA activity on (activities=[ProfilerActivity.CPU,
 * ProfilerActivity.CUDA]) each kernel the GPU ran is an event of its own,
 * at the GPU's process (pid: the device's index, tid: the stream), linked
 * to the launch that queued it by args.correlation:
 *
 *   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4211,
 *    "tid": 4211, "ts": 100, "dur": 5, "args": {"External id": 31, "correlation": 77}}
 *   {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7,
 *    "ts": 180, "dur": 40, "args": {"External id": 31, "device": 0, "stream": 7,
 *    "correlation": 77, ...}}
 *
 * A span's kernels are those whose launch lies inside it on its process:
 * on any thread (autograd launches a backward's kernels on CUDA from a
 * thread of its own, while the span's thread waits for it), in the
 * innermost span (GPipe's posts are spans inside its passes). NCCL's
 * kernels (names "nccl...": ncclDevKernel_SendRecv(...),
 * ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t) are the transfers', kept
 * apart from the compute. A kernel whose correlation no launch has, a
 * launch outside every span (the optimizer, a loss computed outside), link
 * nothing. What the costs make of them: ptrace.h.
 *
 * Correlation ids are unique within a process; in a merged trace two
 * ranks' may meet: a kernel takes the launch of its id that started last
 * before it did (a kernel never starts before its launch).
 */
#include "ptrace_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"

/* How far up the spans around a launch the search goes: PyTorch's spans
 * nest two deep (GPipe's posts in its passes); a deeper nest links only
 * to its innermost 16, which keeps the search bounded whatever the trace. */
#define PT_NEST 16

int sc_pt_gpu_kind(const char *name, const char *cat)
{
    if (strcmp(cat, "kernel") == 0)
        return PT_KERNEL;
    if ((strcmp(cat, "cuda_runtime") == 0 || strcmp(cat, "cuda_driver") == 0) &&
        strstr(name, "Launch")) /* cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, ... */
        return PT_LAUNCH;
    return 0;
}

static sc_status push(pt_kern **v, int *n, int *cap, pt_kern k)
{
    if (*n == *cap) {
        if (*cap > (1 << 29))
            return SC_ERR_NOMEM;
        int c = *cap ? 2 * *cap : 256;
        pt_kern *g = sc_realloc(*v, (size_t)c * sizeof *g);
        if (!g)
            return SC_ERR_NOMEM;
        *v = g, *cap = c;
    }
    (*v)[(*n)++] = k;
    return SC_OK;
}

sc_status sc_pt_gpu_add(pt_gpu *g, int kind, const char *name, const sc_jv *e, int file, int dev,
                        double ts, double end)
{
    const sc_jv *c = sc_jv_get(sc_jv_get(e, "args"), "correlation");
    *(kind == PT_KERNEL ? &g->kseen : &g->lseen) += 1;
    if (!c || c->type != SC_JNUM)
        return SC_OK; /* nothing to link it by */
    pt_kern k = {c->num, ts, end, file, kind == PT_KERNEL ? -1 : dev, strncmp(name, "nccl", 4) == 0};
    return kind == PT_KERNEL ? push(&g->k, &g->nk, &g->kcap, k) : push(&g->l, &g->nl, &g->lcap, k);
}

void sc_pt_gpu_free(pt_gpu *g)
{
    sc_free(g->k);
    sc_free(g->l);
    memset(g, 0, sizeof *g);
}

/* Orders kernels and launches by file, correlation, start. */
static int cmp_kern(const void *a, const void *b)
{
    const pt_kern *x = a, *y = b;
    if (x->file != y->file)
        return x->file - y->file;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The launch of kernel k in l[0..n) (sorted), or NULL. */
static const pt_kern *launch_of(const pt_kern *l, int n, const pt_kern *k)
{
    int lo = 0, hi = n;
    while (lo < hi) { /* the first launch after k: (file, corr, ts) */
        int mid = lo + (hi - lo) / 2;
        if (cmp_kern(&l[mid], k) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && l[lo - 1].file == k->file && l[lo - 1].corr == k->corr)
        return &l[lo - 1]; /* the last of its id to start before it */
    if (lo < n && l[lo].file == k->file && l[lo].corr == k->corr)
        return &l[lo];
    return NULL;
}

/* A span as the launches search them: by device, start (the outer of two
 * that start together first); up: the span that was open around it when
 * it started (-1: none). */
typedef struct ival {
    int dev, span, up;
    double ts, end;
} ival;

static int cmp_ival(const void *a, const void *b)
{
    const ival *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev - y->dev;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return x->span - y->span;
}

/* The innermost span of iv[0..n) (sorted, up set) on device dev around
 * time ts, or -1. */
static int span_at(const ival *iv, int n, int dev, double ts)
{
    int lo = 0, hi = n;
    while (lo < hi) { /* the first span after (dev, ts) */
        int mid = lo + (hi - lo) / 2;
        if (iv[mid].dev < dev || (iv[mid].dev == dev && iv[mid].ts <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    int j = lo - 1;
    if (j < 0 || iv[j].dev != dev)
        return -1;
    for (int up = 0; j >= 0 && up < PT_NEST; up++, j = iv[j].up)
        if (iv[j].end >= ts)
            return iv[j].span;
    return -1;
}

/* The spans by device and start, each with the span open around it: a
 * stack of the open spans per device, linear after the sort. */
static ival *span_index(const sc_ptrace *t)
{
    int n = t->n;
    ival *iv = sc_malloc((size_t)(n ? n : 1) * sizeof *iv);
    int *open = sc_malloc((size_t)(n ? n : 1) * sizeof *open);
    if (!iv || !open) {
        sc_free(iv), sc_free(open);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        iv[i] = (ival){t->sp[i].dev, i, -1, t->sp[i].ts, t->sp[i].end};
    if (n > 0)
        qsort(iv, (size_t)n, sizeof *iv, cmp_ival);
    for (int i = 0, top = 0; i < n; i++) {
        if (i > 0 && iv[i].dev != iv[i - 1].dev)
            top = 0;
        while (top > 0 && iv[open[top - 1]].end < iv[i].ts)
            top--; /* closed before this one starts */
        iv[i].up = top ? open[top - 1] : -1;
        open[top++] = i;
    }
    sc_free(open);
    return iv;
}

sc_status sc_pt_gpu_join(sc_ptrace *t)
{
    pt_gpu *g = &t->gpu;
    if (g->joined)
        return SC_OK;
    g->joined = 1, g->linked = 0;
    for (int i = 0; i < t->n; i++) { /* none yet: first > last */
        pt_span *p = &t->sp[i];
        p->kfirst = p->nfirst = INFINITY;
        p->klast = p->nlast = -INFINITY;
    }
    if (g->nk == 0 || g->nl == 0 || t->n == 0)
        return SC_OK;
    ival *iv = span_index(t);
    if (!iv) {
        g->joined = 0;
        return SC_ERR_NOMEM;
    }
    qsort(g->l, (size_t)g->nl, sizeof *g->l, cmp_kern);
    for (int i = 0; i < g->nk; i++) {
        const pt_kern *k = &g->k[i], *l = launch_of(g->l, g->nl, k);
        int s = l ? span_at(iv, t->n, l->dev, l->ts) : -1;
        if (s < 0)
            continue;
        pt_span *p = &t->sp[s];
        double *first = k->nccl ? &p->nfirst : &p->kfirst, *last = k->nccl ? &p->nlast : &p->klast;
        *first = k->ts < *first ? k->ts : *first;
        *last = k->end > *last ? k->end : *last;
        g->linked++;
    }
    sc_free(iv);
    return SC_OK;
}

void sc_pt_gpu_note(const sc_ptrace *t, char *note, size_t notelen)
{
    const pt_gpu *g = &t->gpu;
    char what[320];
    if (g->lseen > 0 && g->kseen == 0)
        snprintf(what, sizeof what, "the traces hold %d CUDA launches but no kernel: the costs are "
                 "the CPU's launch times, not the GPU's (record the kernels with torch.profiler."
                 "profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]))", g->lseen);
    else if (g->kseen > 0 && g->linked == 0)
        snprintf(what, sizeof what, "the traces hold %d GPU kernels, but none was launched inside "
                 "a span (args.correlation of a cuda_runtime launch): the costs are the CPU's",
                 g->kseen);
    else
        return;
    size_t at = strlen(note);
    snprintf(note + at, at < notelen ? notelen - at : 0, "%s%s", at ? "; " : "", what);
}
