#!/bin/sh
# bench/gpu/graphs.sh — run --graph on a GPU (docs/graphs.md, issue 51 item
# 3): the executor's share of a warm step with and without graphs, at
# hidden 1024 and 4096, and the loss bits of both; prints figures (the table
# of bench/gpu/README-graphs.md), fails only when the bits differ or a run
# fails. Without a GPU it says so and exits 0.
#
#   1. per instruction: `run 1f1b` on a model of 8 features, 1 row (tiny
#      passes: what is left is launches, syncs and the executor), p = 2,
#      m = 64, 6 steps, eager and --graph: the median of steps 3..6 over
#      the instructions per device of a step (eager: the executor, the
#      pass's launches and the sync after it; graph: one launch of the
#      whole step, REDUCE and OPTIM eager, and the GPU's own time for the
#      tiny kernels, which the graph no longer hides behind the host: an
#      upper bound on the host's cost per instruction);
#   2. at hidden 1024 and 4096 (vocab = hidden, seq 1024, batch 4, 2 layers
#      per stage, p = 2 on the GPUs there are, m = 8, 6 steps): the median
#      step of steps 3..6 eager and --graph, their difference, and the
#      executor's share of the step: instructions per device x section 1's
#      cost per instruction / the median step (goal, issue 51: at most
#      0.1 % with graphs at 4096, and a visible gain at 1024);
#   3. the same loss bits: every step's loss and the last one's hex, eager
#      against --graph, at every size (and --check against the reference
#      at hidden 1024).
#
# Run from the repository root: sh bench/gpu/graphs.sh (a `make gpu-bundle`
# build: BUILD=gpu-bundle sh bench/gpu/graphs.sh). On the CPU stand-in, for
# the script itself: SC_BENCH_GRAPH_SIZES="32 64" SC_BENCH_GRAPH_SEQ=16
# with STAGECRAFT_CUDA_MODULE=build/cudastub/libstagecraft_cuda.so.
BUILD=${BUILD:-build}
SC=${SC:-$BUILD/stagecraft}
SIZES=${SC_BENCH_GRAPH_SIZES:-"1024 4096"}
SEQ=${SC_BENCH_GRAPH_SEQ:-1024}
STEPS=6
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export STAGECRAFT_TRANSPORT=cuda-local # NCCL is not captured (docs/graphs.md)

$SC run 1f1b -D p=1 -D m=1 --backend cuda --json >"$tmp/probe" 2>"$tmp/err"; rc=$?
if [ $rc != 0 ]; then
  why=$(head -n 1 "$tmp/err" | sed 's/^stagecraft: error: //')
  if [ $rc = 3 ] && echo "$why" | grep -qE "no usable CUDA device|not built into this binary"; then
    echo "bench/gpu/graphs: skipped, no GPU ($why)"
    exit 0
  fi
  echo "bench/gpu/graphs: FAILED: the cuda backend does not run (exit $rc): $why" >&2
  exit 1
fi
echo "GPU: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpu"])' "$tmp/probe")"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
bad=0

# run NAME ARGS...: $tmp/NAME.json, eager and with --graph ($tmp/NAME.g.json).
pair() {
  n=$1; shift
  for g in "" --graph; do
    out=$tmp/$n${g:+.g}.json
    # shellcheck disable=SC2068
    if ! $SC run 1f1b -D steps=$STEPS $@ --backend cuda $g --json >"$out" 2>"$tmp/$n.err"; then
      echo "bench/gpu/graphs: FAILED: run 1f1b $* $g: $(grep -v '^step' "$tmp/$n.err" | head -2)" >&2
      bad=1
      return 1
    fi
  done
}

# figures NAME: median warm step eager and graph (steps 3..), instructions
# per device and step, whether every loss has the same bits.
figures() {
  python3 - "$tmp/$1.json" "$tmp/$1.g.json" <<'EOF'
import json, statistics, sys
e, g = (json.load(open(f)) for f in sys.argv[1:3])
me = statistics.median(e["step_times_s"][2:])
mg = statistics.median(g["step_times_s"][2:])
per_dev = e["instructions"] / e["devices"] / len(e["step_times_s"])
same = e["step_loss"] == g["step_loss"] and e["loss_hex"] == g["loss_hex"]
print(me, mg, per_dev, int(same), g.get("graph_replays", 0), e["loss_hex"])
EOF
}

echo
echo "1. per instruction (hidden 8, 1 row, p = 2, m = 64)"
TINY="-D hidden=8 -D vocab=8 -D seq=1 -D batch=1 -D p=2 -D m=64"
pair tiny $TINY || exit 1
set -- $(figures tiny)
us_e=$(python3 -c "print($1 / $3 * 1e6)"); us_g=$(python3 -c "print($2 / $3 * 1e6)")
printf '| eager | %.0f instructions/device | step %.6f s | %.1f us/instruction |\n' "$3" "$1" "$us_e"
printf '| graph | %.0f instructions/device | step %.6f s | %.1f us/instruction |\n' "$3" "$2" "$us_g"
[ "$4" = 1 ] || { echo "  the loss bits differ (tiny model)"; bad=1; }

echo
echo "2-3. hidden $SIZES (seq $SEQ, batch 4, p = 2, m = 8, $STEPS steps; steps 3.. timed)"
echo "| hidden | eager step (s) | graph step (s) | gain | executor share eager | with graph | same loss bits | loss |"
echo "|---:|---:|---:|---:|---:|---:|---|---|"
for h in $SIZES; do
  chk=; [ "$h" = "$(echo $SIZES | cut -d' ' -f1)" ] && chk=--check
  pair "h$h" -D p=2 -D m=8 -D hidden=$h -D vocab=$h -D layers=4 -D seq=$SEQ -D batch=4 $chk || continue
  set -- $(figures "h$h")
  python3 -c "
me, mg, per, same, hexl = $1, $2, $3, $4, '$6'
ue, ug = $us_e * 1e-6, $us_g * 1e-6
print('| $h | %.6f | %.6f | %+.2f %% | %.3f %% | %.3f %% | %s | %s |' % (me, mg, 100 * (mg - me) / me,
      100 * per * ue / me, 100 * per * ug / mg, 'yes' if same else 'NO', hexl))"
  [ "$4" = 1 ] || bad=1
  [ "$5" = $((STEPS - 1)) ] || { echo "  --graph ran $5 steps as the graph, not $((STEPS - 1))"; bad=1; }
done
[ $bad = 0 ] && echo "bench/gpu/graphs: done" || { echo "bench/gpu/graphs: FAILED (above)"; exit 1; }
