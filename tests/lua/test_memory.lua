-- test_memory.lua — memory as a promise (docs/guide.md#memory-model): every
-- stdlib recipe and every program either meets `mem` or is refused, the
-- rules' knobs, per-device caps and caps in bytes.
-- Run: ./stagecraft --trust tests/lua/test_memory.lua
local T = dofile("tests/lua/harness.lua")

local recipes = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "1f1b-v", "v-half",
                 "v-min", "v-zb", "gis", "zb-auto", "zbv-auto"}
sc._time_limit = 0 -- the automatic schedulers: their heuristic only

-- Every recipe at p = 4 and 8 under caps from p down to 1 (and below: one
-- record): within the cap, or refused by it, never over it.
for _, p in ipairs({4, 8}) do
  for _, name in ipairs(recipes) do
    for _, mem in ipairs({p, p - 1.5, p / 2, 2, 1, 0.5}) do
      local what = ("%s p=%d mem=%g"):format(name, p, mem)
      local ok, prog = pcall(sc.load, name, {p = p, m = 4 * p, mem = mem})
      local fine, r = false, nil
      if ok then fine, r = pcall(function() return prog:sim() end) end
      if ok and fine then
        T.ok(r.peak_memory_max <= mem + 1e-9, what .. (": peak %g"):format(r.peak_memory_max))
      else
        local err = tostring(ok and r or prog)
        T.ok(err:find("mem", 1, true) ~= nil, what .. ": refused for its cap, not else: " .. err)
      end
    end
  end
end

-- The knobs: at mem = 2 the rules with one (and gis, fit = true) run.
for _, name in ipairs({"gpipe", "1f1b", "zb-h1", "zb-h2"}) do
  local r = sc.load(name, {p = 8, m = 32, mem = 2}):sim()
  T.near(r.peak_memory_max, 2, 1e-9, name .. " at mem = 2")
end
T.near(sc.load("interleaved", {p = 8, m = 32, mem = 6}):sim().peak_memory_max, 6, 1e-9,
  "interleaved at mem = 6")
T.ok(sc.load("gis", {p = 8, m = 32, mem = 4}):sim().peak_memory_max <= 4, "gis at mem = 4")
-- 1F1B's knob: fewer warm-up forwards, w = min(p-d-1, mem-1) before the reorder.
local r = sc.load("1f1b", {p = 4, m = 8, mem = 2}):sim()
T.eq(r.peak_memory[4], 1.0, "1f1b mem=2: the last device holds one")
T.near(r.peak_memory[1], 2, 1e-9, "1f1b mem=2: the first two")
-- Without a cap, nothing changes: the rule's natural orders.
T.eq(sc.load("zb-h1", {p = 4, m = 8, mem = 4}):order(0), sc.load("zb-h1", {p = 4, m = 8}):order(0),
  "zb-h1 at its own peak is zb-h1")
-- Capped ZB-H1 stays near the automatic scheduler's bubble (the reorder
-- fills the idle time the knob costs).
local h = sc.load("zb-h1", {p = 8, m = 32, mem = 6}):sim().bubble_rate
T.ok(h < 0.2, ("zb-h1 p=8 mem=6: bubble %.4f"):format(h))

-- What is refused says what it needs.
T.fails(function() sc.load("zb-v", {p = 8, m = 32, mem = 4}):check() end, "it needs mem >= 8",
  "zb-v has no knob")
T.fails(function() sc.load("interleaved", {p = 8, m = 32, mem = 4}):check() end,
  "it needs mem >= 4.5", "interleaved: the first backward needs every chunk's forward")
T.fails(function() sc.load("v-half", {p = 8, m = 32, mem = 4}) end, "it needs mem >= 5",
  "v-half's steady state")
T.fails(function() sc.load("gpipe", {p = 4, m = 8, mem = 0.5}):check() end,
  "it needs mem >= 1", "gpipe below one record")
