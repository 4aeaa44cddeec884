/*
 * test_search.c — the block search's plain squeeze (interp/schedule/
 * search.h): timed without unrolling, it gives the figures of the unrolled
 * orders under the dataflow timing to the bit, for every valid block of the
 * paper's family, on the V and the loop placement, at unit and realistic
 * costs, with and without T_comm, and per-stage costs; the search's choice
 * is the one the unrolled ranking makes.
 */
#include "schedule/search.h"
#include "interp_util.h"

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

int main(void)
{
    RUN(plain_fast_is_the_unroll);
    RUN(plain_off_grid_unrolls);
    return harness_done("search");
}
