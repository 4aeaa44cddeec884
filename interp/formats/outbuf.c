/*
 * outbuf.c — the buffered writer (outbuf.h).
 */
#include "outbuf.h"
#include "ir/numfmt.h"

#include <math.h>
#include <stdarg.h>

void sc_out_init(sc_out *o, FILE *f)
{
    o->f = f;
    o->n = 0;
}

void sc_out_drain(sc_out *o)
{
    if (o->n)
        fwrite(o->buf, 1, o->n, o->f);
    o->n = 0;
}

int sc_out_flush(sc_out *o)
{
    sc_out_drain(o);
    return fflush(o->f) != 0 || ferror(o->f) ? -1 : 0;
}

/* x as "%.*f" with prec 1 or 2 writes it, or 0 (the caller uses printf):
 * below 1e6 in magnitude, x * 10^prec is within a few units of 1e-8 of the
 * exact product, so its nearest whole number is printf's correctly rounded
 * one unless the product lies near a half (a tie, which printf rounds on
 * the exact binary value: left to it). */
static int fmt_fixed(char *b, double x, int prec)
{
    if (!(fabs(x) < 1e6))
        return 0;
    long long scale = prec == 1 ? 10 : 100;
    double r = fabs(x) * (double)scale, whole = floor(r);
    if (fabs(r - whole - 0.5) < 1e-6)
        return 0;
    long long q = (long long)whole + (r - whole > 0.5);
    int n = 0;
    if (signbit(x)) /* printf writes "-0.00" for -0 and for small negatives */
        b[n++] = '-';
    n += sc_fmt_int(b + n, q / scale);
    b[n++] = '.';
    long long frac = q % scale;
    if (prec == 2)
        b[n++] = (char)('0' + frac / 10);
    b[n++] = (char)('0' + frac % 10);
    return n;
}

void sc_out_printf(sc_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *p = fmt;
    while (*p) {
        const char *q = p;
        while (*q && *q != '%')
            q++;
        if (q > p)
            sc_out_write(o, p, (size_t)(q - p));
        if (!*q)
            break;
        /* A conversion: q at '%'. The common ones here, any other through
         * snprintf with its own spec. */
        char b[SC_NUMFMT_MAX];
        int n = 0;
        if (q[1] == 'd') {
            n = sc_fmt_int(b, va_arg(ap, int));
            sc_out_write(o, b, (size_t)n);
            p = q + 2;
            continue;
        }
        if (q[1] == 's') {
            sc_out_puts(o, va_arg(ap, const char *));
            p = q + 2;
            continue;
        }
        if (q[1] == '%') {
            sc_out_putc(o, '%');
            p = q + 2;
            continue;
        }
        if (q[1] == '.' && (q[2] == '1' || q[2] == '2') && q[3] == 'f') {
            double x = va_arg(ap, double);
            char big[320]; /* "%.2f" of the largest double: 312 bytes */
            if ((n = fmt_fixed(b, x, q[2] - '0')) > 0)
                sc_out_write(o, b, (size_t)n);
            else if ((n = snprintf(big, sizeof big, q[2] == '1' ? "%.1f" : "%.2f", x)) > 0)
                sc_out_write(o, big, (size_t)n < sizeof big ? (size_t)n : sizeof big - 1);
            p = q + 4;
            continue;
        }
        if (q[1] == '.' && q[2] == '6' && q[3] == 'g') {
            double x = va_arg(ap, double);
            /* A whole number below 1e6 (not -0): "%.6g" writes its digits. */
            if (x == floor(x) && fabs(x) < 1e6 && !(x == 0 && signbit(x)))
                n = sc_fmt_int(b, (long long)x);
            else
                n = snprintf(b, sizeof b, "%.6g", x);
            sc_out_write(o, b, (size_t)n);
            p = q + 4;
            continue;
        }
        /* Any other: the spec up to its conversion letter, through snprintf. */
        const char *e = q + 1;
        while (*e && strchr("-+ #0123456789.*hlLjzt", *e))
            e++;
        if (!*e)
            break;
        char spec[32];
        size_t len = (size_t)(e - q + 1);
        if (len >= sizeof spec || memchr(q, '*', len)) {
            va_end(ap);
            return; /* not used by the writers: a programmer's error */
        }
        memcpy(spec, q, len);
        spec[len] = 0;
        char big[512];
        int lmod = 0; /* 'l' count, or 'z' */
        for (const char *m = q + 1; m < e; m++)
            lmod += *m == 'l' ? 1 : *m == 'z' ? 3 : 0;
        switch (*e) {
        case 'd': case 'i': case 'c': case 'u': case 'x': case 'X': case 'o':
            if (lmod >= 3)
                n = snprintf(big, sizeof big, spec, va_arg(ap, size_t));
            else if (lmod == 2)
                n = snprintf(big, sizeof big, spec, va_arg(ap, long long));
            else if (lmod == 1)
                n = snprintf(big, sizeof big, spec, va_arg(ap, long));
            else
                n = snprintf(big, sizeof big, spec, va_arg(ap, int));
            break;
        case 'f': case 'F': case 'g': case 'G': case 'e': case 'E': case 'a': case 'A':
            n = snprintf(big, sizeof big, spec, va_arg(ap, double));
            break;
        case 's':
            n = snprintf(big, sizeof big, spec, va_arg(ap, const char *));
            break;
        default:
            va_end(ap);
            return;
        }
        if (n > 0)
            sc_out_write(o, big, (size_t)n < sizeof big ? (size_t)n : sizeof big - 1);
        p = e + 1;
    }
    va_end(ap);
}
