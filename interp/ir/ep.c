/*
 * ep.c — expert parallelism: the degree, the all-to-alls' bytes and time
 * per stage, the EP groups (ep.h, docs/semantics.md#expert-parallelism).
 */
#include "ir_impl.h"
#include "ir/alloc.h"

#include <math.h>

sc_status sc_prog_set_ep(sc_prog *pg, int ep)
{
    if (ep < 1 || ep > SC_MAX_EP)
        return sc_fail(pg, SC_ERR_ARG, "ep = %d is out of range (1..%d)", ep, SC_MAX_EP);
    if ((long)ep * pg->P > SC_MAX_DEVICES)
        return sc_fail(pg, SC_ERR_ARG, "ep = %d: %d x %d devices is more than %d", ep, pg->P,
                       ep, SC_MAX_DEVICES);
    pg->ep = ep;
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_ep(const sc_prog *pg) { return pg->ep; }

static sc_status ensure(sc_prog *pg)
{
    if (pg->ep_bytes)
        return SC_OK;
    pg->ep_bytes = sc_malloc((3 * (size_t)pg->S + 2 * (size_t)pg->P) * sizeof(double));
    if (!pg->ep_bytes)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int s = 0; s < pg->S; s++) {
        pg->ep_bytes[s] = 0;
        pg->ep_bytes[pg->S + s] = NAN;
        pg->ep_bytes[2 * pg->S + pg->P + s] = 1;
    }
    for (int d = 0; d < pg->P; d++)
        pg->ep_bytes[2 * pg->S + d] = pg->ep_bytes[3 * pg->S + pg->P + d] = 0;
    return SC_OK;
}

/* which: 0 bytes, 1 time, 2 layers */
static sc_status set_stage(sc_prog *pg, int s, double x, int which)
{
    if (s < -1 || s >= pg->S)
        return sc_fail(pg, SC_ERR_ARG, "stage %d is out of range (0..%d)", s, pg->S - 1);
    if (!(x >= 0) || !isfinite(x))
        return sc_fail(pg, SC_ERR_ARG, "expert all-to-all %s %g must be finite and >= 0",
                       which == 1 ? "time" : which ? "layers" : "bytes", x);
    sc_status st = ensure(pg);
    size_t at = which == 2 ? 2 * (size_t)pg->S + (size_t)pg->P : (size_t)which * (size_t)pg->S;
    for (int t = s < 0 ? 0 : s; st == SC_OK && t < (s < 0 ? pg->S : s + 1); t++)
        pg->ep_bytes[at + (size_t)t] = x;
    sc_prog_invalidate(pg);
    return st;
}

sc_status sc_prog_set_ep_bytes(sc_prog *pg, int s, double bytes)
{
    return set_stage(pg, s, bytes, 0);
}

sc_status sc_prog_set_ep_time(sc_prog *pg, int s, double seconds)
{
    return set_stage(pg, s, seconds, 1);
}

sc_status sc_prog_set_ep_layers(sc_prog *pg, int s, int layers)
{
    return set_stage(pg, s, layers, 2);
}

sc_status sc_prog_set_ep_dense(sc_prog *pg, int d, double bytes)
{
    if (d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "device %d is out of range (0..%d)", d, pg->P - 1);
    if (!(bytes >= 0) || !isfinite(bytes))
        return sc_fail(pg, SC_ERR_ARG, "dense gradient bytes %g must be finite and >= 0", bytes);
    sc_status st = ensure(pg);
    if (st == SC_OK)
        pg->ep_bytes[2 * pg->S + d] = bytes;
    return st;
}

sc_status sc_prog_set_ep_routed(sc_prog *pg, int d, double share)
{
    if (d < 0 || d >= pg->P)
        return sc_fail(pg, SC_ERR_ARG, "device %d is out of range (0..%d)", d, pg->P - 1);
    if (!(share >= 0 && share <= 1))
        return sc_fail(pg, SC_ERR_ARG, "the routed experts' share %g must be within [0, 1]", share);
    sc_status st = ensure(pg);
    if (st == SC_OK)
        pg->ep_bytes[3 * pg->S + pg->P + d] = share;
    return st;
}

double sc_prog_ep_param_scale(const sc_prog *pg, int d)
{
    if (pg->ep <= 1 || !pg->ep_bytes || d < 0 || d >= pg->P)
        return 1;
    return 1 - pg->ep_bytes[3 * pg->S + pg->P + d] * (1 - 1.0 / pg->ep);
}

double sc_prog_ep_dense(const sc_prog *pg, int d)
{
    return pg->ep_bytes && d >= 0 && d < pg->P ? pg->ep_bytes[2 * pg->S + d] : 0;
}

double sc_prog_ep_bytes(const sc_prog *pg, int s)
{
    return pg->ep_bytes && s >= 0 && s < pg->S ? pg->ep_bytes[s] : 0;
}

int sc_prog_ep_stage(const sc_prog *pg, int s)
{
    if (!pg->ep_bytes || s < 0 || s >= pg->S)
        return 0;
    double t = pg->ep_bytes[pg->S + s];
    return t == t ? t > 0 : pg->ep_bytes[s] > 0;
}

double sc_prog_ep_time(const sc_prog *pg, int s)
{
    if (pg->ep <= 1 || !sc_prog_ep_stage(pg, s))
        return 0;
    double t = pg->ep_bytes[pg->S + s], b = pg->ep_bytes[s];
    if (t == t)
        return t;
    double f = sc_coll_factor(SC_OP_DISPATCH, pg->ep); /* (E - 1)/E of each buffer */
    double layers = pg->ep_bytes[2 * pg->S + pg->P + s]; /* a latency each */
    return 2 * (layers * pg->coll_lat + (isinf(pg->coll_bw) ? 0 : f * b / pg->coll_bw));
}

double sc_prog_ep_link_time(const sc_prog *pg, int s)
{
    double ta = pg->ta[s], b = sc_prog_ep_bytes(pg, s);
    if (pg->ep <= 1)
        return ta;
    if (!(b > 0) || isinf(pg->coll_bw))
        return 0;
    double link = 2 * sc_coll_factor(SC_OP_DISPATCH, pg->ep) * b / pg->coll_bw;
    return link < ta ? link : ta;
}

int sc_prog_ep_group(sc_prog *pg, int d)
{
    if (!pg->ep_grp) {
        pg->ep_grp = sc_malloc((size_t)pg->P * sizeof(int));
        if (!pg->ep_grp) {
            sc_fail(pg, SC_ERR_NOMEM, "out of memory");
            return -1;
        }
        for (int e = 0; e < pg->P; e++)
            pg->ep_grp[e] = -1;
    }
    if (pg->ep_grp[d] < 0)
        pg->ep_grp[d] = sc_prog_add_group(pg, &d, 1);
    return pg->ep_grp[d];
}
