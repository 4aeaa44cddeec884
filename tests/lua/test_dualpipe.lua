-- test_dualpipe.lua — overlapped pairs in recipes (docs/guide.md#overlapped-pairs):
-- DualPipe's README table reproduced by the simulator, a test per row
-- (bubble, parameters per device, activations per device, at the same
-- number of stages PP); dualpipe and dualpipev verify for every p and m
-- they allow; pairs in ordered programs; copies of the model.
-- Run: ./stagecraft --trust tests/lua/test_dualpipe.lua
local T = dofile("tests/lua/harness.lua")

-- The README counts in chunks (one stage of PP): F, B (the full backward),
-- W, F&B (F overlapped with a full backward). A recipe's tf, tb, tw are a
-- device's share: with v stages per device a chunk takes tf / v.
local function bubble(r) -- the largest makespan - busy of any device
  local b = 0
  for d = 1, #r.busy do b = math.max(b, r.makespan - r.busy[d]) end
  return b
end

-- The README assumes F = B (the input gradient) and W <= F; at such costs
-- each row's formula is exact. (tf, tb, tw of a chunk; tfb: F+B overlapped,
-- 0 for none.)
local costs = {{1, 1, 1, 0}, {2, 2, 1, 0}, {1, 1, 0.5, 0}, {1, 1, 1, 1.5}, {2, 2, 1, 3},
               {1, 1, 0.5, 1.2}}
