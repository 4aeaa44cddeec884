/*
 * exact.c — the exact optimum by a MILP (exact.h, docs/bound.md#the-exact-optimum).
 *
 * Passes are numbered by record: record r = s·m + mb has F = 3r, B = 3r+1,
 * W = 3r+2 (with tw = 0 the W is folded into its B: a W of no time can run
 * right after its B, which only frees memory sooner). Columns: the start
 * x of every pass, the makespan C, and a binary y per pair (i < j) of
 * passes of one device whose order no dependency fixes: y = 1 puts i first,
 *     x_i + d_i <= x_j + M (1 - y),   x_j + d_j <= x_i + M y,
 * M the upper bound on the makespan. Microbatches are interchangeable, so
 * the first stage's F run in microbatch order (a relabelling of whole
 * microbatches maps any schedule to one that does). The memory cap, after
 * every F j of a device: its record plus every record whose F runs before
 * j, less what the B and W before j freed, is at most the cap.
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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

#ifdef SC_HAVE_GLPK
#include <glpk.h>

const char *sc_exact_solver(void)
{
    static char name[32];
    snprintf(name, sizeof name, "GLPK %s", glp_version());
    return name;
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

/* Whether dependencies order pass i before pass j (same microbatch). */
static int implied(const model *md, int i, int j)
{
    int ri = i / 3, rj = j / 3, ki = i % 3, kj = j % 3;
    if (ri % md->m != rj % md->m)
        return 0;
    int si = ri / md->m, sj = rj / md->m;
    if (ki == 0) /* F(si) precedes F(later), every B and W */
        return kj != 0 || sj > si;
    if (ki == 1) /* B(si) precedes B(earlier) and W(si or earlier) */
        return (kj == 1 && sj < si) || (kj == 2 && sj <= si);
    return 0;
}

typedef struct cb_data {
    double bound;
} cb_data;

static void callback(glp_tree *T, void *info)
{
    cb_data *cb = info;
    int b = glp_ios_best_node(T);
    if (b) {
        double v = glp_ios_node_bound(T, b);
        if (v > cb->bound)
            cb->bound = v;
    }
}

/* Appends row lo <= Σ a·x (ub: <= hi) with k entries in ind/val (1-based). */
static void row(glp_prob *lp, int type, double lo, double hi, int k, int *ind, double *val)
{
    int r = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, r, type, lo, hi);
    glp_set_mat_row(lp, r, k, ind, val);
}

