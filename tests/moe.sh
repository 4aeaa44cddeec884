#!/bin/sh
# moe.sh — expert parallelism (docs/semantics.md#expert-parallelism):
# -D ep=E on a model with experts puts DISPATCH and COMBINE after each pass
# of a stage with MoE layers and the dense gradients' all-reduce before
# REDUCE; show --dump, export (JSON, trace, SVG) show them; their bytes
# follow the model (tokens x k x hidden x 2 per MoE layer); the verifier
# proves the streams; the simulator times them on the passes, a pair
# hiding them; a cost file's dispatch and combine; the errors. Run from
# the repository root: sh tests/moe.sh
SC=${SC:-./stagecraft}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# under make asan: OpenMPI's own allocations are not this project's leaks
export OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan_mpi.supp:print_suppressions=0:fast_unwind_on_malloc=0"
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect
M=tests/fixtures/models/tiny-mixtral.json
MX=tests/fixtures/models/mixtral-8x7b.json

# 1. The dump lists them, after the pass they belong to, on the EP group.
for r in $(sample 1f1b zb-h1 interleaved zb-v); do
  if $SC show $r -D p=2 -D m=4 --model $MX -D seq=4096 -D ep=2 --dump >"$tmp/d" 2>"$tmp/err" &&
     grep -q "DISPATCH F s0 mb0 on group" "$tmp/d" && grep -q "COMBINE F s0 mb0 part 1 on group" "$tmp/d" &&
     grep -q "ALLREDUCE sum W on group" "$tmp/d"; then ok
  else bad "$r: show --dump has no DISPATCH/COMBINE"; head -5 "$tmp/err" >&2; fi
done
# a dense model, or ep = 1: none
$SC show 1f1b -D p=2 -D m=2 --model $M -D seq=64 --dump >"$tmp/d" 2>&1
if grep -q "DISPATCH" "$tmp/d"; then bad "ep = 1 has DISPATCH"; else ok; fi

# 2. Their bytes: tiny-mixtral (hidden 128, k 2, every layer MoE), seq 64,
# batch 2: 64 x 2 tokens x 2 x 128 x 2 bytes per MoE layer; split [2, 1].
$SC export 1f1b -D p=2 -D m=2 --model $M -D seq=64 -D ep=2 --format json >"$tmp/e.json" 2>"$tmp/err"
if python3 - "$tmp/e.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
per = 64 * 2 * 2 * 128 * 2
seen = {}
for ins in j["streams"]:
    for k, i in enumerate(ins):
        if i["op"] in ("DISPATCH", "COMBINE"):
            want = per * (2 if i["stage"] == 0 else 1)
            assert i["bytes"] == want, (i, want)
            assert ins[k - (1 if i["op"] == "DISPATCH" else 2)]["op"] == i["what"], (k, i)
            seen[i["op"]] = seen.get(i["op"], 0) + 1
# F and BW of 2 microbatches on 2 stages
assert seen == {"DISPATCH": 8, "COMBINE": 8}, seen
PY
then ok; else bad "all-to-all bytes"; fi

# Each rank holds 1/E of the routed experts: mixtral-8x7b on 4 stages, d0's
# 8 MoE layers hold 8 x 8 x 3 x 4096 x 14336 routed parameters, half of
# them gone at ep = 2 (the params column of sim's device table).
p1=$($SC sim 1f1b -D p=4 -D m=8 --model $MX -D seq=4096 | awk '/^device +params/ { t = 1; next } t && $1 == 0 { print $2; exit }')
p2=$($SC sim 1f1b -D p=4 -D m=8 --model $MX -D seq=4096 -D ep=2 | awk '/^device +params/ { t = 1; next } t && $1 == 0 { print $2; exit }')
if [ -n "$p1" ] && [ "$((p1 - p2))" = "$((8 * 8 * 3 * 4096 * 14336 / 2))" ]; then ok
else bad "ep = 2 parameters on d0: $p1 -> $p2"; fi

# 3. trace and SVG draw them.
for f in trace svg; do
  $SC export 1f1b -D p=2 -D m=2 --model $M -D seq=64 -D ep=2 --format $f >"$tmp/o" 2>"$tmp/err"
  if grep -q DISPATCH "$tmp/o" && grep -q COMBINE "$tmp/o"; then ok; else bad "$f has no DISPATCH"; fi
