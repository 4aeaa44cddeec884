-- bench_blocks.lua — building blocks: the block search for p = 16 under a
-- memory budget and for V-ZB at p = 64, and unrolling V-Half (p = 64, m = 1024: repeat, sort,
-- reorder) against the ZB-V rule filling the same number of passes, in the
-- same process.   stagecraft bench/bench_blocks.lua
local function best_of(n, f)
  local best = math.huge
  for _ = 1, n do
    local t0 = os.clock(); f(); best = math.min(best, os.clock() - t0)
  end
  return best
end
local info
local ts = best_of(3, function() _, info = sc.block_search{p = 16, m = 32, mem = 12} end)
print(("block search p=16 m=32 mem=12: %.1f ms, %d valid blocks, best peak %g, bubble %.2f%%")
  :format(ts * 1e3, info.candidates, info.peak, 100 * info.bubble_rate))
local tt = best_of(3, function() sc.tradeoff{p = 16, m = 32} end)
print(("trade-off table p=16 (budgets 16..32 chunk activations): %.1f ms"):format(tt * 1e3))
-- V-ZB's search at p = 64 (m = 2p): every valid block ranked by its plain
-- squeeze, the two best reordered (issue 19: under a second)
local t64 = best_of(3, function() _, info = sc.block_search{p = 64, mem = 64} end)
print(("block search p=64 m=128 mem=64 (V-ZB): %.1f ms, %d valid blocks, k=%d, bubble %.2f%%"):format(
  t64 * 1e3, info.candidates, info.k, 100 * info.bubble_rate))
-- The 1F1B block (stdlib/1f1b.lua) against the rule 1f1b, each unrolled,
-- lowered and verified: the reorder's fast path finds the block's orders
-- optimal (the flow-shop bound) and skips the candidates (issue 34)
local t1b = best_of(3, function() sc.load("1f1b", {p = 64, m = 1024}):check() end)
local t1r = best_of(3, function() sc.program{p = 64, m = 1024, rule = "1f1b"}:check() end)
print(("1f1b block p=64 m=1024 + check: %.1f ms; rule 1f1b + check %.1f ms; block / rule = %.2fx"):format(
  t1b * 1e3, t1r * 1e3, t1b / t1r))
local blk = sc.v_block("half", {p = 64})
local passes = 128 * 1024 * 3
local tu = best_of(3, function() blk:program{m = 1024} end)
local tk = best_of(3, function() blk:program{m = 1024, reorder = false} end)
local tr = best_of(3, function() sc.program{p = 64, m = 1024, placement = "v", rule = "zb-v"} end)
print(("unroll v-half p=64 m=1024 (%d passes): %.1f ms (%.0f ns/pass), without reorder %.1f ms"):format(
  passes, tu * 1e3, tu * 1e9 / passes, tk * 1e3))
print(("rule zb-v p=64 m=1024 (%d passes): %.1f ms; v-half unroll / zb-v rule = %.1fx"):format(
  passes, tr * 1e3, tu / tr))
local pr = blk:program{m = 1024}
local tc = best_of(1, function() pr:check() end)
local tm = best_of(1, function() pr:sim() end)
print(("v-half p=64 m=1024: lower + verify %.1f ms, simulate %.1f ms"):format(tc * 1e3, tm * 1e3))
