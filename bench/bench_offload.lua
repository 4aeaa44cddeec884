-- bench_offload.lua — PipeOffload's figures from the simulator: the gis
-- schedule (p = 16, m = 64, v = 4, g = 8) with 0..4 chunks offloaded on a
-- fast link (peak, share of the peak removed against share of the volume,
-- bubble), PipeOffload's figures at ratio 0.25, the largest ratio at which
-- full offload is accepted and budget's least offload per memory cap (on
-- the shared link, gis's default, and on a link per device), and the time
-- the planning takes.
--   stagecraft bench/bench_offload.lua
local base = {p = 16, m = 64, v = 4, g = 8}
local function with(t)
  local o = {}
  for k, v in pairs(base) do o[k] = v end
  for k, v in pairs(t) do o[k] = v end
  return o
end
local function clock(f)
  local best = math.huge
  for _ = 1, 3 do
    local t0 = os.clock(); f(); best = math.min(best, os.clock() - t0)
  end
  return best
end

print("gis p=16 m=64 v=4 g=8, offload_ratio 0.05 (selective: chunks moved per device)")
print("chunks  volume  peak    removed  bubble    host peak  link busy")
local r0 = sc.load("gis", base):sim()
local vol4
for k = 4, 0, -1 do
  local r = sc.load("gis", with{offload = "selective", offload_chunks = k, offload_ratio = 0.05}):sim()
  if k == 4 then vol4 = r.offload.units_moved end
  local o = r.offload
  print(("%6d  %5.1f%%  %-6g  %5.1f%%   %7.4f%%  %-9g  %.1f%%"):format(k,
    100 * o.units_moved / vol4, r.peak_memory_max, 100 * (1 - r.peak_memory_max / r0.peak_memory_max),
    100 * r.bubble_rate, o.host_peak_max, 100 * math.max(table.unpack(o.link_busy.d2h))))
end

print("\nPipeOffload's ratio 0.25, p=16 m=64: peak on the shared link (gis's default), on a link")
print("per device, and the authors' planner's figure (issue 19)")
for _, c in ipairs({{{v = 4, g = 8, offload = "all"}, 1.0},
                    {{v = 4, g = 16, offload = "selective", offload_chunks = 3}, 4},
                    {{v = 2, g = 8, offload = "selective", offload_chunks = 2}, 2.0}}) do
  local t = {}
  for k, v in pairs(c[1]) do t[k] = v end
  t.p, t.m, t.offload_ratio = 16, 64, 0.25
  local shared = sc.load("gis", t):sim()
  t.link_shared = false
  local own = sc.load("gis", t):sim()
  print(("v=%d g=%-2d %-9s %-4s shared %-5g own %-5g PipeOffload %g (without offload %g)"):format(
    t.v, t.g, t.offload, t.offload_chunks or "", shared.peak_memory_max, own.peak_memory_max, c[2],
    math.max(table.unpack(shared.offload.peak_without))))
end

for _, shared in ipairs{true, false} do
  local link = shared and "shared link" or "a link per device"
  print(("\nfull offload (all) of gis, %s: the largest accepted ratio"):format(link))
  local lo, hi = 0, 4
  for _ = 1, 30 do
    local mid = (lo + hi) / 2
    local ok = sc.load("gis", with{offload = "all", offload_ratio = mid, link_shared = shared}):valid()
    if ok then lo = mid else hi = mid end
  end
  local rl = sc.load("gis", with{offload = "all", offload_ratio = lo, link_shared = shared}):sim()
  print(("accepted up to ratio %.3f (peak %g, %d of %d records moved); refused above"):format(
    lo, rl.peak_memory_max, rl.offload.moved, rl.offload.records))
  for _, k in ipairs{0.05, 0.25, 0.5} do
    if k <= lo then
      local r = sc.load("gis", with{offload = "all", offload_ratio = k, link_shared = shared}):sim()
      print(("ratio %-4g peak %-5g moved %d, skipped %d (window shorter than three transfers)"):format(
        k, r.peak_memory_max, r.offload.moved, r.offload.skipped))
    end
  end
  local ratio = shared and 0.25 or 0.5
  print(("budget (least offload under mem), %s, ratio %g: mem, peak, chunks moved on d0 and d15, bubble")
    :format(link, ratio))
  for _, mem in ipairs{8, 6, 4, 3, 2} do
    local prog = sc.load("gis", with{offload = "budget", mem = mem, offload_ratio = ratio, link_shared = shared})
    local ok, msg = prog:valid()
    if ok then
      local r = prog:sim()
      print(("mem %-3g peak %-6g chunks %-7g %-7g bubble %.4f%%"):format(mem, r.peak_memory_max,
        r.offload.chunks[1], r.offload.chunks[16], 100 * r.bubble_rate))
    else
      print(("mem %-3g %s"):format(mem, msg:gsub("^.-offload", "offload")))
    end
  end
end

print("\nplanning time (sc.program + check + sim), gis p=16 m=64 v=4 g=8 (15,872 passes)")
local function cost(extra)
  return clock(function() local p = sc.load("gis", with(extra)); p:check(); p:sim() end)
end
local t0 = cost{}
print(("no offload %.1f ms; all %.1f ms; selective 2 %.1f ms; budget mem 4 %.1f ms"):format(
  1e3 * t0, 1e3 * cost{offload = "all", offload_ratio = 0.05},
  1e3 * cost{offload = "selective", offload_chunks = 2, offload_ratio = 0.05},
  1e3 * cost{offload = "budget", mem = 4, offload_ratio = 0.25}))

print("\nsc.offload_ratio (PipeOffload's k; full offload needs k <= 1, 1/2 on a shared link)")
for _, c in ipairs{{4096, 4096, 220, 15, "7B-like on A100"}, {4096, 4096, 440, 21, "7B-like on H100"},
                   {8192, 4096, 440, 21, "h 8192 on H100"}, {16384, 4096, 440, 21, "h 16384 on H100"}} do
  local k, ok = sc.offload_ratio{hidden = c[1], seq = c[2], tflops = c[3], gbps = c[4]}
  print(("%-18s h=%-5d s=%d %3d TFLOP/s %2d GB/s: k = %.3f (halved %.3f) full offload: %s"):format(
    c[5], c[1], c[2], c[3], c[4], k, k / 2, ok and "yes" or "no"))
end
