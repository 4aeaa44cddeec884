/*
 * replay.c — executes lowered streams under the communication semantics
 * (replay.h), timing every instruction and catching deadlocks.
 *
 * The replay is event-driven and linear in the number of instructions: each
 * group starts once and completes once, each transfer is matched once, and
 * each device's program counter only moves forward. Because every time is a
 * max-plus expression of times already known, the order in which events are
 * processed does not change the result; a plain stack of events suffices.
 */
#include "replay.h"
#include "fsdp.h"
#include "ir/alloc.h"
#include "posting.h"
#include "replay_coll.h"
#include "replay_impl.h"
#include "ir/p2p.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The device whose stream holds global instruction gi (error paths). */
static int dev_of(const replay *r, size_t gi)
{
    int d = 0;
    while (d + 1 < r->pg->P && r->offset[d + 1] <= gi)
        d++;
    return d;
}

/* Whether global instruction gi is on device d. */
static inline int on_dev(const replay *r, int d, size_t gi)
{
    return gi - r->offset[d] < r->pg->stream[d].n; /* NONE and below wrap */
}

/* Key of a transfer: (direction, consuming stage, microbatch). */
static size_t key_of(const sc_prog *pg, const sc_instr *in)
{
    return ((size_t)in->dir * (size_t)pg->S + (size_t)in->stage) * (size_t)pg->nmb + (size_t)in->mb;
}

/* Producer stage of a transfer's data, or -1 when there is none (off the
 * microbatch's route, docs/guide.md#copies). */
static int producer_stage(const sc_prog *pg, const sc_instr *in)
{
    int s = in->dir == SC_DIR_ACT ? in->stage - 1 : in->stage + 1;
    return s >= 0 && s < pg->S && sc_mb_has(pg, s, in->mb) && sc_mb_has(pg, in->stage, in->mb)
               ? s : -1;
}

/* Per-link (docs/semantics.md#modes): chains each device's transfers
 * (groups of one) on each directed link, sends to e and receives from e
 * apart, in stream order. */
static sc_status link_order(replay *r)
{
    int P = r->pg->P;
    int *last = sc_malloc(2 * (size_t)P * sizeof(int));
    if (!last)
        return sc_fail(r->pg, SC_ERR_NOMEM, "out of memory in the replay");
    for (int d = 0; d < P; d++) {
        dev *D = &r->devs[d];
        for (int i = 0; i < 2 * P; i++)
            last[i] = -1;
        for (int g = 0; g < D->ngroups; g++) {
            group *G = &r->groups[D->gbase + g];
            const sc_instr *in = &r->pg->stream[d].v[G->first - r->offset[d]];
            int link = (sc_op_has(in->op, SC_OPF_OUT) ? P : 0) + in->peer;
            G->lprev = last[link];
            if (last[link] >= 0)
                r->groups[D->gbase + last[link]].lnext = g;
            last[link] = g;
        }
    }
    sc_free(last);
    return SC_OK;
}

