-- seq1f1b.lua — Seq1F1B (Sun et al., arXiv 2406.03488): 1F1B over sequence
-- slices. Each microbatch's sequence runs as K causal slices
-- (docs/slices.md): slice j's F needs slice j-1's F on the same stage (their
-- keys and values), and the backward runs the slices in reverse (slice j's
-- BW after slice j+1's, which added to the gradient of slice j's keys and
-- values). Device d warms up with p-d-1 + K-1 slices (the last stage must
-- run a microbatch's last slice before its first backward), then one F and
-- one BW of a slice each; it holds p-d-1+K slices, each 1/K of a
-- microbatch's record, against 1F1B's p-d microbatches.
local P = sc.params {
  doc = "Seq1F1B: 1F1B over K causal slices per microbatch; peak (p-d-1+K)/K records",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  {"slices", 4, "causal slices per microbatch (K)"},
  {"slice_split", "even", "even (equal tokens) or compute (equal F cost, the paper's partition)"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL, -- offload: none only (docs/slices.md)
}
sc.need(P.slices >= 1 and P.slices <= 1024, "seq1f1b needs 1 <= slices <= 1024 (slices = %d)",
  P.slices)
local K = P.slices
local n = P.m * K -- records: slice u % K of microbatch u // K
-- The i-th backward: microbatches in order, each one's slices last to first.
local function back(i) return (i // K) * K + (K - 1 - i % K) end
return sc.program(sc.fields(P, {
  m = n, slices = K, slice_split = P.slice_split, placement = "loop",
  order = function(d)
    local t, f, b = {}, 0, 0
    for _ = 1, math.min(P.p - d - 1 + K - 1, n) do
      t[#t + 1] = "F" .. f
      f = f + 1
    end
    while f < n do
      t[#t + 1] = "F" .. f
      t[#t + 1] = "BW" .. back(b)
      f, b = f + 1, b + 1
    end
    for i = b, n - 1 do t[#t + 1] = "BW" .. back(i) end
    return t
  end,
}))