for _, PP in ipairs{4, 6, 8} do
  for _, c in ipairs(costs) do
    local F, Bi, W, FB = c[1], c[2], c[3], c[4]
    local B = Bi + W                        -- the README's B: a full backward
    local FandB = FB > 0 and FB + W or F + B -- a pair of F and a full backward
    local tag = ("PP=%d F=%g B=%g W=%g F&B=%g"):format(PP, F, B, W, FandB)
    -- 1F1B: (PP-1)(F+B), 1x, PP.
    local r = sc.load("1f1b", {p = PP, m = 2 * PP, tf = F, tb = Bi, tw = W}):sim()
    T.near(bubble(r), (PP - 1) * (F + B), 1e-9, "1F1B bubble " .. tag)
    T.eq(r.peak_memory_max, PP, "1F1B activations " .. tag)
    -- ZB1P: (PP-1)(F+B-2W), 1x, PP.
    r = sc.load("zb-h1", {p = PP, m = 2 * PP, tf = F, tb = Bi, tw = W}):sim()
    T.near(bubble(r), (PP - 1) * (F + B - 2 * W), 1e-9, "ZB1P bubble " .. tag)
    T.eq(r.peak_memory_max, PP, "ZB1P activations " .. tag)
    -- DualPipe: (PP/2-1)(F&B+B-3W), 2x, PP+1 on PP devices (a chunk is half a
    -- device's share: 2 stages, one per copy, each 0.5 unit).
    local o = {p = PP, m = 2 * PP + 2, tf = 2 * F, tb = 2 * Bi, tw = 2 * W, tfb = 2 * FB}
    r = sc.load("dualpipe", o):sim()
    T.near(bubble(r), (PP / 2 - 1) * (FandB + B - 3 * W), 1e-9, "DualPipe bubble " .. tag)
    T.near(r.param_share[1] * PP, 2, 1e-12, "DualPipe parameters 2x " .. tag)
    T.near(r.peak_memory_max * 2, PP + 1, 1e-12, "DualPipe activations " .. tag)
    T.eq(#r.busy, PP, "DualPipe devices " .. tag)
    -- DualPipeV: the same bubble, 2x, PP+1 on PP/2 devices.
    o.p, o.m = PP / 2, PP + 1
    r = sc.load("dualpipev", o):sim()
    T.near(bubble(r), (PP / 2 - 1) * (FandB + B - 3 * W), 1e-9, "DualPipeV bubble " .. tag)
    T.near(r.peak_memory_max * 2, PP + 1, 1e-12, "DualPipeV activations " .. tag)
    local prog = sc.load("dualpipev", o)
    T.eq(prog.stages // prog.devices, 2, "DualPipeV parameters 2x (two stages per device) " .. tag)
    T.eq(#r.busy, PP / 2, "DualPipeV devices " .. tag)
  end
end

-- Where F != B the README's formula is not this order's bubble (the
-- simulator's is exact for the order; docs/recipes.md#dualpipe-and-dualpipev).
local r = sc.load("dualpipev", {p = 4, m = 10, tf = 2, tb = 1, tw = 1}):sim()
T.near(bubble(r), 6, 1e-9, "DualPipeV, F = 2B: 2F per step of the warm-up, not the formula's 4.5")

-- Every p and m they allow verify; without pairs the same passes in turn.
for p = 1, 7 do
  for m = 2 * p, 2 * p + 3 do
    local prog = sc.load("dualpipev", {p = p, m = m})
    T.ok(prog:valid(), ("dualpipev p=%d m=%d verifies"):format(p, m))
    local seq = sc.load("dualpipev", {p = p, m = m, pairs = false})
    T.ok(seq:valid(), ("dualpipev p=%d m=%d without pairs verifies"):format(p, m))
  end
end
for _, p in ipairs{2, 4, 6, 8} do
  for m = 2 * p, 2 * p + 6, 2 do
    T.ok(sc.load("dualpipe", {p = p, m = m}):valid(), ("dualpipe p=%d m=%d verifies"):format(p, m))
  end
end
T.fails(function() sc.load("dualpipe", {p = 3, m = 6}) end, "dualpipe needs p and m even",
        "dualpipe p odd")
T.fails(function() sc.load("dualpipev", {p = 4, m = 7}) end, "dualpipev needs m >= 2p",
        "dualpipev m too small")

-- With a pair's gain and an all-to-all: pairs beat the same order run pass
-- by pass, which loses the all-to-all of every pass.
local with = sc.load("dualpipev", {p = 4, m = 16, tfb = 1.5, ta = 0.5}):sim()
local without = sc.load("dualpipev", {p = 4, m = 16, tfb = 1.5, ta = 0.5, pairs = false}):sim()
T.ok(with.makespan < without.makespan,
     ("pairs %g < pass by pass %g"):format(with.makespan, without.makespan))

-- Pairs in an ordered program: either half first, printed F first; a pair
-- of two forwards, or a W, is refused.
local prog = sc.program{p = 2, m = 2, tfb = 1.5, order = {"F0 BW0+F1 BW1", "F0 BW0 F1 BW1"}}
T.eq(prog:order(0), "F0 F1+BW0 BW1", "a pair's order text")
T.near(prog:sim().makespan, 11.5, 1e-12, "a pair's time: tfb + tw")
T.fails(function() sc.program{p = 1, m = 2, order = {"F0+F1 BW0 BW1"}} end,
        "a pair joins a forward with a backward", "F+F refused")
T.fails(function() sc.program{p = 1, m = 1, order = {"F0 B0+W0"}} end,
        "a pair joins a forward with a backward", "B+W refused")
T.fails(function() sc.program{p = 1, m = 1, order = {"F0+BW0"}}:check() end,
        "dependency inside a pair", "halves that depend on each other")

-- Copies: each microbatch through its own copy; a pass off its route is
-- refused; copies must divide the stages and the microbatches.
T.fails(function() sc.program{p = 2, m = 2, placement = "v", copies = 2,
                              order = {"F0 BW0 F1.1 BW1.1", "F0 F0.1 BW0.1 BW0 F1 BW1"}} end,
        "pass off its route", "a pass of another copy's stage")
T.fails(function() sc.program{p = 2, m = 3, placement = "v", copies = 2, order = {"", ""}} end,
        "must be multiples of it", "copies must divide m")

-- Pairing (docs/blocks.md#pairing): pairs = true joins neighbouring F and
-- B where a pair gains, never lengthening the dataflow timing, within mem.
local function count_pairs(prog)
  local n = 0
  for d = 0, prog.devices - 1 do
    for _ in prog:order(d):gmatch("%+") do n = n + 1 end
  end
  return n
end
local zbv = {p = 4, m = 16, placement = "v", rule = "zb-v", tfb = 1.5, mem = 4.5}
local plain = sc.program(zbv)
zbv.pairs = true
local paired = sc.program(zbv)
local rp, rq = plain:sim(), paired:sim()
T.ok(count_pairs(paired) > 0 and paired:valid(), "pairs = true joins pairs that verify")
T.ok(rq.makespan <= rp.makespan + 1e-9, ("paired %g <= plain %g"):format(rq.makespan, rp.makespan))
T.ok(rq.peak_memory_max <= 4.5 + 1e-9, "pairing keeps mem")
zbv.tfb = nil -- no gain: nothing joined
T.eq(count_pairs(sc.program(zbv)), 0, "no gain, no pairs")
-- The automatic scheduler pairs its winner when a pair gains.
local _, fa = sc.autoschedule{p = 4, m = 16, v = 2, placement = "v", mem = 4.5, time_limit = 0}
local pa, fb = sc.autoschedule{p = 4, m = 16, v = 2, placement = "v", mem = 4.5, time_limit = 0,
                               tfb = 1.5}
T.ok(fb.pairs > 0 and fa.pairs == 0, "autoschedule: pairs only when they gain")
T.ok(fb.makespan < fa.makespan, ("autoschedule with pairs %g < %g"):format(fb.makespan, fa.makespan))
T.ok(pa:sim().peak_memory_max <= 4.5 + 1e-9, "autoschedule's pairs within mem")
T.ok(sc.load("zbv-auto", {p = 4, m = 16, tfb = 1.5, mem = 4.5, time_limit = 0}):sim().makespan <
     sc.load("zbv-auto", {p = 4, m = 16, mem = 4.5, time_limit = 0}):sim().makespan,
     "zbv-auto -D tfb: pairs")
-- dualpipev best = true: stagecraft's pairs on DualPipeV's order, never
-- slower, faster where the pairs DualPipeV fixes do not pay (tfb near tf+tb).
for _, o in ipairs{{}, {tfb = 1.8}, {tfb = 1.2}, {tf = 2, tb = 1, tfb = 2.5}} do
  local a = {p = 4, m = 16}
  for k, v in pairs(o) do a[k] = v end
  local own = sc.load("dualpipev", a):sim()
  a.best = true
  local best = sc.load("dualpipev", a):sim()
  T.ok(best.makespan <= own.makespan + 1e-9 and best.peak_memory_max <= own.peak_memory_max + 1e-9,
       ("dualpipev best %g <= %g"):format(best.makespan, own.makespan))
end
T.ok(sc.load("dualpipev", {p = 4, m = 16, tfb = 1.8, best = true}):sim().makespan <
     sc.load("dualpipev", {p = 4, m = 16, tfb = 1.8}):sim().makespan - 0.5, "best beats DualPipeV at tfb = 1.8")

-- The block search on any placement of whole chunks (docs/blocks.md).
local wave = sc.program{p = 3, m = 1, v = 3, placement = "wave",
  order = {"F0 F0.1 F0.2 BW0.2 BW0.1 BW0", "F0 F0.1 F0.2 BW0.2 BW0.1 BW0", "F0 F0.1 F0.2 BW0.2 BW0.1 BW0"}}
T.eq(table.concat(wave.placement, ","), "0,1,2,2,1,0,0,1,2", "the wave placement")
for _, c in ipairs{{placement = "loop", v = 1}, {placement = "loop", v = 2}, {placement = "wave", v = 3},
                   {}, {tfb = 1.5}} do
  local t = {p = 4, m = 8, kmax = 3}
  for k, v in pairs(c) do t[k] = v end
  local blk, f = sc.block_search(t)
  local prog = blk:program()
  local r = prog:sim()
  local tag = ("block_search %s v=%s tfb=%s"):format(tostring(c.placement), tostring(c.v), tostring(c.tfb))
  T.ok(prog:valid() and r.peak_memory_max <= f.peak + 1e-9, tag .. ": verifies within its peak")
  T.eq(blk.interval, 3 * (prog.stages // prog.devices), tag .. ": interval 3v")
end
local vb = select(2, sc.block_search{p = 4, m = 8, kmax = 3})
T.eq(("%d %d %d %d"):format(vb.k, vb.af, vb.aB, vb.ab), "3 2 4 4", "the V search as before")
T.fails(function() sc.block_search{p = 4, m = 8, stages = 6, placement = {0, 1, 2, 3, 0, 1}} end,
        "whole chunks", "a placement of partial chunks")

-- Pairs in a block (docs/blocks.md#pairs-in-a-block): with overlap = true an
-- F and a backward of one device at offsets equal modulo the interval are
-- one pair (F of microbatch i + k with the backward of i); its time in the
-- collisions, the dependencies and the lifespans; without overlap they
-- collide.
local spec = {interval = 3, overlap = true, F = {0, 2.5}, BW = {6, 3.5}}
local bp = sc.program{p = 2, m = 6, tfb = 1.5, block = spec}
T.eq(bp:order(0), "F0 F1 F2+BW0 F3+BW1 F4+BW2 F5+BW3 BW4 BW5", "a block's pairs: F of i+2 with BW of i")
T.eq(bp:order(1), "F0 BW0 F1 BW1 F2 BW2 F3 BW3 F4 BW4 F5 BW5", "no pair on d1")
local ok, err = bp:valid()
T.ok(ok, "the block's program verifies: " .. tostring(err))
T.near(bp:sim().makespan, 21, 1e-12, "pairs timed as tfb + tw = 2.5")
local blk = sc.block{p = 2, tfb = 1.5, interval = 3, overlap = true, F = {0, 2.5}, BW = {6, 3.5}}
T.eq(blk.overlap, true, "a Block reads overlap")
local bpk = blk:peak()
local long = blk:program{m = 24}:sim()
T.ok(math.abs(bpk[1] - long.peak_memory[1]) < 1e-9 and math.abs(bpk[2] - long.peak_memory[2]) < 1e-9,
     ("a block's pairs: predicted peak %s == simulated %s"):format(table.concat(bpk, ","),
                                                             table.concat(long.peak_memory, ",")))
T.fails(function() sc.program{p = 2, m = 6, tfb = 1.5,
                              block = {interval = 3, F = {0, 2.5}, BW = {6, 3.5}}} end,
        "collide modulo the interval 3", "without overlap the halves collide")
T.fails(function() sc.program{p = 1, m = 4, block = {interval = 2, overlap = true,
                                                     F = {0}, BW = {2}}} end,
        "F s0 takes 3 in its pair, longer than the interval 2", "tfb + tw must fit the interval")
T.fails(function() sc.program{p = 1, m = 2, block = {interval = 4, overlap = true,
                                                     F = {0}, BW = {0}}} end,
        "it depends on", "halves of one microbatch depend on each other")
-- Slots: a pair of F and BW takes three slots; split B and W, the pair is F
-- with B and W is placed after it.
local sl = sc.program{p = 2, m = 6, block = {interval = 4, slots = true, overlap = true,
                                             F = {0, 3}, B = {8, 4}}}
T.eq(sl:order(0), "F0 F1 F2+B0 W0 F3+B1 W1 F4+B2 W2 F5+B3 W3 B4 W4 B5 W5", "pairs with W placed by slots")
T.ok((sl:valid()), "the slots block verifies")
T.fails(function() sc.program{p = 2, m = 2, vocab_par = "vocab-1",
                              block = {interval = 8, overlap = true, F = {0, 1}, BW = {8, 2},
                                       S = {3, 3}, T = {4, 4}, E = {5, 5}, EW = {6, 6}}} end,
        "overlap does not go with the offsets of the vocabulary passes", "no pairs beside vocabulary offsets")

os.exit(T.done("dualpipe"))
