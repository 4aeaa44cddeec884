/*
 * replay_prepare.c — the replay's checks of the streams and its tables
 * (replay_impl.h): groups, the matching of every transfer, data flow,
 * host copies, the posting order (posting.h), in two passes over the
 * instructions.
 */
#include "ir/alloc.h"
#include "ir/p2p.h"
#include "posting.h"
#include "replay_coll.h"
#include "replay_impl.h"

#include <stdio.h>
#include <string.h>

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

/* Key of a transfer: (direction, consuming stage, microbatch), of S stages
 * and nmb microbatch numbers (the program's, read once: the tables' stores
 * could otherwise change them as far as the compiler knows). */
static inline size_t key_of(size_t S, size_t nmb, const sc_instr *in)
{
    return ((size_t)in->dir * S + (size_t)in->stage) * nmb + (size_t)in->mb;
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

/* The tables of the two passes, of SM = S * nmb entries each (NONE: not
 * seen), and the first pair out of posting order: SEND #ks of device pa to
 * pb, its q-th. */
typedef struct tabs {
    size_t *send_at, *recv_at; /* [2 * SM] by key_of */
    size_t *posF, *posB;       /* [SM] the F, the B or BW of (stage, mb) */
    size_t *host_at;           /* [3 * SM] OFFLOAD, DROP, RELOAD */
    size_t *rpos;              /* [SM] R */
    int *cnt;                  /* [2 * P] posting ranks (posting.h) */
    int pa, pb;
    size_t ks, q;
} tabs;

/* Pass 1 on a pass (or both halves of a pair) at k of d: its place in
 * posF, posB and rpos, and the records it reads there (recomputed once
 * dropped for recomputation, back once offloaded). */
static sc_status slot_tables(replay *r, int d, size_t k, tabs *t)
{
    sc_prog *pg = r->pg;
    const int S = pg->S, nmb = pg->nmb;
    const size_t SM = (size_t)S * (size_t)nmb, zN = (size_t)nmb, base = r->offset[d];
    const sc_vec *sv = &pg->stream[d];
    const sc_instr *in = &sv->v[k];
    size_t gi = base + k;
    size_t *posF = t->posF, *posB = t->posB, *host_at = t->host_at, *rpos = t->rpos;
    char a[160];
    sc_instr h[2]; /* a pass, or both halves of a pair, at gi */
    for (int i = sc_instr_halves(in, h); i-- > 0;) {
        const sc_instr *x = &h[i];
        if (x->stage < 0 || x->stage >= S || x->mb < 0 || x->mb >= nmb) {
            describe(r, d, k, a, sizeof a);
            return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage or microbatch out of range", a);
        }
        size_t sm = (size_t)x->stage * zN + (size_t)x->mb;
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
            const sc_instr *dr = rdrop != NONE ? &sv->v[rdrop - base] : NULL;
            if (!dr || dr->frac != x->frac || posB[sm] != NONE || rpos[sm] != NONE) {
                describe(r, d, k, a, sizeof a);
                return sc_fail(pg, SC_ERR_PROGRAM,
                               "%s recomputes what was not dropped for it (no DROP of "
                               "the same fraction of s%d mb%d after its F, before it), "
                               "or after its B, or twice", a, x->stage, x->mb);
            }
            rpos[sm] = gi;
            continue;
        }
        /* A record dropped for recomputation is read only once
         * recomputed, one that went to the host only once back. */
        size_t off = host_at[sm];
        int unrec = rdrop != NONE && rpos[sm] == NONE;
        int unrel = off != NONE && host_at[2 * SM + sm] == NONE;
        if (!sc_op_is_fwd(x->op) && (unrec || unrel)) {
            describe(r, d, k, a, sizeof a);
            return sc_fail(pg, SC_ERR_PROGRAM,
                           "%s reads s%d mb%d, which is %s (#%zu) and not %s before it",
                           a, x->stage, x->mb,
                           unrec ? "dropped for recomputation" : "offloaded",
                           (unrec ? rdrop : off) - r->offset[d],
                           unrec ? "recomputed (R)" : "reloaded");
        }
        if (sc_op_is_bgrad(x->op) && off != NONE)
            r->hwait[gi] = host_at[2 * SM + sm];
    }
    return SC_OK;
}

