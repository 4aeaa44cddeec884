/*
 * run_steps.c — what `run` prints about training steps (docs/steps.md): a
 * progress line per step while it runs, a table of the steps (loss, the
 * optimizer's verdict, rollbacks, measured and simulated time), the same
 * as JSON fields, and the per-step part of --check.
 */
#include "cmd_run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exec/exec.h"

/* Shown for several steps, or for one step with a synchronization. */
static int shown(const sc_prog *pg)
{
    return sc_prog_steps(pg) > 1 || sc_prog_optim_sync(pg) != SC_SYNC_NONE;
}

void sc_cli_run_progress(void *arg, int step, int steps, double loss)
{
    const double *start = arg;
    fprintf(stderr, "step %d/%d: loss %.9g (%.3f s)\n", step + 1, steps, loss,
            sc_exec_now() - *start);
    fflush(stderr);
}

/* "stepped", "clipped 0.5", "skipped (inf/NaN)", with the eager step and
 * the rollback of post-validation. */
static void action(char *buf, size_t len, const sc_step_info *i, int rollbacks, int postval)
{
    int n = i->skipped ? snprintf(buf, len, "skipped (inf/NaN)")
            : i->coef < 1 ? snprintf(buf, len, "clipped %.4g", i->coef)
                          : snprintf(buf, len, "stepped");
    if (postval && n > 0 && (size_t)n < len && rollbacks)
        snprintf(buf + n, len - (size_t)n, ", %d rolled back", rollbacks);
    else if (postval && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%s", i->eager ? ", eager" : ", at validation");
}

void sc_cli_run_steps_text(const sc_prog *pg, const sc_run_opts *o, const sc_run_result *r)
{
    if (!shown(pg))
        return;
    const sc_optim_cfg *c = &o->model.opt;
    int postval = sc_prog_optim_sync(pg) == SC_SYNC_POSTVAL;
    printf("steps         %d (optim_sync %s)\n", r->steps, sc_sync_name(sc_prog_optim_sync(pg)));
    printf("optimizer     AdamW lr %g, betas %g %g, eps %g, weight decay %g, clip %s", c->lr,
           c->beta1, c->beta2, c->eps, c->weight_decay, c->clip > 0 ? "" : "none");
    if (c->clip > 0)
        printf("%g", c->clip);
    if (c->inf_step >= 0)
        printf(", inf into d%d's gradients at step %d", c->inf_device, c->inf_step);
    printf("\nstep   loss          grad norm    update                            time (s)    "
           "simulated\n");
    const sc_sim *ms = r->measured, *ps = r->predicted;
    for (int k = 0; k < r->steps; k++) {
        char what[96];
        action(what, sizeof what, &r->step_info[k], r->rollbacks[k], postval);
        char norm[32] = "-"; /* under none, no device knows the global norm */
        if (sc_prog_optim_sync(pg) != SC_SYNC_NONE)
            snprintf(norm, sizeof norm, "%.6g", r->step_info[k].norm);
        printf("%-6d %-13.9g %-12s %-33s %-11.6f %.6g\n", k, r->step_loss[k], norm, what,
               ms->step_makespan ? ms->step_makespan[k] : NAN,
               ps->step_makespan ? ps->step_makespan[k] : NAN);
    }
}

static void json_list(const char *key, const double *v, int n)
{
    printf(", \"%s\": [", key);
    for (int i = 0; i < n; i++) {
        if (isfinite(v[i]))
            printf("%s%.17g", i ? ", " : "", v[i]);
        else
            printf("%snull", i ? ", " : "");
    }
    printf("]");
}

void sc_cli_run_steps_json(const sc_prog *pg, const sc_run_opts *o, const sc_run_result *r)
{
    if (!shown(pg))
        return;
    int N = r->steps;
    const sc_optim_cfg *c = &o->model.opt;
    printf(", \"steps\": %d, \"optim_sync\": \"%s\"", N, sc_sync_name(sc_prog_optim_sync(pg)));
    printf(", \"optimizer\": {\"lr\": %.17g, \"beta1\": %.17g, \"beta2\": %.17g, \"eps\": %.17g, "
           "\"weight_decay\": %.17g, \"clip\": %.17g, \"inf_step\": %d, \"inf_device\": %d}",
           c->lr, c->beta1, c->beta2, c->eps, c->weight_decay, c->clip, c->inf_step,
           c->inf_device);
    json_list("step_loss", r->step_loss, N);
    if (o->check)
        json_list("reference_step_loss", r->reference_step_loss, N);
    printf(", \"step_grad_norm\": [");
    for (int k = 0; k < N; k++) /* none: no device knows the global norm */
        if (sc_prog_optim_sync(pg) != SC_SYNC_NONE && isfinite(r->step_info[k].norm))
            printf("%s%.17g", k ? ", " : "", r->step_info[k].norm);
        else
            printf("%snull", k ? ", " : "");
    printf("], \"step_clip_coef\": [");
    for (int k = 0; k < N; k++)
        printf("%s%.17g", k ? ", " : "", r->step_info[k].coef);
    printf("], \"step_skipped\": [");
    for (int k = 0; k < N; k++)
        printf("%s%s", k ? ", " : "", r->step_info[k].skipped ? "true" : "false");
    printf("], \"step_rollbacks\": [");
    for (int k = 0; k < N; k++)
        printf("%s%d", k ? ", " : "", r->rollbacks[k]);
    printf("]");
    if (o->check) {
        printf(", \"max_param_rel_err\": ");
        if (isfinite(r->max_param_rel_err))
            printf("%.17g", r->max_param_rel_err);
        else
            printf("null");
    }
    if (r->measured->step_makespan)
        json_list("step_times_s", r->measured->step_makespan, N);
    if (r->predicted->step_makespan)
        json_list("simulated_step_makespan", r->predicted->step_makespan, N);
}

int sc_cli_run_steps_verdict(const sc_run_result *r, char *msg, size_t len)
{
    double tol = r->tolerance;
    for (int k = 0; k < r->steps; k++) {
        const sc_step_info *a = &r->step_info[k], *b = &r->reference_step_info[k];
        double lrel = fabs(r->step_loss[k] - r->reference_step_loss[k]) /
                      fmax(fabs(r->reference_step_loss[k]), 1e-30);
        if (!(lrel <= tol)) {
            snprintf(msg, len, "check failed: step %d: loss %.9g vs reference %.9g (tolerance "
                     "%g)", k, r->step_loss[k], r->reference_step_loss[k], tol);
            return 1;
        }
        if (a->skipped != b->skipped || (a->coef < 1) != (b->coef < 1) ||
            !(fabs(a->coef - b->coef) <= tol * fmax(fabs(b->coef), 1e-30))) {
            snprintf(msg, len, "check failed: step %d: the optimizer %s, the reference %s", k,
                     a->skipped ? "skipped" : a->coef < 1 ? "clipped" : "stepped",
                     b->skipped ? "skipped" : b->coef < 1 ? "clipped" : "stepped");
            return 1;
        }
    }
    if (!(r->max_param_rel_err <= tol)) {
        snprintf(msg, len, "check failed: the parameters after step %d differ from the "
                 "reference's by %.3g relative (tolerance %g)", r->steps - 1,
                 r->max_param_rel_err, tol);
        return 1;
    }
    return 0;
}
