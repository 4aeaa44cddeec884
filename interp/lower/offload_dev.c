/*
 * offload_dev.c — one device's offload plan and its host link
 * (offload_impl.h, docs/offload.md#the-host-link, docs/offload.md#the-plan).
 *
 * The host link. A device with its own link copies to the host and back
 * at once, each direction one copy at a time, at full speed (fraction q of
 * a record takes sc_offload_time). Two devices sharing a link (PipeOffload's
 * pairs) take turns in slots of the time one whole record takes (the
 * longest over the pair's stages): in each slot one of them copies to the
 * host while the other copies back, both at full speed (the link is full
 * duplex); a copy starts at the start of one of its device's slots for its
 * direction. Before the pair's first copy back, only copies to the host use
 * the link: they run alone, one after the other in the order their F end,
 * each at SC_OFFLOAD_SOLO of its time (PipeOffload's solo slots).
 *
 * The plan of a device, from the timing of its stream without offload:
 *   - PipeOffload's rule: a record whose window (B start − B's duration −
 *     F end) is shorter than three copies (on a shared link, three turns
 *     of the pair: six slots) gains nothing and stays;
 *   - copies back: records by B start, the latest first, each as late as
 *     it can start and still end by its B's start and by the start of the
 *     next copy back;
 *   - copies out: in F order, each as early as its F has ended and the
 *     copy before it is done;
 *   - its DROP goes before the first pass that starts once the copy is done
 *     (so it never waits), its RELOAD at the last place before a pass the
 *     device reaches by the copy's start (DROPs there waiting included). A
 *     RELOAD that would come before its DROP cannot be: the record is short
 *     by the difference.
 */
#include "offload_impl.h"

#include <math.h>
#include <stdlib.h>

double sc_o_quantize(const sc_prog *pg, int s, double q)
{
    int n;
    const double *lv = sc_prog_offload_levels(pg, s, &n);
    if (!lv || q <= 0)
        return q > 0 ? q : 0;
    double best = 0;
    for (int k = 0; k <= n; k++)
        if (fabs(lv[k] - q) < fabs(best - q) - 1e-12)
            best = lv[k];
    return best;
}

static double cend(const dplan *p, size_t j) { return p->t1[p->cidx[j]]; }
/* When the device reaches gap g (the place before compute pass g). */
static double post(const dplan *p, size_t g) { return g == 0 ? 0 : cend(p, g - 1); }

/* ---- the link's slots ----------------------------------------------------- */

/* First slot of the device for direction dir (0 to the host, 1 back) that
 * starts at or after t; on its own link, t. */
static double slot_after(const dplan *p, int dir, double t)
{
    const olink *L = &p->link;
    if (!L->shared)
        return t;
    double k0 = (double)(dir ^ L->parity), D = L->slot;
    double j = ceil((t - L->anchor - k0 * D) / (2 * D) - 1e-9);
    double s = L->anchor + (2 * j + k0) * D;
    return s < t ? t : s; /* within rounding of t: t itself, never earlier */
}

/* Latest slot start s of the device for direction dir with s + dur <= t. */
static double slot_before(const dplan *p, int dir, double t, double dur)
{
    const olink *L = &p->link;
    if (!L->shared)
        return t - dur;
    double k0 = (double)(dir ^ L->parity), D = L->slot;
    double j = floor((t - dur - L->anchor - k0 * D) / (2 * D) + 1e-9);
    double s = L->anchor + (2 * j + k0) * D;
    return s + dur > t ? t - dur : s; /* never ending after t */
}

/* ---- the phases of a device's plan ---------------------------------------- */

/* The first gap after F before a pass that starts at or after t (nc, the
 * gap before REDUCE, when none): a DROP there never delays a pass. */
static size_t first_gap_after(const dplan *p, size_t jF, double t)
{
    size_t lo = jF + 1, hi = p->nc;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc_o_cstart(p, mid) < t - p->tol)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Fractions, durations, PipeOffload's rule, the copies back. */
