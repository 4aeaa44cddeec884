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
 * The budget: one deadline for the whole call; GLPK's LP relaxation and
 * its branch and bound each get what is left of it. GLPK's memory is
 * capped with glp_mem_limit, and a fatal error in it (out of that memory)
 * reaches its error hook, which longjmps back to solve: glp_free_env then
 * frees all GLPK holds, the problem included (GLPK itself would abort).
 */
#include "exact.h"
#include "bound.h"
#include "ir/alloc.h"
#include "ir/offload_cfg.h"
#include "ir/recompute_cfg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_PER_DEVICE 64

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
    if (sc_vocab_split(sc_prog_vocab(pg)))
        return "a split vocabulary";
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

/* The model's passes. */
typedef struct model {
    const sc_prog *pg;
    int S, m, fold; /* fold: tw = 0 everywhere, W folded into B */
    int n;          /* passes: 3·S·m (W columns unused when folded) */
    double *d;      /* [n] durations */
    int *dev;       /* [n] devices */
} model;

static int pass_used(const model *md, int i) { return !(md->fold && i % 3 == 2); }

/* The lag before pass i can start after its dependency, and that
 * dependency (-1: none). */
static int dep_of(const model *md, int i, double *lag)
{
    const sc_prog *pg = md->pg;
    int r = i / 3, s = r / md->m, mb = r % md->m, k = i % 3, t = -1;
    *lag = 0;
    if (k == 0 && s > 0)
        t = s - 1;
    else if (k == 1 && s + 1 < md->S)
        t = s + 1;
    if (t >= 0) {
        if (sc_prog_stage_device(pg, s) != sc_prog_stage_device(pg, t))
            *lag = sc_prog_tcomm(pg);
        return 3 * (t * md->m + mb) + k;
    }
    return k == 0 ? -1 : k == 1 ? i - 1 : i - 1; /* the last stage's B: its F; W: its B */
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
                    int j = dep_of(md, i, &lag);
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
                    double u = sc_prog_mem(pg, in->stage), cap = sc_prog_mem_cap(pg, d);
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
            double cap = sc_prog_mem_cap(pg, d), u = sc_prog_mem(pg, s);
            for (int k = 0; k < 3; k++) {
                if (next[s * 3 + k] >= m)
                    continue;
                int i = 3 * (s * m + next[s * 3 + k]) + k;
                if (!pass_used(md, i))
                    continue;
                double lag, t = free_at[d];
                int j = dep_of(md, i, &lag);
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
        double u = sc_prog_mem(pg, s);
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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What one call may spend (exact.h): everything done by `deadline` (a
 * now() time), and at most `mem` bytes (0: no limit) more than `used0`,
 * interp's allocation (ir/alloc.h) at the call's start. */
typedef struct budget {
    double start, deadline;
    size_t mem, used0;
} budget;

#ifdef SC_HAVE_GLPK
#include <glpk.h>
#include <limits.h>
#include <setjmp.h>

/* Whether pass i ends before pass j starts in every schedule of the model:
 * the dependencies, with each stage's passes in microbatch order (below). */
static int implied(const model *md, int i, int j)
{
    int ri = i / 3, rj = j / 3, ki = i % 3, kj = j % 3;
    int a = ri % md->m, b = rj % md->m, si = ri / md->m, sj = rj / md->m;
    if (i == j || a > b)
        return 0;
    if (ki == 0) /* F(si, a) precedes F(later stage, b >= a), every B and W of b >= a */
        return kj != 0 || sj > si || (sj == si && a < b);
    if (ki == 1) /* B(si, a) precedes B(earlier stage, b) and W(si or earlier, b) */
        return (kj == 1 && (sj < si || (sj == si && a < b))) || (kj == 2 && sj <= si);
    return kj == 2 && sj == si && a < b; /* W in order */
}

const char *sc_exact_solver(void)
{
    static char name[32];
    snprintf(name, sizeof name, "GLPK %s", glp_version());
    return name;
}

/* The MILP's index arrays, ours (ir/alloc.h), made before GLPK runs.
 * Columns 1..n: the starts; n+1: C; then a binary per pair. */
typedef struct milp {
    long *pairs;   /* pair k: i·n + j (i < j), column n + 2 + k */
    size_t np;
    int ncol;
    int *pidx;     /* [n·n] the pair column of (i, j), i < j */
    int *ind;      /* [ncol + 1] one row's entries, 1-based */
    double *val;
    double *start; /* [ncol + 1] the first incumbent; NULL: none */
} milp;

/* One run of GLPK. It lives on the heap: GLPK's error hook leaves by
 * longjmp to solve's setjmp, and the automatic variables of solve that
 * changed since setjmp are indeterminate after it; this is not one. */
typedef struct glpk_run {
    jmp_buf jb;
    double deadline;     /* as budget's */
    const double *start; /* handed to GLPK at its first GLP_IHEUR, then NULL */
    double bound;        /* the best bound GLPK proved (from the lower bound up) */
    double incumbent;    /* its best schedule (INFINITY: none) */
    int ret;             /* glp_simplex's return, then glp_intopt's */
    int lp_status;       /* glp_get_status after glp_simplex (0: not run) */
    int mip_status;      /* glp_mip_status at the end (0: not reached) */
    long rows;
    char msg[160];       /* the first line of GLPK's fatal error ("": none) */
} glpk_run;

/* GLPK's terminal output: never printed (stdout is the command's). A fatal
 * error switches it on and writes its message; its first line is kept. */
static int term_hook(void *info, const char *s)
{
    glpk_run *r = info;
    if (glp_at_error() && !r->msg[0]) {
        size_t k = strcspn(s, "\n");
        if (k >= sizeof r->msg)
            k = sizeof r->msg - 1;
        memcpy(r->msg, s, k);
        r->msg[k] = 0;
    }
    return 1;
}

/* A fatal error in GLPK (out of its memory, or an internal one): GLPK
 * aborts the process when this returns, so it does not; solve then frees
 * GLPK's whole environment. */
static void error_hook(void *info)
{
    glpk_run *r = info;
    longjmp(r->jb, 1);
}

/* The time left until the deadline in GLPK's milliseconds (0: none). */
static int ms_left(const glpk_run *r)
{
    double ms = (r->deadline - now()) * 1000;
    return ms < 1 ? 0 : ms < 2e9 ? (int)ms : 2000000000;
}

/* GLPK's pseudocost branching (GLP_BR_PCH) first evaluates each candidate
 * it has no pseudocost for: a copy of the subproblem with the column
 * fixed, and up to 30 dual simplex iterations, for each branch; with
 * hundreds of candidates that runs for seconds, with no clock check. So
 * at each branching one such evaluation is timed here (column j fixed at
 * v, as GLPK would), and the time it took returned. */
static double time_one_evaluation(glp_prob *mip, int j, double v, const glpk_run *r)
{
    double t0 = now();
    glp_prob *lp = glp_create_prob();
    glp_copy_prob(lp, mip, GLP_OFF);
    glp_set_col_bnds(lp, j, GLP_FX, v, v);
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = GLP_MSG_OFF;
    sp.meth = GLP_DUAL;
    sp.it_lim = 30;
    sp.tm_lim = ms_left(r);
    if (sp.tm_lim)
        glp_simplex(lp, &sp);
    glp_delete_prob(lp);
    return now() - t0;
}

/* At a branching (GLP_IBRANCH): when evaluating every candidate, twice
 * the timed evaluation each and twice that again for safety, would pass
 * the deadline, branches on the most fractional candidate itself, and
 * GLPK evaluates none. Every candidate is counted, evaluated before or
 * not: an upper bound on what GLPK spends, so the branch and bound keeps
 * to the deadline, at the price of plainer branching near it. */
static void branch(glp_tree *T, const glpk_run *r)
{
    glp_prob *mip = glp_ios_get_prob(T);
    int n = glp_get_num_cols(mip), k = 0, best = 0;
    double most = -1;
    for (int j = 1; j <= n; j++) {
        if (!glp_ios_can_branch(T, j))
            continue;
        double v = glp_get_col_prim(mip, j), f = fmin(v - floor(v), ceil(v) - v);
        k++;
        if (f > most)
            most = f, best = j;
    }
    if (!best)
        return;
    double v = glp_get_col_prim(mip, best);
    double e = time_one_evaluation(mip, best, floor(v), r);
    if (now() + 4 * k * e >= r->deadline)
        glp_ios_branch_upon(T, best, v - floor(v) < 0.5 ? GLP_DN_BRNCH : GLP_UP_BRNCH);
}

/* The branch and bound's hook: the first incumbent, the best bound and
 * schedule so far (kept in r, which outlives the problem when GLPK fails),
 * the branching (above), and a stop at the deadline between GLPK's own
 * checks of tm_lim (which it makes only before each subproblem). */
static void callback(glp_tree *T, void *info)
{
    glpk_run *r = info;
    glp_prob *mip = glp_ios_get_prob(T);
    int why = glp_ios_reason(T);
    if (why == GLP_IHEUR && r->start) {
        glp_ios_heur_sol(T, r->start);
        r->start = NULL;
    }
    if (glp_mip_status(mip) == GLP_FEAS)
        r->incumbent = fmin(r->incumbent, glp_mip_obj_val(mip));
    int b = glp_ios_best_node(T);
    if (b)
        r->bound = fmax(r->bound, glp_ios_node_bound(T, b));
    if (now() >= r->deadline)
        glp_ios_terminate(T);
    else if (why == GLP_IBRANCH)
        branch(T, r);
}

/* Appends row lo <= Σ a·x (ub: <= hi) with k entries in ind/val (1-based). */
static void row(glp_prob *lp, int type, double lo, double hi, int k, int *ind, double *val)
{
    int r = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, r, type, lo, hi);
    glp_set_mat_row(lp, r, k, ind, val);
}

/* The pairs of passes of one device that no dependency orders, and the
 * arrays of x; SC_ERR_NOMEM (x holds what was made) or SC_OK. */
static sc_status prepare(const model *md, const double *x0, const int *pos, double lower, milp *x)
{
    int n = md->n;
    size_t cap = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!pass_used(md, i) || !pass_used(md, j) || md->dev[i] != md->dev[j] ||
                implied(md, i, j) || implied(md, j, i))
                continue;
            if (x->np == cap) {
                cap = cap ? 2 * cap : 256;
                long *np2 = sc_realloc(x->pairs, cap * sizeof *np2);
                if (!np2)
                    return SC_ERR_NOMEM;
                x->pairs = np2;
            }
            x->pairs[x->np++] = (long)i * n + j;
        }
    x->ncol = n + 1 + (int)x->np;
    x->ind = sc_calloc((size_t)x->ncol + 1, sizeof *x->ind);
    x->val = sc_calloc((size_t)x->ncol + 1, sizeof *x->val);
    x->pidx = sc_calloc((size_t)n * (size_t)n, sizeof *x->pidx);
    if (!x->ind || !x->val || !x->pidx)
        return SC_ERR_NOMEM;
    for (size_t k = 0; k < x->np; k++)
        x->pidx[x->pairs[k]] = n + 2 + (int)k;
    if (!x0)
        return SC_OK;
    /* The first incumbent: the schedule x0 (orders pos), C its span. */
    double *start = x->start = sc_calloc((size_t)x->ncol + 1, sizeof *start);
    if (!start)
        return SC_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        start[i + 1] = pass_used(md, i) ? x0[i] : 0;
        start[n + 1] = fmax(start[n + 1], start[i + 1] + md->d[i]);
    }
    start[n + 1] = fmax(start[n + 1], lower);
    for (size_t k = 0; k < x->np; k++)
        start[n + 2 + k] = pos[x->pairs[k] / n] < pos[x->pairs[k] % n];
    return SC_OK;
}

