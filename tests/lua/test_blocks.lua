-- test_blocks.lua — building blocks, lifespans, the V-shape family and the
-- block search (docs/blocks.md#building-blocks,
-- docs/blocks.md#blocks-as-values, docs/recipes.md). Run: stagecraft --trust
-- tests/lua/test_blocks.lua
local T = dofile("tests/lua/harness.lua")

local function sim(name, t) return sc.load(name, t):sim() end
local function bubble_time(r) return r.makespan - r.busy[1] end

-- The blocks of the stdlib recipes, as Block objects.
local function blocks(p)
  local b = {
    ["v-half"] = sc.v_block("half", {p = p}),
    ["v-min"] = sc.v_block("min", {p = p}),
    ["v-zb"] = (sc.block_search{p = p, mem = p}),
  }
  -- 1F1B as a block with B and W split and w_keep = 0.5 (B frees half).
  local F, B, W = {}, {}, {}
  for s = 0, p - 1 do F[s + 1] = s end
  for s = p - 1, 0, -1 do
    B[s + 1] = (s == p - 1) and F[s + 1] + 1 or B[s + 2] + 2
    W[s + 1] = B[s + 1] + 1
  end
  b["1f1b-split"] = sc.block{p = p, w_keep = 0.5, interval = 3, F = F, B = B, W = W}
  return b
end

-- Predicted peak (lifespans and interval) == simulated peak, per device.
for _, p in ipairs{4, 6, 8, 16} do
  for name, blk in pairs(blocks(p)) do
    local peak = blk:peak()
    local r = blk:program{m = 4 * p}:sim()
    local same = true
    for d = 1, p do same = same and math.abs(peak[d] - r.peak_memory[d]) < 1e-9 end
    T.ok(same, ("%s p=%d: predicted peak %s == simulated %s"):format(name, p,
      table.concat(peak, ","), table.concat(r.peak_memory, ",")))
    -- a short run never exceeds the steady state
    local short = blk:program{m = p}:sim()
    local within = true
    for d = 1, p do within = within and short.peak_memory[d] <= peak[d] + 1e-9 end
    T.ok(within, ("%s p=%d m=p: warm-up and cool-down within the block peak"):format(name, p))
    -- reordering never makes the squeeze longer
    local spec = {}
    local plain = blk:program{m = 4 * p, reorder = false}
    T.ok(r.makespan <= plain:sim().makespan + 1e-9, ("%s p=%d: reorder keeps or shortens the makespan"):format(name, p))
  end
end

-- Unit costs: the paper's memory figures, on every device.
for _, p in ipairs{4, 6, 8, 16} do
  for _, m in ipairs{2 * p, 4 * p} do
    local h, n = sim("v-half", {p = p, m = m}), sim("v-min", {p = p, m = m})
    for d = 1, p do
      T.eq(h.peak_memory[d], (p + 2) // 2, ("v-half p=%d m=%d d%d peak"):format(p, m, d - 1))
      T.ok(n.peak_memory[d] <= (p + 4) // 3, ("v-min p=%d m=%d d%d peak within (p+4)//3"):format(p, m, d - 1))
    end
    T.eq(n.peak_memory_max, (p + 4) // 3, ("v-min p=%d m=%d peak"):format(p, m))
    local z = sim("zb-v", {p = p, m = m})
    T.eq(z.bubble_rate, 0.0, ("zb-v p=%d m=%d bubble"):format(p, m))
    for d = 1, p do T.eq(z.peak_memory[d], p, ("zb-v p=%d m=%d d%d peak"):format(p, m, d - 1)) end
    local v = sim("v-zb", {p = p, m = m})
    T.ok(v.peak_memory_max <= p, ("v-zb p=%d m=%d peak %g <= p"):format(p, m, v.peak_memory_max))
    T.eq(v.makespan, z.makespan, ("v-zb p=%d m=%d makespan equals zb-v's"):format(p, m))
    T.eq(v.bubble_rate, 0.0, ("v-zb p=%d m=%d: zero bubble, as ZB-V"):format(p, m))
    local a = sc.load("zbv-auto", {p = p, m = m, time_limit = 0}):sim()
    T.eq(a.bubble_rate, 0.0, ("zbv-auto p=%d m=%d: the ZB-V greedy's zero bubble"):format(p, m))
    T.ok(a.peak_memory_max <= p, ("zbv-auto p=%d m=%d within p units"):format(p, m))
    local o = sim("1f1b-v", {p = p, m = m})
    for d = 1, p do T.eq(o.peak_memory[d], p, ("1f1b-v p=%d d%d peak"):format(p, d - 1)) end
    T.ok(o.bubble_rate < sim("1f1b", {p = p, m = m}).bubble_rate, ("1f1b-v p=%d m=%d beats 1f1b"):format(p, m))
  end
end

-- Bubble against 1F1B's (bubble time = makespan - busy), m = 4p, unit costs:
-- the figures docs/recipes.md quotes.
local want = { -- p: {v-half ratio, v-min ratio}
  [4] = {0.2778, 0.6111}, [8] = {0.4048, 0.6429}, [16] = {0.4556, 0.6556},
}
for p, w in pairs(want) do
  local base = bubble_time(sim("1f1b", {p = p, m = 4 * p}))
  local h = bubble_time(sim("v-half", {p = p, m = 4 * p})) / base
  local n = bubble_time(sim("v-min", {p = p, m = 4 * p})) / base
  T.near(h, w[1], 1e-4, ("v-half p=%d bubble / 1f1b's"):format(p))
  T.near(n, w[2], 1e-4, ("v-min p=%d bubble / 1f1b's"):format(p))
end

-- Unbalanced costs, p = 8, m = 32: bubble rates pinned; V-Min degrades most.
local pinned = {
  [1.5] = {["1f1b"] = 0.179487, ["zb-h1"] = 0.085714, ["v-half"] = 0.107570, ["v-min"] = 0.297806,
           ["v-zb"] = 0.030303, ["zb-v"] = 0.030303, ["1f1b-v"] = 0.135135},
  [0.5] = {["1f1b"] = 0.179487, ["zb-h1"] = 0.116022, ["v-half"] = 0.118457, ["v-min"] = 0.267735,
           ["v-zb"] = 0.039039, ["zb-v"] = 0.041916, ["1f1b-v"] = 0.116022},
}
for key, rows in pairs(pinned) do
  local costs = key == 1.5 and {tf = 1, tb = 1.5, tw = 1} or {tf = 1, tb = 1, tw = 0.5}
  local worst, worst_name = -1, nil
  for name, b in pairs(rows) do
    local t = {p = 8, m = 32}
    for k, v in pairs(costs) do t[k] = v end
    local r = sim(name, t)
    T.near(r.bubble_rate, b, 1e-6, ("%s at (%g, %g, %g)"):format(name, costs.tf, costs.tb, costs.tw))
    if name:sub(1, 2) == "v-" then
      local rise = r.bubble_rate - sim(name, {p = 8, m = 32}).bubble_rate
      if rise > worst then worst, worst_name = rise, name end
    end
  end
  T.eq(worst_name, "v-min", ("V-Min degrades most at (%g, %g, %g)"):format(costs.tf, costs.tb, costs.tw))
end

-- A user's own block gets the same reorder: V-Half written in the compact
-- form unrolls to exactly the v-half recipe's orders and figures, and the
-- reorder beats the plain squeeze of the same block.
for _, p in ipairs{4, 6} do
  local c = p % 2 == 0 and 3 or 0
  local blk = sc.block{p = p, placement = "v", interval = 6, slots = true,
    first = {F = {0, 3 * p - 2}, B = {6 * p + c - 2, 3 * p + c - 1}},
    delta = {F = {2, -1}, B = {-1, 2}}}
  local mine = blk:program{m = 2 * p}
  local ref = sc.load("v-half", {p = p, m = 2 * p})
  T.eq(mine:sim().makespan, ref:sim().makespan, ("own V-Half block p=%d: same makespan as v-half"):format(p))
  local same = true
  for d = 0, p - 1 do same = same and mine:order(d) == ref:order(d) end
  T.ok(same, ("own V-Half block p=%d: the same orders as v-half"):format(p))
  T.ok(mine:sim().makespan < blk:program{m = 2 * p, reorder = false}:sim().makespan,
    ("own V-Half block p=%d: the reorder shortens it"):format(p))
end

-- Lifespans of a small block: 2 devices, B and W split.
do
  local blk = sc.block{p = 2, interval = 3, F = {0, 1}, B = {4, 2}, W = {5, 3}}
  local ls = blk:lifespans()
  T.eq(#ls, 2, "a lifespan per stage")
  T.eq(ls[1].stage, 0, "stage"); T.eq(ls[1].device, 0, "device")
  T.eq(ls[1].start, 0.0, "start of s0"); T.eq(ls[1]["end"], 6.0, "end of s0 (W s0 ends at 6)")
  T.eq(ls[1].length, 6.0, "length of s0"); T.eq(ls[2].length, 3.0, "length of s1")
  local peak, mx = blk:peak()
  T.eq(peak[1], 2.0, "d0: a lifespan of 6 over an interval of 3 holds 2")
  T.eq(peak[2], 1.0, "d1 holds 1"); T.eq(mx, 2.0, "max peak")
  T.ok(tostring(blk):find("Block(2 devices, 2 stages, interval 3, peak 2 units)", 1, true), "tostring")
  T.eq(blk.interval, 3.0, "interval field")
  local r = blk:program{m = 6}:sim()
  T.eq(r.peak_memory[1], 2.0, "simulated d0"); T.eq(r.peak_memory[2], 1.0, "simulated d1")
  -- W placed automatically at the first free place after its B
  local auto = sc.block{p = 2, interval = 3, F = {0, 1}, B = {4, 2}}
  local off = auto:offsets()
  T.eq(off.W[1], 5.0, "W s0 placed after B s0"); T.eq(off.W[2], 3.0, "W s1 placed after B s1")
  -- compact form: first device and deltas
  local c = sc.block{p = 2, interval = 3, first = {F = {0}, B = {4}, W = {5}}, delta = {F = {1}, B = {-2}, W = {-2}}}
  local co = c:offsets()
  T.eq(table.concat(co.F, ","), "0.0,1.0", "compact F"); T.eq(table.concat(co.B, ","), "4.0,2.0", "compact B")
end

-- Memory limit: a block under mem keeps it; a block above it is refused.
do
  local r = sc.load("v-half", {p = 8, m = 32, mem = 6}):sim()
  T.ok(r.peak_memory_max <= 6, "v-half under mem = 6")
  T.fails(function() sc.load("v-min", {p = 6, m = 24, mem = 2}) end,
    "d0 needs 3 units of memory in the steady state, more than mem = 2", "mem below the block peak")
end

-- Invalid blocks: each class with its message.
local function bad(t, sub, what) T.fails(function() sc.block(t) end, sub, what) end
bad({p = 2, interval = 3, F = {0, 1}, B = {3, 2}, W = {5, 4}},
  "on d0, F s0 (at 0) and B s0 (at 3) collide modulo the interval 3", "collision")
bad({p = 2, interval = 3, F = {0, 1}, B = {4, 2}, W = {2, 3}},
  "W s0 starts at 2, but B s0 it depends on is done only at 5 (3 too early)", "dependency")
bad({p = 2, interval = 6, F = {0, 0.5}, B = {4, 1.5}, W = {5, 2.5}},
  "F s1 starts at 0.5, but F s0 it depends on is done only at 1 (0.5 too early)", "forward dependency")
bad({p = 2, interval = 0.5, F = {0, 1}, BW = {4, 2}}, "longer than the interval", "pass longer than T")
bad({p = 2, interval = -1, F = {0, 1}, BW = {4, 2}}, "interval must be a positive number", "bad interval")
bad({p = 2, interval = 3, B = {4, 2}, W = {5, 3}}, "offsets 'F' are missing", "no F")
bad({p = 2, interval = 3, F = {0, 1}, BW = {4, 2}, B = {4, 2}}, "not both", "BW and B")
bad({p = 2, interval = 3, F = {0, 1, 2}, BW = {4, 2}}, "lists 3 offsets, but 2 are needed", "list length")
bad({p = 2, interval = 3, F = {0, 1}, first = {F = {0}}, BW = {4, 2}}, "not both", "compact and per-stage")
bad({p = 2, interval = 3, first = {F = {0}, B = {"x"}}, delta = {F = {1}, B = {-2}}}, "is not a number", "compact bad number")
T.fails(function() sc.block_search{p = 4, mem = 1} end, "no block fits mem = 1", "search under too little memory")

-- The search: the best block within a budget, and the trade-off table.
do
  local blk, info = sc.block_search{p = 8, m = 16, mem = 5}
  T.ok(info.peak <= 5, "search respects mem")
  T.ok(info.candidates > 100, "search evaluated candidates")
  local _, mx = blk:peak()
  T.eq(mx, info.peak, "the block found has the peak reported")
  local rows = sc.tradeoff{p = 8, m = 16}
  T.eq(#rows, 9, "budgets p..2p chunk activations")
  T.eq(rows[1].chunks, 8.0, "first budget"); T.eq(rows[#rows].chunks, 16.0, "last budget")
  local mono = true
  for i = 2, #rows do
    if rows[i].bubble_rate and rows[i - 1].bubble_rate then
      mono = mono and rows[i].bubble_rate <= rows[i - 1].bubble_rate + 1e-12
    end
    mono = mono and (not rows[i].peak or rows[i].peak <= rows[i].mem + 1e-9)
  end
  T.ok(mono, "more memory never raises the best bubble; each peak within its budget")
  T.ok(rows[1].bubble_rate > rows[#rows].bubble_rate, "memory buys bubble")
end

-- The search hands its reordered orders of the block it picks on to
-- blk:program (schedule/block_hand.h): the same orders as the same block
-- built anew (no orders handed) and unrolled there, with and without a cap.
for _, t in ipairs{{p = 4, m = 8}, {p = 6, m = 20, tcomm = 0.3},
                   {p = 8, m = 32, tf = 29850, tb = 29767, tw = 18868, tcomm = 466},
                   {p = 8, m = 16, mem = 6, w_keep = 0.5}} do
  local blk = sc.block_search(t)
  local o, spec = blk:offsets(), {}
  for k, v in pairs(t) do spec[k] = v end
  spec.m, spec.mem = nil, nil
  spec.placement, spec.interval, spec.slots = "v", blk.interval, true
  spec.F, spec.B, spec.W = o.F, o.B, o.W
  local anew = sc.block(spec)
  for _, mem in ipairs{false, t.mem or false} do
    local a, b = blk:program{m = t.m, mem = mem}, anew:program{m = t.m, mem = mem}
    local same = true
    for d = 0, t.p - 1 do same = same and a:order(d) == b:order(d) end
    T.ok(same, ("handed orders p=%d m=%d mem=%s: a fresh unroll's"):format(t.p, t.m, tostring(mem)))
  end
end

-- Every V recipe verifies under random costs.
math.randomseed(7)
for i = 1, 20 do
  local t = {p = math.random(2, 6), tf = math.random() + 0.1, tb = math.random() + 0.1,
             tw = math.random() * 1.2, tcomm = math.random() * 0.3}
  t.m = 2 * t.p + math.random(0, 6)
  for _, n in ipairs{"v-half", "v-min", "v-zb", "zb-v", "1f1b-v"} do
    local ok, err = sc.load(n, t):valid()
    T.ok(ok, ("%s random costs #%d: %s"):format(n, i, tostring(err)))
  end
end

os.exit(T.done("blocks"))
