-- test_plan.lua — sc.plan (docs/plan.md#from-lua-and-python): the command
-- `stagecraft plan` from Lua, its --json object as a table (indices from
-- 1); the pick the fastest within the cap, the front by growing peak; the
-- layer partition; the command's errors raised. Run:
-- ./stagecraft --trust tests/lua/test_plan.lua
local T = dofile("tests/lua/harness.lua")

local r = sc.plan{p = 4, m = 8, cap = 3, tw = 0.63, tcomm = 0.016, time_limit = 0}
local pick = r.candidates[r.pick]
T.ok(pick and pick.fits and pick.peak_memory_max <= 3, "the pick meets the cap")
for _, c in ipairs(r.candidates) do
  if c.fits then T.ok(c.makespan >= pick.makespan, "no candidate within the cap is faster: " .. c.recipe) end
end
T.eq(r.cap, 3, "cap")
T.ok(r.why:find("^fastest under cap 3: ") ~= nil, r.why)
for i = 2, #r.front do
  local a, b = r.candidates[r.front[i - 1]], r.candidates[r.front[i]]
  T.ok(a.peak_memory_max < b.peak_memory_max and a.makespan > b.makespan, "the front by growing peak")
end
local l = sc.plan{p = 4, m = 16, layers = "E:4,t*14,L:6", time_limit = 0}
T.eq(l.partition.megatron_layout, "Et*2|t*6|t*6|L", "the split as Megatron's layout")
T.ok(l.partition.gain > 0.05, "a gain over the even split")
-- framework = "megatron" (--for): Megatron's candidates only, its settings for the pick.
local mg = sc.plan{p = 4, m = 32, tb = 1.5, tw = 0.5, time_limit = 0, framework = "megatron"}
T.eq(mg["for"], "megatron", "for")
for _, c in ipairs(mg.candidates) do
  T.ok(c.error or (c.frameworks[1] == "megatron" and c.placement == "loop"), "a Megatron candidate: " .. c.recipe)
end
T.ok(mg.reproduce.megatron:find("^%-%-pipeline%-model%-parallel%-size 4 ") ~= nil, mg.reproduce.megatron)
T.ok(mg.reproduce.sim:find("^stagecraft sim interleaved ") ~= nil, mg.reproduce.sim)
-- The least memory within 1 % of the pick's time (~).
local ln = sc.plan{p = 4, m = 32, tb = 1.5, tw = 0.5, time_limit = 0}
local lc, pc = ln.candidates[ln.lean], ln.candidates[ln.pick]
T.ok(lc and lc.makespan <= pc.makespan * 1.01 and lc.peak_memory_max < pc.peak_memory_max, "lean")
local none = sc.plan{p = 2, m = 4, cap = 0.1, time_limit = 0}
T.eq(none.pick, nil, "nothing within the cap: no pick")
T.fails(function() sc.plan{p = 2, mem = 3} end, "give the memory cap as --cap", "-D mem refused")
T.fails(function() sc.plan{layers = "E,x"} end, "'x' is not a layer", "bad layers")

os.exit(T.done("plan"))
