-- test_random.lua — property: every dependency-consistent order lowers to
-- streams that verify (no deadlock), whatever the costs, zeros included.
-- Orders come from a random topological run over all passes; placements
-- are loop, v and random tables. Deterministic (fixed seed).
local T = dofile("tests/lua/harness.lua")
math.randomseed(20261120)

local function random_program(p, v, m, placement, split)
  local S = p * v
  local dev = {}
  for s = 0, S - 1 do
    if placement == "loop" then dev[s] = s % p
    elseif placement == "v" then dev[s] = s < p and s or 2 * p - 1 - s
    else dev[s] = placement[s + 1] end
  end
  local chunk, count = {}, {}
  for s = 0, S - 1 do
    local d = dev[s]; count[d] = (count[d] or 0); chunk[s] = count[d]; count[d] = count[d] + 1
  end
  -- done[kind][s][mb]
  local done = {F = {}, B = {}, W = {}}
  for _, k in pairs(done) do for s = 0, S - 1 do k[s] = {} end end
  local orders = {}
  for d = 0, p - 1 do orders[d] = {} end
  local function ready(kind, s, mb)
    if done[kind][s][mb] then return false end
    if kind == "F" then return s == 0 or done.F[s - 1][mb] end
    if kind == "B" then
      if not done.F[s][mb] then return false end
      return s == S - 1 or done.B[s + 1][mb]
    end
    return done.B[s][mb] == true
  end
  local total = S * m * (split and 3 or 2)
  for _ = 1, total do
    local cands = {}
    for s = 0, S - 1 do
      for mb = 0, m - 1 do
        for _, kind in ipairs(split and {"F", "B", "W"} or {"F", "B"}) do
          if ready(kind, s, mb) then cands[#cands + 1] = {kind, s, mb} end
        end
      end
    end
    local c = cands[math.random(#cands)]
    done[c[1]][c[2]][c[3]] = true
    local name = (c[1] == "B" and not split) and "BW" or c[1]
    local o = orders[dev[c[2]]]
    o[#o + 1] = name .. c[3] .. "." .. chunk[c[2]]
  end
  local list = {}
  for d = 0, p - 1 do list[d + 1] = table.concat(orders[d], " ") end
  local costs = {0, 0.5, 1, 2}
  local function pick() return costs[math.random(#costs)] end
  local tf, tb, tw = {}, {}, {}
  for s = 1, S do tf[s], tb[s], tw[s] = pick(), pick(), pick() end
  local tab = {}
  for s = 0, S - 1 do tab[s + 1] = dev[s] end
  return sc.program {p = p, m = m, v = v, placement = tab, tf = tf, tb = tb, tw = tw,
    tcomm = pick(), order = list}
end

local n = 0
for trial = 1, 300 do
  local p = math.random(1, 4)
  local v = math.random(1, 2)
  local m = math.random(1, 5)
  local placement = ({"loop", "v"})[math.random(2)]
  if v == 1 or (placement == "v" and v ~= 2) then placement = "loop" end
  if math.random(4) == 1 then
    placement = {}
    for s = 1, p * v do placement[s] = (s - 1) % p end
    for i = #placement, 2, -1 do local j = math.random(i); placement[i], placement[j] = placement[j], placement[i] end
  end
  local prog = random_program(p, v, m, placement, math.random(2) == 1)
  local ok, msg = prog:valid()
  T.ok(ok, ("trial %d (p=%d v=%d m=%d): %s"):format(trial, p, v, m, tostring(msg)))
  if ok then
    local r = prog:sim()
    T.ok(r.makespan >= 0 and r.bubble_rate >= -1e-12 and r.bubble_rate <= 1, "trial " .. trial .. " sim sane")
    n = n + 1
  end
end
T.eq(n, 300, "all random programs verified")
os.exit(T.done("random"))
