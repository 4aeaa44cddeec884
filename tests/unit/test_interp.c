/*
 * test_interp.c — blocks, dataflow timing, lowering, rendering, memory and
 * random orders, against closed forms and hand-worked cases.
 *
 * Every expected value here is either a closed form from the papers (Zero
 * Bubble PP, Controllable Memory, Megatron interleaved 1F1B) evaluated for
 * the case at hand, or a small case worked out by hand in a comment. The
 * interpreter computes the other side by running the rule or block through
 * verify, lower and the discrete-event simulation.
 */
#include "compile.h"
#include "interp_util.h"

static int same_orders(const sc_prog *a, const sc_prog *b)
{
    for (int d = 0; d < sc_prog_devices(a); d++) {
        size_t na, nb;
        const sc_instr *x = sc_prog_order(a, d, &na), *y = sc_prog_order(b, d, &nb);
        if (na != nb)
            return 0;
        for (size_t k = 0; k < na; k++)
            if (x[k].op != y[k].op || x[k].stage != y[k].stage || x[k].mb != y[k].mb)
                return 0;
    }
    return 1;
}

/* Peak memory predicted from lifespans: ceil(lifespan / T) units, capped by
 * m (one stage per device, one unit per microbatch). */
static double predicted_peak(double f_start, double free_end, double T, int m)
{
    double k = ceil((free_end - f_start) / T - 1e-9);
    return k < m ? k : m;
}

TEST(block_1f1b)
{
    const double cost[3][3] = {{1, 1, 1}, {1, 2, 1}, {0.5, 1, 0.25}};
    for (int c = 0; c < 3; c++) {
        double tf = cost[c][0], tb = cost[c][1], tw = cost[c][2], T = tf + tb + tw;
        for (int P = 1; P <= 5; P++) {
            for (int m = 1; m <= 6; m++) {
                sc_prog *blk_pg = sc_prog_new(P, P, m), *rule_pg = sc_prog_new(P, P, m);
                CHECK(blk_pg && rule_pg);
                if (!blk_pg || !rule_pg) {
                    sc_prog_free(blk_pg);
                    sc_prog_free(rule_pg);
                    continue;
                }
                CHECK(sc_prog_set_cost(blk_pg, -1, tf, tb, tw) == SC_OK);
                CHECK(sc_prog_set_cost(rule_pg, -1, tf, tb, tw) == SC_OK);
                double *offF = malloc((size_t)P * sizeof(double));
                double *offBW = malloc((size_t)P * sizeof(double));
                for (int s = 0; s < P; s++) {
                    offF[s] = s * tf;
                    offBW[s] = P * tf + (P - 1 - s) * (tb + tw);
                }
                sc_block blk = {.off = {offF, NULL, NULL, offBW}, .interval = T};
                CHECK(sc_block_check(blk_pg, &blk) == SC_OK);
                CHECK(sc_block_unroll(blk_pg, &blk) == SC_OK);
                CHECK(sc_rule_fill(rule_pg, "1f1b") == SC_OK);
                CHECK(same_orders(blk_pg, rule_pg));
                sc_sim *a = NULL, *b = NULL;
                CHECK(sc_simulate(blk_pg, &a) == SC_OK);
                CHECK(sc_simulate(rule_pg, &b) == SC_OK);
                if (a && b) {
                    CHECK_NEAR(a->makespan, b->makespan, EPS);
                    /* The squeeze of the block: microbatch m-1 of stage 0
                     * starts its BW at offBW[0] + (m-1)T in the block; the
                     * dataflow may only start it earlier or at that time. */
                    CHECK(a->makespan <= offBW[0] + (m - 1) * T + tb + tw + EPS);
                    for (int d = 0; d < P; d++)
                        CHECK_NEAR(a->peak_mem[d],
                                   predicted_peak(offF[d], offBW[d] + tb + tw, T, m), EPS);
                }
                sc_sim_free(a);
                sc_sim_free(b);
                free(offF);
                free(offBW);
                sc_prog_free(blk_pg);
                sc_prog_free(rule_pg);
            }
        }
    }
}

