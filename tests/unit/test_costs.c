/*
 * test_costs.c — cost files (docs/costs.md): the strict JSON reader, reading
 * and refusing cost files (one message naming the field), writing them back
 * (round trip), the simulation of verified streams with other costs (BW and
 * OPTIM times), and a profile on the CPU runtime: every kind measured, the
 * prediction of the same steps, and the comparison's parts adding up to the
 * difference (all load-independent: no time is asserted against a bound);
 * the bootstrap interval of a median over steps, and a profile's rounds.
 */
#include "run/compare.h"
#include "compile.h"
#include "formats/costs.h"
#include "formats/jsonread.h"
#include "harness.h"
#include "ir/ir.h"
#include "run/precision.h"
#include "run/profile.h"
#include "schedule/rules.h"
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sc_status parse(const char *text, sc_jv **v, char *err, size_t len)
{
    return sc_json_parse(text, strlen(text), v, err, len);
}

TEST(json_reader)
{
    sc_jv *v;
    char err[256];
    CHECK(parse(" {\"a\": [1, -2.5e3, true, null, \"x\\u00e9\\ud83d\\ude00\"], \"b\": {}} ", &v,
                err, sizeof err) == SC_OK);
    const sc_jv *a = sc_jv_get(v, "a");
    CHECK(a && a->type == SC_JARR && a->len == 5);
    CHECK(a && a->item[1]->num == -2500 && a->item[2]->type == SC_JBOOL && a->item[2]->num == 1);
    CHECK(a && a->item[3]->type == SC_JNULL);
    CHECK(a && strcmp(a->item[4]->str, "x\xc3\xa9\xf0\x9f\x98\x80") == 0);
    CHECK(sc_jv_get(v, "b") && sc_jv_get(v, "b")->type == SC_JOBJ);
    CHECK(sc_jv_get(v, "c") == NULL);
    sc_jv_free(v);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"[1, 2,]", "expected a value"},
        {"{\"a\": 1, \"a\": 2}", "appears twice"},
        {"[01]", "leading zero"},
        {"[NaN]", "expected a value"},
        {"[1e999]", "out of range"},
        {"[1.]", "malformed number"},
        {"\"abc", "not closed"},
        {"{\"a\" 1}", "expected ':'"},
        {"[1] x", "text after the value"},
        {"", "end of the file"},
        {"[\"\\ud800\"]", "surrogate"},
        {"\n\n[1,\n2", "line 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = (sc_jv *)1;
        CHECK(parse(bad[i].text, &v, err, sizeof err) == SC_ERR_ARG);
        CHECK(v == NULL);
        CHECK_STR(err, bad[i].msg);
    }
    /* Nesting is bounded, not a stack overflow. */
    char deep[400];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    CHECK(parse(deep, &v, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "nested more than");
}

static sc_status costs_of(const char *text, sc_costs *c, char *err, size_t len)
{
    sc_jv *v;
    sc_status st = parse(text, &v, err, len);
    if (st == SC_OK)
        st = sc_costs_from_json(v, c, err, len);
    sc_jv_free(v);
    return st;
}

#define HEAD "{\"stagecraft_costs\": 1, \"unit\": \"s\", \"stages\": 2, "

