/*
 * replay_host.c — the replay's checks of host copies (OFFLOAD, DROP,
 * RELOAD; docs/semantics.md#host-copies) against what came before them.
 */
#include "replay_impl.h"

/* Checks an OFFLOAD, DROP or RELOAD (instruction k of device d) against
 * what came before it: the record's F on this device, then OFFLOAD, DROP,
 * RELOAD in this order, once each, with one fraction, all before its B.
 * host_at[i * SM + sm] is where kind i (OFFLOAD, DROP, RELOAD) of record
 * sm was seen. */
sc_status sc_replay_check_host(replay *r, int d, size_t k, const size_t *posF, const size_t *posB,
                               size_t *host_at)
{
    sc_prog *pg = r->pg;
    const sc_instr *in = &pg->stream[d].v[k];
    size_t gi = r->offset[d] + k, SM = (size_t)pg->S * (size_t)pg->nmb;
    char a[160], b[160];
    describe(r, d, k, a, sizeof a);
    if (in->stage < 0 || in->stage >= pg->S || in->mb < 0 || in->mb >= pg->nmb || in->frac <= 0 ||
        in->frac > SC_FRAC_ONE)
        return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage, microbatch or fraction out of range", a);
    /* Its place in the round trip: the copy out (OFFLOAD), the wait for it
     * (DROP: neither in nor out), the copy back (RELOAD). */
    int s = in->stage, mb = in->mb;
    int kind = sc_op_has(in->op, SC_OPF_OUT) ? 0 : sc_op_has(in->op, SC_OPF_IN) ? 2 : 1;
    if (pg->stage_dev[s] != d)
        return sc_fail(pg, SC_ERR_PROGRAM, "%s: stage %d is on d%d, not on this device", a, s,
                       pg->stage_dev[s]);
    size_t sm = SC_SMN(pg, s, mb);
    if (host_at[kind * SM + sm] != NONE) {
        describe(r, d, host_at[kind * SM + sm] - r->offset[d], b, sizeof b);
        return sc_fail(pg, SC_ERR_PROGRAM, "%s: the record is moved twice (%s)", a, b);
    }
    if (kind == 0 && (posF[sm] == NONE || posF[sm] > gi))
        return sc_fail(pg, SC_ERR_PROGRAM, "%s: F s%d mb%d does not come before it", a, s, mb);
    if (kind == 0 && posB[sm] != NONE)
        return sc_fail(pg, SC_ERR_PROGRAM,
                       "%s comes after the backward of s%d mb%d: only a record waiting for its B "
                       "is offloaded",
                       a, s, mb);
    /* A DROP with no OFFLOAD before it drops the part a later R recomputes
     * (docs/semantics.md#host-copies): right after the record's F. */
    if (kind == 1 && host_at[sm] == NONE) {
        if (posF[sm] == NONE || posF[sm] > gi || posB[sm] != NONE)
            return sc_fail(pg, SC_ERR_PROGRAM, "%s drops s%d mb%d for recomputation, but its F "
                           "does not come before it, or its B does", a, s, mb);
        host_at[SM + sm] = gi;
        return SC_OK;
    }
    if (kind == 2 && host_at[sm] == NONE)
        return sc_fail(pg, SC_ERR_PROGRAM, "%s reloads what was not offloaded (no OFFLOAD of "
                       "s%d mb%d before it)", a, s, mb);
    if (kind > 0) {
        size_t prev = host_at[(kind - 1) * SM + sm];
        if (prev == NONE)
            return sc_fail(pg, SC_ERR_PROGRAM, "%s %s what was not offloaded (no %s of s%d mb%d "
                           "before it)", a, kind == 1 ? "drops" : "reloads",
                           kind == 1 ? "OFFLOAD" : "DROP", s, mb);
        const sc_instr *p = &pg->stream[d].v[prev - r->offset[d]];
        if (p->frac != in->frac) {
            describe(r, d, prev - r->offset[d], b, sizeof b);
            return sc_fail(pg, SC_ERR_PROGRAM, "%s moves another fraction than %s", a, b);
        }
        if (kind == 1)
            r->hwait[gi] = prev;
    }
    host_at[kind * SM + sm] = gi;
    return SC_OK;
}
