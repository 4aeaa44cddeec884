/*
 * ptrace_single.c — the spans of the single-stage schedules (ptrace_impl.h,
 * pt_cand): PyTorch 2.15's ScheduleGPipe and Schedule1F1B run outside
 * _PipelineScheduleRuntime and name no action PP:... . GPipe wraps each
 * pass in record_function("Forward <mb>") or ("Backward <mb>"), the post of
 * its receive and the wait for it inside; Schedule1F1B records no span of
 * its own. With torch.profiler's with_stack=True both record the Python
 * functions they call, which time every pass exactly:
 *
 *     torch/distributed/pipelining/stage.py(1142): forward_one_chunk     F
 *     torch/distributed/pipelining/stage.py(1237): backward_one_chunk    B (full)
 *     torch/distributed/pipelining/schedules.py(844): _batch_p2p         posts
 *     torch/distributed/pipelining/schedules.py(953): _wait_batch_p2p    waits
 *     torch/distributed/pipelining/schedules.py(1090): step              a step
 *
 * A single-stage schedule runs its microbatches in order, forward and
 * backward: the k-th forward_one_chunk of a step is microbatch k.
 */
#include "ptrace_impl.h"
#include "errbuf.h"

#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"

/* The Python functions read, by file and function (with_stack=True). */
enum { PY_NONE, PY_F, PY_B, PY_POST, PY_WAIT, PY_STEP };

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

static int py_kind(const char *name, const char *cat)
{
    if (strcmp(cat, "python_function") != 0)
        return PY_NONE;
    if (strstr(name, "pipelining/stage.py(")) {
        if (ends_with(name, "): forward_one_chunk"))
            return PY_F;
        if (ends_with(name, "): backward_one_chunk"))
            return PY_B;
    } else if (strstr(name, "pipelining/schedules.py(")) {
        if (ends_with(name, "): _batch_p2p"))
            return PY_POST;
        if (ends_with(name, "): _wait_batch_p2p"))
            return PY_WAIT;
        if (ends_with(name, "): step"))
            return PY_STEP;
    }
    return PY_NONE;
}

/* GPipe's "Forward <mb>", "Backward <mb>": PT_F or PT_B and the
 * microbatch, or -1. */
static int gpipe_kind(const char *name, int *mb)
{
    int kind = strncmp(name, "Forward ", 8) == 0 ? PT_F : strncmp(name, "Backward ", 9) == 0 ? PT_B
                                                                                           : -1;
    if (kind < 0)
        return -1;
    const char *s = name + (kind == PT_F ? 8 : 9);
    char *end;
    long m = strtol(s, &end, 10);
    if (end == s || *end || m < 0 || m > 1000000)
        return -1;
    *mb = (int)m;
    return kind;
}

int sc_pt_single_name(const char *name, const char *cat)
{
    int mb;
    return py_kind(name, cat) != PY_NONE || gpipe_kind(name, &mb) >= 0;
}

static sc_status push(pt_span **v, int *n, int *cap, const pt_span *s)
{
    if (*n == *cap) {
        if (*cap > (1 << 28))
            return SC_ERR_NOMEM;
        int c = *cap ? 2 * *cap : 64;
        pt_span *g = sc_realloc(*v, (size_t)c * sizeof *g);
        if (!g)
            return SC_ERR_NOMEM;
        *v = g, *cap = c;
    }
    (*v)[(*n)++] = *s;
    return SC_OK;
}

sc_status sc_pt_single_add(pt_cand *c, const char *name, const char *cat, const pt_span *sp)
{
    pt_span s = *sp;
    s.stage = -1, s.stage2 = s.mb2 = s.kind2 = -1, s.mb = -1;
    int py = py_kind(name, cat);
    if (py == PY_STEP)
        return push(&c->mark, &c->nmark, &c->markcap, &s);
    if (py != PY_NONE) {
        s.src = PT_SRC_PY;
        s.kind = py == PY_F ? PT_F : py == PY_B ? PT_B : py == PY_POST ? PT_POST : PT_WAIT;
        c->py += pt_pass(s.kind);
    } else {
        s.src = PT_SRC_GPIPE;
        s.kind = gpipe_kind(name, &s.mb);
        c->gpipe++;
    }
    return push(&c->sp, &c->n, &c->cap, &s);
}

void sc_pt_single_free(pt_cand *c)
{
    sc_free(c->sp);
    sc_free(c->mark);
    memset(c, 0, sizeof *c);
}

/* The Python spans: each in the call of step() around it (its step), the
 * passes numbered in order within it (their microbatch). */
static sc_status python_spans(sc_ptrace *t, pt_cand *c, const char *file, char *err,
                              size_t errlen)
{
    if (c->nmark > 0) /* qsort of NULL is undefined, even of none */
        qsort(c->mark, (size_t)c->nmark, sizeof *c->mark, sc_pt_cmp_dev_time);
    int nm = 0;
    for (int i = 0; i < c->nmark; i++) { /* the outermost calls: one per step */
        pt_span m = c->mark[i];
        int same = nm && c->mark[nm - 1].dev == m.dev;
        if (same && m.ts < c->mark[nm - 1].end)
            continue;
        m.step = same ? c->mark[nm - 1].step + 1 : 0; /* its index among its device's */
        c->mark[nm++] = m;
    }
    if (c->n > 0)
        qsort(c->sp, (size_t)c->n, sizeof *c->sp, sc_pt_cmp_dev_time);
    int j = 0, step = -1, dev = -1, nf = 0, nb = 0; /* j: the call at or after the span */
    for (int i = 0; i < c->n; i++) {
        pt_span s = c->sp[i];
        if (s.src != PT_SRC_PY)
            continue;
        if (s.dev != dev)
            dev = s.dev, step = -1;
        while (j < nm && (c->mark[j].dev < s.dev || (c->mark[j].dev == s.dev &&
                                                      c->mark[j].end < s.ts)))
            j++;
        if (j == nm || c->mark[j].dev != s.dev || c->mark[j].ts > s.ts) {
            if (!pt_pass(s.kind))
                continue; /* a post or wait between the steps */
            return sc_errbuf(err, errlen, "%s: event %d (%s): no call of the schedule's step() "
                             "around it (schedules.py: step): record whole steps with "
                             "with_stack=True", file, s.event,
                             s.kind == PT_F ? "forward_one_chunk" : "backward_one_chunk");
        }
        int k = c->mark[j].step;
        if (k != step)
            step = k, nf = nb = 0;
        s.step = k;
        if (pt_pass(s.kind))
            s.mb = s.kind == PT_F ? nf++ : nb++;
        sc_status st = sc_pt_add_span(t, &s);
        if (st != SC_OK)
            return st;
    }
    return SC_OK;
}

sc_status sc_pt_single_end(sc_ptrace *t, pt_cand *c, const char *file, char *err, size_t errlen)
{
    if (c->n || c->nmark)
        t->single = 1;
    if (c->py)
        return python_spans(t, c, file, err, errlen);
    for (int i = 0; i < c->n && c->gpipe; i++) /* GPipe's spans, with their microbatches */
        if (c->sp[i].src == PT_SRC_GPIPE) {
            sc_status st = sc_pt_add_span(t, &c->sp[i]);
            if (st != SC_OK)
                return st;
        }
    return SC_OK;
}
