/*
 * jsonw.c — the JSON writer (jsonw.h).
 */
#include "jsonw.h"
#include "ir/numfmt.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void sc_jw_init(sc_jw *w, FILE *f)
{
    w->f = f;
    w->out = NULL;
    w->depth = 0;
    w->next = NULL;
}

void sc_jw_init_out(sc_jw *w, sc_out *o)
{
    sc_jw_init(w, o->f);
    w->out = o;
}

/* Bytes to the writer's buffer, or straight to its FILE. The pieces are
 * short (a key, a separator, a number): copied by hand, not by memcpy. */
static inline void put(sc_jw *w, const char *s, size_t n)
{
    sc_out *o = w->out;
    if (!o) {
        fwrite(s, 1, n, w->f);
    } else if (n <= 32 && o->n + n <= SC_OUT_BUF) {
        char *d = o->buf + o->n;
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
        o->n += n;
    } else {
        sc_out_write(o, s, n);
    }
}

static inline void putch(sc_jw *w, char c)
{
    if (w->out)
        sc_out_putc(w->out, c);
    else
        fputc(c, w->f);
}

static void putstr(sc_jw *w, const char *s) { put(w, s, strlen(s)); }

/* 1 for the bytes a JSON string escapes: '"', '\\' and the controls. */
static const unsigned char escaped[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1,
};

static void quote(sc_jw *w, const char *s)
{
    const char *p = s;
    while (*p && !escaped[(unsigned char)*p])
        p++;
    if (!*p) { /* nothing to escape: the common case, in one piece */
        size_t n = (size_t)(p - s);
        sc_out *o = w->out;
        if (o && n + 2 <= 32 && o->n + n + 2 <= SC_OUT_BUF) {
            char *d = o->buf + o->n;
            d[0] = '"';
            for (size_t i = 0; i < n; i++)
                d[i + 1] = s[i];
            d[n + 1] = '"';
            o->n += n + 2;
            return;
        }
        putch(w, '"');
        put(w, s, n);
        putch(w, '"');
        return;
    }
    putch(w, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char b[8];
        if (c == '"' || c == '\\') {
            putch(w, '\\');
            putch(w, (char)c);
        } else if (c < 0x20) {
            snprintf(b, sizeof b, "\\u%04x", c);
            putstr(w, b);
        } else {
            putch(w, (char)c);
        }
    }
    putch(w, '"');
}

void sc_jw_quote(FILE *f, const char *s)
{
    sc_jw w;
    sc_jw_init(&w, f);
    quote(&w, s);
}

static void head(sc_jw *w, const char *key);

void sc_out_quote(sc_out *o, const char *s)
{
    sc_jw w;
    sc_jw_init_out(&w, o);
    quote(&w, s);
}

void sc_out_num(sc_out *o, double x)
{
    sc_jw w;
    sc_jw_init_out(&w, o);
    sc_jw_num(&w, NULL, x);
}

void sc_out_int(sc_out *o, long long x)
{
    char b[SC_NUMFMT_MAX];
    sc_out_write(o, b, (size_t)sc_fmt_int(b, x));
}

sc_out *sc_jw_raw(sc_jw *w)
{
    if (!w->out)
        return NULL;
    head(w, NULL);
    return w->out;
}

/* The separator of the next member or element, and its key. */
static void head(sc_jw *w, const char *key)
{
    if (w->depth > 0) {
        sc_jw_level *l = &w->lv[w->depth - 1];
        putstr(w, w->next ? w->next : l->n ? l->sep : l->first);
        w->next = NULL;
        l->n++;
    }
    if (key) {
        quote(w, key);
        put(w, ": ", 2);
    }
}

void sc_jw_key(sc_jw *w, const char *key)
{
    head(w, key);
    if (w->out) /* the caller writes the value to w->f itself: what came before goes first */
        sc_out_drain(w->out);
}

static void start(sc_jw *w, const char *key, char c)
{
    assert(w->depth < SC_JW_DEPTH);
    head(w, key);
    putch(w, c);
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
        putstr(w, l->end);
    putch(w, l->close);
}

void sc_jw_sep(sc_jw *w, const char *sep) { w->next = sep; }

void sc_jw_str(sc_jw *w, const char *key, const char *s)
{
    head(w, key);
    quote(w, s);
}

void sc_jw_int(sc_jw *w, const char *key, long long x)
{
    head(w, key);
    char b[SC_NUMFMT_MAX];
    put(w, b, (size_t)sc_fmt_int(b, x));
}

void sc_jw_bool(sc_jw *w, const char *key, int b)
{
    head(w, key);
    putstr(w, b ? "true" : "false");
}

void sc_jw_null(sc_jw *w, const char *key)
{
    head(w, key);
    put(w, "null", 4);
}

void sc_jw_num_g(sc_jw *w, const char *key, double x, int digits)
{
    head(w, key);
    char b[SC_NUMFMT_MAX];
    int n;
    if (!isfinite(x))
        put(w, "null", 4);
    else if ((n = sc_fmt_g(b, x, digits)) > 0 ||
             (n = snprintf(b, sizeof b, "%.*g", digits, x)) > 0)
        put(w, b, (size_t)n);
}

void sc_jw_num(sc_jw *w, const char *key, double x) { sc_jw_num_g(w, key, x, 15); }

void sc_jw_whole(sc_jw *w, const char *key, double x)
{
    head(w, key);
    char b[SC_NUMFMT_MAX];
    if (x != 0 && fabs(x) < 1e15 && (double)(long long)x == x) /* "%.0f" keeps -0's sign */
        put(w, b, (size_t)sc_fmt_int(b, (long long)x));
    else if (isfinite(x)) {
        char big[320]; /* "%.0f" of the largest double: 309 digits */
        int n = snprintf(big, sizeof big, "%.0f", x);
        put(w, big, n > 0 && n < (int)sizeof big ? (size_t)n : 0);
    } else
        put(w, "null", 4);
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
