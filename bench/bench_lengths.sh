#!/bin/sh
# bench_lengths.sh — microbatches of different lengths (docs/lengths.md,
# issue 49): for 1f1b, zb-h1 and v-zb at p=4, m=16, the makespan with
# microbatches of equal length, with a long-tailed distribution of lengths
# of the same total (examples/lengths16.txt: lognormal(6.6, 0.9), seed
# 2024, 117 to 3587 tokens) in the order given, and in the order
# sc.order_lengths plans (the order `plan -D lengths=FILE` keeps for its
# pick); the gain is given / planned. Costs: tf = tb = tw = 1 for the mean
# length, T_comm 0.05 (scaled by length too); "alike" has every length the
# mean (the same tokens in all). Then the same with a model
# (-D layers=32 hidden=4096 seq=1024: attention's quadratic term), in
# seconds.
SC=${SC:-./stagecraft}
L=examples/lengths16.txt
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/order.lua" <<'LUA'
local recipe, lengths, extra = arg[1], arg[2], arg[3]
local over = {p = 4, m = 16, tcomm = 0.05, lengths = lengths}
if extra == "model" then
  over = {p = 4, m = 16, layers = 32, hidden = 4096, seq = 1024, lengths = lengths}
end
local p = sc.load(recipe, over)
local mean, alike = 0, {}
for line in io.lines(lengths) do
  if not line:match("^#") then mean = mean + tonumber(line) / 16 end
end
for k, v in pairs(over) do alike[k] = v end
alike.lengths = {}
for i = 1, 16 do alike.lengths[i] = mean end
local u = sc.load(recipe, alike):sim().makespan
local given = p:sim().makespan
local o = sc.order_lengths(p)
print(("%-6s %-6s  alike %-9.5g given %-9.5g planned %-9.5g (%s%s)  gain %.3fx  bound %.5g"):format(
  recipe, extra or "units", u, given, o.makespan, o.order,
  o.swaps > 0 and (", " .. o.swaps .. " swaps") or "", given / o.makespan,
  p:sim().lower_bound or 0))
LUA
for kind in units model; do
  for r in 1f1b zb-h1 v-zb; do
    $SC --trust "$tmp/order.lua" "$r" "$L" "$kind" || exit 1
  done
done