/* Split backward, unit costs, T = 3: F at s, B at P + 2(P-1-s), W right after
 * B. Residues mod 3: F = s, B = s+1, W = s+2: no collision. The orders are
 * 1F1B's with every BW split into B then W. The timing is not: the gradient
 * leaves a device after B, without waiting for W. The last device is the
 * critical one: the first F reaches it after (P-1) T_F, it then works
 * without a gap, m (T_F+T_B+T_W), and the last B travels back up
 * (P-1) T_B while the last device runs its final W; device 0 ends with its
 * own last W: (P-1) T_F + m(T_F+T_B+T_W) - T_W + (P-1) T_B + T_W, that is
 * (P-1)(T_F+T_B) + m(T_F+T_B+T_W) = 2(P-1) + 3m, against 1F1B's
 * 3(P-1) + 3m: (P-1) T_W shorter. A second
 * block delays W of stage s by s intervals (ZB-H1's shape): the lifespan of
 * every stage is then 3P (F at s, W ends at 3P + s), so the peak is P units
 * on every device for m >= P. */
TEST(block_split)
{
    for (int P = 1; P <= 5; P++) {
        for (int m = 1; m <= 7; m++) {
            sc_prog *pg = sc_prog_new(P, P, m), *ref = sc_prog_new(P, P, m);
            CHECK(pg && ref);
            if (!pg || !ref) {
                sc_prog_free(pg);
                sc_prog_free(ref);
                continue;
            }
            double *f = malloc((size_t)P * sizeof(double)), *b = malloc((size_t)P * sizeof(double)),
                   *w = malloc((size_t)P * sizeof(double));
            for (int s = 0; s < P; s++) {
                f[s] = s;
                b[s] = P + 2 * (P - 1 - s);
                w[s] = b[s] + 1;
            }
            sc_block blk = {.off = {f, b, w, NULL}, .interval = 3};
            CHECK(sc_block_unroll(pg, &blk) == SC_OK);
            /* Expected: the 1F1B rule's orders with BW -> B, W. */
            CHECK(sc_rule_fill(ref, "1f1b") == SC_OK);
            for (int d = 0; d < P; d++) {
                size_t n, nr;
                const sc_instr *o = sc_prog_order(pg, d, &n), *r = sc_prog_order(ref, d, &nr);
                size_t k = 0;
                int ok = 1;
                for (size_t j = 0; j < nr && ok; j++) {
                    if (r[j].op == SC_OP_BW) {
                        ok = k + 1 < n && o[k].op == SC_OP_B && o[k + 1].op == SC_OP_W &&
                             o[k].mb == r[j].mb && o[k + 1].mb == r[j].mb;
                        k += 2;
                    } else {
                        ok = k < n && o[k].op == r[j].op && o[k].mb == r[j].mb;
                        k++;
                    }
                }
                CHECK(ok && k == n);
            }
            double mk_ref = sim_makespan(ref), mk = sim_makespan(pg);
            CHECK_NEAR(mk_ref, 3.0 * (m + P - 1), EPS);
            CHECK_NEAR(mk, 2.0 * (P - 1) + 3.0 * m, EPS);
            CHECK_NEAR(mk_ref - mk, (P - 1) * 1.0, EPS);
            CHECK_NEAR(dataflow_makespan(pg), mk, EPS);

            /* W of stage s delayed by s intervals. */
            for (int s = 0; s < P; s++)
                w[s] = b[s] + 1 + 3.0 * s;
            CHECK(sc_block_unroll(pg, &blk) == SC_OK);
            sc_sim *sim = NULL;
            CHECK(sc_simulate(pg, &sim) == SC_OK);
            if (sim)
                for (int d = 0; d < P; d++) {
                    CHECK_NEAR(sim->peak_mem[d], predicted_peak(f[d], w[d] + 1, 3, m), EPS);
                    CHECK_NEAR(sim->peak_mem[d], m < P ? m : P, EPS);
                }
            sc_sim_free(sim);
            free(f);
            free(b);
            free(w);
            sc_prog_free(pg);
            sc_prog_free(ref);
        }
    }
}

/* ---- dataflow timing --------------------------------------------------------
 * Checks the definition on every pass: it lasts its cost, starts no earlier
 * than its device is free and its dependency is done (+ T_comm across
 * devices), and exactly at the later of the two. */
