-- 1f1b.lua — one forward, one backward (PipeDream-flush), written as a
-- building block (offsets in compute time): F of stage s starts at s*tf; the fused backward
-- of the last stage follows its F, and each earlier stage's backward
-- follows the next one's. Interval: one F and one BW. Unrolling the block
-- gives each device min(p-d-1, m) warm-up F, then F/BW pairs.
local P = sc.params {
  doc = "1F1B: one forward, one backward; peak p-d on device d",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD,
}
sc.need(P.tf + P.tb + P.tw > 0, "1f1b needs tf + tb + tw > 0 (the block's interval)")
local F, BW = {}, {}
for s = 0, P.p - 1 do F[s + 1] = s * P.tf end
for s = P.p - 1, 0, -1 do
  BW[s + 1] = (s == P.p - 1) and F[s + 1] + P.tf or BW[s + 2] + P.tb + P.tw
end
return sc.program(sc.fields(P, {block = {interval = P.tf + P.tb + P.tw, F = F, BW = BW}}))
