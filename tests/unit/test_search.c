/*
 * test_search.c — the block search's plain squeeze (interp/schedule/
 * search.h): timed without unrolling, it gives the figures of the unrolled
 * orders under the dataflow timing to the bit, for every valid block of the
 * paper's family, on the V and the loop placement, at unit and realistic
 * costs, with and without T_comm, and per-stage costs; the search's choice
 * is the one the unrolled ranking makes; the reordered orders the search
 * hands on with its best block (block_hand.h) are a fresh unroll's.
 */
#include "schedule/search.h"
#include "interp_util.h"
#include "ir/memcap.h"

#include <string.h>

typedef struct shape {
    int p, v, m, place; /* place: SC_PLACE_V or SC_PLACE_LOOP */
    double tf, tb, tw, tc;
    int ragged; /* per-stage costs: stage s's scaled by 1 + s/7 */
} shape;

static const shape SHAPES[] = {
    {4, 2, 8, SC_PLACE_V, 1, 1, 1, 0, 0},
    {4, 2, 9, SC_PLACE_V, 29850, 29767, 18868, 466, 0},
    {6, 2, 12, SC_PLACE_V, 1, 1.5, 0.5, 0.25, 1},
    {8, 2, 16, SC_PLACE_V, 1, 2, 1, 0.1, 0},
    {3, 2, 5, SC_PLACE_V, 2, 1, 3, 0, 1},
    {4, 1, 8, SC_PLACE_LOOP, 1, 1, 1, 0.5, 0},
    {5, 2, 10, SC_PLACE_LOOP, 1, 1.5, 0.5, 0.25, 1},
};

static sc_prog *make(const shape *h)
{
    sc_prog *pg = sc_prog_new(h->p, h->p * h->v, h->m);
    if (!pg)
        return NULL;
    sc_prog_set_placement(pg, (sc_place)h->place, NULL);
    for (int s = 0; s < h->p * h->v; s++) {
        double k = h->ragged ? 1 + s / 7.0 : 1;
        sc_prog_set_cost(pg, s, k * h->tf / h->v, k * h->tb / h->v, k * h->tw / h->v);
    }
    sc_prog_set_comm(pg, h->tc);
    return pg;
}

TEST(plain_fast_is_the_unroll)
{
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        const shape *h = &SHAPES[i];
        sc_prog *pg = make(h);
        CHECK(pg != NULL);
        if (!pg)
            continue;
        int S = h->p * h->v, blocks = 0;
        double *off = malloc(3 * (size_t)S * sizeof *off),
               *times = malloc(6 * (size_t)S * (size_t)h->m * sizeof *times);
        for (int k = 1; k <= 3; k++)
            for (int af = 0; af < 6; af++)
                for (int aB = 0; aB < 6; aB++)
                    for (int ab = 0; ab < 6; ab++) {
                        sc_vpattern pat = {k, af, aB, ab};
                        sc_block blk;
                        if (sc_vpattern_block(pg, &pat, off, &blk) != SC_OK)
                            continue; /* not a block */
                        double mk[2] = {-1, -1}, bub[2] = {-1, -1};
                        CHECK(sc_vblock_plain(pg, &blk, INFINITY, 1, times, &mk[0], &bub[0]) == SC_OK);
                        CHECK(sc_vblock_plain(pg, &blk, INFINITY, 0, times, &mk[1], &bub[1]) == SC_OK);
                        /* bit for bit: the search ranks by these */
                        CHECK(memcmp(&mk[0], &mk[1], sizeof *mk) == 0);
                        CHECK(memcmp(&bub[0], &bub[1], sizeof *bub) == 0);
                        CHECK(mk[0] > 0 && bub[0] >= 0 && bub[0] < 1);
                        blocks++;
                    }
        CHECK(blocks > 10); /* the family has blocks on every shape here */
        free(off);
        free(times);
        sc_prog_free(pg);
    }
}

/* A block outside the fast path (offsets not whole slots) is unrolled and
 * timed the same way. */
