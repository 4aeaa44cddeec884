-- interleaved-zb.lua — zero bubble on the loop placement: v chunks per
-- device (stage = chunk*p + device), B and W split, list-scheduled by the
-- costs: at each moment a device runs the backward that can start first,
-- else the forward, and a W when neither can start at once. A W is held
-- back until the device idles, so W fill the cool-down; `w_hold` caps the
-- units of records waiting for their W (with offload, what the host link
-- cannot take: a record is freed by its W). Built for offload under a cap
-- (docs/offload.md#schedules-for-offload): with `offload` and a `mem` in
-- units, the forwards are not held to mem (offload brings the device under
-- it) and w_hold defaults to mem - 1.
local P = sc.params {
  doc = "zero bubble interleaved: v chunks, B/W split, list-scheduled; built for offload under mem",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  {"v", 2, "chunks (virtual stages) per device"},
  {"w_hold", 0.0, "units of records a device may hold for their W (0: mem - 1 with offload, else none)"},
  sc.COSTS,
  sc.MEM,
  sc.OFFLOAD, sc.MODEL, sc.STEPS[1], sc.STEPS[2],
}
sc.need(P.optim_sync ~= "post-validation",
        "interleaved-zb's list schedule does not go with optim_sync = post-validation yet "
        .. "(its rollback path can deadlock)")
sc.need(P.v >= 1 and P.m >= 1, "interleaved-zb needs v >= 1 and m >= 1 (v = %d, m = %d)", P.v, P.m)
local p, m, v = P.p, P.m, P.v
local S = p * v
local tf, tb, tw = P.tf / v, P.tb / v, P.tw / v
local tc = p > 1 and P.tcomm or 0
local mem = sc.mem_of(P)
local policy = P.offload ~= "none" or P.recompute ~= "none"
-- records (1/v unit each) a device may hold: from F to W without a memory
-- policy, from B to W with one
local fcap = (type(mem) == "number" and not policy) and math.floor(mem * v + 1e-9) or math.huge
local hold = P.w_hold > 0 and P.w_hold or ((type(mem) == "number" and policy) and mem - 1 or 0)
local wcap = hold > 0 and math.max(1, math.floor(hold * v + 1e-9)) or math.huge
local fend, bend = {}, {}
for s = 0, S - 1 do fend[s], bend[s] = {}, {} end
local dev = {}
for d = 0, p - 1 do
  dev[d] = {t = 0, nf = {}, nb = {}, wq = {}, wh = 1, out = {}, held = 0}
  for c = 0, v - 1 do dev[d].nf[c], dev[d].nb[c] = 0, 0 end
end
-- when a pass's input is there (nil: its producer has not been placed)
local function ready(kind, s, mb)
  if kind == "F" then
    if s == 0 then return 0 end
    return fend[s - 1][mb] and fend[s - 1][mb] + tc
  end
  if s == S - 1 then return fend[s][mb] end
  return bend[s + 1][mb] and bend[s + 1][mb] + tc
end
-- a new microbatch enters the device (its F on chunk 0) only when the
-- records of all its chunks fit, with those the started ones still need
local function admit(D)
  local started = D.nf[0] * v
  for c = 0, v - 1 do started = started - D.nf[c] end
  return D.held + started + v <= fcap
end
-- device d's next pass {kind, chunk, mb, start}: the B, else the F, that
-- starts first (the later chunk on a tie), else a waiting W
local function choose(d)
  local D, best = dev[d], nil
  for _, kind in ipairs {"B", "F"} do
    for c = v - 1, 0, -1 do
      local mb = kind == "B" and D.nb[c] or D.nf[c]
      local r = mb < m and (kind == "B" or c > 0 or admit(D)) and ready(kind, c * p + d, mb)
      if r and (not best or math.max(D.t, r) < best[4] - 1e-12) then
        best = {kind, c, mb, math.max(D.t, r)}
      end
    end
  end
  local waiting = #D.wq - D.wh + 1
  if waiting > 0 and (not best or best[4] > D.t + 1e-12 or waiting >= wcap) then
    best = {"W", D.wq[D.wh][1], D.wq[D.wh][2], D.t}
  end
  return best
end
-- place the pass that starts first over all devices, until all are placed;
-- a pass changes only its device's choice and its neighbours' (they take
-- its output), so only those are chosen again
local pick = {}
for d = 0, p - 1 do pick[d] = choose(d) or false end
for _ = 1, 3 * S * m do
  local bd, bc
  for d = 0, p - 1 do
    local c = pick[d]
    if c and (not bc or c[4] < bc[4] - 1e-12) then bd, bc = d, c end
  end
  sc.need(bc ~= nil, "interleaved-zb: mem = %s holds too few records to run (%d per device: " ..
          "give mem >= 1 or a memory policy)", tostring(mem), fcap)
  local D, kind, c, mb = dev[bd], bc[1], bc[2], bc[3]
  local s = c * p + bd
  if kind == "F" then
    D.t = bc[4] + tf; fend[s][mb] = D.t; D.nf[c] = D.nf[c] + 1; D.held = D.held + 1
  elseif kind == "B" then
    D.t = bc[4] + tb; bend[s][mb] = D.t; D.nb[c] = D.nb[c] + 1; D.wq[#D.wq + 1] = {c, mb}
  else
    D.t = bc[4] + tw; D.wh = D.wh + 1; D.held = D.held - 1
  end
  D.out[#D.out + 1] = ("%s%d.%d"):format(kind, mb, c)
  for _, e in ipairs {bd, (bd + 1) % p, (bd + p - 1) % p} do pick[e] = choose(e) or false end
end
return sc.program(sc.fields(P, {v = v, placement = "loop",
                                order = function(d) return dev[d].out end,
                                steps = P.steps, optim_sync = P.optim_sync}))
