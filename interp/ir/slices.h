/*
 * slices.h — sequence slices (Seq1F1B, docs/slices.md): each microbatch's
 * sequence runs as K causal slices. Included by ir.h.
 *
 *     sc_prog *pg = sc_prog_new(4, 4, 8 * 4);   // p = 4, m = 8 microbatches of K = 4 slices
 *     sc_prog_set_slices(pg, 4);                // record r: microbatch r / 4, slice r % 4
 *
 * A sliced program's records are (microbatch, slice) pairs: record r of a
 * program of m·K records is slice r % K of microbatch r / K (in a lowered
 * stream of several steps, numbers run on as the steps', steps.h). Every
 * pass, transfer and record names its slice through that number; the
 * outputs show it as "mb2.1" (microbatch 2, slice 1), and the
 * accessors below give the two parts.
 *
 * What a slice is, and what the program knows of it:
 * - dependencies (proved by sc_verify_passes): slice j's F on a stage
 *   needs slice j-1's F on the same stage, whose keys and values its
 *   attention reads; the backward runs the slices in reverse: slice j's B
 *   (or BW) needs slice j+1's B on the same stage, because the later
 *   slices attended to slice j's keys and values and their B computes part
 *   of the gradient of those; the last stage's B of slice j needs its own F
 *   (its loss), as a microbatch's does. Slice j's W needs only its own B;
 * - bytes: slice j's record holds its activations and its keys and values
 *   from its F until its backward frees them (BW, or B and W as the
 *   memory model says); since B of j+1 comes before B of j, the keys and
 *   values of the earlier slices are there for every later slice's F and B;
 * - times and units (sc_prog_slice_scale): with an even split, slice j
 *   of K takes a/K of the linear part of its stage's cost and (2j+1)/K^2
 *   of the quadratic part (causal attention of its L/K queries over the
 *   j·L/K earlier tokens and its own), a the linear share the model gives
 *   (flops.h; without a model a = 1: an equal split). The slices of a
 *   microbatch sum to its cost. Messages carry the slice's tokens.
 * - not with: lengths, offload, recompute, FSDP, a split vocabulary,
 *   forward-only, copies (sc_prog_check_slices). The runtime trains a
 *   sliced program (runtime/model/model_slices.c, docs/slices.md#run) and
 *   gives each record's measured units (sc_prog_set_len_records).
 *
 * Tested by: tests/unit/test_slices.c, tests/slices.sh.
 */
#ifndef SC_SLICES_H
#define SC_SLICES_H

#include "ir.h"

#define SC_MAX_SLICES 1024

/* Sets K slices per microbatch (1..SC_MAX_SLICES; 1: none). The program's
 * m (records) must be a multiple of K. Drops the lowering. */
sc_status sc_prog_set_slices(sc_prog *pg, int K);
/* K (1 when the program has no slices). */
int sc_prog_slices(const sc_prog *pg);
/* Record mb's slice (mb % K) and its microbatch (mb / K); of a stream's
 * number, the microbatch counts on through the steps. */
int sc_prog_slice_of(const sc_prog *pg, int mb);
int sc_prog_slice_mb(const sc_prog *pg, int mb);
/* Where the slices cut the sequence (docs/slices.md#split): EVEN, K equal
 * token counts (the default); COMPUTE, the Seq1F1B paper's
 * computation-wise partition: cuts where every slice's F costs 1/K of the
 * microbatch's, by the stages' mean linear share a of F (earlier slices
 * are longer: they attend over less). */
enum { SC_SLICE_EVEN, SC_SLICE_COMPUTE };
sc_status sc_prog_set_slice_split(sc_prog *pg, int split);
int sc_prog_slice_split(const sc_prog *pg);
/* Cut j of the sequence, 0..1 (j = 0: 0; j = K: 1): slice j runs from
 * cut j to cut j+1. EVEN: j/K; COMPUTE: c with a c + (1-a) c^2 = j/K. */
double sc_prog_slice_cut(const sc_prog *pg, int j);
/* The scale of kind k (SC_LK_*) of stage s for record mb, as lengths.h's:
 * a (c1 - c0) + (1 - a)(c1^2 - c0^2), c0 and c1 its slice's cuts, a
 * sc_prog_len_linear(k, s): its tokens' linear cost and causal attention
 * over everything before c1. EVEN: a/K + (1-a)(2j+1)/K^2. */
double sc_prog_slice_scale(const sc_prog *pg, int k, int s, int mb);
/* Record mb's share of its microbatch's tokens: cut j+1 - cut j. */
double sc_prog_slice_tokens(const sc_prog *pg, int mb);
/* SC_OK, or the error naming the first setting slices do not go with. */
sc_status sc_prog_check_slices(sc_prog *pg);
/* Formats record mb as "2.1" (microbatch 2, slice 1), or "5" without slices. */
void sc_prog_mb_format(const sc_prog *pg, int mb, char *buf, size_t len);
/* Rewrites every "mb5" of an instruction's name in buf as "mb1.1" (K = 4);
 * nothing without slices. sc_prog_instr_format calls it. */
void sc_prog_slice_names(const sc_prog *pg, char *buf, size_t len);

#endif
