/*
 * exec_impl.h — the executor's state and what its files share (runtime/exec/
 * only): exec.c runs the stream, exec_pass.c a compute pass, exec_pair.c
 * an overlapped pair, exec_mem.c holds memory and errors,
 * exec_host.c the host copies of offload, exec_redo.c post-validation's
 * VALIDATE and rollback path.
 *
 * Tested by: tests/unit/test_runtime.c.
 */
#ifndef SC_EXEC_IMPL_H
#define SC_EXEC_IMPL_H

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

/* A record's place while it is moved (OFFLOAD: out, on the host, coming
 * back in), or dropped for recomputation (DROP without OFFLOAD, until R). */
enum { R_HELD, R_OUT, R_HOST, R_IN, R_DROPPED };

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
    int d, S, m;         /* m: microbatch numbers in the stream (all steps) */
    const sc_instr *in;
    size_t n;
    sc_backend *be;
    sc_transport *tp;
    const sc_workload *wl;
    double origin;
    sc_exec_out *out;
    void **box;          /* [2 S m] boundary tensors by key */
    int *rgroup;         /* [2 S m] group of the RECV that fills a key, -1 */
    layout *lay;         /* [S nl] by stage and microbatch of a step (sc_ex_rlay) */
    int nl;              /* layouts per stage: m of a step with lengths (sizes differ), else 1 */
    rec *rec;            /* [S m] activation records */
    sc_xfer *x;          /* [n] transfer descriptors, by instruction */
    grp *g;
    int ngroups, posted, head;
    void **vrec;         /* [m] S's records (a split vocabulary), or NULL */
    size_t vbytes;       /* bytes of one */
    sc_cchan *ch;        /* the collective channel, or NULL (exec_coll.h) */
    size_t cur;          /* pool bytes in use */
    size_t host;         /* host bytes of moved records */
    int step;            /* the step being run: the number of OPTIMs passed */
    double state[2];     /* its optimizer state (exec.h, grad_state) */
    /* Post-validation (exec_redo.c): */
    int vsteps;          /* VALIDATEs passed */
    int rollback;        /* the last VALIDATE took the rollback path */
    void **redo_in;      /* [S m] a redone activation into stage s, for its F */
    void **redo_out;     /* [S m] a redone output of stage s while it is broadcast */
    struct sc_workload_ops cops; /* the collective channel's workload: the */
    sc_workload cwl;     /* workload's, with the buffers of redone outputs */
    struct sc_lane *lane; /* overlapped pairs' second lane, or NULL (exec_pair.c) */
    int lane_tried;      /* the lane was opened, or found not available */
    /* run --graph (exec_graph.c; out->graph): */
    size_t *gstart, *gred; /* [steps] each step's first instruction, its REDUCE */
    int nsteps;
    int capturing;       /* step 2's passes are being captured */
} ex;

/* One pass (a half of a pair) in flight (exec.c): what begin took. */
typedef struct sc_job {
    sc_instr in;
    int s, mb, fwd;
    int first, last;     /* its microbatch's stages (docs/guide.md#copies) */
    rec *r;
    void *src, *dst;     /* its input and output boundary tensors */
    void *kept, *bonly;  /* the workload's record arguments */
    sc_status st;        /* what run returned */
} sc_job;

/* exec_pass.c: a pass as begin (inputs, allocations; the groups of its
 * RECVs have completed), run (the workload, with ctx: the device's or a
 * lane's) and end (outputs handed on, frees; st the pass's status so far,
 * returned); sc_ex_compute: the three in turn. */
sc_status sc_ex_begin(ex *e, sc_job *j, const sc_instr *in);
sc_status sc_ex_run(sc_job *j, const struct sc_workload_ops *w, void *ctx);
sc_status sc_ex_end(ex *e, sc_job *j, sc_status st);
sc_status sc_ex_compute(ex *e, const sc_instr *in);

/* exec_pair.c: an overlapped pair (docs/run.md#overlapped-pairs): both
 * halves begun, run at once (the backward half on the lane: a second
 * backend instance and workload context, on a thread of its own), ended;
 * and what the lane holds, freed at the end of the stream. */
sc_status sc_ex_pair(ex *e, const sc_instr *in);
void sc_ex_lane_free(ex *e);

/* exec_graph.c: run --graph. init: the steps' places in the stream;
 * capture: the devices meet and step 2's capture starts; end: its groups
 * queued (the caller waited), the devices meet and the capture ends;
 * launch: the graph runs as step `step` (from 0), the workload reads its
 * losses; failed: the other devices stop waiting at the meeting points. */
sc_status sc_ex_graph_init(ex *e);
sc_status sc_ex_graph_capture(ex *e);
sc_status sc_ex_graph_end(ex *e);
sc_status sc_ex_graph_launch(ex *e, int step);
void sc_ex_graph_failed(ex *e);

/* exec_mem.c */
sc_status sc_ex_failf(ex *e, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Key of a boundary tensor: the activation into stage s (SC_DIR_ACT) or
 * the gradient of stage s's output (SC_DIR_GRAD), of microbatch mb. */
size_t sc_ex_key(const ex *e, int dir, int s, int mb);
/* Bytes of the tensor at a key. */
size_t sc_ex_kbytes(const ex *e, int dir, int s, int mb);
void *sc_ex_balloc(ex *e, size_t bytes, const char *what, int s, int mb, sc_status *st);
void sc_ex_bfree(ex *e, void *p, size_t bytes);
sc_status sc_ex_wl_fail(ex *e, sc_status st, const sc_instr *in);
/* The kept argument of the workload's passes: the array of parts, or the
 * one buffer; the copy tickets after the parts. */
void *sc_ex_kept_arg(const ex *e, const rec *r);
void **sc_ex_tickets(const ex *e, const rec *r);
void sc_ex_pool_add(ex *e, size_t bytes);
/* Frees parts [a, b) of a record. */
void sc_ex_free_parts(ex *e, rec *r, int a, int b);
/* The layout of a record (of its stage and microbatch). */
static inline const layout *sc_ex_rlay(const ex *e, const rec *r)
{
    size_t i = (size_t)(r - e->rec), s = i / (size_t)e->m, mb = i % (size_t)e->m;
    return &e->lay[s * (size_t)e->nl + mb % (size_t)e->nl];
}
/* The record layouts of every stage (and microbatch of a step, with
 * lengths), from the workload. */
sc_status sc_ex_layouts(ex *e);

/* exec_host.c: a pass reads a record that came back (its copy must be
 * complete; the host copy is freed); OFFLOAD, DROP, RELOAD. */
sc_status sc_ex_settle(ex *e, rec *r, int s);
sc_status sc_ex_host_copy(ex *e, const sc_instr *in, size_t k);
/* exec_host.c: R, the recomputation of what a DROP without OFFLOAD
 * dropped (its parts allocated again, the stage's forward run again from
 * the record's first part, its input). */
sc_status sc_ex_recompute(ex *e, const sc_instr *in);

/* exec_redo.c: the collective channel's workload (cwl) and the rollback
 * tables; VALIDATE (sets rollback); a redone F (SC_IF_ROLLBACK); the
 * redone input of F(s, mb), or NULL (the caller owns it: act bytes of s). */
sc_status sc_ex_redo_init(ex *e);
void sc_ex_redo_free(ex *e);
sc_status sc_ex_validate(ex *e, const sc_instr *in);
sc_status sc_ex_redo_forward(ex *e, const sc_instr *in);
void *sc_ex_redo_input(ex *e, int s, int mb);

#endif
