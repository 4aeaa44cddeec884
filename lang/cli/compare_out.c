/*
 * compare_out.c — what `stagecraft compare` prints (cmd_compare.h): the
 * table, its notes, --json and the stacked --svg; and the command itself,
 * which runs the rows of cmd_compare.c and prints them.
 */
#include "cli.h"
#include "cmd_compare.h"
#include "engine/compare.h"
#include "engine/engine.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound/bound.h"
#include "formats/svg.h"
#include "ir/alloc.h"
#include "lua/sc_lua.h"

enum { NCOL = 12 + MAX_DEFS };

/* Bytes for people: 262144 -> "256 KiB". */
static void human(char *out, size_t n, double b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024 && u < 5)
        b /= 1024, u++;
    snprintf(out, n, u ? "%.4g %s" : "%.0f %s", b, unit[u]);
}

/* The figures of a row that ran, into its cells f[0..9] (f[9], the bytes,
 * only with a model or bytes per unit). */
static void row_figures(const row *w, int bytes, char (*f)[48])
{
    snprintf(f[0], 48, "%.6g", w->makespan);
    snprintf(f[1], 48, "%.6g", w->bound);
    snprintf(f[2], 48, "%.2f%%", 100 * sc_bound_gap(w->makespan, w->bound));
    snprintf(f[3], 48, "%.2f%%", 100 * w->bubble);
    snprintf(f[4], 48, "%.2f%% d%d", 100 * w->idle_max, w->idlest);
    if (w->bneck >= 0)
        snprintf(f[5], 48, "d%d", w->bneck);
    else
        snprintf(f[5], 48, "none");
    snprintf(f[6], 48, "%.4g", w->peak_max);
    snprintf(f[7], 48, "%.4g", w->peak_min);
    snprintf(f[8], 48, "%zu", w->instructions);
    if (w->own_model)
        human(f[9], 48, w->total_max);
    else if (bytes)
        human(f[9], 48, w->peak_max * w->unit_bytes);
}

/* The tail of a row that failed: over mem, what it needs (the end of its
 * message); else the start of the error (--json has the whole message). */
static void print_row_error(const row *w)
{
    char e[112];
    if (w->over_mem) {
        const char *need = strstr(w->error, "needs mem >= ");
        if (!need)
            need = strstr(w->error, "needs ");
        sc_clean_text(e, sizeof e, need ? need : w->error, 0);
        char *paren = strchr(e, '(');
        if (paren && paren > e)
            paren[-1] = 0;
        printf("over mem: %s", e);
        return;
    }
    sc_clean_text(e, sizeof e, w->error, 0);
    printf("error (exit %d): %s%s", w->code, e, strlen(w->error) >= sizeof e - 1 ? "..." : "");
}

static void print_table(const cmp *c)
{
    /* Cells: recipe, the swept names, then the figures. */
    int sweeps[MAX_DEFS], ns = 0;
    for (int k = 0; k < c->ndefs; k++)
        if (c->defs[k].sweep)
            sweeps[ns++] = k;
    const char *head[NCOL];
    int nc = 0;
    head[nc++] = "recipe";
    for (int j = 0; j < ns; j++)
        head[nc++] = c->defs[sweeps[j]].name;
    int fig = nc;
    static const char *const figs[] = {"makespan", "bound", "gap", "bubble", "idle max",
                                       "bottleneck", "peak max", "peak min", "instructions",
                                       "peak bytes"};
    int bytes = c->bytes || c->model_rows;
    for (int j = 0; j < 9 + bytes; j++)
        head[nc++] = figs[j];
    int width[NCOL];
    for (int j = 0; j < nc; j++)
        width[j] = (int)strlen(head[j]);
    char (*cell)[NCOL][48] = calloc((size_t)c->nrows, sizeof *cell);
    if (!cell)
        return;
    for (int i = 0; i < c->nrows; i++) {
        const row *w = &c->rows[i];
        char clean[48];
        snprintf(cell[i][0], 48, "%s", sc_clean_text(clean, sizeof clean, c->recipes[w->recipe], 0));
        for (int j = 0; j < ns; j++)
            snprintf(cell[i][1 + j], 48, "%s",
                     sc_clean_text(clean, sizeof clean,
                                   c->defs[sweeps[j]].values[sc_eng_compare_value_of(c, w->combo, sweeps[j])], 0));
        if (!w->error)
            row_figures(w, bytes, cell[i] + fig);
        for (int j = 0; j < nc; j++)
            if ((int)strlen(cell[i][j]) > width[j])
                width[j] = (int)strlen(cell[i][j]);
    }
    for (int j = 0; j < nc; j++)
        if (j + 1 < nc)
            printf("%-*s  ", width[j], head[j]);
        else
            printf("%s\n", head[j]);
    for (int i = 0; i < c->nrows; i++) {
        const row *w = &c->rows[i];
        if (c->fit && w->over_mem)
            continue;
        int last = w->error ? fig : nc;
        for (int j = 0; j < last; j++)
            if (j + 1 < nc)
                printf("%-*s  ", width[j], cell[i][j]);
            else
                printf("%s", cell[i][j]);
        if (w->error)
            print_row_error(w);
        putchar('\n');
    }
    free(cell);
}

