/*
 * verify.c — completeness of the passes and safety of the streams
 * (verify.h).
 */
#include "verify.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a pass sits: device and index in its order, or dev = -1. */
typedef struct loc {
    int dev;
    int32_t idx;
} loc;

enum { K_F, K_B, K_W, K_BW, K_N }; /* sc_op_stage_index */

static sc_status dup_pass(sc_prog *pg, int op, int s, int mb, loc a, loc b)
{
    char r[24]; /* with slices "1.2" (slices.h) */
    sc_prog_mb_format(pg, mb, r, sizeof r);
    return sc_fail(pg, SC_ERR_PROGRAM, "pass twice: %s s%d mb%s is at d%d #%d and at d%d #%d",
                   sc_op_name(op), s, r, a.dev, a.idx, b.dev, b.idx);
}

/* Dependency a of b is on b's device at or after it: the message. */
static sc_status not_before(sc_prog *pg, loc a, int aop, int as, loc b, int bop, int bs, int mb)
{
    char r[24]; /* with slices "1.2" (slices.h) */
    sc_prog_mb_format(pg, mb, r, sizeof r);
    if (a.idx == b.idx) /* the two halves of one pair: they run together */
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "dependency inside a pair on d%d: %s s%d mb%s needs %s s%d mb%s, which "
                       "runs beside it in the same pair (#%d)",
                       b.dev, sc_op_name(bop), bs, r, sc_op_name(aop), as, r, a.idx);
    return sc_fail(pg, SC_ERR_PROGRAM,
                   "dependency out of order on d%d: %s s%d mb%s (#%d) needs %s s%d mb%s, which "
                   "comes later (#%d)",
                   b.dev, sc_op_name(bop), bs, r, b.idx, sc_op_name(aop), as, r, a.idx);
}

/* Is dependency a (must come first) before b on b's device? The test is
 * inline (five per stage and microbatch); the message is not. */
static inline sc_status need_before(sc_prog *pg, loc a, int aop, int as, loc b, int bop, int bs,
                                    int mb)
{
    if (a.dev != b.dev || a.idx < b.idx)
        return SC_OK;
    return not_before(pg, a, aop, as, b, bop, bs, mb);
}

/* The vocabulary passes (docs/vocab.md): with a split vocabulary, every
 * device runs one S, T, E and EW of every microbatch, S before T; on one
 * device the passes a collective ties together are in order: E before
 * F s0, F of the last stage before S, S (vocab-1) or T (vocab-2) before the
 * last stage's backward, B (or BW) s0 before EW. at: the stage passes'
 * places (sc_verify_passes). */