/* Pass 1: the groups of every device (their count in devs[].ngroups), the
 * tables of passes and transfers, and the checks that need only them. */
static sc_status pass1(replay *r, tabs *t)
{
    sc_prog *pg = r->pg;
    const int P = pg->P, S = pg->S, nmb = pg->nmb;
    const size_t zS = (size_t)S, zN = (size_t)nmb;
    /* The arrays in locals: stores through them cannot change them. */
    int *grp = r->grp, *rank = r->rank;
    size_t *need = r->need, *need2 = r->need2, *hwait = r->hwait;
    double *hend = r->hend;
    int gtotal = 0;
    for (int d = 0; d < P; d++) {
        r->devs[d].gbase = gtotal;
        int ng = 0;
        const sc_vec *sv = &pg->stream[d];
        memset(t->cnt, 0, 2 * (size_t)P * sizeof(int));
        const size_t base = r->offset[d], n = sv->n;
        for (size_t k = 0; k < n; k++) {
            const sc_instr *in = &sv->v[k];
            size_t gi = base + k;
            grp[gi] = -1;
            need[gi] = need2[gi] = hwait[gi] = NONE;
            char a[160], b[160];
            sc_status st;
            if (sc_op_is_transfer(in->op)) {
                if (r->alone || sc_starts_group(sv->v, k)) /* gloo, per-link: each alone */
                    ng++;
                grp[gi] = ng - 1;
                /* A transfer's copy end is only the mark of a waited SEND
                 * (pass 2); the copies' own ends are written before read. */
                r->matched[gi] = 0;
                hend[gi] = 0;
                if (in->stage < 0 || in->stage >= S || in->mb < 0 || in->mb >= nmb ||
                    in->peer < 0 || in->peer >= P || in->peer == d || in->dir > SC_DIR_GRAD ||
                    producer_stage(pg, in) < 0) {
                    describe(r, d, k, a, sizeof a);
                    return sc_fail(pg, SC_ERR_PROGRAM, "%s: transfer out of range", a);
                }
                rank[gi] = sc_posting_rank(pg, in, t->cnt);
                size_t key = key_of(zS, zN, in);
                size_t *tab = sc_op_has(in->op, SC_OPF_OUT) ? t->send_at : t->recv_at;
                if (tab[key] != NONE) {
                    int e = dev_of(r, tab[key]);
                    describe(r, e, tab[key] - r->offset[e], a, sizeof a);
                    describe(r, d, k, b, sizeof b);
                    return sc_fail(pg, SC_ERR_PROGRAM, "transfer posted twice: %s and %s", a, b);
                }
                tab[key] = gi;
            } else if (sc_op_is_slot(in->op)) {
                if ((st = slot_tables(r, d, k, t)) != SC_OK)
                    return st;
            } else if (sc_op_is_host(in->op)) {
                if ((st = sc_replay_check_host(r, d, k, t->posF, t->posB, t->host_at)) != SC_OK)
                    return st;
            }
        }
        r->devs[d].ngroups = ng;
        gtotal += ng;
    }
    r->ngr = (size_t)gtotal;
    return SC_OK;
}

/* Pass 2 on the transfer at k of d: its group filled, its match found (the
 * peers agree), its posting rank against its match's, and its data flow
 * (the producer earlier on the sender, the consumer later on the
 * receiver). */
