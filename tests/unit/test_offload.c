/*
 * test_offload.c — activation offload (offload.h): the semantics of
 * OFFLOAD, DROP and RELOAD in the replay (timing, memory, host memory),
 * the verifier's checks of hand-written streams, and the plan of every
 * policy: no pass later than without offload, the peak lower, refusals that
 * name the record and the shortfall, budget backing off, rounding to parts.
 */
#include "compile.h"
#include "harness.h"
#include "ir/ir.h"
#include "ir/offload_cfg.h"
#include "formats/render.h"
#include "schedule/rules.h"
#include "sim/sim.h"
#include "check/verify.h"

#include <math.h>
#include <stdlib.h>

static sc_instr C(int op, int s, int mb)
{
    return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .peer = -1};
}
static sc_instr H(int op, int s, int mb, double q)
{
    return (sc_instr){.op = (uint8_t)op, .stage = s, .mb = mb, .frac = (int32_t)(q * SC_FRAC_ONE)};
}
static sc_instr END(int op) { return (sc_instr){.op = (uint8_t)op, .stage = -1, .mb = -1, .peer = -1}; }

/* One device, one stage, two microbatches: F0 F1 BW0 BW1, with record 0
 * moved as `v` says (NULL: the order of the test's choice). */
static sc_prog *one_device(const sc_instr *v, size_t n, double ratio)
{
    sc_prog *pg = sc_prog_new(1, 1, 2);
    sc_offload_cfg c = {.policy = SC_OFFLOAD_NONE, .ratio = ratio};
    sc_prog_set_offload(pg, &c);
    for (size_t i = 0; i < n; i++)
        sc_prog_push_stream(pg, 0, v[i]);
    sc_prog_push_stream(pg, 0, END(SC_OP_REDUCE));
    sc_prog_push_stream(pg, 0, END(SC_OP_OPTIM));
    return pg;
}

TEST(replay_semantics)
{
    /* tf = tb = tw = 1 (one stage holds the device's share): one unit moves
     * in ratio * 3 = 1.5. F0 [0,1]; OFFLOAD copy [1, 2.5]; F1 [1,2]; DROP
     * waits until 2.5; RELOAD copy [2.5, 4]; BW0 waits until 4. */
    sc_instr v[] = {C(SC_OP_F, 0, 0), H(SC_OP_OFFLOAD, 0, 0, 1), C(SC_OP_F, 0, 1),
                    H(SC_OP_DROP, 0, 0, 1), H(SC_OP_RELOAD, 0, 0, 1), C(SC_OP_BW, 0, 0),
                    C(SC_OP_BW, 0, 1)};
    sc_prog *pg = one_device(v, 7, 0.5);
    sc_sim *sim = NULL;
    CHECK(sc_check(pg) == SC_OK);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        CHECK_NEAR(sim->t0[1], 1, 1e-12);   /* OFFLOAD's copy */
        CHECK_NEAR(sim->t1[1], 2.5, 1e-12);
        CHECK_NEAR(sim->t1[3], 2.5, 1e-12); /* DROP waited */
        CHECK_NEAR(sim->t0[4], 2.5, 1e-12); /* RELOAD's copy */
        CHECK_NEAR(sim->t1[4], 4, 1e-12);
        CHECK_NEAR(sim->t0[5], 4, 1e-12);   /* BW0 waited for it */
        CHECK_NEAR(sim->makespan, 8, 1e-12);
        /* Memory: F0 1, F1 2, DROP 1, RELOAD 2, BW0 1, BW1 0. */
        CHECK_NEAR(sim->mem[2], 2, 1e-12);
        CHECK_NEAR(sim->mem[3], 1, 1e-12);
        CHECK_NEAR(sim->mem[4], 2, 1e-12);
        CHECK_NEAR(sim->peak_mem[0], 2, 1e-12);
        /* Host: OFFLOAD +1, BW0 -1. */
        CHECK(sim->host != NULL);
        CHECK_NEAR(sim->host[1], 1, 1e-12);
        CHECK_NEAR(sim->host[5], 0, 1e-12);
        CHECK_NEAR(sim->host_peak[0], 1, 1e-12);
        CHECK_NEAR(sim->link_busy[0], 1.5, 1e-12);
        CHECK_NEAR(sim->link_busy[1], 1.5, 1e-12);
        CHECK_NEAR(sim->moved, 1, 1e-12);
        double u[4];
        sc_sim_link_usage(pg, sim, 0, 0, 4, u); /* slices of 2: [1, 2.5] */
        CHECK_NEAR(u[0], 0.5, 1e-12);
        CHECK_NEAR(u[1], 0.25, 1e-12);
        CHECK_NEAR(u[2] + u[3], 0, 1e-12);
    }
    sc_sim_free(sim);
    sc_prog_free(pg);
    /* Half of the record moves in half the time. */
    sc_instr h[] = {C(SC_OP_F, 0, 0), H(SC_OP_OFFLOAD, 0, 0, 0.5), C(SC_OP_F, 0, 1),
                    H(SC_OP_DROP, 0, 0, 0.5), H(SC_OP_RELOAD, 0, 0, 0.5), C(SC_OP_BW, 0, 0),
                    C(SC_OP_BW, 0, 1)};
    pg = one_device(h, 7, 0.5);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        CHECK_NEAR(sim->t1[1], 1.75, 1e-12);
        CHECK_NEAR(sim->mem[3], 1.5, 1e-12);
        CHECK_NEAR(sim->peak_mem[0], 2, 1e-12);
    }
    char *dump = sc_render_dump(pg);
    CHECK_STR(dump, "OFFLOAD s0 mb0 50%");
    CHECK_STR(dump, "DROP s0 mb0 50%");
    free(dump);
    sc_sim_free(sim);
    sc_prog_free(pg);
}