/* The MILP in GLPK (exact.h's model; the rows as the top of this file
 * says). GLPK's allocation can fail: only under solve's setjmp. */
static glp_prob *build(const model *md, const milp *x, double lower, double M)
{
    const sc_prog *pg = md->pg;
    int n = md->n, S = md->S, m = md->m, *ind = x->ind;
    double *val = x->val;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, x->ncol);
    for (int i = 0; i < n; i++)
        glp_set_col_bnds(lp, i + 1, GLP_DB, 0, pass_used(md, i) ? M : 0);
    glp_set_col_bnds(lp, n + 1, lower < M ? GLP_DB : GLP_FX, lower, M);
    glp_set_obj_coef(lp, n + 1, 1);
    for (size_t k = 0; k < x->np; k++)
        glp_set_col_kind(lp, n + 2 + (int)k, GLP_BV);
    /* C >= x + d; dependencies x_j >= x_i + d_i + lag. */
    for (int i = 0; i < n; i++) {
        if (!pass_used(md, i))
            continue;
        ind[1] = n + 1, val[1] = 1, ind[2] = i + 1, val[2] = -1;
        row(lp, GLP_LO, md->d[i], 0, 2, ind, val);
        int r = i / 3, s = r / m, mb = r % m, k = i % 3, j = -1;
        double lag = 0;
        if (k == 0 && s + 1 < S) { /* F(s+1) after F(s) */
            j = 3 * ((s + 1) * m + mb);
            lag = sc_prog_stage_device(pg, s) != sc_prog_stage_device(pg, s + 1) ? sc_prog_tcomm(pg) : 0;
        } else if (k == 0) { /* the last stage's B after its F */
            j = i + 1;
        } else if (k == 1 && s > 0) { /* B(s-1) after B(s) */
            j = 3 * ((s - 1) * m + mb) + 1;
            lag = sc_prog_stage_device(pg, s) != sc_prog_stage_device(pg, s - 1) ? sc_prog_tcomm(pg) : 0;
        }
        if (j >= 0) {
            ind[1] = j + 1, val[1] = 1, ind[2] = i + 1, val[2] = -1;
            row(lp, GLP_LO, md->d[i] + lag, 0, 2, ind, val);
        }
        if (k == 1 && !md->fold) { /* W after its B */
            ind[1] = i + 2, val[1] = 1, ind[2] = i + 1, val[2] = -1;
            row(lp, GLP_LO, md->d[i], 0, 2, ind, val);
        }
        if (mb + 1 < m) { /* a stage's F, B and W in microbatch order (above) */
            ind[1] = i + 3 + 1, val[1] = 1, ind[2] = i + 1, val[2] = -1;
            row(lp, GLP_LO, md->d[i], 0, 2, ind, val);
        }
    }
    /* Heads and tails on each device: the passes that must run before pass
     * j on its device take their time before it, those after it after it
     * (valid inequalities: they tighten the relaxation at every node). */
    for (int j = 0; j < n; j++) {
        if (!pass_used(md, j))
            continue;
        double before = 0, after = md->d[j];
        for (int i = 0; i < n; i++) {
            if (!pass_used(md, i) || md->dev[i] != md->dev[j])
                continue;
            if (implied(md, i, j))
                before += md->d[i];
            else if (implied(md, j, i))
                after += md->d[i];
        }
        if (before > 0)
            glp_set_col_bnds(lp, j + 1, GLP_DB, fmin(before, M), M);
        ind[1] = n + 1, val[1] = 1, ind[2] = j + 1, val[2] = -1;
        row(lp, GLP_LO, after, 0, 2, ind, val);
    }
    /* Disjunctions. */
    for (size_t k = 0; k < x->np; k++) {
        int i = (int)(x->pairs[k] / n), j = (int)(x->pairs[k] % n), y = n + 2 + (int)k;
        ind[1] = j + 1, val[1] = 1, ind[2] = i + 1, val[2] = -1, ind[3] = y, val[3] = -M;
        row(lp, GLP_LO, md->d[i] - M, 0, 3, ind, val); /* x_j - x_i >= d_i - M(1-y) */
        ind[1] = i + 1, val[1] = 1, ind[2] = j + 1, val[2] = -1, ind[3] = y, val[3] = M;
        row(lp, GLP_LO, md->d[j], 0, 3, ind, val);     /* x_i - x_j >= d_j - M y */
    }
    /* The memory cap after every F. */
    double wk = sc_prog_w_keep(pg);
    for (int j = 0; j < n; j += 3) {
        int d = md->dev[j];
        double capd = sc_prog_mem_cap(pg, d), uj = sc_prog_mem(pg, (j / 3) / m);
        if (!isfinite(capd))
            continue;
        double rhs = capd + 1e-7 * (1 + capd) - uj;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (i == j || !pass_used(md, i) || md->dev[i] != d)
                continue;
            double u = sc_prog_mem(pg, (i / 3) / m);
            double a = i % 3 == 0 ? u : i % 3 == 1 ? -(md->fold ? 1 : 1 - wk) * u : -wk * u;
            if (a == 0)
                continue;
            if (implied(md, i, j)) {
                rhs -= a;
            } else if (!implied(md, j, i)) {
                int lo = i < j ? i : j, hi = i < j ? j : i, y = x->pidx[(long)lo * n + hi];
                if (i < j) { /* y = 1: i first */
                    ind[++k] = y, val[k] = a;
                } else { /* y = 1: j first; i before j is 1 - y */
                    rhs -= a;
                    ind[++k] = y, val[k] = -a;
                }
            }
        }
        if (k) /* (k = 0 with rhs < 0, a record over the cap, is bound.h's infinity) */
            row(lp, GLP_UP, 0, rhs, k, ind, val);
    }
    return lp;
}