static sc_status match_transfer(replay *r, int d, size_t k, group *gs, tabs *t)
{
    sc_prog *pg = r->pg;
    const size_t zS = (size_t)pg->S, zN = (size_t)pg->nmb;
    const sc_vec *sv = &pg->stream[d];
    const size_t base = r->offset[d], n = sv->n;
    const sc_instr *in = &sv->v[k];
    size_t gi = base + k;
    char a[160], b[160];
    group *G = &gs[r->grp[gi]];
    if (r->alone || sc_starts_group(sv->v, k)) /* its first transfer, as in pass 1 */
        *G = (group){.first = gi, .lprev = -1, .lnext = -1};
    G->remaining = ++G->count;
    size_t key = key_of(zS, zN, in);
    int send = sc_op_has(in->op, SC_OPF_OUT);
    size_t other = send ? t->recv_at[key] : t->send_at[key];
    if (other == NONE) {
        describe(r, d, k, a, sizeof a);
        return sc_fail(pg, SC_ERR_PROGRAM, "%s has no matching %s on d%d", a,
                       send ? "RECV" : "SEND", in->peer);
    }
    if (!on_dev(r, in->peer, other) ||
        pg->stream[in->peer].v[other - r->offset[in->peer]].peer != d) {
        int e = dev_of(r, other);
        describe(r, d, k, a, sizeof a);
        describe(r, e, other - r->offset[e], b, sizeof b);
        return sc_fail(pg, SC_ERR_PROGRAM, "%s is matched by %s: peers disagree", a, b);
    }
    r->match[gi] = other;
    if (send && r->rank[gi] != r->rank[other] && (t->pa < 0 || (t->pa == d && in->peer < t->pb))) {
        t->pa = d; /* the first in (a, b, k) order: devices and ranks ascend */
        t->pb = in->peer;
        t->ks = k;
        t->q = (size_t)r->rank[gi];
    }
    /* The producer must be on the sender, before the SEND; the
     * consumer on the receiver, after the RECV. */
    int ps = in->dir == SC_DIR_ACT ? in->stage - 1 : in->stage + 1; /* pass 1 */
    const size_t *pos = in->dir == SC_DIR_ACT ? t->posF : t->posB;
    size_t prod = pos[(size_t)ps * zN + (size_t)in->mb];
    size_t cons = pos[(size_t)in->stage * zN + (size_t)in->mb];
    const char *pk = in->dir == SC_DIR_ACT ? "F" : "B";
    if (send && (prod - base >= n || prod > gi)) { /* not earlier on d */
        describe(r, d, k, a, sizeof a);
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "%s sends data before it is produced: %s s%d mb%d is not "
                       "earlier on d%d",
                       a, pk, ps, in->mb, d);
    }
    if (!send && (cons - base >= n || cons < gi)) { /* not later on d */
        describe(r, d, k, a, sizeof a);
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "%s receives data no later pass on d%d reads (%s s%d mb%d)", a,
                       d, pk, in->stage, in->mb);
    }
    return SC_OK;
}

/* Pass 2 on the WAIT at k of d: the SEND it waits for comes earlier on d
 * and is waited for once (need: that SEND). */
static sc_status match_wait(replay *r, int d, size_t k, const tabs *t)
{
    sc_prog *pg = r->pg;
    const int S = pg->S, nmb = pg->nmb;
    const sc_vec *sv = &pg->stream[d];
    const size_t base = r->offset[d], n = sv->n;
    const sc_instr *in = &sv->v[k];
    size_t gi = base + k;
    char a[160];
    size_t sd = in->stage >= 0 && in->stage < S && in->mb >= 0 && in->mb < nmb &&
                        in->dir <= SC_DIR_GRAD
                    ? t->send_at[key_of((size_t)S, (size_t)nmb, in)] : NONE;
    if (sd - base >= n || sd > gi || sv->v[sd - base].peer != in->peer) {
        describe(r, d, k, a, sizeof a);
        return sc_fail(pg, SC_ERR_PROGRAM, "%s waits for a SEND that does not come "
                       "before it on d%d", a, d);
    }
    if (r->hend[sd] != 0) {
        describe(r, d, k, a, sizeof a);
        return sc_fail(pg, SC_ERR_PROGRAM, "%s waits for a SEND already waited for", a);
    }
    r->hend[sd] = 1; /* marks the SEND waited (a SEND has no copy end) */
    r->need[gi] = sd;
    return SC_OK;
}

/* Pass 2 on the pass (or pair) at k of d: which input each pass (each half
 * of a pair) reads, and from which RECV earlier on d. A pair waits for
 * both (need, need2). */