TEST(recompute_semantics)
{
    /* F0 [0,1], DROP frees it at once, F1 [1,2], R0 (half: 0.5 of F) [2,2.5]
     * allocates the half again, BW0 [2.5,4.5], BW1 [4.5,6.5]. */
    sc_instr v[] = {C(SC_OP_F, 0, 0), H(SC_OP_DROP, 0, 0, 0.5), C(SC_OP_F, 0, 1),
                    H(SC_OP_R, 0, 0, 0.5), C(SC_OP_BW, 0, 0), C(SC_OP_BW, 0, 1)};
    sc_prog *pg = one_device(v, 6, 0.5);
    sc_sim *sim = NULL;
    CHECK(sc_check(pg) == SC_OK);
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (sim) {
        CHECK_NEAR(sim->t1[1], 1, 1e-12);   /* the DROP waits for nothing */
        CHECK_NEAR(sim->t0[3], 2, 1e-12);   /* R: half of F's time */
        CHECK_NEAR(sim->t1[3], 2.5, 1e-12);
        CHECK_NEAR(sim->makespan, 6.5, 1e-12);
        CHECK_NEAR(sim->mem[1], 0.5, 1e-12);
        CHECK_NEAR(sim->mem[2], 1.5, 1e-12);
        CHECK_NEAR(sim->mem[3], 2, 1e-12);
        CHECK(sim->host == NULL);            /* nothing went to the host */
        CHECK_NEAR(sim->busy[0], 6.5, 1e-12); /* R is work */
    }
    char *dump = sc_render_dump(pg);
    CHECK_STR(dump, "R s0 mb0 50%");
    free(dump);
    sc_sim_free(sim);
    sc_prog_free(pg);
}

/* A stream of the one-device program that the verifier must refuse with
 * `msg`. */
static void refused(const sc_instr *v, size_t n, const char *msg)
{
    sc_prog *pg = one_device(v, n, 0.5);
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), msg);
    sc_prog_free(pg);
}

