/*
 * exact.c — the exact optimum by a MILP (exact.h, docs/bound.md#the-exact-optimum).
 *
 * Passes are numbered by record: record r = s·m + mb has F = 3r, B = 3r+1,
 * W = 3r+2 (with tw = 0 the W is folded into its B: a W of no time can run
 * right after its B, which only frees memory sooner). Columns: the start
 * x of every pass, the makespan C, and a binary y per pair (i < j) of
 * passes of one device whose order no dependency fixes: y = 1 puts i first,
 *     x_i + d_i <= x_j + M (1 - y),   x_j + d_j <= x_i + M y,
 * M the upper bound on the makespan. Each stage's F, B and W run in
 * microbatch order (docs/bound.md#the-exact-optimum proves that this loses
 * no schedule's makespan), which fixes most pairs. The memory cap, after
 * every F j of a device: its record plus every record whose F runs before
 * j, less what the B and W before j freed, is at most the cap.
 *
 * This file: the model's passes, the first schedules (the program's own
 * orders, list schedules) and the API; exact_glpk.c builds the MILP in
 * GLPK and solves it within the call's budget (exact_impl.h).
 */
#include "exact.h"
#include "bound.h"
#include "exact_impl.h"
#include "ir/alloc.h"
#include "ir/offload_cfg.h"
#include "ir/recompute_cfg.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The MILP's reach: at most this many passes a device and records; above
 * it, the search alone (exact_ls.c), up to MAX_RECORDS. */
#define MAX_PER_DEVICE 64
#define MAX_MILP_RECORDS 512
#define MAX_RECORDS 100000
/* The search's share of the budget before the MILP, and its most tries. */
#define SEARCH_SHARE 0.25
#define SEARCH_TRIES 3000

