/*
 * replay.c — executes lowered streams under the communication semantics
 * (replay.h), timing every instruction and catching deadlocks.
 *
 * The replay is event-driven and linear in the number of instructions: each
 * group starts once and completes once, each transfer is matched once, and
 * each device's program counter only moves forward. Because every time is a
 * max-plus expression of times already known, the order in which events are
 * processed does not change the result; a plain stack of events suffices,
 * and a group's completion advances its device and starts the group it
 * lets run at once, without an event of their own. The checks before the
 * run and its tables are replay_prepare.c's.
 */
#include "replay.h"
#include "fsdp.h"
#include "ir/alloc.h"
#include "replay_coll.h"
#include "replay_impl.h"
#include "ir/p2p.h"

/* The event stack grows here, out of push_ev's way (it is sized for the
 * usual bound up front, sc_replay). */
static sc_status grow_ev(replay *r)
{
    size_t cap = r->capev ? r->capev * 2 : 256;
    event *ev = sc_realloc(r->ev, cap * sizeof *ev);
    if (!ev)
        return sc_fail(r->pg, SC_ERR_NOMEM, "out of memory in the replay");
    r->ev = ev;
    r->capev = cap;
    return SC_OK;
}

static inline sc_status push_ev(replay *r, int kind, int d, int g)
{
    if (r->nev == r->capev) {
        sc_status st = grow_ev(r);
        if (st)
            return st;
    }
    r->ev[r->nev++] = (event){kind, d, g};
    return SC_OK;
}

static double maxd(double a, double b) { return a > b ? a : b; }

/* NCCL: a group runs when posted and every group before it on its device
 * has completed; gloo: once posted; per-link: once posted and the
 * transfer before it on its link has completed (docs/semantics.md#modes). */
static inline int running(const replay *r, int e, int g)
{
    if (r->devs[e].posted <= g)
        return 0;
    if (r->mode == SC_P2P_NCCL)
        return r->devs[e].head == g;
    int lp = r->groups[r->devs[e].gbase + g].lprev;
    return lp < 0 || group_done(r, e, lp);
}

static sc_status start_group(replay *r, int d, int g)
{
    group *G = &r->groups[r->devs[d].gbase + g];
    int lp = r->mode == SC_P2P_NCCL ? g - 1 : r->groups[r->devs[d].gbase + g].lprev;
    double prev = lp >= 0 ? r->groups[r->devs[d].gbase + lp].done : 0;
    G->start = maxd(G->post, prev);
    G->done = G->start;
    const sc_instr *iv = &r->pg->stream[d].v[G->first - r->offset[d]];
    for (int i = 0; i < G->count; i++) {
        size_t k = G->first + (size_t)i;
        if (r->matched[k])
            continue;
        size_t o = r->match[k];
        int e = iv[i].peer; /* the device of its match (prepare) */
        double tc = r->pg->tcomm * sc_len_r(r->pg, iv[i].mb); /* its size (lengths.h) */
        int ge = r->grp[o];
        group *H = &r->groups[r->devs[e].gbase + ge];
        if (r->matched[o] == SENT) { /* its eager SEND is done: the message is buffered */
            double t = maxd(G->start, H->start) + tc;
            r->matched[k] = r->matched[o] = 1;
            if (r->t1)
                r->t1[k] = t;
            G->done = maxd(G->done, t);
            G->remaining--;
            continue;
        }
        if (!running(r, e, ge)) {
            if (r->eager && sc_op_has(iv[i].op, SC_OPF_OUT)) { /* completes alone */
                r->matched[k] = SENT;
                if (r->t1)
                    r->t1[k] = G->start + tc;
                G->done = maxd(G->done, G->start + tc);
                G->remaining--;
            }
            continue;
        }
        double t = maxd(G->start, H->start) + tc;
        r->matched[k] = r->matched[o] = 1;
        if (r->t1) {
            r->t1[k] = t;
            r->t1[o] = t;
        }
        G->done = maxd(G->done, t);
        H->done = maxd(H->done, t);
        G->remaining--;
        if (--H->remaining == 0) {
            sc_status st = push_ev(r, EV_COMPLETE, e, ge);
            if (st)
                return st;
        }
    }
    if (G->remaining == 0)
        return push_ev(r, EV_COMPLETE, d, g);
    return SC_OK;
}

/* When the pass (or pair) in, global instruction gi of device d, can start
 * (into *ready); 0 while what it reads has not arrived. */