TEST(verifier_refuses)
{
    sc_instr f0 = C(SC_OP_F, 0, 0), f1 = C(SC_OP_F, 0, 1), b0 = C(SC_OP_BW, 0, 0),
             b1 = C(SC_OP_BW, 0, 1), o = H(SC_OP_OFFLOAD, 0, 0, 1), d = H(SC_OP_DROP, 0, 0, 1),
             r = H(SC_OP_RELOAD, 0, 0, 1);
    sc_instr reload_only[] = {f0, f1, r, b0, b1};
    refused(reload_only, 5, "d0 #2 (RELOAD s0 mb0 100%) reloads what was not offloaded");
    /* A DROP with no OFFLOAD drops for recomputation: an R must follow. */
    sc_instr drop_only[] = {f0, f1, d, b0, b1};
    refused(drop_only, 5, "d0 #3 (BW s0 mb0) reads s0 mb0, which is dropped for recomputation "
                          "(#2) and not recomputed (R) before it");
    sc_instr rc_no_drop[] = {f0, f1, H(SC_OP_R, 0, 0, 1), b0, b1};
    refused(rc_no_drop, 5, "d0 #2 (R s0 mb0 100%) recomputes what was not dropped for it");
    sc_instr rc_frac[] = {f0, d, f1, H(SC_OP_R, 0, 0, 0.5), b0, b1};
    refused(rc_frac, 6, "recomputes what was not dropped for it");
    sc_instr rc_reload[] = {f0, d, f1, r, b0, b1};
    refused(rc_reload, 6, "reloads what was not offloaded (no OFFLOAD of s0 mb0");
    sc_instr rc_after_b[] = {f0, f1, b0, d, b1};
    refused(rc_after_b, 5, "drops s0 mb0 for recomputation, but its F does not come before it, "
                           "or its B does");
    sc_instr before_f[] = {o, f0, f1, b0, b1};
    refused(before_f, 5, "d0 #0 (OFFLOAD s0 mb0 100%): F s0 mb0 does not come before it");
    sc_instr no_reload[] = {f0, o, f1, d, b0, b1};
    refused(no_reload, 6, "d0 #4 (BW s0 mb0) reads s0 mb0, which is offloaded (#1) and not "
                          "reloaded before it");
    sc_instr reload_late[] = {f0, o, f1, d, b0, r, b1};
    refused(reload_late, 7, "reads s0 mb0, which is offloaded");
    sc_instr twice[] = {f0, o, o, f1, d, r, b0, b1};
    refused(twice, 8, "the record is moved twice");
    sc_instr after_b[] = {f0, f1, b0, o, d, r, b1};
    refused(after_b, 7, "comes after the backward of s0 mb0");
    sc_instr other_frac[] = {f0, o, f1, H(SC_OP_DROP, 0, 0, 0.5), r, b0, b1};
    refused(other_frac, 7, "moves another fraction than d0 #1 (OFFLOAD s0 mb0 100%)");
    sc_instr zero[] = {f0, H(SC_OP_OFFLOAD, 0, 0, 0), f1, b0, b1};
    refused(zero, 5, "stage, microbatch or fraction out of range");
    /* A record of a stage on another device. */
    sc_prog *pg = sc_prog_new(2, 2, 1);
    sc_instr d0[] = {C(SC_OP_F, 0, 0), H(SC_OP_OFFLOAD, 1, 0, 1)};
    for (size_t i = 0; i < 2; i++)
        sc_prog_push_stream(pg, 0, d0[i]);
    CHECK(sc_check(pg) != SC_OK);
    sc_prog_free(pg);
}

/* The interleaved rule with an offload policy; NULL on failure (then *st). */
static sc_prog *interleaved(int p, int m, int v, const sc_offload_cfg *c, sc_status *st)
{
    sc_prog *pg = sc_prog_new(p, p * v, m);
    *st = sc_rule_fill(pg, "interleaved");
    if (!*st && c)
        *st = sc_prog_set_offload(pg, c);
    if (!*st)
        *st = sc_check(pg);
    return pg;
}

/* The same program's passes start at the same times with and without the
 * policy, and its peak is what the plan says it was without. */
static void same_timing(sc_prog *with, sc_prog *without)
{
    sc_sim *a = NULL, *b = NULL;
    CHECK(sc_simulate(with, &a) == SC_OK);
    CHECK(sc_simulate(without, &b) == SC_OK);
    if (!a || !b)
        goto done;
    CHECK_NEAR(a->makespan, b->makespan, 1e-9);
    CHECK_NEAR(a->bubble_rate, b->bubble_rate, 1e-12);
    const sc_offload_info *oi = sc_prog_offload_info(with);
    CHECK(oi != NULL);
    for (int d = 0; d < a->P; d++) {
        size_t na, nb, i = 0, j = 0;
        const sc_instr *va = sc_prog_stream(with, d, &na);
        sc_prog_stream(without, d, &nb);
        int same = 1;
        for (; i < na && j < nb; i++, j++) {
            while (i < na && sc_op_is_host(va[i].op))
                i++;
            if (i < na && sc_op_is_compute(va[i].op))
                same &= fabs(a->t0[a->offset[d] + i] - b->t0[b->offset[d] + j]) < 1e-9;
        }
        CHECK(same);
        CHECK(a->peak_mem[d] <= b->peak_mem[d] + 1e-12);
        if (oi)
            CHECK_NEAR(oi->base_peak[d], b->peak_mem[d], 1e-12);
    }
done:
    sc_sim_free(a);
    sc_sim_free(b);
}

