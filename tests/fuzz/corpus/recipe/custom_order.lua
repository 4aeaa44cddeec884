-- custom_order.lua — an ordered program: each device's order of passes,
-- written by a Lua function. This is 1F1B with the backward split into B
-- and W, where each device runs W as soon as its B is done ("eager W").
--   stagecraft show examples/custom_order.lua -D p=4 -D m=8
local P = sc.params {
  doc = "1F1B with B and W split, W right after B",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
}

local function order(d)
  local passes = {}
  local warmup = math.min(P.p - d - 1, P.m)
  for i = 0, warmup - 1 do passes[#passes + 1] = "F" .. i end
  for j = 0, P.m - 1 do
    if warmup + j < P.m then passes[#passes + 1] = "F" .. (warmup + j) end
    passes[#passes + 1] = "B" .. j
    passes[#passes + 1] = "W" .. j
  end
  return table.concat(passes, " ")   -- e.g. "F0 F1 F2 B0 W0 F3 B1 W1 ..."
end

return sc.program {
  p = P.p, m = P.m, tf = P.tf, tb = P.tb, tw = P.tw, tcomm = P.tcomm, w_keep = P.w_keep,
  order = order,
}
