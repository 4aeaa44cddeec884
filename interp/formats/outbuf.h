/*
 * outbuf.h — the one buffered writer of the large outputs (export in JSON,
 * as a Perfetto/Chrome trace and as SVG: jsonw.c, trace.c, svg.c): bytes
 * gather in a buffer and reach the FILE in large writes, and the printf of
 * the numbers they write most ("%d", "%.2f", "%.1f", "%.6g" of whole
 * numbers) is done without printf, byte for byte the same. stdio's cost per
 * call (a lock, a dispatch) was most of an export (issue 48).
 *
 *     sc_out o;
 *     sc_out_init(&o, f);
 *     sc_out_printf(&o, "<rect x=\"%.2f\" y=\"%d\"/>\n", 12.345, 7);
 *     sc_out_puts(&o, "</svg>\n");
 *     if (sc_out_flush(&o) != 0) ...              // the FILE's error (ferror)
 *
 * The writer owns nothing but its buffer (inside the struct); the FILE is
 * the caller's. Whoever writes to the FILE directly while a writer holds
 * bytes must flush it first (sc_out_flush), or the bytes come out of order.
 * Not thread-safe (one writer, one thread).
 *
 * Tested by: tests/unit/test_jsonw.c.
 */
#ifndef SC_OUTBUF_H
#define SC_OUTBUF_H

#include <stdio.h>
#include <string.h>

#define SC_OUT_BUF 16384

typedef struct sc_out {
    FILE *f;
    size_t n;
    char buf[SC_OUT_BUF];
} sc_out;

void sc_out_init(sc_out *o, FILE *f);
/* Writes what the buffer holds to the FILE and fflushes it; 0, or -1 when
 * the FILE has an error. */
int sc_out_flush(sc_out *o);
/* The buffer to the FILE, without fflush (when full). */
void sc_out_drain(sc_out *o);
/* printf's formats: every conversion printf knows, the common ones
 * ("%d", "%s", "%.2f", "%.1f", "%.6g" of a whole number, "%%") without it. */
void sc_out_printf(sc_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void sc_out_write(sc_out *o, const char *s, size_t n)
{
    if (o->n + n > SC_OUT_BUF) {
        sc_out_drain(o);
        if (n > SC_OUT_BUF) {
            fwrite(s, 1, n, o->f);
            return;
        }
    }
    memcpy(o->buf + o->n, s, n);
    o->n += n;
}

static inline void sc_out_putc(sc_out *o, char c)
{
    if (o->n == SC_OUT_BUF)
        sc_out_drain(o);
    o->buf[o->n++] = c;
}

static inline void sc_out_puts(sc_out *o, const char *s) { sc_out_write(o, s, strlen(s)); }

#endif
