/*
 * test_costtok.c — per-token costs (formats/costs_tok.h, ir/lengths.h's
 * sc_prog_set_len_tokens): the fit recovering known coefficients from a
 * synthetic profile, the cost file's fields and their refusals, and a
 * program's pass times fixed + a L + b L^2 with them.
 * End to end: tests/lengths.sh.
 */
#include "formats/costs.h"
#include "formats/costs_tok.h"
#include "harness.h"
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(fit)
{
    /* A synthetic profile: 0.001 + 2e-4 L + 3e-6 L^2, three samples a length. */
    double L[15], t[15], k[3], rms;
    for (int i = 0; i < 15; i++) {
        L[i] = 8 * (1 + i / 3);
        t[i] = 0.001 + 2e-4 * L[i] + 3e-6 * L[i] * L[i];
    }
    CHECK(sc_costs_fit_tok(L, t, 15, 1, k, &rms) == SC_OK);
    CHECK_NEAR(k[0], 0.001, 1e-12);
    CHECK_NEAR(k[1], 2e-4, 1e-12);
    CHECK_NEAR(k[2], 3e-6, 1e-14);
    CHECK(rms < 1e-12);
    /* Linear only: the best line, its residual > 0. */
    CHECK(sc_costs_fit_tok(L, t, 15, 0, k, &rms) == SC_OK);
    CHECK(k[2] == 0 && k[1] > 2e-4 && rms > 1e-6);
    /* Noise with a negative curvature: no term below 0 (the fit drops it). */
    double L2[4] = {10, 20, 30, 40}, t2[4] = {1.0, 1.9, 2.7, 3.4};
    CHECK(sc_costs_fit_tok(L2, t2, 4, 1, k, &rms) == SC_OK);
    CHECK(k[0] >= 0 && k[1] > 0 && k[2] == 0);
    /* Too few distinct lengths: 2 for a line, 3 for the quadratic. */
    double L3[3] = {16, 16, 32}, t3[3] = {1, 1.1, 2};
    CHECK(sc_costs_fit_tok(L3, t3, 3, 1, k, &rms) == SC_ERR_ARG);
    CHECK(sc_costs_fit_tok(L3, t3, 3, 0, k, &rms) == SC_OK);
    CHECK_NEAR(k[1], (2 - 1.05) / 16, 1e-12);
    CHECK(sc_costs_fit_tok(L3, t3, 2, 0, k, &rms) == SC_ERR_ARG);
}

static sc_status costs_of(const char *text, sc_costs *c, char *err, size_t len)
{
    sc_jv *v;
    sc_status st = sc_json_parse(text, strlen(text), &v, err, len);
    if (st == SC_OK)
        st = sc_costs_from_json(v, c, err, len);
    sc_jv_free(v);
    return st;
}

#define HEAD "{\"stagecraft_costs\": 1, \"unit\": \"s\", \"stages\": 2, \"tf\": [1, 1], " \
             "\"tb\": [2, 2], \"tw\": [1, 1], "

TEST(file)
{
    sc_costs c;
    char err[256];
    CHECK(costs_of(HEAD "\"tokens\": 100, \"tf_per_token\": [0.004, 0.004], \"tf_per_token2\": "
                   "[5e-05, 5e-05], \"tw_per_token\": [0.01, 0.005]}", &c, err, sizeof err) ==
          SC_OK);
    CHECK(c.tokens == 100 && c.per_token);
    CHECK(c.per_token[0] == 0.004 && c.per_token[3 * 2 + 1] == 5e-05);
    CHECK(c.per_token[2 * 2 + 1] == 0.005 && c.per_token[3 * 2 + 2 * 2] == 0); /* tw's b: 0 */
    CHECK(isnan(c.per_token[2]) && isnan(c.per_token[3 * 2 + 2])); /* tb: none, linear */
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK(sc_costs_write(f, &c) == SC_OK);
    fclose(f);
    sc_costs_free(&c);
    CHECK_STR(buf, "\"tokens\": 100");
    CHECK_STR(buf, "\"tw_per_token\": [0.01, 0.005]");
    CHECK(!strstr(buf, "tb_per_token"));
    CHECK(costs_of(buf, &c, err, sizeof err) == SC_OK); /* read back */
    CHECK(c.tokens == 100 && c.per_token && c.per_token[3 * 2] == 5e-05);
    sc_costs_free(&c);
    free(buf);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {HEAD "\"tf_per_token\": [0, 0]}", "'tokens' is missing"},
        {HEAD "\"tokens\": 100}", "'tokens' without per-token costs"},
        {HEAD "\"tokens\": -1, \"tf_per_token\": [0, 0]}", "'tokens': expected a length > 0"},
        {HEAD "\"tokens\": 10, \"tb_per_token\": [0, -1]}", "'tb_per_token'[1]: a coefficient"},
        {HEAD "\"tokens\": 10, \"tw_per_token2\": [0]}", "'tw_per_token2': expected a list of 2"},
        {HEAD "\"tokens\": 100, \"tf_per_token\": [0.02, 0]}",
         "'tf_per_token'[0], 'tf_per_token2'[0]: 2 s at 'tokens' = 100, more than 'tf'[0] = 1 s"},
        {HEAD "\"tokens\": 10, \"tf_per_tokens\": [0, 0]}", "unknown field 'tf_per_tokens'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK(costs_of(bad[i].text, &c, err, sizeof err) == SC_ERR_ARG);
        CHECK_STR(err, bad[i].msg);
    }
}

