/*
 * sim.c — timing, busy time, bubble rate and memory of a lowered program
 * (sim.h). The timing itself is the replay that proves the streams,
 * handed over by the compile driver (compile.h).
 */
#include "sim.h"
#include "check/rollback.h"
#include "ir/alloc.h"
#include "compile.h"
#include "ir/ir_impl.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* fmax(a, b) as the library computes it (b when equal, the other when one
 * is NaN), inline: it runs once or twice per instruction. */
static inline double maxd(double a, double b) { return a > b || b != b ? a : b; }

/* The earliest of the devices' starts (a forward-only program's span). */
static double min_start(const double *start, int P)
{
    double t = start[0];
    for (int d = 1; d < P; d++)
        t = start[d] < t ? start[d] : t;
    return t;
}

void sc_sim_free(sc_sim *sim)
{
    if (!sim)
        return;
    sc_free(sim->busy);
    sc_free(sim->start);
    sc_free(sim->end);
    sc_free(sim->peak_mem);
    sc_free(sim->offset);
    sc_free(sim->t0);
    sc_free(sim->t1);
    sc_free(sim->mem);
    sc_free(sim->host);
    sc_free(sim->host_peak);
    sc_free(sim->link_busy);
    sc_free(sim->step_end);
    sc_free(sim->step_makespan);
    sc_free(sim->step_bubble);
    sc_free(sim->coll_busy);
    sc_free(sim->rollback_cost);
    sc_free(sim);
}

void sc_sim_link_usage(const sc_prog *pg, const sc_sim *sim, int d, int dir, int n, double *out)
{
    for (int i = 0; i < n; i++)
        out[i] = 0;
    if (!sim->host || n < 1 || !(sim->makespan > 0))
        return;
    double w = sim->makespan / n;
    unsigned way = dir ? SC_OPF_IN : SC_OPF_OUT; /* RELOAD, OFFLOAD */
    for (size_t k = 0; k < pg->stream[d].n; k++) {
        int op = pg->stream[d].v[k].op;
        if (!sc_op_is_host(op) || !sc_op_has(op, way))
            continue;
        double a = sim->t0[sim->offset[d] + k], b = sim->t1[sim->offset[d] + k];
        for (int i = (int)fmax(0, floor(a / w)); i < n && i * w < b; i++)
            out[i] += (fmin(b, (i + 1) * w) - fmax(a, i * w)) / w;
    }
}

/* Host memory, link busy time and the units moved, when some stream holds
 * host copies (else the fields stay NULL and 0). */
static sc_status host_memory(sc_prog *pg, sc_sim *sim)
{
    int P = pg->P, any = 0;
    for (int d = 0; d < P && !any; d++)
        for (size_t k = 0; k < pg->stream[d].n && !any; k++)
            any = sc_op_is_host(pg->stream[d].v[k].op) &&
                  sc_op_has(pg->stream[d].v[k].op, SC_OPF_OUT | SC_OPF_IN); /* not R's DROP */
    if (!any)
        return SC_OK;
    size_t SM = (size_t)pg->S * (size_t)pg->nmb;
    sim->host = sc_malloc((sim->offset[P] + 1) * sizeof(double));
    sim->host_peak = sc_calloc((size_t)P, sizeof(double));
    sim->link_busy = sc_calloc(2 * (size_t)P, sizeof(double));
    double *held = sc_calloc(SM, sizeof(double)); /* host units of each record */
    if (!sim->host || !sim->host_peak || !sim->link_busy || !held) {
        sc_free(held);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory simulating");
    }
    for (int d = 0; d < P; d++) {
        double cur = 0;
        for (size_t k = 0; k < pg->stream[d].n; k++) {
            const sc_instr *in = &pg->stream[d].v[k];
            size_t g = sim->offset[d] + k;
            if (sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT | SC_OPF_IN)) {
                sim->link_busy[2 * d + sc_op_has(in->op, SC_OPF_IN)] += sim->t1[g] - sim->t0[g];
                if (sc_op_has(in->op, SC_OPF_OUT)) {
                    size_t sm = SC_SMN(pg, in->stage, in->mb);
                    held[sm] = sc_instr_frac(in) * sc_rec_units(pg, in->stage, in->mb);
                    cur += held[sm];
                    sim->moved += held[sm];
                }
            } else if (sc_op_is_slot(in->op)) {
                sc_instr h[2];
                for (int i = sc_instr_halves(in, h); i-- > 0;) {
                    if (!sc_op_is_bgrad(h[i].op))
                        continue;
                    size_t sm = SC_SMN(pg, h[i].stage, h[i].mb);
                    cur -= held[sm]; /* it waited for the copy back: the host copy is free */
                    held[sm] = 0;
                }
            }
            sim->host[g] = cur;
            if (cur > sim->host_peak[d])
                sim->host_peak[d] = cur;
        }
    }
    sc_free(held);
    return SC_OK;
}

