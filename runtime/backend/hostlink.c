/*
 * hostlink.c — the host-link copy engine (hostlink.h).
 *
 * A link is full duplex, as the simulator's (docs/offload.md#the-host-link):
 * a channel per direction, each a queue of copies and one thread that takes
 * them in order. Each copy is a ticket: the device that queued it waits on
 * the link's `done` variable until its ticket is marked done (at most the
 * two devices of a pair wait on one link, so a broadcast wakes no crowd). A
 * channel's thread sleeps on its `work` while its queue is empty; free sets
 * `stop`, the threads finish what is queued and return.
 */
#include "hostlink.h"

#include "ir/offload_cfg.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct job {
    struct job *next;
    void *dst;
    const void *src;
    size_t bytes;
    double t0, t1; /* when the thread started and ended the copy */
    int done;
} job;

typedef struct chan {
    struct sc_hostlink *l;
    pthread_cond_t work;
    job *head, *tail;
    pthread_t th;
} chan;

struct sc_hostlink {
    pthread_mutex_t mu;
    pthread_cond_t done;
    chan ch[2]; /* [0] back to the device, [1] to the host */
    int threads; /* started */
    int stop;
};

struct sc_hostlinks {
    int n;             /* links initialized */
    sc_hostlink *link; /* [n] */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* STAGECRAFT_HOST_LINK_GBPS: seconds per byte of the paced link; 0: memcpy's speed. */
static double pace_spb;
static int pace_bad;
static pthread_once_t pace_once = PTHREAD_ONCE_INIT;

static void pace_load(void)
{
    const char *v = getenv("STAGECRAFT_HOST_LINK_GBPS");
    char *end;
    if (!v || !*v)
        return;
    errno = 0;
    double g = strtod(v, &end);
    if (*end || errno || !(g > 0) || !isfinite(g))
        pace_bad = 1;
    else
        pace_spb = 1 / (g * 1e9);
}

void sc_hostlink_copy(void *dst, const void *src, size_t bytes, double *t0, double *t1)
{
    pthread_once(&pace_once, pace_load);
    double a = now();
    memcpy(dst, src, bytes);
    if (pace_spb > 0) { /* sleep, not spin: a link's time costs no core */
        double until = a + (double)bytes * pace_spb, left;
        while ((left = until - now()) > 0) {
            struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    if (t0)
        *t0 = a;
    if (t1)
        *t1 = now();
}

static void *chan_thread(void *arg)
{
    chan *c = arg;
    sc_hostlink *l = c->l;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!c->head && !l->stop)
            pthread_cond_wait(&c->work, &l->mu);
        job *j = c->head;
        if (!j)
            break; /* stopped, nothing queued */
        c->head = j->next;
        if (!c->head)
            c->tail = NULL;
        pthread_mutex_unlock(&l->mu);
        double t0, t1;
        sc_hostlink_copy(j->dst, j->src, j->bytes, &t0, &t1);
        pthread_mutex_lock(&l->mu);
        j->t0 = t0;
        j->t1 = t1;
        j->done = 1;
        pthread_cond_broadcast(&l->done);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

sc_status sc_hostlink_start(sc_hostlink *l, int to_host, void *dst, const void *src,
                            size_t bytes, void **ticket)
{
    job *j = calloc(1, sizeof *j);
    *ticket = j;
    if (!j)
        return SC_ERR_NOMEM;
    j->dst = dst;
    j->src = src;
    j->bytes = bytes;
    chan *c = &l->ch[to_host != 0];
    pthread_mutex_lock(&l->mu);
    if (c->tail)
        c->tail->next = j;
    else
        c->head = j;
    c->tail = j;
    pthread_cond_signal(&c->work);
    pthread_mutex_unlock(&l->mu);
    return SC_OK;
}

sc_status sc_hostlink_wait(sc_hostlink *l, void *ticket, double *t0, double *t1)
{
    job *j = ticket;
    pthread_mutex_lock(&l->mu);
    while (!j->done)
        pthread_cond_wait(&l->done, &l->mu);
    pthread_mutex_unlock(&l->mu);
    if (t0)
        *t0 = j->t0;
    if (t1)
        *t1 = j->t1;
    free(j);
    return SC_OK;
}

/* Starts a link's two threads; 0 when one cannot start (l->threads says
 * how many did). */
static int link_start(sc_hostlink *l)
{
    pthread_attr_t at;
    if (pthread_attr_init(&at) != 0)
        return 0;
    pthread_attr_setstacksize(&at, 64 * 1024); /* a memcpy loop */
    for (; l->threads < 2; l->threads++) {
        chan *c = &l->ch[l->threads];
        c->l = l;
        if (pthread_create(&c->th, &at, chan_thread, c) != 0)
            break;
    }
    pthread_attr_destroy(&at);
    return l->threads == 2;
}

/* Whether some stream of devices first .. first+n-1 copies to or from the host. */
static int has_copies(const sc_prog *pg, int first, int n)
{
    for (int d = first; d < first + n; d++) {
        size_t len;
        const sc_instr *v = sc_prog_stream(pg, d, &len);
        for (size_t k = 0; k < len; k++)
            if (sc_op_is_host(v[k].op) && sc_op_has(v[k].op, SC_OPF_OUT | SC_OPF_IN))
                return 1;
    }
    return 0;
}

sc_status sc_hostlinks_open(const sc_prog *pg, sc_backend *const *be, int first, int n,
                            sc_hostlinks **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!has_copies(pg, first, n))
        return SC_OK;
    pthread_once(&pace_once, pace_load);
    if (pace_bad) {
        snprintf(err, errlen, "STAGECRAFT_HOST_LINK_GBPS='%.40s': expected a speed in GB/s above 0",
                 getenv("STAGECRAFT_HOST_LINK_GBPS"));
        return SC_ERR_ARG;
    }
    const char *mode = getenv("STAGECRAFT_HOST_LINK");
    if (mode && strcmp(mode, "inline") == 0)
        return SC_OK; /* copies on the devices' threads (the runtime before the engine) */
    for (int i = 0; i < n; i++)
        if (!be[i]->ops->use_link)
            return SC_OK;
    const sc_offload_cfg *oc = sc_prog_offload(pg);
    int shared = oc && oc->shared;
    sc_hostlinks *ls = calloc(1, sizeof *ls);
    sc_hostlink *link = calloc((size_t)n, sizeof *link);
    int *of = malloc((size_t)n * sizeof(int)); /* the link of each device */
    if (!ls || !link || !of) {
        free(ls);
        free(link);
        free(of);
        snprintf(err, errlen, "out of memory starting the host links");
        return SC_ERR_NOMEM;
    }
    ls->link = link;
    int nl = 0;
    for (int i = 0; i < n; i++) {
        int d = first + i;
        /* The odd device of a pair whose even device is here shares its link. */
        of[i] = shared && (d & 1) && i > 0 ? of[i - 1] : nl++;
    }
    sc_status st = SC_OK;
    for (; ls->n < nl && st == SC_OK; ls->n++) {
        sc_hostlink *l = &link[ls->n];
        /* (the defaults allocate nothing on Linux: these do not fail) */
        pthread_mutex_init(&l->mu, NULL);
        pthread_cond_init(&l->done, NULL);
        pthread_cond_init(&l->ch[0].work, NULL);
        pthread_cond_init(&l->ch[1].work, NULL);
        if (!link_start(l)) {
            snprintf(err, errlen, "cannot start the threads of host link %d", ls->n);
            st = SC_ERR_RUNTIME;
        }
    }
    if (st == SC_OK)
        for (int i = 0; i < n; i++)
            be[i]->ops->use_link(be[i]->ctx, &link[of[i]]);
    free(of);
    if (st != SC_OK) {
        sc_hostlinks_free(ls);
        return st;
    }
    *out = ls;
    return SC_OK;
}

void sc_hostlinks_free(sc_hostlinks *ls)
{
    if (!ls)
        return;
    for (int i = 0; i < ls->n; i++) {
        sc_hostlink *l = &ls->link[i];
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_signal(&l->ch[0].work);
        pthread_cond_signal(&l->ch[1].work);
        pthread_mutex_unlock(&l->mu);
        for (int k = 0; k < l->threads; k++)
            pthread_join(l->ch[k].th, NULL);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->done);
        pthread_cond_destroy(&l->ch[0].work);
        pthread_cond_destroy(&l->ch[1].work);
    }
    free(ls->link);
    free(ls);
}