-- An ordered program runs as written, unless fit = true.
local order = {"F0 F1 F2 F3 BW0 BW1 BW2 BW3", "F0 F1 F2 F3 BW0 BW1 BW2 BW3"}
T.fails(function() sc.program{p = 2, m = 4, order = order, mem = 2}:check() end,
  "fit = true lets its forwards wait", "an order over its cap")
local f = sc.program{p = 2, m = 4, order = order, mem = 2, fit = true}
T.near(f:sim().peak_memory_max, 2, 1e-9, "fit = true: within the cap")
T.eq(f:order(0), "F0 F1 BW0 F2 BW1 F3 BW2 BW3", "fit = true: forwards wait for backward passes")

-- A block under a memory policy: the policy meets the cap, not the block's
-- steady state (V-Half's 3 units at p = 4).
for _, pol in ipairs({{offload = "all"}, {recompute = "selective"}}) do
  local t = {p = 4, m = 8, mem = 2.5}
  for k, v in pairs(pol) do t[k] = v end
  T.ok(sc.load("v-half", t):sim().peak_memory_max <= 2.5, "v-half under a policy meets mem = 2.5")
end
T.fails(function() sc.load("v-half", {p = 4, m = 8, offload = "all", mem = 1.5}):check() end,
  "it needs mem >= 2 (its peak with this policy", "v-half: what offload reaches")
T.fails(function() sc.load("v-half", {p = 4, m = 8, mem = 2}) end, "in the steady state",
  "v-half without a policy: its steady state")

-- Per-device caps: each device within its own.
local caps = {4, 3, 3, 2}
for _, name in ipairs({"zb-h1", "1f1b", "gpipe", "zb-h2"}) do
  local pk = sc.load(name, {p = 4, m = 8, mem = "[4,3,3,2]"}):sim().peak_memory
  for d = 1, 4 do T.ok(pk[d] <= caps[d] + 1e-9, ("%s d%d: %g <= %g"):format(name, d - 1, pk[d], caps[d])) end
end
T.fails(function() sc.program{p = 2, m = 2, rule = "1f1b", mem = {1, 2, 3}} end,
  "'mem' lists 3 devices, but there are 2", "a list of the wrong length")

-- Bytes: with a model a cap in bytes caps each device's total
-- (docs/model.md#caps): what it holds before any activation, then units.
local model = {p = 8, m = 32, layers = 32, hidden = 4096, seq = 4096, batch = 1}
local free = sc.load("zb-h1", model):sim()
local unit, held = free.unit_bytes, 0
for d = 1, 8 do held = math.max(held, free.bytes.total[d] - free.bytes.activations[d]) end
local m6 = {}
for k, v in pairs(model) do m6[k] = v end
m6.mem = ("%dB"):format(math.floor(held + 6 * unit))
local b = sc.load("zb-h1", m6):sim()
T.near(b.peak_memory_max, 6, 1e-9, "mem in bytes: six units on the fullest device")
T.ok(b.total_bytes_max <= held + 6 * unit, "mem in bytes: the total under the cap")
T.fails(function() sc.load("zb-h1", {p = 4, m = 8, mem = "3GiB"}) end,
  "counts memory in units only", "bytes without a model")
T.fails(function() sc.load("zb-h1", {p = 4, m = 8, mem = "3 parsecs"}) end,
  "expected units, bytes", "a memory value that is neither")

-- Recomputation (docs/recompute.md): every record's all of it on 1F1B holds
-- one record a device; R costs F's time; a partial one its own.
local plain = sc.load("1f1b", {p = 4, m = 8}):sim()
local all = sc.load("1f1b", {p = 4, m = 8, recompute = "all"}):sim()
for d = 1, 4 do T.near(all.peak_memory[d], 1, 1e-9, "1f1b recompute=all d" .. (d - 1)) end
T.eq(all.recompute.records, 32, "every record recomputed")
T.near(all.recompute.recompute_time, 32, 1e-9, "R takes F's time")
T.near(all.busy[1], plain.busy[1] + 8, 1e-9, "R is work")
local part = sc.load("1f1b", {p = 4, m = 8, recompute = "all", recompute_frac = 0.5,
                               recompute_time = 0.1}):sim()
T.near(part.recompute.recompute_time, 32 * 0.1, 1e-9, "partial: its time")
T.near(part.peak_memory_max, 4 - 3 * 0.5, 1e-9, "partial: half of each record waits")
-- selective: the chunk with the longest lifespans (chunk 0 in gis).
local sel = sc.load("gis", {p = 4, m = 8, recompute = "selective"}):sim()
T.eq(sel.recompute.records, 4 * 8, "selective: one chunk of every device")
T.ok(sel.peak_memory_max < sc.load("gis", {p = 4, m = 8}):sim().peak_memory_max, "selective lowers")
-- budget: the least that meets mem; the mix: offload first while the link
-- keeps up (no recomputation, no time), recomputation where it does not.
for _, mem in ipairs({3, 2, 1.5}) do
  local b = sc.load("gis", {p = 8, m = 32, recompute = "budget", mem = mem}):sim()
  T.ok(b.peak_memory_max <= mem + 1e-9, "recompute budget meets mem " .. mem)
  local fast = sc.load("gis", {p = 8, m = 32, recompute = "budget", offload = "budget", mem = mem,
                               offload_ratio = 0.1}):sim()
  T.eq(fast.recompute.records, 0, "fast link: nothing recomputed at mem " .. mem)
  T.eq(fast.makespan, 105.0, "fast link: no time lost at mem " .. mem)
  local slow = sc.load("gis", {p = 8, m = 32, recompute = "budget", offload = "budget", mem = mem,
                               offload_ratio = 2}):sim()
  T.ok(slow.peak_memory_max <= mem + 1e-9 and slow.recompute.records > 0,
    "slow link: recomputation meets mem " .. mem)
  T.ok(slow.makespan <= b.makespan + 1e-9, "the mix is no slower than recomputing alone")
end
T.fails(function() sc.load("zb-h1", {p = 4, m = 8, recompute = "budget", mem = 2}):sim() end,
  "recompute 'budget': d3 cannot get under mem = 2: its peak is 4 units without recomputation "
  .. "and 4 with every record's 1 recomputed; it needs mem >= 4",
  "budget below what recomputing reaches: the device that needs most")
-- Several steps: each step's records recomputed as the first step's.
local st2 = sc.load("1f1b", {p = 4, m = 8, recompute = "all", steps = 2}):sim()
T.eq(st2.recompute.records, 32, "steps = 2: the plan of one step (as offload counts)")
local n = 0
for _ in sc.load("1f1b", {p = 4, m = 8, recompute = "all", steps = 2}):dump():gmatch(" R s") do n = n + 1 end
T.eq(n, 64, "steps = 2: an R for every record of both steps")
T.near(st2.peak_memory_max, 1, 1e-9, "steps = 2: one record a device")
-- A function: fractions per record; a record is not both offloaded and recomputed.
local f = sc.program{p = 2, m = 4, rule = "1f1b",
  recompute = function(ls) return ls.mb % 2 == 0 end}
T.eq(f:sim().recompute.records, 4, "a function: the even microbatches")
T.fails(function()
  sc.program{p = 2, m = 4, rule = "1f1b", offload = function() return 1 end,
             recompute = function() return true end}:check()
end, "is both offloaded", "a record offloaded and recomputed")
T.fails(function() sc.program{p = 2, m = 4, rule = "1f1b", recompute = {policy = "all", frac = 2}} end,
  "frac (the part of a record dropped and recomputed) must be within (0, 1]", "frac out of range")
T.fails(function() sc.program{p = 2, m = 4, rule = "1f1b", recompute = {polcy = "all"}} end,
  "did you mean 'policy'", "a field of recompute")
-- The verifier: a B that reads a dropped record before its R.
local d = sc.program{p = 1, m = 1, rule = "1f1b", recompute = "all"}:dump()
T.ok(d:find("DROP s0 mb0 100%", 1, true) and d:find("R s0 mb0 100%", 1, true), "dump: DROP and R")

os.exit(T.done("memory"))
