-- zb-h1.lua — the Zero Bubble paper's ZB-H1: 1F1B with B and W split and
-- W delayed to fill the cool-down; bubble (p-1)(tf+tb-tw), peak p.
local P = sc.params {
  doc = "ZB-H1: B/W split, 1F1B's memory (peak p), a third of its bubble",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
return sc.program(sc.fields(P, {rule = "zb-h1"}))