sc_status sc_sim_steps(sc_prog *pg, sc_sim *sim)
{
    int P = pg->P, N = pg->steps;
    sc_free(sim->step_end);
    sc_free(sim->step_makespan);
    sc_free(sim->step_bubble);
    sim->steps = N;
    sim->step_end = sc_calloc((size_t)N, sizeof(double));
    sim->step_makespan = sc_calloc((size_t)N, sizeof(double));
    sim->step_bubble = sc_calloc((size_t)N, sizeof(double));
    double *first = sc_malloc((size_t)N * 3 * sizeof(double));
    double *busy = sc_calloc((size_t)N, sizeof(double)), *span = sc_calloc((size_t)N, sizeof(double));
    if (!sim->step_end || !sim->step_makespan || !sim->step_bubble || !first || !busy || !span) {
        sc_free(first);
        sc_free(busy);
        sc_free(span);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory simulating");
    }
    double *last = first + N, *b = last + N;
    for (int d = 0; d < P; d++) {
        for (int k = 0; k < N; k++)
            first[k] = -1, last[k] = b[k] = 0;
        int k = 0, m = pg->m;
        /* read once: the stores below are to doubles too */
        const sc_instr *v = pg->stream[d].v;
        const double *t0 = sim->t0 + sim->offset[d], *t1 = sim->t1 + sim->offset[d];
        for (size_t i = 0, n = pg->stream[d].n; i < n; i++) {
            const sc_instr *in = &v[i];
            if (in->op == SC_OP_OPTIM && k < N) {
                sim->step_end[k] = maxd(sim->step_end[k], t1[i]);
                k++;
            }
            if (!sc_op_is_slot(in->op))
                continue;
            /* a pair's halves are of one step; no division for step 0's */
            int st = (unsigned)in->mb < (unsigned)m ? 0 : in->mb / m;
            if (st < 0 || st >= N)
                continue;
            if (first[st] < 0)
                first[st] = t0[i];
            last[st] = maxd(last[st], t1[i]);
            b[st] += t1[i] - t0[i];
        }
        for (k = 0; k < N; k++) {
            busy[k] = fmax(busy[k], b[k]);
            if (first[k] >= 0)
                span[k] = fmax(span[k], last[k] - first[k]);
        }
    }
    for (int k = 0; k < N; k++) {
        sim->step_makespan[k] = sim->step_end[k] - (k ? sim->step_end[k - 1] : 0);
        sim->step_bubble[k] = span[k] > 0 ? 1.0 - busy[k] / span[k] : 0.0;
    }
    sc_free(first);
    sc_free(busy);
    sc_free(span);
    return SC_OK;
}

/* Post-validation: the makespan of each step's rollback path run, against
 * the makespan without (check/rollback.h). */
static sc_status rollback_costs(sc_prog *pg, sc_sim *sim)
{
    if (!sc_prog_has_rollback(pg))
        return SC_OK;
    if (!(sim->rollback_cost = sc_calloc((size_t)pg->steps, sizeof(double))))
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory simulating");
    for (int k = 0; k < pg->steps && k < 64; k++) {
        sc_times t;
        sc_status st = sc_replay_scenario(pg, k, &t);
        if (st != SC_OK)
            return st;
        double end = 0; /* as the makespan: the end of the last pass */
        for (int d = 0; d < pg->P; d++)
            for (size_t i = 0; i < pg->stream[d].n; i++)
                if (sc_op_is_slot(pg->stream[d].v[i].op))
                    end = fmax(end, t.t1[t.offset[d] + i]);
        sc_times_free(&t);
        sim->rollback_cost[k] = end - sim->makespan;
    }
    return SC_OK;
}

/* Busy time of every device's collective channel: a collective runs from
 * its start (posted, and the previous one complete) to its completion. */
