#!/bin/sh
# bench_exact_grid.sh — the memory fill and drain (docs/bound.md#the-memory-drain)
# against every capped stdlib recipe's own makespan, over a grid: recipes x
# p in {2, 4, 8} x m in {8, 16, 32} x caps {2, 3, 4, 6, 8} x three cost sets.
# Prints each case that meets its cap (recipe, shape, makespan, memory_bound,
# "above" where the bound is above the makespan, "tight" within 1 %), then
# the counts (bench/exact.md). Takes minutes; prints figures, does not fail.
#   sh bench/bench_exact_grid.sh [build/stagecraft]
SC=${1:-build/stagecraft}
for r in 1f1b zb-h1 zb-h2 v-zb v-half v-min zbv-auto zb-auto interleaved gpipe seq1f1b; do
  for p in 2 4 8; do for m in 8 16 32; do for mem in 2 3 4 6 8; do
    for c in "0.63 0.016" "0 0.1" "0.5 0"; do
      # shellcheck disable=SC2086 # the cost set: two words
      set -- $c
      $SC sim "$r" -D p="$p" -D m="$m" -D mem="$mem" -D tw="$1" -D tcomm="$2" \
        --optimal=0.01 --json 2>/dev/null | tr -d '\n' |
        python3 -c "
import json, sys
t = sys.stdin.read()
if t:
    d = json.loads(t); b = d['optimal'].get('memory_bound') or 0; ms = d['makespan']
    print('$r p=$p m=$m mem=$mem tw=$1 tcomm=$2', ms, b,
          'above' if b > ms * (1 + 1e-9) else 'tight' if b > 0.99 * ms else '')"
    done
  done; done; done
done | awk '{ print; n++; if ($NF == "above") a++; if ($NF == "tight") t++ }
  END { printf "%d cases: memory_bound above the makespan in %d, within 1 %% in %d\n", n, a, t }'
