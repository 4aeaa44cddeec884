#!/bin/sh
# bench/gpu/run.sh — the GPU benchmarks of bench/gpu.md; prints figures,
# passes or fails nothing. Without a GPU (no driver or device, or built
# without nvcc) it says so and exits 0; when the backend is there but does
# not run, it says why and exits 1.
#   1. executor overhead per instruction (tiny passes: launch + sync);
#   2. step time with 0 %, 50 % and 100 % of activations offloaded, hidden
#      4096 (-D offload=none|selective|all), then the pinned copies alone
#      and beside products (build/gpubench_bench_copy);
#   3. measured step time against the prediction from a GPU profile (the
#      profile's median step, and a fresh process that loads the profile);
#   3b. transfers between devices, from the profile;
#   4. achieved TFLOP/s of the F, B and W products against the GPU's peak
#      (build/gpubench_bench_gemm);
#   5. overlapped pairs (dualpipev): the lane's second stream against the
#      halves in turn (STAGECRAFT_PAIRS=serial).
# Run from the repository root: sh bench/gpu/run.sh  (or make gpu-bench)
BUILD=${BUILD:-build}
SC=${SC:-$BUILD/stagecraft}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

$SC run 1f1b -D p=1 -D m=1 --backend cuda --json >"$tmp/probe" 2>"$tmp/err"; rc=$?
if [ $rc != 0 ]; then
  why=$(head -n 1 "$tmp/err" | sed 's/^stagecraft: error: //')
  listed=$(command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ $rc = 3 ] && [ "${listed:-0}" = 0 ] && echo "$why" | grep -qE "no usable CUDA device|not built into this binary"; then
    echo "bench/gpu: skipped, no GPU ($why)"
    exit 0
  fi
  echo "bench/gpu: FAILED: the cuda backend does not run (exit $rc): $why" >&2
  exit 1
fi
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
gpus=$($SC run 1f1b -D p=8 -D m=8 --backend cuda --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["gpus"])')
echo "GPU: $(field "$tmp/probe" gpu), $gpus visible to a run of 8 devices"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
echo

# Every step below is timed warm, as in a long training run: `run --profile`
# runs one untimed step, then five timed ones, and reports their median
# (docs/costs.md, profiling). A single cold `run` also times the CUDA
# context, cuBLAS's first calls, the memory pool's first growth and the lazy
# loading of every kernel, which on an H100 is most of a 2-second step.
# prof NAME ARGS...: $tmp/NAME.json (run --json) and $tmp/NAME.prof (profile);
# SC_BENCH_PROFILE_FLAGS bounds it (e.g. "--profile-max-time 15") where the
# device time is short.
PROFILE_FLAGS=${SC_BENCH_PROFILE_FLAGS:-}
prof() {
  n=$1; shift
  # shellcheck disable=SC2086
  $SC run "$@" --profile "$tmp/$n.prof" $PROFILE_FLAGS --json >"$tmp/$n.json" 2>"$tmp/$n.err"
}

# The model of sections 2 and 3: emulated devices on at most 4 GPUs.
P=$gpus; [ "$P" -gt 4 ] && P=4; [ "$P" -lt 2 ] && P=2
MODEL=${SC_BENCH_GPU_MODEL:-"-D hidden=4096 -D layers=$((2*P)) -D vocab=4096 -D seq=1024 -D batch=4"} # smaller on a CPU stand-in

