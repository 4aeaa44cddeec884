-- can_offload.lua — can this model on this GPU offload all its activations?
-- PipeOffload's ratio k = 10 / (3 (6h + s)) * TFLOPS * 1000 / GBps
-- (sc.offload_ratio, docs/offload.md#the-host-link): full offload needs k <= 1
-- (k <= 1/2 when two GPUs share a host link), and offload = "all" is refused
-- above it. That bound is necessary, not enough: within it the answer is the
-- simulation's, of gis (PipeOffload's schedule) with offload = "all" at this k
-- on this link, the same as `sim` gives.
--   stagecraft examples/can_offload.lua HIDDEN SEQ TFLOPS GBPS [shared] [P M V]
--   stagecraft examples/can_offload.lua 16384 4096 440 21
local h, s, tflops, gbps = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4])
if not (h and s and tflops and gbps) then
  print("usage: stagecraft examples/can_offload.lua HIDDEN SEQ TFLOPS GBPS [shared] [P M V]")
  return
end
local shared = arg[5] == "shared"
local n = shared and 6 or 5
local p, m, v = tonumber(arg[n]) or 16, tonumber(arg[n + 1]) or 64, tonumber(arg[n + 2]) or 4
local k, ok, bound = sc.offload_ratio{hidden = h, seq = s, tflops = tflops, gbps = gbps, shared = shared}
local link = shared and "devices 2k, 2k+1 share a host link" or "a host link per device"
print(("k = %.4g (the bound is %g, %s): %s"):format(k, bound, link,
  ok and "within it" or "above it"))
-- Above the bound, offload = "all" is refused (PipeOffload's rule).
if not ok then
  print("full offload is not sustainable on this link: offload selectively (budget, selective)")
  return
end
-- Within it the schedule decides: every record that gains from a move, moved in time?
local kk = tonumber(("%.4g"):format(k)) -- the ratio as printed, so that the command below agrees
local r = sc.load("gis", {p = p, m = m, v = v, offload = "all", offload_ratio = kk,
                          link_shared = shared}):sim()
local o = r.offload
print(("gis p = %d, m = %d, v = %d: %d of %d records moved, %d stayed (the link is busy), " ..
  "peak %g units (%g without)"):format(p, m, v, o.moved, o.records, o.backed_off,
  r.peak_memory_max, math.max(table.unpack(o.peak_without))))
print(("full offload %s"):format(o.backed_off == 0 and "is sustainable"
  or "is not sustainable on this link: offload selectively (budget, selective)"))
print(("try: stagecraft sim gis -D p=%d -D m=%d -D v=%d -D offload=all -D offload_ratio=%.4g " ..
  "-D link_shared=%s"):format(p, m, v, k, tostring(shared)))
