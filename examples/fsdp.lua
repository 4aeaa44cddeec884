-- fsdp.lua — a pipeline whose stages are sharded with FSDP over a
-- data-parallel group (docs/fsdp.md): UNSHARD gathers a stage's parameters
-- before its passes, RESHARD frees them, REDUCE_GRAD reduce-scatters the
-- gradients after the last weight gradient; the policy says where they go.
local P = sc.params {
  doc = "interleaved 1F1B with FSDP stages: compare the policies full, auto and derived",
  {"p", 4, "pipeline devices"},
  {"m", 8, "microbatches"},
  {"v", 4, "stages per device"},
  {"policy", "full", "where UNSHARD and RESHARD go: full, auto or derived"},
  {"max_active", 2, "the most stages unsharded at once on a device"},
  {"gather", 0.5, "time of one stage's all-gather"},
  {"scatter", -1.0, "time of one stage's gradient reduce-scatter (-1: the all-gather's)"},
  {"units", 2, "memory units of one stage's unsharded parameters"},
  {"mem", 0.0, "memory cap per device, in units (0: none)"},
  {"rule", "interleaved", "the schedule"},
}
return sc.program {
  p = P.p, m = P.m, v = P.v, rule = P.rule, tcomm = 0.1,
  mem = P.mem > 0 and P.mem or nil,
  placement = P.rule:match("%-v$") and "v" or nil, -- zb-v, 1f1b-v: the V placement
  fsdp = {dp = 8, units = P.units, time = P.gather, policy = P.policy,
          max_active = P.max_active, reduce_time = P.scatter >= 0 and P.scatter or nil},
}
