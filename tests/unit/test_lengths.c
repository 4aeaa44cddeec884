/*
 * test_lengths.c — microbatches of different lengths (ir/lengths.h,
 * plan/order.h, docs/lengths.md): the list's reader, the scales of passes,
 * records and messages, the simulation and the bound by hand on 1F1B, a
 * model's quadratic share, and the orders (never slower than the given).
 * End to end: tests/lengths.sh.
 */
#include "bound/bound.h"
#include "harness.h"
#include "ir/alloc.h"
#include "ir/ir.h"
#include "model/flops.h"
#include "plan/order.h"
#include "prog_1f1b.h"
#include "sim/sim.h"

#include <math.h>

TEST(parse)
{
    double *v = NULL;
    int n = 0;
    char err[256];
    const char *json = " [512, 1024.5,2048 ]\n";
    CHECK(sc_lengths_parse(json, strlen(json), 3, &v, &n, err, sizeof err) == SC_OK);
    CHECK(n == 3 && v && v[1] == 1024.5 && v[2] == 2048);
    sc_free(v);
    const char *text = "# tokens\n10\n20 # the second\n30\n";
    CHECK(sc_lengths_parse(text, strlen(text), 0, &v, &n, err, sizeof err) == SC_OK);
    CHECK(n == 3 && v && v[0] == 10 && v[2] == 30);
    sc_free(v);
    CHECK(sc_lengths_parse(text, strlen(text), 4, &v, &n, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "3 lengths for m = 4 microbatches");
    CHECK(sc_lengths_parse("1\n-2\n", 5, 2, &v, &n, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "entry 2 (line 2) is -2: a length must be a number > 0");
    CHECK(sc_lengths_parse("[1, x]", 6, 2, &v, &n, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "entry 2 (line 1) is 'x': not a number");
    CHECK(sc_lengths_parse("[1, 2", 5, 2, &v, &n, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "no closing ']'");
    CHECK(sc_lengths_parse("  ", 2, 0, &v, &n, err, sizeof err) == SC_ERR_ARG);
    CHECK(v == NULL);
}

TEST(scales)
{
    sc_prog *pg = one_f_one_b(2, 4, 0.5);
    double len[4] = {1, 3, 2, 2}; /* mean 2 */
    CHECK(sc_prog_set_lengths(pg, len, 3) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "3 entries for m = 4");
    double bad[4] = {1, 0, 2, 2};
    CHECK(sc_prog_set_lengths(pg, bad, 4) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "entry 2 is 0");
    CHECK(sc_prog_lengths(pg) == NULL && sc_prog_len_scale(pg, SC_LK_F, 0, 1) == 1);
    CHECK(sc_prog_set_lengths(pg, len, 4) == SC_OK);
    CHECK(sc_prog_length_ref(pg) == 2);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 1), 1.5, 1e-12);   /* 1 x 3/2 */
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_BW, 1, 0), 1.0, 1e-12);  /* 2 x 1/2 */
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 4 + 1), 1.5, 1e-12); /* step 1's mb 1 */
    CHECK_NEAR(sc_prog_rec_units(pg, 0, 1), 1.5, 1e-12);
    CHECK_NEAR(sc_prog_msg_time(pg, 0), 0.25, 1e-12);
    sc_prog_free(pg);
}

TEST(sim_and_bound)
{
    /* Alike lengths change nothing; others of the same tokens do, and the
     * bound stays below. */
    sc_prog *pg = one_f_one_b(4, 8, 0.2);
    double base = makespan_peak(pg, NULL);
    double same[8] = {7, 7, 7, 7, 7, 7, 7, 7};
    CHECK(sc_prog_set_lengths(pg, same, 8) == SC_OK);
    CHECK(makespan_peak(pg, NULL) == base);
    double len[8] = {1782, 1084, 2935, 2471, 837, 2904, 559, 926};
    CHECK(sc_prog_set_lengths(pg, len, 8) == SC_OK);
    double peak, t = makespan_peak(pg, &peak);
    CHECK(t > base * 1.05);
    CHECK(peak > 4); /* d0 holds 4 records, two of the longest among them */
    sc_bound b;
    CHECK(sc_bound_prog(pg, &b) == SC_OK && b.bound <= t + 1e-9);
    /* PATH: the longest microbatch's: F and B down and up the 4 stages, W
     * at the end, 6 messages, each scaled by r = 2935 / 1687.25 */
    double r = 2935 / 1687.25;
    CHECK_NEAR(b.term[SC_BOUND_PATH], r * 9 + 6 * 0.2 * r, 1e-9);
    /* WORK: every device computes as long as with alike ones (linear scales) */
    CHECK_NEAR(b.term[SC_BOUND_WORK], 8 * 3.0, 1e-9);
    /* MEMORY with a cap: k = floor(cap / smallest record) */
    CHECK(sc_prog_set_mem_limit(pg, 1) == SC_OK);
    CHECK(sc_bound_prog(pg, &b) == SC_OK && b.term[SC_BOUND_MEMORY] > 0);
    sc_prog_free(pg);
}

