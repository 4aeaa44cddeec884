-- test_auto.lua — the automatic scheduler from Lua: sc.autoschedule, the
-- `auto` source of sc.program, the zb-auto and zbv-auto recipes, errors.
-- Run: ./stagecraft tests/lua/test_auto.lua
local T = dofile("tests/lua/harness.lua")

-- The figures agree with the program's own simulation; the limit holds.
local prog, f = sc.autoschedule{p = 4, m = 12, tf = 1, tb = 1, tw = 1, w_keep = 0.5,
                                mem = 4, seed = 3, time_limit = 1, max_evals = 100}
T.ok(sc.isprogram(prog), "autoschedule returns a program")
local r = prog:sim()
T.near(f.bubble_rate, r.bubble_rate, 1e-12, "figures: bubble")
T.near(f.makespan, r.makespan, 1e-9, "figures: makespan")
T.near(f.peak_memory_max, r.peak_memory_max, 1e-12, "figures: peak")
T.ok(r.peak_memory_max <= 4, "peak within mem")
T.ok(f.method == "heuristic" or f.method == "search", "method " .. tostring(f.method))
T.ok(type(f.heuristic) == "table" and f.bubble_rate <= f.heuristic.bubble_rate + 1e-12,
  "never worse than the heuristic")
T.near(f.bubble_rate, 3 / 39, 1e-12, "unit costs, mem = p: ZB-H1's bubble")
T.eq(f.seed, 3, "seed recorded")
T.eq(f.objective, "sim", "default objective")

-- Per-stage costs as lists; a slow last stage; beats 1F1B.
local slow = {1, 1, 1, 1.4}
local p2, f2 = sc.autoschedule{p = 4, m = 12, tf = slow, tb = slow, tw = slow, mem = 4,
                               time_limit = 1, max_evals = 100}
local one = sc.program{p = 4, m = 12, tf = slow, tb = slow, tw = slow, rule = "1f1b"}:sim()
T.ok(f2.makespan < one.makespan,
  ("slow last stage: %g < 1f1b %g"):format(f2.makespan, one.makespan))
T.ok(p2:valid(), "slow last stage verifies")