/* Builds and solves the MILP within r's deadline and mem_mb MiB of GLPK's
 * memory (0: no limit); the outcome in r. Both phases have the time left:
 * the LP relaxation (glp_simplex's tm_lim) and the branch and bound
 * (glp_intopt's, and the callback). Called under solve's setjmp: a fatal
 * error in GLPK leaves by error_hook and does not return here. */
static void run_glpk(const model *md, const milp *x, double lower, double M, size_t mem_mb,
                     glpk_run *r)
{
    glp_term_out(GLP_OFF);
    glp_term_hook(term_hook, r);
    glp_error_hook(error_hook, r);
    if (mem_mb)
        glp_mem_limit(mem_mb < INT_MAX ? (int)mem_mb : INT_MAX);
    glp_prob *lp = build(md, x, lower, M);
    r->rows = glp_get_num_rows(lp);
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = GLP_MSG_OFF;
    sp.tm_lim = ms_left(r);
    r->ret = sp.tm_lim ? glp_simplex(lp, &sp) : GLP_ETMLIM;
    r->lp_status = r->ret == 0 ? glp_get_status(lp) : 0;
    if (r->lp_status == GLP_OPT) {
        glp_iocp p;
        glp_init_iocp(&p);
        p.msg_lev = GLP_MSG_OFF;
        p.br_tech = GLP_BR_PCH;
        p.bt_tech = GLP_BT_BPH;
        p.mir_cuts = GLP_ON;
        p.gmi_cuts = GLP_ON;
        p.cb_func = callback;
        p.cb_info = r;
        p.tm_lim = ms_left(r);
        r->ret = p.tm_lim ? glp_intopt(lp, &p) : GLP_ETMLIM;
        r->mip_status = glp_mip_status(lp);
        if (r->mip_status == GLP_OPT || r->mip_status == GLP_FEAS)
            r->incumbent = fmin(r->incumbent, glp_mip_obj_val(lp));
    }
    glp_delete_prob(lp);
}