static void plan_back(dplan *p)
{
    sc_prog *pg = p->pg;
    for (int i = 0; i < p->nr; i++) {
        rec *r = &p->r[i];
        r->short_by = 0;
        r->reload = -1;
        r->skipped = 0;
        r->q = r->banned ? 0 : r->want;
        if (r->q <= 0)
            continue;
        r->dur = sc_offload_time(pg, r->s, r->q) * sc_len_k(pg, SC_LK_MEM, r->s, r->mb);
        double window = sc_o_cstart(p, r->jB) - sc_pass_cost(pg, sc_o_cpass(p, r->jB)) - cend(p, r->jF);
        /* three copies; on a shared link three turns of the pair's slots */
        double need = p->link.shared ? 6 * p->link.slot : 3 * r->dur;
        if (p->skip && window < need) {
            r->q = 0;
            r->skipped = 1;
        }
    }
    /* Each copy back ends by its B's start, less the margin (in durations
     * of that B: PipeOffload's planner keeps one), and by the next one's. */
    double next = INFINITY;
    for (int k = 0; k < p->nr; k++) {
        rec *r = &p->r[p->byB[k]];
        double due = sc_o_cstart(p, r->jB) - pg->off.margin * sc_pass_cost(pg, sc_o_cpass(p, r->jB));
        if (r->q > 0)
            r->rstart = next = slot_before(p, 1, fmin(due, next), r->dur);
    }
}

/* The copies out on the device's own slots, each as early as it can. */
static void plan_out(dplan *p)
{
    double free_at = 0;
    for (int i = 0; i < p->nr; i++) {
        rec *r = &p->r[i];
        if (r->q <= 0)
            continue;
        r->ostart = slot_after(p, 0, fmax(cend(p, r->jF), free_at));
        r->odur = r->dur;
        r->oend = free_at = r->ostart + r->odur;
    }
}

/* The places of the DROPs and RELOADs, and what falls short. */
static void plan_gaps(dplan *p)
{
    for (int i = 0; i < p->nr; i++)
        if (p->r[i].q > 0)
            p->r[i].drop = first_gap_after(p, p->r[i].jF, p->r[i].oend);
    /* A gap's RELOADs are posted once its DROPs have waited. */
    for (size_t g = 0; g <= p->nc; g++)
        p->ready[g] = post(p, g);
    for (int i = 0; i < p->nr; i++)
        if (p->r[i].q > 0)
            p->ready[p->r[i].drop] = fmax(p->ready[p->r[i].drop], p->r[i].oend);
    for (int k = 0; k < p->nr; k++) {
        rec *r = &p->r[p->byB[k]];
        if (r->q <= 0)
            continue;
        r->short_by = 0;
        /* The last gap up to B's that the device leaves by rstart (ready
         * ascends: a gap's DROPs wait no longer than its pass starts). */
        size_t lo = 0, hi = r->jB + 1;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p->ready[mid] <= r->rstart + p->tol)
                lo = mid + 1;
            else
                hi = mid;
        }
        r->reload = (long)lo - 1;
        if (r->reload < (long)r->drop)
            r->short_by = fmax(p->ready[r->drop] - r->rstart, p->tol);
    }
}

void sc_o_plan_device(dplan *p)
{
    plan_back(p);
    plan_out(p);
    plan_gaps(p);
}

/* ---- a pair's warm-up ------------------------------------------------------ */

static double first_back(const dplan *p)
{
    double t = INFINITY;
    for (int i = 0; i < p->nr; i++)
        if (p->r[i].q > 0)
            t = fmin(t, p->r[i].rstart);
    return t;
}

static int any_short(const dplan *p)
{
    for (int i = 0; i < p->nr; i++)
        if (p->r[i].q > 0 && p->r[i].short_by > 0)
            return 1;
    return 0;
}

/* The copies out of both devices: alone on the link, in F order, until
 * the first copy back (tk); then each device's own slots. */