TEST(policies_keep_the_timing)
{
    sc_status st;
    sc_prog *base = interleaved(4, 16, 4, NULL, &st);
    CHECK(st == SC_OK);
    sc_offload_cfg all = {.policy = SC_OFFLOAD_ALL, .ratio = 0.05};
    sc_prog *pg = interleaved(4, 16, 4, &all, &st);
    CHECK(st == SC_OK);
    if (!st) {
        same_timing(pg, base);
        sc_sim *sim = NULL;
        CHECK(sc_simulate(pg, &sim) == SC_OK);
        /* Everything that gains moves: a fast link leaves under one unit. */
        if (sim)
            for (int d = 0; d < 4; d++)
                CHECK(sim->peak_mem[d] < 1);
        const sc_offload_info *oi = sc_prog_offload_info(pg);
        CHECK(oi && oi->moved > 0 && oi->moved + oi->skipped == oi->records);
        CHECK(oi && oi->records == 4 * 4 * 16);
        sc_sim_free(sim);
    }
    sc_prog_free(pg);
    /* Selective: the first chunk goes first (it lives longest). */
    for (double k = 0; k <= 4; k += 1) {
        sc_offload_cfg sel = {.policy = SC_OFFLOAD_SELECTIVE, .chunks = k, .ratio = 0.05};
        pg = interleaved(4, 16, 4, &sel, &st);
        CHECK(st == SC_OK);
        if (st) {
            sc_prog_free(pg);
            continue;
        }
        same_timing(pg, base);
        int bad = 0;
        for (int d = 0; d < 4; d++) {
            size_t n;
            const sc_instr *v = sc_prog_stream(pg, d, &n);
            for (size_t i = 0; i < n; i++)
                if (v[i].op == SC_OP_OFFLOAD && sc_prog_chunk(pg, v[i].stage) >= k)
                    bad++;
        }
        CHECK(bad == 0);
        sc_prog_free(pg);
    }
    sc_prog_free(base);
}

TEST(slow_link_is_refused)
{
    sc_status st;
    /* all backs off within PipeOffload's bound (what stayed is counted)
     * and is refused above it (ratio > 1 on a link of its own); selective
     * is refused with its record. */
    sc_offload_cfg all = {.policy = SC_OFFLOAD_ALL, .ratio = 1};
    sc_prog *pg = interleaved(4, 16, 4, &all, &st);
    CHECK(st == SC_OK && sc_prog_offload_info(pg) && sc_prog_offload_info(pg)->backed_off > 0);
    sc_prog_free(pg);
    all.ratio = 2;
    pg = interleaved(4, 16, 4, &all, &st);
    CHECK(st == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "full offload needs ratio <= 1 on a link of its own");
    CHECK(!sc_prog_is_lowered(pg));
    sc_prog_free(pg);
    sc_offload_cfg sel = {.policy = SC_OFFLOAD_SELECTIVE, .chunks = 4, .ratio = 2};
    pg = interleaved(4, 16, 4, &sel, &st);
    CHECK(st == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "offload 'selective' (ratio 2): the host link of d");
    CHECK_STR(sc_errmsg(pg), "cannot bring s");
    CHECK_STR(sc_errmsg(pg), "(short by ");
    CHECK(!sc_prog_is_lowered(pg)); /* nothing half-lowered is left */
    CHECK(sc_check(pg) == SC_ERR_PROGRAM);
    sc_prog_free(pg);
    /* The same, shared by pairs (docs/offload.md#the-host-link): the two devices of a pair
     * take turns in slots, so at no time do both copy in one direction; a
     * copy takes its full-speed time, or SC_OFFLOAD_SOLO of it alone on the
     * link in the pair's warm-up (copies to the host only); never faster. */
    sc_offload_cfg shared = {.policy = SC_OFFLOAD_ALL, .ratio = 0.25, .shared = 1};
    pg = interleaved(4, 16, 4, &shared, &st);
    sc_offload_cfg own = {.policy = SC_OFFLOAD_ALL, .ratio = 0.25};
    sc_prog *pg2 = interleaved(4, 16, 4, &own, &st);
    sc_sim *a = NULL, *b = NULL;
    CHECK(sc_simulate(pg, &a) == SC_OK && sc_simulate(pg2, &b) == SC_OK);
    if (a && b) {
        const sc_offload_info *oa = sc_prog_offload_info(pg);
        CHECK(oa && oa->moved > 0);
        int solo = 0, full = 0, overlap = 0;
        for (int d = 0; d < 4; d += 2)
            for (int x = d; x <= d + 1; x++) {
                size_t nx, ny;
                const sc_instr *sx = sc_prog_stream(pg, x, &nx), *sy = sc_prog_stream(pg, x ^ 1, &ny);
                for (size_t k = 0; k < nx; k++) {
                    sc_instr in = sx[k];
                    if (in.op != SC_OP_OFFLOAD && in.op != SC_OP_RELOAD)
                        continue;
                    size_t g = a->offset[x] + k;
                    double dur = a->t1[g] - a->t0[g];
                    double c = sc_offload_time(pg, in.stage, (double)in.frac / SC_FRAC_ONE);
                    solo += fabs(dur - SC_OFFLOAD_SOLO * c) < 1e-9 && in.op == SC_OP_OFFLOAD;
                    full += fabs(dur - c) < 1e-9;
                    CHECK(dur >= SC_OFFLOAD_SOLO * c - 1e-9);
                    /* the partner's copies in the same direction never overlap */
                    int y = x ^ 1;
                    for (size_t j = 0; j < ny; j++) {
                        sc_instr o = sy[j];
                        if (o.op != in.op)
                            continue;
                        size_t h = a->offset[y] + j;
                        overlap += a->t0[h] < a->t1[g] - 1e-9 && a->t0[g] < a->t1[h] - 1e-9;
                    }
                }
            }
        CHECK(overlap == 0);
        CHECK(solo > 0 && full > 0);
        /* no pass later than without offload, on either link */
        CHECK_NEAR(a->makespan, b->makespan, 1e-9);
    }
    sc_sim_free(a);
    sc_sim_free(b);
    sc_prog_free(pg);
    sc_prog_free(pg2);
}

