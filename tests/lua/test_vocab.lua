-- test_vocab.lua — Vocabulary Parallelism from the language (docs/vocab.md):
-- vocab_par on the stdlib schedules and on a user's order and block, the
-- model's costs and bytes in prog:sim(), the errors.
-- Run: ./stagecraft --trust tests/lua/test_vocab.lua
local T = dofile("tests/lua/harness.lua")

local paper = {p = 8, m = 32, layers = 32, hidden = 3072, seq = 2048, batch = 1}
local function with(t, u)
  local r = {}
  for k, v in pairs(t) do r[k] = v end
  for k, v in pairs(u or {}) do r[k] = v end
  return r
end

-- Every placement on 1F1B, ZB-H1 and V-Half: valid, and with a split
-- vocabulary every device equally busy and holding the same parameters.
for _, recipe in ipairs{"1f1b", "zb-h1", "v-half"} do
  for _, vp in ipairs{"baseline", "redis", "vocab-1", "vocab-2"} do
    local what = recipe .. " " .. vp
    local prog = sc.load(recipe, with(paper, {vocab = 128000, vocab_par = vp}))
    T.ok(prog:valid(), what .. " valid")
    local r = prog:sim()
    T.eq(r.vocab_par, vp, what .. " vocab_par")
    T.ok(r.param_bytes ~= nil and #r.param_bytes == 8, what .. " param_bytes")
    if vp == "vocab-1" or vp == "vocab-2" then
      local lo, hi = math.huge, 0
      for _, b in ipairs(r.busy) do lo, hi = math.min(lo, b), math.max(hi, b) end
      T.ok(hi / lo < 1.001, what .. " balanced busy " .. hi / lo)
      T.near(r.param_bytes[1], r.param_bytes[8], 1, what .. " balanced parameters")
      T.ok(r.coll_busy ~= nil, what .. " collectives' time")
    else
      local lo, hi = math.huge, 0
      for _, b in ipairs(r.param_bytes) do lo, hi = math.min(lo, b), math.max(hi, b) end
      T.ok(hi > lo * 1.5, what .. " the vocabulary layers unbalance the parameters")
      T.eq(r.coll_busy, nil, what .. " no collectives")
    end
  end
end

-- The gain over the baseline grows with the vocabulary.
local prev = 0
for _, V in ipairs{32000, 64000, 128000, 256000} do
  local b = sc.load("1f1b", with(paper, {vocab = V, vocab_par = "baseline"})):sim()
  local v = sc.load("1f1b", with(paper, {vocab = V, vocab_par = "vocab-1"})):sim()
  local gain = b.makespan / v.makespan
  T.ok(gain > prev, ("gain %g at V=%d grows"):format(gain, V))
  prev = gain
end

-- A user's order: the vocabulary passes written out.
local prog = sc.program { p = 2, m = 2, vocab_par = "vocab-2",
  vocab_costs = {s = 0.5, t = 0.5, e = 0.1, ew = 0.1, coll = 0.1, units = 0.25},
  order = { "E0 E1 F0 F1 S0 S1 T0 T1 BW0 BW1 EW0 EW1",
            "E0 E1 F0 S0 F1 S1 T0 T1 BW0 BW1 EW0 EW1" } }
T.ok(prog:valid(), "order with vocabulary passes")
T.eq(prog:order(1), "E0 E1 F0 S0 F1 S1 T0 T1 BW0 BW1 EW0 EW1", "order text")
T.ok(prog:dump():find("ALLREDUCE sum T mb1", 1, true) ~= nil, "vocab-2's gradient all-reduce")
-- The same orders without the passes: placed for the user.
local placed = sc.program { p = 2, m = 2, vocab_par = "vocab-1",
  order = { "F0 F1 BW0 BW1", "F0 BW0 F1 BW1" } }
T.ok(placed:order(0):find("S0", 1, true) ~= nil, "placed into an order")
T.ok(placed:valid(), "placed order valid")

-- A user's block with the vocabulary passes at offsets (slots).
local blk = sc.program { p = 2, m = 4, vocab_par = "vocab-1",
  block = { interval = 8, slots = true, F = {1, 2}, BW = {6, 4},
            S = {3, 3}, T = {4, 6}, E = {0, 0}, EW = {10, 9} } }
T.ok(blk:valid(), "block with vocabulary offsets")
T.eq(blk:order(1), "E0 F0 S0 BW0 T0 E1 EW0 F1 S1 BW1 T1 E2 EW1 F2 S2 BW2 T2 E3 EW2 F3 S3 BW3 T3 EW3",
  "block order")
T.fails(function()
  sc.program { p = 2, m = 4, vocab_par = "vocab-1",
    block = { interval = 8, slots = true, F = {1, 2}, BW = {6, 4}, S = {3, 3} } }
end, "block: give offsets for all of S, T, E and EW", "block partial offsets")
T.fails(function()
  sc.program { p = 2, m = 4, vocab_par = "vocab-1",
    block = { interval = 8, slots = true, F = {1, 2}, BW = {6, 4},
              S = {2, 3}, T = {4, 6}, E = {0, 0}, EW = {11, 9} } }
end, "block: S on d0 starts at 2, but F s1 it depends on is done only at 3", "block too early")

-- V-Half with a split vocabulary, the paper's way: the block's interval
-- grows (6 to 10 slots: E, S, T, EW), the block stays valid, its memory
-- balanced; the same V block placed by the list scheduler when vocab_par
-- is given to the program only.
for _, vp in ipairs{"vocab-1", "vocab-2"} do
  for _, p in ipairs{2, 3, 4, 5, 8} do
    local b = sc.v_block("half", {p = p, m = 3 * p, vocab_par = vp})
    T.eq(b.interval, 10, vp .. " p=" .. p .. " V-Half interval grows")
    T.ok(b:valid(), vp .. " p=" .. p .. " V-Half block valid")
    local o = b:offsets()
    T.ok(#o.S == p and #o.T == p and #o.E == p and #o.EW == p, vp .. " offsets per device")
    local r = b:program():sim()
    local lo, hi = math.huge, 0
    for _, x in ipairs(r.peak_memory) do lo, hi = math.min(lo, x), math.max(hi, x) end
    -- odd p (no spare slots before the first backward): one period later, one unit more
    T.eq(hi, (p + 2) // 2 + p % 2, vp .. " p=" .. p .. " V-Half peak")
    T.eq(lo, hi, vp .. " p=" .. p .. " memory balanced")
  end
end
local vh = sc.load("v-half", with(paper, {vocab = 256000, vocab_par = "vocab-1"}))
T.ok(vh:order(0):find("S", 1, true) ~= nil and vh:valid(), "v-half recipe with vocab-1")
local vl = sc.v_block("half", {p = 8, m = 32}):program { vocab_par = "vocab-1",
  model = {layers = 32, hidden = 3072, seq = 2048, batch = 1, vocab = 256000} }
T.ok(vl:valid(), "V-Half placed by the list scheduler")
T.ok(vl:sim().makespan < vh:sim().makespan, "list placement faster than the grown block")
T.ok(vl:sim().peak_memory_max > vh:sim().peak_memory_max, "the grown block holds less")

-- A cost file beats the model (docs/costs.md#loading-costs-into-a-recipe,
-- docs/vocab.md#the-model-flops-and-bytes): the stage passes take the file's
-- times; the vocabulary passes and the parameter bytes stay the model's.
do
  local c = {stagecraft_costs = 1, unit = "s", stages = 2, tf = {0.1, 0.1}, tb = {0.2, 0.2},
             tw = {0.1, 0.1}}
  local md = {layers = 4, hidden = 256, seq = 128, vocab = 1024, batch = 1}
  local a = sc.program { p = 2, m = 4, rule = "1f1b", vocab_par = "vocab-1", model = md, costs = c }
  local b = sc.program { p = 2, m = 4, rule = "1f1b", vocab_par = "vocab-1", model = md }
  local ra, rb = a:sim(), b:sim()
  T.near(ra.busy[1], 1.6, 1e-3, "cost file: 4 x (tf + tb + tw) of the file")
  T.ok(ra.busy[1] > 1.6, "cost file: the vocabulary passes keep the model's times")
  T.eq(ra.param_bytes[1], rb.param_bytes[1], "cost file: parameter bytes from the model")
  -- vocab_costs overrides the model's vocabulary pass times, field by field.
  local v = sc.program { p = 2, m = 4, rule = "1f1b", vocab_par = "vocab-1", model = md,
                         costs = c, vocab_costs = {s = 0.05} }
  T.near(v:sim().busy[1], 1.6 + 4 * 0.05, 1e-3, "vocab_costs.s over the model")
end

-- Errors.
T.fails(function() sc.program { p = 2, m = 2, vocab_par = "vocab-3", rule = "1f1b" } end,
  "program: unknown vocab_par 'vocab-3' (none, baseline, redis, vocab-1, vocab-2)", "bad name")
T.fails(function() sc.program { p = 2, m = 2, vocab_par = "redis", rule = "1f1b" } end,
  "vocab_par = 'redis' moves transformer layers by the model's costs", "redis without model")
T.fails(function() sc.load("zb-auto", {vocab_par = "vocab-1", time_limit = 0}) end,
  "vocab_par = 'vocab-1' cannot be placed on an automatic schedule", "auto")
T.fails(function() sc.load("1f1b", with(paper, {vocab = 1001, vocab_par = "vocab-1"})) end,
  "vocab = 1001 is not a multiple of 8", "split not dividing")
T.fails(function() sc.program { p = 2, m = 2, rule = "1f1b", model = {layers = 4, hidden = 8,
  seq = 4, vocab = 16, batch = 1, depth = 3} } end, "model: unknown field 'depth'", "model field")
T.fails(function() sc.program { p = 2, m = 1, order = {"F0 S0 BW0", "F0 BW0"} } end,
  "is a vocabulary pass, but the program's vocabulary is not split", "S without a split")

os.exit(T.done("vocab"))
