/*
 * compare.c — a measured step against its prediction (compare.h).
 */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc_comparison_free(sc_comparison *c)
{
    if (!c)
        return;
    free(c->m_end);
    free(c->p_end);
    free(c->dev_error);
    free(c->items);
    free(c->passes);
    free(c);
}

/* End and busy time (compute and OPTIM) of device d in a timing. */
static void device_times(const sc_prog *pg, const sc_sim *t, int d, double *end, double *busy)
{
    size_t n;
    const sc_instr *in = sc_prog_stream(pg, d, &n);
    *end = 0;
    *busy = 0;
    for (size_t k = 0; k < n; k++) {
        size_t g = t->offset[d] + k;
        if (isfinite(t->t1[g]))
            *end = fmax(*end, t->t1[g]);
        if ((sc_op_is_compute(in[k].op) || in[k].op == SC_OP_OPTIM) && isfinite(t->t0[g]) &&
            isfinite(t->t1[g]))
            *busy += t->t1[g] - t->t0[g];
    }
}

/* Where device d's idle time went in a timing: waiting for a peer to send
 * the data a pass reads (until the SEND was posted), for the transfer
 * itself (from then until the pass could start), and the rest (the start,
 * gaps before passes that read nothing, the executor between instructions). */
typedef struct idle {
    double start, peer, xfer, rest;
} idle;

static size_t key_of(const sc_prog *pg, int dir, int s, int mb)
{
    return ((size_t)dir * (size_t)sc_prog_stages(pg) + (size_t)s) *
               (size_t)sc_prog_stream_microbatches(pg) + (size_t)mb;
}

/* send: global index of the SEND of each key; recv: scratch of that size. */
static idle idle_of(const sc_prog *pg, const sc_sim *t, const size_t *send, size_t *recv, int d)
{
    size_t n;
    const sc_instr *in = sc_prog_stream(pg, d, &n);
    size_t K = 2 * (size_t)sc_prog_stages(pg) * (size_t)sc_prog_stream_microbatches(pg);
    for (size_t i = 0; i < K; i++)
        recv[i] = 0;
    for (size_t k = 0; k < n; k++)
        if (sc_op_is_recv(in[k].op))
            recv[key_of(pg, in[k].dir, in[k].stage, in[k].mb)] = 1;
    idle w = {0, 0, 0, 0};
    /* Before its first instruction the device had not started (a thread
     * scheduled late); then free_at is the end of the last busy one. */
    double free_at = n ? fmax(t->t0[t->offset[d]], 0) : 0;
    if (!isfinite(free_at))
        free_at = 0;
    w.start = free_at;
    for (size_t k = 0; k < n; k++) {
        size_t g = t->offset[d] + k;
        int op = in[k].op;
        if (!sc_op_is_compute(op) && op != SC_OP_OPTIM)
            continue;
        double gap = fmax(t->t0[g] - free_at, 0);
        size_t s = (size_t)-1;
        if (sc_op_is_fwd(op) || sc_op_is_bgrad(op)) {
            size_t kk = key_of(pg, sc_op_is_fwd(op) ? SC_DIR_ACT : SC_DIR_GRAD, in[k].stage,
                               in[k].mb);
            if (recv[kk])
                s = send[kk]; /* it reads a received tensor */
        }
        if (s != (size_t)-1 && isfinite(t->t0[s])) {
            double peer = fmin(fmax(t->t0[s] - free_at, 0), gap);
            w.peer += peer;
            w.xfer += gap - peer;
        } else {
            w.rest += gap;
        }
        free_at = fmax(free_at, t->t1[g]);
    }
    return w;
}

/* Index of each SEND by key (dir, stage, mb), global over the streams. */
static size_t *index_sends(const sc_prog *pg, const sc_sim *t)
{
    size_t K = 2 * (size_t)sc_prog_stages(pg) * (size_t)sc_prog_stream_microbatches(pg);
    size_t *send = malloc(K * sizeof(size_t));
    if (!send)
        return NULL;
    for (size_t i = 0; i < K; i++)
        send[i] = (size_t)-1;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++)
            if (sc_op_is_send(in[k].op))
                send[key_of(pg, in[k].dir, in[k].stage, in[k].mb)] = t->offset[d] + k;
    }
    return send;
}

static int by_size(const void *a, const void *b)
{
    const sc_contrib *x = a, *y = b;
    double dx = fabs(x->measured - x->predicted), dy = fabs(y->measured - y->predicted);
    return dx < dy ? 1 : dx > dy ? -1 : 0;
}

