/*
 * exec_mem.c — what the executor's files share (exec_impl.h): errors, the
 * boundary tensors' keys and sizes, device memory and the activation pool,
 * the records' layouts, the clock.
 */
#include "exec_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double sc_exec_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double sc_exec_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

sc_status sc_ex_failf(ex *e, sc_status st, const char *fmt, ...)
{
    if (!e->out->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->out->err, sizeof e->out->err, fmt, ap);
        va_end(ap);
    }
    return st;
}

size_t sc_ex_key(const ex *e, int dir, int s, int mb)
{
    return ((size_t)dir * (size_t)e->S + (size_t)s) * (size_t)e->m + (size_t)mb;
}

/* Bytes of the tensor at a key: the activation into stage s, or the
 * gradient of stage s's output (= the activation into s + 1), of mb. */
size_t sc_ex_kbytes(const ex *e, int dir, int s, int mb)
{
    return e->wl->ops->boundary_bytes(e->wl->ctx, dir == SC_DIR_ACT ? s : s + 1, mb);
}

void *sc_ex_balloc(ex *e, size_t bytes, const char *what, int s, int mb, sc_status *st)
{
    void *p = e->be->ops->alloc(e->be->ctx, bytes);
    const char *why = !p && e->be->ops->errmsg ? e->be->ops->errmsg(e->be->ctx) : NULL;
    if (why) /* the backend failed earlier (run --graph: no sync reported it) */
        *st = sc_ex_failf(e, SC_ERR_RUNTIME, "d%d: %s", e->d, why);
    else if (!p && s >= 0)
        *st = sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: %zu bytes for the %s of s%d mb%d",
                          e->d, bytes, what, s, mb);
    else if (!p) /* of the device's vocabulary shard (s < 0) */
        *st = sc_ex_failf(e, SC_ERR_NOMEM, "out of memory on d%d: %zu bytes for the %s mb%d", e->d,
                          bytes, what, mb);
    return p;
}

void sc_ex_bfree(ex *e, void *p, size_t bytes)
{
    e->be->ops->free(e->be->ctx, p, bytes);
}

sc_status sc_ex_wl_fail(ex *e, sc_status st, const sc_instr *in)
{
    char buf[64];
    sc_instr_format(in, buf, sizeof buf);
    return sc_ex_failf(e, st, "d%d: %s: %s", e->d, buf, e->wl->ops->errmsg(e->wl->ctx));
}

/* The kept argument of the workload's passes: the array of parts, or the
 * one buffer. */
void *sc_ex_kept_arg(const ex *e, const rec *r)
{
    return sc_ex_rlay(e, r)->split ? (void *)r->part : r->part[0];
}

void **sc_ex_tickets(const ex *e, const rec *r)
{
    return r->part + sc_ex_rlay(e, r)->n;
}

void sc_ex_pool_add(ex *e, size_t bytes)
{
    e->cur += bytes;
    if (e->cur > e->out->peak_bytes)
        e->out->peak_bytes = e->cur;
}

/* Frees parts [a, b) of a record. */
void sc_ex_free_parts(ex *e, rec *r, int a, int b)
{
    const layout *L = sc_ex_rlay(e, r);
    for (int i = a; i < b; i++)
        if (r->part[i]) {
            sc_ex_bfree(e, r->part[i], L->bytes[i]);
            e->cur -= L->bytes[i];
            r->part[i] = NULL;
        }
}

/* The record layout of every stage and microbatch, from the workload. */
sc_status sc_ex_layouts(ex *e)
{
    const struct sc_workload_ops *w = e->wl->ops;
    for (size_t i = 0; i < (size_t)e->S * (size_t)e->nl; i++) {
        layout *L = &e->lay[i];
        int s = (int)(i / (size_t)e->nl), mb = (int)(i % (size_t)e->nl);
        w->record_bytes(e->wl->ctx, s, mb, &L->kept, &L->bonly);
        L->split = w->record_parts != NULL;
        L->nk = L->split ? w->record_parts(e->wl->ctx, s, mb, NULL, 0) : 1;
        if (L->nk < 1)
            L->nk = 1, L->split = 0;
        L->n = L->nk + (L->bonly > 0);
        if (!(L->bytes = calloc((size_t)L->n, sizeof(size_t))))
            return SC_ERR_NOMEM;
        if (L->split)
            w->record_parts(e->wl->ctx, s, mb, L->bytes, L->nk);
        else
            L->bytes[0] = L->kept;
        if (L->bonly)
            L->bytes[L->nk] = L->bonly;
    }
    return SC_OK;
}