const char *sc_exact_status_name(sc_exact_status s)
{
    static const char *const names[] = {
#define X(name, text) text,
        SC_EXACT_STATUSES(X)
#undef X
    };
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* Why pg is outside the model, or NULL. */
static const char *unsupported(const sc_prog *pg)
{
    int S = sc_prog_stages(pg);
    const sc_offload_cfg *off = sc_prog_offload(pg);
    const sc_recompute_cfg *rc = sc_prog_recompute(pg);
    if (sc_prog_steps(pg) != 1)
        return "more than one step";
    if (sc_prog_copies(pg) != 1)
        return "copies of the model";
    if (sc_prog_ep(pg) > 1) /* its all-to-alls are on the passes: ir/ep.h */
        return "expert parallelism (ep > 1)";
    if (sc_prog_forward_only(pg)) /* its lower bound is met: docs/guide.md#forward-only */
        return "a forward-only program";
    if (sc_vocab_split(sc_prog_vocab(pg)))
        return "a split vocabulary";
    if (sc_prog_slices(pg) > 1) /* the model has no order of slices on a stage (slices.h) */
        return "sequence slices";
    if ((off && off->policy != SC_OFFLOAD_NONE) || (rc && rc->policy != SC_RECOMPUTE_NONE))
        return "an offload or recompute policy";
    for (int s = 0; s < S; s++) {
        double tfb = sc_prog_tfb(pg, s), tbw = sc_prog_tbw(pg, s);
        if (tfb == tfb || sc_prog_ta(pg, s) > 0)
            return "pair costs or an all-to-all part";
        if (tbw < sc_prog_tb(pg, s) + sc_prog_tw(pg, s) - 1e-12)
            return "a BW faster than B + W";
    }
    return NULL;
}

/* The program's own orders timed in the model (each pass as early as its
 * dependency and its device allow): a schedule of the class, the solver's
 * first incumbent. x[n] starts, pos[n] the place in its device's order;
 * the makespan, or INFINITY when an order holds what the model has not
 * (pairs) or does not finish. */
static double order_times(const model *md, double *x, int *pos, double *end)
{
    const sc_prog *pg = md->pg;
    int P = sc_prog_devices(pg), n = md->n, left = 0;
    for (int i = 0; i < n; i++)
        end[i] = pass_used(md, i) ? -1 : 0, left += pass_used(md, i);
    size_t *at = sc_calloc((size_t)P, sizeof *at);
    double *free_at = sc_calloc((size_t)P, sizeof *free_at);
    int *k2 = sc_calloc((size_t)P, sizeof *k2); /* a BW's second half (W) pending */
    int *cnt = sc_calloc((size_t)P, sizeof *cnt);
    double *level = sc_calloc((size_t)P, sizeof *level), wk = sc_prog_w_keep(pg);
    double span = INFINITY;
    if (!at || !free_at || !k2 || !cnt || !level)
        goto done;
    for (int progress = 1; progress && left > 0;) {
        progress = 0;
        for (int d = 0; d < P; d++) {
            size_t len;
            const sc_instr *o = sc_prog_order(pg, d, &len);
            while (at[d] < len) {
                const sc_instr *in = &o[at[d]];
                int r = in->stage * md->m + in->mb, i;
                if (in->op == SC_OP_F)
                    i = 3 * r;
                else if (in->op == SC_OP_B || (in->op == SC_OP_BW && !k2[d]))
                    i = 3 * r + 1;
                else if (in->op == SC_OP_W || in->op == SC_OP_BW)
                    i = 3 * r + 2;
                else
                    goto done; /* a pair, or a pass the model has not */
                int whole = in->op != SC_OP_BW || k2[d] || md->fold;
                if (pass_used(md, i)) {
                    double lag, ready = free_at[d];
                    int j = sc_exact_dep(md, i, &lag);
                    if (j >= 0 && end[j] < 0)
                        break; /* waits for another device */
                    if (j >= 0)
                        ready = fmax(ready, end[j] + lag);
                    x[i] = ready;
                    end[i] = ready + md->d[i];
                    free_at[d] = end[i];
                    pos[i] = cnt[d]++;
                    left--;
                    progress = 1;
                    double u = sc_prog_rec_units(pg, in->stage, in->mb);
                    double cap = sc_prog_mem_cap(pg, d);
                    int k = i % 3;
                    level[d] += k == 0 ? u : k == 1 ? -(md->fold ? 1 : 1 - wk) * u : -wk * u;
                    if (level[d] > cap + 1e-7 * (1 + cap))
                        goto done; /* over the cap: not a schedule of the class */
                }
                k2[d] = !whole;
                at[d] += whole;
            }
        }
    }
    if (left == 0) {
        span = 0;
        for (int i = 0; i < n; i++)
            span = fmax(span, end[i]);
    }
done:
    sc_free(at), sc_free(free_at), sc_free(k2), sc_free(cnt), sc_free(level);
    return span;
}

/* A list schedule in the model: each device, when it can, starts the ready
 * pass that `prio` ranks first (kinds F, B, W: lower first), each stage's
 * passes in microbatch order, an F only when its record fits the cap. The
 * makespan (x, pos, end filled), or INFINITY when memory blocks it. */
static double greedy(const model *md, const int prio[3], double *x, int *pos, double *end)
{
    const sc_prog *pg = md->pg;
    int P = sc_prog_devices(pg), S = md->S, m = md->m, n = md->n, left = 0;
    double *free_at = sc_calloc((size_t)P, sizeof *free_at);
    double *level = sc_calloc((size_t)P, sizeof *level);
    int *next = sc_calloc((size_t)S * 3, sizeof *next); /* next microbatch of (stage, kind) */
    int *cnt = sc_calloc((size_t)P, sizeof *cnt);
    double span = INFINITY, wk = sc_prog_w_keep(pg);
    if (!free_at || !level || !next || !cnt)
        goto done;
    for (int i = 0; i < n; i++)
        end[i] = pass_used(md, i) ? -1 : 0, left += pass_used(md, i);
    while (left > 0) {
        int best = -1;
        double bt = INFINITY;
        int bp = 3;
        for (int s = 0; s < S; s++) {
            int d = sc_prog_stage_device(pg, s);
            double cap = sc_prog_mem_cap(pg, d);
            for (int k = 0; k < 3; k++) {
                if (next[s * 3 + k] >= m)
                    continue;
                int i = 3 * (s * m + next[s * 3 + k]) + k;
                double u = sc_prog_rec_units(pg, s, next[s * 3 + k]);
                if (!pass_used(md, i))
                    continue;
                double lag, t = free_at[d];
                int j = sc_exact_dep(md, i, &lag);
                if (j >= 0 && end[j] < 0)
                    continue;
                if (j >= 0)
                    t = fmax(t, end[j] + lag);
                if (k == 0 && isfinite(cap) && level[d] + u > cap + 1e-7 * (1 + cap))
                    continue;
                if (t < bt - 1e-12 || (t <= bt + 1e-12 && prio[k] < bp))
                    best = i, bt = t, bp = prio[k];
            }
        }
        if (best < 0)
            goto done; /* memory blocks every device */
        int s = (best / 3) / m, k = best % 3, d = md->dev[best];
        double u = sc_prog_rec_units(pg, s, (best / 3) % m);
        x[best] = bt;
        end[best] = bt + md->d[best];
        free_at[d] = end[best];
        pos[best] = cnt[d]++;
        level[d] += k == 0 ? u : k == 1 ? -(md->fold ? 1 : 1 - wk) * u : -wk * u;
        next[s * 3 + k]++;
        left--;
    }
    span = 0;
    for (int i = 0; i < n; i++)
        span = fmax(span, end[i]);
done:
    sc_free(free_at), sc_free(level), sc_free(next), sc_free(cnt);
    return span;
}

/* The model's passes of pg (md->d, md->dev) and whether the MILP covers
 * them (*milp); why pg is outside the model, or NULL. SC_ERR_NOMEM in *st. */
static const char *build_model(const sc_prog *pg, model *md, int *milp, sc_status *st)
{
    int P = sc_prog_devices(pg), S = md->S, m = md->m;
    const char *no = unsupported(pg);
    *milp = (long)S * m <= MAX_MILP_RECORDS;
    if (no)
        return no;
    if ((long)S * m > MAX_RECORDS)
        return "more than 100000 records";
    md->d = sc_calloc((size_t)md->n, sizeof *md->d);
    md->dev = sc_calloc((size_t)md->n, sizeof *md->dev);
    int *per = sc_calloc((size_t)P, sizeof *per);
    if (!md->d || !md->dev || !per) {
        sc_free(per);
        *st = SC_ERR_NOMEM;
        return NULL;
    }
    for (int i = 0; i < md->n; i++) {
        int s = (i / 3) / m, k = i % 3;
        md->dev[i] = sc_prog_stage_device(pg, s);
        md->d[i] = sc_prog_pass_time(pg, k == 0 ? SC_OP_F : k == 1 ? SC_OP_B : SC_OP_W, s,
                                     (i / 3) % m); /* its length's (lengths.h) */
        per[md->dev[i]] += pass_used(md, i);
    }
    for (int d = 0; d < P; d++)
        *milp &= per[d] <= MAX_PER_DEVICE;
    sc_free(per);
    return NULL;
}

/* The first schedules: the program's own orders, three list schedules
 * (B first, then F or W; F first), then the search until `until` or
 * `tries` schedules. The best in x0, pos; its makespan (INFINITY: none). */
static double first_schedule(const model *md, const budget *bd, double lower, double until,
                             long tries, double *x0, int *pos, double *end, sc_status *st)
{
    static const int prios[3][3] = {{1, 0, 2}, {2, 0, 1}, {0, 1, 2}};
    int n = md->n;
    double span = order_times(md, x0, pos, end);
    double *x1 = sc_calloc((size_t)n, sizeof *x1);
    int *pos1 = sc_calloc((size_t)n, sizeof *pos1);
    *st = x1 && pos1 ? SC_OK : SC_ERR_NOMEM;
    for (int v = 0; x1 && pos1 && v < 3; v++) {
        double t = greedy(md, prios[v], x1, pos1, end);
        if (t < span) {
            span = t;
            memcpy(x0, x1, (size_t)n * sizeof *x0);
            memcpy(pos, pos1, (size_t)n * sizeof *pos);
        }
    }
    budget sb = *bd;
    sb.deadline = fmin(bd->deadline, until);
    if (*st == SC_OK && span > lower * (1 + 1e-9) + 1e-12)
        *st = sc_exact_search(md, &sb, lower, tries, &span, x0, pos);
    sc_free(x1), sc_free(pos1);
    return span;
}

sc_status sc_exact_solve(const sc_prog *pg, double time_limit, size_t mem_limit, double upper,
                         sc_exact *out)
{
    return sc_exact_solve_lua(pg, time_limit, mem_limit, upper, out, NULL);
}

sc_status sc_exact_solve_lua(const sc_prog *pg, double time_limit, size_t mem_limit,
                             double upper, sc_exact *out, char **lua)
{
    if (!pg || !out || !(time_limit > 0) || upper != upper)
        return SC_ERR_ARG;
    budget bd = {.start = sc_exact_now(), .mem = mem_limit, .used0 = sc_alloc_used()};
    bd.deadline = bd.start + time_limit;
    memset(out, 0, sizeof *out);
    out->incumbent = INFINITY;
    if (lua)
        *lua = NULL;
    int S = sc_prog_stages(pg), m = sc_prog_microbatches(pg), fold = 1, milp;
    for (int s = 0; s < S; s++)
        fold &= sc_prog_tw(pg, s) == 0;
    model md = {.pg = pg, .S = S, .m = m, .fold = fold, .n = 3 * S * m};
    int *pos = NULL;
    double *x0 = NULL, *end = NULL;
    sc_status st = SC_OK;
    const char *no = build_model(pg, &md, &milp, &st);
    if (st != SC_OK)
        goto exit;
    if (no) {
        out->status = SC_EXACT_UNSUPPORTED;
        snprintf(out->why, sizeof out->why, "the exact model does not cover %s", no);
        goto exit;
    }
    sc_bound b;
    st = sc_bound_prog(pg, &b);
    if (st != SC_OK)
        goto exit;
    out->memory_bound = sc_exact_memory_lb(&md); /* all a device's stages (exact_lb.c) */
    if (isfinite(b.bound))
        b.bound = fmax(b.bound, out->memory_bound);
    double M = upper;
    if (!isfinite(M)) { /* every pass one after another, each transfer waited for */
        M = 0;
        for (int i = 0; i < md.n; i++)
            M += md.d[i] + (pass_used(&md, i) ? 2 * sc_prog_msg_time(pg, (i / 3) % m) : 0);
    }
    M = M * (1 + 1e-9) + 1e-9;
    if (!isfinite(b.bound)) {
        out->status = SC_EXACT_INFEASIBLE;
        out->bound = INFINITY;
        goto exit;
    }
    x0 = sc_calloc((size_t)md.n, sizeof *x0), end = sc_calloc((size_t)md.n, sizeof *end);
    pos = sc_calloc((size_t)md.n, sizeof *pos);
    if (!x0 || !end || !pos) {
        st = SC_ERR_NOMEM;
        goto exit;
    }
    /* The search has the whole budget when the MILP cannot run, else a share. */
    double until = milp ? bd.start + SEARCH_SHARE * time_limit : bd.deadline;
    double span = first_schedule(&md, &bd, b.bound, until, milp ? SEARCH_TRIES : LONG_MAX, x0,
                                 pos, end, &st);
    if (st != SC_OK)
        goto exit;
    if (span <= M) /* a tighter big-M, and maybe a proof already */
        M = span * (1 + 1e-9) + 1e-9;
    out->incumbent = span;
    out->bound = fmin(b.bound, M); /* until GLPK proves more */
    if (span <= b.bound * (1 + 1e-9) + 1e-12) {
        out->status = SC_EXACT_OPTIMAL; /* a schedule meets the lower bound */
        out->optimum = out->incumbent = out->bound = span;
        out->by_bound = 1;
    } else if (milp) {
        st = sc_exact_milp(&md, &bd, fmin(b.bound, M), M, isfinite(span) ? x0 : NULL, pos, out);
    } else {
        out->status = SC_EXACT_LIMIT;
        out->searched = 1;
        for (int i = 0; i < md.n; i++)
            out->passes += pass_used(&md, i);
        snprintf(out->why, sizeof out->why, "the MILP covers at most %d passes a device and %d "
                 "records: the search's best schedule and the lower bound", MAX_PER_DEVICE,
                 MAX_MILP_RECORDS);
    }
    if (st == SC_OK && lua && isfinite(out->incumbent))
        st = sc_exact_lua(&md, x0, lua);
exit:
    /* Our own arrays out of memory: the outcome, as GLPK's would be. */
    if (st == SC_ERR_NOMEM) {
        out->status = SC_EXACT_MEMORY;
        snprintf(out->why, sizeof out->why, "the model's arrays (%d passes) did not fit in memory",
                 md.n);
        st = SC_OK;
    }
    out->seconds = sc_exact_now() - bd.start;
    sc_free(x0), sc_free(end), sc_free(pos);
    sc_free(md.d), sc_free(md.dev);
    return st;
}
