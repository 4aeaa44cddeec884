/*
 * ep.h — expert parallelism (docs/semantics.md#expert-parallelism): each
 * pipeline device stands for the E devices of its stages' expert-parallel
 * group, and the passes of a stage with experts are followed by their
 * all-to-alls, DISPATCH and COMBINE. Included by ir.h.
 *
 *     sc_prog_set_ep(pg, 2);              // p x 2 devices, stage-major
 *     sc_prog_set_ep_bytes(pg, s, 4e6);   // one pass's all-to-all of stage s
 *
 * Tested by: tests/unit/test_a2a.c, tests/moe.sh.
 */
#ifndef SC_EP_H
#define SC_EP_H

#include "ir.h"

/* The expert-parallel degree E (1..SC_MAX_EP; 1, the default: none). A
 * program of p devices then runs on p x E: EP rank e of pipeline device d
 * is device d·E + e (stage-major), and the E ranks of d run d's stream on
 * different data. Clears lowering. */
#define SC_MAX_EP 256
sc_status sc_prog_set_ep(sc_prog *pg, int ep);
int sc_prog_ep(const sc_prog *pg);
/* Bytes one rank sends and receives in one all-to-all (DISPATCH or
 * COMBINE) of a pass of stage s, before the ring factor (E - 1)/E: tokens
 * x k x hidden x the activation dtype, over the stage's MoE layers (one
 * pair per pass: the layers' all-to-alls merged). 0 (the default): the
 * stage has no experts and its passes get none. s = -1: every stage. */
sc_status sc_prog_set_ep_bytes(sc_prog *pg, int s, double bytes);
double sc_prog_ep_bytes(const sc_prog *pg, int s);
/* The MoE layers of stage s (default 1): each pays the latency of its
 * two all-to-alls (the merged pair's time below). */
sc_status sc_prog_set_ep_layers(sc_prog *pg, int s, int layers);
/* Bytes of the dense gradients of device d's stages (all but the
 * experts'), summed over its EP group at the end of the step. */
sc_status sc_prog_set_ep_dense(sc_prog *pg, int d, double bytes);
double sc_prog_ep_dense(const sc_prog *pg, int d);
/* The routed experts' share of device d's parameters (0..1), and what its
 * parameters, gradients and optimizer states are scaled by with ep = E:
 * 1 - share x (1 - 1/E) (each rank holds 1/E of the routed experts; 1
 * with ep = 1). */
sc_status sc_prog_set_ep_routed(sc_prog *pg, int d, double share);
double sc_prog_ep_param_scale(const sc_prog *pg, int d);
/* The all-to-all's time of a pass of stage s (DISPATCH + COMBINE), as a
 * cost file gives it (sc_prog_set_ep_time; NAN: from the bytes and the
 * collective cost, sc_prog_set_coll_cost: 2 x (layers x latency + (E-1)/E
 * x bytes / bandwidth)), and the time the lowering puts
 * on the compute stream (sc_prog_set_cost_a2a): a pass alone takes its
 * time plus it, an overlapped pair overlaps it with the other half's
 * (its latency) and compute (sc_prog_ep_link_time, ir_impl.h's
 * sc_pair_cost); the DISPATCH and COMBINE after it then take no time of the
 * collective channel (sc_prog_coll_time; in given streams they take their
 * cost there, as any collective). */
sc_status sc_prog_set_ep_time(sc_prog *pg, int s, double seconds);
/* The link's part of stage s's all-to-all part ta (pair.h; the rest of
 * ta is latency): with ep = 1 (ta set alone, sc_prog_set_cost_a2a) all of
 * ta, as DualPipe counts it; with ep > 1 the bytes' time on the collective
 * channel, 2 x (E-1)/E x bytes / bandwidth, at most ta (0 without bytes or
 * with an unbounded bandwidth: a measured ta is then all latency). An
 * overlapped pair's halves share the link, not their latencies: two
 * latency-bound all-to-alls overlap each other
 * (docs/semantics.md#expert-parallelism). */
double sc_prog_ep_link_time(const sc_prog *pg, int s);
/* Whether stage s has experts: a time > 0 given, else bytes > 0. */
int sc_prog_ep_stage(const sc_prog *pg, int s);
double sc_prog_ep_time(const sc_prog *pg, int s);
/* The EP group of device d (a group of one program device: its E ranks),
 * made on first use; -1 when out of memory (the error is set). */
int sc_prog_ep_group(sc_prog *pg, int d);

#endif