# GPU_BENCH_SECTIONS="2 3" runs only those sections (default: all).
sec() { case " ${GPU_BENCH_SECTIONS:-1 2 3 4 5} " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- 1. executor overhead per instruction --------------------------------
if sec 1; then
# Passes of a model with 8 features: the time is the executor, the kernel
# launches and the sync after each pass, not the arithmetic. Per device:
# median step time / (instructions / devices).
echo "1. executor overhead per instruction (hidden 8, vocab 8, seq 1, batch 1; median of 5 warm steps)"
printf '%-10s %-4s %-6s %-12s %-12s %s\n' backend p m instructions step_s us/instr
for be in cpu cuda; do
  for pm in "1 512" "4 256"; do
    set -- $pm
    if prof ov 1f1b -D p=$1 -D m=$2 -D hidden=8 -D vocab=8 -D seq=1 -D batch=1 --backend $be; then
      python3 - "$tmp/ov.json" $be $1 $2 >>"$tmp/ov.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); be, p, m = sys.argv[2:]
us = r["step_time_s"] / (r["instructions"] / int(p)) * 1e6
print("%-10s %-4s %-6s %-12d %-12.6f %.1f  (%s)" % (be, p, m, r["instructions"], r["step_time_s"], us, r["transport"]))
PY
      tail -n 1 "$tmp/ov.txt"
    else
      echo "$be p=$1: $(head -n 1 "$tmp/ov.err")"
    fi
  done
done
echo

fi
# ---- 2. offload: 0 %, 50 %, 100 % ----------------------------------------
if sec 2; then
echo "2. step time with activations offloaded (1f1b, p=$P on $gpus GPU(s), m=$((2*P)), $MODEL; median of 5 warm steps)"
printf '%-10s %-12s %-10s %-26s %s\n' offload step_s vs_none peak_activation_bytes_max transport
for pol in none selective all; do
  half=; [ $pol = selective ] && half="-D offload_chunks=0.5" # 1f1b has one chunk: half of each record
  # shellcheck disable=SC2086
  if prof off_$pol 1f1b -D p=$P -D m=$((2*P)) $MODEL -D offload=$pol $half --backend cuda; then
    python3 - "$tmp/off_$pol.json" "$tmp/off_none.json" $pol <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); base = json.load(open(sys.argv[2]))
print("%-10s %-12.4f %-10s %-26s %s" % (sys.argv[3], r["step_time_s"],
      "%+.2f%%" % ((r["step_time_s"] / base["step_time_s"] - 1) * 100), r["peak_activation_bytes_max"],
      r["transport"]))
PY
  else
    echo "$pol: $(head -n 1 "$tmp/off_$pol.err")"
  fi
done
echo "(none = 0 %, selective = half of every record (offload_chunks 0.5), all = every record that gains, docs/offload.md)"
# The copies on their own and beside products (build/gpubench_bench_copy).
if [ -x "$BUILD/gpubench_bench_copy" ]; then
  "$BUILD/gpubench_bench_copy"
fi
if [ -f "$tmp/off_none.json" ] && [ -f "$tmp/ov.txt" ]; then
  python3 - "$tmp/off_none.json" "$tmp/ov.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
us = [float(l.split()[5]) for l in open(sys.argv[2]) if l.startswith("cuda")]
n = r["instructions"] / r["devices"]
print("executor share of that step: %.0f instructions per device x %.1f us = %.2f ms of %.1f ms (%.2f %%)"
      % (n, max(us), n * max(us) * 1e-3, r["step_time_s"] * 1e3, n * max(us) * 1e-6 / r["step_time_s"] * 100))
PY
fi
echo

fi
# ---- 3. measured step against the simulator -------------------------------
if sec 3; then
# The profile's median step against the simulation of the same streams with
# the profiled costs (prediction_error), then a fresh process that loads the
# profile (-D costs=FILE, 3 warm-up steps) against the same prediction.
echo "3. measured step vs the prediction from a GPU profile ($MODEL)"
printf '%-8s %-4s %-4s %-10s %-10s %-10s %-12s %-12s %-10s %s\n' recipe p m tf_ms tb_ms tw_ms measured_s predicted_s error fresh_process_error
# shellcheck disable=SC2086
prof pr 1f1b -D p=1 -D m=4 $MODEL --backend cuda >/dev/null 2>&1 # the GPU's clocks up first
for r in 1f1b zb-h1; do
  for p in 1 $P; do
    M=$((4*p))
    # shellcheck disable=SC2086
    if prof pr $r -D p=$p -D m=$M $MODEL --backend cuda; then
      # shellcheck disable=SC2086
      $SC run $r -D p=$p -D m=$M $MODEL -D costs="$tmp/pr.prof" --warmup 3 --backend cuda --json >"$tmp/fresh.json" 2>/dev/null || echo '{}' >"$tmp/fresh.json"
      python3 - "$tmp/pr.json" "$tmp/pr.prof" "$tmp/fresh.json" $r $p $M <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1])); pf = json.load(open(sys.argv[2])); fr = json.load(open(sys.argv[3]))