-- `units`: the activation of each stage (sc.program's mem).
local p3, f3 = sc.autoschedule{p = 2, m = 4, units = {2, 1}, mem = 4, time_limit = 0}
T.ok(f3.peak_memory_max <= 4 and p3:valid(), "units per stage")

-- The same search through sc.program.
local p4 = sc.program{p = 2, m = 3, auto = {mem = 2, time_limit = 0}}
T.eq(sc._autoinfo(p4).method, "heuristic", "sc.program{auto=} with no search time")
T.eq(sc._autoinfo(sc.load("1f1b")), nil, "no figures on other programs")

-- The same seed, the same orders.
local a = sc.autoschedule{p = 4, m = 8, v = 2, placement = "v", mem = 4, seed = 9,
                          time_limit = 60, max_evals = 150}
local b = sc.autoschedule{p = 4, m = 8, v = 2, placement = "v", mem = 4, seed = 9,
                          time_limit = 60, max_evals = 150}
for d = 0, 3 do T.eq(a:order(d), b:order(d), "deterministic d" .. d) end

-- Recipes over a small grid: they verify and keep mem.
for _, name in ipairs({"zb-auto", "zbv-auto"}) do
  for _, p in ipairs({1, 2, 4}) do
    for _, m in ipairs({1, p, 3 * p}) do
      local q = sc.load(name, {p = p, m = m, time_limit = 0.2})
      T.ok(q:valid(), ("%s p=%d m=%d verifies"):format(name, p, m))
      T.ok(q:sim().peak_memory_max <= p + 1e-9, ("%s p=%d m=%d keeps mem = p"):format(name, p, m))
    end
  end
end
local q = sc.load("zb-auto", {p = 4, m = 8, mem = 6, last = 1.4, w_keep = 0.5})
T.ok(q:sim().peak_memory_max <= 6 + 1e-9, "zb-auto mem = 6")

-- The example that chooses at run time keeps its budget.
for _, mem in ipairs({4, 8}) do
  local e = sc.load("examples/choose_schedule.lua", {mem = mem, m = 8, report = false})
  T.ok(e:valid() and e:sim().peak_memory_max <= mem, "choose_schedule mem=" .. mem)
end

-- Errors carry the caller's line and the exit code of an invalid argument.
T.fails(function() sc.autoschedule{p = 4, m = 8, mem = 0.5} end,
  "mem = 0.5 units is below the 1 units one microbatch needs", "mem too small")
T.fails(function() sc.autoschedule{p = 4, m = 8} end, "'mem'", "mem missing")
T.fails(function() sc.autoschedule{p = 4, m = 8, mem = 4, objective = "x"} end,
  "'objective' must be \"sim\" or \"flow\"", "bad objective")
T.fails(function() sc.program{p = 2, m = 2, auto = 3} end, "'auto' must be a table", "auto type")
local ok, err = pcall(function() sc.autoschedule{p = 4, m = 8, mem = 0.5} end)
T.ok(not ok and err:find("test_auto.lua:%d+: ") ~= nil,
  "error at the caller's line: " .. tostring(err))
T.eq(sc._errcode(err), 3, "exit code 3")

-- The scheduler's own simulation of its winner, kept by the program, is the
-- one a program of the same orders gives; an offload or a comm mode set
-- after the scheduler (sc.program's fields) is in the figures.
do
  local C = {p = 4, m = 12, tf = 2, tb = 1.5, tw = 0.7, tcomm = 0.1, w_keep = 0.5}
  local function with(t, extra)
    local r = {}
    for k, v in pairs(t) do r[k] = v end
    for k, v in pairs(extra) do r[k] = v end
    return r
  end
  for _, extra in ipairs{{}, {comm = "gloo"}, {offload = "all"}, {steps = 2}} do
    local a = sc.program(with(C, with(extra, {auto = {mem = 4, time_limit = 0}})))
    local b = sc.program(with(C, with(extra, {mem = 4, order = function(d) return a:order(d) end})))
    local fa, fb, what = a:sim(), b:sim(), next(extra) or "plain"
    T.eq(fa.makespan, fb.makespan, "kept simulation, " .. what .. ": makespan")
    T.eq(fa.bubble_rate, fb.bubble_rate, "kept simulation, " .. what .. ": bubble")
    for _, k in ipairs{"peak_memory", "busy", "start", "finish"} do
      T.eq(table.concat(fa[k], " "), table.concat(fb[k], " "), "kept simulation, " .. what .. ": " .. k)
    end
  end
end

-- sc.fastest builds no recipe once the program ends at its lower bound
-- (none can be faster); above it, it builds them and keeps a faster one.
do
  local probe = os.tmpname() .. ".lua"
  local fh = assert(io.open(probe, "w"))
  fh:write('local P = sc.params{{"p", 4, "d"}, {"m", 8, "m"}, sc.COSTS, sc.MEM}\n',
           'sc._probe = (sc._probe or 0) + 1\n',
           'return sc.program(sc.fields(P, {rule = "zb-h2"}))\n')
  fh:close()
  local spec = {{"p", 4, "d"}, {"m", 8, "m"}, sc.COSTS, sc.MEM}
  local P = {p = 4, m = 8, tf = 1, tb = 1, tw = 1, tcomm = 0, w_keep = 1, costs = "", mem = 0}
  local at = sc.program{p = 4, m = 8, rule = "zb-h2"}
  T.eq(at:sim().makespan, at:sim().lower_bound, "zb-h2 at unit costs ends at the bound")
  sc._probe = 0
  T.ok(rawequal(sc.fastest(at, {probe}, P, spec), at) and sc._probe == 0,
    "at the bound: the program, no recipe built (" .. sc._probe .. ")")
  local above = sc.program{p = 4, m = 8, rule = "gpipe"}
  local r = sc.fastest(above, {probe}, P, spec)
  T.ok(sc._probe == 1 and r:sim().makespan == at:sim().makespan,
    "above the bound: the recipe built and kept (" .. sc._probe .. ")")
  os.remove(probe)
  sc._probe = nil
end

-- sc._sim_floor: the dataflow timing of the orders, a floor under the
-- simulated makespan (what lets sc.fastest skip a recipe's simulation):
-- never above it, equal where the lowering meets the dataflow timing
-- (tcomm = 0), nil where it is not known to hold.
do
  for _, name in ipairs{"zb-h1", "zb-h2", "1f1b", "interleaved", "zb-v", "gpipe", "v-half"} do
    for _, c in ipairs{{tcomm = 0.5}, {tcomm = 0.25, tb = 1.5, tw = 0.5}, {tcomm = 2}} do
      local over = {p = 4, m = 8}
      for k, v in pairs(c) do over[k] = v end
      local prog = sc.load(name, over)
      local floor, mk = sc._sim_floor(prog), prog:sim().makespan
      T.ok(floor and floor > 0 and floor <= mk,
        ("%s tcomm %g: floor %s <= makespan %g"):format(name, c.tcomm, tostring(floor), mk))
    end
  end
  local z = sc.load("zb-h1", {p = 4, m = 8, tb = 1.5, tw = 0.5})
  T.eq(sc._sim_floor(z), z:sim().makespan, "tcomm = 0: the floor is the makespan")
  T.eq(sc._sim_floor(sc.load("zb-h1", {p = 4, m = 8, offload = "all"})), nil,
    "offload: no floor")
  local two = sc.program{p = 2, m = 4, rule = "1f1b", steps = 2}
  T.eq(sc._sim_floor(two), nil, "several steps: no floor")
end

os.exit(T.done("auto"))
