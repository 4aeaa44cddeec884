#!/bin/sh
# slices.sh — sequence slices (docs/slices.md, issue 49 item 3): the
# stdlib recipe seq1f1b against 1f1b (less activation memory at the same
# p and m, the closed forms at unit costs), the verifier's proof of the
# slice order on a stage (F forward, the backward in reverse) and its
# messages, the per-slice costs with a model (later slices cost more; the
# computation-wise split), the outputs that show slices (dump, JSON,
# trace, SVG), the bound, the refusals (PyTorch's CSV, the settings slices
# do not go with), and run --check of the decoder and the MLP sliced. Run
# from the repository root:
# sh tests/slices.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect

# 1. Done-when: less activation memory than 1f1b at the same p and m, and
# the closed forms at unit costs: makespan (m + (p-1)/K)·3 against
# (m + p - 1)·3, peak (p - 1 + K)/K against p on d0; the bound holds.
for pmk in 4:8:4 2:4:2 3:5:3 4:8:1 $(full && echo 8:16:4 6:12:8 5:7:2); do
  p=${pmk%%:*}; mk=${pmk#*:}; m=${mk%%:*}; k=${mk#*:}
  if $SC sim 1f1b -D p=$p -D m=$m --json >"$tmp/a.json" &&
  $SC sim seq1f1b -D p=$p -D m=$m -D slices=$k --json >"$tmp/b.json" 2>"$tmp/err" &&
  python3 - "$tmp/a.json" "$tmp/b.json" $p $m $k <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3]); p, m, k = map(int, sys.argv[3:])
assert b["microbatches"] == m and b.get("slices", 1) == k, (b["microbatches"], b.get("slices"))
assert abs(a["makespan"] - (m + p - 1) * 3) < 1e-9, a["makespan"]
assert abs(b["makespan"] - (m + (p - 1) / k) * 3) < 1e-9, b["makespan"]
assert abs(b["peak_memory"][0] - (p - 1 + k) / k) < 1e-12, b["peak_memory"]
assert k == 1 or b["peak_memory_max"] < a["peak_memory_max"], (b["peak_memory_max"], a["peak_memory_max"])
assert b["lower_bound"] <= b["makespan"] + 1e-9, (b["lower_bound"], b["makespan"])
PY
  then ok; else bad "seq1f1b p=$p m=$m slices=$k: makespan, memory or bound"; cat "$tmp/err" >&2; fi
done
expect 0 "slices        4 per microbatch" -- $SC sim seq1f1b -D p=4 -D m=8 -D slices=4
expect 0 "peak memory   1.75 units (max)" -- $SC sim seq1f1b -D p=4 -D m=8 -D slices=4
expect 0 "peak memory   1.75 units (max)" -- $SC sim seq1f1b -D p=4 -D m=8 -D mem=1.75
expect 5 "mem: d0 passes mem = 1.5 at F s0 mb1.2 (#12), holding 1.75 units" -- $SC sim seq1f1b -D p=4 -D m=8 -D mem=1.5

# 2. The verifier: the slice order on a stage, and its messages.
cat >"$tmp/good.lua" <<'LUA'
return sc.program { p = 2, m = 4, slices = 2, order = { "F0 F1 F2 BW1 F3 BW0 BW3 BW2", "F0 F1 BW1 BW0 F2 F3 BW3 BW2" } }
LUA
sed 's/"F0 F1 F2/"F1 F0 F2/' "$tmp/good.lua" >"$tmp/fwd.lua"
sed 's/BW1 BW0 F2 F3 BW3 BW2/BW0 BW1 F2 F3 BW3 BW2/' "$tmp/good.lua" >"$tmp/back.lua"
sed 's/slices = 2/slices = 1/' "$tmp/back.lua" >"$tmp/noslice.lua"
sed 's/slices = 2/slices = 3/' "$tmp/good.lua" >"$tmp/three.lua"
sed 's/slices = 2/slices = 0/' "$tmp/good.lua" >"$tmp/zero.lua"
sed 's/slices = 2/slices = 2, slice_split = "odd"/' "$tmp/good.lua" >"$tmp/split.lua"
expect 0 "" -- $SC check "$tmp/good.lua"
expect 5 "slice out of order on d0: F s0 mb0.1 (#0) needs F s0 mb0.0 first (its attention reads their keys and values), which comes later (#1)" -- $SC check "$tmp/fwd.lua"
expect 5 "slice out of order on d1: BW s1 mb0.0 (#2) needs BW s1 mb0.1 first (it adds to the gradient of their keys and values), which comes later (#3)" -- $SC check "$tmp/back.lua"
expect 0 "" -- $SC check "$tmp/noslice.lua"
sed 's/ BW3 BW2", "F0 F1 BW1/ BW3", "F0 F1 BW1/' "$tmp/good.lua" >"$tmp/miss.lua"
expect 5 "pass missing: B or BW of stage 0, microbatch 1.0 is on no device" -- $SC check "$tmp/miss.lua"
cat >"$tmp/dep.lua" <<'LUA'
return sc.program { p = 1, m = 2, v = 2, slices = 2, order = { "F0 F0.1 BW0.1 F1.1 F1 BW1.1 BW1 BW0" } }
LUA
expect 5 "dependency out of order on d0: F s1 mb0.1 (#3) needs F s0 mb0.1, which comes later (#4)" -- $SC check "$tmp/dep.lua"
expect 3 "slices = 3: the program's 4 records are not whole microbatches of 3 slices" -- $SC check "$tmp/three.lua"
expect 3 "program: 'slices' = 0 is out of range (1..1024)" -- $SC check "$tmp/zero.lua"
expect 3 "'slice_split' must be \"even\" or \"compute\"" -- $SC check "$tmp/split.lua"