/* run_glpk under setjmp: 1 when GLPK failed (error_hook came back here),
 * else 0. Nothing here changes between setjmp and a longjmp, so nothing
 * is left indeterminate. */
static int guarded(const model *md, const milp *x, double lower, double M, size_t mem_mb,
                   glpk_run *r)
{
    if (setjmp(r->jb))
        return 1;
    run_glpk(md, x, lower, M, mem_mb, r);
    return 0;
}

static sc_status solve(model *md, const budget *bd, double lower, double M, const double *x0,
                       const int *pos, sc_exact *out)
{
    milp x = {0};
    glpk_run *r = NULL;
    sc_status st = prepare(md, x0, pos, lower, &x);
    if (st == SC_OK && !(r = sc_calloc(1, sizeof *r)))
        st = SC_ERR_NOMEM;
    if (st != SC_OK)
        goto exit;
    out->passes = 0;
    for (int i = 0; i < md->n; i++)
        out->passes += pass_used(md, i);
    out->binaries = (long)x.np;
    /* GLPK's memory: what the budget leaves after our own arrays, in whole
     * MiB (glp_mem_limit's unit; at least one). */
    size_t mem_mb = 0, own = sc_alloc_used() - bd->used0;
    if (bd->mem) {
        mem_mb = bd->mem > own ? (bd->mem - own) >> 20 : 0;
        out->solver_mem = mem_mb << 20;
        if (!mem_mb) {
            out->status = SC_EXACT_MEMORY;
            snprintf(out->why, sizeof out->why, "GLPK needs at least 1 MiB, and %zu bytes were left",
                     bd->mem > own ? bd->mem - own : 0);
            goto exit;
        }
    }
    r->deadline = bd->deadline;
    r->start = x.start;
    r->bound = lower;
    r->incumbent = INFINITY;
    int failed = guarded(md, &x, lower, M, mem_mb, r);
    glp_free_env(); /* nothing of GLPK stays between calls; after a failure, the problem too */
    out->rows = r->rows;
    out->incumbent = fmin(out->incumbent, r->incumbent);
    out->bound = fmax(lower, r->bound);
    if (failed && strstr(r->msg, "memory")) {
        out->status = SC_EXACT_MEMORY;
        if (mem_mb)
            snprintf(out->why, sizeof out->why, "GLPK needs more than the %zu MiB it was given",
                     mem_mb);
        else
            snprintf(out->why, sizeof out->why, "GLPK ran out of memory (%s)", r->msg);
    } else if (failed) {
        out->status = SC_EXACT_FAILED;
        snprintf(out->why, sizeof out->why, "GLPK failed: %s", r->msg[0] ? r->msg : "an error");
    } else if (r->mip_status == GLP_OPT && r->ret == 0) {
        out->status = SC_EXACT_OPTIMAL;
        out->optimum = out->bound = out->incumbent;
    } else if (r->lp_status == GLP_NOFEAS || r->mip_status == GLP_NOFEAS || r->ret == GLP_ENOPFS) {
        out->status = SC_EXACT_INFEASIBLE;
    } else if (r->ret == GLP_ETMLIM || r->ret == GLP_ESTOP) {
        out->status = SC_EXACT_LIMIT;
        snprintf(out->why, sizeof out->why, "GLPK stopped at the time limit in its %s",
                 r->lp_status == GLP_OPT ? "branch and bound" : "LP relaxation");
    } else {
        out->status = SC_EXACT_FAILED;
        snprintf(out->why, sizeof out->why, "GLPK failed (code %d, LP status %d)", r->ret,
                 r->lp_status);
    }
exit:
    sc_free(r);
    sc_free(x.pairs), sc_free(x.ind), sc_free(x.val), sc_free(x.pidx), sc_free(x.start);
    return st;
}

