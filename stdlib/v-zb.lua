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
  sc.OFFLOAD, sc.MODEL,
}
local t = sc.fields(P)
t.mem = (P.mem > 0 and P.offload ~= "budget") and P.mem or P.p
-- The vocabulary layers (and the model's costs) go to the program, not the
-- search: the search times blocks of the transformer passes.
local vocab_par, model = t.vocab_par, t.model
t.vocab_par, t.model = nil, nil
local blk = sc.block_search(t)
return blk:program{m = P.m, vocab_par = vocab_par, model = model}
