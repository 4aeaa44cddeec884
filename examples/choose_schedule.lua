-- choose_schedule.lua — choosing a schedule at run time from measured costs:
-- the automatic schedule under the memory budget against the handcrafted
-- ones that fit it; the one with the smallest simulated makespan is returned.
--   stagecraft sim examples/choose_schedule.lua -D mem=12
local P = sc.params {
  doc = "pick the fastest of zb-auto, zb-h1 and 1f1b under a memory budget",
  {"p", 8, "pipeline devices"},
  {"m", 24, "microbatches"},
  {"mem", 8.0, "memory budget per device, in units"},
  {"head", 1.4, "cost factor of the last stage (output layer + loss)"},
  {"report", true, "say which schedule was chosen (a note on stderr)"},
}
-- measured per-stage times (ms); the last stage is slower
local tf, tb, tw = {}, {}, {}
for s = 1, P.p do
  local k = s == P.p and P.head or 1.0
  tf[s], tb[s], tw[s] = 2.985 * k, 2.977 * k, 1.887 * k
end
local common = {p = P.p, m = P.m, tf = tf, tb = tb, tw = tw, tcomm = 0.047, w_keep = 0.5}
local function with(t)
  local x = {}
  for k, v in pairs(common) do x[k] = v end
  for k, v in pairs(t) do x[k] = v end
  return x
end
local best, why
local function consider(name, prog)
  local r = prog:sim()
  if r.peak_memory_max <= P.mem and (not best or r.makespan < best:sim().makespan) then
    best, why = prog, name
  end
end
local auto, fig = sc.autoschedule(with {mem = P.mem, seed = 1, time_limit = 0.5})
consider("zb-auto (" .. fig.method .. ")", auto)
consider("zb-h1", sc.program(with {rule = "zb-h1"}))
consider("1f1b", sc.program(with {rule = "1f1b"}))
if P.report then
  sc.note("choose_schedule: %s, makespan %.6g ms", why, best:sim().makespan)
end
return best