TEST(cost_file_read)
{
    sc_costs c;
    char err[256];
    CHECK(costs_of(HEAD "\"tf\": [1, 2], \"tb\": [3, 4], \"tw\": [5, 6.5], \"tcomm\": 0.25}", &c,
                   err, sizeof err) == SC_OK);
    CHECK(c.S == 2 && c.kind[SC_COST_W][1].median == 6.5 && c.comm.median == 0.25);
    CHECK(c.kind[SC_COST_BW][0].n == 0 && isnan(c.kind[SC_COST_BW][0].median));
    sc_costs_free(&c);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {HEAD "\"tf\": [1, 2], \"tb\": [3, 4]}", "'tw' is missing"},
        {HEAD "\"tf\": [1, 2], \"tb\": [3, -4], \"tw\": [5, 6]}", "'tb'[1]: a time must be >= 0"},
        {HEAD "\"tf\": [1, 2, 3], \"tb\": [3, 4], \"tw\": [5, 6]}", "'tf': 3 values for 2 stages"},
        {HEAD "\"tf\": [1, \"2\"], \"tb\": [3, 4], \"tw\": [5, 6]}", "'tf'[1]: expected a time"},
        {HEAD "\"tf\": [1, 2], \"tb\": [3, 4], \"tw\": [5, 6], \"tff\": 1}", "unknown field 'tff'"},
        {HEAD "\"tf\": [1, 2], \"tb\": [3, 4], \"tw\": [5, 6], \"tcomm\": -1}", "'tcomm'"},
        {HEAD "\"tf\": [1, 2], \"tb\": [3, 4], \"tw\": [5, 6], \"tbw\": [1]}", "'tbw': 1 values"},
        {"{\"stagecraft_costs\": 2, \"unit\": \"s\", \"stages\": 1}", "version 2"},
        {"{\"unit\": \"s\", \"stages\": 1}", "'stagecraft_costs' is missing"},
        {"{\"stagecraft_costs\": 1, \"unit\": \"ms\", \"stages\": 1}", "'unit'"},
        {"{\"stagecraft_costs\": 1, \"unit\": \"s\", \"stages\": 0}", "'stages'"},
        {"{\"stagecraft_costs\": 1, \"unit\": \"s\"}", "'stages' is missing"},
        {"[1]", "one JSON object"},
        {HEAD "\"tf\": [1, 2], \"tb\": [3, 4], \"tw\": [5, 6], \"transfers\": [{\"bytes\": 4}]}",
         "'transfers'[0].s"},
        {HEAD "\"tf\": [1, 2], \"tb\": [3, 4], \"tw\": [5, 6], \"spread\": {\"tf\": [1]}}",
         "'spread.tf': 1 values"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK(costs_of(bad[i].text, &c, err, sizeof err) == SC_ERR_ARG);
        CHECK_STR(err, bad[i].msg);
    }
}

TEST(cost_file_round_trip)
{
    sc_costs c;
    CHECK(sc_costs_init(&c, 2, 3) == SC_OK);
    for (int k = 0; k < SC_COST_KINDS; k++)
        for (int s = 0; s < 3; s++)
            c.kind[k][s] = (sc_stat){0.001 * (k + 1) + 1e-5 * s, 1e-6 * (s + 1), 10 + s};
    c.comm = (sc_stat){4.25e-5, 1e-6, 28};
    c.kind[SC_COST_W][2].spread = NAN; /* not known: written as null, read back */
    c.placement = malloc(3 * sizeof(int));
    c.placement[0] = 0, c.placement[1] = 1, c.placement[2] = 1;
    c.xfer = calloc(1, sizeof *c.xfer);
    c.xfer[0] = (sc_cost_size){16384, {4.25e-5, 1e-6, 28}, 0};
    c.nxfer = 1;
    c.host = calloc(2, sizeof *c.host);
    c.host[0] = (sc_cost_size){65536, {1e-4, 2e-6, 8}, 1};
    c.host[1] = (sc_cost_size){65536, {1.5e-4, 2e-6, 8}, 0};
    c.nhost = 2;
    c.offload_ratio = 0.125;
    c.recipe = "zb-h1 \"quoted\"";
    c.backend = "cpu";
    static const sc_cost_int model[] = {{"hidden", 64}};
    c.model = model;
    c.nmodel = 1;
    c.step = (sc_stat){0.5, 0.01, 5};
    c.predicted_step = 0.49;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(sc_costs_write(f, &c) == SC_OK);
    fclose(f);
    sc_costs d;
    char err[256] = "";
    sc_jv *root = NULL; /* d's strings point into it */
    CHECK(parse(buf, &root, err, sizeof err) == SC_OK);
    CHECK(sc_costs_from_json(root, &d, err, sizeof err) == SC_OK);
    if (!err[0]) {
        CHECK(d.S == 3 && d.P == 2 && d.placement && d.placement[2] == 1);
        for (int k = 0; k < SC_COST_KINDS; k++)
            for (int s = 0; s < 3; s++) {
                CHECK_NEAR(d.kind[k][s].median, c.kind[k][s].median, 1e-12);
                if (isnan(c.kind[k][s].spread))
                    CHECK(isnan(d.kind[k][s].spread));
                else
                    CHECK_NEAR(d.kind[k][s].spread, c.kind[k][s].spread, 1e-15);
                CHECK(d.kind[k][s].n == c.kind[k][s].n);
            }
        CHECK_NEAR(d.comm.median, 4.25e-5, 1e-15);
        CHECK(d.nxfer == 1 && d.xfer[0].bytes == 16384 && d.xfer[0].t.n == 28);
        CHECK(d.nhost == 2 && d.host[0].to_host == 1 && d.host[1].to_host == 0);
        CHECK_NEAR(d.offload_ratio, 0.125, 1e-12);
        CHECK(d.recipe && strcmp(d.recipe, "zb-h1 \"quoted\"") == 0);
    }
    CHECK_STR(buf, "\"prediction_error\": 0.0204081633");
    sc_costs_free(&d);
    sc_jv_free(root);
    sc_costs_free(&c);
    free(buf);
    double x[5] = {5, 1, 4, 2, 3};
    sc_stat st = sc_stat_of(x, 5);
    CHECK(st.median == 3 && st.spread == 2 && st.n == 5);
}

