-- custom_block.lua — a building block: the start time of every pass of one
-- microbatch, and an interval. Microbatch i is the block shifted by
-- i * interval; unrolling sorts each device's passes by start time and the
-- simulator squeezes them (each pass as early as it can, in that order).
--
-- This block splits the backward into B and W: F of stage s starts at
-- s*tf, B of the last stage right after its F, each earlier stage's B one
-- B+W later, and W right after B. The interval is tf + tb + tw, so that no
-- two passes of a device collide modulo the interval. Try moving W[1]
-- onto F's slot to see the verifier refuse the block.
--   stagecraft show examples/custom_block.lua -D m=12
local P = sc.params {
  doc = "a building block with B and W split, W right after B",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
}
local F, B, W = {}, {}, {}
for s = 0, P.p - 1 do F[s + 1] = s * P.tf end
for s = P.p - 1, 0, -1 do
  B[s + 1] = (s == P.p - 1) and F[s + 1] + P.tf or B[s + 2] + P.tb + P.tw
  W[s + 1] = B[s + 1] + P.tb
end
return sc.program {
  p = P.p, m = P.m, tf = P.tf, tb = P.tb, tw = P.tw, tcomm = P.tcomm, w_keep = P.w_keep,
  block = {interval = P.tf + P.tb + P.tw, F = F, B = B, W = W},
}
