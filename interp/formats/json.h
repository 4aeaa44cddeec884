/*
 * json.h — the JSON dump of a program (schema: docs/interchange.md#json-dump).
 *
 * One object: the shape, the placement, the cost and memory model, and
 * per device the lowered stream, one instruction per line; with a
 * simulation, every instruction carries its times (t0, t1) and compute
 * passes the device's memory after them, and a "simulation" member holds
 * the totals. The program must be lowered (sc_check or sc_simulate first).
 *
 *     sc_json_write(stdout, pg, sim, "1f1b");
 *
 * Returns SC_ERR_ARG when the program is not lowered or on a write error.
 *
 * Tested by: tests/unit/test_interchange.c.
 */
#ifndef SC_JSON_H
#define SC_JSON_H

#include <stdio.h>

#include "ir/ir.h"
#include "sim/sim.h"

sc_status sc_json_write(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *name);

#endif