static sc_status verify_vocab(sc_prog *pg, const loc *at)
{
    size_t SM = (size_t)pg->S * (size_t)pg->m, Pm = (size_t)pg->P * (size_t)pg->m;
    int split = sc_vocab_split(pg->vocab);
    loc *v = split ? sc_malloc(4 * Pm * sizeof(loc)) : NULL;
    if (split && !v)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory verifying the vocabulary passes");
    for (size_t i = 0; split && i < 4 * Pm; i++)
        v[i].dev = -1;
    sc_status st = SC_OK;
    for (int d = 0; d < pg->P && !st; d++) {
        const sc_vec *ov = &pg->order[d];
        for (size_t k = 0; k < ov->n && !st; k++) {
            const sc_instr *in = &ov->v[k];
            if (!sc_op_is_vocab(in->op))
                continue;
            if (!split) {
                st = sc_fail(pg, SC_ERR_PROGRAM,
                             "d%d #%zu (%s mb%d) is a vocabulary pass, but the program's "
                             "vocabulary is not split (vocab_par = %s; vocab-1 or vocab-2 split "
                             "it)", d, k, sc_op_name(in->op), in->mb, sc_vocab_name(pg->vocab));
                break;
            }
            loc *l = &v[(size_t)sc_op_vocab_index(in->op) * Pm + (size_t)d * pg->m + (size_t)in->mb];
            if (l->dev >= 0)
                st = sc_fail(pg, SC_ERR_PROGRAM, "pass twice: %s mb%d is at d%d #%d and at d%d #%zu",
                             sc_op_name(in->op), in->mb, d, l->idx, d, k);
            *l = (loc){d, (int32_t)k};
        }
    }
    for (int d = 0; d < pg->P && split && !st; d++) {
        for (int mb = 0; mb < pg->m && !st; mb++) {
            loc p[4];
            for (int i = 0; i < 4; i++)
                p[i] = v[(size_t)i * Pm + (size_t)d * pg->m + (size_t)mb];
            for (int i = 0; i < 4 && !st; i++)
                if (p[i].dev < 0)
                    st = sc_fail(pg, SC_ERR_PROGRAM,
                                 "pass missing: %s of microbatch %d is not on d%d (with %s every "
                                 "device runs S, T, E and EW of every microbatch)",
                                 sc_op_name(sc_vocab_op(i)), mb, d, sc_vocab_name(pg->vocab));
            if (st)
                break;
            int last = pg->S - 1, dl = pg->stage_dev[last], d0 = pg->stage_dev[0];
            size_t il = SC_SM(pg, last, mb), i0 = SC_SM(pg, 0, mb);
            loc bl = at[K_BW * SM + il].dev >= 0 ? at[K_BW * SM + il] : at[K_B * SM + il];
            int blop = at[K_BW * SM + il].dev >= 0 ? SC_OP_BW : SC_OP_B;
            loc b0 = at[K_BW * SM + i0].dev >= 0 ? at[K_BW * SM + i0] : at[K_B * SM + i0];
            int b0op = at[K_BW * SM + i0].dev >= 0 ? SC_OP_BW : SC_OP_B;
            /* (first, its op and stage, then, its op and stage) on this device */
            struct { loc a; int aop, as; loc b; int bop, bs; } o[5] = {
                {p[0], SC_OP_S, -1, p[1], SC_OP_T, -1},
                {p[2], SC_OP_E, -1, d == d0 ? at[K_F * SM + i0] : (loc){-1, 0}, SC_OP_F, 0},
                {d == dl ? at[K_F * SM + il] : (loc){-1, 0}, SC_OP_F, last, p[0], SC_OP_S, -1},
                {p[pg->vocab == SC_VOCAB_V1 ? 0 : 1], pg->vocab == SC_VOCAB_V1 ? SC_OP_S : SC_OP_T,
                 -1, d == dl ? bl : (loc){-1, 0}, blop, last},
                {d == d0 ? b0 : (loc){-1, 0}, b0op, 0, p[3], SC_OP_EW, -1},
            };
            for (int i = 0; i < 5 && !st; i++) {
                if (o[i].a.dev < 0 || o[i].b.dev < 0 || o[i].a.idx < o[i].b.idx)
                    continue;
                char an[32], bn[32];
                snprintf(an, sizeof an, o[i].as >= 0 ? "%s s%d" : "%s", sc_op_name(o[i].aop), o[i].as);
                snprintf(bn, sizeof bn, o[i].bs >= 0 ? "%s s%d" : "%s", sc_op_name(o[i].bop), o[i].bs);
                st = sc_fail(pg, SC_ERR_PROGRAM,
                             "dependency out of order on d%d: %s mb%d (#%d) needs %s mb%d, which "
                             "comes later (#%d)",
                             d, bn, mb, o[i].b.idx, an, mb, o[i].a.idx);
            }
        }
    }
    sc_free(v);
    return st;
}

/* A forward-only program (fwdonly.h) has no backward pass. */
static sc_status forward_only(sc_prog *pg, int s, int mb, loc b, loc w, loc bw)
{
    loc x = b.dev >= 0 ? b : w.dev >= 0 ? w : bw;
    if (x.dev < 0)
        return SC_OK;
    return sc_fail(pg, SC_ERR_PROGRAM,
                   "backward in a forward-only program: %s s%d mb%d is at d%d #%d "
                   "(docs/guide.md#forward-only)",
                   b.dev >= 0 ? "B" : w.dev >= 0 ? "W" : "BW", s, mb, x.dev, x.idx);
}

