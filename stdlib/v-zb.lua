-- v-zb.lua — V-ZB (Pipeline Parallelism with Controllable Memory): the
-- V-shape building block with the least bubble whose peak stays within
-- `mem` units (default p, 1F1B's device 0), found by the block search over
-- the paper's family (sc.block_search: deltas k = 1..5 between devices,
-- slacks 0..5 slots), unrolled for m microbatches and reordered.
local P = sc.params {
  doc = "V-ZB: the best V-shape block within mem units (default p)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD,
}
local t = sc.fields(P)
t.mem = (P.mem > 0 and P.offload ~= "budget") and P.mem or P.p
local blk = sc.block_search(t)
return blk:program{m = P.m}
