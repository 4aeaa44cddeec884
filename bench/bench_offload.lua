-- bench_offload.lua — PipeOffload's figures from the simulator: the gis
-- schedule (p = 16, m = 64, v = 4, g = 8) with 0..4 chunks offloaded on a
-- fast link (peak, share of the peak removed against share of the volume,
-- bubble), the largest ratio at which full offload is accepted, budget's
-- least offload per memory cap, and the time the planning takes.
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

print("\nfull offload (all) of gis against the link: the largest accepted ratio")
local lo, hi = 0, 4
for _ = 1, 30 do
  local mid = (lo + hi) / 2
  local ok = sc.load("gis", with{offload = "all", offload_ratio = mid}):valid()
  if ok then lo = mid else hi = mid end
end
local rl = sc.load("gis", with{offload = "all", offload_ratio = lo}):sim()
print(("accepted up to ratio %.3f (peak %g, %d of %d records moved); refused above"):format(
  lo, rl.peak_memory_max, rl.offload.moved, rl.offload.records))
for _, k in ipairs{0.05, 0.25, 0.5} do
  local r = sc.load("gis", with{offload = "all", offload_ratio = k}):sim()
  print(("ratio %-4g peak %-5g moved %d, skipped %d (window shorter than three transfers)"):format(
    k, r.peak_memory_max, r.offload.moved, r.offload.skipped))
end

print("\nbudget (least offload under mem), ratio 0.5: mem, peak, chunks moved on d0 and d15, bubble")
for _, mem in ipairs{8, 6, 4, 3, 2} do
  local prog = sc.load("gis", with{offload = "budget", mem = mem, offload_ratio = 0.5})
  local ok, msg = prog:valid()
  if ok then
    local r = prog:sim()
    print(("mem %-3g peak %-6g chunks %-7g %-7g bubble %.4f%%"):format(mem, r.peak_memory_max,
      r.offload.chunks[1], r.offload.chunks[16], 100 * r.bubble_rate))
  else
    print(("mem %-3g %s"):format(mem, msg:gsub("^.-offload", "offload")))
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
  1e3 * cost{offload = "budget", mem = 4, offload_ratio = 0.5}))

print("\nsc.offload_ratio (PipeOffload's k; full offload needs k <= 1, 1/2 on a shared link)")
for _, c in ipairs{{4096, 4096, 220, 15, "7B-like on A100"}, {4096, 4096, 440, 21, "7B-like on H100"},
                   {8192, 4096, 440, 21, "h 8192 on H100"}, {16384, 4096, 440, 21, "h 16384 on H100"}} do
  local k, ok = sc.offload_ratio{hidden = c[1], seq = c[2], tflops = c[3], gbps = c[4]}
  print(("%-18s h=%-5d s=%d %3d TFLOP/s %2d GB/s: k = %.3f (halved %.3f) full offload: %s"):format(
    c[5], c[1], c[2], c[3], c[4], k, k / 2, ok and "yes" or "no"))
end
