/*
 * costs_tok.h — per-token costs of a cost file
 * (docs/costs.md#per-token-costs): stage s's F, B and W at L tokens take
 *     fixed + a L + b L^2
 * seconds, a the per-token part, b the per-token² part (attention's scores),
 * the fixed part what the stage's time at the file's `tokens` leaves:
 *
 *   "tokens": 1024, "tf_per_token": [...], "tf_per_token2": [...],
 *   "tb_per_token": [...], ..., "tw_per_token2": [...]
 *
 * Read and written with the rest of the file (costs.h), put on a program
 * by sc_prog_set_len_tokens (ir/lengths.h), and fitted to times measured at
 * several lengths by sc_costs_fit_tok (least squares, coefficients >= 0).
 *
 *     double L[3] = {8, 16, 32}, t[3] = {1.2, 2.0, 4.4}, k[3], rms;
 *     sc_costs_fit_tok(L, t, 3, 1, k, &rms);  // k = fixed, a, b
 *
 * Tested by: tests/unit/test_costtok.c, tests/lengths.sh.
 */
#ifndef SC_COSTS_TOK_H
#define SC_COSTS_TOK_H

#include "costs.h"
#include "jsonw.h"

/* The keys, kind k (F, B, W) then its power j (1 per token, 2 per token²):
 * sc_cost_tok_keys[k][j - 1]. */
extern const char *const sc_cost_tok_keys[3][2];

/* The per-token fields of root into c (c->tokens, c->per_token), after
 * the times (the fixed parts are checked against them): SC_ERR_ARG naming
 * the field; SC_ERR_NOMEM. None: c->per_token stays NULL. */
sc_status sc_costs_read_tok(const sc_jv *root, sc_costs *c, char *err, size_t errlen);

/* Writes c's per-token fields when it has them. */
void sc_costs_write_tok(sc_jw *w, const sc_costs *c);

/* Writes how c's per-token costs were fitted (in "measured"), when they were. */
void sc_costs_write_tok_fit(sc_jw *w, const sc_costs *c);

/* Fits t[i] = k[0] + k[1] L[i] + k[2] L[i]^2 (k[2] = 0 unless quad) by
 * least squares over the n points, with every k >= 0 (the best of the
 * fits on the subsets of the terms whose coefficients are all >= 0).
 * *rms: the root mean square of the residuals. SC_ERR_ARG with fewer
 * distinct lengths than terms (2, 3 with quad). */
sc_status sc_costs_fit_tok(const double *L, const double *t, int n, int quad, double k[3],
                           double *rms);

#endif