static void check_dataflow_definition(sc_prog *pg)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    size_t n = total_passes(pg), SM = (size_t)S * (size_t)m;
    double *start = malloc(n * sizeof(double)), *end = malloc(n * sizeof(double));
    double *endF = malloc(SM * sizeof(double)), *endB = malloc(SM * sizeof(double));
    CHECK(sc_dataflow(pg, start, end, NULL) == SC_OK);
    size_t base = 0;
    for (int d = 0; d < P; d++) { /* ends of F and of B/BW, by (stage, mb) */
        size_t k;
        const sc_instr *o = sc_prog_order(pg, d, &k);
        for (size_t j = 0; j < k; j++) {
            size_t i = (size_t)o[j].stage * (size_t)m + (size_t)o[j].mb;
            if (o[j].op == SC_OP_F)
                endF[i] = end[base + j];
            else if (o[j].op != SC_OP_W)
                endB[i] = end[base + j];
        }
        base += k;
    }
    int bad = 0;
    base = 0;
    for (int d = 0; d < P; d++) {
        size_t k;
        const sc_instr *o = sc_prog_order(pg, d, &k);
        double free_at = 0;
        for (size_t j = 0; j < k; j++) {
            int s = o[j].stage, mb = o[j].mb, ds = -1;
            double cost = o[j].op == SC_OP_F ? sc_prog_tf(pg, s)
                          : o[j].op == SC_OP_B ? sc_prog_tb(pg, s)
                          : o[j].op == SC_OP_W ? sc_prog_tw(pg, s)
                                               : sc_prog_tb(pg, s) + sc_prog_tw(pg, s);
            double ready = free_at;
            if (o[j].op == SC_OP_F && s > 0)
                ds = s - 1;
            else if (o[j].op != SC_OP_F && o[j].op != SC_OP_W && s + 1 < S)
                ds = s + 1;
            if (ds >= 0) {
                const double *tab = o[j].op == SC_OP_F ? endF : endB;
                double r = tab[(size_t)ds * (size_t)m + (size_t)mb] +
                           (sc_prog_stage_device(pg, ds) != d ? sc_prog_tcomm(pg) : 0);
                if (r > ready)
                    ready = r;
            } else if (o[j].op != SC_OP_F) { /* last stage's B after its F; W after B */
                const double *tab = o[j].op == SC_OP_W ? endB : endF;
                double r = tab[(size_t)s * (size_t)m + (size_t)mb];
                if (r > ready)
                    ready = r;
            }
            bad += fabs(start[base + j] - ready) > EPS;
            bad += fabs(end[base + j] - start[base + j] - cost) > EPS;
            free_at = end[base + j];
        }
        base += k;
    }
    CHECK(bad == 0);
    free(start);
    free(end);
    free(endF);
    free(endB);
}

TEST(dataflow)
{
    for (int i = 0; i < NPS; i++) {
        int p = PS[i], ms[4];
        ms_for(p, ms);
        for (int j = 0; j < 4; j++) {
            sc_prog *pg = sc_prog_new(p, p, ms[j]);
            CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
            CHECK(sc_verify_passes(pg) == SC_OK);
            double mk = dataflow_makespan(pg);
            CHECK_NEAR(mk, 3.0 * (ms[j] + p - 1), EPS);
            CHECK_NEAR(sim_makespan(pg), mk, EPS);
            check_dataflow_definition(pg);
            CHECK(sc_prog_set_comm(pg, 0.25) == SC_OK);
            check_dataflow_definition(pg);
            CHECK(sc_rule_fill(pg, "zb-h1") == SC_OK);
            check_dataflow_definition(pg);
            sc_prog_free(pg);
        }
    }
    /* Interleaved (several stages per device: local hand-offs), unit costs:
     * the simulation reaches the dataflow timing. */
    sc_prog *pg = sc_prog_new(4, 8, 8);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_OK);
    check_dataflow_definition(pg);
    CHECK_NEAR(sim_makespan(pg), dataflow_makespan(pg), EPS);
    /* Unequal per-stage costs: the dataflow timing is a lower bound of the
     * simulation (the replay adds group constraints, never removes one).
     * Here the bound is not reached (44.75 against 44.375): a RECV that a
     * pass needs shares its group with a SEND whose peer posts later; see
     * the report on the lowering. */
    for (int s = 0; s < 8; s++)
        CHECK(sc_prog_set_cost(pg, s, 0.5 + 0.125 * s, 1, 0.25) == SC_OK);
    check_dataflow_definition(pg);
    CHECK(sim_makespan(pg) >= dataflow_makespan(pg) - EPS);
    sc_prog_free(pg);
}