/* Groups, matching and data-flow checks of the streams; fills r. */
static sc_status prepare(replay *r)
{
    sc_prog *pg = r->pg;
    int P = pg->P;
    size_t SM = (size_t)pg->S * (size_t)pg->nmb;
    sc_status st = SC_OK;
    size_t *send_at = sc_malloc(2 * SM * sizeof(size_t));
    size_t *recv_at = sc_malloc(2 * SM * sizeof(size_t));
    size_t *posF = sc_malloc(SM * sizeof(size_t));
    size_t *posB = sc_malloc(SM * sizeof(size_t)); /* B or BW */
    size_t *host_at = sc_malloc(3 * SM * sizeof(size_t)); /* OFFLOAD, DROP, RELOAD */
    size_t *rpos = sc_malloc(SM * sizeof(size_t));        /* R */
    int *cnt = sc_malloc(2 * (size_t)P * sizeof(int)); /* posting ranks (posting.h) */
    /* The first pair out of posting order: SEND #ks of device pa to pb, its q-th. */
    int pa = -1, pb = -1;
    size_t ks = 0, q = 0;
    if (!send_at || !recv_at || !posF || !posB || !host_at || !rpos || !cnt) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory in the replay");
        goto done;
    }
    memset(send_at, 0xff, 2 * SM * sizeof(size_t));
    memset(recv_at, 0xff, 2 * SM * sizeof(size_t));
    memset(posF, 0xff, SM * sizeof(size_t));
    memset(posB, 0xff, SM * sizeof(size_t));
    memset(host_at, 0xff, 3 * SM * sizeof(size_t));
    memset(rpos, 0xff, SM * sizeof(size_t));

    /* Pass 1: groups, tables of passes and transfers. */
    int gtotal = 0;
    for (int d = 0; d < P; d++) {
        r->devs[d].gbase = gtotal;
        int ng = 0;
        const sc_vec *sv = &pg->stream[d];
        memset(cnt, 0, 2 * (size_t)P * sizeof(int));
        for (size_t k = 0; k < sv->n; k++) {
            const sc_instr *in = &sv->v[k];
            size_t gi = r->offset[d] + k;
            r->grp[gi] = -1;
            r->need[gi] = r->need2[gi] = r->hwait[gi] = NONE;
            char a[160], b[160];
            if (sc_op_is_transfer(in->op)) {
                if (r->alone || sc_starts_group(sv->v, k)) /* gloo, per-link: each alone */
                    ng++;
                r->grp[gi] = ng - 1;
                /* A transfer's copy end is only the mark of a waited SEND
                 * (pass 2); the copies' own ends are written before read. */
                r->matched[gi] = 0;
                r->hend[gi] = 0;
                if (in->stage < 0 || in->stage >= pg->S || in->mb < 0 || in->mb >= pg->nmb ||
                    in->peer < 0 || in->peer >= P || in->peer == d || in->dir > SC_DIR_GRAD ||
                    producer_stage(pg, in) < 0) {
                    describe(r, d, k, a, sizeof a);
                    st = sc_fail(pg, SC_ERR_PROGRAM, "%s: transfer out of range", a);
                    goto done;
                }
                r->rank[gi] = sc_posting_rank(pg, in, cnt);
                size_t key = key_of(pg, in);
                size_t *tab = sc_op_has(in->op, SC_OPF_OUT) ? send_at : recv_at;
                if (tab[key] != NONE) {
                    int e = dev_of(r, tab[key]);
                    describe(r, e, tab[key] - r->offset[e], a, sizeof a);
                    describe(r, d, k, b, sizeof b);
                    st = sc_fail(pg, SC_ERR_PROGRAM, "transfer posted twice: %s and %s", a, b);
                    goto done;
                }
                tab[key] = gi;
            } else if (sc_op_is_slot(in->op)) {
                sc_instr h[2]; /* a pass, or both halves of a pair, at gi */
                for (int i = sc_instr_halves(in, h); i-- > 0;) {
                    const sc_instr *x = &h[i];
                    if (x->stage < 0 || x->stage >= pg->S || x->mb < 0 || x->mb >= pg->nmb) {
                        describe(r, d, k, a, sizeof a);
                        st = sc_fail(pg, SC_ERR_PROGRAM, "%s: stage or microbatch out of range", a);
                        goto done;
                    }
                    size_t sm = SC_SMN(pg, x->stage, x->mb);
                    if (sc_op_is_fwd(x->op)) {
                        if (!(x->flags & SC_IF_ROLLBACK)) /* a redone F: not the F */
                            posF[sm] = gi;
                    } else if (sc_op_is_bgrad(x->op)) {
                        posB[sm] = gi;
                    }
                    /* A record dropped for recomputation is read only once R
                     * has recomputed it; R recomputes what such a DROP dropped. */
                    size_t rdrop = host_at[sm] == NONE ? host_at[SM + sm] : NONE;
                    if (x->op == SC_OP_R) {
                        const sc_instr *dr =
                            rdrop != NONE ? &pg->stream[d].v[rdrop - r->offset[d]] : NULL;
                        if (!dr || dr->frac != x->frac || posB[sm] != NONE || rpos[sm] != NONE) {
                            describe(r, d, k, a, sizeof a);
                            st = sc_fail(pg, SC_ERR_PROGRAM,
                                         "%s recomputes what was not dropped for it (no DROP of "
                                         "the same fraction of s%d mb%d after its F, before it), "
                                         "or after its B, or twice", a, x->stage, x->mb);
                            goto done;
                        }
                        rpos[sm] = gi;
                        continue;
                    }
                    if (!sc_op_is_fwd(x->op) && rdrop != NONE && rpos[sm] == NONE) {
                        describe(r, d, k, a, sizeof a);
                        st = sc_fail(pg, SC_ERR_PROGRAM,
                                     "%s reads s%d mb%d, which is dropped for recomputation "
                                     "(#%zu) and not recomputed (R) before it",
                                     a, x->stage, x->mb, rdrop - r->offset[d]);
                        goto done;
                    }
                    /* A record that went to the host is read only once back. */
                    size_t off = host_at[sm];
                    if (!sc_op_is_fwd(x->op) && off != NONE && host_at[2 * SM + sm] == NONE) {
                        describe(r, d, k, a, sizeof a);
                        st = sc_fail(pg, SC_ERR_PROGRAM,
                                     "%s reads s%d mb%d, which is offloaded (#%zu) and not "
                                     "reloaded before it",
                                     a, x->stage, x->mb, off - r->offset[d]);
                        goto done;
                    }
                    if (sc_op_is_bgrad(x->op) && off != NONE)
                        r->hwait[gi] = host_at[2 * SM + sm];
                }
            } else if (sc_op_is_host(in->op)) {
                if ((st = sc_replay_check_host(r, d, k, posF, posB, host_at)) != SC_OK)
                    goto done;
            }
        }
        r->devs[d].ngroups = ng;
        gtotal += ng;
    }
    r->ngr = (size_t)gtotal;
    if (!(r->groups = sc_malloc(((size_t)gtotal + 1) * sizeof(group)))) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory in the replay");
        goto done;
    }

    /* Pass 2: match transfers, check data flow, fill groups. */
    for (int d = 0; d < P; d++) {
        const sc_vec *sv = &pg->stream[d];
        for (size_t k = 0; k < sv->n; k++) {
            const sc_instr *in = &sv->v[k];
            size_t gi = r->offset[d] + k;
            char a[160], b[160];
            if (sc_op_is_transfer(in->op)) {
                group *G = &r->groups[r->devs[d].gbase + r->grp[gi]];
                if (r->alone || sc_starts_group(sv->v, k)) /* its first transfer, as in pass 1 */
                    *G = (group){.first = gi, .lprev = -1, .lnext = -1};
                G->remaining = ++G->count;
                size_t key = key_of(pg, in);
                int send = sc_op_has(in->op, SC_OPF_OUT);
                size_t other = send ? recv_at[key] : send_at[key];
                if (other == NONE) {
                    describe(r, d, k, a, sizeof a);
                    st = sc_fail(pg, SC_ERR_PROGRAM, "%s has no matching %s on d%d", a,
                                 send ? "RECV" : "SEND", in->peer);
                    goto done;
                }
                if (!on_dev(r, in->peer, other) ||
                    pg->stream[in->peer].v[other - r->offset[in->peer]].peer != d) {
                    int e = dev_of(r, other);
                    describe(r, d, k, a, sizeof a);
                    describe(r, e, other - r->offset[e], b, sizeof b);
                    st = sc_fail(pg, SC_ERR_PROGRAM, "%s is matched by %s: peers disagree", a, b);
                    goto done;
                }
                r->match[gi] = other;
                if (send && r->rank[gi] != r->rank[other] && (pa < 0 || (pa == d && in->peer < pb))) {
                    pa = d; /* the first in (a, b, k) order: devices and ranks ascend */
                    pb = in->peer;
                    ks = k;
                    q = (size_t)r->rank[gi];
                }
                /* The producer must be on the sender, before the SEND; the
                 * consumer on the receiver, after the RECV. */
                int ps = in->dir == SC_DIR_ACT ? in->stage - 1 : in->stage + 1; /* pass 1 */
                size_t prod = in->dir == SC_DIR_ACT ? posF[SC_SMN(pg, ps, in->mb)]
                                                    : posB[SC_SMN(pg, ps, in->mb)];
                size_t cons = in->dir == SC_DIR_ACT ? posF[SC_SMN(pg, in->stage, in->mb)]
                                                    : posB[SC_SMN(pg, in->stage, in->mb)];
                const char *pk = in->dir == SC_DIR_ACT ? "F" : "B";
                if (send && (!on_dev(r, d, prod) || prod > gi)) {
                    describe(r, d, k, a, sizeof a);
                    st = sc_fail(pg, SC_ERR_PROGRAM,
                                 "%s sends data before it is produced: %s s%d mb%d is not "
                                 "earlier on d%d",
                                 a, pk, ps, in->mb, d);
                    goto done;
                }
                if (!send && (!on_dev(r, d, cons) || cons < gi)) {
                    describe(r, d, k, a, sizeof a);
                    st = sc_fail(pg, SC_ERR_PROGRAM,
                                 "%s receives data no later pass on d%d reads (%s s%d mb%d)", a,
                                 d, pk, in->stage, in->mb);
                    goto done;
                }
            } else if (sc_op_is_wait(in->op)) {
                /* The SEND it waits for: earlier on this device, waited once. */
                size_t sd = in->stage >= 0 && in->stage < pg->S && in->mb >= 0 &&
                                    in->mb < pg->nmb && in->dir <= SC_DIR_GRAD
                                ? send_at[key_of(pg, in)] : NONE;
                describe(r, d, k, a, sizeof a);
                if (!on_dev(r, d, sd) || sd > gi ||
                    pg->stream[d].v[sd - r->offset[d]].peer != in->peer) {
                    st = sc_fail(pg, SC_ERR_PROGRAM, "%s waits for a SEND that does not come "
                                 "before it on d%d", a, d);
                    goto done;
                }
                if (r->hend[sd] != 0) {
                    st = sc_fail(pg, SC_ERR_PROGRAM, "%s waits for a SEND already waited for",
                                 a);
                    goto done;
                }
                r->hend[sd] = 1; /* marks the SEND waited (a SEND has no copy end; reset below) */
                r->need[gi] = sd;
            } else if (sc_op_is_slot(in->op)) {
                /* Which input does each pass (each half of a pair) read, and
                 * from where? A pair waits for both (need, need2). */
                sc_instr h[2];
                for (int i = sc_instr_halves(in, h); i-- > 0;) {
                    const sc_instr *x = &h[i];
                    int dir, ps;
                    if (sc_op_is_fwd(x->op)) {
                        dir = SC_DIR_ACT;
                        ps = x->stage > sc_mb_first(pg, x->mb) ? x->stage - 1 : -1;
                    } else if (sc_op_is_bgrad(x->op)) {
                        dir = SC_DIR_GRAD;
                        ps = x->stage < sc_mb_last(pg, x->mb) ? x->stage + 1 : -1;
                    } else {
                        continue; /* W: its own record */
                    }
                    if (ps < 0)
                        continue;
                    int pd = pg->stage_dev[ps];
                    if (pd == d)
                        continue; /* local hand-off: verify_passes checked the order */
                    sc_instr probe = {.dir = (uint8_t)dir, .stage = x->stage, .mb = x->mb};
                    size_t rv = recv_at[key_of(pg, &probe)];
                    if (!on_dev(r, d, rv) || rv > gi) {
                        describe(r, d, k, a, sizeof a);
                        st = sc_fail(pg, SC_ERR_PROGRAM,
                                     "%s reads %s from d%d but no RECV of it comes before it", a,
                                     dir == SC_DIR_ACT ? "activations" : "gradients", pd);
                        goto done;
                    }
                    if (i == 1)
                        r->need2[gi] = rv;
                    else
                        r->need[gi] = rv;
                }
            }
        }
    }
    /* The marks of waited SENDs stay: the run reads no SEND's copy end. */
    if (r->mode == SC_P2P_LINK && (st = link_order(r)) != SC_OK)
        goto done;
    st = sc_rcoll_prepare(pg, r->offset, &r->rc);
    r->cneed = sc_rcoll_needs(r->rc);
    if (st == SC_OK && pa >= 0)
        st = sc_posting_mismatch(pg, pa, ks, pb, q);
done:
    sc_free(cnt);
    sc_free(send_at);
    sc_free(recv_at);
    sc_free(posF);
    sc_free(posB);
    sc_free(host_at);
    sc_free(rpos);
    return st;
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
        int ge = r->grp[o];
        if (!running(r, e, ge))
            continue;
        group *H = &r->groups[r->devs[e].gbase + ge];
        double t = maxd(G->start, H->start) + r->pg->tcomm;
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
                double dur = sc_offload_time(pg, in->stage, sc_instr_frac(in));
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

sc_status sc_replay(sc_prog *pg, const size_t *offset, double *t0, double *t1)
{
    int P = pg->P;
    size_t N = offset[P];
    replay r = {.pg = pg, .mode = pg->p2p, .alone = pg->p2p != SC_P2P_NCCL, .offset = offset,
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
    if ((st = sc_verify_fsdp(pg)) != SC_OK || (st = prepare(&r)) != SC_OK)
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
            st = sc_replay_deadlock(&r);
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
