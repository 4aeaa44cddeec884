-- v-min.lua — V-Min (Pipeline Parallelism with Controllable Memory): a
-- V-shape building block whose peak is a third of 1F1B's, (p+4)//3 units.
-- Slots of one pass each, interval 6: device i starts F (chunk 0) at i,
-- f (chunk 1) at 2p-i-1, the backward of chunk 1 at 2p+c+i and that of
-- chunk 0 at 4p+c-i-1 (c = 2 when p is a multiple of 3); each W goes to the
-- first free slot after its B.
local P = sc.params {
  doc = "V-Min: V-shape block, peak (p+4)//3 units (a third of 1F1B)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
}
local p = P.p
local c = (p % 3 == 0) and 2 or 0
return sc.program(sc.fields(P, {
  placement = "v",
  block = {
    slots = true, interval = 6,
    first = {F = {0, 2 * p - 1}, B = {4 * p + c - 1, 2 * p + c}},
    delta = {F = {1, -1}, B = {-1, 1}},
  },
}))