/* ---- lowering ---------------------------------------------------------------- */
static int count_op(const sc_prog *pg, int op)
{
    int c = 0;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++)
            c += v[k].op == op;
    }
    return c;
}

/* The stream of every device holds its order's passes in the same order. */
static int stream_keeps_order(const sc_prog *pg)
{
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n, no, k = 0;
        const sc_instr *v = sc_prog_stream(pg, d, &n), *o = sc_prog_order(pg, d, &no);
        for (size_t j = 0; j < n; j++)
            if (sc_op_is_compute(v[j].op)) {
                if (k >= no || v[j].op != o[k].op || v[j].stage != o[k].stage ||
                    v[j].mb != o[k].mb)
                    return 0;
                k++;
            }
        if (k != no)
            return 0;
    }
    return 1;
}

TEST(lowering)
{
    for (int i = 0; i < NPS; i++) {
        int p = PS[i], ms[4];
        ms_for(p, ms);
        for (int j = 0; j < 4; j++) {
            int m = ms[j];
            sc_prog *pg = sc_prog_new(p, p, m);
            CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
            CHECK(!sc_prog_is_lowered(pg));
            CHECK(sc_check(pg) == SC_OK);
            CHECK(sc_prog_is_lowered(pg));
            for (int d = 0; d < p; d++) {
                size_t n;
                const sc_instr *v = sc_prog_stream(pg, d, &n);
                CHECK(n >= 2 && v[n - 2].op == SC_OP_REDUCE && v[n - 1].op == SC_OP_OPTIM);
            }
            /* Each of the p-1 boundaries carries one activation down and one
             * gradient up per microbatch. */
            CHECK(count_op(pg, SC_OP_SEND) == 2 * (p - 1) * m);
            CHECK(count_op(pg, SC_OP_RECV) == 2 * (p - 1) * m);
            CHECK(count_op(pg, SC_OP_REDUCE) == p);
            CHECK(stream_keeps_order(pg));
            CHECK(sc_prog_total_instructions(pg) ==
                  (size_t)(2 * p * m + 4 * (p - 1) * m + 2 * p));
            if (j == 0) {
                char *dump = sc_render_dump(pg);
                CHECK_STR(dump, "SEND act s1 mb0 -> d1");
                CHECK_STR(dump, "RECV act s1 mb0 <- d0");
                CHECK_STR(dump, "SEND grad s0 mb0 -> d0");
                CHECK_STR(dump, "REDUCE");
                free(dump);
            }
            /* Changing the orders drops the lowering. */
            sc_prog_clear_order(pg, 0);
            CHECK(!sc_prog_is_lowered(pg));
            sc_prog_free(pg);
        }
    }
    /* Interleaved: every stage boundary crosses devices (loop placement). */
    sc_prog *pg = sc_prog_new(4, 12, 8);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    CHECK(count_op(pg, SC_OP_SEND) == 2 * 11 * 8);
    CHECK(count_op(pg, SC_OP_RECV) == 2 * 11 * 8);
    CHECK(stream_keeps_order(pg));
    sc_prog_free(pg);
    /* V placement: stages P-1 and P share device P-1, a local hand-off with
     * no transfer; the other 2P-2 boundaries cross. A GPipe-like order in
     * dependency order: all F (stage ascending), then all BW (descending). */
    int P = 3, m = 2;
    pg = sc_prog_new(P, 2 * P, m);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_OK);
    CHECK(sc_prog_stage_device(pg, P - 1) == P - 1 && sc_prog_stage_device(pg, P) == P - 1);
    CHECK(sc_prog_stage_device(pg, 2 * P - 1) == 0);
    CHECK(sc_prog_chunks(pg, 0) == 2 && sc_prog_stage_of(pg, 0, 1) == 2 * P - 1);
    CHECK(sc_prog_chunk(pg, 2 * P - 1) == 1);
    for (int s = 0; s < 2 * P; s++)
        for (int mb = 0; mb < m; mb++)
            CHECK(sc_prog_push(pg, sc_prog_stage_device(pg, s), SC_OP_F, s, mb) == SC_OK);
    for (int s = 2 * P - 1; s >= 0; s--)
        for (int mb = 0; mb < m; mb++)
            CHECK(sc_prog_push(pg, sc_prog_stage_device(pg, s), SC_OP_BW, s, mb) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    CHECK(count_op(pg, SC_OP_SEND) == 2 * (2 * P - 2) * m);
    CHECK(count_op(pg, SC_OP_RECV) == 2 * (2 * P - 2) * m);
    sc_prog_free(pg);
}

