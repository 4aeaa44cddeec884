-- forward.lua — a forward-only pipeline (evaluation, inference, RL
-- log-probs): F passes only, no backward and no optimizer step
-- (docs/guide.md#forward-only; PyTorch's _ScheduleForwardOnly). With v
-- chunks per device on the loop placement (stage = chunk*p + device, as
-- interleaved), each device runs its forwards in rounds of p
-- microbatches, chunk after chunk: no device waits after its first F,
-- and the bubble is exactly (p-1)/(v*m+p-1) with equal costs and no
-- transfer time.
local P = sc.params {
  doc = "forward only (F passes, no backward): bubble (p-1)/(v*m+p-1)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches (with v > 1, a multiple of p)"},
  {"v", 1, "chunks (virtual stages) per device"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL, -- offload: none only (a forward-only program has no backward)
}
sc.need(P.v == 1 or P.m % P.p == 0,
  "forward with v > 1 needs m to be a multiple of p (m = %d, p = %d)", P.m, P.p)
return sc.program(sc.fields(P, {
  v = P.v, placement = "loop", forward_only = true,
  order = function(d)
    local t = {}
    local round = P.v == 1 and P.m or P.p
    for a = 0, P.m - 1, round do
      for c = 0, P.v - 1 do
        for i = a, math.min(a + round, P.m) - 1 do
          t[#t + 1] = P.v == 1 and ("F" .. i) or ("F" .. i .. "." .. c)
        end
      end
    end
    return t
  end,
}))
