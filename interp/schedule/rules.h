/*
 * rules.h — handcrafted schedules as rules that fill every device's order
 * directly (no Lua per pass): the fast path of the stdlib recipes.
 *
 *   gpipe        all F, then all BW (microbatch order)
 *   1f1b         min(p-d-1, m) warm-up F, then one F one BW, then BW
 *   interleaved  Megatron's interleaved 1F1B: v = S/P chunks per device,
 *                loop placement, m a multiple of p
 *   zb-h1        1F1B with B and W split, W of device d delayed by d
 *                microbatches (the Zero Bubble paper's ZB-H1)
 *   zb-h2        2(p-d)-1 warm-up F, W delayed by 2d (ZB-H2): zero bubble
 *                for m >= 2p-1, peak 2p-1 on device 0
 *
 * sc_rule_fill(pg, name) replaces the orders of all devices. The program's
 * shape must fit the rule (one stage per device and loop placement, except
 * interleaved); otherwise SC_ERR_ARG with a message saying what is needed.
 *
 * Tested by: tests/unit/test_rules.c.
 */
#ifndef SC_RULES_H
#define SC_RULES_H

#include "ir/ir.h"

sc_status sc_rule_fill(sc_prog *pg, const char *name);
/* The rule names, NULL-terminated. */
extern const char *const sc_rule_names[];

#endif
