/*
 * exec_impl.h — the executor's state (internal to runtime/): exec.c walks
 * the stream, exec_host.c moves records to the host and back (offload),
 * exec_vocab.c runs the vocabulary passes. Small helpers are inline here so
 * that those files call nothing of each other but what exec.c calls.
 */
#ifndef SC_EXEC_IMPL_H
#define SC_EXEC_IMPL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "exec.h"
#include "exec_coll.h"

typedef struct grp {
    size_t first;        /* index of its first instruction in the stream */
    int count;
    int started;
    void *h;             /* transport handle once started */
} grp;

/* The layout of a stage's record: its kept parts (the workload's
 * record_parts, or one buffer), then b_only when it has one. OFFLOAD moves
 * the last parts. */
typedef struct layout {
    int nk, n;           /* kept parts; all parts */
    int split;           /* the workload takes kept as an array of parts */
    size_t *bytes;       /* [n] */
    size_t kept, bonly;  /* bytes */
} layout;

enum { R_HELD, R_OUT, R_HOST, R_IN }; /* a record's place while it is moved */

/* One (stage, microbatch)'s record: its parts on the device and, while it
 * is moved, its copy on the host. */
typedef struct rec {
    void **part;         /* [n] device buffers (NULL: not held), then [n] copy tickets */
    void *host;          /* host buffer of the moved parts */
    size_t host_bytes;
    int moved;           /* parts moved (the last ones) */
    int state;
    size_t at;           /* the OFFLOAD or RELOAD whose copy is pending, for its end time */
} rec;

typedef struct ex {
    const sc_prog *pg;
    int d, S, m;
    const sc_instr *in;
    size_t n;
    sc_backend *be;
    sc_transport *tp;
    const sc_workload *wl;
    double origin;
    sc_exec_out *out;
    void **box;          /* [2 S m] boundary tensors by key */
    int *rgroup;         /* [2 S m] group of the RECV that fills a key, -1 */
    layout *lay;         /* [S] */
    rec *rec;            /* [S m] activation records */
    sc_xfer *x;          /* [n] transfer descriptors, by instruction */
    grp *g;
    int ngroups, posted, head;
    void **vrec;         /* [m] S's records (split vocabulary) */
    size_t vbytes;       /* bytes of one */
    sc_cchan *ch;        /* the collective channel, or NULL (exec_coll.h) */
    size_t cur;          /* pool bytes in use */
    size_t host;         /* host bytes of moved records */
} ex;

/* The executor's clock, since the run's origin (sc_exec_now's, read here
 * so that exec_host.c calls nothing of exec.c). */
static inline double exec_since(const ex *e)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - e->origin;
}

static inline sc_status failf(ex *e, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline sc_status failf(ex *e, sc_status st, const char *fmt, ...)
{
    if (!e->out->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->out->err, sizeof e->out->err, fmt, ap);
        va_end(ap);
    }
    return st;
}

static inline void *balloc(ex *e, size_t bytes, const char *what, int s, int mb, sc_status *st)
{
    void *p = e->be->ops->alloc(e->be->ctx, bytes);
    if (!p)
        *st = failf(e, SC_ERR_NOMEM, "out of memory on d%d: %zu bytes for the %s of s%d mb%d",
                    e->d, bytes, what, s, mb);
    return p;
}

static inline void bfree(ex *e, void *p, size_t bytes)
{
    e->be->ops->free(e->be->ctx, p, bytes);
}

static inline sc_status wl_fail(ex *e, sc_status st, const sc_instr *in)
{
    char buf[64];
    sc_instr_format(in, buf, sizeof buf);
    return failf(e, st, "d%d: %s: %s", e->d, buf, e->wl->ops->errmsg(e->wl->ctx));
}

/* The kept argument of the workload's passes: the array of parts, or the
 * one buffer. */
static inline void *kept_arg(const ex *e, const rec *r, int s)
{
    return e->lay[s].split ? (void *)r->part : r->part[0];
}

static inline void **tickets(const ex *e, const rec *r, int s)
{
    return r->part + e->lay[s].n;
}

static inline void pool_add(ex *e, size_t bytes)
{
    e->cur += bytes;
    if (e->cur > e->out->peak_bytes)
        e->out->peak_bytes = e->cur;
}

/* Frees parts [a, b) of a record. */
static inline void free_parts(ex *e, rec *r, int s, int a, int b)
{
    for (int i = a; i < b; i++)
        if (r->part[i]) {
            bfree(e, r->part[i], e->lay[s].bytes[i]);
            e->cur -= e->lay[s].bytes[i];
            r->part[i] = NULL;
        }
}

static inline const char *be_err(const ex *e)
{
    const char *m = e->be->ops->errmsg ? e->be->ops->errmsg(e->be->ctx) : NULL;
    return m && *m ? m : "the copy failed";
}

/* exec_host.c: a pass reads a record that came back (its copy must be
 * complete; then the host copy is freed); OFFLOAD, DROP, RELOAD. */
sc_status sc_exec_settle(ex *e, rec *r, int s);
sc_status sc_exec_host_copy(ex *e, const sc_instr *in, size_t k);

#endif