/* ---- timeline ------------------------------------------------------------------ */
TEST(timeline)
{
    int p = 4, m = 8;
    sc_prog *pg = sc_prog_new(p, p, m);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (!sim) {
        sc_prog_free(pg);
        return;
    }
    char *tl = sc_render_timeline(pg, sim, 200, 0);
    CHECK(tl != NULL);
    CHECK(tl && strncmp(tl, "d0", 2) == 0);
    CHECK(tl && strchr(tl, 'F') && strchr(tl, 'X'));
    CHECK(tl && !strchr(tl, '\033'));
    int rows = 0, lines = 0;
    for (const char *l = tl; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        lines++;
        rows += l[0] == 'd';
    }
    CHECK(rows == p);
    CHECK(lines == p + 1); /* plus the legend */
    /* Makespan 3(m+p-1) = 33 columns of the shortest pass (F = 1): device 0
     * is busy 3m = 24 of them; the row is 'F' for 8 columns, 'X' for 16. */
    if (tl) {
        const char *bar = strchr(tl, '|');
        int f = 0, x = 0, dot = 0, cols = 0;
        for (const char *c = bar + 1; *c != '|'; c++, cols++)
            f += *c == 'F', x += *c == 'X', dot += *c == '.';
        CHECK(cols == 3 * (m + p - 1));
        CHECK(f == m && x == 2 * m && dot == 3 * (p - 1));
    }
    free(tl);
    tl = sc_render_timeline(pg, sim, 200, 1);
    CHECK_STR(tl, "\033[");
    free(tl);
    sc_sim_free(sim);
    sc_prog_free(pg);
}

/* ---- memory with w_keep ------------------------------------------------------
 * ZB-H1, p = 2, m = 2, w_keep = 0.5 (B frees half, W the other half):
 *   d0: F0 F1 B0 W0 B1 W1    memory 1, 2, 1.5, 1, 0.5, 0    peak 2
 *   d1: F0 B0 F1 B1 W0 W1    memory 1, 0.5, 1.5, 1, 0.5, 0  peak 1.5
 * (with w_keep = 1, d1 would hold 1, 1, 2, 2, 1, 0: peak 2).
 * In general device d of ZB-H1 has done p-d+j forwards and j backwards
 * after the F of step j < d, holding p-d + k(j+1) units at its highest
 * (k = w_keep), and stays there once its W start: peak p - (1-k) d. */
TEST(w_keep)
{
    sc_prog *pg = sc_prog_new(2, 2, 2);
    CHECK(sc_prog_set_w_keep(pg, 0.5) == SC_OK);
    CHECK_NEAR(sc_prog_w_keep(pg), 0.5, 0);
    CHECK(sc_rule_fill(pg, "zb-h1") == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        CHECK_NEAR(sim->peak_mem[0], 2.0, EPS);
        CHECK_NEAR(sim->peak_mem[1], 1.5, EPS);
        for (int d = 0; d < 2; d++) /* everything freed at the end */
            CHECK_NEAR(sim->mem[sim->offset[d + 1] - 1], 0.0, EPS);
    }
    sc_sim_free(sim);
    CHECK(sc_prog_set_w_keep(pg, 1.0) == SC_OK);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim)
        CHECK_NEAR(sim->peak_mem[1], 2.0, EPS);
    sc_sim_free(sim);
    sc_prog_free(pg);

    const double keeps[] = {0, 0.25, 0.5, 1};
    for (int i = 1; i < NPS; i++) {
        int p = PS[i], m = 2 * p;
        for (int k = 0; k < 4; k++) {
            pg = sc_prog_new(p, p, m);
            CHECK(sc_prog_set_w_keep(pg, keeps[k]) == SC_OK);
            sim = run_rule(pg, "zb-h1");
            if (sim)
                for (int d = 0; d < p; d++)
                    CHECK_NEAR(sim->peak_mem[d], p - (1 - keeps[k]) * d, EPS);
            sc_sim_free(sim);
            /* BW frees everything at once: w_keep does not matter. */
            sim = run_rule(pg, "1f1b");
            if (sim)
                for (int d = 0; d < p; d++)
                    CHECK_NEAR(sim->peak_mem[d], p - d, EPS);
            sc_sim_free(sim);
            sc_prog_free(pg);
        }
    }
    /* Memory per (stage, microbatch) scales the units. */
    pg = sc_prog_new(4, 4, 8);
    CHECK(sc_prog_set_mem(pg, -1, 2.5) == SC_OK);
    sim = run_rule(pg, "1f1b");
    if (sim)
        for (int d = 0; d < 4; d++)
            CHECK_NEAR(sim->peak_mem[d], 2.5 * (4 - d), EPS);
    sc_sim_free(sim);
    sc_prog_free(pg);
}

