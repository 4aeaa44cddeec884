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

void sc_cli_run_steps_json(sc_jw *w, const sc_prog *pg, const sc_run_opts *o,
                           const sc_run_result *r)
{
    if (r->forward_only) /* docs/run.md#check: the loss alone, no optimizer */
        sc_jw_bool(w, "forward_only", 1);
    if (!shown(pg))
        return;
    int N = r->steps;
    const sc_optim_cfg *c = &o->model.opt;
    sc_jw_int(w, "steps", N);
    sc_jw_str(w, "optim_sync", sc_sync_name(sc_prog_optim_sync(pg)));
    sc_jw_object(w, "optimizer");
    sc_jw_num_g(w, "lr", c->lr, 17);
    sc_jw_num_g(w, "beta1", c->beta1, 17);
    sc_jw_num_g(w, "beta2", c->beta2, 17);
    sc_jw_num_g(w, "eps", c->eps, 17);
    sc_jw_num_g(w, "weight_decay", c->weight_decay, 17);
    sc_jw_num_g(w, "clip", c->clip, 17);
    sc_jw_int(w, "inf_step", c->inf_step);
    sc_jw_int(w, "inf_device", c->inf_device);
    sc_jw_end(w);
    sc_jw_nums_g(w, "step_loss", r->step_loss, N, 17);
    if (o->check)
        sc_jw_nums_g(w, "reference_step_loss", r->reference_step_loss, N, 17);
    sc_jw_array(w, "step_grad_norm");
    for (int k = 0; k < N; k++) /* none: no device knows the global norm */
        if (sc_prog_optim_sync(pg) != SC_SYNC_NONE)
            sc_jw_num_g(w, NULL, r->step_info[k].norm, 17);
        else
            sc_jw_null(w, NULL);
    sc_jw_end(w);
    sc_jw_array(w, "step_clip_coef");
    for (int k = 0; k < N; k++)
        sc_jw_num_g(w, NULL, r->step_info[k].coef, 17);
    sc_jw_end(w);
    sc_jw_array(w, "step_skipped");
    for (int k = 0; k < N; k++)
        sc_jw_bool(w, NULL, r->step_info[k].skipped);
    sc_jw_end(w);
    sc_jw_ints(w, "step_rollbacks", r->rollbacks, N);
    if (o->check)
        sc_jw_num_g(w, "max_param_rel_err", r->max_param_rel_err, 17);
    if (r->measured->step_makespan)
        sc_jw_nums_g(w, "step_times_s", r->measured->step_makespan, N, 17);
    if (r->predicted->step_makespan)
        sc_jw_nums_g(w, "simulated_step_makespan", r->predicted->step_makespan, N, 17);
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
        if (r->forward_only) /* no optimizer, no parameters moved (docs/run.md#check) */
            continue;
        if (a->skipped != b->skipped || (a->coef < 1) != (b->coef < 1) ||
            !(fabs(a->coef - b->coef) <= tol * fmax(fabs(b->coef), 1e-30))) {
            snprintf(msg, len, "check failed: step %d: the optimizer %s, the reference %s", k,
                     a->skipped ? "skipped" : a->coef < 1 ? "clipped" : "stepped",
                     b->skipped ? "skipped" : b->coef < 1 ? "clipped" : "stepped");
            return 1;
        }
    }
    if (!r->forward_only && !(r->max_param_rel_err <= tol)) {
        snprintf(msg, len, "check failed: the parameters after step %d differ from the "
                 "reference's by %.3g relative (tolerance %g)", r->steps - 1,
                 r->max_param_rel_err, tol);
        return 1;
    }
    return 0;
}

int sc_cli_run_forward_text(const sc_run_result *r)
{
    if (!r->forward_only)
        return 0;
    printf("reference     %.9g (forward only: no gradients)\n", r->reference_loss);
    return 1;
}
