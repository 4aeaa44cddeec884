/*
 * run_report.c — the prediction beside the measurement, and the cost file
 * of `run --profile` (run_report.h).
 */
#include "run_report.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/atomic.h"

/* Times: 9 significant digits, null when unknown. */
static void num(sc_jw *w, const char *key, double v) { sc_jw_num_g(w, key, v, 9); }

static void array(sc_jw *w, const char *key, const double *v, int n)
{
    sc_jw_nums_g(w, key, v, n, 9);
}

static void contrib_json(sc_jw *w, const char *key, const sc_contrib *x)
{
    char text[256];
    sc_contrib_describe(x, text, sizeof text);
    sc_jw_object(w, key);
    sc_jw_str(w, "what", x->what);
    sc_jw_int(w, "device", x->device);
    num(w, "measured_s", x->measured);
    num(w, "predicted_s", x->predicted);
    num(w, "delta_s", x->measured - x->predicted);
    sc_jw_str(w, "text", text);
    sc_jw_end(w);
}

void sc_report_json(sc_jw *w, const sc_comparison *c, const sc_profile *pf, const char *file)
{
    num(w, "predicted_step_time_s", c->predicted);
    num(w, "prediction_error", c->error);
    array(w, "measured_end_s", c->m_end, c->P);
    array(w, "predicted_end_s", c->p_end, c->P);
    array(w, "prediction_error_per_device", c->dev_error, c->P);
    sc_jw_int(w, "critical_device", c->critical);
    if (c->n)
        contrib_json(w, "largest_contributor", &c->items[0]);
    else
        sc_jw_null(w, "largest_contributor");
    sc_jw_array(w, "contributors");
    for (int i = 0; i < c->n; i++)
        contrib_json(w, NULL, &c->items[i]);
    sc_jw_end(w);
    sc_jw_array(w, "passes");
    for (int i = 0; i < c->npasses; i++) {
        const sc_pass_total *x = &c->passes[i];
        sc_jw_object(w, NULL);
        sc_jw_str(w, "kind", sc_op_name(x->op));
        sc_jw_int(w, "stage", x->stage);
        sc_jw_int(w, "device", x->device);
        sc_jw_int(w, "count", x->count);
        num(w, "measured_s", x->measured);
        num(w, "predicted_s", x->predicted);
        sc_jw_end(w);
    }
    sc_jw_end(w);
    if (!pf)
        return;
    sc_jw_object(w, "profile");
    sc_jw_str(w, "file", file);
    sc_jw_int(w, "warmup_steps", pf->warmup);
    sc_jw_int(w, "steps", pf->steps);
    array(w, "step_times_s", pf->step_times, pf->steps);
    num(w, "step_time_median_s", pf->costs.step.median);
    num(w, "step_time_spread_s", pf->costs.step.spread);
    sc_jw_str(w, "variant", pf->calibrated == 1   ? "split"
                            : pf->calibrated == 2 ? "fused"
                                                  : "none");
    sc_jw_str(w, "clock", pf->clock_cpu ? "cpu" : "wall");
    sc_jw_int(w, "rounds", pf->rounds);
    num(w, "target", pf->target);
    if (pf->capped)
        sc_jw_str(w, "stopped_by", pf->capped == 1 ? "max_steps" : "max_time");
    else
        sc_jw_null(w, "stopped_by");
    sc_jw_array(w, "unstable");
    for (int i = 0; i < pf->nunstable; i++) {
        const sc_unstable *u = &pf->unstable[i];
        sc_jw_object(w, NULL);
        sc_jw_str(w, "figure", u->what);
        num(w, "median_s", u->median);
        num(w, "half_width_s", u->half);
        sc_jw_int(w, "samples", u->n);
        sc_jw_end(w);
    }
    sc_jw_end(w);
    sc_jw_end(w);
}

void sc_report_text(const sc_comparison *c, const sc_profile *pf, const char *file)
{
    if (pf) {
        printf("profile       %s: %d timed steps after %d warm-up%s, median %.6f s, spread "
               "(IQR) %.6f s\n", file, pf->steps, pf->warmup, pf->warmup == 1 ? "" : "s",
               pf->costs.step.median, pf->costs.step.spread);
        if (pf->target > 0)
            printf("              (%d round%s; %s: its median known within ±%g%% or too small "
                   "to move the step%s)\n", pf->rounds, pf->rounds == 1 ? "" : "s",
                   pf->nunstable ? "not every figure stable" : "every figure stable",
                   100 * pf->target, pf->clock_cpu ? "; passes on their threads' CPU clocks" : "");
        if (pf->calibrated)
            printf("              (and %d steps of the same order with B and W %s, for the "
                   "kinds it lacks)\n", pf->steps, pf->calibrated == 1 ? "split" : "fused");
        const sc_costs *pc = &pf->costs;
        if (pc->per_token && pc->tok_lengths > 0) /* formats/costs_tok.h */
            printf("              (per-token costs fitted to %d lengths by least squares: rms "
                   "residual F %.3g, B %.3g, W %.3g s)\n", pc->tok_lengths, pc->tok_rms[0],
                   pc->tok_rms[1], pc->tok_rms[2]);
    }
    printf("predicted     %.6f s (%+.2f%% measured against predicted)\n", c->predicted,
           100 * c->error);
    for (int d = 0; d < c->P; d++)
        printf("  d%-4d ends  %.6f s measured, %.6f s predicted (%+.2f%%)\n", d, c->m_end[d],
               c->p_end[d], 100 * c->dev_error[d]);
    if (c->n) {
        char text[256];
        sc_contrib_describe(&c->items[0], text, sizeof text);
        printf("largest       %s\n", text);
    }
}

int sc_report_write_costs(const char *path, const sc_profile *pf)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return sc_cli_fail(SC_EXIT_NOMEM, "out of memory writing the cost file");
    sc_status st = sc_costs_write(f, &pf->costs);
    if (fclose(f) != 0 || st != SC_OK) {
        free(buf);
        return sc_cli_fail(SC_EXIT_NOMEM, "out of memory writing the cost file");
    }
    char err[512];
    int rc = sc_write_atomic(path, buf, len, err, sizeof err);
    free(buf);
    return rc ? sc_cli_fail(SC_EXIT_USAGE, err) : 0;
}
