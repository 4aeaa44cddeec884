-- _shapes.lua — the Lua half of the module, second part: the shapes that
-- recipes build from (DualPipe's per-rank actions and their order text; the
-- Controllable Memory paper's V blocks, with a split vocabulary). Loaded by
-- luaopen_stagecraft after _prelude.lua, into the same module table.
local sc = ...
local caller_where, call_at = sc._caller_where, sc._call_at

-- DualPipe's step (deepseek-ai/DualPipe: DualPipeV.step, and DualPipe.step
-- per half of the ranks) for rank r of n ranks and m microbatches per
-- phase: a list of actions in order, each {kind, phase, i} with kind "F"
-- (the forward of the phase's i-th microbatch), "B" (its backward, W later),
-- "BW" (its full backward), "W" (the weight gradient of the oldest B still
-- waiting: first in, first out), or {"FB", p0, i, p1, j}: the forward of
-- phase p0's i-th overlapped with the full backward of phase p1's j-th.
-- With pairs = false a pair is its two passes in turn. Needs m >= 2n.
function sc.dualpipe_actions(n, r, m, pairs)
  local t, f, b, wq, wh = {}, {[0] = 0, [1] = 0}, {[0] = 0, [1] = 0}, {}, 1
  local function F(ph) t[#t + 1] = {"F", ph, f[ph]}; f[ph] = f[ph] + 1 end
  local function B(ph, zb) -- zb: B now, its W later
    t[#t + 1] = {zb and "B" or "BW", ph, b[ph]}
    if zb then wq[#wq + 1] = {"W", ph, b[ph]} end
    b[ph] = b[ph] + 1
  end
  local function W() t[#t + 1] = wq[wh]; wh = wh + 1 end
  local function FB(p0, p1)
    if pairs then
      t[#t + 1] = {"FB", p0, f[p0], p1, b[p1]}
      f[p0], b[p1] = f[p0] + 1, b[p1] + 1
    else
      F(p0); B(p1, false)
    end
  end
  for _ = 1, 2 * (n - r - 1) do F(0) end                 -- 1: nF0
  for _ = 1, r + 1 do F(0); F(1) end                     -- 2: nF0F1
  for _ = 1, n - r - 1 do B(1, true); W(); F(1) end      -- 3: nB1W1F1
  for i = 0, m - 2 * n + r do                            -- 4: nF0B1F1B0
    if i == 0 and r == n - 1 then F(0); B(1, false)      -- not overlapped there
    else FB(0, 1) end
    FB(1, 0)
  end
  for _ = 1, n - r - 1 do B(1, false); FB(1, 0) end      -- 5: nB1F1B0
  local zb, half = false, (r + 1) // 2                   -- 6: nB1B0, its second half split
  for i = 0, r do
    if i == half and r % 2 == 1 then zb = true end
    B(1, zb)
    if i == half and r % 2 == 0 then zb = true end
    B(0, zb)
  end
  for _ = 1, n - r - 1 do W(); B(0, true) end            -- 7: nWB0
  for _ = 1, r + 1 do W() end                            -- 8: nW
  return t
end

-- The order text of DualPipe's actions (sc.dualpipe_actions): phase ph's
-- i-th microbatch is mb(ph, i) on the device's chunk chunk(ph).
function sc.dualpipe_order(actions, chunk, mb)
  local t = {}
  local function pass(k, ph, i) return ("%s%d.%d"):format(k, mb(ph, i), chunk(ph)) end
  for _, a in ipairs(actions) do
    if a[1] == "FB" then
      t[#t + 1] = pass("F", a[2], a[3]) .. "+" .. pass("BW", a[4], a[5])
    else
      t[#t + 1] = pass(a[1], a[2], a[3])
    end
  end
  return t
end

-- The V-shape blocks of the Controllable Memory paper in their compact
-- form (slots of one pass, interval 6, W at the first free slot after its
-- B): sc.v_block("half" | "min", t) is sc.block of t (p, costs, ...) with
-- the V placement and the paper's offsets for device i:
--   min:  F = i,  f = 2p-i-1, B = 2p+c+i,    b = 4p+c-i-1  (c = 2 if 3 | p)
--   half: F = 2i, f = 3p-i-2, B = 3p+c+2i-1, b = 6p+c-i-2  (c = 3 if 2 | p)
-- (f, B, b: chunk 1's forward, chunk 1's backward, chunk 0's backward).
function sc.v_block(kind, t)
  if type(t) ~= "table" then
    sc._raise(sc._exits.arg, caller_where() .. "v_block: expected a table of fields (p, costs, ...) after the kind")
  end
  local p = t.p or t.devices
  if math.type(tonumber(p)) ~= "integer" or tonumber(p) < 1 then
    sc._raise(sc._exits.arg, caller_where() .. ("v_block: 'p' must be an integer >= 1 (got %s)"):format(tostring(p)))
  end
  p = tonumber(p)
  local spec = {}
  for k, v in pairs(t) do spec[k] = v end
  spec.placement, spec.slots, spec.interval = "v", true, 6
  if kind == "min" then
    local c = (p % 3 == 0) and 2 or 0
    spec.first = {F = {0, 2 * p - 1}, B = {4 * p + c - 1, 2 * p + c}}
    spec.delta = {F = {1, -1}, B = {-1, 1}}
  elseif kind == "half" then
    local c = (p % 2 == 0) and 3 or 0
    spec.first = {F = {0, 3 * p - 2}, B = {6 * p + c - 2, 3 * p + c - 1}}
    spec.delta = {F = {2, -1}, B = {-1, 2}}
  else
    sc._raise(sc._exits.arg, caller_where() .. ("v_block: unknown kind '%s' (half, min)"):format(tostring(kind)))
  end
  if (t.vocab_par == "vocab-1" or t.vocab_par == "vocab-2") and t.S == nil then
    spec._p = p
    return call_at(caller_where(), sc._v_vocab, spec)
  end
  return call_at(caller_where(), sc.block, spec)
end

-- A V block with a split vocabulary (docs/vocab.md#placing-the-passes): the interval grows
-- from 6 to 10 slots; every period of 6 keeps its passes and gains 4 slots
-- (6..9) for E, S, T and EW, each at the first of its device's free ones
-- after what it needs; the backward passes move whole periods later until
-- the last stage's B comes after every S (vocab-1) or T (vocab-2).
function sc._v_vocab(spec)
  local p = spec._p
  spec._p = nil
  local off = sc.block(spec):offsets()
  local S, N = 2 * p, 10
  local function map(o) return (o // 6) * N + o % 6 end
  local b = {}
  for k, v in pairs(spec) do b[k] = v end
  b.first, b.delta, b.interval = nil, nil, N
  b.F, b.B, b.W = {}, {}, {}
  for s = 1, S do b.F[s], b.B[s], b.W[s] = map(off.F[s]), map(off.B[s]), map(off.W[s]) end
  local used = {}
  for d = 1, p do used[d] = {[9] = true} end
  local function slot(d, t) -- the first free vocabulary slot of d at or after t
    t = math.ceil(t)
    while (t % N) < 6 or used[d][t % N] do t = t + 1 end
    used[d][t % N] = true
    return t
  end
  b.E, b.S, b.T, b.EW = {}, {}, {}, {}
  local sall, tall = 0, 0
  for d = 1, p do b.E[d] = b.F[1] - 1; b.S[d] = slot(d, b.F[S] + 1); sall = math.max(sall, b.S[d] + 1) end
  for d = 1, p do b.T[d] = slot(d, sall); tall = math.max(tall, b.T[d] + 1) end
  local ready = spec.vocab_par == "vocab-1" and sall or tall
  local shift = math.max(0, math.ceil((ready - b.B[S]) / N)) * N
  for s = 1, S do b.B[s], b.W[s] = b.B[s] + shift, b.W[s] + shift end
  for d = 1, p do b.EW[d] = slot(d, b.B[1] + 1) end
  return sc.block(b)
end