/* The passes of one stage (and so of one device) a slice needs of its
 * neighbours (slices.h): F of slice j after F of slice j-1 (it reads their
 * keys and values); B or BW of slice j after that of slice j+1 (whose
 * backward adds to the gradient of slice j's keys and values). at: the
 * stage passes' places (sc_verify_passes). */
static sc_status verify_slices(sc_prog *pg, const loc *at)
{
    size_t SM = (size_t)pg->S * (size_t)pg->m;
    for (int s = 0; s < pg->S; s++) {
        for (int r = 0; r < pg->m; r++) {
            if (r % pg->slices == 0)
                continue;
            size_t i = SC_SM(pg, s, r), e = i - 1; /* slice j and j-1 */
            int ebw = at[K_BW * SM + e].dev >= 0, ibw = at[K_BW * SM + i].dev >= 0;
            struct { loc a, b; int aop, bop, ar, br; const char *why; } o[2] = {
                {at[K_F * SM + e], at[K_F * SM + i], SC_OP_F, SC_OP_F, r - 1, r,
                 "its attention reads their keys and values"},
                {at[(ibw ? K_BW : K_B) * SM + i], at[(ebw ? K_BW : K_B) * SM + e],
                 ibw ? SC_OP_BW : SC_OP_B, ebw ? SC_OP_BW : SC_OP_B, r, r - 1,
                 "it adds to the gradient of their keys and values"},
            };
            for (int k = 0; k < (pg->fwd_only ? 1 : 2); k++) {
                if (o[k].a.dev < 0 || o[k].b.dev < 0 || o[k].a.idx < o[k].b.idx)
                    continue;
                char an[24], bn[24];
                sc_prog_mb_format(pg, o[k].ar, an, sizeof an);
                sc_prog_mb_format(pg, o[k].br, bn, sizeof bn);
                return sc_fail(pg, SC_ERR_PROGRAM,
                               "slice out of order on d%d: %s s%d mb%s (#%d) needs %s s%d mb%s "
                               "first (%s), which comes later (#%d) (docs/slices.md)",
                               o[k].b.dev, sc_op_name(o[k].bop), s, bn, o[k].b.idx,
                               sc_op_name(o[k].aop), s, an, o[k].why, o[k].a.idx);
            }
        }
    }
    return SC_OK;
}

/* Where each pass is (at[kind * SM + SC_SM(s, mb)]): each on its stage's
 * device, on its microbatch's route, and once. */
static sc_status locate_passes(sc_prog *pg, loc *at, size_t SM)
{
    for (int d = 0; d < pg->P; d++) {
        const sc_vec *ov = &pg->order[d];
        for (size_t k = 0; k < ov->n; k++) {
            sc_instr h[2];
            const sc_instr *hv = &ov->v[k]; /* a pass, or a pair's halves: both at #k */
            int nh = 1;
            if (hv->op == SC_OP_FB)
                nh = sc_instr_halves(hv, h), hv = h;
            for (int hi = 0; hi < nh; hi++) {
                const sc_instr *in = &hv[hi];
                int s = in->stage, mb = in->mb;
                int kind = sc_op_stage_index(in->op);
                if (kind < 0)
                    continue; /* a vocabulary pass: verify_vocab */
                if (pg->stage_dev[s] != d)
                    return sc_fail(pg, SC_ERR_PROGRAM,
                                   "pass on the wrong device: %s s%d mb%d is at d%d #%zu, but "
                                   "stage %d is placed on d%d",
                                   sc_op_name(in->op), s, mb, d, k, s, pg->stage_dev[s]);
                if (!sc_mb_has(pg, s, mb))
                    return sc_fail(pg, SC_ERR_PROGRAM,
                                   "pass off its route: %s s%d mb%d is at d%d #%zu, but microbatch "
                                   "%d runs through stages %d..%d only (copy %d of %d, "
                                   "docs/guide.md#copies)",
                                   sc_op_name(in->op), s, mb, d, k, mb, sc_mb_first(pg, mb),
                                   sc_mb_last(pg, mb), sc_mb_first(pg, mb) / (pg->S / pg->copies),
                                   pg->copies);
                loc *l = &at[(size_t)kind * SM + SC_SM(pg, s, mb)];
                loc here = {d, (int32_t)k};
                if (l->dev >= 0)
                    return dup_pass(pg, in->op, s, mb, *l, here);
                *l = here;
            }
        }
    }
    return SC_OK;
}

