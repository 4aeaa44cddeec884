-- bench_overlap.lua — overlapped pairs in the simulator (docs/guide.md#overlapped-pairs):
-- DualPipe's README table row by row, and dualpipev against zb-v, v-half
-- and zbv-auto with and without an all-to-all part. Run:
--   ./stagecraft --trust bench/bench_overlap.lua
-- (bench/bench_overlap.sh adds the runtimes' pairs; bench/schedules.md has
-- the figures.)

local function bubble(r) -- the largest makespan - busy of any device
  local b = 0
  for d = 1, #r.busy do b = math.max(b, r.makespan - r.busy[d]) end
  return b
end

-- 1. DualPipe's table (chunk costs F, B full backward, W; F&B a pair).
print("DualPipe's README table: formula against sim (chunk F = B = 1, W = 0.5; F&B = 1.5 + W)")
print(("%-10s %4s %12s %12s %6s %12s %8s"):format("schedule", "PP", "formula", "sim", "param",
                                                "activations", "devices"))
local F, Bi, W, FBi = 1, 1, 0.5, 1.5
local B, FB = Bi + W, FBi + W
for _, PP in ipairs{4, 8, 16} do
  local rows = {
    {"1F1B", "1f1b", {p = PP, m = 2 * PP, tf = F, tb = Bi, tw = W}, (PP - 1) * (F + B), 1},
    {"ZB1P", "zb-h1", {p = PP, m = 2 * PP, tf = F, tb = Bi, tw = W}, (PP - 1) * (F + B - 2 * W), 1},
    {"DualPipe", "dualpipe", {p = PP, m = 2 * PP + 2, tf = 2 * F, tb = 2 * Bi, tw = 2 * W,
                              tfb = 2 * FBi}, (PP / 2 - 1) * (FB + B - 3 * W), 2},
    {"DualPipeV", "dualpipev", {p = PP // 2, m = PP + 1, tf = 2 * F, tb = 2 * Bi, tw = 2 * W,
                                tfb = 2 * FBi}, (PP / 2 - 1) * (FB + B - 3 * W), 2},
  }
  for _, row in ipairs(rows) do
    local prog = sc.load(row[2], row[3])
    local r = prog:sim()
    local v = prog.stages // prog.devices -- stage activations per unit, stages per device
    print(("%-10s %4d %12.4g %12.4g %5dx %12.4g %8d"):format(row[1], PP, row[4], bubble(r),
          row[5], r.peak_memory_max * v, prog.devices))
  end
end

-- 2. dualpipev against the V schedules of the same memory class, p = 4,
-- m = 16, device-share costs tf = tb = tw = 1 (a chunk: 0.5 each): with
-- no gain and no all-to-all; with a pair's gain (tfb below tf + tb = 2);
-- with an all-to-all part ta (each pass alone exposes it, a pair hides it
-- under the other half's compute). zb-v and v-half cannot pair; zbv-auto
-- pairs its winner when a pair gains (docs/blocks.md#pairing), here with
-- mem = 4 (p) and with DualPipeV's 4.5.
print()
print("p = 4, m = 16, tf = tb = tw = 1 (a device's share): makespan / peak units")
local cases = {
  {"no gain, ta = 0", {}},
  {"tfb = 1.8", {tfb = 1.8}},
  {"tfb = 1.5", {tfb = 1.5}},
  {"tfb = 1.2", {tfb = 1.2}},
  {"ta = 0.5", {ta = 0.5}},
  {"ta = 1", {ta = 1}},
  {"tfb = 1.5, ta = 0.5", {tfb = 1.5, ta = 0.5}},
  {"tf = 2, tb = 1, tfb = 2.5", {tf = 2, tb = 1, tfb = 2.5}},
}
local cols = {
  {"dualpipev", function(c) return sc.load("dualpipev", c) end},
  {"dualpipev best", function(c) c.best = true; return sc.load("dualpipev", c) end},
  {"zb-v", function(c) c.placement, c.rule = "v", "zb-v"; return sc.program(c) end},
  {"v-half", function(c) local m = c.m; c.m = nil; return sc.v_block("half", c):program{m = m} end},
  {"zbv-auto mem 4", function(c)
     c.v, c.placement, c.mem, c.time_limit = 2, "v", 4, 0; return (sc.autoschedule(c)) end},
  {"zbv-auto mem 4.5", function(c)
     c.v, c.placement, c.mem, c.time_limit = 2, "v", 4.5, 0; return (sc.autoschedule(c)) end},
}
io.write(("%-26s"):format("case"))
for _, col in ipairs(cols) do io.write(("%18s"):format(col[1])) end
io.write("\n")
for _, c in ipairs(cases) do
  io.write(("%-26s"):format(c[1]))
  for _, col in ipairs(cols) do
    local o = {p = 4, m = 16}
    for k, v in pairs(c[2]) do o[k] = v end
    local r = col[2](o):sim()
    io.write(("%18s"):format(("%.6g / %.3g"):format(r.makespan, r.peak_memory_max)))
  end
  io.write("\n")
end
