/*
 * ir_scale.h — how much of a stage's cost and record one microbatch is,
 * for the program's internals (ir_impl.h includes it): with lengths
 * (lengths.h) a microbatch's tokens against the reference length, with
 * slices (slices.h) a slice's share; 1 without either.
 * Tested by: tests/unit/test_lengths.c, tests/unit/test_slices.c.
 */
#ifndef SC_IR_SCALE_H
#define SC_IR_SCALE_H

/* Lengths (lengths.h) and slices (slices.h): whether records differ
 * (sc_scaled), the linear scale r of microbatch mb (a stream's number),
 * and the scale of kind k (SC_LK_*) of stage s; 1 without. */
static inline int sc_scaled(const sc_prog *pg) { return pg->len || pg->slices > 1; }
static inline double sc_len_r(const sc_prog *pg, int mb)
{
    if (!sc_scaled(pg) || mb < 0)
        return 1;
    if (pg->slices > 1) /* a slice: its share of the tokens (slices.h) */
        return sc_prog_slice_tokens(pg, mb);
    return pg->len[mb % pg->m] / (pg->len_lin ? pg->len_ref : pg->len_mean);
}
static inline double sc_len_k(const sc_prog *pg, int k, int s, int mb)
{
    if (pg->slices > 1 && mb >= 0) /* slice mb % K (slices.h) */
        return sc_prog_slice_scale(pg, k, s, mb);
    double r = sc_len_r(pg, mb);
    if (!pg->len_lin || s < 0 || s >= pg->S || !pg->len)
        return r;
    size_t i = (size_t)k * (size_t)pg->S + (size_t)s;
    double a = pg->len_lin[i], f = pg->len_fix ? pg->len_fix[i] : 0; /* f + a <= 1 */
    return f + a * r + (1 - a - f) * r * r;
}

#endif
