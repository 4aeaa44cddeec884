-- test_steps.lua — training steps from the language (docs/steps.md): the
-- fields of sc.program, sc.load's overrides, blocks and automatic schedules
-- with steps, prog:sim()'s per-step figures, errors at the recipe's line.
-- Run: ./stagecraft --trust tests/lua/test_steps.lua
local T = dofile("tests/lua/harness.lua")

local one = sc.program { p = 4, m = 8, rule = "zb-h2" }
T.eq(one.steps, 1, "default steps")
T.eq(one.optim_sync, "none", "default optim_sync")
T.eq(one:sim().steps, nil, "one step: no per-step figures")

local four = sc.program { p = 4, m = 8, rule = "zb-h2", steps = 4, optim_sync = "sync" }
T.eq(four.steps, 4, "steps field")
T.eq(four.optim_sync, "sync", "optim_sync field")
local r = four:sim()
T.eq(r.steps, 4, "sim: steps")
T.eq(r.optim_sync, "sync", "sim: optim_sync")
T.eq(#r.step_makespan, 4, "sim: step_makespan")
T.eq(#r.step_bubble_rate, 4, "sim: step_bubble_rate")
local sum = 0
for _, t in ipairs(r.step_makespan) do sum = sum + t end
T.near(sum, r.makespan, 1e-9, "the steps' makespans add up")
T.eq(r.rollback_cost, nil, "sync: no rollback path")

-- post-validation keeps ZB-H2's bubble; its rollback path has a cost.
local pv = sc.load("zb-h2", {steps = 4, optim_sync = "post-validation"}):sim()
T.near(pv.bubble_rate, one:sim().bubble_rate, 0.005, "post-validation keeps one step's bubble")
T.ok(pv.bubble_rate < r.bubble_rate, "sync is worse")
T.eq(#pv.rollback_cost, 4, "rollback_cost per step")
T.ok(pv.rollback_cost[1] > 0 and pv.rollback_cost[4] == 0, "the last step has no next warm-up")

-- Blocks and automatic schedules carry the fields to their programs.
local blk = sc.block { p = 2, interval = 3, F = {0, 1}, BW = {4, 2} }
T.eq(blk:program { m = 4, steps = 3 }.steps, 3, "blk:program steps")
local auto = sc.autoschedule { p = 2, m = 4, mem = 2, steps = 2, optim_sync = "post-validation",
                               time_limit = 0 }
T.eq(auto.steps, 2, "autoschedule steps")
T.eq(auto.optim_sync, "post-validation", "autoschedule optim_sync")
T.ok(auto:check(), "autoschedule with post-validation verifies")

-- Errors, at the line of the call.
T.fails(function() sc.program { p = 2, m = 2, rule = "1f1b", steps = 0 } end,
        "steps = 0 is out of range (1..100000)", "steps = 0")
T.fails(function() sc.program { p = 2, m = 2, rule = "1f1b", optim_sync = "eager" } end,
        "unknown optim_sync 'eager' (none, sync, post-validation)", "unknown optim_sync")
T.fails(function() sc.program { p = 2, m = 2, rule = "1f1b", step = 2 } end,
        "steps", "a typo of steps is named")
T.fails(function() sc.load("1f1b", {steps = "x"}) end, "parameter 'steps'", "sc.load steps")

os.exit(T.done("steps"))
