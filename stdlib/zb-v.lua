-- zb-v.lua — the Zero Bubble paper's ZB-V: two chunks per device in the V
-- placement, B and W split; zero bubble for m >= 2p-1 at equal costs, peak
-- p units on every device (1F1B's device 0), half 1F1B's bubble memory.
local P = sc.params {
  doc = "ZB-V: V placement, zero bubble, peak p on every device (m >= 2p-1)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches (at least 2p-1)"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
sc.need(P.m >= 2 * P.p - 1, "zb-v needs m >= 2p-1 (m = %d, p = %d)", P.m, P.p)
return sc.program(sc.fields(P, {placement = "v", rule = "zb-v"}))