TEST(pass_times)
{
    /* Stage 0: F 0.1 + 0.004 L + 5e-5 L^2 (1 s at 100 tokens), B 0.2 +
     * 0.008 L + 1e-4 L^2 (2 s), W 0.01 L (1 s). */
    sc_prog *pg = sc_prog_new(1, 1, 2);
    CHECK(sc_prog_push(pg, 0, SC_OP_F, 0, 0) == SC_OK);
    CHECK(sc_prog_set_cost(pg, 0, 1, 2, 1) == SC_OK);
    double a[3] = {0.004, 0.008, 0.01}, b[3] = {5e-5, 1e-4, 0}, len[2] = {200, 50};
    CHECK(sc_prog_set_lengths(pg, len, 2) == SC_OK);
    CHECK(sc_prog_set_len_tokens(pg, a, b, 100) == SC_OK);
    CHECK(sc_prog_len_per_token(pg) && sc_prog_length_ref(pg) == 100);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 0), 0.1 + 0.8 + 2.0, 1e-12);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 1), 0.1 + 0.2 + 0.125, 1e-12);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_B, 0, 0), 0.2 + 1.6 + 4.0, 1e-12);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_W, 0, 1), 0.5, 1e-12);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_BW, 0, 1), 0.2 + 0.4 + 0.25 + 0.5, 1e-12);
    CHECK_NEAR(sc_prog_rec_units(pg, 0, 0), 2 * sc_prog_mem(pg, 0), 1e-12); /* linear */
    b[0] = 1e-3; /* 0.4 + 10 s at 100 tokens: more than F's 1 s */
    CHECK(sc_prog_set_len_tokens(pg, a, b, 100) == SC_ERR_ARG);
    CHECK_STR(sc_errmsg(pg), "stage 0's F takes 1 s at 100 tokens");
    CHECK(sc_prog_set_len_linear(pg, NULL, 0) == SC_OK); /* cleared: linear in the mean */
    CHECK(!sc_prog_len_per_token(pg));
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 0), 200 / 125.0, 1e-12);
    sc_prog_free(pg);
}

TEST(apply)
{
    /* sc_costs_apply (import's path): the file's coefficients on the program. */
    sc_costs c;
    char err[256];
    CHECK(costs_of(HEAD "\"tokens\": 100, \"tf_per_token\": [0.004, 0.004], \"tf_per_token2\": "
                   "[5e-05, 5e-05]}", &c, err, sizeof err) == SC_OK);
    sc_prog *pg = sc_prog_new(2, 2, 2);
    double len[2] = {200, 100};
    CHECK(sc_prog_set_lengths(pg, len, 2) == SC_OK);
    CHECK(sc_costs_apply(&c, pg, 0, err, sizeof err) == SC_OK);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 1, 0), 0.1 + 0.8 + 2.0, 1e-12);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_B, 1, 0), 2 * 2, 1e-12); /* no coefficients: linear */
    sc_prog_free(pg);
    pg = sc_prog_new(1, 1, 2); /* --force-costs: two stages into one, their sums */
    CHECK(sc_prog_set_lengths(pg, len, 2) == SC_OK);
    CHECK(sc_costs_apply(&c, pg, 1, err, sizeof err) == SC_OK);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 1), 2 * 1.0, 1e-12);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 0), 2 * 2.9, 1e-12);
    sc_prog_free(pg);
    sc_costs_free(&c);
}

TEST(slices)
{
    /* A slice is a pass: each pays the fixed part; its tokens the linear
     * part, its causal share (c1^2 - c0^2) the quadratic one. */
    sc_prog *pg = sc_prog_new(1, 1, 2); /* one microbatch of 2 slices: 2 records */
    CHECK(sc_prog_set_slices(pg, 2) == SC_OK);
    CHECK(sc_prog_set_cost(pg, 0, 1, 2, 1) == SC_OK);
    double a[3] = {0.004, 0.008, 0.01}, b[3] = {5e-5, 1e-4, 0};
    CHECK(sc_prog_set_len_tokens(pg, a, b, 100) == SC_OK);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 0), 0.1 + 0.4 * 0.5 + 0.5 * 0.25, 1e-12);
    CHECK_NEAR(sc_prog_pass_time(pg, SC_OP_F, 0, 1), 0.1 + 0.4 * 0.5 + 0.5 * 0.75, 1e-12);
    sc_prog_free(pg);
}

int main(void)
{
    RUN(fit);
    RUN(file);
    RUN(pass_times);
    RUN(apply);
    RUN(slices);
    return harness_done("costtok");
}
