-- v-half.lua — V-Half (Pipeline Parallelism with Controllable Memory): a
-- V-shape building block whose peak is half of 1F1B's, (p+2)//2 units.
-- Slots of one pass each, interval 6: device i starts F (chunk 0) at 2i,
-- f (chunk 1) at 3p-i-2, the backward of chunk 1 at 3p+c+2i-1 and that of
-- chunk 0 at 6p+c-i-2 (c = 3 when p is even, to avoid collisions); each W
-- goes to the first free slot after its B (sc.v_block).
local P = sc.params {
  doc = "V-Half: V-shape block, peak (p+2)//2 units (half of 1F1B)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
return sc.v_block("half", sc.fields(P)):program()
