/*
 * run_steps.c — what a run reports per step (run_impl.h): losses, the
 * optimizer's verdicts, rollbacks, and the comparison with the reference,
 * from this process's devices; under MPI, combined over the ranks.
 */
#include "run_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "transport/sc_mpi.h"

void sc_run_collect(const sc_model *md, const sc_model *ref, sc_run_result *r)
{
    int N = r->steps;
    for (int k = 0; k < N; k++) {
        r->step_loss[k] = sc_model_step_loss(md, k);
        if (!sc_model_step_info(md, k, &r->step_info[k]))
            r->step_info[k] = (sc_step_info){.norm = NAN, .coef = NAN, .skipped = -1};
        r->rollbacks[k] = sc_model_rollbacks(md, k);
        if (ref) {
            r->reference_step_loss[k] = sc_model_step_loss(ref, k);
            sc_model_step_info(ref, k, &r->reference_step_info[k]);
        }
    }
    r->loss = r->step_loss[N - 1];
    if (ref && r->forward_only) { /* no gradients, no step: the loss alone (docs/run.md#check) */
        r->max_grad_rel_err = r->max_param_rel_err = NAN;
        r->bitwise = 1;
    } else if (ref) {
        int bg = 1, bp = 1;
        r->max_grad_rel_err = sc_model_compare(md, ref, &bg);
        r->max_param_rel_err = sc_model_compare_params(md, ref, &bp);
        r->bitwise = bg && bp;
    }
}

/* One value per slot, NaN or -inf where this rank knows nothing: the
 * element-wise maximum over the ranks is what some rank knows. */
static double known(double x)
{
    return isnan(x) ? -INFINITY : x;
}

sc_status sc_run_combine(sc_run_result *r, int dev, int share, int shares, int holds_first,
                         int check, double timeout_s, char *err, size_t errlen)
{
    int N = r->steps, P = r->P;
    size_t L = (size_t)shares * (size_t)N; /* each share's losses, then what follows */
    size_t n = L + (size_t)(5 + P) * (size_t)N + 3;
    double *v = malloc(n * sizeof(double)), *w = v + L, *ck = v + n - 3;
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return SC_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = -INFINITY;
    for (int k = 0; k < N; k++) {
        const sc_step_info *i = &r->step_info[k];
        v[(size_t)share * (size_t)N + (size_t)k] = known(r->step_loss[k]);
        if (holds_first) { /* the verdicts as the lowest device saw them */
            w[k] = i->norm;
            w[N + k] = i->coef;
            w[2 * N + k] = i->skipped;
            w[3 * N + k] = i->eager;
            w[4 * N + k] = i->rolled_back;
        }
        if (share == 0) /* this rank's device (its first share's) */
            w[(size_t)(5 + dev) * (size_t)N + (size_t)k] = r->rollbacks[k];
    }
    if (check) {
        ck[0] = r->max_grad_rel_err;
        ck[1] = r->max_param_rel_err;
        ck[2] = !r->bitwise;
    }
    sc_status st = sc_mpi_max(v, (int)n, "the allreduce of the results", timeout_s, err, errlen);
    if (st == SC_OK) {
        for (int k = 0; k < N; k++) {
            r->step_loss[k] = v[k]; /* the shares' sum in share order, as on threads */
            for (int e = 1; e < shares; e++)
                r->step_loss[k] += v[(size_t)e * (size_t)N + (size_t)k];
            r->step_info[k] = (sc_step_info){.norm = w[k], .coef = w[N + k],
                                             .skipped = (int)w[2 * N + k],
                                             .eager = (int)w[3 * N + k],
                                             .rolled_back = (int)w[4 * N + k]};
            r->rollbacks[k] = 0;
            for (int d = 0; d < P; d++)
                r->rollbacks[k] += (int)w[(size_t)(5 + d) * (size_t)N + (size_t)k];
        }
        r->loss = r->step_loss[N - 1];
        if (check) {
            r->max_grad_rel_err = ck[0];
            r->max_param_rel_err = ck[1];
            r->bitwise = ck[2] == 0;
        }
    }
    free(v);
    return st;
}