/* Pass totals of every (stage, kind): measured and predicted. */
/* The time instruction g ran without its thread's core (0 when unknown). */
static double coreless(const sc_sim *ms, const double *cpu, size_t g)
{
    double wall = ms->t1[g] - ms->t0[g];
    return cpu && isfinite(cpu[g]) && isfinite(wall) ? fmax(wall - fmax(cpu[g], 0), 0) : 0;
}

static sc_status pass_totals(const sc_prog *pg, const sc_sim *pr, const sc_sim *ms,
                             const double *cpu, sc_comparison *c)
{
    int S = sc_prog_stages(pg);
    sc_pass_total *t = calloc(SC_STAGE_PASSES * (size_t)S, sizeof *t);
    if (!(c->passes = t))
        return SC_ERR_NOMEM;
    for (int s = 0; s < S; s++)
        for (int op = 0; op < SC_STAGE_PASSES; op++) /* F, B, W, BW */
            t[SC_STAGE_PASSES * s + op] = (sc_pass_total){op, s, sc_prog_stage_device(pg, s), 0,
                                                          0, 0, 0};
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *in = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++) {
            int i = sc_op_stage_index(in[k].op);
            if (i < 0)
                continue;
            size_t g = ms->offset[d] + k;
            sc_pass_total *x = &t[SC_STAGE_PASSES * in[k].stage + i];
            x->count++;
            x->measured += ms->t1[g] - ms->t0[g];
            x->predicted += pr->t1[g] - pr->t0[g];
            x->coreless += coreless(ms, cpu, g);
        }
    }
    int j = 0;
    for (int i = 0; i < SC_STAGE_PASSES * S; i++)
        if (t[i].count)
            t[j++] = t[i];
    c->npasses = j;
    return SC_OK;
}

