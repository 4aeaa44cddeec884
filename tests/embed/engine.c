/*
 * engine.c — stagecraft_compare and stagecraft_plan from a C host, built by
 * tests/embed.sh against the installed library: the rows and the plan are
 * the commands' (the test compares the lines printed here with `stagecraft
 * compare --json` and `stagecraft plan --json`); errors come back as codes
 * with messages (an unknown parameter, a sweep in a plan, the runtime's
 * model sizes that only the command line counts); a step limit ends a plan
 * with STAGECRAFT_LIMIT and the context plans again. Prints "row ...",
 * "pick ..." and "engine: N passed, N failed".
 */
#include <stagecraft.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

static void check(int cond, const char *what, const stagecraft *sc)
{
    if (cond) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s (%s)\n", what, stagecraft_errmsg(sc));
    }
}

int main(void)
{
    stagecraft *sc = stagecraft_open();
    if (!sc)
        return 1;
    const char *recipes[] = {"1f1b", "zb-h1", NULL}, *defs[] = {"p=4", "m=8,16", NULL};
    const stagecraft_row *rows = NULL;
    int n = 0;
    int rc = stagecraft_compare(sc, recipes, defs, &rows, &n);
    check(rc == STAGECRAFT_OK && n == 4, "compare 1f1b zb-h1 -D p=4 -D m=8,16: 4 rows", sc);
    for (int i = 0; rc == STAGECRAFT_OK && i < n; i++)
        printf("row %s %s %g %.17g %g %lld\n", rows[i].recipe, rows[i].parameters, rows[i].makespan,
               rows[i].bubble_rate, rows[i].peak_memory_max, rows[i].instructions);

    const char *bad[] = {"p=4", "nosuch=1", NULL};
    rc = stagecraft_compare(sc, recipes, bad, &rows, &n);
    check(rc == STAGECRAFT_USAGE && strstr(stagecraft_errmsg(sc), "unknown parameter 'nosuch'"),
          "an unknown parameter is STAGECRAFT_USAGE", sc);
    const char *sizes[] = {"p=4", "m=8", "hidden=1024", NULL};
    rc = stagecraft_compare(sc, recipes, sizes, &rows, &n);
    check(rc == STAGECRAFT_OK && n == 2 && rows[0].error && strstr(rows[0].error, "command line"),
          "model sizes: a row that says the command line counts them", sc);
    const char *failing[] = {"zb-v", NULL}, *small[] = {"p=4", "m=2", NULL};
    rc = stagecraft_compare(sc, failing, small, &rows, &n);
    check(rc == STAGECRAFT_OK && n == 1 && rows[0].code == STAGECRAFT_ARG && rows[0].error,
          "a recipe that fails is a row with its code", sc);

    stagecraft_plan_settings ps = {.devices = 4, .microbatches = 8, .cap = "4", .time_limit = -1};
    stagecraft_plan_result plan;
    rc = stagecraft_plan(sc, &ps, &plan);
    check(rc == STAGECRAFT_OK && plan.pick >= 0 && plan.ncandidates > 10 && plan.sim_command,
          "plan -D p=4 -D m=8 --cap 4: a pick", sc);
    if (rc == STAGECRAFT_OK && plan.pick >= 0)
        printf("pick %s [%s] %g %d\n", plan.candidates[plan.pick].recipe,
               plan.candidates[plan.pick].knobs, plan.candidates[plan.pick].makespan,
               plan.ncandidates);
    const char *sweep[] = {"tw=0.5,1", NULL};
    stagecraft_plan_settings sw = {.devices = 4, .microbatches = 8, .defs = sweep, .time_limit = -1};
    rc = stagecraft_plan(sc, &sw, &plan);
    check(rc == STAGECRAFT_USAGE && strstr(stagecraft_errmsg(sc), "sweep with compare"),
          "a sweep in a plan is STAGECRAFT_USAGE", sc);
    stagecraft_plan_settings tight = {.devices = 4, .microbatches = 8, .cap = "0.1", .time_limit = -1};
    rc = stagecraft_plan(sc, &tight, &plan);
    check(rc == STAGECRAFT_OK && plan.pick < 0 && strstr(plan.why, "nothing meets cap 0.1"),
          "a cap nothing meets: no pick, and why", sc);
    stagecraft_limits(sc, 20000, 0, 0);
    rc = stagecraft_plan(sc, &ps, &plan);
    check(rc == STAGECRAFT_LIMIT, "a step limit ends the plan", sc);
    stagecraft_limits(sc, 0, 0, 60);
    rc = stagecraft_plan(sc, &ps, &plan);
    check(rc == STAGECRAFT_OK && plan.pick >= 0, "the context plans again", sc);
    check(stagecraft_plan(NULL, &ps, &plan) == STAGECRAFT_USAGE &&
              stagecraft_plan(sc, NULL, &plan) == STAGECRAFT_USAGE &&
              stagecraft_compare(sc, NULL, defs, &rows, &n) == STAGECRAFT_USAGE,
          "NULL arguments are STAGECRAFT_USAGE", sc);
    stagecraft_close(sc);
    printf("engine: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
