/*
 * cli_steps.c — the per-step figures of `sim` (docs/steps.md): nothing for a
 * program of one step without synchronization, so that one step's output
 * stays as it was.
 */
#include "sim_out.h"

#include <stdio.h>

void sc_eng_print_steps(FILE *out, const sc_prog *pg, const sc_sim *sim, sc_jw *w)
{
    int N = sc_prog_steps(pg), sync = sc_prog_optim_sync(pg);
    if ((N == 1 && sync == SC_SYNC_NONE) || !sim->step_end)
        return;
    if (w) {
        sc_jw_int(w, "steps", N);
        sc_jw_str(w, "optim_sync", sc_sync_name(sync));
        sc_jw_nums(w, "step_makespan", sim->step_makespan, N);
        sc_jw_nums(w, "step_bubble_rate", sim->step_bubble, N);
        if (sim->rollback_cost)
            sc_jw_nums(w, "rollback_cost", sim->rollback_cost, N < 64 ? N : 64);
        return;
    }
    fprintf(out, "steps         %d (optim_sync %s)\n", N, sc_sync_name(sync));
    fprintf(out, "step     makespan    ends at     bubble%s\n",
           sim->rollback_cost ? "      rollback adds" : "");
    for (int k = 0; k < N; k++) {
        fprintf(out, "%-8d %-11.6g %-11.6g %.4f%%", k, sim->step_makespan[k], sim->step_end[k],
               100 * sim->step_bubble[k]);
        if (sim->rollback_cost && k < 64)
            fprintf(out, "%*s%.6g", 4, "", sim->rollback_cost[k]);
        fprintf(out, "\n");
    }
}
