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
-- The search picks among blocks by a cap in units; a cap in bytes or per
-- device goes to the program, which holds it (or refuses).
local mem = sc.mem_of(P)
t.mem = (type(mem) == "number" and P.offload ~= "budget") and mem or P.p
-- The vocabulary layers (and the model's costs) go to the program, not the
-- search: the search times blocks of the transformer passes.
local vocab_par, model = t.vocab_par, t.model
t.vocab_par, t.model = nil, nil
local blk = sc.block_search(t)
-- The default budget (p) picks the block; only a mem given is a promise.
local cap = mem
if cap == nil then cap = false end
return blk:program{m = P.m, vocab_par = vocab_par, model = model, mem = cap}
