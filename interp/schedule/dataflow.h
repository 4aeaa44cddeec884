/*
 * dataflow.h — the ideal timing of per-device orders: every pass starts as
 * soon as its device is free and its dependencies are done (plus T_comm
 * when the dependency crosses devices), keeping each device's order.
 *
 * This is the "squeeze" of a building block and the time base from which
 * sc_lower() orders transfers. It needs no lowering; it fails only when the
 * orders form a dependency cycle across devices, with SC_ERR_PROGRAM and the
 * cycle named in sc_errmsg(). Precondition: sc_verify_passes() == SC_OK.
 *
 * start/end/seq are indexed like the orders: pass k of device d is at
 * base[d] + k where base[d] is the total length of the orders before d.
 * seq (may be NULL) numbers the passes in the order this timing ran them:
 * a pass runs after everything it depends on and after the passes before
 * it on its device, so (start, seq) increases along every device and from
 * every producer to its consumers, even when costs are zero.
 *
 * Tested by: tests/unit/test_interp.c, tests/unit/test_reorder.c.
 */
#ifndef SC_DATAFLOW_H
#define SC_DATAFLOW_H

#include "ir/ir.h"

sc_status sc_dataflow(sc_prog *pg, double *start, double *end, size_t *seq);

#endif