TEST(model_quadratic)
{
    /* A model's seq is the reference; twice the length costs more than twice
     * in F (attention), exactly twice in W (the weights' products). */
    sc_prog *pg = sc_prog_new(2, 2, 2);
    sc_model_desc md = sc_model_desc_default();
    md.layers = 4, md.hidden = 1024, md.seq = 2048, md.vocab = 32000, md.batch = 1;
    CHECK(sc_prog_set_model(pg, &md) == SC_OK);
    double len[2] = {2048, 4096};
    CHECK(sc_prog_set_lengths(pg, len, 2) == SC_OK);
    CHECK(sc_prog_length_ref(pg) == 2048);
    CHECK(sc_prog_len_linear(pg, SC_LK_F, 0) < 1 && sc_prog_len_linear(pg, SC_LK_W, 1) == 1);
    CHECK_NEAR(sc_prog_len_scale(pg, SC_LK_F, 0, 0), 1, 1e-12);
    CHECK(sc_prog_len_scale(pg, SC_LK_F, 0, 1) > 2.01);
    CHECK_NEAR(sc_prog_len_scale(pg, SC_LK_W, 0, 1), 2, 1e-9);
    sc_prog_free(pg);
}

TEST(orders)
{
    double given[6] = {5, 1, 4, 2, 6, 3}, out[6];
    sc_len_order_apply(SC_LORDER_LONGEST, given, 6, out);
    CHECK(out[0] == 6 && out[5] == 1);
    sc_len_order_apply(SC_LORDER_SHORTEST, given, 6, out);
    CHECK(out[0] == 1 && out[5] == 6);
    sc_len_order_apply(SC_LORDER_ZIGZAG, given, 6, out);
    CHECK(out[0] == 6 && out[1] == 1 && out[2] == 5 && out[3] == 2);
    sc_len_order_apply(SC_LORDER_VALLEY, given, 6, out);
    CHECK(out[0] == 1 && out[5] == 2 && (out[2] == 6 || out[3] == 6));
    sc_prog *pg = one_f_one_b(4, 8, 0.1);
    double len[8] = {1782, 1084, 2935, 2471, 837, 2904, 559, 926};
    CHECK(sc_prog_set_lengths(pg, len, 8) == SC_OK);
    double t = makespan_peak(pg, NULL);
    sc_len_order o;
    CHECK(sc_len_order_plan(pg, &o) == SC_OK);
    CHECK(o.makespan[SC_LORDER_GIVEN] == t && o.final <= t && o.final <= o.makespan[o.best]);
    CHECK(makespan_peak(pg, NULL) == o.final); /* left in the order found */
    sc_len_order_free(&o);
    sc_prog_free(pg);
}

/* A run's measured records (sc_prog_set_len_records): units and the share
 * W keeps per (stage, microbatch) replace the scaled mem and w_keep. */
TEST(len_records)
{
    sc_prog *pg = one_f_one_b(1, 2, 0);
    double units[2] = {3, 1}, kept[2] = {0.5, 1}, len[2] = {1, 1};
    CHECK(sc_prog_set_len_records(pg, units, kept) == SC_ERR_ARG); /* no lengths */
    CHECK_STR(sc_errmsg(pg), "without lengths");
    CHECK(sc_prog_set_lengths(pg, len, 2) == SC_OK);
    double peak = 0;
    makespan_peak(pg, &peak);
    CHECK_NEAR(peak, 1, 1e-12); /* F BW F BW: one record of 1 unit at a time */
    CHECK(sc_prog_set_len_records(pg, units, kept) == SC_OK);
    makespan_peak(pg, &peak);
    CHECK_NEAR(peak, 3, 1e-12); /* microbatch 0's measured units */
    CHECK_NEAR(sc_prog_rec_units(pg, 0, 2), 3, 1e-12); /* step 2's mb 0: microbatch 0 */
    double bad[2] = {1, 2};
    CHECK(sc_prog_set_len_records(pg, units, bad) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "kept share 2");
    CHECK(sc_prog_set_lengths(pg, len, 2) == SC_OK); /* new lengths: the records go */
    makespan_peak(pg, &peak);
    CHECK_NEAR(peak, 1, 1e-12);
    sc_prog_free(pg);
}

int main(void)
{
    RUN(parse);
    RUN(scales);
    RUN(sim_and_bound);
    RUN(model_quadratic);
    RUN(orders);
    RUN(len_records);
    return harness_done("lengths");
}
