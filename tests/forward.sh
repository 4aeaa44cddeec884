#!/bin/sh
# forward.sh — forward-only programs (docs/guide.md#forward-only): the
# stdlib recipe forward and its exact bubble, the verifier's proof for
# forward-only and training programs, the lowering (activations only, no
# REDUCE or OPTIM), the memory figures, PyTorch CSV round trips and the
# refusal of a file that mixes forward-only and training passes
# (docs/interchange.md#forward-only), and run --check against the
# reference's forward loss (docs/run.md#check). Run from the repository
# root: sh tests/forward.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect, pycheck, verdicts
# mbp: makespan, bubble rate and peaks of sim's or import's --json (one line)
mbp() { sed -n 's/^{[^{]*"makespan": \([^,]*\), "bubble_rate": \([^,]*\),.*"peak_memory": \(\[[^]]*\]\).*/\1 \2 \3/p'; }

# 1. The bubble is (p-1)/(v*m+p-1) exactly (unit costs, tcomm 0), and the
# makespan v*m+p-1 chunks of 1/v, for several p, m, v.
for pmv in 2:4:1 4:8:1 3:5:1 4:8:2 2:4:3 8:16:2 3:6:4 $(full && echo 16:32:1 8:24:3 6:12:2); do
  p=${pmv%%:*}; mv=${pmv#*:}; m=${mv%%:*}; v=${mv#*:}
  if $SC sim forward -D p=$p -D m=$m -D v=$v --json >"$tmp/s.json" 2>"$tmp/err"; then
     pycheck "forward p=$p m=$m v=$v: bubble, makespan, bound or memory" "$(cat <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); p, m, v = map(int, sys.argv[2:])
want = (p - 1) / (v * m + p - 1)
assert abs(j["bubble_rate"] - want) < 1e-12, (j["bubble_rate"], want)
assert abs(j["makespan"] - (v * m + p - 1) / v) < 1e-9, j["makespan"]
assert abs(j["lower_bound"] - j["makespan"]) < 1e-9, (j["lower_bound"], j["makespan"])
# one record while its F runs: a stage's units, 1/v of a device's share
assert all(abs(x - 1 / v) < 1e-12 for x in j["peak_memory"]), j["peak_memory"]
# F, one SEND and one RECV per boundary crossing: no REDUCE, no OPTIM
S = p * v
assert j["instructions"] == S * m + 2 * (S - 1) * m, j["instructions"]
PY
)" "$tmp/s.json" $p $m $v
  else bad "forward p=$p m=$m v=$v: sim failed"; cat "$tmp/err" >&2; fi
done
expect 3 "forward with v > 1 needs m to be a multiple of p" -- $SC sim forward -D p=4 -D m=6 -D v=2
# Memory: one record while an F runs, whatever m; a cap below it is refused
# where the F starts, one at it holds.
expect 5 "mem: d0 passes mem = 0.5 at F s0 mb0 (#0), holding 1 units (peak 1)" -- $SC sim forward -D p=4 -D m=8 -D mem=0.5
expect 0 "peak memory   1 units (max)" -- $SC sim forward -D p=4 -D m=32 -D mem=1
expect 0 "peak memory   0.25 units (max)" -- $SC sim forward -D p=2 -D m=4 -D v=4
expect 0 "the exact model does not cover a forward-only program" -- $SC sim forward -D p=3 -D m=3 --optimal

# 2. The streams: F, SEND act, RECV act only.
$SC show forward -D p=2 -D m=4 -D v=3 --dump >"$tmp/dump"
if grep -qE 'B s|W s|BW s|REDUCE|OPTIM|grad' "$tmp/dump"; then bad "forward streams hold a backward"; grep -E 'B s|W s|REDUCE|OPTIM|grad' "$tmp/dump" | head -3 >&2
else ok; fi
[ "$(grep -c ' F s' "$tmp/dump")" = 24 ] && ok || bad "forward p=2 m=4 v=3: not 24 F"
expect 0 '"forward_only": true' -- $SC export forward -D p=2 -D m=2 --format json