# 3. Costs with a model: later slices cost more (attention over the earlier
# keys and values) with the even split; the computation-wise split evens F.
M="-D p=2 -D m=1 -D slices=4 -D layers=4 -D hidden=1024 -D seq=32768 -D vocab=1000 -D batch=1"
for split in even compute; do
  $SC export seq1f1b $M -D slice_split=$split --format json -o "$tmp/$split.json" || bad "export $split"
done
if python3 - "$tmp/even.json" "$tmp/compute.json" <<'PY'
import json, sys
ev, co = (json.load(open(f)) for f in sys.argv[1:])
def f_times(j):
    return [i["t1"] - i["t0"] for i in j["streams"][1] if i["op"] == "F"]
e, c = f_times(ev), f_times(co)
assert ev["slices"] == 4 and [i["slice"] for i in ev["streams"][1] if i["op"] == "F"] == [0, 1, 2, 3]
assert all(x < y for x, y in zip(e, e[1:])), e            # later slices cost more
assert max(c) - min(c) < 0.01 * max(c), c  # equal F cost (by the stages' mean share)
assert max(e) - min(e) > 0.5 * max(e), e
assert abs(sum(e) - sum(c)) < 1e-9 * sum(e), (sum(e), sum(c))  # the same microbatch
PY
then ok; else bad "per-slice costs with a model"; fi
for split in even compute; do
  if $SC sim seq1f1b -D p=4 -D m=8 -D layers=8 -D hidden=1024 -D seq=16384 -D vocab=1000 -D batch=1 \
       -D slice_split=$split --json >"$tmp/m.json" && python3 - "$tmp/m.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert 0 < j["lower_bound"] <= j["makespan"] * (1 + 1e-12), (j["lower_bound"], j["makespan"])
PY
  then ok; else bad "bound with a model, $split split"; fi
done

# 4. The outputs show slices: dump, JSON, trace, SVG.
$SC show seq1f1b -D p=2 -D m=2 -D slices=2 --dump >"$tmp/dump"
grep -q "2 microbatches, 2 slices each" "$tmp/dump" && grep -q "F s0 mb1.1" "$tmp/dump" &&
  grep -q "SEND act s1 mb0.1 -> d1" "$tmp/dump" && ok || bad "dump: slices"
$SC export seq1f1b -D p=2 -D m=2 -D slices=2 --format trace -o "$tmp/t.json" &&
  grep -q '"name": "BW s1 mb1.0"' "$tmp/t.json" && ok || bad "trace: slices"
$SC show seq1f1b -D p=2 -D m=2 -D slices=2 --svg "$tmp/a.svg" &&
  grep -q '>1.1</text>' "$tmp/a.svg" && ok || bad "svg: slices"

# 5. Refusals, one line each.
expect 3 "PyTorch's pipelining has no sequence slices" -- $SC export seq1f1b -D p=2 -D m=2 --format torch-csv
expect 3 "seq1f1b needs 1 <= slices <= 1024 (slices = 0)" -- $SC sim seq1f1b -D slices=0
expect 3 "slices = 4 (docs/slices.md) does not go with recompute yet" -- $SC check seq1f1b -D p=2 -D m=2 -D mem=1 -D recompute=all
expect 3 "run: slice 2 of 4 of seq = 3 tokens is empty" -- $SC run seq1f1b -D p=2 -D m=2 -D seq=3 --check
expect 0 "sequence slices" -- $SC sim seq1f1b -D p=2 -D m=2 --optimal