static inline int slot_ready(const replay *r, int d, size_t gi, const sc_instr *in, double *ready)
{
    const dev *D = &r->devs[d];
    double t = maxd(D->tfree, r->gend[in->stage]); /* after the all-gather */
    if (sc_op_is_pair(in->op))
        t = maxd(t, r->gend[sc_pair_half(in).stage]);
    for (int i = 0; i < 2; i++) { /* what it reads; a pair: both halves' */
        size_t need = i ? r->need2[gi] : r->need[gi];
        if (need == NONE)
            continue;
        const group *G = &r->groups[D->gbase + r->grp[need]];
        if (!G->complete)
            return 0; /* blocked until that group completes */
        t = maxd(t, G->done);
    }
    if (r->hwait[gi] != NONE)
        t = maxd(t, r->hend[r->hwait[gi]]); /* its RELOAD */
    *ready = t;
    return 1;
}

/* The same for the rest of the compute stream: RESHARD, WAIT, OPTIM,
 * REDUCE. */
static inline int other_ready(const replay *r, int d, size_t gi, const sc_instr *in, double *ready)
{
    const dev *D = &r->devs[d];
    double t = D->tfree;
    if (sc_op_is_fsdp(in->op)) /* RESHARD: after the all-gather */
        t = maxd(t, r->gend[in->stage]);
    if (sc_op_is_wait(in->op)) { /* until its SEND's group has completed */
        int g = r->grp[r->need[gi]];
        if (!group_done(r, d, g))
            return 0;
        t = maxd(t, r->groups[D->gbase + g].done);
    } else if (in->op == SC_OP_OPTIM) {
        t = maxd(t, r->rgend[d]); /* FSDP: the gradients' reduce-scatters */
    } else if (in->op == SC_OP_REDUCE) {
        if (D->head < D->posted)
            return 0;
        for (int g = r->alone ? 0 : D->posted - 1; g >= 0 && g < D->posted; g++)
            t = maxd(t, r->groups[D->gbase + g].done); /* any order */
    }
    *ready = t;
    return 1;
}

