/*
 * texts.c — the commands' texts from a C host (stagecraft_figures_json,
 * stagecraft_export_as, stagecraft_digest, stagecraft_compare_json,
 * stagecraft_plan_json), built by tests/embed.sh against the installed
 * library, which compares the files written here with the commands' output
 * byte for byte (`sim --json`, `export`, `compare --json`; `plan --json`
 * less its seconds): one writer for both. Writes figures.json,
 * comms-2.14.csv, dump.json, compare.json, plan.json, digest.txt into the
 * current folder; prints "texts: N passed, N failed".
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

static void save(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(text, 1, len, f);
        fclose(f);
    }
}

int main(void)
{
    stagecraft *sc = stagecraft_open();
    if (!sc)
        return 1;
    const char *defs[] = {"p=4", "m=8", NULL}, *text;
    size_t len;
    stagecraft_program *p;
    check(stagecraft_search_time(sc, 0) == STAGECRAFT_OK, "search time 0", sc);
    int rc = stagecraft_load(sc, "zb-v", defs, &p);
    check(rc == STAGECRAFT_OK, "load zb-v", sc);
    if (rc)
        return 1;
    rc = stagecraft_figures_json(p, &text, &len);
    check(rc == STAGECRAFT_OK && len == strlen(text), "figures_json", sc);
    if (!rc)
        save("figures.json", text, len);
    stagecraft_export_options o = {.torch = "2.14"};
    rc = stagecraft_export_as(p, "torch-csv-comms", &o, &text, &len);
    check(rc == STAGECRAFT_OK, "export_as torch-csv-comms --torch 2.14", sc);
    if (!rc)
        save("comms-2.14.csv", text, len);
    rc = stagecraft_export_as(p, "json", NULL, &text, &len);
    check(rc == STAGECRAFT_OK, "export_as json", sc);
    if (!rc)
        save("dump.json", text, len);
    char hex[17];
    rc = stagecraft_digest(p, hex);
    check(rc == STAGECRAFT_OK && strlen(hex) == 16, "digest", sc);
    if (!rc)
        save("digest.txt", hex, 16);
    stagecraft_export_options titan = {.torchtitan = 1};
    rc = stagecraft_export_as(p, "torch-csv-comms", &titan, &text, &len);
    check(rc == STAGECRAFT_USAGE && strstr(stagecraft_errmsg(sc), "torchtitan loads compute_only"),
          "export_as refuses what the command refuses", sc);
    check(stagecraft_comm(p, "mpi") == STAGECRAFT_USAGE, "comm 'mpi': usage", sc);
    const char *recipes[] = {"1f1b", "zb-h1", NULL}, *sweep[] = {"p=4", "m=8,16", NULL};
    rc = stagecraft_compare_json(sc, recipes, sweep, &text, &len);
    check(rc == STAGECRAFT_OK, "compare_json", sc);
    if (!rc)
        save("compare.json", text, len);
    const char *pdefs[] = {"p=4", "m=8", NULL};
    stagecraft_plan_settings ps = {.cap = "3", .time_limit = -1, .defs = pdefs};
    rc = stagecraft_plan_json(sc, &ps, &text, &len);
    check(rc == STAGECRAFT_OK, "plan_json", sc);
    if (!rc)
        save("plan.json", text, len);
    stagecraft_plan_settings none = {.cap = "0.1", .time_limit = -1, .defs = pdefs};
    rc = stagecraft_plan_json(sc, &none, &text, &len);
    check(rc == STAGECRAFT_LIMIT && strstr(stagecraft_errmsg(sc), "nothing meets cap 0.1") && len,
          "plan_json: nothing fits is code 7, with the text", sc);
    stagecraft_close(sc);
    printf("texts: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
