-- test_dsl.lua — the Lua surface: recipes, parameters, orders, blocks,
-- errors with file and line. Run: ./stagecraft tests/lua/test_dsl.lua
local T = dofile("tests/lua/harness.lua")

-- Every stdlib recipe verifies over a grid of p and m.
for _, name in ipairs({"gpipe", "1f1b", "zb-h1", "zb-h2"}) do
  for _, p in ipairs({1, 2, 3, 4, 8}) do
    for _, m in ipairs({1, 2, p, 2 * p + 1, 4 * p}) do
      local prog = sc.load(name, {p = p, m = m})
      T.ok(prog:valid(), ("%s p=%d m=%d verifies"):format(name, p, m))
    end
  end
end
for _, p in ipairs({1, 2, 4, 8}) do
  for _, v in ipairs({1, 2, 3}) do
    for _, k in ipairs({1, 2, 3}) do
      local prog = sc.load("interleaved", {p = p, m = k * p, v = v})
      T.ok(prog:valid(), ("interleaved p=%d v=%d m=%d verifies"):format(p, v, k * p))
    end
  end
end
T.fails(function() sc.load("interleaved", {p = 4, m = 6}) end,
  "interleaved needs m to be a multiple of p and m >= p (m = 6, p = 4)", "interleaved m % p")
T.fails(function() sc.load("interleaved", {p = 4, m = 2}) end, "m >= p", "interleaved m < p")

-- Closed forms through the Lua surface.
for _, p in ipairs({2, 4, 8}) do
  local m = 3 * p
  local r = sc.load("1f1b", {p = p, m = m}):sim()
  T.near(r.bubble_rate, (p - 1) / (m + p - 1), 1e-12, "1f1b bubble p=" .. p)
  for d = 0, p - 1 do T.near(r.peak_memory[d + 1], p - d, 1e-12, "1f1b peak d=" .. d) end
  r = sc.load("zb-h1", {p = p, m = m}):sim()
  T.near(r.bubble_rate, (p - 1) / (3 * m + p - 1), 1e-12, "zb-h1 bubble p=" .. p)
  T.eq(r.peak_memory_max, p, "zb-h1 peak p=" .. p)
end

-- The block-built 1f1b equals the C rule, device by device.
for _, p in ipairs({2, 3, 4, 8}) do
  for _, m in ipairs({1, p, 3 * p}) do
    local a = sc.load("1f1b", {p = p, m = m})
    local b = sc.program {p = p, m = m, rule = "1f1b"}
    for d = 0, p - 1 do
      T.eq(a:order(d), b:order(d), ("1f1b block == rule p=%d m=%d d=%d"):format(p, m, d))
    end
  end
end

-- Parameters: defaults, overrides, types, unknown names.
local prog = sc.load("1f1b", {p = 3, m = "5"})
T.eq(prog.devices, 3, "override p")
T.eq(prog.microbatches, 5, "override m from a string")
T.fails(function() sc.load("1f1b", {m = "x"}) end, "parameter 'm': expected a number, got 'x'", "bad -D value")
T.fails(function() sc.load("1f1b", {m = "2.5"}) end, "expected an integer", "integer parameter")
T.fails(function() sc.load("1f1b", {zz = 1}) end, "unknown parameter 'zz' for recipe '1f1b'", "unknown -D")
T.fails(function() sc.load("no-such-recipe") end, "unknown recipe 'no-such-recipe'", "unknown recipe")
T.near(sc.load("1f1b", {tf = "1.5"}):sim().makespan > 0 and 1 or 0, 1, 0, "float parameter")

-- Ordered programs: text, list and function forms agree.
local text = {"F0 F1 BW0 BW1", "F0 BW0 F1 BW1"}
local p1 = sc.program {p = 2, m = 2, order = text}
local p2 = sc.program {p = 2, m = 2, order = function(d) return text[d + 1] end}
local p3 = sc.program {p = 2, m = 2, order = {{"F0", "F1", "BW0", "BW1"}, {"F0", "BW0", "F1", "BW1"}}}
T.eq(p1:order(0), "F0 F1 BW0 BW1", "order round trip")
T.eq(p2:order(1), p1:order(1), "function form")
T.eq(p3:order(0), p1:order(0), "list form")
T.eq(p1:sim().makespan, 9.0, "2x2 1f1b makespan: (m+p-1)(tf+tb+tw)")
-- Chunks on a device: F3.1 names the device's second stage.
local v = sc.program {p = 2, m = 1, v = 2, placement = "v",
  order = {"F0 F0.1 BW0.1 BW0", "F0 F0.1 BW0.1 BW0"}}
