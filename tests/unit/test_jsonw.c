/*
 * test_jsonw.c — the JSON writer: separators, layouts, escaping, numbers
 * as every output prints them (docs/cli.md: up to 15 significant digits),
 * null for what JSON cannot hold; the buffered writer (outbuf.h) under it:
 * the same bytes, and its printf what printf writes.
 */
#include "formats/jsonw.h"
#include "ir/numfmt.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*writer)(sc_jw *w);

/* What fn writes, in a static buffer; through a buffered writer (outbuf.h)
 * when `buffered`. */
static const char *written_by(writer fn, int buffered)
{
    static char out[1024];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sc_out *o = malloc(sizeof *o);
    sc_out_init(o, f);
    sc_jw w;
    if (buffered)
        sc_jw_init_out(&w, o);
    else
        sc_jw_init(&w, f);
    fn(&w);
    sc_out_flush(o);
    free(o);
    fclose(f);
    snprintf(out, sizeof out, "%s", buf ? buf : "");
    free(buf);
    return out;
}

static const char *written(writer fn)
{
    static char plain[1024];
    snprintf(plain, sizeof plain, "%s", written_by(fn, 0));
    /* Every test's writer writes the same bytes through the buffer. */
    CHECK(strcmp(plain, written_by(fn, 1)) == 0);
    return plain;
}

static void compact(sc_jw *w)
{
    static const double v[] = {24, 0.272727272727273, 1.0 / 3};
    static const int iv[] = {0, 1};
    sc_jw_object(w, NULL);
    sc_jw_str(w, "recipe", "1f1b");
    sc_jw_int(w, "devices", 4);
    sc_jw_nums(w, "busy", v, 3);
    sc_jw_ints(w, "placement", iv, 2);
    sc_jw_null(w, "bottleneck");
    sc_jw_bool(w, "shared", 1);
    sc_jw_object(w, "empty");
    sc_jw_end(w);
    sc_jw_array(w, "none");
    sc_jw_end(w);
    sc_jw_end(w);
}

TEST(compact)
{
    CHECK(strcmp(written(compact),
                 "{\"recipe\": \"1f1b\", \"devices\": 4, \"busy\": [24, 0.272727272727273, "
                 "0.333333333333333], \"placement\": [0, 1], \"bottleneck\": null, "
                 "\"shared\": true, \"empty\": {}, \"none\": []}") == 0);
}

/* A member whose value another writer wrote (sim --json --with-program). */
static void raw(sc_jw *w)
{
    sc_jw_object(w, NULL);
    sc_jw_str(w, "digest", "00ff");
    sc_jw_key(w, "program");
    fputs("{\"a\": 1}\n", w->f);
    sc_jw_int(w, "after", 2);
    sc_jw_end(w);
}

TEST(raw_member)
{
    CHECK(strcmp(written(raw),
                 "{\"digest\": \"00ff\", \"program\": {\"a\": 1}\n, \"after\": 2}") == 0);
}

static void lines(sc_jw *w)
{
    sc_jw_object(w, NULL);
    sc_jw_layout(w, "\n  ", ",\n  ", "\n");
    sc_jw_int(w, "a", 1);
    sc_jw_array(w, "rows");
    sc_jw_layout(w, "\n    ", ",\n    ", "\n  ");
    sc_jw_object(w, NULL);
    sc_jw_num(w, "x", 1.5);
    sc_jw_sep(w, ",\n      ");
    sc_jw_num(w, "y", 2);
    sc_jw_end(w);
    sc_jw_int(w, NULL, 7);
    sc_jw_end(w);
    sc_jw_array(w, "empty");
    sc_jw_layout(w, "\n    ", ",\n    ", "\n  ");
    sc_jw_end(w);
    sc_jw_end(w);
}

TEST(layout)
{
    CHECK(strcmp(written(lines), "{\n  \"a\": 1,\n  \"rows\": [\n    {\"x\": 1.5,\n      \"y\": 2},\n"
                                 "    7\n  ],\n  \"empty\": []\n}") == 0);
}

/* Raw elements (sc_jw_raw) between members written one at a time: the
 * separators of the layout, the bytes as given. */
static void raw_elements(sc_jw *w)
{
    sc_jw_array(w, NULL);
    sc_jw_layout(w, "\n  ", ",\n  ", "\n");
    sc_out *o = sc_jw_raw(w);
    sc_out_write(o, "{\"a\": ", 6);
    sc_out_quote(o, "x\"y");
    sc_out_puts(o, ", \"n\": ");
    sc_out_num(o, 2.5);
    sc_out_puts(o, ", \"i\": ");
    sc_out_int(o, -7);
    sc_out_putc(o, '}');
    sc_jw_int(w, NULL, 3);
    o = sc_jw_raw(w);
    sc_out_num(o, NAN);
    sc_jw_end(w);
}

TEST(raw_elements)
{
    CHECK(strcmp(written_by(raw_elements, 1),
                 "[\n  {\"a\": \"x\\\"y\", \"n\": 2.5, \"i\": -7},\n  3,\n  null\n]") == 0);
    sc_jw w; /* a writer straight to a FILE has no buffer to hand out */
    sc_jw_init(&w, stdout);
    CHECK(sc_jw_raw(&w) == NULL);
}

static void strings(sc_jw *w)
{
    sc_jw_array(w, NULL);
    sc_jw_str(w, NULL, "a \"q\" \\ b");
    sc_jw_str(w, NULL, "tab\tnl\n\x01\x1f");
    sc_jw_str(w, NULL, "\xc3\xa9 \x7f");
    sc_jw_end(w);
}

