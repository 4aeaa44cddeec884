/*
 * exact_glpk.c — the exact optimum's MILP in GLPK (exact.h; the model:
 * exact.c's header and docs/bound.md#the-exact-optimum), within the call's
 * budget (exact_impl.h).
 *
 * The time: one deadline for the whole call. GLPK's LP relaxation
 * (glp_simplex's tm_lim) and its branch and bound (glp_intopt's tm_lim)
 * each get what is left; GLPK checks its clock between simplex iterations
 * and subproblems, and the callback stops the search at the deadline
 * between those checks. Two phases of GLPK have no clock check at all: the
 * pseudocost branching's first evaluation of the candidates (timed at each
 * branching, and replaced by the most fractional candidate when it would
 * pass the deadline) and the MIR cuts (only on models small enough that a
 * round of them is short: MIR_BINARIES).
 *
 * The memory: GLPK's allocation is capped with glp_mem_limit at what the
 * budget leaves after the model's own arrays. A fatal error in GLPK (out
 * of that memory, or of the process's) reaches its error hook, which
 * longjmps back to sc_exact_milp: glp_free_env then frees everything GLPK
 * holds, the problem included (GLPK itself would abort the process).
 */
#include "exact_impl.h"
#include "ir/alloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double sc_exact_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#ifdef SC_HAVE_GLPK
#include <glpk.h>
#include <limits.h>
#include <setjmp.h>

/* The most binaries with which GLPK generates MIR cuts (below). */
#define MIR_BINARIES 2000

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
 * longjmp to guarded's setjmp, after which automatic variables changed
 * since the setjmp are indeterminate; this is not one. */
typedef struct glpk_run {
    jmp_buf jb;
    double deadline;     /* as budget's */
    const double *start; /* handed to GLPK at its first GLP_IHEUR, then NULL */
    double bound;        /* the best bound GLPK proved (from the lower bound up) */
    double incumbent;    /* its best schedule (INFINITY: none) */
    double first;        /* the first incumbent's makespan */
    double *xbest;       /* [n] its starts, when better than the first (NULL: not wanted) */
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
 * aborts the process when this returns, so it does not; sc_exact_milp frees
 * GLPK's whole environment. */
static void error_hook(void *info)
{
    glpk_run *r = info;
    longjmp(r->jb, 1);
}

/* The time left until the deadline in GLPK's milliseconds (0: none). */
static int ms_left(const glpk_run *r)
{
    double ms = (r->deadline - sc_exact_now()) * 1000;
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
    double t0 = sc_exact_now();
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
    return sc_exact_now() - t0;
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
    if (sc_exact_now() + 4 * k * e >= r->deadline)
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
    if (sc_exact_now() >= r->deadline)
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

/* The MILP in GLPK (the rows as exact.c's header says). GLPK's allocation
 * can fail: only under guarded's setjmp. */
static glp_prob *build(const model *md, const milp *x, double lower, double M)
{
    const sc_prog *pg = md->pg;
    int n = md->n, S = md->S, m = md->m, *ind = x->ind;
    double *val = x->val;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, x->ncol);
    for (int i = 0; i < n; i++) /* GLP_DB needs lb < ub: an unused W is fixed at 0 */
        glp_set_col_bnds(lp, i + 1, pass_used(md, i) ? GLP_DB : GLP_FX, 0,
                         pass_used(md, i) ? M : 0);
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
            lag = sc_prog_stage_device(pg, s) != sc_prog_stage_device(pg, s + 1)
                      ? sc_prog_msg_time(pg, mb)
                      : 0;
        } else if (k == 0) { /* the last stage's B after its F */
            j = i + 1;
        } else if (k == 1 && s > 0) { /* B(s-1) after B(s) */
            j = 3 * ((s - 1) * m + mb) + 1;
            lag = sc_prog_stage_device(pg, s) != sc_prog_stage_device(pg, s - 1)
                      ? sc_prog_msg_time(pg, mb)
                      : 0;
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
            glp_set_col_bnds(lp, j + 1, before < M ? GLP_DB : GLP_FX, fmin(before, M), M);
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
        double capd = sc_prog_mem_cap(pg, d), uj = sc_prog_rec_units(pg, (j / 3) / m, (j / 3) % m);
        if (!isfinite(capd))
            continue;
        double rhs = capd + 1e-7 * (1 + capd) - uj;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (i == j || !pass_used(md, i) || md->dev[i] != d)
                continue;
            double u = sc_prog_rec_units(pg, (i / 3) / m, (i / 3) % m);
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
 * (glp_intopt's, and the callback). Called under guarded's setjmp: a fatal
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
        p.gmi_cuts = GLP_ON; /* 50 cuts a round at most: bounded */
        /* MIR cuts: a round of them has no clock check and grows with the
         * model, to about 20 s at its largest (15120 binaries); up to
         * MIR_BINARIES a round stays under half a second. */
        p.mir_cuts = x->np <= MIR_BINARIES ? GLP_ON : GLP_OFF;
        p.cb_func = callback;
        p.cb_info = r;
        p.tm_lim = ms_left(r);
        r->ret = p.tm_lim ? glp_intopt(lp, &p) : GLP_ETMLIM;
        r->mip_status = glp_mip_status(lp);
        if (r->mip_status == GLP_OPT || r->mip_status == GLP_FEAS) {
            r->incumbent = fmin(r->incumbent, glp_mip_obj_val(lp));
            if (r->xbest && glp_mip_obj_val(lp) < r->first)
                for (int i = 0; i < md->n; i++)
                    r->xbest[i] = glp_mip_col_val(lp, i + 1);
        }
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

sc_status sc_exact_milp(const model *md, const budget *bd, double lower, double M,
                        double *x0, const int *pos, sc_exact *out)
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
    r->first = x0 ? out->incumbent : INFINITY;
    r->xbest = x0;
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

sc_status sc_exact_milp(const model *md, const budget *bd, double lower, double M,
                        double *x0, const int *pos, sc_exact *out)
{
    (void)md, (void)bd, (void)M, (void)x0, (void)pos;
    out->status = SC_EXACT_NO_SOLVER;
    out->bound = lower;
    snprintf(out->why, sizeof out->why,
             "this stagecraft was built without GLPK (apt-get install libglpk-dev, then make)");
    return SC_OK;
}

#endif
