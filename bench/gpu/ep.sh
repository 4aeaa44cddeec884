#!/bin/sh
# bench/gpu/ep.sh — expert parallelism on GPUs (docs/run.md#expert-parallelism,
# bench/gpu.md): ep = 2 dualpipev against 1f1b, p = GPUs / 2 (at most 4:
# 8 GPUs), one GPU per device, the all-to-alls through NCCL and, for
# comparison, cuda-local (through the host); on one GPU, p = 2 with the 4
# devices emulated on it, cuda-local only (NCCL needs a GPU per device).
#   1. correctness: each recipe and transport `run --check` on
#      tests/fixtures/models/run-mixtral.json: loss and gradients within 1e-4
#      of the CPU reference, peaks and parameter bytes == predicted (a
#      failure fails the script, exit 1);
#   2. speed: the median of 5 warm steps (`run --profile`) of a Mixtral-shaped
#      model (EP_MODEL), dualpipev / 1f1b per transport, and each stage's
#      measured dispatch and combine from the profile.
# Without a GPU it says so and exits 0. Prints figures; record them in bench/gpu.md with the machine.
# On the CUDA stand-in (tests/cudastub: SC_CUDASTUB=1, its module and NCCL
# in STAGECRAFT_CUDA_MODULE, STAGECRAFT_NCCL_LIBRARY, SC_CUDASTUB_GPUS=8) it
# runs as is, with a small EP_MODEL (the script's own test).
#   sh bench/gpu/ep.sh   EP_MODEL="-D hidden=... " EP_INTER=4096 EP_TRANSPORTS="nccl cuda-local"
#   EP_PMAX=15 (each profile's --profile-max-time, seconds)
BUILD=${BUILD:-build}
SC=${SC:-$BUILD/stagecraft}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
X=tests/fixtures/models/run-mixtral.json

$SC run 1f1b -D p=1 -D m=1 --backend cuda --json >"$tmp/probe" 2>"$tmp/err"; rc=$?
if [ $rc != 0 ]; then
  why=$(head -n 1 "$tmp/err" | sed 's/^stagecraft: error: //')
  listed=$(command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ $rc = 3 ] && [ "${listed:-0}" = 0 ] && echo "$why" | grep -qE "no usable CUDA device|not built into this binary"; then
    echo "bench/gpu/ep: skipped, no GPU ($why)"
    exit 0
  fi
  echo "bench/gpu/ep: FAILED: the cuda backend does not run (exit $rc): $why" >&2
  exit 1
fi
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
gpus=$($SC run 1f1b -D p=8 -D m=8 --backend cuda --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["gpus"])')
P=$((gpus / 2)); [ "$P" -gt 4 ] && P=4
TRANSPORTS=${EP_TRANSPORTS:-"nccl cuda-local"}
if [ "$P" -lt 1 ]; then # one GPU: the 2 x 2 devices emulated on it, cuda-local
  P=2 TRANSPORTS=${EP_TRANSPORTS:-cuda-local}
  echo "GPU: $(field "$tmp/probe" gpu), 1 visible: ep = 2 at p = 2, the 4 devices emulated on it"
else
  echo "GPU: $(field "$tmp/probe" gpu), $gpus visible: ep = 2 at p = $P ($((2 * P)) devices)"
fi
RECIPES=1f1b; [ "$P" -ge 2 ] && RECIPES="1f1b dualpipev"
EP_MODEL=${EP_MODEL:-"-D hidden=2048 -D layers=$((4 * P)) -D seq=1024 -D batch=8"}
# The experts' width has no -D (an `-D inter` was refused: unknown
# parameter): tiny-mixtral.json with intermediate_size EP_INTER.
EP_CFG=$tmp/ep-mixtral.json
python3 -c 'import json, sys; c = json.load(open("tests/fixtures/models/tiny-mixtral.json")); c["intermediate_size"] = int(sys.argv[2]); json.dump(c, open(sys.argv[1], "w"))' "$EP_CFG" "${EP_INTER:-4096}"

echo "1. --check ($X, p=$P m=$((2 * P)) ep=2)"
for r in $RECIPES; do
  for t in $TRANSPORTS; do
    if STAGECRAFT_TRANSPORT=$t $SC run $r --model $X -D p=$P -D m=$((2 * P)) -D ep=2 --backend cuda \
         --check --json >"$tmp/c.json" 2>"$tmp/err" &&
       python3 tests/py/runjson.py "$tmp/c.json" --tol 1e-4 --backend cuda --transport $t >&2; then
      echo "  $r $t: ok, max grad rel err $(field "$tmp/c.json" max_grad_rel_err)"
    else
      echo "bench/gpu/ep: FAILED: run $r -D ep=2 --check ($t): $(head -n 1 "$tmp/err")" >&2
      exit 1
    fi
  done
done

echo "2. median of 5 warm steps (tiny-mixtral's shape, $EP_MODEL, experts' width ${EP_INTER:-4096}; p=$P m=$((2 * P)) ep=2)"
printf '%-10s %-11s %-10s %-10s %s\n' recipe transport step_s vs_1f1b "dispatch+combine s per stage"
for t in $TRANSPORTS; do
  base=
  for r in $RECIPES; do
    # shellcheck disable=SC2086
    if ! STAGECRAFT_TRANSPORT=$t $SC run $r --model "$EP_CFG" $EP_MODEL \
         -D p=$P -D m=$((2 * P)) -D ep=2 --backend cuda --profile "$tmp/p.json" \
         --profile-max-time "${EP_PMAX:-15}" --json \
         >"$tmp/s.json" 2>"$tmp/err"; then
      echo "  $r $t: failed: $(head -n 1 "$tmp/err")"; continue
    fi
    python3 - "$tmp/s.json" "$tmp/p.json" "$r" "$t" "${base:-0}" <<'PY'
import json, sys
s, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
r, t, base = sys.argv[3], sys.argv[4], float(sys.argv[5])
step = s["step_time_s"]
a2a = [d + c for d, c in zip(p.get("dispatch", []), p.get("combine", []))]
print(f"{r:<10} {t:<11} {step:<10.4f} {step / base if base else 1:<10.3f} "
      + " ".join(f"{x:.4f}" for x in a2a))
PY
    if [ "$r" = 1f1b ]; then base=$(field "$tmp/s.json" step_time_s); fi
  done
done
exit 0
