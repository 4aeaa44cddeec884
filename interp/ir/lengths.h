/*
 * lengths.h — microbatches of different lengths (docs/lengths.md): the
 * tokens of each microbatch, and what follows from them for its passes'
 * times, its record's bytes and its messages' sizes. Included by ir.h.
 *
 *     double len[4] = {512, 2048, 1024, 512};       // m = 4
 *     if (sc_prog_set_lengths(pg, len, 4) != SC_OK) puts(sc_errmsg(pg));
 *     double k = sc_prog_len_scale(pg, SC_LK_F, 0, 1);  // 2048 / 1024 = 2
 *
 * Uniform microbatches are the default case of this (no lengths: every
 * scale is 1), not another path. With lengths, microbatch i's length is
 * r_i = len[i] / ref times the reference: the mean of the lengths, or with
 * a model (flops.h) the model's seq, for which its costs were computed.
 * Stage s's pass of kind k (F, B, W) and its record (MEM) scale by
 *     f + a r_i + (1 - f - a) r_i^2,
 * a = sc_prog_len_linear(pg, k, s): the linear part of that cost at the
 * reference length (1 without a model; with one, attention's quadratic term
 * is the rest); f its fixed part, 0 unless a cost file gave per-token
 * coefficients (sc_prog_set_len_tokens: then the reference is its tokens). BW scales as B and W weighted by their times; the
 * all-to-all part ta, a message's time (T_comm), the vocabulary passes and
 * their records scale by r_i (a message's bytes are tokens x hidden).
 * The costs a program holds stay those of the reference microbatch.
 *
 * Tested by: tests/unit/test_lengths.c, tests/lengths.sh.
 */
#ifndef SC_LENGTHS_H
#define SC_LENGTHS_H

#include "ir.h"

/* The kinds a length scales differently. */
enum { SC_LK_F, SC_LK_B, SC_LK_W, SC_LK_MEM, SC_LK_COUNT };

/* Sets the tokens of every microbatch: n == m entries, each finite and > 0;
 * len = NULL (n = 0) clears them. Drops the lowering (the times and bytes
 * of the streams change). SC_ERR_ARG naming the first bad entry
 * (1-based, as a file's line). */
sc_status sc_prog_set_lengths(sc_prog *pg, const double *len, int n);
/* The lengths (m of them), or NULL when the microbatches are alike. */
const double *sc_prog_lengths(const sc_prog *pg);
/* The reference length (the mean, or the model's seq); 0 without lengths. */
double sc_prog_length_ref(const sc_prog *pg);
/* The scale of kind k (SC_LK_*) of stage s for microbatch mb (a stream's
 * number: any step); 1 without lengths. s = -1: the linear scale r_i. */
double sc_prog_len_scale(const sc_prog *pg, int k, int s, int mb);
/* The linear share a of kind k's cost of stage s (1 without a model). */
double sc_prog_len_linear(const sc_prog *pg, int k, int s);
/* Sets the linear shares (the model's: flops.c), lin[k * S + s]; NULL: 1. */
sc_status sc_prog_set_len_linear(sc_prog *pg, const double *lin, double ref);

/* Sets the shares from per-token coefficients (a cost file's: docs/costs.md
 * #per-token-costs): kind k (F, B, W) of stage s takes a[k * S + s] s per
 * token and b[k * S + s] per token², its cost at ref tokens (tf, tb, tw set
 * before) the rest as a fixed part, so that with lengths its pass takes
 *     fixed + a L_i + b L_i^2 = cost (f + a' r_i + (1 - f - a') r_i^2),
 * r_i = L_i / ref, f the fixed share. Replaces the model's shares of F, B,
 * W (the records keep the model's, at ref); a kind whose a and b are both
 * NAN scales linearly from ref. SC_ERR_ARG for a coefficient < 0 or a cost
 * below its per-token parts at ref. */
sc_status sc_prog_set_len_tokens(sc_prog *pg, const double *a, const double *b, double ref);
/* Whether per-token costs are set (1) or the shares are the model's or 1. */
int sc_prog_len_per_token(const sc_prog *pg);

/* A run's measured records (runtime/run/run.h): units[s * m + i] of record
 * (s, i) and kept[s * m + i] the share of it W keeps (the rest B frees),
 * replacing the scaled mem(s) and w_keep; NULL clears them, and so does
 * sc_prog_set_lengths. SC_ERR_ARG without lengths or for a bad entry. */
sc_status sc_prog_set_len_records(sc_prog *pg, const double *units, const double *kept);

/* Time of one pass of kind op (a stage pass or a vocabulary pass) of stage
 * s and microbatch mb: its cost column scaled as above. */
double sc_prog_pass_time(const sc_prog *pg, int op, int s, int mb);
/* Units of the record (s, mb): sc_prog_mem(s) scaled. */
double sc_prog_rec_units(const sc_prog *pg, int s, int mb);
/* Time of a message of microbatch mb between two devices: T_comm scaled. */
double sc_prog_msg_time(const sc_prog *pg, int mb);

/* Reads a lengths list from text: a JSON array of numbers, or numbers
 * separated by blanks, commas or newlines ('#' starts a comment). m >= 1:
 * the count it must have; m = 0: any count >= 1. *out (*n numbers,
 * sc_free) on SC_OK; else
 * SC_ERR_ARG with err "entry 3 is -5: a length must be a number > 0" or
 * "12 lengths for m = 8 microbatches" (no file name: the caller adds it). */
sc_status sc_lengths_parse(const char *text, size_t len, int m, double **out, int *n,
                           char *err, size_t errlen);

#endif
