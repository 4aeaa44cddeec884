/*
 * reorder.h — reordering of the warm-up and the cool-down (Controllable
 * Memory paper, "squeeze and reorder").
 *
 * sc_reorder times the orders as the squeeze does (list scheduling: each
 * pass as early as its device and its dependency allow, T_comm across
 * devices) and, wherever a device would wait for the next pass of its
 * order, pulls a later pass of its order forward into the gap when that
 * pass
 *   - is ready at the start of the gap (everything it depends on is done),
 *   - fits wholly in the gap, so the pass it overtakes starts no later,
 *   - keeps the device's memory within cap[d] at every point of the order.
 * Pulled passes only leave time free and deliver results earlier, so no
 * pass starts later than in the plain squeeze: the makespan never grows.
 * The search for a pass to pull looks a bounded window ahead.
 *
 * Precondition: sc_verify_passes() == SC_OK and the orders are consistent
 * (no cross-device cycle); otherwise the orders are left as they are.
 */
#ifndef SC_REORDER_H
#define SC_REORDER_H

#include "ir/ir.h"

sc_status sc_reorder(sc_prog *pg, const double *cap);

#endif
