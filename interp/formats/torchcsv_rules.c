/*
 * torchcsv_rules.c — PyTorch's rules on a compute_comms file that its
 * runtime enforces or depends on (torchcsv_impl.h): the waits of 2.15, and
 * one gradient reduction per stage after its backward passes.
 */
#include "torchcsv_impl.h"

#include <stdarg.h>
#include <stdio.h>

/* The action types' names (torchcsv_impl.h). */
const char *const sc_tcsv_type_names[] = {
#define X(name, text) text,
    TORCH_TYPES(X)
#undef X
};
_Static_assert(sizeof(sc_tcsv_type_names) / sizeof(sc_tcsv_type_names[0]) == T_COUNT, "type table");

/* The reader's one error (torchcsv_impl.h); here, so that the rules and
 * the reader both call into this file and not into each other. */
sc_status sc_tcsv_fail(reader *r, sc_status st, const char *fmt, ...)
{
    char raw[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* Cells are quoted as they are: bytes that are not printable ASCII (a
     * terminal escape, a control byte) are written \xNN instead. */
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p && n + 5 < r->errlen; p++)
        n += (size_t)(*p >= 0x20 && *p < 0x7f
                          ? (r->err[n] = (char)*p, 1)
                          : snprintf(r->err + n, r->errlen - n, "\\x%02x", *p));
    if (r->errlen)
        r->err[n < r->errlen ? n : r->errlen - 1] = 0;
    r->st = st;
    return st;
}

/* PyTorch's runtime scales a stage's gradients by 1/m at its REDUCE_GRAD
 * (schedules.py, stage.perform_reduce_grad): a compute_comms file needs one
 * per stage, on its rank, after every backward pass of the stage. Without
 * it the stage trains to m times its gradients; before a backward, what
 * that pass adds stays unscaled; twice, they are scaled twice. at[] has S
 * zeros. */
sc_status sc_tcsv_check_reduces(reader *r, const act *v, size_t n, int S, const int *dev,
                                size_t *at)
{
    for (size_t k = 0; k < n; k++) {
        const act *a = &v[k];
        if (a->type != T_REDUCE_GRAD)
            continue;
        if (at[a->stage])
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": REDUCE_GRAD twice: stage %d is also "
                         "reduced at cell %d (PyTorch would scale its gradients twice)", AT(a),
                         a->stage, v[at[a->stage] - 1].cell);
        at[a->stage] = k + 1;
    }
    for (int s = 0; s < S; s++)
        if (!at[s])
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, "row %d (rank %d): stage %d has no REDUCE_GRAD: "
                         "PyTorch scales a stage's gradients by 1/m there, and without it the "
                         "stage trains to m times its gradients", dev[s] + 1, dev[s], s);
    for (size_t k = n; k-- > 0;) {
        const act *a = &v[k];
        if (is_compute(a->type) && a->type != T_F && at[a->stage] < k + 1)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": backward after the REDUCE_GRAD of stage "
                         "%d (cell %d): PyTorch scales the gradients there, and what this pass "
                         "adds stays m times too large", AT(a), a->stage,
                         v[at[a->stage] - 1].cell);
    }
    return SC_OK;
}

/* PyTorch 2.15's rules for its waits, row by row, in a file that has any:
 * every SEND_* has one WAIT_SEND_* after it on its rank (and a wait has its
 * SEND before it); every REDUCE_GRAD has its WAIT_REDUCE_GRAD before the
 * rank's next REDUCE_GRAD or the end. sent[] has 2·S·m zeros. */
sc_status sc_tcsv_check_waits(reader *r, const act *v, size_t n, int S, int m, unsigned char *sent)
{
    int sends = 0, reduces = 0;
    for (size_t k = 0; k < n; k++) {
        sends |= v[k].type == T_WAIT_SEND_F || v[k].type == T_WAIT_SEND_B;
        reduces |= v[k].type == T_WAIT_REDUCE_GRAD;
    }
    const act *open = NULL; /* the pending REDUCE_GRAD of the row */
    for (size_t k = 0; k <= n; k++) {
        const act *a = k < n ? &v[k] : NULL;
        if (open && (!a || a->row != open->row || a->type == T_REDUCE_GRAD))
            return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": REDUCE_GRAD without its WAIT_REDUCE_GRAD before "
                         "the next reduction or the end of the row (PyTorch 2.15)", AT(open));
        if (!a)
            break;
        int t = a->type, dir = t == T_SEND_B || t == T_WAIT_SEND_B;
        if (t == T_REDUCE_GRAD && reduces)
            open = a;
        if (t == T_WAIT_REDUCE_GRAD) {
            if (!open || open->stage != a->stage)
                return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": WAIT_REDUCE_GRAD without a pending "
                             "REDUCE_GRAD of stage %d before it", AT(a), a->stage);
            open = NULL;
        }
        if (!sends || (t != T_SEND_F && t != T_SEND_B && t != T_WAIT_SEND_F && t != T_WAIT_SEND_B))
            continue;
        if (a->stage >= S || a->mb >= m)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": stage or microbatch beyond the compute "
                         "actions' (stages 0..%d, microbatches 0..%d)", AT(a), S - 1, m - 1);
        unsigned char *st = &sent[((size_t)dir * (size_t)S + (size_t)a->stage) * (size_t)m +
                                  (size_t)a->mb];
        if (t == T_SEND_F || t == T_SEND_B) {
            *st = 1;
        } else if (*st != 1) {
            return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": %s without a pending %s of stage %d, "
                         "microbatch %d before it on this rank", AT(a), sc_tcsv_type_names[t],
                         dir ? "SEND_B" : "SEND_F", a->stage, a->mb);
        } else {
            *st = 2;
        }
    }
    for (size_t k = 0; sends && k < n; k++) {
        const act *a = &v[k];
        int dir = a->type == T_SEND_B;
        if ((a->type == T_SEND_F || dir) &&
            sent[((size_t)dir * (size_t)S + (size_t)a->stage) * (size_t)m + (size_t)a->mb] != 2)
            return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": %s without its WAIT_%s after it (a file with "
                         "waits needs one per send, PyTorch 2.15)", AT(a), sc_tcsv_type_names[a->type],
                         sc_tcsv_type_names[a->type]);
    }
    return SC_OK;
}

int sc_tcsv_forward_only(reader *r, const act *v, size_t n, sc_status *st)
{
    *st = SC_OK;
    for (size_t k = 0; k < n; k++)
        if (is_compute(v[k].type) && v[k].type != T_F)
            return 0;
    for (size_t k = 0; k < n; k++) {
        int t = v[k].type;
        if (t == T_F || t == T_SEND_F || t == T_RECV_F || t == T_WAIT_SEND_F)
            continue;
        *st = sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": %s in a forward-only file (no backward "
                           "pass anywhere: it has no gradients to send or reduce)",
                           AT(&v[k]), sc_tcsv_type_names[t]);
        return 0;
    }
    return 1;
}