/* ---- random orders -------------------------------------------------------------
 * Orders drawn at random from all orders consistent with one global
 * dependency order (so no cross-device cycle), on random placements, with
 * random costs (zero included), T_comm 0 or 0.5, split or fused backward.
 * Each must check; the simulation must agree with what follows from the
 * orders alone: busy time = sum of the pass costs of a device, memory =
 * the running sum of the memory model along the order, 2m transfers per
 * stage boundary that crosses devices, the passes in the given order; and
 * the dataflow timing is a lower bound of the simulated one. */
static unsigned long long rng_state = 0x9E3779B97F4A7C15ULL;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)((rng_state >> 11) % n);
}

TEST(random_orders)
{
    int failures = 0;
    for (int it = 0; it < 1500 && failures < 5; it++) {
        int P = 1 + (int)rnd(4), S = P * (1 + (int)rnd(3)), m = 1 + (int)rnd(4);
        int split = (int)rnd(2), place = (int)rnd(3);
        sc_prog *pg = sc_prog_new(P, S, m);
        if (place == 1 && S == 2 * P)
            CHECK(sc_prog_set_placement(pg, SC_PLACE_V, NULL) == SC_OK);
        else if (place == 2) { /* random table, every device used */
            int *tab = malloc((size_t)S * sizeof(int));
            for (int x = 0; x < S; x++)
                tab[x] = x < P ? x : (int)rnd((unsigned)P);
            for (int x = S - 1; x > 0; x--) {
                int y = (int)rnd((unsigned)x + 1), t = tab[x];
                tab[x] = tab[y];
                tab[y] = t;
            }
            CHECK(sc_prog_set_placement(pg, SC_PLACE_TABLE, tab) == SC_OK);
            free(tab);
        }
        int bad = 0;
        for (int x = 0; x < S; x++)
            bad += sc_prog_set_cost(pg, x, 0.5 * rnd(4), 0.5 * rnd(4), 0.5 * rnd(4)) != SC_OK;
        bad += sc_prog_set_comm(pg, 0.5 * rnd(2)) != SC_OK;
        bad += sc_prog_set_w_keep(pg, 0.25 * rnd(5)) != SC_OK;
        /* Draw passes whose dependencies are done, at random. */
        size_t SM = (size_t)S * (size_t)m;
        char *done = calloc(3 * SM, 1); /* F, B (or BW), W */
        int *cand = malloc(3 * SM * sizeof(int));
        size_t total = SM * (split ? 3 : 2);
        for (size_t cnt = 0; cnt < total; cnt++) {
            int nc = 0;
            for (int x = 0; x < S; x++)
                for (int mb = 0; mb < m; mb++) {
                    size_t i = (size_t)x * (size_t)m + (size_t)mb;
                    if (!done[i] && (x == 0 || done[i - (size_t)m]))
                        cand[nc++] = (int)i;
                    if (done[i] && !done[SM + i] && (x == S - 1 || done[SM + i + (size_t)m]))
                        cand[nc++] = (int)(SM + i);
                    if (split && done[SM + i] && !done[2 * SM + i])
                        cand[nc++] = (int)(2 * SM + i);
                }
            int c = cand[rnd((unsigned)nc)], kind = c / (int)SM, i = c % (int)SM;
            done[c] = 1;
            int op = kind == 0 ? SC_OP_F : kind == 2 ? SC_OP_W : split ? SC_OP_B : SC_OP_BW;
            int x = i / m;
            bad += sc_prog_push(pg, sc_prog_stage_device(pg, x), op, x, i % m) != SC_OK;
        }
        free(done);
        free(cand);
        sc_sim *sim = NULL;
        sc_status st = sc_simulate(pg, &sim);
        CHECK(st == SC_OK);
        if (st) {
            fprintf(stderr, "  random order %d (P=%d S=%d m=%d): %s\n", it, P, S, m, sc_errmsg(pg));
            failures++;
            sc_prog_free(pg);
            continue;
        }
        for (int d = 0; d < P; d++) {
            size_t n;
            const sc_instr *o = sc_prog_order(pg, d, &n);
            double busy = 0, cur = 0, peak = 0, k = sc_prog_w_keep(pg);
            for (size_t j = 0; j < n; j++) {
                int x = o[j].stage;
                double u = sc_prog_mem(pg, x);
                switch (o[j].op) {
                case SC_OP_F: busy += sc_prog_tf(pg, x), cur += u; break;
                case SC_OP_B: busy += sc_prog_tb(pg, x), cur -= (1 - k) * u; break;
                case SC_OP_W: busy += sc_prog_tw(pg, x), cur -= k * u; break;
                default: busy += sc_prog_tb(pg, x) + sc_prog_tw(pg, x), cur -= u; break;
                }
                if (cur > peak)
                    peak = cur;
            }
            bad += fabs(sim->busy[d] - busy) > EPS;
            bad += fabs(sim->peak_mem[d] - peak) > EPS;
        }
        int crossing = 0;
        for (int x = 0; x + 1 < S; x++)
            crossing += sc_prog_stage_device(pg, x) != sc_prog_stage_device(pg, x + 1);
        bad += count_op(pg, SC_OP_SEND) != 2 * m * crossing;
        bad += count_op(pg, SC_OP_RECV) != 2 * m * crossing;
        bad += !stream_keeps_order(pg);
        bad += sim->makespan < dataflow_makespan(pg) - EPS;
        CHECK(bad == 0);
        failures += bad != 0;
        sc_sim_free(sim);
        sc_prog_free(pg);
    }
}