/* Stage s's passes of microbatch mb (on its route): none missing, none
 * twice, and the dependencies inside one device in order. */
static sc_status check_passes(sc_prog *pg, const loc *at, size_t SM, int s, int mb)
{
    sc_status st;
    size_t i = SC_SM(pg, s, mb);
    int first = sc_mb_first(pg, mb), last = sc_mb_last(pg, mb);
    loc f = at[K_F * SM + i], b = at[K_B * SM + i], w = at[K_W * SM + i], bw = at[K_BW * SM + i];
    const char *missing = NULL;
    if (pg->fwd_only && (st = forward_only(pg, s, mb, b, w, bw)) != SC_OK)
        return st;
    if (f.dev < 0)
        missing = "F";
    else if (pg->fwd_only)
        ;
    else if (bw.dev >= 0 && (b.dev >= 0 || w.dev >= 0)) {
        loc o = b.dev >= 0 ? b : w;
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "pass twice: s%d mb%d has both BW (d%d #%d) and %s (d%d #%d)", s, mb,
                       bw.dev, bw.idx, b.dev >= 0 ? "B" : "W", o.dev, o.idx);
    } else if (bw.dev < 0 && b.dev < 0)
        missing = w.dev >= 0 ? "B" : "B or BW";
    else if (bw.dev < 0 && w.dev < 0)
        missing = "W";
    if (missing) {
        char r[24]; /* with slices "1.2": microbatch 1, slice 2 (slices.h) */
        sc_prog_mb_format(pg, mb, r, sizeof r);
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "pass missing: %s of stage %d, microbatch %s is on no device "
                       "(stage %d is placed on d%d)",
                       missing, s, r, s, pg->stage_dev[s]);
    }
    /* Dependencies inside one device must be in order. */
    if (s > first && (st = need_before(pg, at[K_F * SM + i - (size_t)pg->m], SC_OP_F, s - 1, f,
                                       SC_OP_F, s, mb)))
        return st;
    if (pg->fwd_only)
        return SC_OK;
    loc back = bw.dev >= 0 ? bw : b;
    int bop = bw.dev >= 0 ? SC_OP_BW : SC_OP_B;
    if (s == last && (st = need_before(pg, f, SC_OP_F, s, back, bop, s, mb)))
        return st;
    if (s < last) {
        size_t j = i + (size_t)pg->m;
        loc nb = at[K_BW * SM + j].dev >= 0 ? at[K_BW * SM + j] : at[K_B * SM + j];
        int nop = at[K_BW * SM + j].dev >= 0 ? SC_OP_BW : SC_OP_B;
        if ((st = need_before(pg, nb, nop, s + 1, back, bop, s, mb)))
            return st;
    }
    if (bw.dev < 0 && (st = need_before(pg, b, SC_OP_B, s, w, SC_OP_W, s, mb)))
        return st;
    if (bw.dev < 0 && (st = need_before(pg, f, SC_OP_F, s, b, SC_OP_B, s, mb)))
        return st;
    return SC_OK;
}

static sc_status verify_passes(sc_prog *pg)
{
    size_t SM = (size_t)pg->S * (size_t)pg->m;
    loc *at = sc_malloc(K_N * SM * sizeof(loc));
    if (!at)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory verifying %zu passes", SM);
    for (size_t i = 0; i < K_N * SM; i++)
        at[i].dev = -1;
    sc_status st = locate_passes(pg, at, SM);
    for (int s = 0; s < pg->S && !st; s++)
        for (int mb = 0; mb < pg->m && !st; mb++)
            if (sc_mb_has(pg, s, mb)) /* else another copy's stage (docs/guide.md#copies) */
                st = check_passes(pg, at, SM, s, mb);
    if (!st)
        st = verify_vocab(pg, at);
    if (!st && pg->slices > 1)
        st = verify_slices(pg, at);
    sc_free(at);
    return st;
}