m = lambda k: statistics.mean(pf[k]) * 1e3
fe = "%+.2f%%" % (fr["prediction_error"] * 100) if "prediction_error" in fr else "-"
print("%-8s %-4s %-4s %-10.3f %-10.3f %-10.3f %-12.4f %-12.4f %-10s %s" % (sys.argv[4], sys.argv[5], sys.argv[6],
      m("tf"), m("tb"), m("tw"), r["step_time_s"], r["predicted_step_time_s"], "%+.2f%%" % (r["prediction_error"] * 100), fe))
PY
    else
      echo "$r p=$p: $(head -n 1 "$tmp/pr.err")"
    fi
  done
done
echo "(p > 1 on one GPU: the devices are emulated and share the GPU, so each pass's profiled time includes the other devices' work)"
echo

fi
# ---- 3b. transfers between devices -----------------------------------------
if sec 3; then
echo "3b. transfers between devices (the profile's transfers of section 3's last run: bytes over the transfer's own time)"
if [ -f "$tmp/pr.prof" ]; then
  python3 - "$tmp/pr.prof" "$tmp/pr.json" <<'PY'
import json, sys
pf = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
for t in pf.get("transfers", []):
    print("%-10s %12d bytes  %10.3f ms  %8.1f GB/s  (%d samples)" % (r["transport"], t["bytes"], t["s"] * 1e3, t["bytes"] / t["s"] / 1e9 if t["s"] > 0 else 0, t["samples"]))
PY
fi
echo

fi
# ---- 4. TFLOP/s of the products ---------------------------------------------
if sec 4; then
echo "4. achieved TFLOP/s of the F, B and W products"
if [ -x "$BUILD/gpubench_bench_gemm" ]; then
  "$BUILD/gpubench_bench_gemm"
  echo
  STAGECRAFT_CUDA_TF32=1 "$BUILD/gpubench_bench_gemm"
else
  echo "missing $BUILD/gpubench_bench_gemm (make gpu-bench builds it)"
fi
fi

# ---- 5. overlapped pairs: the lane against the halves in turn --------------
if sec 5; then
# dualpipev's pairs with the backward half on the lane's stream, against the
# same halves in turn on one stream (STAGECRAFT_PAIRS=serial), warm; the
# same bits either way (docs/run.md#overlapped-pairs).
echo "5. overlapped pairs on two streams (dualpipev, p=$P, m=$((2*P)), $MODEL; median of 5 warm steps)"
printf '%-8s %-12s %-10s %s\n' pairs step_s vs_serial loss_hex
for mode in serial lane; do
  # shellcheck disable=SC2086
  if STAGECRAFT_PAIRS=$mode prof pair_$mode dualpipev -D p=$P -D m=$((2*P)) $MODEL --backend cuda; then
    python3 - "$tmp/pair_$mode.json" "$tmp/pair_serial.json" $mode <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); base = json.load(open(sys.argv[2]))
print("%-8s %-12.4f %-10s %s" % (sys.argv[3], r["step_time_s"],
      "%+.2f%%" % ((r["step_time_s"] / base["step_time_s"] - 1) * 100), r["loss_hex"]))
PY
  else
    echo "$mode: $(head -n 1 "$tmp/pair_$mode.err")"
  fi
done
echo "(the built-in model has no all-to-all: the lane gains only where one pass leaves the GPU idle)"
echo
fi
