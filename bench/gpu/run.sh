#!/bin/sh
# bench/gpu/run.sh — the GPU benchmarks of bench/README.md; prints figures,
# passes or fails nothing. Without a GPU (no driver or device, or built
# without nvcc) it says so and exits 0; when the backend is there but does
# not run, it says why and exits 1.
#   1. executor overhead per instruction (tiny passes: launch + sync);
#   2. step time with 0 %, 50 % and 100 % of activations offloaded, hidden
#      4096 (needs issue 4's -D offload=none|selective|all);
#   3. measured step time against the simulator's prediction from the
#      measured pass costs (F, B, W and transfer times fed back into sim);
#   4. achieved TFLOP/s of the F, B and W products against the GPU's peak
#      (build/gpubench_bench_gemm).
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

# ---- 1. executor overhead per instruction --------------------------------
# Passes of a model with 8 features: the time is the executor, the kernel
# launches and the sync after each pass, not the arithmetic. Per device:
# step time / (instructions / devices).
echo "1. executor overhead per instruction (hidden 8, vocab 8, seq 1, batch 1)"
printf '%-10s %-4s %-6s %-12s %-12s %s\n' backend p m instructions step_s us/instr
for be in cpu cuda; do
  for pm in "1 512" "4 256"; do
    set -- $pm
    best=""
    for i in 1 2 3; do
      $SC run 1f1b -D p=$1 -D m=$2 -D hidden=8 -D vocab=8 -D seq=1 -D batch=1 --backend $be --json >"$tmp/j" 2>/dev/null || continue
      t=$(field "$tmp/j" step_time_s)
      best=$(python3 -c "import sys; a=sys.argv[1]; b=float(sys.argv[2]); print(b if not a else min(float(a), b))" "$best" "$t")
    done
    n=$(field "$tmp/j" instructions); tp=$(field "$tmp/j" transport)
    python3 -c "import sys; be,p,m,n,t,tp=sys.argv[1:]; print('%-10s %-4s %-6s %-12s %-12.6f %.1f  (%s)' % (be,p,m,n,float(t),float(t)/(int(n)/int(p))*1e6,tp))" $be $1 $2 $n "$best" "$tp"
  done
done
echo

# ---- 2. offload: 0 %, 50 %, 100 % ----------------------------------------
P=$gpus; [ "$P" -gt 4 ] && P=4; [ "$P" -lt 2 ] && P=2
MODEL="-D hidden=4096 -D layers=$((2*P)) -D vocab=4096 -D seq=1024 -D batch=4"
echo "2. step time with activations offloaded (1f1b, p=$P on $gpus GPU(s), m=$((2*P)), $MODEL)"
if $SC check 1f1b -D p=$P -D offload=none >/dev/null 2>&1; then
  printf '%-10s %-12s %-26s %s\n' offload step_s peak_activation_bytes_max transport
  for pol in none selective all; do
    half=; [ $pol = selective ] && half="-D offload_chunks=0.5" # 1f1b has one chunk: half of each record
    # shellcheck disable=SC2086
    if $SC run 1f1b -D p=$P -D m=$((2*P)) $MODEL -D offload=$pol $half --backend cuda --json >"$tmp/j" 2>"$tmp/e"; then
      printf '%-10s %-12.4f %-26s %s\n' $pol "$(field "$tmp/j" step_time_s)" "$(field "$tmp/j" peak_activation_bytes_max)" "$(field "$tmp/j" transport)"
    else
      echo "$pol: $(head -n 1 "$tmp/e")"
    fi
  done
  echo "(none = 0 %, selective = half of every record (offload_chunks 0.5), all = every record that gains, docs/offload.md)"
else
  echo "skipped: this stagecraft has no -D offload (issue 4, offload policies, is not merged)"
fi
echo

# ---- 3. measured step against the simulator -------------------------------
echo "3. measured step time vs the simulator fed the measured pass costs"
printf '%-8s %-4s %-4s %-10s %-10s %-10s %-10s %-12s %-12s %s\n' recipe p m tf_ms tb_ms tw_ms tcomm_ms measured_s simulated_s ratio
for r in 1f1b zb-h1; do
  M=$((4*P))
  $SC run $r -D p=$P -D m=$M $MODEL --backend cuda --json --trace "$tmp/t.json" >"$tmp/j" 2>"$tmp/e" || { echo "$r: $(head -n 1 "$tmp/e")"; continue; }
  costs=$(python3 - "$tmp/t.json" <<'PY'
import json, statistics, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
pid = [e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"] == "measured"][0]
d = {}
for e in ev:
    if e["ph"] == "X" and e["pid"] == pid:
        d.setdefault(e["cat"], []).append(e["dur"] * 1e-6)
mean = lambda k: statistics.mean(d[k]) if k in d else 0.0
tb, tw = mean("B"), mean("W")
if "BW" in d and not tb:
    tb = tw = mean("BW") / 2
# a transfer's own time: the fastest RECV group (the others also wait for their sender)
tcomm = min(d["RECV"]) if "RECV" in d else 0.0
print(mean("F"), tb, tw, tcomm)
PY
)
  set -- $costs
  sim=$($SC sim $r -D p=$P -D m=$M -D tf=$1 -D tb=$2 -D tw=$3 -D tcomm=$4 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["makespan"])')
  meas=$(field "$tmp/j" step_time_s)
  python3 -c "import sys; r,p,m,tf,tb,tw,tc,a,b=sys.argv[1:]; print('%-8s %-4s %-4s %-10.3f %-10.3f %-10.3f %-10.3f %-12.4f %-12.4f %.3f' % (r,p,m,float(tf)*1e3,float(tb)*1e3,float(tw)*1e3,float(tc)*1e3,float(a),float(b),float(a)/float(b)))" $r $P $M $1 $2 $3 $4 "$meas" "$sim"
done
echo "(costs are means over all stages; the last stage also computes the head, so the simulator's uniform costs are an approximation)"
echo

# ---- 4. TFLOP/s of the products ---------------------------------------------
echo "4. achieved TFLOP/s of the F, B and W products"
if [ -x "$BUILD/gpubench_bench_gemm" ]; then
  "$BUILD/gpubench_bench_gemm"
  echo
  STAGECRAFT_CUDA_TF32=1 "$BUILD/gpubench_bench_gemm"
else
  echo "missing $BUILD/gpubench_bench_gemm (make gpu-bench builds it)"
fi
