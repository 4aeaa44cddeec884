-- zb-h2.lua — the Zero Bubble paper's ZB-H2: more warm-up F and later W;
-- zero bubble for m >= 2p-1 at peak 2p-1.
local P = sc.params {
  doc = "ZB-H2: zero bubble for m >= 2p-1, peak 2p-1",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
return sc.program(sc.fields(P, {rule = "zb-h2"}))
