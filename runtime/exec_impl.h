/*
 * exec_impl.h — what the executor's files share (runtime/ only): exec.c
 * walks a device's stream and moves boundary tensors through the
 * transport; exec_rec.c holds the activation records (their layout, the
 * pool's count, OFFLOAD/DROP/RELOAD to the backend's host pool) and the
 * executor's allocation and error helpers.
 */
#ifndef SC_EXEC_IMPL_H
#define SC_EXEC_IMPL_H

#include "exec.h"
#include "exec_coll.h"

#include <stddef.h>

typedef struct sc_ex_grp {
    size_t first;        /* index of its first instruction in the stream */
    int count;
    int started;
    void *h;             /* transport handle once started */
} sc_ex_grp;

/* The layout of a stage's record: its kept parts (the workload's
 * record_parts, or one buffer), then b_only when it has one. OFFLOAD moves
 * the last parts. */
typedef struct sc_ex_layout {
    int nk, n;           /* kept parts; all parts */
    int split;           /* the workload takes kept as an array of parts */
    size_t *bytes;       /* [n] */
    size_t kept, bonly;  /* bytes */
} sc_ex_layout;

enum { SC_EX_HELD, SC_EX_OUT, SC_EX_HOST, SC_EX_IN }; /* a record's place while it is moved */

/* One (stage, microbatch)'s record: its parts on the device and, while it
 * is moved, its copy on the host. */
typedef struct sc_ex_rec {
    void **part;         /* [n] device buffers (NULL: not held), then [n] copy tickets */
    void *host;          /* host buffer of the moved parts */
    size_t host_bytes;
    int moved;           /* parts moved (the last ones) */
    int state;
    size_t at;           /* the OFFLOAD or RELOAD whose copy is pending, for its end time */
} sc_ex_rec;

typedef struct sc_ex {
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
    sc_ex_layout *lay;   /* [S] */
    sc_ex_rec *rec;      /* [S m] activation records */
    sc_xfer *x;          /* [n] transfer descriptors, by instruction */
    sc_ex_grp *g;
    int ngroups, posted, head;
    sc_cchan *ch;        /* the collective channel, or NULL (exec_coll.h) */
    size_t cur;          /* pool bytes in use */
    size_t host;         /* host bytes of moved records */
} sc_ex;

/* The first failure's message into e->out->err (later ones are dropped);
 * returns st. */
sc_status sc_ex_fail(sc_ex *e, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A buffer of the backend's pool, or NULL with *st set and the message
 * naming what it was for (s, mb); sc_ex_free(NULL) is a no-op. */
void *sc_ex_alloc(sc_ex *e, size_t bytes, const char *what, int s, int mb, sc_status *st);
void sc_ex_free(sc_ex *e, void *p, size_t bytes);

/* The copy tickets of a record's parts (beside the parts, [n]). */
void **sc_ex_tickets(const sc_ex *e, const sc_ex_rec *r, int s);
/* Counts bytes into the pool and its peak. */
void sc_ex_pool_add(sc_ex *e, size_t bytes);
/* Frees parts [a, b) of a record and takes them off the pool's count. */
void sc_ex_free_parts(sc_ex *e, sc_ex_rec *r, int s, int a, int b);
/* A pass reads a record that came back: waits for its copies, then frees
 * the host copy; nothing for a record that is held. */
sc_status sc_ex_settle(sc_ex *e, sc_ex_rec *r, int s);
/* OFFLOAD, DROP or RELOAD instruction k (SPEC.md §8.5). */
sc_status sc_ex_host_copy(sc_ex *e, const sc_instr *in, size_t k);
/* Fills e->lay from the workload (SPEC.md §19.6); SC_ERR_NOMEM. */
sc_status sc_ex_layouts(sc_ex *e);

#endif
