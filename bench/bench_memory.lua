-- bench_memory.lua — memory as a promise (issue 32; docs/guide.md#memory-model,
-- docs/recompute.md): for p = 8, m = 32, unit costs, under caps from p down
-- to 1 unit, each memory policy on zb-h1, v-half and gis:
--   keep       the schedule's own knob (rules: fewer warm-up forwards; gis:
--              its forwards wait; v-half: its block, or refused)
--   offload    offload = budget (the recipe's link: gis shares one per pair)
--   recompute  recompute = budget
--   mixed      both budgets: per record the cheapest of keep, offload, recompute
-- Prints the makespan and the peak (max over devices) of each, or what the
-- refusal says the schedule needs. Then the link's ratio swept for gis at
-- mem = 2: where offload stops keeping up and recomputation takes over.
--   stagecraft --trust bench/bench_memory.lua [ratio]
local ratio = tonumber(arg and arg[1]) or 0.25
local recipes = {"zb-h1", "v-half", "gis"}
local caps = {8, 6, 4, 3, 2, 1}
local policies = {
  {"keep", {}},
  {"offload", {offload = "budget", offload_ratio = ratio}},
  {"recompute", {recompute = "budget"}},
  {"mixed", {offload = "budget", recompute = "budget", offload_ratio = ratio}},
}

local function cell(name, over)
  local o = {p = 8, m = 32}
  for k, v in pairs(over) do o[k] = v end
  local ok, r = pcall(function() return sc.load(name, o):sim() end)
  if ok then return ("%.5g / %.4g"):format(r.makespan, r.peak_memory_max) end
  local need = tostring(r):match("needs mem >= ([%d.]+)") or tostring(r):match("needs ([%d.]+) units")
  return need and ("needs %s"):format(need) or "refused"
end

print(("p = 8, m = 32, unit costs, offload ratio %g: makespan / peak (units)"):format(ratio))
print()
for _, name in ipairs(recipes) do
  local base = sc.load(name, {p = 8, m = 32}):sim()
  print(("%s (no cap: makespan %.5g, peak %.4g)"):format(name, base.makespan, base.peak_memory_max))
  print()
  local head = "| mem |"
  for _, pol in ipairs(policies) do head = head .. " " .. pol[1] .. " |" end
  print(head)
  print("|---|" .. ("---|"):rep(#policies))
  for _, mem in ipairs(caps) do
    local row = ("| %g |"):format(mem)
    for _, pol in ipairs(policies) do
      local over = {mem = mem}
      for k, v in pairs(pol[2]) do over[k] = v end
      row = row .. " " .. cell(name, over) .. " |"
    end
    print(row)
  end
  print()
end

print("gis p = 8, m = 32 at mem = 2: makespan by the host link's ratio")
print()
print("| ratio | offload budget | recompute budget | mixed | of which recomputed, offloaded |")
print("|---|---|---|---|---|")
for _, k in ipairs({0.05, 0.1, 0.25, 0.5, 1, 2}) do
  local function mk(over)
    local o = {p = 8, m = 32, mem = 2}
    for kk, v in pairs(over) do o[kk] = v end
    local ok, r = pcall(function() return sc.load("gis", o):sim() end)
    return ok and r or nil
  end
  local a = mk{offload = "budget", offload_ratio = k}
  local b = mk{recompute = "budget"}
  local c = mk{offload = "budget", recompute = "budget", offload_ratio = k}
  print(("| %g | %s | %s | %s | %s |"):format(k, a and ("%.5g"):format(a.makespan) or "refused",
    b and ("%.5g"):format(b.makespan) or "refused", c and ("%.5g"):format(c.makespan) or "refused",
    c and ("%d, %d"):format(c.recompute and c.recompute.records or 0,
                             c.offload and c.offload.moved or 0) or "-"))
end
