/*
 * bound_out.c — the lower bound on the makespan, the gap, and with
 * --optimal the exact optimum (docs/bound.md) as `sim` prints them: text
 * lines, or members of the --json object.
 */
#include "sim_out.h"

#include <math.h>
#include <stdio.h>

#include "bound/bound.h"
#include "bound/exact.h"

/* The bytes --max-mem leaves the solver: the limit less the Lua heap and
 * the programs' C memory held now (0: no limit). */
static size_t mem_left(const sc_limits *lim)
{
    size_t held = lim->used + lim->c_used;
    if (!lim->max_mem)
        return 0;
    return lim->max_mem > held ? lim->max_mem - held : 1;
}

static void print_exact(FILE *out, const sc_limits *lim, const sc_prog *pg, double makespan,
                        sc_eng_optimal *opt, sc_jw *w)
{
    sc_exact e;
    size_t mem = mem_left(lim);
    double limit = opt->limit;
    if (sc_exact_solve_lua(pg, limit, mem, makespan, &e, opt->want_lua ? &opt->lua : NULL) != SC_OK)
        return;
    const char *solver = sc_exact_solver();
    double gap = sc_bound_gap(e.incumbent, e.bound);
    if (w) {
        sc_jw_object(w, "optimal");
        sc_jw_str(w, "status", sc_exact_status_name(e.status));
        sc_jw_bool(w, "by_bound", e.by_bound);
        if (solver)
            sc_jw_str(w, "solver", solver);
        else
            sc_jw_null(w, "solver");
        sc_jw_num(w, "optimum", e.status == SC_EXACT_OPTIMAL ? e.optimum : NAN);
        sc_jw_num(w, "incumbent", e.incumbent);
        sc_jw_num(w, "bound", e.bound);
        sc_jw_num(w, "gap", isfinite(e.incumbent) && isfinite(e.bound) ? gap : NAN);
        sc_jw_bool(w, "searched", e.searched);
        sc_jw_num(w, "memory_bound", e.memory_bound);
        sc_jw_num(w, "time_limit", limit);
        sc_jw_num(w, "seconds", e.seconds);
        sc_jw_int(w, "binaries", e.binaries);
        if (e.why[0])
            sc_jw_str(w, "why", e.why);
        sc_jw_end(w);
        return;
    }
    switch (e.status) {
    case SC_EXACT_OPTIMAL:
        if (e.by_bound && !(sc_bound_gap(makespan, e.optimum) > 0))
            fprintf(out, "optimal       %.6g (proved: this schedule meets the lower bound)\n", e.optimum);
        else if (e.by_bound)
            fprintf(out, "optimal       %.6g (proved: a schedule of these passes meets the lower bound), the "
                   "makespan is %.2f %% above it\n", e.optimum, 100 * sc_bound_gap(makespan, e.optimum));
        else
            fprintf(out, "optimal       %.6g (proved by %s; %ld binaries), the makespan is %.2f %% "
                   "above it\n", e.optimum, solver, e.binaries,
                   100 * sc_bound_gap(makespan, e.optimum));
        break;
    case SC_EXACT_LIMIT:
        if (e.searched) {
            fprintf(out, "optimal       not proved: best schedule %.6g (the search's, after %.3g "
                    "s), bound %.6g, gap %.2f %% (the MILP stops at 64 passes a device)\n",
                    e.incumbent, e.seconds, e.bound, 100 * gap);
            break;
        }
        fprintf(out, "optimal       not proved: %s stopped at its %g s limit (after %.3g s): best "
               "schedule %.6g, best bound %.6g\n", solver, limit, e.seconds, e.incumbent, e.bound);
        break;
    case SC_EXACT_MEMORY:
        fprintf(out, "optimal       unknown: %s%s", e.why,
               mem ? " (what --max-mem leaves; --max-mem BYTES raises it)" : "");
        if (isfinite(e.incumbent))
            fprintf(out, ": best schedule %.6g, best bound %.6g", e.incumbent, e.bound);
        fputc('\n', out);
        break;
    case SC_EXACT_INFEASIBLE:
        fprintf(out, "optimal       none: no schedule meets the memory cap\n");
        break;
    case SC_EXACT_UNSUPPORTED: case SC_EXACT_NO_SOLVER: case SC_EXACT_FAILED:
        fprintf(out, "optimal       unknown: %s\n", e.why);
        break;
    }
}

void sc_eng_print_bound(FILE *out, const sc_limits *lim, const sc_prog *pg, double makespan,
                        sc_eng_optimal *opt, sc_jw *w)
{
    sc_bound b;
    if (sc_bound_prog(pg, &b) != SC_OK)
        return;
    double gap = sc_bound_gap(makespan, b.bound);
    if (w) {
        static const char *const keys[] = {
#define X(name, text) #name,
            SC_BOUND_TERMS(X)
#undef X
        };
        sc_jw_num(w, "lower_bound", b.bound);
        sc_jw_num(w, "bound_gap", gap);
        sc_jw_str(w, "bound_binding", sc_bound_term_name(b.binding));
        sc_jw_str(w, "bound_why", b.why);
        sc_jw_object(w, "bound_terms");
        for (int t = 0; t < SC_BOUND_TERM_COUNT; t++) {
            char key[16];
            int n = 0;
            for (const char *k = keys[t]; *k && n < 15; k++)
                key[n++] = (char)(*k >= 'A' && *k <= 'Z' ? *k - 'A' + 'a' : *k);
            key[n] = 0;
            sc_jw_num(w, key, b.term[t]);
        }
        sc_jw_end(w);
    } else {
        fprintf(out, "lower bound   %.6g%s, within %.2f %% (%s)\n", b.bound,
               sc_prog_seconds(pg) ? " s" : "", 100 * gap, b.why);
    }
    if (opt && opt->limit > 0)
        print_exact(out, lim, pg, makespan, opt, w);
}
