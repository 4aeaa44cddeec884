-- 1f1b.lua — one forward, one backward (PipeDream-flush), written as a
-- building block (offsets in compute time): F of stage s at s*tf; the last stage's fused backward
-- after its F, each earlier stage's after the next one's. Interval: one F and one BW. It unrolls
-- to min(p-d-1, m) warm-up F, then F/BW pairs. Under a cap (mem, no memory policy): the rule
-- 1f1b with its knob, fewer warm-up forwards (the block's steady state holds p; docs/recipes.md).
local P = sc.params {
  doc = "1F1B: one forward, one backward; peak p-d on device d",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL,
}
sc.need(P.tf + P.tb + P.tw > 0, "1f1b needs tf + tb + tw > 0 (the block's interval)")
-- The block in slots of the longest F and the longest BW: with a cost file
-- (unequal stages, BW measured on its own) every pass still fits its slot.
local tf, tbw, C = P.tf, P.tb + P.tw, sc.costs_of(P, P.p)
if C then
  tf, tbw = 0, 0
  for s = 1, P.p do
    tf = math.max(tf, C.tf[s] or 0)
    tbw = math.max(tbw, C.tbw and C.tbw[s] or (C.tb[s] or 0) + (C.tw[s] or 0))
  end
end
local F, BW = {}, {}
for s = 0, P.p - 1 do F[s + 1] = s * tf end
for s = P.p - 1, 0, -1 do
  BW[s + 1] = (s == P.p - 1) and F[s + 1] + tf or BW[s + 2] + tbw
end
return sc.program(sc.fields(P, (sc.mem_of(P) and P.offload == "none") and {rule = "1f1b"} or {block = {interval = tf + tbw, F = F, BW = BW}}))
