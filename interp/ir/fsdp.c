/*
 * fsdp.c — a program's FSDP configuration (fsdp.h, docs/fsdp.md).
 */
#include <math.h>
#include <string.h>

#include "ir_impl.h"

static const char *const policy_names[] = {
#define X(name, text) text,
    SC_FSDP_POLICIES(X)
#undef X
};

const char *sc_fsdp_policy_name(int policy)
{
    return policy >= 0 && policy < SC_FSDP_POLICY_COUNT ? policy_names[policy] : "?";
}

int sc_fsdp_policy_parse(const char *name)
{
    for (int i = 0; i < SC_FSDP_POLICY_COUNT; i++)
        if (!strcmp(name, policy_names[i]))
            return i;
    return -1;
}

sc_status sc_prog_set_fsdp(sc_prog *pg, const sc_fsdp_cfg *c)
{
    if (c->dp < 0 || c->dp > SC_MAX_DEVICES * 1024)
        return sc_fail(pg, SC_ERR_ARG, "fsdp: dp = %d is out of range (1..%d)", c->dp,
                       SC_MAX_DEVICES * 1024);
    if (!(c->units >= 0) || !isfinite(c->units) || !(c->bytes >= 0) || !isfinite(c->bytes))
        return sc_fail(pg, SC_ERR_ARG, "fsdp: units and bytes must be finite and >= 0");
    if ((!isnan(c->time) && (!(c->time >= 0) || !isfinite(c->time))) ||
        (!isnan(c->reduce_time) && (!(c->reduce_time >= 0) || !isfinite(c->reduce_time))))
        return sc_fail(pg, SC_ERR_ARG, "fsdp: time and reduce_time must be finite and >= 0");
    if (c->policy < 0 || c->policy >= SC_FSDP_POLICY_COUNT)
        return sc_fail(pg, SC_ERR_ARG, "fsdp: unknown policy %d", c->policy);
    if (c->max_active < 1)
        return sc_fail(pg, SC_ERR_ARG, "fsdp: max_active = %d must be >= 1", c->max_active);
    pg->fsdp = *c;
    sc_prog_invalidate(pg);
    return SC_OK;
}

const sc_fsdp_cfg *sc_prog_fsdp(const sc_prog *pg) { return &pg->fsdp; }

double sc_prog_fsdp_units(const sc_prog *pg) { return pg->fsdp.dp ? pg->fsdp.units : 0; }

double sc_prog_fsdp_time(const sc_prog *pg)
{
    const sc_fsdp_cfg *c = &pg->fsdp;
    if (c->dp <= 1)
        return 0;
    if (!isnan(c->time))
        return c->time;
    return pg->coll_lat + (double)(c->dp - 1) / c->dp * c->bytes / pg->coll_bw;
}

double sc_prog_fsdp_reduce_time(const sc_prog *pg)
{
    const sc_fsdp_cfg *c = &pg->fsdp;
    if (c->dp <= 1)
        return 0;
    return isnan(c->reduce_time) ? sc_prog_fsdp_time(pg) : c->reduce_time;
}
