/*
 * replay_coll.c — the collective channels of the replay (replay_coll.h):
 * matching collectives across members, checking their data flow, and
 * running them in posting order.
 */
#include "replay_coll.h"
#include "ir/alloc.h"
#include "replay_coll_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)


static sc_status nomem(sc_prog *pg)
{
    return sc_fail(pg, SC_ERR_NOMEM, "out of memory in the replay of collectives");
}

static void describe(const sc_prog *pg, const size_t *offset, size_t gi, char *buf, size_t len)
{
    int d = 0;
    while (d + 1 < pg->P && offset[d + 1] <= gi)
        d++;
    char t[128];
    sc_prog_instr_format(pg, &pg->stream[d].v[gi - offset[d]], t, sizeof t);
    snprintf(buf, len, "d%d #%zu (%s)", d, gi - offset[d], t);
}

static int same_coll(const sc_prog *pg, const sc_instr *a, const sc_instr *b)
{
    const sc_ctail *x = &pg->coll[a->coll], *y = &pg->coll[b->coll];
    return a->op == b->op && a->dir == b->dir && a->flags == b->flags && a->stage == b->stage &&
           a->mb == b->mb && x->root == y->root && x->group == y->group && x->step == y->step &&
           x->bytes == y->bytes;
}

static int is_member(const sc_prog *pg, int g, int d)
{
    if (g == 0)
        return d >= 0 && d < pg->P; /* every device */
    const int *m = pg->grp[g];
    int lo = 0, hi = pg->ngrp[g];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (m[mid] < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < pg->ngrp[g] && m[lo] == d;
}

static const char *ordinal(size_t k, char *buf, size_t len)
{
    size_t n = k + 1;
    const char *suf = n % 100 >= 11 && n % 100 <= 13 ? "th"
                      : n % 10 == 1                  ? "st"
                      : n % 10 == 2                  ? "nd"
                      : n % 10 == 3                  ? "rd"
                                                     : "th";
    snprintf(buf, len, "%zu%s", n, suf);
    return buf;
}

static void group_name(const sc_prog *pg, int g, char *buf, size_t len)
{
    if (g == 0) {
        snprintf(buf, len, "the group of every device");
        return;
    }
    size_t n = (size_t)snprintf(buf, len, "group %d (d", g);
    for (int i = 0; i < pg->ngrp[g] && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, i ? ", d%d" : "%d", pg->grp[g][i]);
    if (n < len)
        snprintf(buf + n, len - n, ")");
}

/* Pass 1: every collective valid on its device; instances by (group, k);
 * descriptions compared. */
static sc_status match(rcoll *c)
{
    sc_prog *pg = c->pg;
    int P = pg->P, G = pg->ngroups;
    size_t ncoll = c->choff[P];
    sc_status st = SC_OK;
    int *cnt = sc_calloc((size_t)G, sizeof(int));
    size_t **first = sc_calloc((size_t)G, sizeof(size_t *)); /* [g][k] first gi of instance */
    int **id = sc_calloc((size_t)G, sizeof(int *));           /* [g][k] instance number */
    int *ng = sc_calloc((size_t)G, sizeof(int)), *capg = sc_calloc((size_t)G, sizeof(int));
    c->members = sc_malloc((ncoll + 1) * sizeof(int));
    if (!cnt || !first || !id || !ng || !capg || !c->members) {
        st = nomem(pg);
        goto done;
    }
    char a[192], b[192], o[16], gn[96];
    /* A verified program's collectives are proved: only the instances are
     * built again (a timed replay after the proof). */
    int proved = pg->verified;
    for (int d = 0; d < P && !st; d++) {
        memset(cnt, 0, (size_t)G * sizeof(int));
        for (size_t i = c->choff[d]; i < c->choff[d + 1] && !st; i++) {
            size_t gi = c->chan[i];
            const sc_instr *in = &pg->stream[d].v[gi - c->offset[d]];
            const sc_ctail *t = &pg->coll[in->coll];
            int g = t->group;
            if (!proved &&
                (!is_member(pg, g, d) ||
                 (sc_op_has(in->op, SC_OPF_ROOTED) && !is_member(pg, g, t->root)))) {
                describe(pg, c->offset, gi, a, sizeof a);
                group_name(pg, g, gn, sizeof gn);
                st = sc_fail(pg, SC_ERR_PROGRAM, "%s: %s is not a member of %s", a,
                             is_member(pg, g, d) ? "its root" : "the device", gn);
                break;
            }
            int k = cnt[g]++;
            if (k == ng[g]) {
                if (ng[g] == capg[g]) {
                    int cap = capg[g] ? 2 * capg[g] : 16;
                    size_t *f = sc_realloc(first[g], (size_t)cap * sizeof(size_t));
                    if (f)
                        first[g] = f;
                    int *x = f ? sc_realloc(id[g], (size_t)cap * sizeof(int)) : NULL;
                    if (!f || !x) {
                        st = nomem(pg);
                        break;
                    }
                    id[g] = x;
                    capg[g] = cap;
                }
                first[g][k] = gi;
                id[g][k] = c->ninst;
                c->members[c->ninst++] = 0;
                ng[g]++;
            } else if (!proved) {
                size_t f = first[g][k];
                int e = 0;
                while (e + 1 < P && c->offset[e + 1] <= f)
                    e++;
                if (!same_coll(pg, &pg->stream[e].v[f - c->offset[e]], in)) {
                    describe(pg, c->offset, f, a, sizeof a);
                    describe(pg, c->offset, gi, b, sizeof b);
                    group_name(pg, g, gn, sizeof gn);
                    const sc_ctail *x = &pg->coll[pg->stream[e].v[f - c->offset[e]].coll];
                    char sz[96] = "";
                    if (x->bytes != t->bytes && strcmp(a + strcspn(a, "("), b + strcspn(b, "(")) == 0)
                        snprintf(sz, sizeof sz, " (sizes %.17g and %.17g bytes)", x->bytes,
                                 t->bytes);
                    st = sc_fail(pg, SC_ERR_PROGRAM,
                                 "collectives out of order: %s and %s are both the %s collective "
                                 "of %s%s; its members must post the collectives they share in "
                                 "the same order, with the same description",
                                 a, b, ordinal((size_t)k, o, sizeof o), gn, sz);
                    break;
                }
            }
            c->inst[gi] = id[g][k];
            c->members[id[g][k]]++;
        }
    }
    /* Every instance posted by all members of its group. */
    for (int g = 0; g < G && !st; g++) {
        for (int k = 0; k < ng[g] && !st; k++) {
            int I = id[g][k];
            if (c->members[I] == pg->ngrp[g])
                continue;
            describe(pg, c->offset, first[g][k], a, sizeof a);
            group_name(pg, g, gn, sizeof gn);
            /* Which members lack it: those with at most k collectives of g. */
            size_t n = 0;
            b[0] = 0;
            int shown = 0;
            for (int i = 0; i < pg->ngrp[g] && n < sizeof b; i++) {
                int e = pg->grp[g][i], have = 0;
                for (size_t j = c->choff[e]; j < c->choff[e + 1]; j++) {
                    const sc_instr *x = &pg->stream[e].v[c->chan[j] - c->offset[e]];
                    have += pg->coll[x->coll].group == g;
                }
                if (have > k)
                    continue;
                if (shown++ < 6)
                    n += (size_t)snprintf(b + n, sizeof b - n, "%sd%d", shown > 1 ? ", " : "", e);
                else if (shown == 7)
                    n += (size_t)snprintf(b + n, sizeof b - n, ", ...");
            }
            st = sc_fail(pg, SC_ERR_PROGRAM,
                         "collective posted by some members only: %s is the %s collective of "
                         "%s, and %s post%s no such collective",
                         a, ordinal((size_t)k, o, sizeof o), gn, b, shown == 1 ? "s" : "");
        }
    }
done:
    for (int g = 0; g < G && first; g++)
        sc_free(first[g]);
    for (int g = 0; g < G && id; g++)
        sc_free(id[g]);
    sc_free(first);
    sc_free(id);
    sc_free(cnt);
    sc_free(ng);
    sc_free(capg);
    return st;
}

/* The pass (op, stage, mb) that produces what a collective carries, when
 * its tag names a compute pass (B stands for every pass that writes the
 * input gradient: B, BW). */
static uint64_t pass_key(int op, int stage, int mb)
{
    if (sc_op_is_bgrad(op))
        op = SC_OP_B;
    return ((uint64_t)(uint8_t)op << 56) | ((uint64_t)((uint32_t)(stage + 1) & 0xffffffu) << 32) |
           (uint64_t)(uint32_t)(mb + 1);
}

/* Data flow: the tagged pass, where this device runs it, comes before the
 * collective; a broadcast's root must run it. A small open-addressing map
 * per device from the tags its collectives carry to the passes' places. */
static sc_status produced(rcoll *c)
{
    sc_prog *pg = c->pg;
    sc_status st = SC_OK;
    /* A filter before the map: the stages (and vocabulary kinds) the
     * device's collectives carry; most passes are looked up in neither. */
    unsigned char *stage_on = sc_calloc((size_t)pg->S + 1, 1);
    if (!stage_on)
        return nomem(pg);
    for (int d = 0; d < pg->P && !st; d++) {
        size_t n = c->choff[d + 1] - c->choff[d];
        if (n == 0)
            continue;
        size_t cap = 16;
        while (cap < 2 * n)
            cap *= 2;
        uint64_t *key = sc_calloc(cap, sizeof *key);
        size_t *pos = sc_malloc(cap * sizeof *pos);
        if (!key || !pos) {
            sc_free(key);
            sc_free(pos);
            sc_free(stage_on);
            return nomem(pg);
        }
        unsigned vocab_on = 0; /* bit sc_op_vocab_index(op) */
#define HOME(k) ((size_t)(((k) * 0x9e3779b97f4a7c15ULL) >> 19) & (cap - 1))
        for (size_t i = c->choff[d]; i < c->choff[d + 1]; i++) {
            const sc_instr *in = &pg->stream[d].v[c->chan[i] - c->offset[d]];
            int w = sc_coll_what(in);
            if (!sc_op_is_pass(w))
                continue;
            uint64_t k = pass_key(w, sc_op_is_vocab(w) ? d : in->stage, in->mb);
            if (sc_op_is_vocab(w))
                vocab_on |= 1u << sc_op_vocab_index(w);
            else if (in->stage >= 0 && in->stage < pg->S)
                stage_on[in->stage] = 1;
            size_t h = HOME(k);
            while (key[h] && key[h] != k)
                h = (h + 1) & (cap - 1);
            key[h] = k;
            pos[h] = NONE;
        }
        const sc_vec *sv = &pg->stream[d];
        for (size_t k = 0; k < sv->n; k++) {
            const sc_instr *in = &sv->v[k];
            if (!sc_op_is_pass(in->op) ||
                (sc_op_is_vocab(in->op) ? !(vocab_on >> sc_op_vocab_index(in->op) & 1)
                                        : !stage_on[in->stage]))
                continue;
            uint64_t q = pass_key(in->op, in->stage, in->mb);
            for (size_t h = HOME(q); key[h]; h = (h + 1) & (cap - 1))
                if (key[h] == q) {
                    if (pos[h] == NONE)
                        pos[h] = k;
                    break;
                }
        }
        for (size_t i = c->choff[d]; i < c->choff[d + 1] && !st; i++) {
            size_t gi = c->chan[i], k = gi - c->offset[d];
            const sc_instr *in = &sv->v[k];
            int w = sc_coll_what(in);
            if (!sc_op_is_pass(w))
                continue;
            int vs = sc_op_is_vocab(w);
            uint64_t q = pass_key(w, vs ? d : in->stage, in->mb);
            size_t at = NONE;
            for (size_t h = HOME(q); key[h]; h = (h + 1) & (cap - 1))
                if (key[h] == q) {
                    at = pos[h];
                    break;
                }
            /* A broadcast's root runs the pass; every member runs the
             * vocabulary pass of its own shard. */
            int need = (sc_op_has(in->op, SC_OPF_ROOTED) && pg->coll[in->coll].root == d) || vs;
            if ((at == NONE && need) || (at != NONE && at > k)) {
                char a[192], p[48];
                describe(pg, c->offset, gi, a, sizeof a);
                if (vs)
                    snprintf(p, sizeof p, "%s mb%d", sc_op_name(w), in->mb);
                else
                    snprintf(p, sizeof p, "%s s%d mb%d", sc_op_name(w), in->stage, in->mb);
                st = sc_fail(pg, SC_ERR_PROGRAM,
                             "%s carries data before it is produced: %s is not earlier on d%d",
                             a, p, d);
            }
        }
#undef HOME
        sc_free(key);
        sc_free(pos);
        for (size_t i = c->choff[d]; i < c->choff[d + 1]; i++) { /* the filter, cleared */
            const sc_instr *in = &pg->stream[d].v[c->chan[i] - c->offset[d]];
            if (in->stage >= 0 && in->stage < pg->S)
                stage_on[in->stage] = 0;
        }
    }
    sc_free(stage_on);
    return st;
}

/* The matching: each device's channel, the instances and their members,
 * checked (match, produced) unless the program is verified; what each
 * instruction waits for. */
static sc_status shape(rcoll *c)
{
    sc_prog *pg = c->pg;
    const size_t *offset = c->offset;
    int P = pg->P;
    size_t j = 0, ncoll;
    for (int d = 0; d < P; d++) {
        c->choff[d] = j;
        const sc_instr *v = pg->stream[d].v;
        for (size_t k = 0, n = pg->stream[d].n; k < n; k++) {
            if (!sc_op_is_coll(v[k].op))
                continue;
            size_t gi = offset[d] + k;
            if (v[k].coll < 0 || (size_t)v[k].coll >= pg->ncoll || pg->ngroups < 1 ||
                j >= pg->ncoll) {
                char a[128];
                sc_instr_format(&v[k], a, sizeof a);
                return sc_fail(pg, SC_ERR_PROGRAM, "d%d #%zu (%s) has no description", d, k, a);
            }
            c->inst[gi] = -1;
            c->post[gi] = -1;
            c->begun[gi] = 0;
            c->chan[j++] = gi;
        }
    }
    c->choff[P] = ncoll = j;
    sc_status st;
    if (ncoll > 0 && ((st = match(c)) != SC_OK || (!pg->verified && (st = produced(c)) != SC_OK)))
        return st;
    /* Readers: what each instruction waits for, as global indices. */
    for (int d = 0; d < P; d++)
        if ((st = sc_coll_readers(pg, d, offset[d], c->need + offset[d], pg->err,
                                  sizeof pg->err)) != SC_OK)
            return st;
    /* Instances: their member instructions, contiguous. */
    c->ioff = sc_malloc(((size_t)c->ninst + 2) * sizeof(size_t));
    if (!c->ioff)
        return nomem(pg);
    size_t acc = 0;
    for (int I = 0; I < c->ninst; I++) {
        c->ioff[I] = acc;
        acc += (size_t)c->members[I];
        c->members[I] = 0; /* refilled below */
    }
    c->ioff[c->ninst] = acc;
    for (int d = 0; d < P; d++)
        for (size_t i = c->choff[d]; i < c->choff[d + 1]; i++) {
            int I = c->inst[c->chan[i]];
            c->mdev[c->ioff[I] + (size_t)c->members[I]] = d;
            c->memb[c->ioff[I] + (size_t)c->members[I]++] = c->chan[i];
        }
    return SC_OK;
}

sc_status sc_rcoll_prepare(sc_prog *pg, const size_t *offset, rcoll **out)
{
    *out = NULL;
    int P = pg->P;
    size_t N = offset[P];
    if (pg->ncoll == 0 && !sc_prog_reads_colls(pg))
        return SC_OK; /* no collective can be in the streams */
    rcoll *c = sc_calloc(1, sizeof *c);
    if (!c)
        return nomem(pg);
    *out = c;
    c->pg = pg;
    c->offset = offset;
    c->N = N;
    uint64_t key = 0;
    if (!sc_rcoll_reuse(c, &key)) {
        c->need = sc_malloc((N + 1) * sizeof(size_t));
        c->inst = sc_malloc((N + 1) * sizeof(int32_t));
        c->chan = sc_malloc((pg->ncoll + 1) * sizeof(size_t));
        c->choff = sc_calloc((size_t)P + 1, sizeof(size_t));
        c->memb = sc_malloc((pg->ncoll + 1) * sizeof(size_t));
        c->mdev = sc_malloc((pg->ncoll + 1) * sizeof(int));
    }
    /* post and begun are read for collective instructions only: set for
     * those, left uninitialised for the rest. */
    c->post = sc_malloc((N + 1) * sizeof(double));
    c->begun = sc_malloc(N + 1);
    c->head = sc_calloc((size_t)P, sizeof(size_t));
    c->last = sc_calloc((size_t)P, sizeof(double));
    c->waiting = sc_malloc((size_t)P * sizeof(size_t));
    c->wake = sc_malloc((size_t)P * sizeof(int));
    c->queued = sc_calloc((size_t)P, 1);
    c->todo = sc_malloc((size_t)P * sizeof(int));
    c->intodo = sc_calloc((size_t)P, 1);
    if (!c->need || !c->inst || !c->post || !c->begun || !c->chan || !c->choff || !c->head ||
        !c->last || !c->memb || !c->mdev || !c->waiting || !c->wake || !c->queued || !c->todo ||
        !c->intodo)
        return nomem(pg);
    for (int d = 0; d < P; d++)
        c->waiting[d] = NONE;
    sc_status st;
    if (c->borrowed) {
        for (size_t j = 0; j < c->choff[P]; j++) {
            c->post[c->chan[j]] = -1;
            c->begun[c->chan[j]] = 0;
        }
    } else if ((st = shape(c)) != SC_OK)
        return st;
    c->started = sc_calloc((size_t)c->ninst + 1, sizeof(int));
    c->tstart = sc_calloc((size_t)c->ninst + 1, sizeof(double));
    c->done = sc_malloc(((size_t)c->ninst + 1) * sizeof(double));
    if (!c->started || !c->tstart || !c->done)
        return nomem(pg);
    for (int I = 0; I < c->ninst; I++)
        c->done[I] = -1;
    if (!c->borrowed && pg->verified)
        sc_rcoll_keep(c, key);
    return SC_OK;
}

void sc_rcoll_free(rcoll *c)
{
    if (!c)
        return;
    if (!c->borrowed) {
        sc_free(c->need);
        sc_free(c->inst);
        sc_free(c->chan);
        sc_free(c->choff);
        sc_free(c->members);
        sc_free(c->ioff);
        sc_free(c->memb);
        sc_free(c->mdev);
    }
    sc_free(c->post);
    sc_free(c->begun);
    sc_free(c->head);
    sc_free(c->last);
    sc_free(c->started);
    sc_free(c->tstart);
    sc_free(c->done);
    sc_free(c->waiting);
    sc_free(c->wake);
    sc_free(c->queued);
    sc_free(c->todo);
    sc_free(c->intodo);
    sc_free(c);
}

const size_t *sc_rcoll_needs(const rcoll *c)
{
    return c ? c->need : NULL;
}

void sc_rcoll_block(rcoll *c, int d, size_t gi)
{
    c->waiting[d] = gi;
}

double sc_rcoll_done(const rcoll *c, size_t gi)
{
    return c->done[c->inst[gi]];
}

static void wake(rcoll *c, int d)
{
    if (!c->queued[d]) {
        c->queued[d] = 1;
        c->wake[c->nwake++] = d;
    }
}

static void todo(rcoll *c, int d)
{
    if (!c->intodo[d]) {
        c->intodo[d] = 1;
        c->todo[c->ntodo++] = d;
    }
}

static double maxd(double a, double b) { return a > b ? a : b; }

/* Starts the head of device d's channel when it is posted; completes an
 * instance when its last member starts it. */
static void start_head(rcoll *c, int d, double *t1)
{
    size_t h = c->choff[d] + c->head[d];
    if (h >= c->choff[d + 1])
        return;
    size_t gi = c->chan[h];
    if (c->post[gi] < 0 || c->begun[gi])
        return;
    c->begun[gi] = 1;
    int I = c->inst[gi];
    c->tstart[I] = maxd(c->tstart[I], maxd(c->post[gi], c->last[d]));
    if (++c->started[I] < c->members[I])
        return;
    size_t first = c->memb[c->ioff[I]];
    int e0 = 0;
    while (e0 + 1 < c->pg->P && c->offset[e0 + 1] <= first)
        e0++;
    double t = c->tstart[I] + sc_prog_coll_time(c->pg, &c->pg->stream[e0].v[first - c->offset[e0]]);
    c->done[I] = t;
    for (size_t i = c->ioff[I]; i < c->ioff[I + 1]; i++) {
        size_t m = c->memb[i];
        int e = c->mdev[i]; /* its instruction is the head of e's channel */
        if (t1)
            t1[m] = t;
        c->head[e]++;
        c->last[e] = t;
        /* A device blocked on a collective goes on once that one is done. */
        if (c->waiting[e] != NONE && c->done[c->inst[c->waiting[e]]] >= 0) {
            c->waiting[e] = NONE;
            wake(c, e);
        }
        todo(c, e);
    }
}

sc_status sc_rcoll_post(rcoll *c, int d, size_t gi, double t, double *t0, double *t1)
{
    c->post[gi] = t;
    if (t0)
        t0[gi] = t;
    todo(c, d);
    while (c->ntodo > 0) {
        int e = c->todo[--c->ntodo];
        c->intodo[e] = 0;
        start_head(c, e, t1);
    }
    return SC_OK;
}

int sc_rcoll_woken(rcoll *c, int *d)
{
    if (!c || c->nwake == 0)
        return 0;
    *d = c->wake[--c->nwake];
    c->queued[*d] = 0;
    return 1;
}

int sc_rcoll_channel_done(const rcoll *c, int d)
{
    return !c || c->choff[d] + c->head[d] >= c->choff[d + 1];
}

int sc_rcoll_waits(const rcoll *c, int d, size_t gi, char *buf, size_t len)
{
    if (!c)
        return -1;
    size_t h = c->choff[d] + c->head[d];
    if (h >= c->choff[d + 1])
        return -1;
    (void)gi; /* the head is the first one not complete: it is what blocks gi */
    size_t hg = c->chan[h];
    int I = c->inst[hg];
    char a[192], b[192];
    sc_instr hi = c->pg->stream[d].v[hg - c->offset[d]];
    sc_prog_instr_format(c->pg, &hi, a, sizeof a);
    for (size_t i = c->ioff[I]; i < c->ioff[I + 1]; i++) {
        size_t m = c->memb[i];
        if (c->begun[m])
            continue;
        int e = 0;
        while (e + 1 < c->pg->P && c->offset[e + 1] <= m)
            e++;
        if (c->post[m] < 0) {
            snprintf(buf, len, "its collective %s (#%zu) waits for d%d, which has not posted it",
                     a, hg - c->offset[d], e);
        } else {
            size_t eh = c->chan[c->choff[e] + c->head[e]];
            describe(c->pg, c->offset, eh, b, sizeof b);
            snprintf(buf, len,
                     "its collective %s (#%zu) waits for d%d, whose collectives run %s first",
                     a, hg - c->offset[d], e, b);
        }
        return e;
    }
    return -1;
}
