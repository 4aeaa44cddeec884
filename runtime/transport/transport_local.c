/*
 * transport_local.c — the in-process transport: devices are threads of one
 * process; a transfer is a memcpy done by whichever side starts second.
 *
 * One table of slots indexed by tag holds the side that started first. The
 * second side copies the data, and both groups count one transfer down. One
 * mutex guards everything: transfers are few per pass (one or two per F and
 * B), so contention is negligible next to the matrix products. Each device
 * waits on a condition variable of its own, and a match wakes only the
 * device that posted first (the one waiting, if any): with one variable for
 * all, every match woke every waiting device, and the context switches per
 * instruction grew with P (issue 34).
 *
 * Collectives: the k-th collective of every device meets in a shared slot
 * (a ring of NCS slots: a device starts its k-th only when its (k-1)-th has
 * completed, which needs every device to have started that one, so slot k
 * is free again). The last device to arrive reduces the members' buffers
 * element by element in device order 0..P-1 (the same bits on every run)
 * and writes the result into every buffer; the others find it done: one
 * shared buffer set and a barrier per collective. An all-to-all meets the
 * same way; the last arrival moves every member's rows (coll_host.h).
 */
#include "transport.h"
#include "coll_host.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <time.h>

typedef struct lgroup {
    int remaining;
} lgroup;

typedef struct slot {
    int posted;       /* 0 empty, 1 a send waits, 2 a receive waits */
    int dev, peer;
    void *buf;
    size_t bytes;
    lgroup *g;
} slot;

#define NCS 4

typedef struct cslot {
    long gen;         /* the collective number it serves, -1: none yet */
    int arrived, done;
    double t_done;    /* when it completed (monotonic seconds) */
    sc_cxfer x;       /* the first arrival's description */
    void **buf;       /* [P] members' buffers */
} cslot;

typedef struct chandle {
    int slot;
    long gen;
} chandle;

typedef struct local {
    int P, max_tag;
    cslot cs[NCS];
    long *cseq;       /* [P] each device's next collective number */
    double timeout_s;
    double a2a_delay; /* STAGECRAFT_A2A_LATENCY_US: an all-to-all completes this many
                       * seconds after its last member arrived (a real sleep) */
    pthread_mutex_t mu;
    pthread_cond_t *cv; /* [P] device d waits on cv[d] */
    slot *slots;      /* [max_tag] */
    int aborted;
    char err[256];
} local;

/* Wakes every device (an abort, a completed collective); c->mu held. */
static void wake_all(local *c)
{
    for (int d = 0; d < c->P; d++)
        pthread_cond_signal(&c->cv[d]);
}

static sc_status fail_locked(local *c, const char *fmt, int a, int b, int t)
{
    if (!c->aborted) {
        c->aborted = 1;
        snprintf(c->err, sizeof c->err, fmt, a, b, t);
    }
    wake_all(c);
    return SC_ERR_RUNTIME;
}