done

# PyTorch's CSV (docs/interchange.md#expert-parallelism): no all-to-all
# action, so the compute_only file is ep = 1's, a note on stderr says what
# was left out, and the compute_comms file imports back (proved).
RM=tests/fixtures/models/run-mixtral.json # 8 layers: a V of p = 2
for r in 1f1b $(sample zb-v); do
  n=16; [ $r = zb-v ] && n=32 # F and B of 4 microbatches on each stage
  $SC export $r -D p=2 -D m=4 --model $RM -D seq=64 --format torch-csv >"$tmp/t1" 2>/dev/null
  if $SC export $r -D p=2 -D m=4 --model $RM -D seq=64 -D ep=2 --format torch-csv >"$tmp/t2" 2>"$tmp/err" &&
     [ -s "$tmp/t2" ] && cmp -s "$tmp/t1" "$tmp/t2" &&
     grep -q "note: ep = 2: PyTorch's schedules have no all-to-all action, so the file leaves out the DISPATCH and COMBINE of the $n passes with experts" "$tmp/err"
  then ok; else bad "$r -D ep=2 --format torch-csv"; head -3 "$tmp/err" >&2; fi
done
$SC export 1f1b -D p=2 -D m=4 --model $M -D seq=64 -D ep=2 --format torch-csv-comms -o "$tmp/c2.csv" 2>/dev/null
expect 0 "instructions  44 verified" -- $SC import "$tmp/c2.csv"
if grep -q "DISPATCH\|COMBINE" "$tmp/c2.csv"; then bad "torch-csv-comms has DISPATCH"; else ok; fi
# the JSON dump: an all-to-all has no root (a broadcast's key)
if grep -q '"root"' "$tmp/e.json"; then bad "json: DISPATCH with a root"; else ok; fi

# 4. The simulator: the all-to-alls lengthen 1f1b, and dualpipev hides more
# of them (mixtral-8x7b, p = 4, m = 16, seq 4096).
for ep in 1 2; do
  for r in 1f1b dualpipev; do
    $SC sim $r -D p=4 -D m=16 --model $MX -D seq=4096 -D ep=$ep --json >"$tmp/$r.$ep.json" 2>"$tmp/err" || bad "sim $r ep=$ep"
  done
done
if python3 - "$tmp" <<'PY'
import json, sys
mk = lambda r, e: json.load(open(f"{sys.argv[1]}/{r}.{e}.json"))["makespan"]
a1, a2, v1, v2 = mk("1f1b", 1), mk("1f1b", 2), mk("dualpipev", 1), mk("dualpipev", 2)
assert a2 > a1 and v2 > v1, (a1, a2, v1, v2)
assert v2 - v1 < (a2 - a1) / 2, (a2 - a1, v2 - v1)  # the pairs hide most of it
PY
then ok; else bad "ep's cost in 1f1b and dualpipev"; fi

# 5. A cost file's dispatch and combine (no model): stage 0 only.
cat >"$tmp/c.json" <<'J'
{"stagecraft_costs": 1, "unit": "s", "devices": 2, "stages": 2,
 "tf": [1, 1], "tb": [1, 1], "tw": [1, 1], "dispatch": [0.25, 0], "combine": [0.25, 0]}
J
expect 0 "makespan      15 s" -- $SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/c.json"
expect 0 "makespan      18 s" -- $SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/c.json" -D ep=2
$SC show 1f1b -D p=2 -D m=1 -D costs="$tmp/c.json" -D ep=2 --dump >"$tmp/d" 2>&1
if [ "$(grep -c DISPATCH "$tmp/d")" = 2 ]; then ok; else bad "cost file: DISPATCH on s0 only"; fi
echo '{"stagecraft_costs": 1, "unit": "s", "stages": 2, "tf": [1, 1], "tb": [1, 1], "tw": [1, 1], "dispatch": [0.25]}' >"$tmp/bad.json"
expect 3 "'dispatch': 1 values for 2 stages" -- $SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/bad.json" -D ep=2

# sim names it; --json has ep and ep_time; sc.program{ep = ...} as -D
expect 0 "ep            2: 2 x 2 devices, stage-major; all-to-alls 0.5 s per pass on s0" -- \
  $SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/c.json" -D ep=2
