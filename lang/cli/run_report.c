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
#include "formats/json.h"

static void num(double v)
{
    if (isfinite(v))
        printf("%.9g", v);
    else
        printf("null");
}

static void array(const char *key, const double *v, int n)
{
    printf(", \"%s\": [", key);
    for (int i = 0; i < n; i++) {
        printf("%s", i ? ", " : "");
        num(v[i]);
    }
    printf("]");
}

static void contrib_json(const sc_contrib *x)
{
    char text[256];
    sc_contrib_describe(x, text, sizeof text);
    printf("{\"what\": ");
    sc_json_string(stdout, x->what);
    printf(", \"device\": %d, \"measured_s\": ", x->device);
    num(x->measured);
    printf(", \"predicted_s\": ");
    num(x->predicted);
    printf(", \"delta_s\": ");
    num(x->measured - x->predicted);
    printf(", \"text\": ");
    sc_json_string(stdout, text);
    printf("}");
}

void sc_report_json(const sc_comparison *c, const sc_profile *pf, const char *file)
{
    printf(", \"predicted_step_time_s\": ");
    num(c->predicted);
    printf(", \"prediction_error\": ");
    num(c->error);
    array("measured_end_s", c->m_end, c->P);
    array("predicted_end_s", c->p_end, c->P);
    array("prediction_error_per_device", c->dev_error, c->P);
    printf(", \"critical_device\": %d, \"largest_contributor\": ", c->critical);
    if (c->n)
        contrib_json(&c->items[0]);
    else
        printf("null");
    printf(", \"contributors\": [");
    for (int i = 0; i < c->n; i++) {
        printf("%s", i ? ", " : "");
        contrib_json(&c->items[i]);
    }
    printf("], \"passes\": [");
    for (int i = 0; i < c->npasses; i++) {
        const sc_pass_total *x = &c->passes[i];
        printf("%s{\"kind\": \"%s\", \"stage\": %d, \"device\": %d, \"count\": %d, "
               "\"measured_s\": ", i ? ", " : "", sc_op_name(x->op), x->stage, x->device,
               x->count);
        num(x->measured);
        printf(", \"predicted_s\": ");
        num(x->predicted);
        printf("}");
    }
    printf("]");
    if (!pf)
        return;
    printf(", \"profile\": {\"file\": ");
    sc_json_string(stdout, file);
    printf(", \"warmup_steps\": %d, \"steps\": %d", pf->warmup, pf->steps);
    array("step_times_s", pf->step_times, pf->steps);
    printf(", \"step_time_median_s\": ");
    num(pf->costs.step.median);
    printf(", \"step_time_spread_s\": ");
    num(pf->costs.step.spread);
    printf(", \"variant\": \"%s\"}", pf->calibrated == 1 ? "split" : pf->calibrated == 2 ? "fused"
                                                                                : "none");
}

void sc_report_text(const sc_comparison *c, const sc_profile *pf, const char *file)
{
    if (pf) {
        printf("profile       %s: %d timed steps after %d warm-up%s, median %.6f s, spread "
               "(IQR) %.6f s\n", file, pf->steps, pf->warmup, pf->warmup == 1 ? "" : "s",
               pf->costs.step.median, pf->costs.step.spread);
        if (pf->calibrated)
            printf("              (and %d steps of the same order with B and W %s, for the "
                   "kinds it lacks)\n", pf->steps, pf->calibrated == 1 ? "split" : "fused");
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
        return sc_cli_fail(4, "out of memory writing the cost file");
    sc_status st = sc_costs_write(f, &pf->costs);
    if (fclose(f) != 0 || st != SC_OK) {
        free(buf);
        return sc_cli_fail(4, "out of memory writing the cost file");
    }
    char err[512];
    int rc = sc_write_atomic(path, buf, len, err, sizeof err);
    free(buf);
    return rc ? sc_cli_fail(2, err) : 0;
}