static sc_status solve(model *md, double time_limit, double lower, double M, sc_exact *out)
{
    const sc_prog *pg = md->pg;
    int n = md->n, S = md->S, m = md->m;
    /* Columns 1..n: starts; n+1: C; then the binaries. */
    long *pairs = NULL; /* pair k: i·n + j, column n + 2 + k */
    size_t np = 0, cap = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!pass_used(md, i) || !pass_used(md, j) || md->dev[i] != md->dev[j] ||
                implied(md, i, j) || implied(md, j, i))
                continue;
            int ri = i / 3, rj = j / 3;
            if (i % 3 == 0 && j % 3 == 0 && ri / m == 0 && rj / m == 0)
                continue; /* the first stage's F in microbatch order: a dependency below */
            if (np == cap) {
                cap = cap ? 2 * cap : 256;
                long *np2 = sc_realloc(pairs, cap * sizeof *pairs);
                if (!np2) {
                    sc_free(pairs);
                    return SC_ERR_NOMEM;
                }
                pairs = np2;
            }
            pairs[np++] = (long)i * n + j;
        }
    int ncol = n + 1 + (int)np;
    int *ind = sc_calloc((size_t)ncol + 1, sizeof *ind);
    double *val = sc_calloc((size_t)ncol + 1, sizeof *val);
    int *pidx = sc_calloc((size_t)n * (size_t)n, sizeof *pidx); /* pair column of (i, j), i < j */
    if (!ind || !val || !pidx) {
        sc_free(pairs), sc_free(ind), sc_free(val), sc_free(pidx);
        return SC_ERR_NOMEM;
    }
    glp_term_out(GLP_OFF);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, ncol);
    for (int i = 0; i < n; i++)
        glp_set_col_bnds(lp, i + 1, GLP_DB, 0, pass_used(md, i) ? M : 0);
    glp_set_col_bnds(lp, n + 1, lower < M ? GLP_DB : GLP_FX, lower, M);
    glp_set_obj_coef(lp, n + 1, 1);
    for (size_t k = 0; k < np; k++) {
        glp_set_col_kind(lp, n + 2 + (int)k, GLP_BV);
        pidx[pairs[k]] = n + 2 + (int)k;
    }
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
        if (k == 0 && s == 0 && mb + 1 < m) { /* symmetry: the first stage's F in order */
            ind[1] = i + 3 + 1, val[1] = 1, ind[2] = i + 1, val[2] = -1;
            row(lp, GLP_LO, md->d[i], 0, 2, ind, val);
        }
    }
    /* Disjunctions. */
    for (size_t k = 0; k < np; k++) {
        int i = (int)(pairs[k] / n), j = (int)(pairs[k] % n), y = n + 2 + (int)k;
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
                int lo = i < j ? i : j, hi = i < j ? j : i, y = pidx[(long)lo * n + hi];
                if (!y) { /* the first stage's F, in microbatch order */
                    if (i < j)
                        rhs -= a;
                    continue;
                }
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
    out->passes = 0;
    for (int i = 0; i < n; i++)
        out->passes += pass_used(md, i);
    out->binaries = (long)np;
    out->rows = glp_get_num_rows(lp);
    glp_iocp p;
    glp_init_iocp(&p);
    p.presolve = GLP_ON;
    p.msg_lev = GLP_MSG_OFF;
    p.tm_lim = time_limit * 1000 < 2e9 ? (int)(time_limit * 1000) : 2000000000;
    cb_data cb = {lower};
    p.cb_func = callback;
    p.cb_info = &cb;
    double t0 = now();
    int ret = glp_intopt(lp, &p);
    out->seconds = now() - t0;
    int st = glp_mip_status(lp);
    out->incumbent = st == GLP_OPT || st == GLP_FEAS ? glp_mip_obj_val(lp) : INFINITY;
    out->bound = fmax(lower, cb.bound);
    if (st == GLP_OPT && ret == 0) {
        out->status = SC_EXACT_OPTIMAL;
        out->optimum = out->bound = out->incumbent;
    } else if (st == GLP_NOFEAS || ret == GLP_ENOPFS) {
        out->status = SC_EXACT_INFEASIBLE;
    } else {
        out->status = SC_EXACT_LIMIT;
        snprintf(out->why, sizeof out->why, "GLPK stopped (code %d) at %.3g s", ret, out->seconds);
    }
    glp_delete_prob(lp);
    sc_free(pairs), sc_free(ind), sc_free(val), sc_free(pidx);
    return SC_OK;
}

sc_status sc_exact_solve(const sc_prog *pg, double time_limit, double upper, sc_exact *out)
{
    if (!pg || !out || !(time_limit > 0) || upper != upper)
        return SC_ERR_ARG;
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
    int *per = NULL;
    if (!no) {
        md.d = sc_calloc((size_t)md.n, sizeof *md.d);
        md.dev = sc_calloc((size_t)md.n, sizeof *md.dev);
        per = sc_calloc((size_t)P, sizeof *per);
        if (!md.d || !md.dev || !per) {
            sc_free(md.d), sc_free(md.dev), sc_free(per);
            return SC_ERR_NOMEM;
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
        sc_free(md.d), sc_free(md.dev), sc_free(per);
        return SC_OK;
    }
    sc_bound b;
    sc_status st = sc_bound_prog(pg, &b);
    double M = upper;
    if (!isfinite(M)) { /* every pass one after another, each transfer waited for */
        M = 0;
        for (int i = 0; i < md.n; i++)
            M += md.d[i] + (pass_used(&md, i) ? 2 * sc_prog_tcomm(pg) : 0);
    }
    M = M * (1 + 1e-9) + 1e-9;
    if (st == SC_OK && !isfinite(b.bound)) {
        out->status = SC_EXACT_INFEASIBLE;
        out->bound = INFINITY;
    } else if (st == SC_OK) {
        st = solve(&md, time_limit, fmin(b.bound, M), M, out);
    }
    sc_free(md.d), sc_free(md.dev), sc_free(per);
    return st;
}

#else /* no GLPK */

const char *sc_exact_solver(void) { return NULL; }

sc_status sc_exact_solve(const sc_prog *pg, double time_limit, double upper, sc_exact *out)
{
    if (!pg || !out || !(time_limit > 0) || upper != upper)
        return SC_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->incumbent = INFINITY;
    const char *no = unsupported(pg);
    out->status = no ? SC_EXACT_UNSUPPORTED : SC_EXACT_NO_SOLVER;
    snprintf(out->why, sizeof out->why, no ? "the exact model does not cover %s" : "%s", no ? no :
             "this stagecraft was built without GLPK (apt-get install libglpk-dev, then make)");
    return SC_OK;
}

#endif