$SC sim 1f1b -D p=2 -D m=4 -D costs="$tmp/c.json" -D ep=2 --json >"$tmp/j" 2>&1
if python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["ep"] == 2 and j["ep_time"] == [0.5, 0], j' "$tmp/j"; then ok
else bad "sim --json: ep, ep_time"; fi
printf 'return sc.program{p = 2, m = 1, rule = "1f1b", ep = 2, costs = sc.costs("c.json")}\n' >"$tmp/p.lua"
$SC show "$tmp/p.lua" --dump >"$tmp/d" 2>&1
if [ "$(grep -c DISPATCH "$tmp/d")" = 2 ]; then ok; else bad "sc.program{ep = 2}"; head -3 "$tmp/d" >&2; fi

# 7. run: p x E devices as threads (run_ep.c), E-th of the experts and of
# the batch's sequences each, against the single-device reference over the
# whole batch; predicted parameter and activation bytes equal measured
# (runjson.py); each rank's parameters hold 1/E of the experts. batch 4:
# ep = 4 takes one sequence a rank.
X=tests/fixtures/models/run-mixtral.json
for r in 1f1b $(full && echo zb-h1 zb-v dualpipev); do
  for ep in 2 $(full && [ $r = 1f1b ] && echo 4); do
    if $SC run $r --model $X -D ep=$ep -D batch=4 --check --json >"$tmp/ep.json" 2>"$tmp/err"; then
      later "$tmp/ep.json" "run $r --model run-mixtral -D ep=$ep --check"
      cp "$tmp/ep.json" "$tmp/$r.$ep.json"
    else bad "run $r --model run-mixtral -D ep=$ep --check"; head -3 "$tmp/err" >&2; fi
  done