T.ok(v:valid(), "v placement with chunks")
T.eq(v.placement[3], 1, "v placement: stage 2 on device 1")
T.eq(v:sim().peak_memory[1], 1, "two half-unit chunks make one unit")

-- Bad orders are refused where they are written, with file and line.
T.fails(function() sc.program {p = 2, m = 2, order = {"F0 F1 BW0", "F0 BW0 F1 BW1"}} end,
  "pass missing: B or BW of stage 0, microbatch 1", "pass missing")
T.fails(function() sc.program {p = 2, m = 1, order = {"F0 F0 BW0", "F0 BW0"}} end,
  "pass twice: F s0 mb0", "pass twice")
T.fails(function() sc.program {p = 2, m = 1, order = {"F0 X3", "F0 BW0"}} end,
  "device 0, token 2 'X3': unknown pass kind", "bad token")
T.fails(function() sc.program {p = 2, m = 1, order = {"F0 F7 BW0", "F0 BW0"}} end,
  "microbatch 7 is out of range", "microbatch out of range")
T.fails(function() sc.program {p = 2, m = 1, order = {"F0 BW0", "BW0 F0"}} end,
  "dependency out of order on d1", "dependency order")
T.fails(function() sc.program {p = 2, m = 1, order = {"F0 BW0", "F0 BW0"}, placement = "zigzag"} end,
  "unknown placement 'zigzag'", "unknown placement")
T.fails(function() sc.program {p = 2, m = 1, order = {"F0 BW0", "F0 BW0"}, tf = -1} end,
  "cost: times must be finite and >= 0", "negative cost")
T.fails(function() sc.program {p = 2, m = 1, order = {"F0 BW0", "F0 BW0"}, tf = "fast"} end,
  "'tf' must be a number or a list of numbers (got string)", "non-numeric cost")
T.fails(function() sc.program {p = 0, m = 1, order = {}} end, "devices p = 0 is out of range", "p range")
T.fails(function() sc.program {p = 2, m = 0, order = {}} end, "microbatches m = 0 is out of range", "m range")
local ok = pcall(sc.program, {p = 2, m = 1, order = {"F0 BW0", "F0 BW0"}})
T.ok(ok, "a valid 2-device program builds")
-- The error points at the line of the sc.program call in this file.
T.fails(function() sc.program {p = 2, m = 1, order = {"F0", "F0 BW0"}} end,
  "test_dsl.lua:", "error names the file")

-- A cross-device dependency cycle is caught when the program is checked.
local cyc = sc.program {p = 2, m = 2, order = {"F0 BW0 F1 BW1", "F1 F0 BW0 BW1"}}
local good, msg = cyc:valid()
T.ok(not good, "cycle refused")
T.ok(msg and msg:find("dependency cycle across devices", 1, true) ~= nil, "cycle message")
T.ok(msg and msg:find("d0", 1, true) and msg:find("d1", 1, true), "cycle names both devices")
T.fails(function() cyc:sim() end, "dependency cycle", "sim refuses a cycle")

-- Building blocks: collisions and unmet dependencies.
T.fails(function() sc.program {p = 2, m = 2, block = {interval = 3, F = {0, 1}, BW = {3, 1}}} end,
  "collide modulo the interval", "block collision")
T.fails(function() sc.program {p = 2, m = 2, block = {interval = 3, F = {0, 1}, BW = {4, -1}}} end,
  "BW s1 starts at -1, but F s1 it depends on is done only at 2 (3 too early)", "block dependency")
T.fails(function() sc.program {p = 2, m = 2, block = {interval = 0, F = {0, 1}, BW = {4, 2}}} end,
  "interval must be a positive number", "block interval")
T.fails(function() sc.program {p = 2, m = 2, rule = "1f1b", order = {}} end,
  "exactly one of 'order', 'rule' or 'block'", "one source")

-- Program methods.
local q = sc.load("zb-h1", {p = 2, m = 2})
T.ok(tostring(q):find("Program(2 devices, 2 stages, 2 microbatches, 12 passes)", 1, true), "tostring")
T.ok(q:dump():find("SEND act s1 mb0 -> d1", 1, true), "dump shows transfers")
T.ok(q:timeline(80):find("^d0  |"), "timeline rows")
T.eq(#sc.rules(), 7, "seven rules")
T.ok(sc.isprogram(q) and not sc.isprogram({}), "isprogram")

os.exit(T.done("dsl"))