TEST(budget)
{
    sc_status st;
    sc_prog *base = interleaved(4, 16, 2, NULL, &st);
    sc_sim *b = NULL;
    CHECK(sc_simulate(base, &b) == SC_OK);
    for (double mem = 1.5; mem <= 5.5; mem += 0.5) {
        sc_offload_cfg c = {.policy = SC_OFFLOAD_BUDGET, .mem = mem, .ratio = 0.1};
        sc_prog *pg = interleaved(4, 16, 2, &c, &st);
        CHECK(st == SC_OK);
        sc_sim *sim = NULL;
        if (!st && sc_simulate(pg, &sim) == SC_OK) {
            same_timing(pg, base);
            const sc_offload_info *oi = sc_prog_offload_info(pg);
            for (int d = 0; d < 4; d++) {
                CHECK(sim->peak_mem[d] <= mem + 1e-9);
                /* The least: a device already under mem moves nothing. */
                if (b->peak_mem[d] <= mem)
                    CHECK(oi->level[d] == 0);
            }
        }
        sc_sim_free(sim);
        sc_prog_free(pg);
    }
    /* A slow link: budget backs off what the link cannot take, and says so
     * when the cap stays out of reach. */
    sc_offload_cfg slow = {.policy = SC_OFFLOAD_BUDGET, .mem = 0.5, .ratio = 2};
    sc_prog *pg = interleaved(4, 16, 2, &slow, &st);
    CHECK(st == SC_ERR_PROGRAM);
    CHECK_STR(sc_errmsg(pg), "offload 'budget': d0 cannot get under mem = 0.5");
    sc_prog_free(pg);
    sc_offload_cfg fits = {.policy = SC_OFFLOAD_BUDGET, .mem = 4, .ratio = 1};
    pg = interleaved(4, 16, 2, &fits, &st);
    CHECK(st == SC_OK);
    sc_sim *sim = NULL;
    if (!st && sc_simulate(pg, &sim) == SC_OK)
        CHECK(sim->peak_mem[0] <= 4 + 1e-9);
    const sc_offload_info *oi = sc_prog_offload_info(pg);
    CHECK(oi && oi->moved > 0);
    /* Where 'selective' of every chunk is refused on the same link ('all'
     * backs off as budget does). */
    sc_offload_cfg allc = {.policy = SC_OFFLOAD_SELECTIVE, .chunks = 2, .ratio = 1};
    sc_prog *pa = interleaved(4, 16, 2, &allc, &st);
    CHECK(st == SC_ERR_PROGRAM);
    sc_prog_free(pa);
    allc.policy = SC_OFFLOAD_ALL;
    pa = interleaved(4, 16, 2, &allc, &st);
    CHECK(st == SC_OK && sc_prog_offload_info(pa)->backed_off > 0);
    sc_prog_free(pa);
    sc_sim_free(sim);
    sc_prog_free(pg);
    sc_sim_free(b);
    sc_prog_free(base);
}

