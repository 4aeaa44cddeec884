-- v-min.lua — V-Min (Pipeline Parallelism with Controllable Memory): a
-- V-shape building block whose peak is a third of 1F1B's, (p+4)//3 units.
-- Slots of one pass each, interval 6: device i starts F (chunk 0) at i,
-- f (chunk 1) at 2p-i-1, the backward of chunk 1 at 2p+c+i and that of
-- chunk 0 at 4p+c-i-1 (c = 2 when p is a multiple of 3); each W goes to the
-- first free slot after its B (sc.v_block).
local P = sc.params {
  doc = "V-Min: V-shape block, peak (p+4)//3 units (a third of 1F1B)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
return sc.v_block("min", sc.fields(P)):program()
