/*
 * memcap.c — the memory cap of a program (ir.h): one cap for every device,
 * or one per device, and the refusals that name it.
 */
#include "alloc.h"
#include "ir_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

sc_status sc_prog_set_mem_limit(sc_prog *pg, double units)
{
    if (!(units > 0))
        return sc_fail(pg, SC_ERR_ARG, "mem (the memory limit) must be > 0 (got %g)", units);
    pg->mem_limit = units;
    sc_free(pg->mem_cap); /* one cap for every device */
    pg->mem_cap = NULL;
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_mem_caps(sc_prog *pg, const double *caps)
{
    double least = INFINITY;
    for (int d = 0; d < pg->P; d++) {
        if (!(caps[d] > 0))
            return sc_fail(pg, SC_ERR_ARG, "mem of d%d (its memory limit) must be > 0 (got %g)",
                           d, caps[d]);
        least = fmin(least, caps[d]);
    }
    if (!pg->mem_cap && !(pg->mem_cap = sc_malloc((size_t)pg->P * sizeof(double))))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int d = 0; d < pg->P; d++)
        pg->mem_cap[d] = caps[d];
    pg->mem_limit = least;
    sc_prog_invalidate(pg);
    return SC_OK;
}

double sc_prog_mem_cap(const sc_prog *pg, int d)
{
    return pg->mem_cap ? pg->mem_cap[d] : pg->mem_limit;
}

int sc_prog_mem_per_device(const sc_prog *pg)
{
    if (!pg->mem_cap)
        return 0;
    for (int d = 1; d < pg->P; d++)
        if (pg->mem_cap[d] != pg->mem_cap[0])
            return 1;
    return 0;
}

int sc_prog_cap_refused(const sc_prog *pg) { return pg->cap_refused; }

sc_status sc_fail_cap(sc_prog *pg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pg->err, sizeof pg->err, fmt, ap);
    va_end(ap);
    pg->cap_refused = 1;
    return SC_ERR_PROGRAM;
}

double sc_prog_byte_unit(const sc_prog *pg)
{
    return pg->model && pg->unit_bytes > 0 ? pg->unit_bytes : pg->byte_unit;
}

sc_status sc_prog_set_byte_unit(sc_prog *pg, double bytes)
{
    if (!(bytes > 0) || !isfinite(bytes))
        return sc_fail(pg, SC_ERR_ARG, "bytes of a unit of memory must be > 0 (got %g)", bytes);
    pg->byte_unit = bytes;
    return SC_OK;
}
