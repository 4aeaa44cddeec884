-- mymodel/schedule.lua — a schedule recipe as it ships beside a model, with
-- the costs measured on the machine it runs on (costs.json, next to it).
-- The receiver runs:   stagecraft check examples/mymodel/schedule.lua
--                      stagecraft sim   examples/mymodel/schedule.lua -D m=16
--
-- The loop (docs/costs.md): measure, keep the costs beside the recipe,
-- schedule for them, run and compare.
--   1. stagecraft run examples/mymodel/schedule.lua --profile examples/mymodel/costs.json
--   2. stagecraft sim examples/mymodel/schedule.lua      (scheduled for costs.json now)
--   3. stagecraft run examples/mymodel/schedule.lua --json   (measured beside predicted)
-- `-D costs=` schedules for the estimate below instead (no file).
--
-- The model: 8 residual blocks in 4 stages on 2 devices (2 chunks each, loop
-- placement); without measurements the last stage, which carries the output
-- layer and the loss, is estimated 40% slower than the others.
local P = sc.params {
  doc = "mymodel: 2 devices x 2 chunks, scheduled for its measured costs",
  {"m", 8, "microbatches per step"},
  {"mem", 4.0, "memory limit per device, in units of activation"},
  {"costs", "costs.json", "cost file of 'run --profile', beside this recipe ('': the estimate)"},
  {"head", 1.4, "estimated cost factor of the last stage (without a cost file)"},
  -- The model `run` trains (read by run itself, docs/run.md#the-model):
  {"hidden", 256, "model hidden size", when = "running"},
  {"seq", 64, "sequence length", when = "running"},
  {"layers", 8, "residual blocks", when = "running"},
}
local p, v = 2, 2
local tf, tb, tw = {}, {}, {}
for s = 1, p * v do
  local k = (s == p * v) and P.head or 1.0
  tf[s], tb[s], tw[s] = k, k, k
end
return sc.program {
  p = p, v = v, m = P.m, placement = "loop",
  tf = tf, tb = tb, tw = tw,
  costs = sc.costs_of(P),          -- the measured times win over the estimate
  auto = {mem = P.mem},            -- the automatic scheduler, for these costs
}
