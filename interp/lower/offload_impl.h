/*
 * offload_impl.h — what the offload plan's files share (offload.c: the
 * driver and the streams; offload_dev.c: one device's plan, the host
 * link's slots, a pair's warm-up). Not for use outside interp/lower/.
 *
 * Tested by: tests/unit/test_offload.c.
 */
#ifndef SC_OFFLOAD_IMPL_H
#define SC_OFFLOAD_IMPL_H

#include "ir/alloc.h"
#include "ir/ir_impl.h"
#include "offload.h"

#include <stddef.h>

typedef struct rec {
    int s, mb;
    size_t jF, jB;       /* their compute indices on the device */
    double life;         /* lifespan: F start to the end of W or BW */
    double want;         /* fraction the policy asks for (rounded to the runtime's parts) */
    int banned;          /* budget: left on the device, the link could not take it */
    int skipped;         /* left on the device: its window is too short */
    int recomp;          /* recomputed instead (lower/recompute.h): never moved */
    double q, dur;       /* fraction moved (0: stays) and the copy's time at full speed */
    double ostart, odur; /* the OFFLOAD copy starts, and takes (solo: less) */
    double oend;         /* the OFFLOAD copy completes */
    size_t drop;         /* gap of the DROP */
    double rstart;       /* the RELOAD copy starts (at the latest) */
    long reload;         /* gap of the RELOAD; -1: none possible */
    double short_by;     /* > 0: the link cannot take the record */
} rec;

/* The host link of a device (docs/offload.md#the-host-link). Shared: the pair's time is
 * cut in slots of length `slot` from `anchor`; the even device copies to
 * the host in the even slots and back in the odd ones, the odd device the
 * other way round. */
typedef struct olink {
    int shared;
    int parity;          /* 0: the pair's even device, 1: its odd one */
    double anchor, slot;
} olink;

typedef struct dplan {
    sc_prog *pg;
    int d;
    int skip;            /* apply PipeOffload's rule (not to a table) */
    size_t nc;           /* compute passes */
    size_t *cidx;        /* [nc] stream index of compute pass j */
    const double *t0, *t1; /* the base timing of the device's stream */
    rec *r;              /* [nr] records, in F order */
    int nr;
    int *byB;            /* [nr] records by B start, latest first */
    int *rank;           /* [chunks] 0 for the chunk with the longest lifespans */
    double *ready;       /* [nc + 1] when the device leaves gap g: its DROPs have waited */
    olink link;
    double tol;
} dplan;

static inline double sc_o_cstart(const dplan *p, size_t j) { return p->t0[p->cidx[j]]; }

static inline const sc_instr *sc_o_cpass(const dplan *p, size_t j)
{
    return &p->pg->stream[p->d].v[p->cidx[j]];
}

/* The nearest fraction the runtime can move (ties: the smaller). */
double sc_o_quantize(const sc_prog *pg, int s, double q);
/* Plans the device's copies on its own (a shared link's slots, no solo
 * warm-up): the fractions of want (minus the banned), PipeOffload's rule,
 * the copies back as late as they can, the copies out as early as they
 * can, then the places of the DROPs and RELOADs. */
void sc_o_plan_device(dplan *p);
/* A pair on a shared link: the copies to the host before the pair's first
 * copy back run alone on the link, one after the other, at 1/SC_OFFLOAD_SOLO
 * of the speed (PipeOffload's solo slots); both devices planned alone
 * first. Kept only when neither device's peak rises and no record falls
 * short; returns whether it was kept. */
int sc_o_plan_solo(dplan *a, dplan *b, double *scratch);
/* Peak device memory under the plan (scratch: 2 (nc + 1)). */
double sc_o_peak(const dplan *p, double *scratch);
/* Fractions for a level L (chunks, longest lifespans first). */
void sc_o_assign_level(dplan *p, double L);
/* Plans, leaving on the device every record the link cannot take, until
 * the link takes all that is left. */
void sc_o_plan_backing_off(dplan *p);

#endif
