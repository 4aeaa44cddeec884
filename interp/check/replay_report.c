/*
 * replay_report.c — the message of a deadlock (replay_impl.h): for every
 * stuck device, what it waits for (a running group's unmatched transfer, a
 * collective a member has not started), followed as a cycle; for the proof
 * of a file's cells, the cells that cross, as the file names them.
 */
#include "replay_impl.h"
#include "ir/alloc.h"
#include "ir/p2p.h"

#include <stdlib.h>

/* What device d waits for when the replay stopped: the peer (or -1) and,
 * in why, the reason: its running P2P group's unmatched transfer, or the
 * collective its channel cannot complete (replay_coll.h). */
static int blocked_on(replay *r, int d, char *why, size_t len)
{
    sc_prog *pg = r->pg;
    dev *D = &r->devs[d];
    const sc_vec *sv = &pg->stream[d];
    int p2p = D->head < D->posted, coll = 0, target = D->head;
    if (D->pc < sv->n) {
        size_t gi = r->offset[d] + D->pc;
        const sc_instr *in = &sv->v[D->pc];
        size_t need = sc_op_is_slot(in->op) || sc_op_is_wait(in->op) ? r->need[gi] : NONE;
        size_t need2 = sc_op_is_slot(in->op) ? r->need2[gi] : NONE; /* a pair's B half */
        size_t cneed = r->cneed ? r->cneed[gi] : (size_t)-1;
        int waits_group = (need != NONE && !group_done(r, d, r->grp[need])) ||
                          (need2 != NONE && !group_done(r, d, r->grp[need2])) ||
                          (in->op == SC_OP_REDUCE && D->head < D->posted);
        coll = !waits_group && cneed != NONE && sc_rcoll_done(r->rc, cneed) < 0;
        p2p = waits_group;
        if (r->alone && need != NONE)
            target = r->grp[need]; /* groups complete in any order */
        /* Per-link: it waits behind the first incomplete transfer of its link. */
        while (r->mode == SC_P2P_LINK && target >= 0 &&
               r->groups[D->gbase + target].lprev >= 0 &&
               !group_done(r, d, r->groups[D->gbase + target].lprev))
            target = r->groups[D->gbase + target].lprev;
    } else if (!p2p) {
        coll = !sc_rcoll_channel_done(r->rc, d);
    }
    if (coll)
        return sc_rcoll_waits(r->rc, d, (size_t)-1, why, len);
    if (!p2p)
        return -1;
    group *G = &r->groups[D->gbase + target];
    for (int i = 0; i < G->count; i++) {
        size_t k = G->first + (size_t)i;
        if (!r->matched[k]) {
            char w[128];
            const sc_instr *in = &pg->stream[d].v[k - r->offset[d]];
            sc_prog_instr_format(pg, in, w, sizeof w); /* slices: mbM.J */
            /* the peer: the device of its match (prepare checked it) */
            snprintf(why, len, "its running group's %s is unmatched, waits for d%d", w, in->peer);
            return in->peer;
        }
    }
    return -1;
}

/* After a deadlock: walk from a stuck device along "waits for" edges until a
 * device repeats, and write the cycle into the error message. */
