/*
 * test_slices.c — sequence slices (ir/slices.h, docs/slices.md): the
 * setter's checks, the per-slice scales (equal split, a model's quadratic
 * attention term), the verifier's proof of the slice order on a stage (F
 * forward, the backward in reverse), the settings slices refuse, and the
 * memory and time of Seq1F1B against 1F1B by hand. End to end:
 * tests/slices.sh.
 */
#include "compile.h"
#include "harness.h"
#include "ir/ir.h"
#include "model/flops.h"
#include "sim/sim.h"

#include <math.h>

/* 1F1B over the records of p stages: microbatches of K slices, backward
 * of each microbatch's slices last to first (stdlib/seq1f1b.lua). With
 * K = 1, plain 1F1B. swap: the first device's first two F swapped. */
static sc_prog *seq1f1b(int p, int m, int K, int swap)
{
    int n = m * K;
    sc_prog *pg = sc_prog_new(p, p, n);
    CHECK(sc_prog_set_slices(pg, K) == SC_OK);
    for (int d = 0; d < p; d++) {
        int warm = p - d - 1 + K - 1 < n ? p - d - 1 + K - 1 : n, f = 0, b = 0;
#define BACK(i) (((i) / K) * K + (K - 1 - (i) % K))
        for (; f < warm; f++)
            CHECK(sc_prog_push(pg, d, SC_OP_F, d, d == 0 && swap && f < 2 ? 1 - f : f) == SC_OK);
        for (; f < n; f++, b++) {
            CHECK(sc_prog_push(pg, d, SC_OP_F, d, f) == SC_OK);
            CHECK(sc_prog_push(pg, d, SC_OP_BW, d, BACK(b)) == SC_OK);
        }
        for (; b < n; b++)
            CHECK(sc_prog_push(pg, d, SC_OP_BW, d, BACK(b)) == SC_OK);
#undef BACK
    }
    return pg;
}

TEST(setter)
{
    sc_prog *pg = sc_prog_new(2, 2, 6);
    CHECK(sc_prog_slices(pg) == 1);
    CHECK(sc_prog_set_slices(pg, 4) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "6 records are not whole microbatches of 4 slices");
    CHECK(sc_prog_set_slices(pg, 0) == SC_ERR_ARG);
    CHECK(sc_prog_set_slices(pg, 3) == SC_OK);
    CHECK(sc_prog_slices(pg) == 3);
    CHECK(sc_prog_slice_of(pg, 5) == 2 && sc_prog_slice_mb(pg, 5) == 1);
    char b[32];
    sc_prog_mb_format(pg, 4, b, sizeof b);
    CHECK_STR(b, "1.1");
    snprintf(b, sizeof b, "BW s1 mb5");
    sc_prog_slice_names(pg, b, sizeof b);
    CHECK_STR(b, "BW s1 mb1.2");
    sc_prog_free(pg);
}

TEST(scales)
{
    /* Without a model an equal split: every slice 1/K of time and units. */
    sc_prog *pg = sc_prog_new(2, 2, 8);
    CHECK(sc_prog_set_slices(pg, 4) == SC_OK);
    for (int r = 0; r < 8; r++) {
        CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, r), 0.25, 1e-12);
        CHECK_NEAR(sc_prog_rec_units(pg, 1, r), 0.25, 1e-12);
    }
    sc_prog_free(pg);
    /* With a model, later slices cost more (attention over the earlier
     * keys and values), W (weights only) stays an equal split, and the
     * slices of a microbatch sum to the microbatch's cost. */
    pg = sc_prog_new(2, 2, 4);
    sc_model_desc md = sc_model_desc_default();
    md.layers = 4, md.hidden = 1024, md.seq = 32768, md.vocab = 32000, md.batch = 1;
    CHECK(sc_prog_set_model(pg, &md) == SC_OK);
    CHECK(sc_prog_set_slices(pg, 4) == SC_OK);
    double a = sc_prog_len_linear(pg, SC_LK_F, 0), sum = 0, prev = 0;
    CHECK(a < 0.9);
    for (int j = 0; j < 4; j++) {
        double t = sc_prog_pass_time(pg, SC_OP_F, 0, j);
        CHECK(t > prev);
        CHECK_NEAR(t, sc_prog_tf(pg, 0) * (a / 4 + (1 - a) * (2 * j + 1) / 16.0), 1e-9);
        CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_W, 0, j), sc_prog_tw(pg, 0) / 4, 1e-9);
        prev = t, sum += t;
    }
    CHECK_NEAR(sum, sc_prog_tf(pg, 0), 1e-9 * sum);
    sc_prog_free(pg);
}

TEST(proof)
{
    sc_prog *pg = seq1f1b(3, 2, 4, 0);
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_free(pg);
    /* F of slice 1 before slice 0's on its stage: refused, named. */
    pg = seq1f1b(3, 2, 4, 1);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "slice out of order on d0: F s0 mb0.1 (#0) needs F s0 mb0.0 first");
    sc_prog_free(pg);
    /* The backward in forward order (slice 0 first): refused. The same
     * orders without slices (K microbatches) are a valid 1F1B. */
    for (int K = 4; K >= 1; K -= 3) {
        pg = sc_prog_new(2, 2, 4);
        CHECK(sc_prog_set_slices(pg, K) == SC_OK);
        for (int d = 0; d < 2; d++) {
            for (int r = 0; r < 4; r++)
                CHECK(sc_prog_push(pg, d, SC_OP_F, d, r) == SC_OK);
            for (int r = 0; r < 4; r++)
                CHECK(sc_prog_push(pg, d, SC_OP_BW, d, r) == SC_OK);
        }
        CHECK(sc_check(pg) == (K > 1 ? SC_ERR_PROGRAM : SC_OK));
        if (K > 1)
            CHECK_STR(sc_errmsg(pg), "BW s0 mb0.0 (#4) needs BW s0 mb0.1 first");
        sc_prog_free(pg);
    }
}

TEST(refusals)
{
    sc_prog *pg = seq1f1b(2, 2, 2, 0);
    double len[4] = {1, 2, 3, 4};
    CHECK(sc_prog_set_lengths(pg, len, 4) == SC_OK);
    CHECK(sc_check(pg) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "slices = 2 (docs/slices.md) does not go with lengths");
    sc_prog_free(pg);
}

TEST(memory_and_time)
{
    /* Equal costs, p = 4, m = 8: 1F1B holds p records on d0 and takes
     * (m + p - 1)·3; Seq1F1B with K = 4 holds (p - 1 + K)/K and takes
     * (m + (p - 1)/K)·3. */
    for (int K = 1; K <= 4; K *= 4) {
        sc_prog *pg = seq1f1b(4, 8, K, 0);
        sc_sim *sim = NULL;
        CHECK(sc_simulate(pg, &sim) == SC_OK);
        if (sim) {
            CHECK_NEAR(sim->peak_mem[0], (4 - 1 + K) / (double)K, 1e-12);
            CHECK_NEAR(sim->makespan, (8 + 3.0 / K) * 3, 1e-9);
        }
        sc_sim_free(sim);
        sc_prog_free(pg);
    }
}

int main(void)
{
    RUN(setter);
    RUN(scales);
    RUN(proof);
    RUN(refusals);
    RUN(memory_and_time);
    return harness_done("slices");
}
