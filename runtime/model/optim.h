/*
 * optim.h — the optimizer of the built-in model (docs/steps.md#running-several-steps): AdamW with
 * decoupled weight decay, clipping by the global gradient norm, and a step
 * skipped when some gradient holds inf or NaN, as Megatron does.
 *
 * A step has three parts, so that a pipeline can put synchronization
 * between them (optim_sync, docs/steps.md):
 *
 *   sc_adamw_state   this device's share of the step's *state*: the sum of
 *                    squares of its gradients and the count of values that
 *                    are not finite (state[0], state[1]);
 *   sc_optim_decide  from a state summed over devices (all of them: the
 *                    global state; a prefix of them: a partial one) the
 *                    verdict: skip the step, or step with the clip
 *                    coefficient min(1, clip / (norm + 1e-6));
 *   sc_adamw_step    the update of every tensor with the verdict, keeping a
 *                    copy of the parameters and moments first when asked
 *                    (post-validation's eager step); sc_adamw_restore puts
 *                    the copy back exactly.
 *
 * The update of one element, with g the gradient times the clip
 * coefficient and t the number of steps taken (a skipped step is not one):
 *
 *   w  = w (1 - lr wd)
 *   m  = b1 m + (1 - b1) g,      v = b2 v + (1 - b2) g^2
 *   w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *
 * in float, with the scalars in double, element by element on the host
 * (parameters and gradients go through the backend's download and upload):
 * any backend and the single-device reference compute the same bits from
 * the same gradients.
 *
 * Why a kept copy and not the closed-form inverse: undoing AdamW in float
 * (w back from w', then m and v from their updates) rounds at every
 * operation, so a rolled-back step would not be the step that was never
 * taken, and a --check against the reference could not be exact. The copy
 * costs three floats per parameter of host memory, held only from an eager
 * step to its validation.
 *
 * Thread-safety: one sc_adamw per device, used by that device's thread.
 * Tested by: tests/unit/test_steps.c, tests/steps.sh.
 */
#ifndef SC_OPTIM_H
#define SC_OPTIM_H

#include <stddef.h>

#include "backend/backend.h"

typedef struct sc_optim_cfg {
    double lr, beta1, beta2, eps, weight_decay;
    double clip;     /* > 0: the global gradient norm is clipped to it; 0: no clipping */
    int inf_step;    /* fault injection: at this step (>= 0; -1: never) ... */
    int inf_device;  /* ... the gradients of this device (run/run.h resolves it) ... */
    int inf_tensor;  /* ... that is, the first value of this gradient tensor becomes +inf */
} sc_optim_cfg;

/* lr 1e-3, betas 0.9 and 0.999, eps 1e-8, weight decay 0.01, no clipping,
 * no injection. */
sc_optim_cfg sc_optim_defaults(void);
/* SC_ERR_ARG with one line when a value is out of range. */
sc_status sc_optim_check(const sc_optim_cfg *c, char *err, size_t errlen);

typedef struct sc_optim_verdict {
    int skip;        /* some gradient is not finite: no update */
    double norm;     /* sqrt(state[0]) */
    double coef;     /* the gradients' factor: 1, or clip / (norm + 1e-6) < 1 */
} sc_optim_verdict;

sc_optim_verdict sc_optim_decide(const sc_optim_cfg *c, const double state[2]);
/* Whether a verdict steps differently from an unclipped, unskipped one. */
int sc_optim_amends(const sc_optim_verdict *v);

typedef struct sc_adamw sc_adamw;

sc_adamw *sc_adamw_new(const sc_optim_cfg *c);
void sc_adamw_free(sc_adamw *a);
/* Adds a parameter tensor w (n floats, device memory of be) and its
 * gradient g; the tensors of a device in the model's order. A replica
 * (another copy of a tensor of the model, docs/guide.md#copies, whose
 * gradient is the same sum) is updated like the others and left out of
 * the state. */
sc_status sc_adamw_add(sc_adamw *a, sc_backend *be, float *w, float *g, size_t n, int replica);
/* The state of the gradients (sum of squares in double, tensor by tensor,
 * in the order added; count of non-finite values). */
sc_status sc_adamw_state(sc_adamw *a, double state[2]);
/* Updates every tensor (none when v->skip). keep: save the parameters,
 * moments and step count first, for sc_adamw_restore. */
sc_status sc_adamw_step(sc_adamw *a, const sc_optim_verdict *v, int keep);
/* Back to the copy of the last sc_adamw_step with keep (SC_ERR_ARG when
 * there is none); the copy is dropped. */
sc_status sc_adamw_restore(sc_adamw *a);
/* Drops the copy (the eager step was right). */
void sc_adamw_forget(sc_adamw *a);
/* Steps taken so far. */
long sc_adamw_steps(const sc_adamw *a);
/* Bytes of the moments m and v it allocated (NULL: 0). */
size_t sc_adamw_bytes(const sc_adamw *a);

#endif