sc_status sc_replay_deadlock(replay *r)
{
    sc_prog *pg = r->pg;
    int P = pg->P;
    enum { WHY = 320 };
    int *seen = sc_calloc((size_t)P, sizeof(int));
    int *waits = sc_malloc((size_t)P * sizeof(int));
    char *why = sc_malloc((size_t)P * WHY);
    if (!seen || !waits || !why) {
        sc_free(seen);
        sc_free(waits);
        sc_free(why);
        return sc_fail(pg, SC_ERR_NOMEM, "deadlock (out of memory describing it)");
    }
    int start = -1;
    for (int d = 0; d < P; d++) {
        why[(size_t)d * WHY] = 0;
        waits[d] = blocked_on(r, d, why + (size_t)d * WHY, WHY);
        if (waits[d] >= 0 && start < 0)
            start = d;
    }
    char msg[sizeof pg->err];
    size_t len = 0;
    if (start < 0) {
        /* Cannot happen with matched streams; say what is stuck. */
        snprintf(msg, sizeof msg, "deadlock: no device can proceed");
    } else {
        int d = start, step = 1;
        while (!seen[d] && waits[d] >= 0) {
            seen[d] = step++;
            d = waits[d];
        }
        int c = d; /* first device of the cycle */
        len += (size_t)snprintf(msg + len, sizeof msg - len, "deadlock: ");
        if (waits[d] < 0) {
            char at[160];
            describe(r, d, r->devs[d].pc, at, sizeof at);
            snprintf(msg + len, sizeof msg - len, "%s cannot proceed", at);
            d = -1;
        } else
        do {
            char at[160];
            if (d < 0)
                break;
            describe(r, d, r->devs[d].pc, at, sizeof at);
            if (len < sizeof msg)
                len += (size_t)snprintf(msg + len, sizeof msg - len, "%s: %s; ", at,
                                        why + (size_t)d * WHY);
            d = waits[d];
        } while (d != c && d >= 0);
        if (d >= 0 && len < sizeof msg)
            snprintf(msg + len, sizeof msg - len, "the cycle closes at d%d", c);
    }
    sc_free(seen);
    sc_free(waits);
    sc_free(why);
    return sc_fail(pg, SC_ERR_DEADLOCK, "%s", msg);
}

/* A cell as the file names it: "rank 0 cell 5 (0SEND_F1)", or by its place
 * in the stream ("rank 0 #4 (0SEND_F1)") for streams not read from a file. */
static void cell_name(const replay *r, int d, size_t gi, char *buf, size_t len)
{
    size_t k = gi - r->offset[d];
    char tok[48];
    sc_transfer_token(instr_at(r, d, k), tok, sizeof tok);
    int cell = sc_prog_cell(r->pg, d, k);
    if (cell > 0)
        snprintf(buf, len, "rank %d cell %d (%s)", d, cell, tok);
    else
        snprintf(buf, len, "rank %d #%zu (%s)", d, k, tok);
}

sc_status sc_replay_cells_deadlock(replay *r)
{
    sc_prog *pg = r->pg;
    int P = pg->P;
    int *waits = sc_malloc(2 * (size_t)P * sizeof(int));
    if (!waits)
        return sc_fail(pg, SC_ERR_NOMEM, "deadlock (out of memory describing it)");
    int *seen = waits + P, start = -1;
    /* Each stuck rank's first incomplete cell runs (one at a time) and waits
     * for its half on the peer, which the peer posts after its own first. */
    for (int d = 0; d < P; d++) {
        const dev *D = &r->devs[d];
        waits[d] = -1;
        seen[d] = 0;
        if (D->head < D->posted) {
            size_t k = r->groups[D->gbase + D->head].first;
            if (!r->matched[k])
                waits[d] = instr_at(r, d, k - r->offset[d])->peer;
        }
        if (waits[d] >= 0 && start < 0)
            start = d;
    }
    int c = start;
    while (c >= 0 && !seen[c]) {
        seen[c] = 1;
        c = waits[c];
    }
    if (c < 0) { /* no such cycle: a collective, or a pass that waits */
        sc_free(waits);
        return sc_replay_deadlock(r);
    }
    static const char tail[] =
        "; PyTorch posts each cell alone, and on one NCCL communicator a rank's cells run one at "
        "a time, each until its peer's half runs (a send finishes alone only if NCCL's buffers "
        "hold the message: import --eager-bytes): per-link communicators (--comm per-link) run "
        "the file (docs/modes.md#crossing-cells)";
    char msg[sizeof pg->err - sizeof tail];
    size_t len = (size_t)snprintf(msg, sizeof msg, "deadlock: cells cross: ");
    int d = c;
    do {
        const dev *D = &r->devs[d];
        size_t k = r->groups[D->gbase + D->head].first, o = r->match[k];
        int e = waits[d];
        const dev *E = &r->devs[e];
        char a[96] = ", which", b[96], h[96];
        if (d == c)
            cell_name(r, d, k, a, sizeof a);
        cell_name(r, e, o, b, sizeof b);
        cell_name(r, e, r->groups[E->gbase + E->head].first, h, sizeof h);
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s waits for %s, behind %s", a,
                                    b, e == c ? "the first" : h);
        d = e;
    } while (d != c);
    sc_free(waits);
    return sc_fail(pg, SC_ERR_DEADLOCK, "%s%s", msg, tail);
}