# 6. run trains the slices to the single-device reference (docs/slices.md#run):
# the decoder attends over the earlier slices' keys and values of its
# stage; predicted peak bytes equal measured on every device (runjson.py:
# loss, gradients within the tolerance, 1e-4 for slices, and the peaks).
M=tests/fixtures/models/run-llama.json
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
n=0
for a in "p=4:m=4:slices=4" $(full && echo "p=2:m=3:slices=3:steps=2" "p=4:m=8:slices=2:slice_split=compute" \
    "p=2:m=2:slices=8" "p=1:m=1:slices=2" "p=4:m=4:slices=4:steps=3:slice_split=compute" "mlp:p=4:m=4:slices=4"); do
  n=$((n+1)); model="--model $M"
  case $a in mlp:*) model=""; a=${a#mlp:} ;; esac
  if $SC run seq1f1b $(echo ":$a" | sed 's/:/ -D /g') $model --check --json >"$tmp/r$n.json" 2>"$tmp/e"; then
    later "$tmp/r$n.json" "run seq1f1b $a ${model:+--model} --check" --tol 1e-4
  else bad "run seq1f1b $a --check"; head -3 "$tmp/e" >&2; fi
done
# split B and W (W of a slice after the earlier slices' B), and two
# stages a device (v = 2: each stage's slices reach their own records)
cat >"$tmp/bw.lua" <<'LUA'
return sc.program { p = 2, m = 4, slices = 2,
  order = { "F0 F1 F2 B1 F3 B0 W1 B3 W0 B2 W3 W2", "F0 F1 B1 B0 F2 W1 F3 W0 B3 B2 W3 W2" } }
LUA
cat >"$tmp/v2.lua" <<'LUA'
return sc.program { p = 2, m = 4, v = 2, slices = 2,
  order = { "F0 F1 F0.1 F1.1 F2 F3 F2.1 F3.1 BW1.1 BW0.1 BW1 BW0 BW3.1 BW2.1 BW3 BW2",
            "F0 F1 F0.1 F1.1 BW1.1 BW0.1 F2 F3 F2.1 F3.1 BW1 BW0 BW3.1 BW2.1 BW3 BW2" } }
LUA
for f in bw v2; do
  if $SC run "$tmp/$f.lua" --model $M --check --json >"$tmp/$f.json" 2>"$tmp/e"; then
    later "$tmp/$f.json" "run $f.lua (slices) --check" --tol 1e-4
  else bad "run $f.lua (slices) --check"; head -3 "$tmp/e" >&2; fi
done
expect 0 "tolerance 1e-4: cuda or slices" -- $SC run seq1f1b -D p=2 -D m=2 -D slices=2 --model $M --check
# the slices' loss is the microbatches': bitwise at the first step
$SC run seq1f1b -D p=2 -D m=2 -D slices=1 --model $M --json >"$tmp/k1.json" &&
  $SC run seq1f1b -D p=2 -D m=2 -D slices=2 --model $M --json >"$tmp/k2.json" &&
  [ "$(grep -o '"loss_hex": "[^"]*"' "$tmp/k1.json")" = "$(grep -o '"loss_hex": "[^"]*"' "$tmp/k2.json")" ] &&
  ok || bad "slices 2 vs 1: the same loss"
grep -q '"microbatches": 2, "slices": 2' "$tmp/k2.json" && ok || bad "run --json: microbatches and slices"
if full && have_mpi; then
  timeout -k 10 120 mpirun -np 4 --oversubscribe $SC run seq1f1b -D p=4 -D m=4 -D slices=4 --model $M \
    --check --json >"$tmp/mpi.json" 2>"$tmp/e"
  grep -q '"transport": "mpi"' "$tmp/mpi.json" &&
    [ "$(grep -o '"loss_hex": "[^"]*"' "$tmp/mpi.json")" = "$(grep -o '"loss_hex": "[^"]*"' "$tmp/r1.json")" ] &&
    ok && later "$tmp/mpi.json" "mpirun -np 4 run seq1f1b --check" --tol 1e-4 || bad "mpirun -np 4 run seq1f1b slices=4"
fi
STUB=${BUILD:-build}/cudastub
if full && [ -f "$STUB/libstagecraft_cuda.so" ]; then
  STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" \
    SC_CUDASTUB=1 timeout 300 $SC run seq1f1b -D p=4 -D m=4 -D slices=4 --backend cuda --model $M --check \
    --json >"$tmp/stub.json" 2>"$tmp/e" && later "$tmp/stub.json" "stand-in: run seq1f1b --backend cuda --check" --tol 1e-4 --backend cuda ||
    { bad "stand-in: run seq1f1b slices=4"; head -3 "$tmp/e" >&2; }
  # overlapped pairs: the F of one microbatch's slice beside the BW of
  # another's, on two lanes, each with its own scratch (random delays)
  cat >"$tmp/pair.lua" <<'LUA'
return sc.program { p = 2, m = 4, slices = 2,
  order = { "F0 F1 F2 F3+BW1 BW0 BW3 BW2", "F0 F1 BW1 F2+BW0 F3 BW3 BW2" } }
LUA
  STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" \
    SC_CUDASTUB=1 SC_CUDASTUB_DELAY_US=50 timeout 300 $SC run "$tmp/pair.lua" --backend cuda --model $M \
    --check --json >"$tmp/pair.json" 2>"$tmp/e" && later "$tmp/pair.json" "stand-in: sliced pairs --check" \
    --tol 1e-4 --backend cuda || { bad "stand-in: run of sliced pairs"; head -3 "$tmp/e" >&2; }
fi
verdicts

echo "slices: $pass passed, $fail failed"
[ "$fail" = 0 ]
