/*
 * block_hand.c — a block's reordered orders handed from one program to
 * another (block_hand.h).
 */
#include "block_hand.h"
#include "ir/alloc.h"
#include "ir/ir_impl.h"

#include <string.h>

/* The per-stage columns the unroll and the reorder read, in this order. */
enum { NCOL = 7 };

struct sc_block_hand {
    int P, S, m, copies, slots;
    sc_vocab vocab;
    double interval, tcomm, w_keep;
    int *stage_dev;   /* [S] */
    double *col;      /* [NCOL*S]: tf, tb, tw, tbw, ta, tfb, mem */
    double *off[4];   /* [S] each, NULL where the block has none */
    double *cap;      /* [P] sc_block_caps */
    size_t *n;        /* [P] passes of each device's order */
    sc_instr *order;  /* the orders, device after device */
};

static const double *column(const sc_prog *pg, int k)
{
    const double *c[NCOL] = {pg->tf, pg->tb, pg->tw, pg->tbw, pg->ta, pg->tfb, pg->mem};
    return c[k];
}

/* Bit-equal arrays of n doubles (NaN equals the same NaN); both NULL is
 * equal. */
static int same_doubles(const double *a, const double *b, size_t n)
{
    if (!a || !b)
        return a == b;
    return memcmp(a, b, n * sizeof *a) == 0;
}

static int reordered(const sc_block *blk)
{
    return !blk->keep_order && !blk->overlap && !blk->voff[0] && !blk->voff[1] &&
           !blk->voff[2] && !blk->voff[3];
}

void sc_block_hand_free(sc_block_hand *h)
{
    if (!h)
        return;
    sc_free(h->stage_dev);
    sc_free(h->col);
    for (int k = 0; k < 4; k++)
        sc_free(h->off[k]);
    sc_free(h->cap);
    sc_free(h->n);
    sc_free(h->order);
    sc_free(h);
}

sc_block_hand *sc_block_hand_take(sc_prog *pg, const sc_block *blk)
{
    if (!reordered(blk))
        return NULL;
    int P = pg->P, S = pg->S;
    size_t N = 0;
    for (int d = 0; d < P; d++)
        N += pg->order[d].n;
    sc_block_hand *h = sc_calloc(1, sizeof *h);
    if (!h)
        return NULL;
    *h = (sc_block_hand){.P = P, .S = S, .m = pg->m, .copies = pg->copies, .slots = blk->slots,
                         .vocab = pg->vocab, .interval = blk->interval, .tcomm = pg->tcomm,
                         .w_keep = pg->w_keep};
    h->stage_dev = sc_malloc((size_t)S * sizeof *h->stage_dev);
    h->col = sc_malloc(NCOL * (size_t)S * sizeof *h->col);
    h->cap = sc_malloc((size_t)P * sizeof *h->cap);
    h->n = sc_malloc((size_t)P * sizeof *h->n);
    h->order = sc_malloc((N ? N : 1) * sizeof *h->order);
    int ok = h->stage_dev && h->col && h->cap && h->n && h->order;
    for (int k = 0; ok && k < 4; k++)
        if (blk->off[k]) {
            ok = (h->off[k] = sc_malloc((size_t)S * sizeof *h->off[k])) != NULL;
            if (ok)
                memcpy(h->off[k], blk->off[k], (size_t)S * sizeof *h->off[k]);
        }
    /* A column a program lacks cannot be told apart: not handed. */
    for (int k = 0; ok && k < NCOL; k++)
        if (!column(pg, k))
            ok = 0;
        else
            memcpy(h->col + (size_t)k * S, column(pg, k), (size_t)S * sizeof *h->col);
    if (!ok || sc_block_caps(pg, blk, h->cap) != SC_OK) {
        sc_block_hand_free(h);
        return NULL;
    }
    memcpy(h->stage_dev, pg->stage_dev, (size_t)S * sizeof *h->stage_dev);
    size_t at = 0;
    for (int d = 0; d < P; d++) {
        h->n[d] = pg->order[d].n;
        if (h->n[d])
            memcpy(h->order + at, pg->order[d].v, h->n[d] * sizeof *h->order);
        at += h->n[d];
    }
    return h;
}

/* Every input of the unroll and its reorder equal; cap: pg's caps for blk. */
static int same(const sc_prog *pg, const sc_block *blk, const sc_block_hand *h,
                const double *cap)
{
    int S = pg->S;
    if (!reordered(blk) || pg->P != h->P || S != h->S || pg->m != h->m ||
        pg->copies != h->copies || pg->vocab != h->vocab || blk->slots != h->slots ||
        !same_doubles(&blk->interval, &h->interval, 1) || !same_doubles(&pg->tcomm, &h->tcomm, 1) ||
        !same_doubles(&pg->w_keep, &h->w_keep, 1) ||
        memcmp(pg->stage_dev, h->stage_dev, (size_t)S * sizeof *h->stage_dev) != 0 ||
        !same_doubles(cap, h->cap, (size_t)h->P))
        return 0;
    for (int k = 0; k < NCOL; k++)
        if (!column(pg, k) || !same_doubles(column(pg, k), h->col + (size_t)k * S, (size_t)S))
            return 0;
    for (int k = 0; k < 4; k++)
        if (!same_doubles(blk->off[k], h->off[k], (size_t)S))
            return 0;
    return 1;
}

int sc_block_hand_fits(sc_prog *pg, const sc_block *blk, const sc_block_hand *h)
{
    if (!h || pg->P != h->P)
        return 0;
    double *cap = sc_malloc((size_t)pg->P * sizeof *cap);
    int fits = cap && sc_block_caps(pg, blk, cap) == SC_OK && same(pg, blk, h, cap);
    sc_free(cap);
    return fits;
}

sc_status sc_block_unroll_hand(sc_prog *pg, const sc_block *blk, const sc_block_hand *h)
{
    if (!h || pg->P != h->P)
        return sc_block_unroll(pg, blk);
    double *cap = sc_malloc((size_t)pg->P * sizeof *cap);
    if (!cap)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling the block");
    /* the cap's refusal, as the unroll would refuse */
    sc_status st = sc_block_caps(pg, blk, cap);
    int fits = st == SC_OK && same(pg, blk, h, cap);
    sc_free(cap);
    if (st)
        return st;
    if (!fits)
        return sc_block_unroll(pg, blk);
    /* As the unroll leaves the program: each order cleared and refilled,
     * npasses counting the passes pushed. */
    size_t at = 0;
    for (int d = 0; d < pg->P; d++) {
        sc_prog_clear_order(pg, d);
        if (sc_vec_reserve(&pg->order[d], h->n[d]) != SC_OK)
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory unrolling the block");
        if (h->n[d])
            memcpy(pg->order[d].v, h->order + at, h->n[d] * sizeof *h->order);
        pg->order[d].n = h->n[d];
        pg->npasses += h->n[d];
        at += h->n[d];
    }
    return SC_OK;
}