static void plan_out_solo(dplan *a, dplan *b, double tk)
{
    dplan *ps[2] = {a, b};
    int at[2] = {0, 0};
    double link_free = 0, dev_free[2] = {0, 0};
    for (;;) {
        int w = -1;
        for (int x = 0; x < 2; x++) {
            while (at[x] < ps[x]->nr && ps[x]->r[at[x]].q <= 0)
                at[x]++;
            if (at[x] < ps[x]->nr &&
                (w < 0 || cend(ps[x], ps[x]->r[at[x]].jF) < cend(ps[w], ps[w]->r[at[w]].jF)))
                w = x;
        }
        if (w < 0)
            return;
        dplan *p = ps[w];
        rec *r = &p->r[at[w]++];
        double t = fmax(cend(p, r->jF), fmax(link_free, dev_free[w]));
        if (t + SC_OFFLOAD_SOLO * r->dur <= tk + p->tol) {
            r->ostart = t;
            r->odur = SC_OFFLOAD_SOLO * r->dur;
            link_free = t + r->odur;
        } else {
            r->ostart = slot_after(p, 0, fmax(fmax(cend(p, r->jF), dev_free[w]), tk));
            r->odur = r->dur;
        }
        r->oend = dev_free[w] = r->ostart + r->odur;
    }
}

int sc_o_plan_solo(dplan *a, dplan *b, double *scratch)
{
    double pa = sc_o_peak(a, scratch), pb = sc_o_peak(b, scratch);
    int sa = any_short(a), sb = any_short(b);
    double tk = fmin(first_back(a), first_back(b));
    plan_out_solo(a, b, tk);
    plan_gaps(a);
    plan_gaps(b);
    if (sc_o_peak(a, scratch) <= pa + a->tol && sc_o_peak(b, scratch) <= pb + b->tol &&
        any_short(a) <= sa && any_short(b) <= sb)
        return 1;
    plan_out(a); /* back to each device on its own slots */
    plan_out(b);
    plan_gaps(a);
    plan_gaps(b);
    return 0;
}

/* ---- memory, levels ------------------------------------------------------- */

/* The order of the streams the plan makes: in each gap DROPs, then
 * RELOADs; then the pass. */
double sc_o_peak(const dplan *p, double *scratch)
{
    sc_prog *pg = p->pg;
    double *drop_at = scratch, *reload_at = scratch + p->nc + 1;
    for (size_t g = 0; g <= p->nc; g++)
        drop_at[g] = reload_at[g] = 0;
    for (int i = 0; i < p->nr; i++) {
        const rec *r = &p->r[i];
        if (r->q > 0 && r->reload >= 0) {
            drop_at[r->drop] += r->q * sc_rec_units(pg, r->s, r->mb);
            reload_at[r->reload] += r->q * sc_rec_units(pg, r->s, r->mb);
        }
    }
    double cur = 0, peak = 0;
    for (size_t g = 0; g <= p->nc; g++) {
        if (g > 0 && pg->rc_q) { /* a recomputed record's DROP right after its F */
            const sc_instr *f = sc_o_cpass(p, g - 1);
            if (sc_op_is_fwd(f->op))
                cur -= pg->rc_q[SC_SM(pg, f->stage, f->mb)] * sc_rec_units(pg, f->stage, f->mb);
        }
        cur -= drop_at[g];
        cur += reload_at[g];
        peak = fmax(peak, cur);
        if (g < p->nc) {
            cur += sc_pass_mem(pg, sc_o_cpass(p, g));
            peak = fmax(peak, cur);
        }
    }
    return peak;
}

void sc_o_assign_level(dplan *p, double L)
{
    sc_prog *pg = p->pg;
    for (int i = 0; i < p->nr; i++) {
        rec *r = &p->r[i];
        double q = L - p->rank[pg->chunk[r->s]];
        r->want = r->recomp ? 0 : sc_o_quantize(pg, r->s, q < 0 ? 0 : q > 1 ? 1 : q);
        r->banned = 0;
    }
}

void sc_o_plan_backing_off(dplan *p)
{
    for (;;) {
        sc_o_plan_device(p);
        int bad = 0;
        for (int i = 0; i < p->nr; i++)
            if (p->r[i].q > 0 && p->r[i].short_by > 0) {
                p->r[i].banned = 1;
                bad++;
            }
        if (!bad)
            return;
    }
}
