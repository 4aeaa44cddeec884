-- can_offload.lua — can this model on this GPU offload all its activations?
-- PipeOffload's ratio k = 10 / (3 (6h + s)) * TFLOPS * 1000 / GBps
-- (sc.offload_ratio, docs/offload.md#the-host-link): full offload needs k <= 1 (k <= 1/2 when
-- two GPUs share a host link).
--   stagecraft examples/can_offload.lua HIDDEN SEQ TFLOPS GBPS [shared]
--   stagecraft examples/can_offload.lua 16384 4096 440 21
local h, s, tflops, gbps = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4])
if not (h and s and tflops and gbps) then
  print("usage: stagecraft examples/can_offload.lua HIDDEN SEQ TFLOPS GBPS [shared]")
  return
end
local shared = arg[5] == "shared"
local k, ok, bound = sc.offload_ratio{hidden = h, seq = s, tflops = tflops, gbps = gbps, shared = shared}
print(("k = %.4g (the bound is %g%s): full offload %s"):format(k, bound,
  shared and ", a shared link" or "", ok and "is sustainable" or "is not; offload selectively"))
print(("try: stagecraft sim gis -D offload=%s -D offload_ratio=%.4g"):format(
  ok and "all" or "budget -D mem=...", k))
