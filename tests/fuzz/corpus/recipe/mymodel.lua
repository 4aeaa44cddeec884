-- mymodel/schedule.lua — a schedule recipe as it ships beside a model.
-- The receiver runs:   stagecraft check examples/mymodel/schedule.lua
--                      stagecraft sim   examples/mymodel/schedule.lua -D m=64
-- The model: 8 transformer stages on 4 devices (2 chunks each, loop
-- placement), measured per-stage times in ms, the last stage carrying the
-- output layer and the loss (40% slower).
local P = sc.params {
  doc = "mymodel: interleaved 1F1B, 4 devices x 2 chunks, measured costs",
  {"m", 16, "microbatches per step (a multiple of 4)"},
  {"tcomm", 0.15, "P2P time of one activation (ms)"},
  {"head", 1.4, "cost factor of the last stage (output layer + loss)"},
}
local p, v = 4, 2
local tf, tb, tw = {}, {}, {}
for s = 1, p * v do
  local k = (s == p * v) and P.head or 1.0
  tf[s], tb[s], tw[s] = 1.9 * k, 2.0 * k, 1.7 * k   -- ms per microbatch and stage
end
sc.need(P.m % p == 0, "mymodel needs m to be a multiple of %d (got %d)", p, P.m)
return sc.program {
  p = p, v = v, m = P.m, placement = "loop",
  tf = tf, tb = tb, tw = tw, tcomm = P.tcomm,
  rule = "interleaved",
}