done
$SC run 1f1b --model $X -D batch=4 --json >"$tmp/e1.json" 2>"$tmp/err" || bad "run 1f1b --model run-mixtral"
# ep = 2 holds half the routed experts: 2 layers a device, each 4 experts
# of 3 x 32 x 48 floats: half of them fewer, 4 bytes each
if python3 -c 'import json, sys
a, b = (json.load(open(f))["params"] for f in sys.argv[1:])
assert all(x["params"] - y["params"] == 2 * 4 * 3 * 32 * 48 * 4 // 2 for x, y in zip(b, a)), (a, b)' \
  "$tmp/1f1b.2.json" "$tmp/e1.json" 2>"$tmp/err"; then ok; else bad "ep = 2: half the experts' bytes"; cat "$tmp/err" >&2; fi

# an injected all-to-all latency changes no bit (full: a real sleep)
if full; then
  if STAGECRAFT_A2A_LATENCY_US=200 $SC run dualpipev --model $X -D ep=2 --check --json >"$tmp/lat.json" 2>"$tmp/err"
  then later "$tmp/lat.json" "run dualpipev -D ep=2 with STAGECRAFT_A2A_LATENCY_US=200 --check"
  else bad "run dualpipev -D ep=2 with STAGECRAFT_A2A_LATENCY_US"; head -3 "$tmp/err" >&2; fi
fi

# MPI ranks (run_ep_mpi.c): mpirun -np p x E, world rank dE + e is EP rank e
# of device d; the --json output is the threads run's but for the transport
# and the time (same loss bits, gradients, peaks, params). make check: 1f1b
# at p = 2 on 4 ranks; make test: the four recipes at p = 4 on 8 ranks
# with --check (runjson.py), ep = 4 at p = 2, a wrong -np and a refused
# combination.
same_run() { python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert b["transport"] == "mpi", b["transport"]
d = [k for k in a if k not in ("transport", "step_time_s") and a[k] != b.get(k)]
assert not d, d' "$1" "$2"; }
if have_mpi; then
  if full; then set -- "1f1b zb-h1 zb-v dualpipev" "" 8 --check; else set -- 1f1b "-D p=2" 4 ""; fi
  for r in $1; do
    # shellcheck disable=SC2086
    if [ -f "$tmp/$r.2.json" ] && [ -z "$2" ]; then cp "$tmp/$r.2.json" "$tmp/a"
    else $SC run $r $2 --model $X -D ep=2 -D batch=4 $4 --json >"$tmp/a" 2>"$tmp/err"; fi
    # shellcheck disable=SC2086
    if timeout -k 10 120 mpirun -np $3 --oversubscribe $SC run $r $2 --model $X -D ep=2 -D batch=4 $4 \
         --json >"$tmp/b" 2>"$tmp/err" && same_run "$tmp/a" "$tmp/b" 2>>"$tmp/err"; then ok
      if full; then later "$tmp/b" "mpirun -np 8 run $r --model run-mixtral -D ep=2 --check"; fi
    else bad "threads vs mpirun -np $3 on $r $2 -D ep=2"; tail -3 "$tmp/err" >&2; fi
  done
  if full; then # ep = 4 at p = 2: 8 ranks, groups of 4
    $SC run dualpipev -D p=2 --model $X -D ep=4 -D batch=4 --check --json >"$tmp/a" 2>"$tmp/err"
    if timeout -k 10 120 mpirun -np 8 --oversubscribe $SC run dualpipev -D p=2 --model $X -D ep=4 \
         -D batch=4 --check --json >"$tmp/b" 2>"$tmp/err" && same_run "$tmp/a" "$tmp/b" 2>>"$tmp/err"
    then ok; later "$tmp/b" "mpirun -np 8 run dualpipev -D p=2 --model run-mixtral -D ep=4 --check"
    else bad "threads vs mpirun -np 8 on dualpipev -D p=2 -D ep=4"; tail -3 "$tmp/err" >&2; fi
    timeout -k 10 60 mpirun -np 4 --oversubscribe $SC run 1f1b --model $X -D ep=2 >/dev/null 2>"$tmp/err"
    if [ $? = 3 ] && grep -q "mpirun started 4 ranks for a program of 4 x 2 devices (p x ep; use mpirun -np 8)" "$tmp/err"
    then ok; else bad "mpirun -np 4 -D ep=2 at p = 4: one line, exit 3"; head -3 "$tmp/err" >&2; fi
  fi
fi

# Microbatches of different lengths and sequence slices (docs/lengths.md,
# docs/slices.md) at ep = 2: each rank's share of a record is batch / E of
# its sequences at the record's length (the all-to-alls' room sized per
# record), a slice's share that of its whole microbatch; against the
# single-device reference, peaks predicted == measured (runjson.py), and
# under mpirun the threads' bits. (make check: 1f1b with lengths at p = 2;
# make test: dualpipev and zb-v with lengths, seq1f1b with slices, threads
# and mpirun -np 8, and the cuda stand-in's threads when it is built; ep = 4
# at p = 2 on threads.)
LX='[8,16,24,12,4,20,16,8,12,24]' # dualpipev's m = 10
ep_len() { # label, then run's arguments
  _l=$1; shift
  if $SC run "$@" --model $X -D ep="${EP:-2}" --check --json >"$tmp/len.json" 2>"$tmp/err"; then
    later "$tmp/len.json" "run $_l -D ep=${EP:-2} --check"; cp "$tmp/len.json" "$tmp/len.a"
  else bad "run $_l -D ep=${EP:-2} --check"; head -3 "$tmp/err" >&2; return 1; fi
}
if ! full; then
  ep_len "1f1b with lengths" 1f1b -D p=2 -D m=4 -D lengths='[8,16,24,12]'
else
  for c in "dualpipev -D lengths=$LX" "zb-v -D m=8 -D lengths=[8,16,24,12,4,20,16,8]" \
           "1f1b -D m=8 -D lengths=[8,16,24,12,4,20,16,8] -D batch=4" "seq1f1b -D slices=2" \
           "seq1f1b -D slices=4 -D m=4"; do
    # shellcheck disable=SC2086
    ep_len "$c" $c || continue
    if have_mpi; then
      # shellcheck disable=SC2086
      if timeout -k 10 120 mpirun -np 8 --oversubscribe $SC run $c --model $X -D ep=2 --check \
           --json >"$tmp/len.b" 2>"$tmp/err" && same_run "$tmp/len.a" "$tmp/len.b" 2>>"$tmp/err"
      then ok; else bad "threads vs mpirun -np 8 on $c -D ep=2"; tail -3 "$tmp/err" >&2; fi
    fi
    if [ -f build/cudastub/libstagecraft_cuda.so ]; then
      # shellcheck disable=SC2086
      if STAGECRAFT_CUDA_MODULE=build/cudastub/libstagecraft_cuda.so SC_CUDASTUB=1 \
           STAGECRAFT_NCCL_LIBRARY=build/cudastub/libsc_ncclstub.so SC_CUDASTUB_GPUS=8 \
           timeout 300 $SC run $c --model $X -D ep=2 --backend cuda --check --json >"$tmp/len.c" 2>"$tmp/err"
      then later "$tmp/len.c" "run $c -D ep=2 --backend cuda (stand-in) --check"
      else bad "run $c -D ep=2 --backend cuda (stand-in)"; head -3 "$tmp/err" >&2; fi
    fi
  done
  EP=4 ep_len "dualpipev -D p=2 -D batch=4 with lengths" dualpipev -D p=2 -D batch=4 -D lengths="$LX"
  EP=4 ep_len "seq1f1b -D p=2 -D batch=4 -D slices=4" seq1f1b -D p=2 -D m=4 -D batch=4 -D slices=4
fi
# the MPI transport's injected all-to-all latency (transport_mpi.c) holds
# every all-to-all back: the step takes longer, no bit changes (full)
if full && have_mpi; then
  $SC run 1f1b -D p=2 -D m=4 --model $X -D ep=2 --json >"$tmp/lat.a" 2>"$tmp/err"
  if STAGECRAFT_A2A_LATENCY_US=3000 timeout -k 10 120 mpirun -np 4 --oversubscribe $SC run 1f1b \
       -D p=2 -D m=4 --model $X -D ep=2 --json >"$tmp/lat.b" 2>"$tmp/err" &&
     same_run "$tmp/lat.a" "$tmp/lat.b" 2>>"$tmp/err" &&
     python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["step_time_s"]
# a lower bound the sleeps guarantee (not a speed figure): 4 layers a
# stage, 5 all-to-alls a layer and microbatch, 4 microbatches: 240 ms,
# asserted with margin: it fails only if the latency is not applied
assert t > 0.2, t' "$tmp/lat.b" 2>>"$tmp/err"
  then ok; else bad "mpirun with STAGECRAFT_A2A_LATENCY_US=3000"; tail -3 "$tmp/err" >&2; fi
fi

# run --profile of an ep program writes each stage's dispatch and combine
# (measured inside the passes, model_moe_ep.c), and the file reads back.
# (make check: 5 steps, enough for the fields; make test: to the profile's own target)
steps=$(full || echo "--profile-max-steps 5")
# shellcheck disable=SC2086
if $SC run 1f1b --model $X -D ep=2 --profile "$tmp/ep-costs.json" $steps >/dev/null 2>"$tmp/err" &&
   python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
assert all(len(j[k]) == 4 and min(j[k]) > 0 for k in ("dispatch", "combine")), j' "$tmp/ep-costs.json" &&
   $SC sim 1f1b --model $X -D seq=16 -D ep=2 -D costs="$tmp/ep-costs.json" >/dev/null 2>"$tmp/err"
then ok; else bad "run --profile -D ep=2: dispatch, combine"; head -3 "$tmp/err" >&2; fi

# 6. Errors: one line, exit 3.
expect 3 "ep = 0 is out of range (1..256)" -- $SC sim 1f1b -D p=2 -D m=2 -D ep=0
expect 3 "ep = 2 is not combined with post-validation yet" -- \
  $SC sim 1f1b -D p=2 -D m=2 -D ep=2 -D optim_sync=post-validation --model $M -D seq=64
expect 3 "ep = 2: expert parallelism needs a model with experts and a batch that 2 divides (experts = 0" -- \
  $SC run 1f1b -D p=2 -D m=2 -D ep=2
expect 3 "ep = 2: expert parallelism needs a model with experts and a batch that 2 divides (experts = 4, batch = 3" -- \
  $SC run 1f1b --model $X -D batch=3 -D ep=2
expect 2 "parameter 'ep': expected a number, got 'x'" -- $SC sim 1f1b -D p=2 -D m=2 -D ep=x

verdicts
echo "moe: $pass passed, $fail failed"
[ "$fail" = 0 ]