sc_status sc_compare(const sc_prog *pg, const sc_sim *pr, const sc_sim *ms, const double *cpu,
                     sc_comparison **out)
{
    int P = sc_prog_devices(pg);
    *out = NULL;
    size_t N = 0;
    for (int d = 0; d < P; d++) {
        size_t n;
        sc_prog_stream(pg, d, &n);
        N += n;
    }
    if (pr->P != P || ms->P != P || pr->offset[P] != N || ms->offset[P] != N)
        return SC_ERR_ARG;
    sc_comparison *c = calloc(1, sizeof *c);
    if (!c)
        return SC_ERR_NOMEM;
    c->P = P;
    c->m_end = calloc((size_t)P, sizeof(double));
    c->p_end = calloc((size_t)P, sizeof(double));
    c->dev_error = calloc((size_t)P, sizeof(double));
    double *mb = calloc((size_t)P, sizeof(double)), *pb = calloc((size_t)P, sizeof(double));
    size_t *ms_send = index_sends(pg, ms), *pr_send = index_sends(pg, pr);
    sc_status st = SC_ERR_NOMEM;
    if (!c->m_end || !c->p_end || !c->dev_error || !mb || !pb || !ms_send || !pr_send ||
        pass_totals(pg, pr, ms, cpu, c) != SC_OK)
        goto done;
    for (int d = 0; d < P; d++) {
        device_times(pg, ms, d, &c->m_end[d], &mb[d]);
        device_times(pg, pr, d, &c->p_end[d], &pb[d]);
        c->dev_error[d] = c->p_end[d] > 0 ? c->m_end[d] / c->p_end[d] - 1 : NAN;
        if (c->m_end[d] > c->measured) {
            c->measured = c->m_end[d];
            c->critical = d;
        }
        c->predicted = fmax(c->predicted, c->p_end[d]);
    }
    c->error = c->predicted > 0 ? c->measured / c->predicted - 1 : NAN;
    /* The critical device's difference, in parts (compare.h). */
    int d = c->critical, S = sc_prog_stages(pg);
    if (!(c->items = calloc(SC_STAGE_PASSES * (size_t)S + 6, sizeof *c->items)))
        goto done;
    /* Passes and OPTIM: their time without a core goes to a part of its
     * own, so that theirs say how much slower the work itself was. */
    double mo = mb[d], po = pb[d], lost = 0;
    for (int i = 0; i < c->npasses; i++) {
        const sc_pass_total *x = &c->passes[i];
        if (x->device != d)
            continue;
        sc_contrib *it = &c->items[c->n++];
        *it = (sc_contrib){SC_CONTRIB_PASS, x->op, x->stage, d, x->measured - x->coreless,
                           x->predicted, ""};
        snprintf(it->what, sizeof it->what, "%s s%d on d%d", sc_op_name(x->op), x->stage, d);
        mo -= x->measured;
        po -= x->predicted;
        lost += x->coreless;
    }
    size_t nd;
    const sc_instr *ind = sc_prog_stream(pg, d, &nd);
    double lost_optim = 0;
    for (size_t k = 0; k < nd; k++)
        if (ind[k].op == SC_OP_OPTIM)
            lost_optim += coreless(ms, cpu, ms->offset[d] + k);
    sc_contrib *it = &c->items[c->n++];
    *it = (sc_contrib){SC_CONTRIB_OPTIM, SC_OP_OPTIM, -1, d, mo - lost_optim, po, ""};
    snprintf(it->what, sizeof it->what, "OPTIM on d%d", d);
    if (cpu) {
        it = &c->items[c->n++];
        *it = (sc_contrib){SC_CONTRIB_CORE, -1, -1, d, lost + lost_optim, 0, ""};
        snprintf(it->what, sizeof it->what, "d%d's passes without their core", d);
    }
    size_t K = 2 * (size_t)S * (size_t)sc_prog_stream_microbatches(pg);
    size_t *scratch = malloc(K * sizeof(size_t));
    if (!scratch)
        goto done;
    idle mi = idle_of(pg, ms, ms_send, scratch, d), pi = idle_of(pg, pr, pr_send, scratch, d);
    free(scratch);
    /* The idle time: end - busy = start + peer + transfer + rest, in both. */
    mi.rest = c->m_end[d] - mb[d] - mi.start - mi.peer - mi.xfer;
    pi.rest = c->p_end[d] - pb[d] - pi.start - pi.peer - pi.xfer;
    it = &c->items[c->n++];
    *it = (sc_contrib){SC_CONTRIB_START, -1, -1, d, mi.start, pi.start, ""};
    snprintf(it->what, sizeof it->what, "the start of d%d (its first instruction)", d);
    it = &c->items[c->n++];
    *it = (sc_contrib){SC_CONTRIB_TRANSFER, SC_OP_RECV, -1, d, mi.xfer, pi.xfer, ""};
    snprintf(it->what, sizeof it->what, "transfers into d%d", d);
    it = &c->items[c->n++];
    *it = (sc_contrib){SC_CONTRIB_WAIT, -1, -1, d, mi.peer, pi.peer, ""};
    snprintf(it->what, sizeof it->what, "waiting on d%d for its peers' data", d);
    it = &c->items[c->n++];
    *it = (sc_contrib){SC_CONTRIB_REST, -1, -1, d, mi.rest, pi.rest, ""};
    snprintf(it->what, sizeof it->what, "idle on d%d otherwise (the executor, gaps)", d);
    qsort(c->items, (size_t)c->n, sizeof *c->items, by_size);
    st = SC_OK;
done:
    free(mb);
    free(pb);
    free(ms_send);
    free(pr_send);
    if (st) {
        sc_comparison_free(c);
        c = NULL;
    }
    *out = c;
    return st;
}

void sc_contrib_describe(const sc_contrib *x, char *buf, size_t len)
{
    double delta = x->measured - x->predicted;
    const char *why;
    switch (x->kind) {
    case SC_CONTRIB_PASS:
    case SC_CONTRIB_OPTIM:
        why = delta > 0 ? "slower than profiled" : "faster than profiled";
        break;
    case SC_CONTRIB_TRANSFER:
        why = delta > 0 ? "transfers slower than profiled" : "transfers faster than profiled";
        break;
    case SC_CONTRIB_START:
        why = delta > 0 ? "it started late" : "it started early";
        break;
    case SC_CONTRIB_CORE:
        why = "its thread waited while other processes ran on its core";
        break;
    case SC_CONTRIB_WAIT:
        why = delta > 0 ? "its peers' data came later than predicted"
                        : "its peers' data came earlier than predicted";
        break;
    default:
        why = delta > 0 ? "more idle time than predicted" : "less idle time than predicted";
        break;
    }
    snprintf(buf, len, "%s: %.4g ms measured, %.4g ms predicted (%+.4g ms, %s)", x->what,
             1e3 * x->measured, 1e3 * x->predicted, 1e3 * delta, why);
}