static sc_status advance(replay *r, int d)
{
    sc_prog *pg = r->pg;
    dev *D = &r->devs[d];
    const sc_vec *sv = &pg->stream[d];
    while (D->pc < sv->n) {
        size_t k = D->pc, gi = r->offset[d] + k;
        const sc_instr *in = &sv->v[k];
        double ready;
        if (sc_op_is_slot(in->op)) { /* the common case first */
            if (!slot_ready(r, d, gi, in, &ready))
                return SC_OK;
        } else if (sc_op_is_transfer(in->op)) {
            int g = r->grp[gi];
            group *G = &r->groups[D->gbase + g];
            G->post = D->tfree;
            for (int i = 0; i < G->count; i++) {
                if (r->t0)
                    r->t0[G->first + (size_t)i] = D->tfree;
            }
            D->posted = g + 1;
            D->pc += (size_t)G->count;
            if (running(r, d, g)) {
                sc_status st = start_group(r, d, g);
                if (st)
                    return st;
            }
            continue;
        } else if (sc_op_is_coll(in->op)) {
            /* Posting a collective does not block the stream (replay_coll.h). */
            sc_status st = sc_rcoll_post(r->rc, d, gi, D->tfree, r->t0, r->t1);
            int e;
            while (st == SC_OK && sc_rcoll_woken(r->rc, &e))
                if (e != d)
                    st = push_ev(r, EV_ADVANCE, e, 0);
            if (st)
                return st;
            D->pc++;
            continue;
        } else if (sc_op_is_host(in->op)) {
            /* Host copies wait for nothing on other devices: a copy starts
             * when posted and its channel is free; DROP waits for it. */
            double t0 = D->tfree, t1 = t0;
            if (!sc_op_has(in->op, SC_OPF_OUT | SC_OPF_IN)) { /* DROP */
                if (r->hwait[gi] != NONE) /* its copy out (none: recomputation's) */
                    t1 = maxd(t0, r->hend[r->hwait[gi]]);
                D->tfree = t1;
            } else {
                /* Without the plan's slots (a prediction from measured
                 * costs: the runtime's copy engine, runtime/backend/hostlink.h,
                 * copies when posted), a shared link is one channel per
                 * direction for the pair. */
                const sc_offload_info *oi = pg->off_info;
                int ln = !oi && pg->off.shared ? d & ~1 : d;
                double *ch = sc_op_has(in->op, SC_OPF_OUT) ? &r->d2h[ln] : &r->h2d[ln];
                double dur = sc_offload_time(pg, in->stage, sc_instr_frac(in)) *
                             sc_len_k(pg, SC_LK_MEM, in->stage, in->mb); /* its bytes */
                t0 = maxd(t0, *ch);
                if (oi && oi->copy_at) { /* the plan's slot and duration */
                    /* The plan is step 0's (docs/steps.md#steps): a later step's copy
                     * takes the duration of its microbatch in step 0, and
                     * starts when the link allows (step 0's slots are past). */
                    size_t SM = (size_t)pg->S * (size_t)pg->m;
                    int mb0 = in->mb % pg->m;
                    size_t x = (sc_op_has(in->op, SC_OPF_IN) ? SM : 0) + SC_SM(pg, in->stage, mb0);
                    if (oi->copy_at[x] >= 0) {
                        if (mb0 == in->mb)
                            t0 = maxd(t0, oi->copy_at[x]);
                        dur = oi->copy_dur[x];
                    }
                }
                t1 = t0 + dur;
                *ch = r->hend[gi] = t1;
            }
            if (r->t0) {
                r->t0[gi] = t0;
                r->t1[gi] = t1;
            }
            D->pc++;
            continue;
        } else if (in->op == SC_OP_UNSHARD || in->op == SC_OP_REDUCE_GRAD) {
            /* FSDP's all-gather and reduce-scatter (docs/fsdp.md#verification):
             * on the device's data-parallel channel, in posting order, once
             * posted; the replicas post them at the same point of the same
             * stream. A stage's passes wait for its all-gather, the step's
             * OPTIM for the reduce-scatters. */
            int gather = in->op == SC_OP_UNSHARD;
            double t0 = maxd(D->tfree, r->dpch[d]);
            double t1 = t0 + (gather ? sc_prog_fsdp_time(pg) : sc_prog_fsdp_reduce_time(pg));
            r->dpch[d] = t1;
            if (gather)
                r->gend[in->stage] = t1;
            else
                r->rgend[d] = maxd(r->rgend[d], t1);
            if (r->t0) {
                r->t0[gi] = t0;
                r->t1[gi] = t1;
            }
            D->pc++;
            continue;
        } else if (!other_ready(r, d, gi, in, &ready)) {
            return SC_OK;
        }
        size_t cneed = r->cneed ? r->cneed[gi] : NONE;
        if (cneed != NONE) { /* a collective it reads (docs/semantics.md#collectives) */
            double t = sc_rcoll_done(r->rc, cneed);
            if (t < 0) {
                sc_rcoll_block(r->rc, d, cneed);
                return SC_OK; /* blocked until it completes */
            }
            ready = maxd(ready, t);
        }
        double end = ready + sc_instr_cost(pg, d, in);
        if (r->t0) {
            r->t0[gi] = ready;
            r->t1[gi] = end;
        }
        D->tfree = end;
        D->pc++;
    }
    return SC_OK;
}

/* One replay of the streams; cells: the proof of a file's cells in the
 * NCCL mode (each transfer alone, a device's one at a time). */