/* Two devices, one microbatch: F0 -> F1 -> BW1 -> BW0, then OPTIM. */
static sc_prog *tiny(void)
{
    sc_prog *pg = sc_prog_new(2, 2, 1);
    sc_prog_push(pg, 0, SC_OP_F, 0, 0);
    sc_prog_push(pg, 1, SC_OP_F, 1, 0);
    sc_prog_push(pg, 1, SC_OP_BW, 1, 0);
    sc_prog_push(pg, 0, SC_OP_BW, 0, 0);
    return pg;
}

TEST(simulate_with_costs)
{
    sc_prog *pg = tiny(), *cp = sc_prog_new(2, 2, 1);
    CHECK(sc_check(pg) == SC_OK);
    sc_prog_set_cost(cp, -1, 1, 2, 3);
    sc_prog_set_cost_bw(cp, 1, 4); /* stage 1's BW measured apart: 4, not 2 + 3 */
    sc_prog_set_cost_optim(cp, 0, 0.25);
    sc_prog_set_comm(cp, 0.5);
    sc_sim *a = NULL, *b = NULL;
    CHECK(sc_simulate_costs(pg, cp, &a) == SC_OK);
    /* F0 [0,1], +0.5, F1 [1.5,2.5], BW1 [2.5,6.5], +0.5, BW0 [7,12], OPTIM d0 12.25. */
    if (a) {
        CHECK_NEAR(a->makespan, 12, 1e-12);
        CHECK_NEAR(a->step, 12.25, 1e-12);
        CHECK_NEAR(a->busy[1], 5, 1e-12);
    }
    /* The program keeps its own costs (unit costs: makespan 1+1+2+2 = 6). */
    CHECK(sc_simulate(pg, &b) == SC_OK);
    if (b) {
        CHECK_NEAR(b->makespan, 6, 1e-12);
        CHECK_NEAR(b->step, 6, 1e-12);
    }
    CHECK(sc_prog_tbw(pg, 1) == 2 && sc_prog_tbw(cp, 1) == 4 && sc_prog_tbw(cp, 0) == 5);
    sc_sim_free(a);
    sc_sim_free(b);
    /* Shapes must agree; the streams must be verified. */
    sc_prog *other = sc_prog_new(2, 4, 1), *raw = tiny();
    CHECK(sc_simulate_costs(pg, other, &a) == SC_ERR_ARG && a == NULL);
    CHECK(sc_simulate_costs(raw, cp, &a) == SC_ERR_ARG && a == NULL);
    CHECK(sc_prog_set_cost_bw(cp, 0, -1) == SC_ERR_ARG);
    CHECK(sc_prog_set_cost_optim(cp, 0, NAN) == SC_ERR_ARG);
    sc_prog_free(other);
    sc_prog_free(raw);
    sc_prog_free(cp);
    sc_prog_free(pg);
}