/* A note for each -D name that some recipes do not declare. */
static void print_notes(lua_State *L, const cmp *c, int decl)
{
    for (int k = 0; k < c->ndefs; k++) {
        if (strcmp(c->defs[k].name, "lengths") == 0)
            continue; /* every recipe's (docs/lengths.md) */
        char list[512] = "";
        size_t n = 0;
        int missing = 0;
        for (int r = 0; r < c->nrec; r++) {
            lua_geti(L, decl, r + 1);
            if (lua_getfield(L, -1, c->defs[k].name) == LUA_TNIL && n + 80 < sizeof list) {
                char clean[64];
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", missing ? ", " : "",
                                      sc_clean_text(clean, sizeof clean, c->recipes[r], 0));
                missing++;
            }
            lua_pop(L, 2);
        }
        if (missing && sc_eng_compare_is_model_key(c->defs[k].name))
            printf("note: %s sizes the model (bytes) for every recipe; %s %s not declare it\n",
                   c->defs[k].name, list, missing > 1 ? "do" : "does");
        else if (missing)
            printf("note: %s is not a parameter of %s (left out there)\n", c->defs[k].name, list);
    }
    /* Rows of different sizes are not alike: say so (a recipe's own p). */
    int lo = 0, hi = 0;
    char sizes[512] = "";
    size_t n = 0;
    for (int i = 0; i < c->nrows; i++) {
        const row *w = &c->rows[i];
        if (w->error)
            continue;
        lo = lo && lo < w->P ? lo : w->P;
        hi = hi > w->P ? hi : w->P;
        char clean[64];
        if (n + 80 < sizeof sizes)
            n += (size_t)snprintf(sizes + n, sizeof sizes - n, "%s%s %d", n ? ", " : "",
                                  sc_clean_text(clean, sizeof clean, c->recipes[w->recipe], 0), w->P);
    }
    int swept = 0; /* -D p=...: the rows differ by the user's choice */
    for (int k = 0; k < c->ndefs; k++)
        swept |= strcmp(c->defs[k].name, "p") == 0;
    if (lo != hi && !swept)
        printf("note: the rows differ in devices: %s (each recipe's own p; -D p=N sets one)\n",
               sizes);
    if (c->model_rows)
        printf("note: peak bytes of the model's whole device (parameters, gradients, optimizer "
               "states, peak activations, workspace: docs/model.md#bytes), as sim counts them\n");
    if (c->bytes && c->nrows > c->model_rows)
        printf("note: peak bytes of the built-in model (stagecraft run's, "
               "docs/run.md#memory-units-in-bytes): the memory model is the model's, w_keep = 1\n");
}

/* --svg: the programs stacked on one time axis. */
static int write_svg(lua_State *L, const cmp *c)
{
    int n = 0;
    const sc_prog **pgs = calloc((size_t)c->nrows, sizeof *pgs);
    const sc_sim **sims = calloc((size_t)c->nrows, sizeof *sims);
    char **titles = calloc((size_t)c->nrows, sizeof *titles);
    if (!pgs || !sims || !titles) {
        free(pgs);
        free(sims);
        free(titles);
        return sc_cli_fail(SC_EXIT_NOMEM, "out of memory");
    }
    for (int i = 0; i < c->nrows; i++) {
        const row *w = &c->rows[i];
        if (w->error || w->ud == LUA_NOREF)
            continue;
        lua_rawgeti(L, LUA_REGISTRYINDEX, w->ud);
        sc_lprog *lp = sc_lua_toprog(L, -1);
        lua_pop(L, 1); /* still referenced */
        sc_status st;
        pgs[n] = lp->pg;
        sims[n] = sc_lua_sim(lp, &st);
        char t[512];
        size_t k = (size_t)snprintf(t, sizeof t, "%s", c->recipes[w->recipe]);
        for (int j = 0; j < c->ndefs && k < sizeof t; j++)
            if (c->defs[j].sweep)
                k += (size_t)snprintf(t + k, sizeof t - k, " %s=%s", c->defs[j].name,
                                      c->defs[j].values[sc_eng_compare_value_of(c, w->combo, j)]);
        titles[n++] = strdup(t);
    }
    sc_svg_opts so = {c->width, c->from, c->to};
    int rc = n ? sc_cli_svg_stack(c->svg, n, pgs, sims, (const char *const *)titles, &so)
               : sc_cli_fail(SC_EXIT_USAGE, "--svg: no row has a program to draw");
    for (int i = 0; i < n; i++)
        free(titles[i]);
    free(pgs);
    free(sims);
    free(titles);
    return rc;
}

int sc_cmd_compare(lua_State *L, int argc, char **argv)
{
    cmp c;
    memset(&c, 0, sizeof c);
    int rc = sc_cli_compare_parse(L, argc, argv, &c);
    lua_newtable(L);
    int decl = lua_gettop(L);
    int first = 0;
    if (!rc) {
        sc_eng_err e;
        sc_eng_err *prev = sc_eng_catch(&e);
        rc = sc_eng_compare_rows(L, &c, decl, &first);
        sc_eng_release(prev);
        if (rc)
            rc = sc_cli_fail(rc, e.msg);
    }
    if (!rc) {
        if (c.json) {
            sc_jw w;
            sc_jw_init(&w, stdout);
            sc_eng_compare_json(&c, &w);
            putchar('\n');
        }
        else {
            print_table(&c);
            print_notes(L, &c, decl);
        }
        fflush(stdout);
        /* All or nothing (docs/cli.md, compare): a row that failed writes no
         * picture of the others. A row over the cap is an answer, drawn. */
        if (c.svg && first)
            fprintf(stderr, "stagecraft: note: '%s' not written: a row failed\n", c.svg);
        else if (c.svg)
            rc = write_svg(L, &c);
    }
    sc_eng_compare_free(L, &c);
    lua_settop(L, decl - 1);
    return rc ? rc : first;
}