# 3. The verifier: forward-only programs need F only; training programs
# still need their backward passes, with today's messages.
cat >"$tmp/fo.lua" <<'LUA'
return sc.program { p = 2, m = 2, forward_only = true, order = { "F0 F1", "F0 F1" } }
LUA
cat >"$tmp/train.lua" <<'LUA'
return sc.program { p = 2, m = 2, order = { "F0 F1", "F0 F1" } }
LUA
cat >"$tmp/missb.lua" <<'LUA'
return sc.program { p = 2, m = 2, order = { "F0 F1 BW0", "F0 BW0 F1 BW1" } }
LUA
cat >"$tmp/fobw.lua" <<'LUA'
return sc.program { p = 2, m = 2, forward_only = true, order = { "F0 F1 BW0 BW1", "F0 BW0 F1 BW1" } }
LUA
cat >"$tmp/fomiss.lua" <<'LUA'
return sc.program { p = 2, m = 2, forward_only = true, order = { "F0 F1", "F0" } }
LUA
cat >"$tmp/foorder.lua" <<'LUA'
return sc.program { p = 1, m = 1, v = 2, forward_only = true, order = { "F0.1 F0" } }
LUA
cat >"$tmp/focycle.lua" <<'LUA'
return sc.program { p = 2, m = 1, v = 2, forward_only = true, order = { "F0.1 F0", "F0 F0.1" } }
LUA
cat >"$tmp/fooff.lua" <<'LUA'
return sc.program { p = 2, m = 2, forward_only = true, offload = "all", order = { "F0 F1", "F0 F1" } }
LUA
expect 0 "" -- $SC check "$tmp/fo.lua"
expect 5 "pass missing: B or BW of stage 0, microbatch 0 is on no device (stage 0 is placed on d0)" -- $SC check "$tmp/train.lua"
expect 5 "pass missing: B or BW of stage 0, microbatch 1 is on no device (stage 0 is placed on d0)" -- $SC check "$tmp/missb.lua"
expect 5 "backward in a forward-only program: BW s0 mb0 is at d0 #2" -- $SC check "$tmp/fobw.lua"
expect 5 "pass missing: F of stage 1, microbatch 1 is on no device" -- $SC check "$tmp/fomiss.lua"
expect 5 "dependency out of order on d0: F s1 mb0 (#0) needs F s0 mb0, which comes later (#1)" -- $SC check "$tmp/foorder.lua"
expect 5 "dependency cycle across devices: d0 #0 (F s2 mb0) needs F s1 mb0 from d1" -- $SC check "$tmp/focycle.lua"
sed 's/forward_only/forward_onyl/' "$tmp/fo.lua" >"$tmp/typo.lua"
expect 3 "unknown field 'forward_onyl' (did you mean 'forward_only'?)" -- $SC check "$tmp/typo.lua"
sed 's/forward_only = true/forward_only = 1/' "$tmp/fo.lua" >"$tmp/num.lua"
expect 3 "'forward_only' must be true or false" -- $SC check "$tmp/num.lua"
expect 3 "does not go with training steps" -- $SC check forward -D p=2 -D m=2 -D steps=2
sed 's/order = .*}/rule = "gpipe" }/' "$tmp/fo.lua" >"$tmp/forule.lua"
expect 3 "program: forward_only = true needs an ordered program ('order')" -- $SC check "$tmp/forule.lua"
expect 3 "does not go with offload" -- $SC check "$tmp/fooff.lua"
expect 3 "does not go with offload" -- $SC check forward -D p=2 -D m=2 -D offload=all