/* A real profile of 1F1B on two threads: small, so it runs in a moment. */
TEST(profile_cpu)
{
    sc_prog *pg = sc_prog_new(2, 2, 4);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK && sc_check(pg) == SC_OK);
    sc_run_opts o = sc_run_defaults(2);
    sc_profile *pf = NULL;
    char err[512] = "";
    CHECK(sc_profile_run(pg, &o, "1f1b", &(sc_profile_opts){.warmup = 1, .steps = 3, .max_steps = 3}, &pf, err, sizeof err) == SC_OK);
    if (!pf) {
        fprintf(stderr, "%s\n", err);
        sc_prog_free(pg);
        return;
    }
    /* 1F1B has no split B/W: the split variant ran, so every kind is there. */
    CHECK(pf->calibrated == 1);
    for (int k = 0; k < SC_COST_KINDS; k++)
        for (int s = 0; s < 2; s++) {
            CHECK(pf->costs.kind[k][s].n > 0);
            CHECK(pf->costs.kind[k][s].median >= 0 && isfinite(pf->costs.kind[k][s].median));
        }
    CHECK(pf->costs.kind[SC_COST_F][0].n == 3 * 4 * 2); /* 3 steps, 4 microbatches, 2 programs */
    CHECK(pf->costs.nxfer == 1 && pf->costs.comm.n > 0);
    CHECK(pf->run && pf->predicted && pf->predicted->step > 0);
    /* The prediction is the program's own streams timed with the medians. */
    sc_sim *again = NULL;
    CHECK(sc_simulate_costs(pg, pf->cost_prog, &again) == SC_OK);
    if (again)
        CHECK(again->step == pf->predicted->step);
    sc_sim_free(again);
    /* The comparison's parts add up to the critical device's difference. */
    sc_comparison *c = NULL;
    CHECK(sc_compare(pg, pf->predicted, pf->run->measured, pf->run->pass_cpu_s, &c) == SC_OK);
    if (c) {
        double sum = 0;
        for (int i = 0; i < c->n; i++)
            sum += c->items[i].measured - c->items[i].predicted;
        CHECK_NEAR(sum, c->m_end[c->critical] - c->p_end[c->critical], 1e-9);
        CHECK_NEAR(c->measured, pf->run->step_time_s, 1e-9);
        CHECK_NEAR(c->predicted, pf->predicted->step, 1e-12);
        for (int i = 1; i < c->n; i++)
            CHECK(fabs(c->items[i - 1].measured - c->items[i - 1].predicted) >=
                  fabs(c->items[i].measured - c->items[i].predicted));
        CHECK(c->npasses == 2 * 2); /* F and BW of two stages */
    }
    sc_comparison_free(c);
    sc_profile_free(pf);
    sc_prog_free(pg);
}

/* Samples in steps: the interval of the median is 0 for equal samples,
 * the same for the same samples, narrower with more steps of the same
 * spread, and wider when whole steps move together than when the same
 * samples vary within each step. */
