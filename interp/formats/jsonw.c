/*
 * jsonw.c — the JSON writer (jsonw.h).
 */
#include "jsonw.h"
#include "numfmt.h"

#include <assert.h>
#include <math.h>

void sc_jw_init(sc_jw *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->next = NULL;
}

void sc_jw_quote(FILE *f, const char *s)
{
    fputc('"', f);
    const char *p = s;
    while (*p && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
        p++;
    if (!*p) { /* nothing to escape: the common case, in one piece */
        fwrite(s, 1, (size_t)(p - s), f);
        fputc('"', f);
        return;
    }
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The separator of the next member or element, and its key. */
static void head(sc_jw *w, const char *key)
{
    if (w->depth > 0) {
        sc_jw_level *l = &w->lv[w->depth - 1];
        fputs(w->next ? w->next : l->n ? l->sep : l->first, w->f);
        w->next = NULL;
        l->n++;
    }
    if (key) {
        sc_jw_quote(w->f, key);
        fputs(": ", w->f);
    }
}

void sc_jw_key(sc_jw *w, const char *key) { head(w, key); }

static void start(sc_jw *w, const char *key, char c)
{
    assert(w->depth < SC_JW_DEPTH);
    head(w, key);
    fputc(c, w->f);
    w->lv[w->depth++] = (sc_jw_level){c == '{' ? '}' : ']', 0, "", ", ", ""};
}

void sc_jw_object(sc_jw *w, const char *key) { start(w, key, '{'); }
void sc_jw_array(sc_jw *w, const char *key) { start(w, key, '['); }

void sc_jw_layout(sc_jw *w, const char *first, const char *sep, const char *end)
{
    sc_jw_level *l = &w->lv[w->depth - 1];
    l->first = first;
    l->sep = sep;
    l->end = end;
}

void sc_jw_end(sc_jw *w)
{
    assert(w->depth > 0);
    sc_jw_level *l = &w->lv[--w->depth];
    if (l->n)
        fputs(l->end, w->f);
    fputc(l->close, w->f);
}

void sc_jw_sep(sc_jw *w, const char *sep) { w->next = sep; }

void sc_jw_str(sc_jw *w, const char *key, const char *s)
{
    head(w, key);
    sc_jw_quote(w->f, s);
}

void sc_jw_int(sc_jw *w, const char *key, long long x)
{
    head(w, key);
    char b[SC_NUMFMT_MAX];
    fwrite(b, 1, (size_t)sc_fmt_int(b, x), w->f);
}

void sc_jw_bool(sc_jw *w, const char *key, int b)
{
    head(w, key);
    fputs(b ? "true" : "false", w->f);
}

void sc_jw_null(sc_jw *w, const char *key)
{
    head(w, key);
    fputs("null", w->f);
}

void sc_jw_num_g(sc_jw *w, const char *key, double x, int digits)
{
    head(w, key);
    char b[SC_NUMFMT_MAX];
    int n;
    if (!isfinite(x))
        fputs("null", w->f);
    else if ((n = sc_fmt_g(b, x, digits)) > 0)
        fwrite(b, 1, (size_t)n, w->f);
    else
        fprintf(w->f, "%.*g", digits, x);
}

void sc_jw_num(sc_jw *w, const char *key, double x) { sc_jw_num_g(w, key, x, 15); }

void sc_jw_whole(sc_jw *w, const char *key, double x)
{
    head(w, key);
    char b[SC_NUMFMT_MAX];
    if (x != 0 && fabs(x) < 1e15 && (double)(long long)x == x) /* "%.0f" keeps -0's sign */
        fwrite(b, 1, (size_t)sc_fmt_int(b, (long long)x), w->f);
    else if (isfinite(x))
        fprintf(w->f, "%.0f", x);
    else
        fputs("null", w->f);
}

void sc_jw_nums_g(sc_jw *w, const char *key, const double *v, int n, int digits)
{
    sc_jw_array(w, key);
    for (int i = 0; i < n; i++)
        sc_jw_num_g(w, NULL, v[i], digits);
    sc_jw_end(w);
}

void sc_jw_nums(sc_jw *w, const char *key, const double *v, int n)
{
    sc_jw_nums_g(w, key, v, n, 15);
}

void sc_jw_ints(sc_jw *w, const char *key, const int *v, int n)
{
    sc_jw_array(w, key);
    for (int i = 0; i < n; i++)
        sc_jw_int(w, NULL, v[i]);
    sc_jw_end(w);
}
