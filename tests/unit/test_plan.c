/*
 * test_plan.c — the planner's front and pick (interp/plan/plan.h), the
 * layer partition and Megatron's layout string (partition.h): the exact
 * split against every split of a small model, the even split, the string
 * back to the same split, torchtitan's names.
 */
#include "harness.h"
#include "plan/partition.h"
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(front_and_pick)
{
    sc_plan *pl = sc_plan_new(6);
    sc_plan_add(pl, "zbv-auto", "mem=6", 102.082, 0.1756, 6, NULL);   /* 0 */
    sc_plan_add(pl, "v-zb", "mem=6", 92.367, 0.0889, 6, NULL);        /* 1: the pick */
    sc_plan_add(pl, "v-zb", "", 88.22, 0.0373, 8, NULL);              /* 2: front, over cap */
    sc_plan_add(pl, "v-min", "", 112.291, 0.25, 4, NULL);             /* 3: front */
    sc_plan_add(pl, "gis", "mem=6", 94.38, 0.108, 6, NULL);           /* 4 */
    sc_plan_add(pl, "1f1b", "mem=6", 0, 0, 0, "refused\nsecond line"); /* 5 */
    sc_plan_add(pl, "v-half", "", 94.997, 0.114, 5, NULL);            /* 6: front */
    sc_plan_finish(pl);
    CHECK(sc_plan_pick(pl) == 1);
    int f[16], n = sc_plan_front(pl, f);
    CHECK(n == 4 && f[0] == 3 && f[1] == 6 && f[2] == 1 && f[3] == 2);
    CHECK(!sc_plan_cand_at(pl, 0)->front && sc_plan_cand_at(pl, 2)->front);
    CHECK(!sc_plan_cand_at(pl, 2)->fits && !sc_plan_cand_at(pl, 5)->fits);
    CHECK(strcmp(sc_plan_cand_at(pl, 5)->error, "refused") == 0);
    char why[512];
    sc_plan_why(pl, why, sizeof why);
    CHECK_STR(why, "fastest under cap 6: v-zb mem=6, makespan 92.367, 8.89 % bubble; next gis "
                   "mem=6 94.38 (10.80 %), v-half 94.997 (11.40 %)");
    sc_plan_free(pl);
    /* Nothing fits: says the smallest peak. */
    pl = sc_plan_new(2);
    sc_plan_add(pl, "v-min", "", 112, 0.25, 4, NULL);
    sc_plan_finish(pl);
    sc_plan_why(pl, why, sizeof why);
    CHECK(sc_plan_pick(pl) == -1);
    CHECK_STR(why, "nothing meets cap 2: the smallest peak is 4 (v-min)");
    sc_plan_free(pl);
    sc_plan_free(NULL);
}

/* Every split of n layers into S stages, by brute force: the heaviest
 * stage's smallest weight. */
static double brute(const sc_layers *ly, int S, int s, int at, double worst)
{
    if (s == S - 1) {
        double x = 0;
        for (int i = at; i < ly->n; i++)
            x += ly->weight[i];
        return at < ly->n ? (x > worst ? x : worst) : 1e300;
    }
    double best = 1e300, x = 0;
    for (int e = at + 1; e <= ly->n - (S - 1 - s); e++) {
        x += ly->weight[e - 1];
        double r = brute(ly, S, s + 1, e, x > worst ? x : worst);
        best = r < best ? r : best;
    }
    return best;
}