static sc_status coll_busy(sc_prog *pg, sc_sim *sim)
{
    if (pg->ncoll == 0)
        return SC_OK;
    sim->coll_busy = sc_calloc((size_t)pg->P, sizeof(double));
    if (!sim->coll_busy)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory simulating");
    for (int d = 0; d < pg->P; d++) {
        double prev = 0;
        for (size_t k = 0; k < pg->stream[d].n; k++) {
            if (!sc_op_is_coll(pg->stream[d].v[k].op))
                continue;
            size_t g = sim->offset[d] + k;
            double start = sim->t0[g] > prev ? sim->t0[g] : prev;
            sim->coll_busy[d] += sim->t1[g] - start;
            prev = sim->t1[g];
            sim->colls++;
        }
    }
    return SC_OK;
}

sc_status sc_simulate(sc_prog *pg, sc_sim **out)
{
    *out = NULL;
    /* The timing comes from the compile driver: for a program not yet
     * verified, the replay that proves it is the one that times it. */
    sc_times tm;
    sc_status st = sc_compile_timed(pg, &tm);
    if (st != SC_OK)
        return st;
    int P = pg->P;
    sc_sim *sim = sc_calloc(1, sizeof *sim);
    if (!sim) {
        sc_times_free(&tm);
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    }
    sim->P = P;
    sim->offset = tm.offset;
    sim->t0 = tm.t0;
    sim->t1 = tm.t1;
    sim->busy = sc_calloc((size_t)P, sizeof(double));
    sim->start = sc_calloc((size_t)P, sizeof(double));
    sim->end = sc_calloc((size_t)P, sizeof(double));
    sim->peak_mem = sc_calloc((size_t)P, sizeof(double));
    sim->mem = sc_malloc((sim->offset[P] + 1) * sizeof(double));
    if (!sim->busy || !sim->start || !sim->end || !sim->peak_mem || !sim->mem)
        goto nomem;
    if ((st = host_memory(pg, sim)) != SC_OK || (st = coll_busy(pg, sim)) != SC_OK) {
        sc_sim_free(sim);
        return st;
    }
    double span = 0, busy = 0, step = sim->step;
    for (int d = 0; d < P; d++) {
        const sc_vec *sv = &pg->stream[d];
        double cur = 0, peak = 0, first = -1, last = 0, b = 0;
        /* read once: mem[] is stored to as the loop goes */
        const double *t0 = sim->t0 + sim->offset[d], *t1 = sim->t1 + sim->offset[d];
        double *mem = sim->mem + sim->offset[d];
        for (size_t k = 0, n = sv->n; k < n; k++) {
            const sc_instr *in = &sv->v[k];
            double rise = sc_instr_mem_rise(pg, in); /* a pair: its F half first */
            if (cur + rise > peak)
                peak = cur + rise;
            cur += sc_instr_mem(pg, in);
            if (cur > peak)
                peak = cur;
            if (sc_op_is_pass(in->op) || sc_op_is_pair(in->op)) {
                double t = t1[k] - t0[k];
                b += t;
                if (first < 0)
                    first = t0[k];
                if (t1[k] > last)
                    last = t1[k];
            } else if (in->op == SC_OP_REDUCE_GRAD && t1[k] > last) {
                last = t1[k]; /* FSDP: the step waits for its reduce-scatters */
            }
            mem[k] = cur;
            step = maxd(step, t1[k]);
        }
        sim->busy[d] = b;
        sim->start[d] = first < 0 ? 0 : first;
        sim->end[d] = last;
        sim->peak_mem[d] = peak;
        if (last - sim->start[d] > span)
            span = last - sim->start[d];
        if (b > busy)
            busy = b;
        if (last > sim->makespan)
            sim->makespan = last;
    }
    sim->step = step;
    if (sc_prog_forward_only(pg)) /* no backward wave: the fill and drain lie outside every */
        span = sim->makespan - min_start(sim->start, P); /* device's own window (fwdonly.h) */
    sim->bubble_rate = span > 0 ? 1.0 - busy / span : 0.0;
    if ((st = sc_sim_steps(pg, sim)) != SC_OK || (st = rollback_costs(pg, sim)) != SC_OK) {
        sc_sim_free(sim);
        return st;
    }
    /* Finite costs can still add up past the largest double. */
    int finite = isfinite(sim->makespan) && isfinite(sim->bubble_rate);
    for (int d = 0; d < P; d++)
        finite = finite && isfinite(sim->busy[d]) && isfinite(sim->peak_mem[d]);
    if (!finite) {
        sc_sim_free(sim);
        return sc_fail(pg, SC_ERR_ARG,
                       "simulation: times or memory add up past the largest number (%g); "
                       "give costs and units in a larger unit",
                       DBL_MAX);
    }
    *out = sim;
    return SC_OK;
nomem:
    sc_sim_free(sim);
    return sc_fail(pg, SC_ERR_NOMEM, "out of memory simulating");
}