TEST(escaping)
{
    CHECK(strcmp(written(strings), "[\"a \\\"q\\\" \\\\ b\", \"tab\\u0009nl\\u000a\\u0001\\u001f\", "
                                   "\"\xc3\xa9 \x7f\"]") == 0);
}

static void numbers(sc_jw *w)
{
    sc_jw_array(w, NULL);
    sc_jw_num(w, NULL, NAN);
    sc_jw_num(w, NULL, INFINITY);
    sc_jw_num_g(w, NULL, 0.1, 17);
    sc_jw_num_g(w, NULL, 1e-5, 6);
    sc_jw_num_g(w, NULL, 4.123456789e-5, 9);
    sc_jw_whole(w, NULL, 262143.6);
    sc_jw_whole(w, NULL, -INFINITY);
    sc_jw_int(w, NULL, -3);
    sc_jw_int(w, NULL, 1LL << 40);
    sc_jw_bool(w, NULL, 0);
    sc_jw_end(w);
}

TEST(numbers)
{
    CHECK(strcmp(written(numbers), "[null, null, 0.10000000000000001, 1e-05, 4.12345679e-05, 262144, "
                                   "null, -3, 1099511627776, false]") == 0);
}

/* numfmt.h writes what printf writes, or declines: integers of every size,
 * multiples of 1/16 and of other fractions around its bounds, both signs. */
static int same_g(double x, int digits)
{
    char want[64], got[SC_NUMFMT_MAX + 1];
    snprintf(want, sizeof want, "%.*g", digits, x);
    int n = sc_fmt_g(got, x, digits);
    got[n] = 0;
    return n == 0 || strcmp(got, want) == 0;
}

TEST(numfmt)
{
    static const long long ints[] = {0, 1, 9, 10, 99, 100, 12345, -1, -10, -987654321,
                                     1LL << 40, 999999999999999LL, -999999999999999LL,
                                     9223372036854775807LL, -9223372036854775807LL - 1};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        char want[32], got[SC_NUMFMT_MAX + 1];
        snprintf(want, sizeof want, "%lld", ints[i]);
        got[sc_fmt_int(got, ints[i])] = 0;
        CHECK(strcmp(got, want) == 0);
        CHECK(same_g((double)ints[i], 15) && same_g((double)ints[i], 17));
    }
    int bad = 0;
    for (long k = -40000; k <= 40000; k++) {
        double x = (double)k / 16, y = (double)k / 10, z = (double)k / 3;
        bad += !same_g(x, 15) + !same_g(x, 17) + !same_g(y, 15) + !same_g(z, 17);
        bad += !same_g(x * 1e5 + 0.0625, 15) + !same_g(x * 1e10, 15) + !same_g(x * 1e11, 15);
    }
    CHECK(bad == 0);
    CHECK(same_g(-0.0, 15) && same_g(1e15, 15) && same_g(1e15 - 1, 15) && same_g(999999999.9375, 15));
    CHECK(same_g(1e9 + 0.5, 15) && same_g(0.5, 6) && same_g(1e300, 17) && same_g(1e-300, 17));
    char b[SC_NUMFMT_MAX];
    CHECK(sc_fmt_g(b, 0.1, 17) == 0 && sc_fmt_g(b, 1.5, 6) == 0 && sc_fmt_g(b, 1e15, 15) == 0);
}

/* sc_out_printf writes what printf writes: its own "%.2f", "%.1f", "%d"
 * and "%.6g" of whole numbers around their bounds and ties, both signs. */
TEST(outbuf_printf)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sc_out *o = malloc(sizeof *o);
    sc_out_init(o, f);
    size_t cap = 1 << 24, n = 0;
    char *want = malloc(cap);
    static const double edge[] = {0, -0.0, 0.005, 0.015, 0.125, 0.375, -0.001, -0.04, 0.05, 0.25,
                                  2.675, 1.005, 999999.995, 999999.5, 1e6, -1e6, 1e7 + 0.25,
                                  123456.785, 1e-300, 1e300, NAN, INFINITY, -INFINITY};
    for (long k = -100000; k <= 100000 + (long)(sizeof edge / sizeof edge[0]) && n < cap - 256; k++) {
        double x = k > 100000 ? edge[k - 100001] : (double)k / (k % 3 ? 1000 : 8) + k * 1e-7;
        n += (size_t)snprintf(want + n, cap - n, "<%.2f %.1f %.6g %d %s %.4g%%>", x, x, x, (int)k,
                              "s", x);
        sc_out_printf(o, "<%.2f %.1f %.6g %d %s %.4g%%>", x, x, x, (int)k, "s", x);
    }
    n += (size_t)snprintf(want + n, cap - n, "%zu %02x %lld", (size_t)7, 10, -5LL);
    sc_out_printf(o, "%zu %02x %lld", (size_t)7, 10, -5LL);
    CHECK(sc_out_flush(o) == 0);
    fclose(f);
    CHECK(n < cap && len == n && memcmp(buf, want, n) == 0);
    free(buf);
    free(want);
    free(o);
}

int main(void)
{
    RUN(compact);
    RUN(raw_member);
    RUN(layout);
    RUN(escaping);
    RUN(raw_elements);
    RUN(numbers);
    RUN(numfmt);
    RUN(outbuf_printf);
    return harness_done("jsonw");
}
