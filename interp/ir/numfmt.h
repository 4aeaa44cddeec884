/*
 * numfmt.h — numbers into text without printf, for the writers of large
 * outputs (formats/: jsonw.c, outbuf.c, torchcsv_write.c) and the
 * instructions' names (instr_name.c; here in ir/, below both, so that ir/
 * need not reach up into formats/): byte for byte what printf writes,
 * for the values they write most, at a fraction of its cost (issue 34:
 * printf was most of `export`).
 *
 *     char b[SC_NUMFMT_MAX];
 *     int n = sc_fmt_int(b, -42);              // "-42", n = 3
 *     n = sc_fmt_g(b, 2.5, 15);                // "2.5" (as "%.15g"), or 0: use printf
 *
 * Tested by: tests/unit/test_jsonw.c (and the names: tests/unit/test_interp.c).
 */
#ifndef SC_NUMFMT_H
#define SC_NUMFMT_H

#include <math.h>

/* Room for any integer and any number sc_fmt_g writes. */
#define SC_NUMFMT_MAX 32

/* x in decimal, as "%lld"; returns the length (no terminating NUL). */
static inline int sc_fmt_int(char *buf, long long x)
{
    char t[24];
    int n = 0, len = 0;
    /* The magnitude as unsigned: -LLONG_MIN does not fit a long long. */
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        t[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        buf[len++] = '-';
    while (n)
        buf[len++] = t[--n];
    return len;
}

/* x as "%.*g" with `digits` writes it, when x is an integer below 1e15 in
 * magnitude or a multiple of 1/16 below 1e9 (times and memory in the
 * recipes' units mostly are) and digits >= 15: those have at most 15
 * significant digits, so %g writes them in full, without an exponent and
 * without trailing zeros. Returns the length, or 0 for any other x (the
 * caller prints it with printf). */
static inline int sc_fmt_g(char *buf, double x, int digits)
{
    if (digits < 15 || !(fabs(x) < 1e15))
        return 0;
    if (x == 0) { /* "%g" keeps the sign of -0 */
        int len = 0;
        if (signbit(x))
            buf[len++] = '-';
        buf[len++] = '0';
        return len;
    }
    long long whole = (long long)x;
    if ((double)whole == x)
        return sc_fmt_int(buf, whole);
    if (!(fabs(x) < 1e9))
        return 0;
    double s = x * 16; /* exact: a power of two */
    long long q = (long long)s;
    if ((double)q != s)
        return 0;
    int len = 0;
    unsigned long long a = q < 0 ? 0ULL - (unsigned long long)q : (unsigned long long)q;
    if (q < 0)
        buf[len++] = '-';
    len += sc_fmt_int(buf + len, (long long)(a / 16));
    /* The sixteenths in four decimals (1/16 = 0.0625), trailing zeros off;
     * not zero, as x is not whole. */
    unsigned f = (unsigned)(a % 16) * 625;
    char d[4] = {(char)('0' + f / 1000), (char)('0' + f / 100 % 10), (char)('0' + f / 10 % 10),
                 (char)('0' + f % 10)};
    int nd = 4;
    while (d[nd - 1] == '0')
        nd--;
    buf[len++] = '.';
    for (int i = 0; i < nd; i++)
        buf[len++] = d[i];
    return len;
}

#endif
