/*
 * test_vocab.c — Vocabulary Parallelism in the interpreter (docs/vocab.md):
 * the vocabulary passes in orders and their checks, their collectives as
 * lowered (one order on every device), their timing, the placement into
 * 1F1B, ZB-H1 and V-Half, the FLOP and byte model, and the paper's
 * 8-device setting (balance, gains that grow with V, memory overhead).
 */
#include "compile.h"
#include "formats/render.h"
#include "harness.h"
#include "model/flops.h"
#include "ir/ir.h"
#include "ir/text.h"
#include "schedule/block.h"
#include "schedule/rules.h"
#include "schedule/vocab.h"
#include "sim/sim.h"
#include "check/verify.h"

#include <stdlib.h>
#include <string.h>

static sc_prog *ordered(int p, int m, sc_vocab v, const char *const *orders)
{
    sc_prog *pg = sc_prog_new(p, p, m);
    CHECK(sc_prog_set_vocab(pg, v) == SC_OK);
    for (int d = 0; d < p; d++)
        CHECK(sc_order_parse(pg, d, orders[d], strlen(orders[d])) == SC_OK);
    return pg;
}

TEST(text_and_checks)
{
    const char *ok[] = {"E0 E1 F0 F1 S0 S1 BW0 BW1 T0 T1 EW0 EW1",
                        "E0 E1 F0 S0 F1 S1 BW0 BW1 T0 T1 EW0 EW1"};
    sc_prog *pg = ordered(2, 2, SC_VOCAB_V1, ok);
    CHECK(sc_verify_passes(pg) == SC_OK);
    char *t = sc_order_format(pg, 1);
    CHECK(t && strcmp(t, ok[1]) == 0);
    free(t);
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_free(pg);
    /* A token with a chunk, a vocabulary pass without a split vocabulary. */
    pg = sc_prog_new(2, 2, 1);
    CHECK(sc_order_parse(pg, 0, "S0.1", 4) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "a vocabulary pass runs on its device's shard and names no chunk");
    CHECK(sc_order_parse(pg, 0, "F0 S0 BW0", 9) == SC_OK);
    CHECK(sc_order_parse(pg, 1, "F0 BW0", 6) == SC_OK);
    CHECK(sc_verify_passes(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "d0 #1 (S mb0) is a vocabulary pass, but the program's vocabulary "
                             "is not split (vocab_par = none");
    sc_prog_free(pg);
    /* Missing on one device; out of order on one device. */
    const char *miss[] = {"E0 F0 S0 BW0 T0 EW0", "E0 F0 S0 BW0 EW0"};
    pg = ordered(2, 1, SC_VOCAB_V1, miss);
    CHECK(sc_verify_passes(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass missing: T of microbatch 0 is not on d1");
    sc_prog_free(pg);
    const char *ooo[] = {"E0 F0 S0 BW0 T0 EW0", "E0 F0 BW0 S0 T0 EW0"};
    pg = ordered(2, 1, SC_VOCAB_V1, ooo);
    CHECK(sc_verify_passes(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency out of order on d1: BW s1 mb0 (#2) needs S mb0, which "
                             "comes later (#3)");
    sc_prog_free(pg);
    const char *twice[] = {"E0 F0 S0 S0 BW0 T0 EW0", "E0 F0 S0 BW0 T0 EW0"};
    pg = ordered(2, 1, SC_VOCAB_V1, twice);
    CHECK(sc_verify_passes(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "pass twice: S mb0 is at d0 #2 and at d0 #3");
    sc_prog_free(pg);
}

/* d0 runs its backward before its S; d1's backward needs every S: a cycle
 * through the collective, refused with it. */
TEST(misordered_is_a_cycle)
{
    const char *o[] = {"E0 F0 BW0 S0 T0 EW0", "E0 F0 S0 BW0 T0 EW0"};
    sc_prog *pg = ordered(2, 1, SC_VOCAB_V1, o);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "dependency cycle across devices: d0 #2 (BW s0 mb0) needs BW s1 mb0 "
                             "from d1; d1 #3 (BW s1 mb0) needs S mb0 of every device (d0 has not "
                             "run it); no device can go on");
    sc_prog_free(pg);
}

/* Every device posts the same collectives in the same order. */
static void same_collectives(sc_prog *pg, int per_mb)
{
    int P = sc_prog_devices(pg), m = sc_prog_microbatches(pg);
    size_t n0;
    const sc_instr *v0 = sc_prog_stream(pg, 0, &n0);
    for (int d = 0; d < P; d++) {
        size_t n, i = 0, j = 0, count = 0;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (;; i++, j++) {
            while (i < n0 && !sc_op_is_coll(v0[i].op))
                i++;
            while (j < n && !sc_op_is_coll(v[j].op))
                j++;
            if (i >= n0 || j >= n)
                break;
            sc_coll a, b;
            sc_prog_coll(pg, &v0[i], &a);
            sc_prog_coll(pg, &v[j], &b);
            /* field by field: the struct's padding is not set */
            CHECK(a.op == b.op && a.red == b.red && a.what == b.what && a.part == b.part &&
                  a.stage == b.stage && a.mb == b.mb && a.step == b.step && a.root == b.root &&
                  a.group == b.group && a.bytes == b.bytes);
            count++;
        }
        CHECK(i >= n0 && j >= n);
        CHECK(count == (size_t)per_mb * (size_t)m);
    }
}

static double max_of(const double *v, int n)
{
    double x = v[0];
    for (int i = 1; i < n; i++)
        x = v[i] > x ? v[i] : x;
    return x;
}

static double min_of(const double *v, int n)
{
    double x = v[0];
    for (int i = 1; i < n; i++)
        x = v[i] < x ? v[i] : x;
    return x;
}

TEST(lowered_collectives)
{
    for (int v = SC_VOCAB_V1; v <= SC_VOCAB_V2; v++)
        for (int p = 2; p <= 4; p += 2) {
            sc_prog *pg = sc_prog_new(p, p, 2 * p);
            CHECK(sc_prog_set_vocab(pg, (sc_vocab)v) == SC_OK);
            CHECK(sc_prog_set_vocab_cost(pg, -1, 0.5, 0.25, 0.05, 0.05) == SC_OK);
            CHECK(sc_prog_set_vocab_mem(pg, -1, 0.25) == SC_OK);
            CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
            CHECK(sc_vocab_place(pg, -1) == SC_OK);
            CHECK(sc_vocab_placed(pg));
            CHECK(sc_check(pg) == SC_OK);
            /* E, the broadcast of X, S's two (vocab-1: three) all-reduces,
             * T's (vocab-2), the broadcast of dX0: 6 per microbatch. */
            same_collectives(pg, 6);
            sc_sim *sim = NULL;
            CHECK(sc_simulate(pg, &sim) == SC_OK);
            if (sim) /* every device: 2p microbatches of F + BW + S + T + E + EW */
                for (int d = 0; d < p; d++)
                    CHECK_NEAR(sim->busy[d], 2 * p * (1 + 2 + 0.5 + 0.25 + 0.1), 1e-9);
            sc_sim_free(sim);
            sc_prog_free(pg);
        }
}

/* One device: the passes follow each other, the collectives take no time
 * with one member. Two devices: the last stage's B waits for the later S
 * and the collectives of the statistics and the gradient. */
TEST(timing)
{
    const char *one[] = {"E0 F0 S0 BW0 T0 EW0"};
    sc_prog *pg = ordered(1, 1, SC_VOCAB_V1, one);
    CHECK(sc_prog_set_vocab_cost(pg, -1, 0.5, 0.25, 0.1, 0.1) == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim)
        CHECK_NEAR(sim->makespan, 0.1 + 1 + 0.5 + 2 + 0.25 + 0.1, 1e-12);
    sc_sim_free(sim);
    sc_prog_free(pg);
    /* d0's S is late (after its F1); latency 0.5 per collective. */
    const char *two[] = {"E0 E1 F0 F1 S0 S1 BW0 BW1 T0 T1 EW0 EW1",
                         "E0 E1 F0 S0 F1 S1 BW0 BW1 T0 T1 EW0 EW1"};
    pg = ordered(2, 2, SC_VOCAB_V1, two);
    CHECK(sc_prog_set_vocab_cost(pg, -1, 0.5, 0.25, 0, 0) == SC_OK);
    CHECK(sc_prog_set_coll_cost(pg, 0.5, INFINITY) == SC_OK);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, 1, &n);
        for (size_t k = 0; k < n; k++)
            if (v[k].op == SC_OP_BW && v[k].mb == 0) {
                /* E's all-reduces end at 0.5 and 1.0; F s0 [0.5, 1.5] and
                 * [1.5, 2.5]; F s1 [1.5, 2.5]; the broadcast of X0 ends at
                 * 3.0; S0 on both [3.0, 3.5]; its max, sums and gradient
                 * run on the channel until 5.0; F s1 mb1 [3.5, 4.5], whose
                 * broadcast waits on d1's channel until 5.0 and ends at 5.5;
                 * S1 [5.5, 6.0] comes before BW s1 mb0 on d1: BW at 6.0. */
                CHECK_NEAR(sim->t0[sim->offset[1] + k], 6.0, 1e-12);
            }
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
}

/* Times of two simulations, instruction by instruction (bitwise). */
static int same_times(const sc_sim *a, const sc_sim *b)
{
    if (!a || !b || a->P != b->P || a->offset[a->P] != b->offset[b->P])
        return 0;
    size_t n = a->offset[a->P];
    return memcmp(a->t0, b->t0, n * sizeof(double)) == 0 &&
           memcmp(a->t1, b->t1, n * sizeof(double)) == 0 &&
           memcmp(a->coll_busy, b->coll_busy, (size_t)a->P * sizeof(double)) == 0;
}

/* A verified program keeps its collectives' matching for its next timed
 * replays (check/replay_coll_cache.c): the times stay those of the first
 * simulation; after the order changed (streams of the same lengths,
 * another order), the matching is built again: the times of a program
 * given that order from the start. */
TEST(kept_matching)
{
    const char *a[] = {"E0 E1 F0 F1 S0 S1 BW0 BW1 T0 T1 EW0 EW1",
                       "E0 E1 F0 S0 F1 S1 BW0 BW1 T0 T1 EW0 EW1"};
    const char *b[] = {"E0 E1 F0 F1 S0 S1 BW0 BW1 T0 T1 EW0 EW1",
                       "E0 E1 F0 F1 S0 S1 BW0 BW1 T0 T1 EW0 EW1"};
    sc_prog *pa = ordered(2, 2, SC_VOCAB_V1, a), *pb = ordered(2, 2, SC_VOCAB_V1, b);
    for (int i = 0; i < 2; i++) {
        sc_prog *pg = i ? pb : pa;
        CHECK(sc_prog_set_vocab_cost(pg, -1, 0.5, 0.25, 0.125, 0.125) == SC_OK);
        CHECK(sc_prog_set_coll_cost(pg, 0.5, INFINITY) == SC_OK);
    }
    sc_sim *s[3] = {NULL, NULL, NULL}, *sb = NULL;
    for (int k = 0; k < 3; k++) /* verified by the first; kept by the second */
        CHECK(sc_simulate(pa, &s[k]) == SC_OK);
    CHECK(same_times(s[0], s[1]) && same_times(s[0], s[2]));
    CHECK(sc_simulate(pb, &sb) == SC_OK);
    CHECK(s[0] && sb && s[0]->makespan != sb->makespan);
    for (int k = 0; k < 3; k++)
        sc_sim_free(s[k]);
    sc_prog_clear_order(pa, 1);
    CHECK(sc_order_parse(pa, 1, b[1], strlen(b[1])) == SC_OK);
    for (int k = 0; k < 3; k++)
        CHECK(sc_simulate(pa, &s[k]) == SC_OK);
    CHECK(same_times(s[0], sb) && same_times(s[1], sb) && same_times(s[2], sb));
    for (int k = 0; k < 3; k++)
        sc_sim_free(s[k]);
    sc_sim_free(sb);
    sc_prog_free(pa);
    sc_prog_free(pb);
}

/* The model: 32 layers, h 3072, s 2048, batch 1 on p = 8, m = 128. */
static sc_prog *paper(const char *rule, sc_vocab v, long V, int m)
{
    sc_prog *pg = sc_prog_new(8, 8, m);
    CHECK(sc_prog_set_vocab(pg, v) == SC_OK);
    sc_model_desc md = sc_model_desc_default();
    md.layers = 32;
    md.hidden = 3072;
    md.seq = 2048;
    md.batch = 1;
    md.vocab = V;
    CHECK(sc_prog_set_model(pg, &md) == SC_OK);
    CHECK(sc_rule_fill(pg, rule) == SC_OK);
    if (sc_vocab_split(v))
        CHECK(sc_vocab_place(pg, -1) == SC_OK);
    return pg;
}

TEST(flop_model)
{
    sc_prog *pg = paper("1f1b", SC_VOCAB_BASELINE, 256000, 8);
    /* A layer: F = 24 R h^2 + 4 R s h at 400 TFLOP/s, four per stage; the
     * last stage adds the output layer's 2 R h V + 5 R V. */
    double R = 2048, h = 3072, s = 2048, V = 256000;
    double layer = (24 * R * h * h + 4 * R * s * h) / 4e14;
    CHECK_NEAR(sc_prog_tf(pg, 0), 4 * layer + 2 * R * h / 4e14, 1e-15);
    CHECK_NEAR(sc_prog_tf(pg, 7), 4 * layer + (2 * R * h * V + 5 * R * V) / 4e14, 1e-15);
    CHECK_NEAR(sc_prog_tw(pg, 3), 4 * 24 * R * h * h / 4e14, 1e-15);
    /* Parameters (18 bytes each): 4 layers of 12 h^2 + 13 h; the first and
     * last stages hold V h more. */
    double lp = 4 * (12 * h * h + 13 * h) * 18;
    CHECK_NEAR(sc_prog_param_bytes(pg, 3), lp, 1);
    CHECK_NEAR(sc_prog_param_bytes(pg, 7), lp + V * h * 18, 1);
    /* a unit: 34 R h per layer and the softmax statistics of its h / 128
     * heads (4 bytes each, docs/model.md#formulas), 32 layers over 8 */
    CHECK_NEAR(sc_prog_unit_bytes(pg), (34 * h + 4 * (h / 128)) * R * 4, 1);
    sc_prog_free(pg);
    pg = paper("1f1b", SC_VOCAB_V1, 256000, 8);
    CHECK_NEAR(sc_prog_vocab_cost(pg, SC_OP_S, 5), (4 * R * h * V + 5 * R * V) / 8 / 4e14, 1e-15);
    CHECK_NEAR(sc_prog_vocab_cost(pg, SC_OP_T, 5), 2 * R * h * V / 8 / 4e14, 1e-15);
    CHECK_NEAR(sc_prog_param_bytes(pg, 0), lp + 2 * V * h / 8 * 18, 1);
    CHECK_NEAR(sc_prog_param_bytes(pg, 7), sc_prog_param_bytes(pg, 0), 1);
    sc_prog_free(pg);
    /* redis moves layers off the last stage. */
    pg = paper("1f1b", SC_VOCAB_REDIS, 256000, 8);
    int total = 0;
    for (int st = 0; st < 8; st++)
        total += sc_prog_stage_layers(pg, st);
    CHECK(total == 32);
    CHECK(sc_prog_stage_layers(pg, 7) < 4 && sc_prog_stage_layers(pg, 1) > 4);
    sc_prog_free(pg);
    /* A vocabulary that does not split evenly. */
    pg = sc_prog_new(8, 8, 8);
    sc_prog_set_vocab(pg, SC_VOCAB_V2);
    sc_model_desc md = sc_model_desc_default();
    md.layers = 8, md.hidden = 64, md.seq = 16, md.batch = 1, md.vocab = 1001;
    CHECK(sc_prog_set_model(pg, &md) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "vocab_par = vocab-2 splits the vocabulary over the 8 devices, but "
                             "vocab = 1001 is not a multiple of 8");
    sc_prog_free(pg);
}

/* The paper's setting: every device equally busy with a split vocabulary,
 * the baseline's last device busier as V grows, the gains growing with V,
 * the memory within a few microbatches of 1F1B's, V-Half balanced. */
TEST(paper_setting)
{
    static const long Vs[] = {32000, 64000, 128000, 256000};
    double gain_prev = 0, last_prev = 0;
    for (int i = 0; i < 4; i++) {
        sc_sim *base = NULL, *v1 = NULL, *v2 = NULL;
        sc_prog *pb = paper("1f1b", SC_VOCAB_BASELINE, Vs[i], 128);
        sc_prog *p1 = paper("1f1b", SC_VOCAB_V1, Vs[i], 128);
        sc_prog *p2 = paper("1f1b", SC_VOCAB_V2, Vs[i], 128);
        CHECK(sc_simulate(pb, &base) == SC_OK && sc_simulate(p1, &v1) == SC_OK &&
              sc_simulate(p2, &v2) == SC_OK);
        if (base && v1 && v2) {
            CHECK(max_of(v1->busy, 8) / min_of(v1->busy, 8) < 1.001);
            CHECK(max_of(v2->busy, 8) / min_of(v2->busy, 8) < 1.001);
            CHECK(base->busy[7] > last_prev);
            last_prev = base->busy[7];
            double gain = base->makespan / v1->makespan;
            CHECK(gain > gain_prev && gain > 1.1);
            gain_prev = gain;
            CHECK(v1->bubble_rate < 0.06 && v2->bubble_rate < 0.06);
            /* 1F1B holds p = 8 units on d0; at most p + 3 with the split. */
            CHECK(v1->peak_mem[0] <= 8 + 3 && v2->peak_mem[0] <= 8 + 3);
        }
        sc_sim_free(base);
        sc_sim_free(v1);
        sc_sim_free(v2);
        sc_prog_free(pb);
        sc_prog_free(p1);
        sc_prog_free(p2);
    }
}

TEST(zbh1_and_vhalf)
{
    sc_prog *pg = paper("zb-h1", SC_VOCAB_V1, 128000, 32);
    sc_sim *sim = NULL;
    CHECK(sc_check(pg) == SC_OK && sc_simulate(pg, &sim) == SC_OK);
    if (sim)
        CHECK(max_of(sim->busy, 8) / min_of(sim->busy, 8) < 1.001);
    sc_sim_free(sim);
    sc_prog_free(pg);
    /* V-Half: a V block, then the vocabulary passes: memory and compute
     * balanced over the devices. */
    pg = sc_prog_new(8, 16, 32);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_OK);
    CHECK(sc_prog_set_vocab(pg, SC_VOCAB_V1) == SC_OK);
    sc_model_desc md = sc_model_desc_default();
    md.layers = 32, md.hidden = 3072, md.seq = 2048, md.batch = 1, md.vocab = 256000;
    CHECK(sc_prog_set_model(pg, &md) == SC_OK);
    double F[16], B[16], W[16];
    double first[2] = {0, 3 * 8 - 2}, delta[2] = {2, -1}, bf[2] = {6 * 8 + 3 - 2, 3 * 8 + 3 - 1},
           bd[2] = {-1, 2};
    sc_block_pattern(pg, first, delta, F);
    sc_block_pattern(pg, bf, bd, B);
    sc_block blk = {.off = {F, B, NULL, NULL}, .interval = 6, .slots = 1};
    CHECK(sc_block_place_w(pg, &blk, W) == SC_OK);
    blk.off[SC_OP_W] = W;
    CHECK(sc_block_unroll(pg, &blk) == SC_OK);
    CHECK(sc_vocab_place(pg, -1) == SC_OK);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        CHECK(max_of(sim->busy, 8) / min_of(sim->busy, 8) < 1.001);
        CHECK(max_of(sim->peak_mem, 8) / min_of(sim->peak_mem, 8) < 1.15);
        char *t = sc_render_timeline(pg, sim, 80, 0);
        CHECK_STR(t, "S output layer, T its weight grad");
        free(t);
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
}

int main(void)
{
    RUN(text_and_checks);
    RUN(misordered_is_a_cycle);
    RUN(lowered_collectives);
    RUN(timing);
    RUN(kept_matching);
    RUN(flop_model);
    RUN(paper_setting);
    RUN(zbh1_and_vhalf);
    return harness_done("vocab");
}