/* The shares of costs' per-token costs (lengths.h) for pg's lengths, when
 * they are at pg's reference length: their F, B, W rows (lin, then fix),
 * pg's records; NULL without (or out of memory: pg's own then). */
static double *token_shares(const sc_prog *pg, const sc_prog *costs)
{
    if (!costs->len_fix || !pg->len || costs->len_ref != sc_prog_length_ref(pg))
        return NULL;
    size_t S = (size_t)pg->S, n = (size_t)SC_LK_COUNT * S;
    double *v = sc_malloc(2 * n * sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        int mem = i / S == SC_LK_MEM;
        v[i] = mem ? sc_prog_len_linear(pg, SC_LK_MEM, (int)(i % S)) : costs->len_lin[i];
        v[n + i] = mem ? 0 : costs->len_fix[i];
    }
    return v;
}

sc_status sc_simulate_costs(sc_prog *pg, const sc_prog *costs, sc_sim **out)
{
    *out = NULL;
    if (costs->P != pg->P || costs->S != pg->S)
        return sc_fail(pg, SC_ERR_ARG, "simulate with costs: %d devices and %d stages, the "
                       "program has %d and %d", costs->P, costs->S, pg->P, pg->S);
    if (!pg->verified)
        return sc_fail(pg, SC_ERR_ARG, "simulate with costs: the program is not verified");
    /* The streams stay: only the replay's timing reads the costs. */
    double *keep[7] = {pg->tf, pg->tb, pg->tw, pg->tbw, pg->topt, pg->tfb, pg->ta}, *vkeep[4];
    double tcomm = pg->tcomm, ratio = pg->off.ratio, clat = pg->coll_lat, cbw = pg->coll_bw;
    if (costs->coll_lat > 0 || isfinite(costs->coll_bw)) { /* measured collectives */
        pg->coll_lat = costs->coll_lat;
        pg->coll_bw = costs->coll_bw;
    }
    for (int k = 0; k < 4; k++) { /* the vocabulary passes' too, when it has them */
        vkeep[k] = pg->vcost[k];
        if (costs->vcost[k])
            pg->vcost[k] = costs->vcost[k];
    }
    pg->off.ratio = costs->off.ratio;
    pg->tf = costs->tf;
    pg->tb = costs->tb;
    pg->tw = costs->tw;
    pg->tbw = costs->tbw;
    pg->topt = costs->topt;
    pg->tfb = costs->tfb;
    pg->ta = costs->ta;
    pg->tcomm = costs->tcomm;
    /* The offload plan's slots are times of the costs it was planned with:
     * they do not hold under others, and the runtime does not wait for
     * them; the copies go when posted and their link is free. */
    sc_offload_info *oi = pg->off_info;
    pg->off_info = NULL;
    double *lin = pg->len_lin, *fix = pg->len_fix, ref = pg->len_ref, *tok = token_shares(pg, costs);
    if (tok) { /* per-token costs at the same reference: the replay's scales */
        pg->len_lin = tok;
        pg->len_fix = tok + (size_t)SC_LK_COUNT * (size_t)pg->S;
        pg->len_ref = costs->len_ref;
    }
    sc_status st = sc_simulate(pg, out);
    pg->len_lin = lin;
    pg->len_fix = fix;
    pg->len_ref = ref;
    sc_free(tok);
    pg->off_info = oi;
    pg->tf = keep[0];
    pg->tb = keep[1];
    pg->tw = keep[2];
    pg->tbw = keep[3];
    pg->topt = keep[4];
    pg->tfb = keep[5];
    pg->ta = keep[6];
    pg->tcomm = tcomm;
    pg->off.ratio = ratio;
    for (int k = 0; k < 4; k++)
        pg->vcost[k] = vkeep[k];
    pg->coll_lat = clat;
    pg->coll_bw = cbw;
    return st;
}