# 4. PyTorch CSV: export, import back to the same streams and figures, in
# both dialects; a file with no backward anywhere is forward-only, a mix is
# refused.
strip='s/  \(new group\)$//; s/^ *[0-9]+  //; /^# stagecraft program/d; /^WAIT /d'
# (with tcomm > 0 the NCCL mode lowers as PyTorch does: lower/lower_torch.c)
for pmv in 2:4:1:0 3:4:1:0.25 2:4:2:0 4:8:2:0.25; do
  p=${pmv%%:*}; mv=${pmv#*:}; m=${mv%%:*}; vc=${mv#*:}; v=${vc%%:*}; c=${vc#*:}
  for fmt in torch-csv torch-csv-comms; do
    dia=compute_only; [ $fmt = torch-csv-comms ] && dia=compute_comms
    $SC export forward -D p=$p -D m=$m -D v=$v -D tcomm=$c --format $fmt -o "$tmp/f.csv" 2>/dev/null || bad "export forward $fmt"
    later --with tests/py/check_torch_csv.py "$tmp/f.csv" "PyTorch rules, forward p=$p m=$m v=$v tcomm=$c $fmt" $dia 2.15
    $SC show forward -D p=$p -D m=$m -D v=$v -D tcomm=$c --dump | sed -E "$strip" >"$tmp/a.dump"
    $SC import "$tmp/f.csv" -D tcomm=$c --dump 2>/dev/null | sed -E "$strip" >"$tmp/b.dump"
    if cmp -s "$tmp/a.dump" "$tmp/b.dump"; then ok
    elif [ $dia = compute_comms ] && [ "$(sort "$tmp/a.dump")" = "$(sort "$tmp/b.dump")" ]; then ok
    else bad "round trip forward p=$p m=$m v=$v tcomm=$c $fmt"; diff "$tmp/a.dump" "$tmp/b.dump" | head -5 >&2; fi
    # (a compute_comms file's runs of transfers are one group each, and its
    # waits stay: with tcomm > 0 it may simulate slower, docs/interchange.md)
    [ $dia = compute_comms ] && [ "$c" != 0 ] && continue
    a=$($SC sim forward -D p=$p -D m=$m -D v=$v -D tcomm=$c --json | mbp)
    b=$($SC import "$tmp/f.csv" -D tcomm=$c --json 2>/dev/null | mbp)
    [ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "forward p=$p m=$m v=$v tcomm=$c $fmt: sim '$a', import '$b'"
  done
done
# _ScheduleForwardOnly's actions: F of every microbatch in order, one stage per rank
printf '0F0,0F1,0F2\n,1F0,1F1,1F2\n' >"$tmp/pt.csv"
expect 0 "bubble rate   25.0000%" -- $SC import "$tmp/pt.csv"
printf '0F0,0SEND_F0,0F1,0SEND_F1,0WAIT_SEND_F0,0WAIT_SEND_F1\n1RECV_F0,1F0,1RECV_F1,1F1\n' >"$tmp/ptc.csv"
expect 0 "compute_comms" -- $SC import "$tmp/ptc.csv"
printf '0F0,0F1,,0B0,,0B1\n,1F0,1B0,1F1,1B1\n' >"$tmp/train.csv"
expect 0 "compute_only" -- $SC import "$tmp/train.csv"
printf '0F0,0F1,,0B0\n,1F0,1B0,1F1,1B1\n' >"$tmp/mix.csv"
expect 5 "row 1 (rank 0): missing microbatch: stage 0 has no backward (I and W, or B) of microbatch 1 (the file names microbatches 0..1; it mixes forward-only and training passes: a forward-only file has no backward anywhere)" -- $SC import "$tmp/mix.csv"
printf '0F0,0SEND_F0,0F1,0SEND_F1,0WAIT_SEND_F0,0WAIT_SEND_F1,0REDUCE_GRAD\n1RECV_F0,1F0,1RECV_F1,1F1,1REDUCE_GRAD\n' >"$tmp/red.csv"
expect 5 "row 1 (rank 0), cell 7 '0REDUCE_GRAD': REDUCE_GRAD in a forward-only file" -- $SC import "$tmp/red.csv"

# 5. run: F passes only on the CPU; --check compares the loss with the
# reference's forward loss (no gradients); measured peaks equal predicted.
for pmv in 2:4:1 $(full && echo 2:4:2 4:8:1 3:6:2); do
  p=${pmv%%:*}; mv=${pmv#*:}; m=${mv%%:*}; v=${mv#*:}
  if $SC run forward -D p=$p -D m=$m -D v=$v --check --json >"$tmp/r.json" 2>"$tmp/err"; then
     pycheck "run forward p=$p m=$m v=$v --check" 'import json, sys
j = json.load(open(sys.argv[1]))
assert j["forward_only"] is True and j["max_grad_rel_err"] is None, j
assert j["loss"] == j["reference_loss"] and j["bitwise"], (j["loss"], j["reference_loss"])
assert j["peak_activation_bytes"] == j["predicted_peak_activation_bytes"], j
' "$tmp/r.json"
  else bad "run forward p=$p m=$m v=$v --check"; head -3 "$tmp/err" >&2; fi
done
expect 0 "(forward only: no gradients)" -- $SC run forward -D p=2 -D m=4 --check
# the decoder (docs/run.md#the-decoder): the same, and zb-h1's loss
expect 0 "reference     5.40828714 (forward only: no gradients)" -- \
  $SC run forward -D p=4 -D m=8 --model tests/fixtures/models/run-llama.json --check
# the forward-only loss is the training reference's loss of the same model
a=$($SC run forward -D p=2 -D m=4 --json | sed -n 's/.*"loss": \([^,]*\),.*/\1/p')
b=$($SC run 1f1b -D p=2 -D m=4 --json | sed -n 's/.*"loss": \([^,]*\),.*/\1/p')
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "forward's loss $a, 1f1b's $b"
# MPI ranks (make test): the same loss and peaks as threads.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan_mpi.supp:print_suppressions=0:fast_unwind_on_malloc=0:use_tls=0"
if full && command -v mpirun >/dev/null &&
   timeout 60 mpirun -np 1 $SC run forward -D p=1 -D m=1 --json 2>/dev/null | grep -q '"transport": "mpi"'; then
  if timeout 120 mpirun -np 2 --oversubscribe $SC run forward -D p=2 -D m=4 -D v=2 --check --json >"$tmp/r.json" 2>"$tmp/err" &&
     python3 - "$tmp/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["transport"] == "mpi" and j["forward_only"] is True, j
assert j["loss"] == j["reference_loss"], (j["loss"], j["reference_loss"])
assert j["peak_activation_bytes"] == j["predicted_peak_activation_bytes"], j
PY
  then ok; else bad "mpirun run forward --check"; head -3 "$tmp/err" >&2; fi
fi

verdicts
echo "forward: $pass passed, $fail failed"
[ "$fail" = 0 ]