#else /* no GLPK: the proofs by the lower bound only */

const char *sc_exact_solver(void) { return NULL; }

static sc_status solve(model *md, const budget *bd, double lower, double M, const double *x0,
                       const int *pos, sc_exact *out)
{
    (void)md, (void)bd, (void)M, (void)x0, (void)pos;
    out->status = SC_EXACT_NO_SOLVER;
    out->bound = lower;
    snprintf(out->why, sizeof out->why,
             "this stagecraft was built without GLPK (apt-get install libglpk-dev, then make)");
    return SC_OK;
}

#endif

sc_status sc_exact_solve(const sc_prog *pg, double time_limit, size_t mem_limit, double upper,
                         sc_exact *out)
{
    if (!pg || !out || !(time_limit > 0) || upper != upper)
        return SC_ERR_ARG;
    budget bd = {.start = now(), .mem = mem_limit, .used0 = sc_alloc_used()};
    bd.deadline = bd.start + time_limit;
    memset(out, 0, sizeof *out);
    out->incumbent = INFINITY;
    const char *no = unsupported(pg);
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    if (!no && (long)S * m * 3 > 1536)
        no = "more than 512 records";
    int fold = 1;
    for (int s = 0; s < S; s++)
        fold &= sc_prog_tw(pg, s) == 0;
    model md = {.pg = pg, .S = S, .m = m, .fold = fold, .n = 3 * S * m};
    int *per = NULL, *pos = NULL;
    double *x0 = NULL, *end = NULL;
    sc_status st = SC_OK;
    if (!no) {
        md.d = sc_calloc((size_t)md.n, sizeof *md.d);
        md.dev = sc_calloc((size_t)md.n, sizeof *md.dev);
        per = sc_calloc((size_t)P, sizeof *per);
        if (!md.d || !md.dev || !per) {
            st = SC_ERR_NOMEM;
            goto exit;
        }
        for (int i = 0; i < md.n; i++) {
            int s = (i / 3) / m, k = i % 3;
            md.dev[i] = sc_prog_stage_device(pg, s);
            md.d[i] = k == 0 ? sc_prog_tf(pg, s) : k == 1 ? sc_prog_tb(pg, s) : sc_prog_tw(pg, s);
            per[md.dev[i]] += pass_used(&md, i);
        }
        for (int d = 0; d < P; d++)
            if (per[d] > MAX_PER_DEVICE)
                no = "more than 64 passes on a device";
    }
    if (no) {
        out->status = SC_EXACT_UNSUPPORTED;
        snprintf(out->why, sizeof out->why, "the exact model does not cover %s", no);
        goto exit;
    }
    sc_bound b;
    st = sc_bound_prog(pg, &b);
    if (st != SC_OK)
        goto exit;
    double M = upper;
    if (!isfinite(M)) { /* every pass one after another, each transfer waited for */
        M = 0;
        for (int i = 0; i < md.n; i++)
            M += md.d[i] + (pass_used(&md, i) ? 2 * sc_prog_tcomm(pg) : 0);
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
    /* The first incumbent: the best of the program's orders and three list
     * schedules (B first, then F or W; F first). */
    static const int prios[3][3] = {{1, 0, 2}, {2, 0, 1}, {0, 1, 2}};
    double span = order_times(&md, x0, pos, end);
    double *x1 = sc_calloc((size_t)md.n, sizeof *x1);
    int *pos1 = sc_calloc((size_t)md.n, sizeof *pos1);
    for (int v = 0; x1 && pos1 && v < 3; v++) {
        double t = greedy(&md, prios[v], x1, pos1, end);
        if (t < span) {
            span = t;
            memcpy(x0, x1, (size_t)md.n * sizeof *x0);
            memcpy(pos, pos1, (size_t)md.n * sizeof *pos);
        }
    }
    sc_free(x1), sc_free(pos1);
    if (span <= M) /* a tighter big-M, and maybe a proof already */
        M = span * (1 + 1e-9) + 1e-9;
    if (span <= b.bound * (1 + 1e-9) + 1e-12) {
        out->status = SC_EXACT_OPTIMAL; /* a schedule meets the lower bound */
        out->optimum = out->incumbent = out->bound = span;
        out->by_bound = 1;
    } else {
        out->incumbent = span;
        st = solve(&md, &bd, fmin(b.bound, M), M, isfinite(span) ? x0 : NULL, pos, out);
    }
exit:
    /* Our own arrays out of memory: the outcome, as GLPK's would be. */
    if (st == SC_ERR_NOMEM) {
        out->status = SC_EXACT_MEMORY;
        snprintf(out->why, sizeof out->why, "the model's arrays (%d passes) did not fit in memory",
                 md.n);
        st = SC_OK;
    }
    out->seconds = now() - bd.start;
    sc_free(x0), sc_free(end), sc_free(pos);
    sc_free(md.d), sc_free(md.dev), sc_free(per);
    return st;
}
