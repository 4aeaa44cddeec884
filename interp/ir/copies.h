/*
 * copies.h — copies of the model (docs/guide.md#copies): the stages as
 * several copies of the layers, each microbatch through one of them.
 * Included by ir.h.
 * Tested by: tests/lua/test_dualpipe.lua, tests/run.sh (dualpipe's copies trained).
 */
#ifndef SC_COPIES_H
#define SC_COPIES_H

#include "ir.h"

/* Copies of the model (docs/guide.md#copies): with copies = c (1, the
 * default, or more), the S stages are c copies of S/c layer groups, stage
 * s being copy s/(S/c) of layer group s mod (S/c); microbatch i (of a
 * step; stream numbers mod m) runs only through copy i/(m/c), from its
 * first stage to its last, and the copies' gradients are summed at the end
 * of the step. DualPipe's two directions are copies = 2 on the V
 * placement. Needs S and m multiples of c. */
sc_status sc_prog_set_copies(sc_prog *pg, int copies);
int sc_prog_copies(const sc_prog *pg);
/* The first and last stage microbatch mb runs through: 0 and S-1 with one
 * copy. */
int sc_prog_first_stage(const sc_prog *pg, int mb);
int sc_prog_last_stage(const sc_prog *pg, int mb);
/* The share of the model's parameters device d holds: 1/(S/copies) for
 * each of its stages (2/p on DualPipe's devices: two layer groups of p). */
double sc_prog_param_share(const sc_prog *pg, int d);

#endif
