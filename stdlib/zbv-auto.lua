-- zbv-auto.lua — the automatic scheduler on the V placement: two chunks per
-- device (device d holds stages d and 2p-1-d), B and W split, the smallest
-- bubble found under a memory limit (sc.autoschedule, docs/blocks.md#automatic-schedules). Costs
-- are for a device's whole share: each stage takes half; `last` scales the
-- last stage (on device 0).
local spec = {
  doc = "automatic schedule on the V placement under a memory limit (mem units per device)",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  sc.COSTS,
  {"tfb", 0.0, "time of an overlapped F+B pair on a device's share (0: tf + tb; below it, pairs)"},
  {"ta", 0.0, "all-to-all part of F, B and BW: exposed alone, hidden in a pair"},
  {"mem", 0.0, "memory limit in units per device (0: p, the peak of 1F1B and ZB-V)", memory = true},
  {"last", 1.0, "cost factor of the last stage (1.4: 40% slower)"},
  {"seed", 1, "seed of the search"},
  {"time_limit", 1.0, "seconds for the search (0: the heuristic only)"},
  {"objective", "sim", "judge by the simulator (sim) or the dataflow timing (flow)"},
  sc.OFFLOAD, sc.MODEL,
}
local P = sc.params(spec)
local function per_stage(x)
  local t = {}
  for s = 1, 2 * P.p do t[s] = x / 2 end
  t[2 * P.p] = x / 2 * P.last
  return t
end
local prog = sc.autoschedule {
  p = P.p, m = P.m, v = 2, placement = "v",
  tf = per_stage(P.tf), tb = per_stage(P.tb), tw = per_stage(P.tw),
  tfb = P.tfb > 0 and per_stage(P.tfb) or nil, ta = per_stage(P.ta),
  tcomm = P.tcomm, w_keep = P.w_keep, mem = sc.mem_of(P, P.p),
  seed = P.seed, time_limit = P.time_limit, objective = P.objective,
  offload = sc.offload_of(P), recompute = sc.recompute_of(P), costs = sc.costs_of(P),
  vocab_par = sc.vocab_of(P), model = sc.model_of(P),
}
-- Never slower than a stdlib recipe of this placement under the same cap
-- and costs (the search is a heuristic; they are cheap to try). Not with
-- pairs or a heavier last stage, which they do not model.
if P.last == 1 and P.tfb == 0 and P.ta == 0 then
  prog = sc.fastest(prog, {"v-zb", "zb-v", "v-half", "v-min", "1f1b-v"}, P, spec,
                    {last = true, tfb = true, ta = true, seed = true, time_limit = true,
                     objective = true}, {mem = P.mem == 0 and P.p or nil})
end
return prog