static sc_status replay_run(sc_prog *pg, const size_t *offset, double *t0, double *t1, int cells)
{
    int P = pg->P;
    size_t N = offset[P];
    replay r = {.pg = pg, .mode = pg->p2p, .alone = cells || pg->p2p != SC_P2P_NCCL,
                .cells = cells, .eager = cells && sc_prog_eager(pg), .offset = offset,
                .t0 = t0, .t1 = t1, .N = N};
    sc_status st = SC_OK;
    /* One block for the per-instruction arrays, filled by prepare (nothing
     * to clear: each entry is written before it is read). */
    size_t n1 = N + 1;
    char *blk = sc_malloc(n1 * (5 * sizeof(size_t) + 2 * sizeof(int) + 1));
    if (blk) {
        r.match = (size_t *)blk;
        r.need = r.match + n1;
        r.need2 = r.need + n1;
        r.hwait = r.need2 + n1;
        r.hend = (double *)(r.hwait + n1);
        r.grp = (int *)(r.hend + n1);
        r.rank = r.grp + n1;
        r.matched = (unsigned char *)(r.rank + n1);
    }
    r.d2h = sc_calloc(2 * (size_t)P, sizeof(double));
    r.h2d = r.d2h ? r.d2h + P : NULL;
    r.gend = sc_calloc((size_t)pg->S + 2 * (size_t)P, sizeof(double));
    r.dpch = r.gend ? r.gend + pg->S : NULL;
    r.rgend = r.gend ? r.dpch + P : NULL;
    r.devs = sc_calloc((size_t)P, sizeof(dev));
    if (!blk || !r.d2h || !r.gend || !r.devs) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory in the replay (%zu instructions)", N);
        goto done;
    }
    if ((st = sc_verify_fsdp(pg)) != SC_OK || (st = sc_replay_prepare(&r)) != SC_OK)
        goto done;
    /* The stack holds at most a COMPLETE per group and an ADVANCE per
     * device, but for collectives' wake-ups (push_ev grows it for those). */
    r.capev = (size_t)P + r.ngr + 16;
    if (!(r.ev = sc_malloc(r.capev * sizeof *r.ev))) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory in the replay");
        goto done;
    }
    for (int d = P - 1; d >= 0; d--)
        if ((st = push_ev(&r, EV_ADVANCE, d, 0)) != SC_OK)
            goto done;
    while (r.nev > 0) {
        event ev = r.ev[--r.nev];
        dev *D = &r.devs[ev.d];
        switch (ev.kind) {
        case EV_ADVANCE:
            st = advance(&r, ev.d);
            break;
        case EV_COMPLETE: {
            /* The device goes on, and the group its completion lets run
             * starts: called here, not pushed (neither calls back into
             * this loop, and the order of events does not matter). */
            group *G = &r.groups[D->gbase + ev.g];
            G->complete = 1;
            while (D->head < D->ngroups && group_done(&r, ev.d, D->head))
                D->head++;
            int next = -1;
            if (r.mode == SC_P2P_NCCL && D->posted > D->head)
                next = D->head;
            else if (r.mode == SC_P2P_LINK && G->lnext >= 0 && D->posted > G->lnext)
                next = G->lnext; /* the link's next transfer */
            st = advance(&r, ev.d);
            if (st == SC_OK && next >= 0)
                st = start_group(&r, ev.d, next);
            break;
        }
        }
        if (st)
            goto done;
    }
    for (int d = 0; d < P; d++) {
        dev *D = &r.devs[d];
        if (D->pc < pg->stream[d].n || D->head < D->ngroups ||
            !sc_rcoll_channel_done(r.rc, d)) {
            st = cells ? sc_replay_cells_deadlock(&r) : sc_replay_deadlock(&r);
            goto done;
        }
    }
done:
    sc_free(blk);
    sc_free(r.d2h);
    sc_free(r.gend);
    sc_free(r.devs);
    sc_free(r.groups);
    sc_free(r.ev);
    sc_rcoll_free(r.rc);
    return st;
}

sc_status sc_replay(sc_prog *pg, const size_t *offset, double *t0, double *t1)
{
    sc_status st = replay_run(pg, offset, t0, t1, 0);
    /* A PyTorch file in the NCCL mode (p2p.h): the figures read each run of
     * transfer cells as one group; the verdict also holds with each cell
     * posted alone, as PyTorch posts them (docs/modes.md#crossing-cells). */
    if (st == SC_OK && pg->p2p == SC_P2P_NCCL && pg->target == SC_LOWER_FILE)
        st = replay_run(pg, offset, NULL, NULL, 1);
    return st;
}

sc_status sc_replay_timed(sc_prog *pg, sc_times *t)
{
    int P = pg->P;
    *t = (sc_times){0};
    t->offset = sc_malloc(((size_t)P + 1) * sizeof(size_t));
    if (!t->offset)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory replaying the streams");
    t->offset[0] = 0;
    for (int d = 0; d < P; d++)
        t->offset[d + 1] = t->offset[d] + pg->stream[d].n;
    size_t N = t->offset[P];
    t->t0 = sc_malloc((N + 1) * sizeof(double));
    t->t1 = sc_malloc((N + 1) * sizeof(double));
    sc_status st = t->t0 && t->t1 ? sc_replay(pg, t->offset, t->t0, t->t1)
                                  : sc_fail(pg, SC_ERR_NOMEM, "out of memory replaying the streams");
    if (st != SC_OK)
        sc_times_free(t);
    return st;
}
