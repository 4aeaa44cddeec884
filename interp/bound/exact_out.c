/*
 * exact_out.c — the exact optimum's best schedule as a Lua recipe
 * (exact_impl.h, docs/bound.md#the-search): `sim --optimal
 * --export-optimal FILE` writes it, and `sim FILE` times it again.
 *
 * The recipe holds the program's shape (devices, microbatches, stages and
 * their devices), its costs per stage, T_comm, the units of each stage's
 * record, w_keep, the caps and the lengths, and each device's passes in the
 * order the schedule starts them, as B and W (the model splits every BW).
 */
#include "exact_impl.h"
#include "ir/alloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing text. */
typedef struct text {
    char *s;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->failed || k < 0)
        return;
    if (t->len + (size_t)k + 1 > t->cap) {
        size_t cap = 2 * (t->len + (size_t)k + 1);
        char *s = sc_realloc(t->s, cap);
        if (!s) {
            t->failed = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)k + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)k;
}

/* `name = {v(0), ..., v(count-1)},` with v a per-stage cost. */
static void put_list(text *t, const char *name, const sc_prog *pg, int count,
                     double (*v)(const sc_prog *, int))
{
    put(t, "  %s = {", name);
    for (int i = 0; i < count; i++)
        put(t, "%s%.17g", i ? ", " : "", v(pg, i));
    put(t, "},\n");
}

static const model *sort_md;
static const double *sort_x;

/* Passes by start; at one start, by end (a pass of no time first), then
 * by number (F before B before W of one record). */
static int by_start(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    double xi = sort_x[i], xj = sort_x[j];
    if (xi != xj)
        return xi < xj ? -1 : 1;
    double ei = xi + sort_md->d[i], ej = xj + sort_md->d[j];
    if (ei != ej)
        return ei < ej ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* The shape, the costs and the caps: sc.program's fields. */
static void put_fields(text *t, const sc_prog *pg, int S)
{
    int P = sc_prog_devices(pg), m = sc_prog_microbatches(pg), capped = 0;
    put(t, "  p = %d, m = %d, stages = %d,\n  placement = {", P, m, S);
    for (int s = 0; s < S; s++)
        put(t, "%s%d", s ? ", " : "", sc_prog_stage_device(pg, s));
    put(t, "},\n");
    put_list(t, "tf", pg, S, sc_prog_tf);
    put_list(t, "tb", pg, S, sc_prog_tb);
    put_list(t, "tw", pg, S, sc_prog_tw);
    put_list(t, "units", pg, S, sc_prog_mem);
    put(t, "  tcomm = %.17g, w_keep = %.17g,\n", sc_prog_tcomm(pg), sc_prog_w_keep(pg));
    for (int d = 0; d < P; d++)
        capped |= isfinite(sc_prog_mem_cap(pg, d));
    if (capped) {
        put(t, "  mem = {");
        for (int d = 0; d < P; d++) /* a device without a cap: one no record reaches */
            put(t, "%s%.17g", d ? ", " : "",
                isfinite(sc_prog_mem_cap(pg, d)) ? sc_prog_mem_cap(pg, d) : 1e300);
        put(t, "},\n");
    }
    const double *len = sc_prog_lengths(pg);
    if (len) {
        put(t, "  lengths = {");
        for (int i = 0; i < m; i++)
            put(t, "%s%.17g", i ? ", " : "", len[i]);
        put(t, "},\n");
    }
}

sc_status sc_exact_lua(const model *md, const double *x, char **lua)
{
    double makespan = 0;
    const sc_prog *pg = md->pg;
    int P = sc_prog_devices(pg), n = md->n, k = 0;
    int *idx = sc_calloc((size_t)n, sizeof *idx);
    text t = {0};
    *lua = NULL;
    if (!idx)
        return SC_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        if (pass_used(md, i)) {
            idx[k++] = i;
            makespan = fmax(makespan, x[i] + md->d[i]);
        }
    sort_md = md, sort_x = x;
    qsort(idx, (size_t)k, sizeof *idx, by_start);
    put(&t, "-- The best schedule `sim --optimal` found for this program's class (makespan %.17g\n"
            "-- in the model: docs/bound.md#the-search); `stagecraft sim FILE` times it.\n"
            "return sc.program {\n", makespan);
    put_fields(&t, pg, md->S);
    put(&t, "  order = {\n");
    for (int d = 0; d < P; d++) {
        put(&t, "    \"");
        int first = 1;
        for (int a = 0; a < k; a++) {
            int i = idx[a], s = (i / 3) / md->m;
            if (md->dev[i] != d)
                continue;
            const char *kind = i % 3 == 0 ? "F" : i % 3 == 2 ? "W" : md->fold ? "BW" : "B";
            put(&t, "%s%s%d.%d", first ? "" : " ", kind, (i / 3) % md->m, sc_prog_chunk(pg, s));
            first = 0;
        }
        put(&t, "\",\n");
    }
    put(&t, "  },\n}\n");
    sc_free(idx);
    if (t.failed) {
        sc_free(t.s);
        return SC_ERR_NOMEM;
    }
    *lua = t.s;
    return SC_OK;
}
