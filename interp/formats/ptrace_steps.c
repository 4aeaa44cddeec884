/*
 * ptrace_steps.c — the steps of the spans read from traces
 * (ptrace_impl.h): an action with a microbatch occurs once per step, so
 * its k-th occurrence is in step k; an action without one takes the step
 * of the passes around it. n log n in the spans (sorts), whatever the
 * number of devices or steps.
 */
#include "ptrace_impl.h"
#include "errbuf.h"

#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"

const char *sc_pt_kind_name(int k)
{
    static const char *const n[PT_KINDS] = {
        "F", "I", "W", "B", "OVERLAP_F_B", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "post",
        "WAIT_SEND_F", "WAIT_SEND_B", "WAIT_REDUCE_GRAD", "UNSHARD", "RESHARD", "REDUCE_GRAD",
        "wait"};
    return n[k];
}

const char *sc_pt_span_name(const pt_span *p, char *buf, size_t len)
{
    if (p->src == PT_SRC_GPIPE)
        snprintf(buf, len, "%s %d", p->kind == PT_F ? "Forward" : "Backward", p->mb);
    else if (p->src == PT_SRC_PY && p->kind == PT_WAIT)
        snprintf(buf, len, "_wait_batch_p2p");
    else if (p->src == PT_SRC_PY && !pt_pass(p->kind))
        snprintf(buf, len, "_batch_p2p");
    else if (p->src == PT_SRC_PY)
        snprintf(buf, len, "%s, microbatch %d",
                 p->kind == PT_F ? "forward_one_chunk" : "backward_one_chunk", p->mb);
    else if (p->kind == PT_FB)
        snprintf(buf, len, "PP:(%dF%d;%d%s%d)OVERLAP_F_B", p->stage, p->mb, p->stage2,
                 sc_pt_kind_name(p->kind2), p->mb2);
    else if (p->mb >= 0)
        snprintf(buf, len, "PP:%d%s%d", p->stage, sc_pt_kind_name(p->kind), p->mb);
    else
        snprintf(buf, len, "PP:%d%s", p->stage, sc_pt_kind_name(p->kind));
    return buf;
}

sc_status sc_pt_add_span(sc_ptrace *t, const pt_span *s)
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
    t->sp[t->n++] = *s;
    return SC_OK;
}

/* Orders spans by action (kind, stage, microbatch), then step, device,
 * time: the k-th of an action on a device is its step k. */
int sc_pt_cmp_action(const void *a, const void *b)
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

int sc_pt_cmp_dev_time(const void *a, const void *b)
{
    const pt_span *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev - y->dev;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int same_action(const pt_span *x, const pt_span *y)
{
    return x->kind == y->kind && x->stage == y->stage && x->mb == y->mb && x->dev == y->dev;
}

/* Every stage's actions come from one rank. */
static sc_status one_rank(const sc_ptrace *t, int S, char *err, size_t errlen)
{
    int *where = sc_malloc((size_t)(S > 0 ? S : 1) * sizeof *where);
    if (!where)
        return SC_ERR_NOMEM;
    for (int s = 0; s < S; s++)
        where[s] = -1;
    for (int i = 0; i < t->n; i++) {
        const pt_span *p = &t->sp[i];
        if (where[p->stage] >= 0 && t->sp[where[p->stage]].dev != p->dev) {
            const pt_span *q = &t->sp[where[p->stage]];
            char a[80];
            sc_free(where);
            return sc_errbuf(err, errlen, "%s: event %d (%s): stage %d runs on two ranks (also in "
                             "%s, event %d): a stage's actions come from one rank",
                             t->files[p->file], p->event, sc_pt_span_name(p, a, sizeof a),
                             p->stage, t->files[q->file], q->event);
        }
        where[p->stage] = i;
    }
    sc_free(where);
    return SC_OK;
}

/* The actions with a microbatch: the k-th on its device is in step k
 * (unless its step was read: a single-stage schedule's step() calls), and
 * each is in every step. */
static sc_status keyed_steps(sc_ptrace *t, int *steps, char *err, size_t errlen)
{
    pt_span *sp = t->sp;
    int n = t->n;
    if (n > 0) /* the steps not read are -1: by device, time */
        qsort(sp, (size_t)n, sizeof *sp, sc_pt_cmp_action);
    *steps = 0;
    for (int i = 0, k = 0; i < n; i++) {
        k = i > 0 && same_action(&sp[i - 1], &sp[i]) ? k + 1 : 0;
        if (sp[i].mb < 0)
            continue;
        if (sp[i].step < 0)
            sp[i].step = k;
        if (k + 1 > *steps)
            *steps = k + 1;
    }
    for (int i = 0, k = 0; i < n; i++) { /* each action: steps times */
        const pt_span *p = &sp[i];
        k = i > 0 && same_action(&sp[i - 1], p) ? k + 1 : 0;
        int last = i + 1 == n || !same_action(&sp[i + 1], p);
        if (p->mb >= 0 && last && k + 1 != *steps) {
            char a[80];
            return sc_errbuf(err, errlen, "%s: event %d (%s): in %d step%s, but the traces hold "
                             "%d: give whole steps (start and stop the profiler between steps)",
                             t->files[p->file], p->event, sc_pt_span_name(p, a, sizeof a), k + 1,
                             k ? "s" : "", *steps);
        }
    }
    return SC_OK;
}

/* The actions without a microbatch: the step of the passes around them on
 * their device; between two steps, UNSHARD opens the next one, the others
 * (RESHARD, REDUCE_GRAD, its wait) close the one before. */
static sc_status other_steps(sc_ptrace *t)
{
    pt_span *sp = t->sp;
    int n = t->n, *next = sc_malloc((size_t)(n ? n : 1) * sizeof *next);
    if (!next)
        return SC_ERR_NOMEM;
    if (n > 0)
        qsort(sp, (size_t)n, sizeof *sp, sc_pt_cmp_dev_time);
    for (int i = n - 1, nx = -1; i >= 0; i--) { /* the step of the next keyed span */
        if (i + 1 < n && sp[i + 1].dev != sp[i].dev)
            nx = -1;
        next[i] = nx;
        if (sp[i].mb >= 0)
            nx = sp[i].step;
    }
    for (int i = 0, pv = -1; i < n; i++) {
        if (i > 0 && sp[i - 1].dev != sp[i].dev)
            pv = -1;
        pt_span *p = &sp[i];
        if (p->mb >= 0) {
            pv = p->step;
            continue;
        }
        if (p->step >= 0)
            continue; /* read from the trace */
        p->step = pv < 0 ? next[i] : next[i] < 0 || pv == next[i] ? pv
                                                                  : p->kind == PT_UNSHARD ? next[i] : pv;
    }
    sc_free(next);
    return SC_OK;
}

sc_status sc_pt_number_steps(sc_ptrace *t, int S, int *steps, char *err, size_t errlen)
{
    sc_status st = one_rank(t, S, err, errlen);
    if (st == SC_OK)
        st = keyed_steps(t, steps, err, errlen);
    if (st == SC_OK)
        st = other_steps(t);
    if (st == SC_OK && t->n > 0) /* by action, then step: transfers and consumers by bsearch */
        qsort(t->sp, (size_t)t->n, sizeof *t->sp, sc_pt_cmp_action);
    return st;
}