static sc_status slot_inputs(replay *r, int d, size_t k, const tabs *t)
{
    sc_prog *pg = r->pg;
    const size_t zS = (size_t)pg->S, zN = (size_t)pg->nmb;
    const sc_vec *sv = &pg->stream[d];
    const size_t base = r->offset[d], n = sv->n;
    size_t gi = base + k;
    char a[160];
    sc_instr h[2];
    for (int i = sc_instr_halves(&sv->v[k], h); i-- > 0;) {
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
        size_t rv = t->recv_at[key_of(zS, zN, &probe)];
        if (rv - base >= n || rv > gi) { /* not earlier on d */
            describe(r, d, k, a, sizeof a);
            return sc_fail(pg, SC_ERR_PROGRAM,
                           "%s reads %s from d%d but no RECV of it comes before it", a,
                           dir == SC_DIR_ACT ? "activations" : "gradients", pd);
        }
        if (i == 1)
            r->need2[gi] = rv;
        else
            r->need[gi] = rv;
    }
    return SC_OK;
}

/* Pass 2: transfers matched, data flow checked, groups filled. */
static sc_status pass2(replay *r, tabs *t)
{
    for (int d = 0; d < r->pg->P; d++) {
        const sc_vec *sv = &r->pg->stream[d];
        group *gs = &r->groups[r->devs[d].gbase];
        for (size_t k = 0; k < sv->n; k++) {
            sc_op op = sv->v[k].op;
            sc_status st = sc_op_is_transfer(op) ? match_transfer(r, d, k, gs, t)
                           : sc_op_is_wait(op)   ? match_wait(r, d, k, t)
                           : sc_op_is_slot(op)   ? slot_inputs(r, d, k, t)
                                                 : SC_OK;
            if (st != SC_OK)
                return st;
        }
    }
    return SC_OK;
}

sc_status sc_replay_prepare(replay *r)
{
    sc_prog *pg = r->pg;
    const size_t SM = (size_t)pg->S * (size_t)pg->nmb;
    sc_status st = SC_OK;
    tabs t = {.send_at = sc_malloc(2 * SM * sizeof(size_t)),
              .recv_at = sc_malloc(2 * SM * sizeof(size_t)),
              .posF = sc_malloc(SM * sizeof(size_t)),
              .posB = sc_malloc(SM * sizeof(size_t)),
              .host_at = sc_malloc(3 * SM * sizeof(size_t)),
              .rpos = sc_malloc(SM * sizeof(size_t)),
              .cnt = sc_malloc(2 * (size_t)pg->P * sizeof(int)),
              .pa = -1, .pb = -1};
    if (!t.send_at || !t.recv_at || !t.posF || !t.posB || !t.host_at || !t.rpos || !t.cnt) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory in the replay");
        goto done;
    }
    memset(t.send_at, 0xff, 2 * SM * sizeof(size_t));
    memset(t.recv_at, 0xff, 2 * SM * sizeof(size_t));
    memset(t.posF, 0xff, SM * sizeof(size_t));
    memset(t.posB, 0xff, SM * sizeof(size_t));
    memset(t.host_at, 0xff, 3 * SM * sizeof(size_t));
    memset(t.rpos, 0xff, SM * sizeof(size_t));
    if ((st = pass1(r, &t)) != SC_OK)
        goto done;
    if (!(r->groups = sc_malloc((r->ngr + 1) * sizeof(group)))) {
        st = sc_fail(pg, SC_ERR_NOMEM, "out of memory in the replay");
        goto done;
    }
    if ((st = pass2(r, &t)) != SC_OK)
        goto done;
    /* The marks of waited SENDs stay: the run reads no SEND's copy end. */
    if (r->mode == SC_P2P_LINK && (st = link_order(r)) != SC_OK)
        goto done;
    st = sc_rcoll_prepare(pg, r->offset, &r->rc);
    r->cneed = sc_rcoll_needs(r->rc);
    if (st == SC_OK && t.pa >= 0)
        st = sc_posting_mismatch(pg, t.pa, t.ks, t.pb, t.q);
done:
    sc_free(t.cnt);
    sc_free(t.send_at);
    sc_free(t.recv_at);
    sc_free(t.posF);
    sc_free(t.posB);
    sc_free(t.host_at);
    sc_free(t.rpos);
    return st;
}
