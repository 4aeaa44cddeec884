/*
 * replay_impl.h — the replay's state (internal to check/): replay.c runs
 * it, replay_report.c explains a deadlock from it.
 *
 * Tested by: tests/unit/test_replay.c.
 */
#ifndef SC_REPLAY_IMPL_H
#define SC_REPLAY_IMPL_H

#include <stdio.h>

#include "ir/ir_impl.h"
#include "replay_coll.h"

#define NONE ((size_t)-1)
#define SENT 2

typedef struct group {
    size_t first;      /* global index of the first transfer */
    int count;         /* transfers in the group */
    int remaining;     /* transfers not yet complete */
    int complete;      /* every transfer has completed */
    int lprev;         /* per-link: the local group of the device's previous transfer on
                          the same directed link, or -1 (docs/semantics.md#modes) */
    int lnext;         /* per-link: the next one, or -1 */
    double post, start, done;
} group;

typedef struct dev {
    size_t pc;         /* next instruction, local index */
    int head;          /* first group not complete, local group index (gloo, per-link:
                          groups complete in any order; head skips the completed ones) */
    int posted;        /* groups posted so far */
    int ngroups;
    int gbase;         /* global index of the device's group 0 */
    double tfree;      /* the compute stream is free from this time */
} dev;

typedef struct event {
    int kind; /* EV_* */
    int d;
    int g;    /* local group index */
} event;

enum { EV_ADVANCE, EV_COMPLETE };

typedef struct replay {
    sc_prog *pg;
    int mode;          /* SC_P2P_* (docs/semantics.md#modes) */
    int alone;         /* gloo, per-link: every transfer is a group of its own */
    int cells;         /* the NCCL mode's proof of a file's cells (p2p.h): each alone,
                          a device's one at a time */
    int eager;         /* cells: a SEND completes once it runs (sc_prog_eager) */
    const size_t *offset;
    double *t0, *t1;
    size_t N;
    int *grp;          /* [N] local group index of a transfer, -1 otherwise */
    size_t *match;     /* [N] global index of the matching transfer */
    size_t *need;      /* [N] compute: global index of the RECV it reads, or NONE */
    size_t *need2;     /* [N] a pair: the RECV its B or BW half reads, or NONE */
    size_t *hwait;     /* [N] DROP: its OFFLOAD; B/BW: the RELOAD of its record; or NONE */
    double *hend;      /* [N] OFFLOAD/RELOAD: when its copy completes (read only after the copy
                          is posted) */
    double *d2h, *h2d; /* [P] each device's host-link channels are free from */
    double *gend;      /* [S] FSDP: when the stage's latest all-gather completes */
    double *dpch;      /* [P] FSDP: each device's data-parallel channel is free from */
    double *rgend;     /* [P] FSDP: when the device's posted reduce-scatters complete
                          (its OPTIM waits for them) */
    int *rank;         /* [N] a transfer's posting rank with its peer (posting.h) */
    unsigned char *matched; /* [N] (transfers only): 1 matched; SENT: an eager SEND
                               completed before its RECV ran */
    rcoll *rc;         /* the collective channels (replay_coll.h), or NULL */
    const size_t *cneed; /* [N] the collective an instruction waits for, or NULL */
    group *groups;     /* every device's, in device order (dev.gbase) */
    size_t ngr;        /* how many */
    dev *devs;
    event *ev;
    size_t nev, capev;
} replay;

static inline const sc_instr *instr_at(const replay *r, int d, size_t k)
{
    return &r->pg->stream[d].v[k];
}

static inline void describe(const replay *r, int d, size_t k, char *buf, size_t len)
{
    char tmp[112];
    if (k >= r->pg->stream[d].n) {
        snprintf(buf, len, "d%d at the end of its stream", d);
        return;
    }
    sc_prog_instr_format(r->pg, instr_at(r, d, k), tmp, sizeof tmp);
    snprintf(buf, len, "d%d #%zu (%s)", d, k, tmp);
}

/* Whether local group g of device d has completed. */
static inline int group_done(const replay *r, int d, int g)
{
    return r->groups[r->devs[d].gbase + g].complete;
}

/* Checks an OFFLOAD, DROP or RELOAD (instruction k of device d) against
 * what came before it (replay_host.c). */
sc_status sc_replay_check_host(replay *r, int d, size_t k, const size_t *posF, const size_t *posB,
                               size_t *host_at);

/* Groups, matching and data-flow checks of the streams (replay_prepare.c);
 * fills r, whose per-instruction arrays and devs the caller allocated. */
sc_status sc_replay_prepare(replay *r);

/* The deadlock message: the wait-for cycle through P2P groups and
 * collective channels, from the state where the replay stopped. */
sc_status sc_replay_deadlock(replay *r);

/* The same for the proof of a file's cells (r->cells): the cycle of ranks
 * whose first incomplete cell waits for a cell its peer posts later, named
 * as the file names them; any other stop as sc_replay_deadlock. */
sc_status sc_replay_cells_deadlock(replay *r);

#endif
