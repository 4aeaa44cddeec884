/*
 * ptrace_impl.h — what the parts of the trace reader share: the spans and
 * devices read (ptrace.c, with ptrace_single.c for the single-stage
 * schedules), their steps (ptrace_steps.c), the GPU's kernels linked to
 * them (ptrace_gpu.c) and the costs made of them (ptrace_costs.c).
 * Everything here lives in interp's counted memory
 * (ir/alloc.h).
 *
 * Tested by: tests/unit/test_readers.c, tests/costs.sh.
 */
#ifndef SC_PTRACE_IMPL_H
#define SC_PTRACE_IMPL_H

#include "ptrace.h"

/* The actions of PyTorch's runtime (schedules.py, _ComputationType) as
 * they matter here. The passes first (pt_pass): F, I (input gradient), W,
 * B (full backward), and FB, an overlapped pair (OVERLAP_F_B) of F and a
 * backward. Then the posts of transfers (PT_POST: a single-stage
 * schedule's _batch_p2p, which posts them: its time is the runtime's work
 * after the pass before it, as the runtime's SEND and RECV actions are),
 * then what a pass's time leaves out
 * (pt_apart): the waits for sends and for the gradients' reduction, FSDP's
 * UNSHARD, RESHARD and REDUCE_GRAD, and PT_WAIT, a wait of a single-stage
 * schedule (schedules.py's _wait_batch_p2p). Each kind is its own key: a stage that sends both ways
 * has WAIT_SEND_F and WAIT_SEND_B of one microbatch in one step. */
enum {
    PT_F, PT_I, PT_W, PT_B, PT_FB,
    PT_SEND_F, PT_RECV_F, PT_SEND_B, PT_RECV_B, PT_POST,
    PT_WAIT_SEND_F, PT_WAIT_SEND_B, PT_WAIT_REDUCE, PT_UNSHARD, PT_RESHARD, PT_REDUCE, PT_WAIT,
    PT_KINDS
};
#define pt_pass(k) ((k) <= PT_FB)
#define pt_apart(k) ((k) >= PT_WAIT_SEND_F)

/* Where a span came from: its name says how to print it in a message. */
enum { PT_SRC_PP, PT_SRC_GPIPE, PT_SRC_PY };

typedef struct pt_span {
    int dev, stage, mb, kind, step; /* stage -1: a single-stage schedule's (its device's);
                                       mb -1: the action has none; step -1: not numbered */
    int stage2, mb2, kind2;         /* FB: its backward (kind2 PT_I or PT_B) */
    int src, recv;                  /* recv: a receive was posted inside: the pass waited */
    double ts, end, first;          /* microseconds; first: the start of its first operator
                                       after its receives' posts, or NAN */
    double kfirst, klast;           /* its compute kernels on the GPU (ptrace_gpu.c): the
                                       first's start, the last's end; none: kfirst > klast */
    double nfirst, nlast;           /* its NCCL kernels, the same way */
    int file, event;                /* where it is, for messages */
} pt_span;

typedef struct pt_dev {
    int file, rank;                 /* rank: the file's distributedInfo.rank, or -1 */
    double pid;
    int id;                         /* its index before order_devices sorts them */
} pt_dev;

/* A CUDA kernel the traces ran (cat "kernel") or a launch of kernels
 * (cat "cuda_runtime", "cuda_driver": cudaLaunchKernel, cuLaunchKernelEx,
 * ...), the two linked by their args.correlation within a file
 * (ptrace_gpu.c). */
typedef struct pt_kern {
    double corr, ts, end;           /* a launch: its start in ts and end */
    int file, dev;                  /* dev: a launch's device (its process); a kernel's -1 */
    int nccl;                       /* a kernel of NCCL's (name "nccl..."): a transfer's */
} pt_kern;

typedef struct pt_gpu {
    pt_kern *k, *l;                 /* the kernels, the launches */
    int nk, kcap, nl, lcap;
    int kseen, lseen;               /* kernels and launches read, with a correlation or not */
    int linked;                     /* kernels linked to a span by sc_pt_gpu_join */
    int joined;                     /* sc_pt_gpu_join ran: the spans' devices are renumbered
                                       since, the launches' are not */
} pt_gpu;

struct sc_ptrace {
    pt_span *sp;
    int n, cap;
    pt_dev *dv;
    int ndev, devcap;
    int *slot;                      /* (file, pid) -> device + 1, open addressing; 0 empty */
    int nslot;                      /* a power of two, at least twice ndev */
    char **files;
    int *rank;                      /* per file: its rank, or -1 */
    int nfiles;
    int fsdp;                       /* an UNSHARD span held operators: FSDP was on */
    int single;                     /* spans of a single-stage schedule were read */
    char backend[32], host[64];
    pt_gpu gpu;                     /* the kernels and their launches (ptrace_gpu.c) */
};

