#!/bin/sh
# costs.sh — cost files (docs/costs.md): `run --profile FILE` writes one that
# round-trips; with it `sim` predicts in seconds from exactly the file's
# times, every stdlib recipe takes `-D costs=FILE`, the automatic scheduler
# and the block search too; `run` prints the prediction beside the
# measurement; malformed or mismatched files are refused in one line naming
# the file and the field; the sandbox's file rules hold; threads, MPI ranks
# and --backend cuda (on the CUDA stand-in) all profile. No time is asserted
# against a bound (the machine may be loaded): predictions are checked
# against the file's own numbers. make check runs all of it but the reader
# of a trace of 20k steps. Run from the repository root: sh tests/costs.sh
SC=${SC:-./stagecraft}
case $SC in /*) ;; *) SC=$(pwd)/$SC ;; esac
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

. tests/lib.sh # ok, bad, expect, full

# py SCRIPT ARGS...: a python check (lib.sh's pycheck: one python3 at the
# end); its assertion message on failure.
py() { _pc=$(( ${_pc:-0} + 1 )); pycheck "python check $_pc" "$@"; }

M="-D hidden=32 -D seq=4 -D batch=2"   # a small model: this tests contracts, not speed

# 1. A profile: the file, and the run's own prediction beside its measurement.
expect 0 '"prediction_error"' -- $SC run 1f1b -D p=2 -D m=4 $M --profile "$tmp/c.json" \
  --profile-steps 2 --json
cp "$tmp/out" "$tmp/run.json"
py '
import json, math, sys
c = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
assert c["stagecraft_costs"] == 1 and c["unit"] == "s" and c["stages"] == 2 and c["devices"] == 2
for k in ("tf", "tb", "tw", "tbw", "optim"):
    assert len(c[k]) == 2 and all(x >= 0 for x in c[k]), k
    assert len(c["spread"][k]) == 2 and len(c["samples"][k]) == 2, k
assert c["samples"]["tf"] == [16, 16], c["samples"]  # 2 steps x 4 mb x (1f1b + its split variant)
assert c["tcomm"] >= 0 and c["transfers"][0]["bytes"] == 4 * 8 * 32
m = c["measured"]
assert m["recipe"] == "1f1b" and m["backend"] == "cpu" and m["steps"] == 2 and m["warmup_steps"] == 1
assert m["model"] == {"hidden": 32, "layers": 4, "vocab": 128, "seq": 4, "batch": 2, "seed": 1}
assert abs(m["predicted_step_time_s"] - r["predicted_step_time_s"]) <= 1e-6 * r["predicted_step_time_s"]
assert r["predicted_step_time_s"] > 0 and math.isfinite(r["prediction_error"])
assert abs(r["prediction_error"] - (r["step_time_s"] / r["predicted_step_time_s"] - 1)) < 1e-6
for k in ("measured_end_s", "predicted_end_s", "prediction_error_per_device"):
    assert len(r[k]) == 2, k
assert abs(max(r["measured_end_s"]) - r["step_time_s"]) <= 1e-8 * r["step_time_s"]
assert abs(m["step_time_s"] - r["step_time_s"]) <= 1e-8 * r["step_time_s"]
lc = r["largest_contributor"]
assert lc["what"] and lc["text"] and r["contributors"][0] == lc
d = sum(x["delta_s"] for x in r["contributors"])
crit = r["critical_device"]
assert abs(d - (r["measured_end_s"][crit] - r["predicted_end_s"][crit])) < 1e-6, d
assert sorted(p["kind"] for p in r["passes"]) == ["BW", "BW", "F", "F"]
assert r["profile"]["steps"] == 2 and len(r["profile"]["step_times_s"]) == 2
assert r["profile"]["variant"] == "split"
' "$tmp/c.json" "$tmp/run.json"

# 2. sim with the file predicts in seconds, from exactly the file's times:
#    every device's busy time is m x its stage's passes.
for r in zb-h1 1f1b zb-auto; do
  expect 0 '"time_unit": "s"' -- $SC sim $r -D p=2 -D m=4 -D costs="$tmp/c.json" --json
  py '
import json, sys
c = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2])); r = sys.argv[3]
# zb-auto keeps 1F1B (fused BW) where that is faster on these measured
# costs (sc.fastest): its busy time is then the fused one.
backs = {"1f1b": ["tbw"], "zb-h1": ["split"], "zb-auto": ["split", "tbw"]}[r]
for d in range(2):
    wants = [4 * (c["tf"][d] + (c["tbw"][d] if b == "tbw" else c["tb"][d] + c["tw"][d]))
             for b in backs]
    assert any(abs(s["busy"][d] - w) <= 1e-9 * w for w in wants), (r, d, s["busy"][d], wants)
assert s["predicted_step_time_s"] >= s["makespan"] > 0
' "$tmp/c.json" "$tmp/out" "$r"
done
expect 0 'makespan' -- $SC sim zb-h1 -D p=2 -D m=4 -D costs="$tmp/c.json"
grep -q ' s$' "$tmp/out" && grep -q '^step time .* s (predicted' "$tmp/out" && ok || bad "sim text in seconds"
expect 0 '1 column =' -- $SC show zb-h1 -D p=2 -D m=4 -D costs="$tmp/c.json"
grep -q 'makespan [0-9.e-]* s ' "$tmp/out" && ok || bad "show in seconds"

# 3. Every stdlib recipe takes -D costs=FILE (stage count permitting).
for r in $($SC list | awk '/^[a-z0-9]/ {print $1}'); do
  $SC list "$r" | grep -q '^ *costs ' && ok || bad "$r does not declare costs"
done
for r in gpipe 1f1b zb-h1 zb-h2 zb-auto; do
  expect 0 '"time_unit": "s"' -- $SC sim $r -D p=2 -D m=4 -D costs="$tmp/c.json" --json
done
# A V recipe has 2p stages: it needs a profile of its own.
expect 0 '"prediction_error"' -- $SC run zb-v -D p=2 -D m=4 $M --profile "$tmp/v.json" \
  --profile-steps 1 --warmup 0 --json
for r in zb-v v-half zbv-auto 1f1b-v; do
  expect 0 '"time_unit": "s"' -- $SC sim $r -D p=2 -D m=4 -D costs="$tmp/v.json" --json
done

# 4. run with a cost file: the prediction beside the measurement; --trace
#    puts both timelines in seconds.
expect 0 '"predicted_step_time_s"' -- $SC run zb-h1 -D p=2 -D m=4 $M -D costs="$tmp/c.json" \
  --json --trace "$tmp/t.json"
grep -qF 'predicted (seconds, from the measured costs)' "$tmp/t.json" && ok || bad "trace in seconds"
expect 0 'largest' -- $SC run zb-h1 -D p=2 -D m=4 $M -D costs="$tmp/c.json"
grep -q '^predicted  *[0-9.]* s (' "$tmp/out" && ok || bad "run text prediction"
# Without a cost file nothing changes: abstract units, no prediction in seconds.
expect 0 '"simulated_makespan"' -- $SC run zb-h1 -D p=2 -D m=4 $M --json
grep -qF 'predicted_step_time_s' "$tmp/out" && bad "prediction without costs" || ok

# 5. Malformed or mismatched files: one line naming the file and the field.
good='"stagecraft_costs": 1, "unit": "s", "devices": 2, "stages": 2'
printf '{%s, "tf": [1, 2], "tb": [1, -2], "tw": [1, 1]}' "$good" >"$tmp/neg.json"
printf '{%s, "tf": [1, 2], "tb": [1, 2]}' "$good" >"$tmp/miss.json"
printf '{%s, "tf": [1, 2], "tb": [1, 2], "tw": [1, 1], "tcom": 1}' "$good" >"$tmp/typo.json"
printf '{%s, "tf": [1, 2], "tb": [1, 2], "tw": [1, 1],}' "$good" >"$tmp/json.json"
expect 3 "neg.json: 'tb'[1]: a time must be >= 0" -- $SC sim zb-h1 -D p=2 -D costs="$tmp/neg.json"
expect 3 "miss.json: 'tw' is missing" -- $SC sim zb-h1 -D p=2 -D costs="$tmp/miss.json"
expect 3 "typo.json: unknown field 'tcom'" -- $SC sim zb-h1 -D p=2 -D costs="$tmp/typo.json"
expect 3 "json.json: line 1: expected" -- $SC check 1f1b -D p=2 -D costs="$tmp/json.json"
expect 3 "c.json: 'stages' is 2, but the program has 4 stages" -- \
  $SC sim zb-h1 -D p=4 -D costs="$tmp/c.json"
expect 3 "nope.json: No such file" -- $SC sim zb-h1 -D p=2 -D costs="$tmp/nope.json"
for f in neg miss typo; do
  [ "$(wc -l <"$tmp/err")" = 1 ] && ok || bad "$f: more than one line"
done
# A recipe of one's own that takes sc.COSTS but builds its program from
# P.tf and the others without passing `costs`: the file still applies (in
# seconds, its stage count checked), never seconds-sized scalars alone.
printf '%s\n' 'local P = sc.params { {"p", 3, "devices"}, {"m", 6, "microbatches"}, sc.COSTS }' \
  'return sc.program { p = P.p, m = P.m, tf = P.tf, tb = P.tb, tw = P.tw, tcomm = P.tcomm,' \
  '  rule = "zb-h1" }' >"$tmp/own.lua"
expect 3 "own.lua:2: cost file $tmp/c.json: 'stages' is 2, but the program has 3 stages" -- \
  $SC sim "$tmp/own.lua" -D costs="$tmp/c.json"
expect 0 "makespan" -- $SC sim "$tmp/own.lua" -D p=2 -D costs="$tmp/c.json" --json
py '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["time_unit"] == "s", j.get("time_unit")
' "$tmp/out"
expect 3 "stages' is 2, but the program has 4" -- $SC run zb-h1 -D p=4 -D costs="$tmp/c.json"
expect 2 "--profile needs a FILE" -- $SC run zb-h1 --profile
expect 2 "--profile-steps needs" -- $SC run zb-h1 --profile "$tmp/x.json" --profile-steps 0
expect 2 "cannot write '$tmp/no/dir/x.json': No such file or directory" -- $SC run zb-h1 -D p=2 -D m=2 $M --profile "$tmp/no/dir/x.json" \
  --profile-steps 1 --warmup 0
[ -e "$tmp/no" ] && bad "a half-written cost file" || ok

# 6. In recipes: sc.costs(FILE) reads files in the recipe's folder; a file
#    named with -D costs= on the command line is readable wherever it lies;
#    anything else is refused by the sandbox.
mkdir -p "$tmp/model"
cp "$tmp/c.json" "$tmp/model/costs.json"
cat >"$tmp/model/r.lua" <<'EOF'
local P = sc.params{{"p", 2, "devices"}, {"m", 4, "microbatches"}, sc.COSTS}
local C = sc.costs_of(P) or sc.costs("costs.json")
return sc.program{p = P.p, m = P.m, costs = C, rule = "zb-h1"}
EOF
cat >"$tmp/model/evil.lua" <<'EOF'
return sc.program{p = 2, m = 4, costs = sc.costs("../c.json"), rule = "zb-h1"}
EOF
expect 0 '"time_unit": "s"' -- $SC sim "$tmp/model/r.lua" --json
expect 0 '"time_unit": "s"' -- $SC sim "$tmp/model/r.lua" -D costs="$tmp/c.json" --json
expect 10 "sandbox: sc.costs('../c.json'): a recipe may read files in its own folder only" -- \
  $SC sim "$tmp/model/evil.lua"
(cd "$tmp/model" && $SC check evil.lua --trust) >/dev/null 2>&1 && ok || bad "--trust reads any file"
# A script reads cost files like any file of its own; the table has the fields.
cat >"$tmp/read.lua" <<EOF
local C = sc.costs("$tmp/c.json")
print(C.file, C.stages, #C.tf, C.unit, C.measured.recipe, type(C.tcomm))
local blk, fig = sc.block_search{p = 2, m = 4, costs = sc.costs("$tmp/v.json"), mem = 100}
print("search", fig.makespan > 0)
EOF
expect 0 "$tmp/c.json	2	2	s	1f1b	number" -- $SC --trust "$tmp/read.lua"
grep -q '^search	true' "$tmp/out" && ok || bad "block search with costs"

# 7. Offload: the host copies are measured, and the link's ratio follows.
expect 0 '"prediction_error"' -- $SC run gis -D p=2 -D m=4 -D v=2 $M -D offload=all --profile \
  "$tmp/o.json" --profile-steps 1 --warmup 0 --json
py '
import json, sys
c = json.load(open(sys.argv[1]))
dirs = sorted(h["direction"] for h in c["host_copies"])
assert "to_host" in dirs and "to_device" in dirs, dirs
assert all(h["bytes"] > 0 and h["samples"] > 0 for h in c["host_copies"])
assert c["offload_ratio"] >= 0
' "$tmp/o.json"

# 8. Under MPI every rank measures the same figures; rank 0 writes the file.
if command -v mpirun >/dev/null 2>&1; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  # Under AddressSanitizer: Open MPI's own allocations are not ours (runtime.sh)
  export OMPI_MCA_mca_base_component_disable_dlclose=1
  export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan_mpi.supp:print_suppressions=0:fast_unwind_on_malloc=0"
  expect 0 '"prediction_error"' -- mpirun -np 2 --oversubscribe $SC run zb-h1 -D p=2 -D m=4 $M \
    --profile "$tmp/mpi.json" --profile-steps 1 --warmup 0 --json
  py '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["measured"]["devices_as"] == "MPI ranks" and c["measured"]["transport"] == "mpi"
assert len(c["tbw"]) == 2 and c["samples"]["tf"] == [8, 8], c["samples"]
' "$tmp/mpi.json"
fi

# 9. The loop of examples/mymodel, on a copy: profile beside the recipe,
#    schedule for it, run against the prediction.
mkdir -p "$tmp/mine" && cp examples/mymodel/schedule.lua "$tmp/mine/"
expect 0 'profile' -- $SC run "$tmp/mine/schedule.lua" -D costs= -D hidden=32 -D seq=4 \
  --profile "$tmp/mine/costs.json" --profile-steps 1
expect 0 ' s (predicted' -- $SC sim "$tmp/mine/schedule.lua"
expect 0 '"prediction_error"' -- $SC run "$tmp/mine/schedule.lua" -D hidden=32 -D seq=4 --json
expect 0 'makespan' -- $SC sim examples/mymodel/schedule.lua       # the costs.json it ships
expect 0 'makespan' -- $SC sim examples/mymodel/schedule.lua -D costs=   # the estimate

# 9b. Several training steps (docs/steps.md): a profile's samples and the
#     comparison key the streams' microbatch numbers (m x steps); the
#     rollback path of post-validation is no sample (it is skipped, no time).
for sync in none post-validation; do
  expect 0 '"prediction_error"' -- $SC run zb-h1 -D p=2 -D m=4 -D steps=3 -D optim_sync=$sync $M \
    --profile "$tmp/steps.json" --profile-steps 2 --json
  cp "$tmp/out" "$tmp/steps_run.json"
  py '
import json, math, sys
c = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
# 2 timed runs x 3 steps x 4 mb, and 2 x 4 of the fused variant (one step)
assert c["samples"]["tf"] == [32, 32] and c["samples"]["tb"] == [24, 24], c["samples"]
assert c["samples"]["tbw"] == [8, 8] and c["samples"]["optim"] == [8, 8], c["samples"]
assert all(x > 0 for k in ("tf", "tb", "tw", "tbw") for x in c[k]), c
d = sum(x["delta_s"] for x in r["contributors"]); crit = r["critical_device"]
assert abs(d - (r["measured_end_s"][crit] - r["predicted_end_s"][crit])) < 1e-6, d
assert math.isfinite(r["prediction_error"])
' "$tmp/steps.json" "$tmp/steps_run.json"
  expect 0 '"prediction_error"' -- $SC run zb-h1 -D p=2 -D m=4 -D steps=3 -D optim_sync=$sync $M \
    -D costs="$tmp/steps.json" --json
done

# 10. --backend cuda: a profile reads only the executor's timestamps, so it
#     runs through the real CUDA module on the CPU stand-in of CUDA (the test
#     double of tests/cudastub; its times are the host's, not a GPU's).
STUB=${BUILD:-$(dirname "$SC")}/cudastub
if [ -f "$STUB/libstagecraft_cuda.so" ] && [ -f "$STUB/libsc_ncclstub.so" ]; then
  for gpus in 1 2; do
    expect 0 '"prediction_error"' -- env STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" \
      STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" SC_CUDASTUB=1 SC_CUDASTUB_GPUS=$gpus \
      $SC run zb-h1 -D p=2 -D m=4 $M --backend cuda --profile "$tmp/cuda$gpus.json" \
      --profile-steps 2 --json
    py '
import json, sys
c = json.load(open(sys.argv[1])); want = sys.argv[2]
assert c["measured"]["backend"] == "cuda" and c["measured"]["transport"] == want, c["measured"]
for k in ("tf", "tb", "tw", "tbw", "optim"):
    assert len(c[k]) == 2 and all(x > 0 for x in c[k]), (k, c[k])
assert c["samples"]["tf"] == [16, 16] and c["tcomm"] >= 0
' "$tmp/cuda$gpus.json" "$([ $gpus = 1 ] && echo cuda-local || echo nccl)"
  done
else
  echo "costs: the CUDA stand-in is not built ($STUB): --backend cuda not profiled here"
fi

# 11. A split vocabulary (docs/vocab.md#running-the-split-model): the profile measures S, T, E, EW
#     on every device and fits a line to the collectives; a recipe's program
#     with the file predicts from them (sim: the vocabulary passes' busy time
#     is m x their medians); a plain program takes the same file (the stage
#     passes only).
expect 0 '"prediction_error"' -- $SC run 1f1b -D p=2 -D m=4 $M -D vocab_par=vocab-1 \
  --profile "$tmp/v1.json" --profile-steps 3 --json
py '
import json, sys
c = json.load(open(sys.argv[1]))
for k in ("ts", "tt", "te", "tew"):
    assert len(c[k]) == 2 and all(x > 0 for x in c[k]), (k, c[k])
    # 3 timed steps x 4 microbatches, and as many of the variant with B and W split
    assert c["samples"][k] == [24, 24] and len(c["spread"][k]) == 2, (k, c["samples"])
col = c["collectives"]
assert col["latency"] >= 0 and col["per_byte"] >= 0 and col["latency"] + col["per_byte"] > 0, col
assert col["samples"] == 2 * 3 * 4 * 6, col   # the same x 6 collectives per microbatch
' "$tmp/v1.json"
expect 0 '"time_unit": "s"' -- $SC sim 1f1b -D p=2 -D m=4 -D vocab_par=vocab-1 -D costs="$tmp/v1.json" --json
py '
import json, sys
c = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
for d in range(2):
    want = 4 * (c["tf"][d] + c["tbw"][d] + c["ts"][d] + c["tt"][d] + c["te"][d] + c["tew"][d])
    assert abs(s["busy"][d] - want) <= 1e-9 * want, (d, s["busy"][d], want)
' "$tmp/v1.json" "$tmp/out"
expect 0 'makespan' -- $SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/v1.json"
expect 0 '"prediction_error"' -- $SC run 1f1b -D p=2 -D m=2 $M -D steps=2 -D optim_sync=sync \
  --profile "$tmp/sync.json" --profile-steps 2 --json
grep -q '"collectives": {"latency": ' "$tmp/sync.json" && ok || bad "sync's all-reduces: no collectives line"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['devices']=4; json.dump(c,open(sys.argv[2],'w'))" "$tmp/v1.json" "$tmp/v4.json"
expect 3 "v4.json: 'ts': 2 values for 4 devices" -- $SC sim 1f1b -D p=2 -D m=4 -D vocab_par=vocab-1 -D costs="$tmp/v4.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); del c['devices']; json.dump(c,open(sys.argv[2],'w'))" "$tmp/v1.json" "$tmp/vn.json"
expect 3 "vn.json: 'ts' holds one time per device: 'devices' is missing" -- $SC sim 1f1b -D p=2 -D costs="$tmp/vn.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['collectives']['latency']=-1; json.dump(c,open(sys.argv[2],'w'))" "$tmp/v1.json" "$tmp/vc.json"
expect 3 "vc.json: 'collectives'.latency: a time must be >= 0" -- $SC sim 1f1b -D p=2 -D costs="$tmp/vc.json"

# A cost file knows its model (docs/costs.md#the-model): another model's is
# refused, naming both, unless --force-costs; a noisy one is warned about,
# with the figure; the unit's bytes serve caps in bytes.
cat >"$tmp/c256.json" <<'EOF2'
{"stagecraft_costs": 1, "unit": "s", "devices": 2, "stages": 2, "placement": [0, 1],
 "tf": [0.03, 0.04], "tb": [0.03, 0.04], "tw": [0.03, 0.04],
 "spread": {"tf": [0.001, 0.001], "tb": [0.01, 0.001], "tw": [0.001, 0.001]},
 "measured": {"recipe": "zb-h1", "backend": "cpu", "unit_bytes": 1000000,
              "model": {"hidden": 256, "layers": 4, "vocab": 128, "seq": 64, "batch": 2, "seed": 1}}}
EOF2
expect 3 "cost file $tmp/c256.json was measured on another model: hidden 256, layers 4, vocab 128, seq 64, batch 2 (run --profile of zb-h1 on cpu); this run's is hidden 64, layers 4, vocab 128, seq 64, batch 2" -- \
  $SC run zb-h1 -D p=2 -D m=4 -D hidden=64 -D seq=64 -D costs="$tmp/c256.json"
expect 0 "(used anyway: --force-costs)" -- $SC run zb-h1 -D p=2 -D m=4 -D hidden=64 -D seq=64 -D costs="$tmp/c256.json" --force-costs
expect 0 "predicted" -- $SC run zb-h1 -D p=2 -D m=4 -D hidden=256 -D seq=64 -D costs="$tmp/c256.json"
grep -q "another model" "$tmp/err" && bad "the same model was refused" || ok
expect 3 "this program's is hidden 64" -- $SC sim zb-h1 -D p=2 -D m=4 -D layers=4 -D hidden=64 -D seq=64 -D costs="$tmp/c256.json"
expect 0 "its profile is noisy: tb of s0 varies by 33% of its median" -- $SC sim zb-h1 -D p=2 -D m=4 -D costs="$tmp/c256.json"
[ "$(grep -c 'is noisy' "$tmp/err")" = 1 ] && ok || bad "the noisy file is warned about once"
# mem in bytes by the file's unit: 2.5 MB is 2.5 units.
expect 0 '"peak_memory_max": 2' -- $SC sim zb-h1 -D p=2 -D m=4 -D costs="$tmp/c256.json" -D mem=2500000B --json
expect 2 "--profile-spread needs a share of the median in (0, 1]" -- $SC run zb-h1 --profile "$tmp/x.json" --profile-spread 2
expect 0 "peak activation bytes" -- $SC run zb-h1 -D p=2 -D m=4 -D hidden=32 --profile "$tmp/ps.json" --profile-steps 1 --profile-spread 1
python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['measured']; assert m['unit_bytes'] > 0 and m['model']['hidden'] == 32, m" "$tmp/ps.json" && ok || bad "a profile records the unit's bytes and the model"
# Rounds (docs/costs.md#profiling): without --profile-steps, more steps until
# every figure's median is known (or a cap), on the threads' CPU clocks; a
# figure left unstable is one warning line each, with the why.
expect 2 "--profile-max-steps must be at least --profile-steps" -- $SC run zb-h1 --profile "$tmp/x.json" --profile-steps 5 --profile-max-steps 2
expect 2 "--profile-max-time needs a number of seconds" -- $SC run zb-h1 --profile "$tmp/x.json" --profile-max-time 0
expect 0 '"rounds"' -- $SC run zb-h1 -D p=2 -D m=4 $M --profile "$tmp/r.json" --profile-max-steps 10 --json
py "
import json, sys
p = json.load(open(sys.argv[1]))['profile']; err = open(sys.argv[2]).read()
assert p['target'] == 0.02 and p['clock'] == 'cpu' and 1 <= p['rounds'] <= 2, p
assert len(p['step_times_s']) == p['steps'] and p['steps'] in (5, 10), p
left = [u['figure'] for u in p['unstable']]
assert (p['stopped_by'] == 'max_steps') == bool(left), p
assert err.count('is not stable') == len(left) and all(f + ' is not stable' in err for f in left), err
" "$tmp/out" "$tmp/err"
expect 0 '"rounds": 1' -- $SC run zb-h1 -D p=2 -D m=4 $M --profile "$tmp/r.json" --profile-steps 2 --json
expect 0 '"clock": "wall"' -- $SC run zb-h1 -D p=2 -D m=4 $M --profile "$tmp/r.json" --profile-steps 2 --profile-clock wall --json
grep -q 'without their core' "$tmp/out" && bad "a wall-clock profile splits off the cores" || ok
expect 2 "--profile-clock needs cpu" -- $SC run zb-h1 --profile "$tmp/x.json" --profile-clock gpu

# Costs from a PyTorch trace (docs/costs.md#costs-from-a-pytorch-trace): the
# fixture of tests/torch/trace.py (zb-h1, p = 2, m = 4, 2 steps; trimmed to
# the spans and their first operators) becomes a cost file that sim loads;
# bad traces are refused in one line naming the file and the event.
FX=tests/torch/fixtures/trace
$SC costs --from-trace $FX/rank0.json $FX/rank1.json -o "$tmp/tr.json" && ok || bad "costs --from-trace of the fixture"
py '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["stages"] == 2 and c["devices"] == 2 and c["placement"] == [0, 1], c
for k in ("tf", "tb", "tw"):
    assert c["samples"][k] == [8, 8] and all(x >= 0 for x in c[k]), (k, c)
assert "tbw" not in c and c["tcomm"] > 0, c
m = c["measured"]
assert m["steps"] == 2 and m["microbatches"] == 4 and m["devices_as"] == "ranks", m
assert "warmup_steps" not in m and "predicted_step_time_s" not in m, m
' "$tmp/tr.json"
expect 0 '"predicted_step_time_s"' -- $SC sim zb-h1 -D p=2 -D m=4 -D costs="$tmp/tr.json" --json
# One merged trace (the ranks as processes of one file) gives the same file.
python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
a["traceEvents"] += b["traceEvents"]; del a["distributedInfo"]
json.dump(a, open(sys.argv[3], "w"))' $FX/rank0.json $FX/rank1.json "$tmp/merged.json"
$SC costs --from-trace "$tmp/merged.json" -o "$tmp/tm.json" && ok || bad "costs --from-trace of a merged trace"
py '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("tf", "tb", "tw", "tcomm", "placement"):
    assert a[k] == b[k], (k, a[k], b[k])' "$tmp/tr.json" "$tmp/tm.json"
expect 0 '"stagecraft_costs": 1' -- $SC costs --from-trace $FX/rank0.json $FX/rank1.json
# A trace with B only (1F1B): tbw measured, tb and tw half of it, noted.
for r in 0 1; do
  python3 -c '
import json, re, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [dict(e, name=re.sub(r"^PP:(\d)I", r"PP:\1B", e["name"])) for e in t["traceEvents"]
                    if not re.match(r"PP:\dW", e["name"])]
json.dump(t, open(sys.argv[2], "w"))' $FX/rank$r.json "$tmp/b$r.json"
done
expect 0 "note: stage 0 ran its backward as B only (no I and W): its tb and tw are half of B each" -- \
  $SC costs --from-trace "$tmp/b0.json" "$tmp/b1.json" -o "$tmp/tb.json"
py '
import json, sys
c = json.load(open(sys.argv[1]))
assert all(abs(b - w) < 1e-12 and abs(2 * b - bw) < 1e-9 for b, w, bw in zip(c["tb"], c["tw"], c["tbw"])), c' "$tmp/tb.json"
# Every PyTorch 2.15 schedule class (tests/torch/fixtures/trace/<class>:
# recorded by tests/torch/trace.py at p = 2, m = 4, 2 steps, trimmed):
# both waits of a stage that sends both ways, UNSHARD, RESHARD and
# REDUCE_GRAD (counted, no FSDP), OVERLAP_F_B pairs (tfb), the
# single-stage classes (GPipe's spans; Schedule1F1B with with_stack=True),
# and stagecraft's own interleaved export. The schedule PyTorch ran
# (schedule.csv, its compute_comms dump) is timed by import -D costs=.
for cls in ScheduleInterleaved1F1B ScheduleLoopedBFS ScheduleInterleavedZeroBubble \
           ScheduleZBVZeroBubble ScheduleDualPipeV ScheduleGPipe Schedule1F1B+stack interleaved; do
  d=$FX/$cls
  if ! $SC costs --from-trace "$d/rank0.json" "$d/rank1.json" -o "$tmp/$cls.json" 2>"$tmp/err"; then
    bad "costs --from-trace of $cls: $(cat "$tmp/err")"; continue
  fi
  py '
import json, sys
cls, c = sys.argv[1], json.load(open(sys.argv[2]))
single = cls.startswith(("ScheduleGPipe", "Schedule1F1B"))
S = 2 if single else 4
vee = cls in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV")
assert c["stages"] == S and c["devices"] == 2, c
assert c["placement"] == ([0, 1, 1, 0] if vee else [s % 2 for s in range(S)]), c["placement"]
split = cls in ("ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble", "ScheduleDualPipeV")
sm = c["samples"]
if cls == "ScheduleDualPipeV":  # F and B of some microbatches in pairs: tfb
    assert all(0 < n < 8 for n in sm["tf"]) and sm["tfb"] and all(n > 0 for n in sm["tfb"]), sm
else:
    assert sm["tf"] == [8] * S and sm["tb" if split else "tbw"] == [8] * S, sm
    assert "tfb" not in c, c
assert all(x > 0 for x in c["tf"] + c["tw"]) and all(x >= 0 for x in c["tb"]), c
ms = c["measured"]
assert ms["steps"] == 2 and ms["microbatches"] == 4 and ms["fsdp"] is False, ms
assert ("single-stage" in ms["what"]) == single, ms
' "$cls" "$tmp/$cls.json"
  [ -f "$d/schedule.csv" ] &&
    expect 0 '"time_unit": "s"' -- $SC import "$d/schedule.csv" -D costs="$tmp/$cls.json" --json
  # costs --check: the schedule rebuilt from the traces' first step is the
  # one PyTorch dumped (the same prediction as import of its dump with the
  # same costs), and every step is measured.
  py '
import json, os, subprocess, sys
sc, cls, d, f = sys.argv[1:5]
run = lambda *a: subprocess.run([sc, *a], capture_output=True, text=True, check=True).stdout
k = json.loads(run("costs", "--check", d + "/rank0.json", d + "/rank1.json", "--json"))
c = json.load(open(f))
assert k["predicted_s"] > 0 and len(k["steps_s"]) == 2 and all(x > 0 for x in k["steps_s"]), k
assert abs(k["median_s"] - c["measured"]["step_time_s"]) < 1e-9, (k, c["measured"])
assert abs(k["error"] - (k["median_s"] / k["predicted_s"] - 1)) < 1e-5, k
assert (k["devices"], k["microbatches"]) == (2, 4), k
# each step again with the costs of its own spans: a prediction per step, near its step
assert len(k["own_s"]) == 2 and all(x > 0 for x in k["own_s"]), k
e = sorted(m / o - 1 for m, o in zip(k["steps_s"], k["own_s"]))
assert abs(k["own_error"] - (e[0] + e[1]) / 2) < 1e-5, k
if os.path.exists(d + "/schedule.csv"):
    imp = json.loads(run("import", d + "/schedule.csv", "-D", "costs=" + f, "--json"))
    assert abs(imp["predicted_step_time_s"] - k["predicted_s"]) < 1e-9, (imp["predicted_step_time_s"], k)
if cls.startswith("Schedule1F1B"):  # its transfers, from the posts in _batch_p2p
    assert c["tcomm"] > 0 and c["samples"]["tcomm"] > 0, c
' "$SC" "$cls" "$d" "$tmp/$cls.json"
done
expect 0 "median     " -- $SC costs --check "$FX/Schedule1F1B+stack/rank0.json" "$FX/Schedule1F1B+stack/rank1.json"
$SC costs --check "$FX/ScheduleGPipe/rank0.json" "$FX/ScheduleGPipe/rank1.json" -o "$tmp/gp.json" >/dev/null 2>&1 &&
  cmp -s "$tmp/gp.json" "$tmp/ScheduleGPipe.json" && ok || bad "costs --check -o writes the cost file --from-trace writes"
# FSDP on (ScheduleInterleaved1F1B+fsdp: FSDP2 over two replicas of the
# 2-rank pipeline, replica 0's traces): its UNSHARD gathers, so the file
# has FSDP's all-gather and reduce-scatter, which an FSDP program takes
# (import of what ran: its UNSHARD and REDUCE_GRAD timed by them).
F=$FX/ScheduleInterleaved1F1B+fsdp
$SC costs --from-trace "$F/rank0.json" "$F/rank1.json" -o "$tmp/fsdp.json" 2>/dev/null && ok || bad "costs --from-trace of an FSDP trace"
py '
import json, subprocess, sys
sc, f, csv = sys.argv[1:4]
c = json.load(open(f))
assert c["measured"]["fsdp"] is True and c["fsdp_time"] > 0 and c["reduce_time"] > 0, c
assert c["samples"]["fsdp_time"] >= 8 and c["samples"]["reduce_time"] == 8, c["samples"]
def step(path):
    out = subprocess.run([sc, "import", csv, "-D", "costs=" + path, "--json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["predicted_step_time_s"]
slow = dict(c, fsdp_time=1.0, reduce_time=2.0)
json.dump(slow, open(f + ".slow", "w"))
assert step(f + ".slow") > step(f) + 1, (step(f), step(f + ".slow"))
' "$SC" "$tmp/fsdp.json" "$F/schedule.csv"
expect 0 '"predicted_step_time_s"' -- $SC sim dualpipev -D p=2 -D m=4 -D costs="$tmp/ScheduleDualPipeV.json" --json
expect 0 'makespan' -- $SC sim gpipe -D p=2 -D m=4 -D costs="$tmp/ScheduleGPipe.json"
grep -q '"tcomm": 0,' "$tmp/ScheduleGPipe.json" && bad "GPipe's transfers are timed (from the posts in its spans)" || ok
expect 0 'step time     ' -- $SC import "$FX/ScheduleZBVZeroBubble/schedule.csv" -D costs="$tmp/ScheduleZBVZeroBubble.json"
# Another stage count than the program's: refused, unless --force-costs
# (each stage its share of the file's, with a warning).
expect 3 "cost file $tmp/tr.json: 'stages' is 2, but the program has 4 stages (record or profile the model split in 4 stages, or give --force-costs to share" -- \
  $SC import "$FX/ScheduleInterleaved1F1B/schedule.csv" -D costs="$tmp/tr.json"
expect 0 "warning: cost file $tmp/tr.json: 'stages' is 2, but the program has 4 stages (used anyway: --force-costs" -- \
  $SC import "$FX/ScheduleInterleaved1F1B/schedule.csv" -D costs="$tmp/tr.json" --force-costs
expect 3 "'stages' is 2, but the program has 4 stages (profile a recipe with 4 stages: stagecraft run RECIPE --profile FILE; or give --force-costs" -- \
  $SC sim 1f1b -D p=4 -D m=8 -D costs="$tmp/tr.json"
expect 0 "(used anyway: --force-costs; each stage takes its share of the file's stages' times)" -- \
  $SC sim 1f1b -D p=4 -D m=8 -D costs="$tmp/tr.json" --force-costs
py '
import subprocess, sys
sc, f = sys.argv[1], sys.argv[2]
def step(*a):
    out = subprocess.run([sc, *a, "--json"], capture_output=True, text=True, check=True).stdout
    import json; return json.loads(out)["predicted_step_time_s"]
# 2 stages as 4 of the same model: each half of one; the sums of the stage times agree
a = step("sim", "zb-h1", "-D", "p=2", "-D", "m=8", "-D", "costs=" + f)
b = step("--force-costs", "sim", "zb-h1", "-D", "p=4", "-D", "m=8", "-D", "costs=" + f)
assert 0.3 * a < b < 1.5 * a, (a, b)' "$SC" "$tmp/tr.json"
expect 3 "cost file $FX/rank0.json: a torch.profiler trace, not a cost file (stagecraft costs --from-trace TRACE.json... -o FILE makes one of it)" -- \
  $SC import "$FX/interleaved/schedule.csv" -D costs=$FX/rank0.json
expect 2 "parameter 'costs': expected a cost file" -- $SC import "$FX/interleaved/schedule.csv" -D costs=
expect 2 "cannot read '$tmp/none.json'" -- $SC import "$FX/interleaved/schedule.csv" -D costs="$tmp/none.json"
# Bad traces.
echo '{"traceEvents": [' >"$tmp/t1.json"
expect 3 "stagecraft: error: trace $tmp/t1.json: line 2:" -- $SC costs --from-trace "$tmp/t1.json"
echo '{"schemaVersion": 1}' >"$tmp/t2.json"
expect 3 "trace $tmp/t2.json: no 'traceEvents' list (not a Chrome trace of torch.profiler" -- $SC costs --from-trace "$tmp/t2.json"
echo '{"traceEvents": [{"ph": "X", "name": "PP:0F0", "pid": 1, "tid": 1, "ts": 5, "dur": -1}]}' >"$tmp/t3.json"
expect 3 "trace $tmp/t3.json: event 0 ('PP:0F0'): 'ts' and 'dur' must be numbers, 'dur' >= 0" -- $SC costs --from-trace "$tmp/t3.json"
echo '{"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}' >"$tmp/t4.json"
expect 3 "trace $tmp/t4.json: no span of a pass: PyTorch's _PipelineScheduleRuntime names each action (PP:1F0) and ScheduleGPipe each pass (Forward 0), but Schedule1F1B names none: record a single-stage schedule with torch.profiler.profile(with_stack=True)" -- $SC costs --from-trace "$tmp/t4.json"
echo '{"traceEvents": [{"ph": "X", "name": "Forward 0", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}' >"$tmp/t5.json"
expect 3 "trace $tmp/t5.json: event 0 (Forward 0): stage 0 has no Backward <microbatch> span: its backward pass cannot be timed" -- $SC costs --from-trace "$tmp/t5.json"
echo '{"traceEvents": [{"ph": "X", "name": "PP:(0F1;1B0)OVERLAP_F_B", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}' >"$tmp/t6.json"
expect 3 "event 0 (PP:(0F1;1B0)OVERLAP_F_B): stage 0 has no F span (PP:0F<microbatch>) outside an overlapped pair" -- $SC costs --from-trace "$tmp/t6.json"
echo '{"traceEvents": [{"ph": "X", "name": "PP:(0F1;1F0)OVERLAP_F_B", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}' >"$tmp/t6.json"
expect 3 "event 0 ('PP:(0F1;1F0)OVERLAP_F_B'): not an overlapped pair of PyTorch 2.15 (OVERLAP_F_B of one F and one backward" -- $SC costs --from-trace "$tmp/t6.json"
echo '{"traceEvents": [{"ph": "X", "name": "torch/distributed/pipelining/stage.py(9): forward_one_chunk", "cat": "python_function", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}' >"$tmp/t9.json"
expect 3 "trace $tmp/t9.json: event 0 (forward_one_chunk): no call of the schedule's step() around it (schedules.py: step): record whole steps with with_stack=True" -- $SC costs --from-trace "$tmp/t9.json"
python3 -c '
import json, sys
t = json.load(open(sys.argv[1])); ev = t["traceEvents"]
i = max(i for i, e in enumerate(ev) if e["name"] == "PP:0F3"); del ev[i]
json.dump(t, open(sys.argv[2], "w"))' $FX/rank0.json "$tmp/t7.json"
expect 3 "(PP:0F3): in 1 step, but the traces hold 2: give whole steps" -- $SC costs --from-trace "$tmp/t7.json" $FX/rank1.json
expect 3 "$FX/rank0.json: rank 0 again ($FX/rank0.json is rank 0 too)" -- $SC costs --from-trace $FX/rank0.json $FX/rank0.json
python3 -c '
import json, sys
t = json.load(open(sys.argv[1])); t["traceEvents"] = [e for e in t["traceEvents"] if not e["name"].startswith("PP:1W")]
json.dump(t, open(sys.argv[2], "w"))' $FX/rank1.json "$tmp/t8.json"
expect 3 "stage 1 has I spans but no W (PP:1W<microbatch>): its backward pass is not all there" -- $SC costs --from-trace $FX/rank0.json "$tmp/t8.json"
expect 3 "trace $FX/rank1.json: no span of stage 0, though stage 1 has spans: give the trace of every rank" -- $SC costs --from-trace $FX/rank1.json
expect 2 "costs: missing --from-trace TRACE.json" -- $SC costs
expect 2 "costs: --json is for --check (--from-trace writes JSON already)" -- $SC costs --from-trace $FX/rank0.json --json
expect 2 "cannot read '$tmp/none.json'" -- $SC costs --from-trace "$tmp/none.json"
# distributedInfo after the events (the reader takes the events as they
# are parsed): the rank still counts.
python3 -c '
import json, sys
t = json.load(open(sys.argv[1])); t["distributedInfo"] = t.pop("distributedInfo")
json.dump(t, open(sys.argv[2], "w"))' $FX/rank0.json "$tmp/late0.json"
expect 3 "$tmp/late0.json: rank 0 again ($FX/rank0.json is rank 0 too)" -- $SC costs --from-trace $FX/rank0.json "$tmp/late0.json"
$SC costs --from-trace "$tmp/late0.json" $FX/rank1.json -o "$tmp/tl.json" && ok || bad "a trace with its rank after its events"
py '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("tf", "tb", "tw", "tcomm", "placement", "spread", "samples"):
    assert a[k] == b[k], (k, a[k], b[k])' "$tmp/tr.json" "$tmp/tl.json"

# A GPU's trace (docs/costs.md#on-a-gpu; tests/py/gen_cuda_trace.py: zb-h1
# shaped, two ranks, CUDA's kernels linked to their launches by
# args.correlation): the passes are their kernels' time on the GPU, not the
# spans' (ten times longer), tcomm NCCL's kernels', the step runs to the
# last kernel of a span (past the spans; not the optimizer's); the file
# says which clock. The same trace without its kernels: the CPU's times,
# and a note that says how to record the kernels (after the B-only note).
python3 tests/py/gen_cuda_trace.py "$tmp/gpu"
python3 tests/py/gen_cuda_trace.py "$tmp/gpu/cpu" --no-kernels
$SC costs --from-trace "$tmp/gpu/rank0.json" "$tmp/gpu/rank1.json" -o "$tmp/gk.json" 2>"$tmp/err" && ok || bad "costs --from-trace of a GPU trace: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && bad "a GPU trace with its kernels is noted: $(cat "$tmp/err")" || ok
expect 0 "note: the traces hold 178 CUDA launches but no kernel: the costs are the CPU's launch times, not the GPU's (record the kernels with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]))" -- \
  $SC costs --from-trace "$tmp/gpu/cpu/rank0.json" "$tmp/gpu/cpu/rank1.json" -o "$tmp/gc.json"
py '
import json, sys
c, cpu, x = (json.load(open(f)) for f in sys.argv[1:4])
close = lambda a, b: abs(a - b) <= 1e-9 + 1e-9 * abs(b)
for k in ("tf", "tb", "tw"):
    assert all(map(close, c[k], x[k])), (k, c[k], x[k])
    assert c["samples"][k] == [8, 8] and c["spread"][k] == [0, 0], (k, c)
    assert all(t > 5 * g for t, g in zip(cpu[k], x[k])), (k, cpu[k], x[k])  # the spans: 10x
assert close(c["tcomm"], x["tcomm"]) and c["samples"]["tcomm"] == 16, c
m, mc = c["measured"], cpu["measured"]
assert m["clock"] == "gpu kernels" and mc["clock"] == "cpu", (m, mc)
assert all(close(m["step_time_s"], s) for s in x["steps_s"]) and mc["step_time_s"] < m["step_time_s"], (m, mc, x)
' "$tmp/gk.json" "$tmp/gc.json" "$tmp/gpu/expect.json"
expect 0 '"predicted_step_time_s"' -- $SC sim zb-h1 -D p=2 -D m=4 -D costs="$tmp/gk.json" --json
# One merged file (the ranks' processes and GPUs in one): the same figures.
python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
a["traceEvents"] += b["traceEvents"]; del a["distributedInfo"]
json.dump(a, open(sys.argv[3], "w"))' "$tmp/gpu/rank0.json" "$tmp/gpu/rank1.json" "$tmp/gpu/merged.json"
$SC costs --from-trace "$tmp/gpu/merged.json" -o "$tmp/gm.json" && ok || bad "costs --from-trace of a merged GPU trace"
py '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("tf", "tb", "tw", "tcomm", "placement"):
    assert a[k] == b[k], (k, a[k], b[k])' "$tmp/gk.json" "$tmp/gm.json"
# Launches only, backward B only: both notes, one after the other.
for r in 0 1; do
  python3 -c '
import json, re, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [dict(e, name=re.sub(r"^PP:(\d)I", r"PP:\1B", e["name"])) for e in t["traceEvents"]
                    if not re.match(r"PP:\dW", e.get("name", ""))]
json.dump(t, open(sys.argv[2], "w"))' "$tmp/gpu/cpu/rank$r.json" "$tmp/gpu/cpu/b$r.json"
done
expect 0 "note: stage 0 ran its backward as B only (no I and W): its tb and tw are half of B each, a guess (a schedule that splits the backward, zb-h1 or zb-v, measures them); the traces hold 178 CUDA launches but no kernel" -- \
  $SC costs --from-trace "$tmp/gpu/cpu/b0.json" "$tmp/gpu/cpu/b1.json" -o "$tmp/gb.json"
# A kernel event is read like the others: a bad one is refused.
echo '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": 5, "dur": -2, "args": {"device": 0, "stream": 7, "correlation": 12}}]}' >"$tmp/t10.json"
expect 3 "trace $tmp/t10.json: event 0 ('ampere_sgemm_128x64_tn'): 'ts' and 'dur' must be numbers, 'dur' >= 0" -- $SC costs --from-trace "$tmp/t10.json"

# Linear and bounded readers (docs/costs.md#large-traces). A merged trace of
# 40k processes (one stage each) and one of 20k steps are read within 4 s of
# CPU (under 1 s here; the reader that searched the devices and the steps
# linearly took 10 s of CPU for either): CPU time, not the wall clock.
# Under the sanitizers (make asan) the same read takes about 4x the CPU:
# 40 s then, still well under the quadratic reader's 10 s times 4; without
# the MPI part's LSAN_OPTIONS above (fast_unwind_on_malloc=0 makes every
# malloc of the reader unwind the stack slowly).
cpu=4; case "$SC" in *asan*) cpu=40 ;; esac
python3 tests/py/gen_trace.py "$tmp/p40k.json" --procs 40000 --mb 1
expect 0 '"stages": 40000' -- sh -c "unset LSAN_OPTIONS; ulimit -t $cpu; exec $SC costs --from-trace '$tmp/p40k.json' --max-time 0"
py '
import json, sys
c = json.load(open(sys.argv[1])); S = 40000
assert c["stages"] == S and c["devices"] == S and c["placement"] == list(range(S)), c["stages"]
assert c["samples"]["tf"] == [1] * S and c["measured"]["steps"] == 1
# every pass of stage s lasts 100 + s % 7 us (tests/py/gen_trace.py): the
# devices and the spans were matched right
for k in ("tf", "tb", "tw"):
    assert len({round(c[k][s] - (s % 7) * 1e-6, 12) for s in range(1, S - 1)}) == 1, k' "$tmp/out"
# (The steps' reader: make test only; make check reads the 40k processes,
# as docs/costs.md does.)
if full; then
  python3 tests/py/gen_trace.py "$tmp/s20k.json" --procs 2 --steps 20000
  expect 0 '"steps": 20000' -- sh -c "unset LSAN_OPTIONS; ulimit -t $cpu; exec $SC costs --from-trace '$tmp/s20k.json' --max-time 0"
fi
# --max-mem bounds what the reader holds (the text, the spans): the limit's
# error; a file larger than the limit is refused before it is read.
# (--max-time 0: on a loaded machine the wall clock must not come first)
expect 7 "memory limit exceeded: the Lua heap and the programs would grow past 67108864 bytes" -- \
  $SC costs --from-trace "$tmp/p40k.json" --max-mem 64M --max-time 0
expect 7 "trace $tmp/p40k.json is larger than the memory limit of 1048576 bytes" -- \
  $SC costs --max-mem 1M --from-trace "$tmp/p40k.json"
expect 2 "--max-mem needs a size in bytes" -- $SC costs --from-trace "$tmp/p40k.json" --max-mem lots
rm -f "$tmp/p40k.json" "$tmp/s20k.json"
# A device or a pipe: read only as far as it can be JSON, and not past
# --max-time; a pipe that is a trace is read.
expect 3 "trace /dev/zero: not JSON: byte 0 is 0x00, where JSON starts with '{' or '['" -- \
  sh -c "ulimit -t 1; exec $SC costs --from-trace /dev/zero"
mkfifo "$tmp/fifo"
exec 9<>"$tmp/fifo" # a writer that never writes, open before the reader starts
expect 7 "time limit exceeded: reading trace $tmp/fifo ran longer than 1 s (--max-time SECONDS raises it" -- \
  sh -c "ulimit -t 1; exec $SC costs --from-trace '$tmp/fifo' --max-time 1"
exec 9>&-
expect 0 '"stages": 4' -- sh -c "python3 tests/py/gen_trace.py /dev/stdout | $SC costs --from-trace /dev/stdin"
# sc.costs (-D costs=FILE) reads the same way.
expect 3 "cost file /dev/zero: not JSON: byte 0 is 0x00" -- sh -c "ulimit -t 1; exec $SC sim 1f1b -D costs=/dev/zero"

verdicts
echo "costs: $pass passed, $fail failed"
[ $fail = 0 ]
