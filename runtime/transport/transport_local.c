/*
 * transport_local.c — the in-process transport: devices are threads of one
 * process; a transfer is a memcpy done by whichever side starts second.
 *
 * One table of slots indexed by tag holds the side that started first. The
 * second side copies the data, and both groups count one transfer down. One
 * mutex and one condition variable guard everything: transfers are few per
 * pass (one or two per F and B), so contention is negligible next to the
 * matrix products.
 */
#include "transport.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

typedef struct local {
    int P, max_tag;
    double timeout_s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *slots;      /* [max_tag] */
    int aborted;
    char err[256];
} local;

static sc_status fail_locked(local *c, const char *fmt, int a, int b, int t)
{
    if (!c->aborted) {
        c->aborted = 1;
        snprintf(c->err, sizeof c->err, fmt, a, b, t);
    }
    pthread_cond_broadcast(&c->cv);
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
    int woke = 0;
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
        woke = 1;
    }
    if (woke)
        pthread_cond_broadcast(&c->cv);
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
        int rc = c->timeout_s > 0 ? pthread_cond_timedwait(&c->cv, &c->mu, &dl)
                                  : pthread_cond_wait(&c->cv, &c->mu);
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
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static const char *local_errmsg(void *ctx)
{
    return ((local *)ctx)->err;
}

static const struct sc_transport_ops local_ops = {
    .name = "local",
    .start = local_start,
    .test = local_test,
    .wait = local_wait,
    .release = local_release,
    .abort = local_abort,
    .errmsg = local_errmsg,
};

sc_status sc_transport_local_new(int P, int max_tag, double timeout_s, sc_transport **out)
{
    *out = NULL;
    sc_transport *tp = calloc(1, sizeof *tp);
    local *c = calloc(1, sizeof *c);
    slot *slots = calloc((size_t)max_tag + 1, sizeof(slot));
    if (!tp || !c || !slots) {
        free(tp);
        free(c);
        free(slots);
        return SC_ERR_NOMEM;
    }
    c->P = P;
    c->max_tag = max_tag;
    c->timeout_s = timeout_s;
    c->slots = slots;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
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
    pthread_cond_destroy(&c->cv);
    free(c->slots);
    free(c);
    free(tp);
}
