/*
 * errbuf.h — the file readers' one error line, written into the caller's
 * buffer (err, errlen) as printf formats it; returns SC_ERR_ARG, the
 * status of a refused input, so a check reads `return sc_errbuf(...)`.
 *
 * Tested by: tests/unit/test_readers.c, tests/costs.sh.
 */
#ifndef SC_FORMATS_ERRBUF_H
#define SC_FORMATS_ERRBUF_H

#include <stdarg.h>
#include <stdio.h>

#include "ir/ir.h"

static inline sc_status sc_errbuf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline sc_status sc_errbuf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return SC_ERR_ARG;
}

#endif
