#!/bin/sh
# bench_fsdp.sh [SC] — FSDP's policies (docs/fsdp.md#policies) on a few
# schedules: the simulated step (makespan) and the peak memory of PyTorch
# 2.15's lookaheads full and auto against the derived policy, at
# max_active = 2 and 3, an all-gather of 0.5 and 2 (a pass is 1; each
# stage's gradient reduce-scatter, REDUCE_GRAD, as long: examples/fsdp.lua's
# scatter), 2 units of parameters per stage; and the derived policy under a
# cap (mem) where PyTorch's window of 3 does not fit. p = 4, m = 8, dp = 8
# (examples/fsdp.lua).
SC=${1:-./stagecraft}
row() { # label args...
  l=$1; shift
  out=$($SC sim examples/fsdp.lua "$@" 2>&1)
  ms=$(echo "$out" | awk '/^makespan/ {print $2}'); pk=$(echo "$out" | awk '/^peak memory/ {print $3}')
  [ -n "$ms" ] || { ms=refused; pk="($(echo "$out" | grep -o 'needs mem >= [0-9.]*'))"; }
  printf '| %s | %s | %s |\n' "$l" "$ms" "$pk"
}
for sched in "interleaved v=2" "interleaved v=4" "zb-h1 v=1" "zb-v v=2"; do
  set -- $sched; rule=$1; v=${2#v=}
  echo; echo "$rule, v = $v"; echo; echo "| policy, max_active, all-gather | step | peak |"; echo "|---|---|---|"
  for g in 0.5 2; do for ma in 2 3; do for pol in full auto derived; do
    row "$pol, $ma, $g" -D rule=$rule -D v=$v -D policy=$pol -D max_active=$ma -D gather=$g
  done; done; done
  for mem in 12 10; do for pol in full derived; do
    row "$pol, 3, 2, mem = $mem" -D rule=$rule -D v=$v -D policy=$pol -D max_active=3 -D gather=2 -D mem=$mem
  done; done
done