/* ---- the worked example of ir.h, and idempotence ---------------------------- */
TEST(worked_example)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    CHECK(sc_prog_set_placement(pg, SC_PLACE_LOOP, NULL) == SC_OK);
    CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 0) == SC_OK);
    CHECK(sc_prog_push(pg, 1, SC_OP_F, 1, 0) == SC_OK);
    CHECK(sc_prog_push(pg, 1, SC_OP_BW, 1, 0) == SC_OK);
    CHECK(sc_prog_push(pg, 0, SC_OP_BW, 0, 0) == SC_OK);
    CHECK(sc_check(pg) == SC_OK);
    size_t n1 = sc_prog_total_instructions(pg);
    CHECK(sc_check(pg) == SC_OK);
    CHECK(sc_prog_total_instructions(pg) == n1);
    /* 4 passes + SEND/RECV act + SEND/RECV grad + 2 x (REDUCE, OPTIM). */
    CHECK(n1 == 4 + 4 + 4);
    CHECK_NEAR(sim_makespan(pg), 6.0, EPS); /* F 1 + F 1 + BW 2 + BW 2 */
    char buf[64];
    sc_instr in = {.op = SC_OP_RECV, .dir = SC_DIR_GRAD, .stage = 3, .mb = 12, .peer = 4};
    sc_instr_format(&in, buf, sizeof buf);
    CHECK_STR(buf, "RECV grad s3 mb12 <- d4");
    /* The names written without snprintf truncate as snprintf does. */
    char small[8];
    sc_instr_format(&in, small, sizeof small);
    CHECK_STR(small, "RECV gr"); /* the first 7 bytes, as snprintf keeps them */
    sc_instr f = {.op = SC_OP_F, .stage = 10, .mb = -1};
    sc_instr_format(&f, buf, sizeof buf);
    CHECK_STR(buf, "F s10 mb-1");
    sc_instr_format(&f, small, 6);
    CHECK_STR(small, "F s10");
    sc_prog_free(pg);
}

int main(void)
{
    RUN(block_1f1b);
    RUN(block_split);
    RUN(dataflow);
    RUN(lowering);
    RUN(timeline);
    RUN(w_keep);
    RUN(random_orders);
    RUN(worked_example);
    return harness_done("interp");
}