/* What a single-stage schedule (ScheduleGPipe, Schedule1F1B) records,
 * gathered while a file is read (ptrace_single.c): GPipe's spans "Forward
 * <mb>" and "Backward <mb>" (each holds the post of its receive and the
 * wait for it), and, with torch.profiler's with_stack=True, the Python
 * functions of the stage (forward_one_chunk, backward_one_chunk: the pass
 * alone), of the transfers (_batch_p2p posts, _wait_batch_p2p waits) and
 * of the schedule's step (whose calls are the steps). */
typedef struct pt_cand {
    pt_span *sp;                    /* the passes and waits, as read */
    int n, cap;
    pt_span *mark;                  /* the calls of step() */
    int nmark, markcap;
    int py, gpipe;                  /* passes seen of each source */
} pt_cand;

/* 1 when an event of this name and category is one of them. */
int sc_pt_single_name(const char *name, const char *cat);
/* Keeps one (sp: its device, times, file and event; SC_ERR_NOMEM). */
sc_status sc_pt_single_add(pt_cand *c, const char *name, const char *cat, const pt_span *sp);
/* At the end of a file without PP: spans: its passes as spans of t, with
 * the stage -1 (its device's, once the devices are numbered) and the
 * microbatches in order within each step. SC_ERR_ARG with err ("FILE:
 * event N (...): ..."); SC_ERR_NOMEM. */
sc_status sc_pt_single_end(sc_ptrace *t, pt_cand *c, const char *file, char *err, size_t errlen);
void sc_pt_single_free(pt_cand *c);

/* The name of an action kind, for messages ("F", "SEND_F", ...). */
const char *sc_pt_kind_name(int kind);

/* The span as its trace names it ("PP:1WAIT_SEND_F0", "Forward 3",
 * "forward_one_chunk"), into buf. */
const char *sc_pt_span_name(const pt_span *p, char *buf, size_t len);

/* Appends a span (SC_ERR_NOMEM). */
sc_status sc_pt_add_span(sc_ptrace *t, const pt_span *s);

/* Numbers the steps of every span (ptrace_steps.c; devices and stages
 * final): the k-th occurrence of an action with a microbatch is in step k,
 * and every such action occurs in every step; an action without one
 * (UNSHARD, REDUCE_GRAD, a single-stage wait) takes the step of the passes
 * around it on its device (UNSHARD the next one's: it opens a step). On
 * return t->sp is sorted by action, then step. SC_ERR_ARG with err naming
 * the file and the event; SC_ERR_NOMEM. */
/* qsort orders of spans (ptrace_steps.c): by action (kind, stage,
 * microbatch), then step, device, time, the order find()s search; and by
 * device, then time. */
int sc_pt_cmp_action(const void *a, const void *b);
int sc_pt_cmp_dev_time(const void *a, const void *b);
sc_status sc_pt_number_steps(sc_ptrace *t, int S, int *steps, char *err, size_t errlen);

/* Each step's time into x[0..steps), in order (ptrace_costs.c): from its
 * first span's start to its last span's end, or the end of the last
 * kernel launched in one (kernels run after their launches), over all
 * ranks; lo and hi: room for steps each. One pass over the spans. */
void sc_pt_step_times(const pt_span *sp, int n, int steps, double *x, double *lo, double *hi);

/* The GPU's events (ptrace_gpu.c). sc_pt_gpu_kind: PT_KERNEL for a
 * kernel (cat "kernel"), PT_LAUNCH for a launch of kernels (cat
 * "cuda_runtime" or "cuda_driver", a name with "Launch"), 0 for any
 * other event. sc_pt_gpu_add keeps one (ts, end: microseconds, checked by
 * the caller; dev: a launch's device); an event without a numeric
 * args.correlation links nothing and is only counted. SC_ERR_NOMEM. */
enum { PT_KERNEL = 1, PT_LAUNCH };
int sc_pt_gpu_kind(const char *name, const char *cat);
sc_status sc_pt_gpu_add(pt_gpu *g, int kind, const char *name, const sc_jv *e, int file, int dev,
                        double ts, double end);
/* Links every kernel to its launch (by file and correlation) and the
 * launch to the span around it on its device (the innermost, any thread of
 * the process), and sets each span's kfirst, klast, nfirst, nlast (kfirst
 * > klast: none); g->linked counts the kernels linked. Spans' devices as
 * read (before their order); once (a second call does nothing). n log n
 * in the spans, kernels and launches. SC_ERR_NOMEM. */
sc_status sc_pt_gpu_join(sc_ptrace *t);
/* The note of the GPU's events, appended to note ("; " between): launches
 * but no kernel (CPU-side times), or kernels none of which was linked. */
void sc_pt_gpu_note(const sc_ptrace *t, char *note, size_t notelen);
void sc_pt_gpu_free(pt_gpu *g);

#endif