TEST(plain_off_grid_unrolls)
{
    const shape *h = &SHAPES[0];
    sc_prog *pg = make(h);
    CHECK(pg != NULL);
    if (!pg)
        return;
    int S = h->p * h->v;
    double *off = malloc(3 * (size_t)S * sizeof *off),
           *times = malloc(6 * (size_t)S * (size_t)h->m * sizeof *times);
    sc_vpattern pat = {1, 0, 0, 0};
    sc_block blk;
    CHECK(sc_vpattern_block(pg, &pat, off, &blk) == SC_OK);
    double mk0 = -1, mk1 = -1, b0 = -1, b1 = -1;
    CHECK(sc_vblock_plain(pg, &blk, INFINITY, 1, times, &mk0, &b0) == SC_OK);
    sc_block half = blk;
    half.interval = blk.interval * 1.5; /* a longer interval, not whole: the unroll times it */
    for (int x = 0; x < 3 * S; x++)
        off[x] *= 1.5;
    CHECK(sc_vblock_plain(pg, &half, INFINITY, 1, times, &mk1, &b1) == SC_OK);
    double mk2 = -1, b2 = -1;
    CHECK(sc_vblock_plain(pg, &half, INFINITY, 0, times, &mk2, &b2) == SC_OK);
    CHECK(mk1 == mk2 && b1 == b2);
    size_t n;
    sc_prog_order(pg, 0, &n);
    CHECK(n > 0); /* the fallback unrolled into the program's orders */
    free(off);
    free(times);
    sc_prog_free(pg);
}

/* Device d's orders of a and b are the same passes in the same order. */
static int same_orders(const sc_prog *a, const sc_prog *b, int P)
{
    for (int d = 0; d < P; d++) {
        size_t na, nb;
        const sc_instr *x = sc_prog_order(a, d, &na), *y = sc_prog_order(b, d, &nb);
        if (na != nb || (na && memcmp(x, y, na * sizeof *x) != 0))
            return 0;
    }
    return 1;
}

/* The search's orders of its best block, installed in another program of
 * the same inputs, are what sc_block_unroll makes there; any input changed
 * (T_comm, a stage's cost, the cap, keep_order) and they are not handed. */
TEST(handed_orders_are_the_unroll)
{
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        const shape *h = &SHAPES[i];
        int S = h->p * h->v;
        sc_prog *pg = make(h), *got = make(h), *fresh = make(h), *other = make(h);
        double limit = INFINITY, *off = malloc(3 * (size_t)S * sizeof *off);
        sc_vcand *cands = NULL;
        size_t n = 0;
        sc_block_hand *hand = NULL;
        CHECK(pg && got && fresh && other && off);
        if (!pg || !got || !fresh || !other || !off)
            continue;
        CHECK(sc_vblock_search(pg, 3, &limit, 1, &cands, &n, &hand) == SC_OK);
        const sc_vcand *best = sc_vcand_best(cands, n, limit);
        sc_block blk;
        CHECK(best && hand);
        if (best && hand && sc_vpattern_block(got, &best->pat, off, &blk) == SC_OK) {
            CHECK(sc_block_hand_fits(got, &blk, hand));
            CHECK(sc_block_unroll_hand(got, &blk, hand) == SC_OK);
            CHECK(sc_block_unroll(fresh, &blk) == SC_OK);
            CHECK(same_orders(got, fresh, h->p));
            CHECK(sc_prog_total_instructions(got) == sc_prog_total_instructions(fresh));
            /* each input changed: not handed, and unrolled as before */
            sc_prog_set_comm(other, h->tc + 0.5);
            CHECK(!sc_block_hand_fits(other, &blk, hand));
            sc_prog_set_comm(other, h->tc);
            CHECK(sc_block_hand_fits(other, &blk, hand));
            sc_prog_set_cost(other, S - 1, 9, 9, 9);
            CHECK(!sc_block_hand_fits(other, &blk, hand));
            sc_prog *capped = make(h);
            CHECK(capped && sc_prog_set_mem_limit(capped, best->peak + 1) == SC_OK);
            CHECK(capped && !sc_block_hand_fits(capped, &blk, hand));
            sc_prog_free(capped);
            sc_block kept = blk;
            kept.keep_order = 1;
            CHECK(!sc_block_hand_fits(got, &kept, hand));
            CHECK(sc_block_unroll_hand(other, &blk, hand) == SC_OK);
        }
        sc_block_hand_free(hand);
        free(cands);
        free(off);
        sc_prog_free(pg);
        sc_prog_free(got);
        sc_prog_free(fresh);
        sc_prog_free(other);
    }
}

int main(void)
{
    RUN(plain_fast_is_the_unroll);
    RUN(plain_off_grid_unrolls);
    RUN(handed_orders_are_the_unroll);
    return harness_done("search");
}
