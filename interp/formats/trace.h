/*
 * trace.h — Chrome trace JSON (chrome://tracing, ui.perfetto.dev) of one or
 * more timelines of one program.
 *
 * Each timing is one process in the trace, named by its label: a simulated
 * timeline ("simulated"), a measured one from a runtime ("measured"), side
 * by side. In a process, device d has two threads: "d<d>" (compute passes,
 * tid 2d) and "d<d> comm" (transfers, tid 2d+1; a transfer spans from the
 * moment its group is posted to its completion). Every SEND is joined to
 * its RECV by a flow arrow (matched by direction, stage and microbatch),
 * and, when the timing has memory, a counter "memory d<d>" follows the
 * device's activation memory in units.
 *
 * A timing is sc_sim-shaped: offset[P+1] and t0/t1 per instruction of the
 * program's lowered streams (instruction k of device d at offset[d] + k);
 * mem may be NULL. Times are multiplied by us_per_unit to get the trace's
 * microseconds (<= 0: 1000, one time unit shown as one millisecond).
 *
 *     sc_timing t[2] = {{sim, "simulated", 0}, {measured, "measured", 1e6}};
 *     sc_trace_write(f, pg, t, 2);
 *
 * Returns SC_ERR_ARG when the program is not lowered or on a write error,
 * SC_ERR_NOMEM when out of memory.
 *
 * Tested by: tests/unit/test_interchange.c.
 */
#ifndef SC_TRACE_H
#define SC_TRACE_H

#include <stdio.h>

#include "ir/ir.h"
#include "sim/sim.h"

typedef struct sc_timing {
    const sc_sim *sim;  /* offset, t0, t1; mem optional */
    const char *label;  /* process name */
    double us_per_unit; /* microseconds per time unit; <= 0: 1000 */
} sc_timing;

sc_status sc_trace_write(FILE *f, const sc_prog *pg, const sc_timing *timings, int n);

#endif
