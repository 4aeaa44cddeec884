-- gpipe.lua — GPipe: all forwards, then all (fused) backwards.
local P = sc.params {
  doc = "GPipe: all F then all BW; peak m on every device",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
return sc.program(sc.fields(P, {rule = "gpipe"}))