TEST(partition)
{
    static sc_layers ly, back;
    char err[200], s[512];
    int first[SC_LAYERS_MAX + 1], bf[SC_LAYERS_MAX + 1];
    CHECK(sc_layers_parse("E:4,t*14,L:6", &ly, err, sizeof err) == 0 && ly.n == 16);
    CHECK(ly.kind[0] == 'E' && ly.weight[0] == 4 && ly.kind[15] == 'L' && ly.weight[1] == 1);
    CHECK(sc_layers_parse("E,x", &ly, err, sizeof err) == -1 && strstr(err, "'x'"));
    CHECK(sc_layers_parse("t*0", &ly, err, sizeof err) == -1);
    CHECK(sc_layers_parse("t:-1", &ly, err, sizeof err) == -1);
    /* The exact split against brute force, on a few models. */
    const char *models[] = {"E:4,t*14,L:6", "E:2,t*7,L:3", "t:3,t,t:2,t*5,t:4", "E,t*3,L"};
    for (int k = 0; k < 4; k++)
        for (int S = 1; S <= 5; S++) {
            sc_layers_parse(models[k], &ly, err, sizeof err);
            if (S > ly.n)
                continue;
            double h = sc_part_best(&ly, S, first);
            CHECK_NEAR(h, brute(&ly, S, 0, 0, 0), 1e-9);
            CHECK(first[0] == 0 && first[S] == ly.n);
            for (int x = 0; x < S; x++)
                CHECK(first[x] < first[x + 1]);
        }
    /* The even split: E with the first, L with the last. */
    sc_layers_parse("E:4,t*14,L:6", &ly, err, sizeof err);
    CHECK_NEAR(sc_part_even(&ly, 4, first), 9, 1e-12); /* t*3 + L */
    sc_part_layout(&ly, 4, first, s, sizeof s);
    CHECK_STR(s, "Et*4|t*4|t*3|t*3L");
    CHECK_NEAR(sc_part_best(&ly, 4, first), 6, 1e-12);
    /* Among the splits of the least heaviest stage, the most even. */
    static sc_layers big;
    sc_layers_parse("E:6,t*30,L:9", &big, err, sizeof err);
    CHECK_NEAR(sc_part_best(&big, 8, first), 9, 1e-12);
    sc_part_layout(&big, 8, first, s, sizeof s);
    CHECK_STR(s, "E|t*5|t*5|t*5|t*5|t*5|t*5|L");
    /* The layout string round-trips, and parses Megatron's own examples. */
    for (int S = 1; S <= 8; S++) {
        sc_part_best(&ly, S, first);
        sc_part_layout(&ly, S, first, s, sizeof s);
        CHECK(sc_part_parse_layout(s, &back, bf, err, sizeof err) == S);
        CHECK(back.n == ly.n && memcmp(back.kind, ly.kind, (size_t)ly.n) == 0);
        CHECK(memcmp(bf, first, (size_t)(S + 1) * sizeof *bf) == 0);
    }
    CHECK(sc_part_parse_layout("Et*3|(tt|)*29,m|L", &back, bf, err, sizeof err) == 32);
    CHECK(back.n == 3 + 58 + 3 && back.kind[0] == 'E' && back.kind[back.n - 1] == 'L');
    CHECK(bf[1] == 4 && bf[2] == 6 && bf[30] == 62 && bf[31] == 63);
    CHECK(sc_part_parse_layout("Ettt|(tt|)*2,pq", &back, bf, err, sizeof err) == -1 && strstr(err, "'p'"));
    CHECK(sc_part_parse_layout("(t|", &back, bf, err, sizeof err) == -1);
    CHECK(sc_part_parse_layout("|*3", &back, bf, err, sizeof err) == 4);
}

TEST(torchtitan)
{
    static sc_layers ly;
    char err[100];
    int first[8] = {0, 2, 4, 5};
    sc_layers_parse("E,t*3,L", &ly, err, sizeof err);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sc_jw w;
    sc_jw_init(&w, f);
    sc_jw_object(&w, NULL);
    sc_part_torchtitan(&ly, 3, first, &w, "parts", "split");
    sc_jw_end(&w);
    fclose(f);
    CHECK_STR(buf, "{\"parts\": [[\"tok_embeddings\", \"layers.0\"], [\"layers.1\", \"layers.2\"], "
                   "[\"norm\", \"output\"]], \"split\": null}");
    free(buf);
    int first2[8] = {0, 2, 5};
    f = open_memstream(&buf, &len);
    sc_jw_init(&w, f);
    sc_jw_object(&w, NULL);
    sc_part_torchtitan(&ly, 2, first2, &w, "parts", "split");
    sc_jw_end(&w);
    fclose(f);
    CHECK(strstr(buf, "\"split\": [\"layers.1\"]") != NULL);
    free(buf);
}

int main(void)
{
    RUN(front_and_pick);
    RUN(partition);
    RUN(torchtitan);
    return harness_done("plan");
}