TEST(median_precision)
{
    enum { PER = 8, MOST = 64 };
    static double v[PER * MOST], scratch[PER * MOST + SC_PRECISION_B];
    int end[MOST];
    for (int k = 0; k < MOST; k++)
        end[k] = PER * (k + 1);
    CHECK(isnan(sc_median_precision(v, 0, end, 0, scratch)));
    for (int i = 0; i < PER * 10; i++)
        v[i] = 1.0;
    CHECK(sc_median_precision(v, PER * 10, end, 10, scratch) == 0);
    unsigned x = 12345;
    for (int i = 0; i < PER * MOST; i++) { /* uniform in [1, 1.2): within-step noise */
        x = x * 1103515245u + 12345u;
        v[i] = 1.0 + 0.2 * (double)(x >> 8) / (double)(1u << 24);
    }
    double h8 = sc_median_precision(v, PER * 8, end, 8, scratch);
    CHECK(h8 > 0 && h8 == sc_median_precision(v, PER * 8, end, 8, scratch));
    double h64 = sc_median_precision(v, PER * MOST, end, MOST, scratch);
    CHECK(h64 > 0 && h64 < 0.6 * h8); /* about 1/sqrt(8) of it */
    /* The same values, sorted: each step now holds neighbours (steps that
     * differ as a whole); the bootstrap over steps sees it. */
    static double w[PER * 16];
    memcpy(w, v, sizeof w);
    for (int i = 1; i < PER * 16; i++) /* insertion sort */
        for (int j = i; j > 0 && w[j - 1] > w[j]; j--) {
            double t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
    CHECK(sc_median_precision(w, PER * 16, end, 16, scratch) >
          1.5 * sc_median_precision(v, PER * 16, end, 16, scratch));
    /* Fewer than 5 steps: the samples themselves are drawn (not 0). */
    CHECK(sc_median_precision(v, PER * 2, end, 2, scratch) > 0);
}

static int rounds_seen;
static void on_round(void *arg, const sc_profile *p, int next)
{
    (void)arg;
    CHECK(p->nunstable > 0 && next > 0);
    rounds_seen++;
}

/* A profile's rounds: a target no figure can meet runs to the cap, keeps
 * every step's samples, and names the figures left; no target: one round. */
TEST(profile_rounds)
{
    sc_prog *pg = sc_prog_new(2, 2, 4);
    CHECK(sc_rule_fill(pg, "1f1b") == SC_OK && sc_check(pg) == SC_OK);
    sc_run_opts o = sc_run_defaults(2);
    sc_profile *pf = NULL;
    char err[512] = "";
    sc_profile_opts po = {.warmup = 0, .steps = 2, .target = 1e-12, .max_steps = 4,
                          .round = on_round};
    CHECK(sc_profile_run(pg, &o, "1f1b", &po, &pf, err, sizeof err) == SC_OK);
    if (pf) {
        /* A figure within 5 us counts as known: a quiet machine may settle. */
        CHECK(pf->rounds == 1 + rounds_seen && (pf->rounds == 1 || pf->rounds == 2));
        CHECK(pf->steps == 2 * pf->rounds);
        CHECK(pf->clock_cpu == sc_profile_cpu_clock(&o));
        CHECK(pf->costs.kind[SC_COST_F][0].n == pf->steps * 4 * 2); /* and the variant's */
        CHECK((pf->nunstable > 0) == (pf->capped == 1));
        for (int i = 0; i < pf->nunstable; i++) {
            CHECK(pf->unstable[i].half > 0 && pf->unstable[i].what[0]);
            if (i > 0)
                CHECK(pf->unstable[i].half / pf->unstable[i].median <=
                      pf->unstable[i - 1].half / pf->unstable[i - 1].median);
        }
    }
    sc_profile_free(pf);
    pf = NULL;
    po.target = 0;
    CHECK(sc_profile_run(pg, &o, "1f1b", &po, &pf, err, sizeof err) == SC_OK);
    if (pf)
        CHECK(pf->rounds == 1 && pf->steps == 2 && !pf->unstable && !pf->capped);
    sc_profile_free(pf);
    po.max_steps = 1; /* below the first round */
    CHECK(sc_profile_run(pg, &o, "1f1b", &po, &pf, err, sizeof err) == SC_ERR_ARG && !pf);
    sc_prog_free(pg);
}

TEST(resample_stages)
{
    /* A file of 2 stages as 4 of the same model: each half of one; 4 as 2:
     * pairs add up; 2 as 3: shares by the layers each covers. The total
     * is kept every way. */
    double two[2] = {2, 4}, four[4], back[2], three[3];
    sc_costs_resample(two, 2, four, 4);
    CHECK_NEAR(four[0], 1, 1e-12);
    CHECK_NEAR(four[1], 1, 1e-12);
    CHECK_NEAR(four[2], 2, 1e-12);
    CHECK_NEAR(four[3], 2, 1e-12);
    sc_costs_resample(four, 4, back, 2);
    CHECK_NEAR(back[0], 2, 1e-12);
    CHECK_NEAR(back[1], 4, 1e-12);
    sc_costs_resample(two, 2, three, 3);
    CHECK_NEAR(three[0], 2 * 2.0 / 3, 1e-12);
    CHECK_NEAR(three[1], 1.0 / 3 * 2 + 1.0 / 3 * 4, 1e-12);
    CHECK_NEAR(three[2], 4 * 2.0 / 3, 1e-12);
    CHECK_NEAR(three[0] + three[1] + three[2], 6, 1e-12);
    sc_costs_resample(two, 2, back, 2); /* the same stages: the same times */
    CHECK(back[0] == 2 && back[1] == 4);
}

int main(void)
{
    RUN(json_reader);
    RUN(cost_file_read);
    RUN(cost_file_round_trip);
    RUN(simulate_with_costs);
    RUN(profile_cpu);
    RUN(median_precision);
    RUN(profile_rounds);
    RUN(resample_stages);
    return harness_done("costs");
}