/* What sc_verify_passes read, kept after it passed (pg->vsnap, one block):
 * the shape, the placement, and every order byte for byte. The result is a
 * function of these alone, so the same passes pass again. */
typedef struct vsnap {
    int P, S, m, copies, fwd_only, slices;
    sc_vocab vocab;
    size_t n; /* Σ order[d].n; then size_t cnt[P], int stage_dev[S], sc_instr[n] */
} vsnap;

static size_t snap_size(int P, int S, size_t n)
{
    return sizeof(vsnap) + (size_t)P * sizeof(size_t) + (size_t)S * sizeof(int) +
           n * sizeof(sc_instr);
}

static void snap_take(sc_prog *pg)
{
    size_t n = 0;
    for (int d = 0; d < pg->P; d++)
        n += pg->order[d].n;
    vsnap *v = sc_malloc(snap_size(pg->P, pg->S, n));
    if (!v)
        return; /* no snapshot: the compile driver checks again */
    *v = (vsnap){pg->P, pg->S, pg->m, pg->copies, pg->fwd_only, pg->slices, pg->vocab, n};
    size_t *cnt = (size_t *)(v + 1);
    int *sd = (int *)(cnt + pg->P);
    sc_instr *in = (sc_instr *)(sd + pg->S);
    memcpy(sd, pg->stage_dev, (size_t)pg->S * sizeof(int));
    for (int d = 0; d < pg->P; d++) {
        cnt[d] = pg->order[d].n;
        if (cnt[d])
            memcpy(in, pg->order[d].v, cnt[d] * sizeof(sc_instr));
        in += cnt[d];
    }
    pg->vsnap = v;
}

static int snap_same(const sc_prog *pg)
{
    const vsnap *v = pg->vsnap;
    if (!v || v->P != pg->P || v->S != pg->S || v->m != pg->m || v->copies != pg->copies ||
        v->fwd_only != pg->fwd_only || v->slices != pg->slices || v->vocab != pg->vocab)
        return 0;
    const size_t *cnt = (const size_t *)(v + 1);
    const int *sd = (const int *)(cnt + pg->P);
    const sc_instr *in = (const sc_instr *)(sd + pg->S);
    if (memcmp(sd, pg->stage_dev, (size_t)pg->S * sizeof(int)) != 0)
        return 0;
    for (int d = 0; d < pg->P; d++) {
        if (cnt[d] != pg->order[d].n ||
            (cnt[d] && memcmp(in, pg->order[d].v, cnt[d] * sizeof(sc_instr)) != 0))
            return 0;
        in += cnt[d];
    }
    return 1;
}

sc_status sc_verify_passes(sc_prog *pg)
{
    sc_free(pg->vsnap);
    pg->vsnap = NULL;
    sc_status st = verify_passes(pg);
    if (st == SC_OK)
        snap_take(pg);
    return st;
}

sc_status sc_verify_passes_again(sc_prog *pg)
{
    if (snap_same(pg))
        return SC_OK;
    sc_free(pg->vsnap);
    pg->vsnap = NULL;
    return verify_passes(pg);
}

sc_status sc_verify_streams(sc_prog *pg)
{
    if (!pg->lowered)
        return sc_fail(pg, SC_ERR_ARG, "the program is not lowered");
    size_t *offset = sc_malloc(((size_t)pg->P + 1) * sizeof(size_t));
    if (!offset)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    offset[0] = 0;
    for (int d = 0; d < pg->P; d++)
        offset[d + 1] = offset[d] + pg->stream[d].n;
    sc_status st = sc_replay(pg, offset, NULL, NULL);
    sc_free(offset);
    if (st == SC_OK)
        pg->verified = 1;
    return st;
}