static sc_status local_start(void *ctx, int dev, const sc_xfer *x, int n, void **group)
{
    local *c = ctx;
    lgroup *g = malloc(sizeof *g);
    *group = g;
    if (!g)
        return SC_ERR_NOMEM;
    g->remaining = n;
    sc_status st = SC_OK;
    pthread_mutex_lock(&c->mu);
    if (c->aborted)
        st = SC_ERR_RUNTIME; /* the peers' buffers may be gone: match nothing */
    for (int i = 0; i < n && !st; i++) {
        const sc_xfer *t = &x[i];
        if (t->tag < 0 || t->tag >= c->max_tag || t->peer < 0 || t->peer >= c->P) {
            st = fail_locked(c, "local transport: d%d posted a transfer to d%d with tag %d out "
                                "of range", dev, t->peer, t->tag);
            break;
        }
        slot *s = &c->slots[t->tag];
        int want = t->send ? 2 : 1; /* the other side */
        if (s->posted == 0) {
            *s = (slot){.posted = t->send ? 1 : 2, .dev = dev, .peer = t->peer, .buf = t->buf,
                        .bytes = t->bytes, .g = g};
            continue;
        }
        if (s->posted != want || s->dev != t->peer || s->peer != dev || s->bytes != t->bytes) {
            st = fail_locked(c, "local transport: d%d and d%d disagree on transfer tag %d", dev,
                             s->dev, t->tag);
            break;
        }
        if (t->send)
            memcpy(s->buf, t->buf, t->bytes);
        else
            memcpy(t->buf, s->buf, t->bytes);
        g->remaining--;
        s->g->remaining--;
        s->posted = 0;
        if (s->g->remaining == 0)
            pthread_cond_signal(&c->cv[s->dev]); /* its group is complete */
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static sc_status local_test(void *ctx, int dev, void *group, int *done)
{
    local *c = ctx;
    lgroup *g = group;
    (void)dev;
    pthread_mutex_lock(&c->mu);
    *done = g->remaining == 0;
    int aborted = c->aborted;
    pthread_mutex_unlock(&c->mu);
    return aborted && !*done ? SC_ERR_RUNTIME : SC_OK;
}

static sc_status local_wait(void *ctx, int dev, void *group)
{
    local *c = ctx;
    lgroup *g = group;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    double t = (double)dl.tv_sec + dl.tv_nsec * 1e-9 + c->timeout_s;
    dl.tv_sec = (time_t)t;
    dl.tv_nsec = (long)((t - (double)dl.tv_sec) * 1e9);
    sc_status st = SC_OK;
    pthread_mutex_lock(&c->mu);
    while (g->remaining > 0 && !c->aborted) {
        int rc = c->timeout_s > 0 ? pthread_cond_timedwait(&c->cv[dev], &c->mu, &dl)
                                  : pthread_cond_wait(&c->cv[dev], &c->mu);
        if (rc == ETIMEDOUT && g->remaining > 0) {
            fail_locked(c, "local transport: d%d waited %d s for a transfer group (%d "
                           "transfers unmatched); giving up",
                        dev, (int)c->timeout_s, g->remaining);
            break;
        }
    }
    if (g->remaining > 0)
        st = SC_ERR_RUNTIME;
    pthread_mutex_unlock(&c->mu);
    return st;
}

static void local_release(void *ctx, int dev, void *group)
{
    (void)ctx;
    (void)dev;
    free(group);
}

static void local_abort(void *ctx, int dev, const char *why)
{
    local *c = ctx;
    pthread_mutex_lock(&c->mu);
    if (!c->aborted) {
        c->aborted = 1;
        snprintf(c->err, sizeof c->err, "d%d failed: %s", dev, why);
    }
    wake_all(c);
    pthread_mutex_unlock(&c->mu);
}

static const char *local_errmsg(void *ctx)
{
    return ((local *)ctx)->err;
}

/* A collective's arrival (coll_start, a2a_start): x its description, buf
 * its buffer (an all-to-all's: its sc_a2a_part). */
static sc_status arrive(local *c, int dev, const sc_cxfer *x, void *buf, void **h);

static sc_status local_coll_start(void *ctx, int dev, const sc_cxfer *x, void **h)
{
    return arrive(ctx, dev, x, x->buf, h);
}

/* The all-to-all's description: its kind, red -1 (no reduction has it),
 * its row size as the count. */
#define A2A_RED (-1)
static sc_status local_a2a_start(void *ctx, int dev, sc_a2a_part *x, void **h)
{
    sc_cxfer d = {.op = x->op, .red = A2A_RED, .dtype = SC_DT_F32, .count = x->row};
    return arrive(ctx, dev, &d, x, h);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static sc_status arrive(local *c, int dev, const sc_cxfer *x, void *buf, void **h)
{
    chandle *hd = malloc(sizeof *hd);
    *h = hd;
    if (!hd)
        return SC_ERR_NOMEM;
    sc_status st = SC_OK;
    pthread_mutex_lock(&c->mu);
    long k = c->cseq[dev]++;
    cslot *s = &c->cs[k % NCS];
    *hd = (chandle){(int)(k % NCS), k};
    if (c->aborted) {
        st = SC_ERR_RUNTIME;
    } else if (s->gen != k) {
        s->gen = k;
        s->arrived = s->done = 0;
        s->x = *x;
    } else if (!sc_coll_same(&s->x, x)) {
        st = fail_locked(c, "local transport: d%d's collective %d is not the one the others "
                            "posted (kind, reduction, root, type or count differ)%.0d",
                         dev, (int)k, 0);
    }
    if (!st) {
        s->buf[dev] = buf;
        if (++s->arrived == c->P) {
            if (s->x.red == A2A_RED) /* an all-to-all: the parts */
                sc_a2a_host_complete((sc_a2a_part *const *)s->buf, c->P);
            else
                sc_coll_host_complete(&s->x, s->buf, c->P);
            s->done = 1;
            s->t_done = mono_now();
            wake_all(c);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static sc_status local_coll_test(void *ctx, int dev, void *h, int *done)
{
    local *c = ctx;
    chandle *hd = h;
    (void)dev;
    pthread_mutex_lock(&c->mu);
    const cslot *s = &c->cs[hd->slot];
    *done = s->gen == hd->gen && s->done &&
            (s->x.red != A2A_RED || mono_now() >= s->t_done + c->a2a_delay);
    int aborted = c->aborted;
    pthread_mutex_unlock(&c->mu);
    return aborted && !*done ? SC_ERR_RUNTIME : SC_OK;
}

static sc_status local_coll_wait(void *ctx, int dev, void *h)
{
    local *c = ctx;
    chandle *hd = h;
    cslot *s = &c->cs[hd->slot];
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    double t = (double)dl.tv_sec + dl.tv_nsec * 1e-9 + c->timeout_s;
    dl.tv_sec = (time_t)t;
    dl.tv_nsec = (long)((t - (double)dl.tv_sec) * 1e9);
    pthread_mutex_lock(&c->mu);
    while (!(s->gen == hd->gen && s->done) && !c->aborted) {
        int rc = c->timeout_s > 0 ? pthread_cond_timedwait(&c->cv[dev], &c->mu, &dl)
                                  : pthread_cond_wait(&c->cv[dev], &c->mu);
        if (rc == ETIMEDOUT && !(s->gen == hd->gen && s->done)) {
            fail_locked(c, "local transport: d%d waited %d s for collective %d; giving up", dev,
                        (int)c->timeout_s, (int)hd->gen);
            break;
        }
    }
    sc_status st = s->gen == hd->gen && s->done ? SC_OK : SC_ERR_RUNTIME;
    double until = !st && s->x.red == A2A_RED ? s->t_done + c->a2a_delay : 0;
    pthread_mutex_unlock(&c->mu);
    for (double left; (left = until - mono_now()) > 0;) { /* the injected latency */
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return st;
}

static void local_coll_release(void *ctx, int dev, void *h)
{
    (void)ctx;
    (void)dev;
    free(h);
}

static const struct sc_transport_ops local_ops = {
    .name = "local",
    .start = local_start,
    .test = local_test,
    .wait = local_wait,
    .release = local_release,
    .abort = local_abort,
    .errmsg = local_errmsg,
    .coll_start = local_coll_start,
    .a2a_start = local_a2a_start,
    .coll_test = local_coll_test,
    .coll_wait = local_coll_wait,
    .coll_release = local_coll_release,
};

size_t sc_transport_local_bytes(int P, int max_tag)
{
    return ((size_t)max_tag + 1) * sizeof(slot) +
           (size_t)P * (sizeof(long) + NCS * sizeof(void *) + sizeof(pthread_cond_t));
}

sc_status sc_transport_local_new(int P, int max_tag, double timeout_s, sc_transport **out)
{
    *out = NULL;
    sc_transport *tp = calloc(1, sizeof *tp);
    local *c = calloc(1, sizeof *c);
    slot *slots = calloc((size_t)max_tag + 1, sizeof(slot));
    long *cseq = calloc((size_t)P, sizeof(long));
    void **bufs = calloc((size_t)NCS * (size_t)P, sizeof(void *));
    pthread_cond_t *cv = calloc((size_t)P, sizeof *cv);
    if (!tp || !c || !slots || !cseq || !bufs || !cv) {
        free(tp);
        free(c);
        free(slots);
        free(cseq);
        free(bufs);
        free(cv);
        return SC_ERR_NOMEM;
    }
    c->cseq = cseq;
    for (int i = 0; i < NCS; i++)
        c->cs[i] = (cslot){.gen = -1, .buf = bufs + (size_t)i * (size_t)P};
    c->P = P;
    c->max_tag = max_tag;
    c->timeout_s = timeout_s;
    const char *lat = getenv("STAGECRAFT_A2A_LATENCY_US"); /* docs/run.md#expert-parallelism */
    c->a2a_delay = lat && atof(lat) > 0 ? atof(lat) * 1e-6 : 0;
    c->slots = slots;
    pthread_mutex_init(&c->mu, NULL);
    c->cv = cv;
    for (int d = 0; d < P; d++)
        pthread_cond_init(&cv[d], NULL);
    tp->ops = &local_ops;
    tp->ctx = c;
    *out = tp;
    return SC_OK;
}

void sc_transport_local_free(sc_transport *tp)
{
    if (!tp)
        return;
    local *c = tp->ctx;
    pthread_mutex_destroy(&c->mu);
    for (int d = 0; d < c->P; d++)
        pthread_cond_destroy(&c->cv[d]);
    free(c->cv);
    free(c->slots);
    free(c->cseq);
    free(c->cs[0].buf);
    free(c);
    free(tp);
}