TEST(table_and_parts)
{
    sc_status st;
    sc_prog *pg = sc_prog_new(2, 4, 4);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_OK);
    sc_offload_cfg c = {.policy = SC_OFFLOAD_TABLE, .ratio = 0};
    CHECK(sc_prog_set_offload(pg, &c) == SC_OK);
    CHECK(sc_prog_set_offload_fraction(pg, 0, 1, 0.3) == SC_OK);
    CHECK(sc_prog_set_offload_fraction(pg, 0, 1, 1.5) == SC_ERR_ARG);
    CHECK(sc_prog_set_offload_fraction(pg, 9, 1, 0.5) == SC_ERR_ARG);
    /* Parts of stage 0: sizes 1, 1, 2 -> levels 0, 1/2, 3/4, 1: 0.3 rounds to 0.5. */
    double sizes[] = {1, 1, 2};
    CHECK(sc_prog_set_offload_parts(pg, 0, 3, sizes) == SC_OK);
    int n;
    const double *lv = sc_prog_offload_levels(pg, 0, &n);
    CHECK(n == 3 && lv && fabs(lv[1] - 0.5) < 1e-12 && fabs(lv[2] - 0.75) < 1e-12);
    st = sc_check(pg);
    CHECK(st == SC_OK);
    size_t k;
    const sc_instr *v = sc_prog_stream(pg, 0, &k);
    int found = 0;
    for (size_t i = 0; i < k; i++)
        if (v[i].op == SC_OP_OFFLOAD) {
            found++;
            CHECK(v[i].stage == 0 && v[i].mb == 1 && v[i].frac == SC_FRAC_ONE / 2);
        }
    CHECK(found == 1);
    CHECK(sc_prog_offload_info(pg)->moved == 1);
    /* Bad configurations. */
    sc_offload_cfg bad = {.policy = SC_OFFLOAD_SELECTIVE, .chunks = 3, .ratio = 0.1};
    CHECK(sc_prog_set_offload(pg, &bad) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "chunks = 3, but a device holds at most 2 chunks");
    bad = (sc_offload_cfg){.policy = SC_OFFLOAD_ALL, .ratio = -1};
    CHECK(sc_prog_set_offload(pg, &bad) == SC_ERR_ARG);
    bad = (sc_offload_cfg){.policy = SC_OFFLOAD_BUDGET, .ratio = 0.1};
    CHECK(sc_prog_set_offload(pg, &bad) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "'budget' needs mem");
    CHECK(sc_prog_set_offload_parts(pg, 0, 1, (double[]){0}) == SC_ERR_ARG);
    sc_prog_free(pg);
}

TEST(lives)
{
    sc_prog *pg = sc_prog_new(4, 8, 8);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_OK);
    sc_offload_cfg c = {.policy = SC_OFFLOAD_ALL, .ratio = 0.2};
    CHECK(sc_prog_set_offload(pg, &c) == SC_OK);
    sc_record_life *ls = calloc(64, sizeof *ls);
    CHECK(sc_offload_lives(pg, ls) == SC_OK);
    /* Chunk 0 of device 0 lives longer than chunk 1 for every microbatch;
     * a record moves in ratio * (tf+tb+tw of the device) * its units. */
    int longer = 1;
    for (int mb = 0; mb < 8; mb++)
        longer &= ls[0 * 8 + mb].end - ls[0 * 8 + mb].f_start >
                  ls[4 * 8 + mb].end - ls[4 * 8 + mb].f_start;
    CHECK(longer);
    CHECK(ls[0].device == 0 && ls[4 * 8].chunk == 1 && ls[4 * 8].stage == 4);
    CHECK_NEAR(ls[0].transfer, 0.2 * 3 * 0.5, 1e-12);
    CHECK(ls[9].b_start > ls[9].f_end);
    /* The policy is back afterwards. */
    CHECK(sc_prog_offload(pg)->policy == SC_OFFLOAD_ALL);
    CHECK(sc_check(pg) == SC_OK && sc_prog_offload_info(pg) != NULL);
    free(ls);
    sc_prog_free(pg);
}

int main(void)
{
    RUN(replay_semantics);
    RUN(recompute_semantics);
    RUN(verifier_refuses);
    RUN(policies_keep_the_timing);
    RUN(slow_link_is_refused);
    RUN(budget);
    RUN(table_and_parts);
    RUN(lives);
    return harness_done("offload");
}
