-- tradeoff.lua — the memory -> bubble trade-off of V-shape building blocks
-- (Pipeline Parallelism with Controllable Memory): for every memory budget
-- from p to 2p chunk activations, the block with the least bubble.
--   stagecraft examples/tradeoff.lua [p [m [tf tb tw]]]
--   stagecraft examples/tradeoff.lua 16 32
local p = math.tointeger(tonumber(arg[1] or 8))
local m = math.tointeger(tonumber(arg[2] or 2 * p))
local tf, tb, tw = tonumber(arg[3] or 1), tonumber(arg[4] or 1), tonumber(arg[5] or 1)
local rows = sc.tradeoff{p = p, m = m, tf = tf, tb = tb, tw = tw}
print(("p = %d, m = %d, costs (%g, %g, %g); memory in units (a chunk activation is %g)")
  :format(p, m, tf, tb, tw, rows[1].mem / rows[1].chunks))
print("chunks  budget  peak    bubble    k  af aB ab")
for _, r in ipairs(rows) do
  if r.bubble_rate then
    print(("%6d  %6g  %6g  %7.3f%%  %d  %d  %d  %d"):format(r.chunks, r.mem, r.peak,
      100 * r.bubble_rate, r.k, r.af, r.aB, r.ab))
  else
    print(("%6d  %6g  (no block fits)"):format(r.chunks, r.mem))
  end
end
