#!/bin/sh
# tests/gpu/run.sh — the cuda backend on GPUs (docs/run.md). It skips only
# when there is no GPU: the backend says "no usable CUDA device" (no NVIDIA
# driver or GPU found) or "not built into this binary" (no nvcc at build
# time), and nvidia-smi lists no GPU. Then it prints "SKIP: no GPU (why)" and
# a summary with everything skipped, and exits 0; tests/run.sh runs it
# either way, so the skip is visible. Any other failure of the probe (the
# module or NCCL not loading, a driver mismatch, a backend bug) fails.
# tests/cudastub/run.sh also runs this script on the CUDA stand-in
# (SC_CUDASTUB=1: section 4's NCCL across processes is then not run), with
# SC_GPU_UNIT=done (it ran section 1's tests itself, on the same 2 emulated
# GPUs) and SC_TIER=check (section 2 on the sample recipes: that suite runs
# every recipe on the stand-in itself).
#
# With GPUs (any number; one is enough, devices are then emulated on it):
#   1. the backend's slots against the cpu backend, the offload round trip
#      bit for bit, the memory cap, errors, both GPU transports and their
#      watchdogs ($BUILD/gpu_test_backend_cuda); the decoder's slots against
#      double-precision references and finite differences
#      ($BUILD/gpu_test_decoder_cuda); the capture slots, replayed with the
#      eager bits ($BUILD/gpu_test_graph_cuda);
#   2. every stdlib recipe `run --backend cuda --check` at p=2 m=4 and p=4
#      m=8: loss and gradients within 1e-4 (relative) of the CPU reference,
#      measured peak activation bytes == predicted on every device, the
#      transport nccl when every device has its own GPU, else cuda-local;
#   2b. collectives: a split vocabulary, synchronized optimizer steps;
#   3. both transports give the same loss; a cuda run repeats bit for bit;
#   4. mpirun (when built with MPI): one rank per GPU with nccl, --check;
#      more ranks than GPUs refused; with two GPUs or more, a stopped rank
#      ends the job with "a peer is gone or stuck" (ncclCommAbort), no hang;
#   5. out of memory: predicted vs free GPU memory before allocating, and a
#      device cap mid-step, one line naming the device;
#   6. offload (needs issue 4's -D offload): bit-exact loss with offload=all;
#   7. run --graph: captured and replayed steps with the eager run's loss bits;
#   8. expert parallelism (ep=2) through nccl and cuda-local, a GPU per device.
# Run from the repository root: sh tests/gpu/run.sh  (or make gpu-test)
BUILD=${BUILD:-build}
SC=${SC:-$BUILD/stagecraft}
pass=0; fail=0; skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SECTIONS=8

. tests/lib.sh # ok, bad, expect
skipped() { skip=$((skip+1)); echo "SKIP: $*"; }

case "$BUILD" in
  *asan*|*fuzz*) # the CUDA driver and AddressSanitizer's shadow memory do not mix
    if [ -z "$SC_CUDASTUB" ]; then
      echo "SKIP: the GPU tests run in the plain build (make gpu-test), not under sanitizers"
      echo "gpu: 0 passed, 0 failed, $SECTIONS skipped"
      exit 0
    fi ;;
esac
$SC run 1f1b -D p=1 -D m=1 --backend cuda --json >"$tmp/probe" 2>"$tmp/err"; rc=$?
if [ $rc != 0 ]; then
  why=$(head -n 1 "$tmp/err" | sed 's/^stagecraft: error: //')
  listed=
  [ -z "$SC_CUDASTUB" ] && command -v nvidia-smi >/dev/null && listed=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ $rc = 3 ] && [ "${listed:-0}" = 0 ] &&
     echo "$why" | grep -qE "no usable CUDA device|not built into this binary"; then
    echo "SKIP: no GPU ($why)"
    echo "gpu: 0 passed, 0 failed, $SECTIONS skipped"
    exit 0
  fi
  echo "FAIL: the cuda backend does not run (exit $rc${listed:+; nvidia-smi lists $listed GPU(s)}): $why" >&2
  echo "gpu: 0 passed, 1 failed"
  exit 1
fi
# GPUs: as many as a run of 8 devices spreads over.
gpus=$($SC run 1f1b -D p=8 -D m=8 --backend cuda --json 2>/dev/null |
       python3 -c 'import json, sys; print(json.load(sys.stdin)["gpus"])')
name=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["gpu"])' "$tmp/probe")
echo "gpu: $gpus GPU(s) visible to a run of 8 devices, GPU 0 is $name"


# A --json result of --backend cuda --check: tolerance 1e-4, exact peaks,
# and the transport expected for p devices on $gpus GPUs (tests/py/runjson.py).
json_ok() { # file transport
  python3 tests/py/runjson.py "$1" --tol 1e-4 --backend cuda --transport "$2" >&2
}
want_tp() { [ "$1" -le "$gpus" ] && echo nccl || echo cuda-local; }

# 1. The backend's slots, offload, transports.
for t in gpu_test_backend_cuda gpu_test_decoder_cuda gpu_test_moe_cuda gpu_test_graph_cuda; do
  if [ "${SC_GPU_UNIT:-}" = done ]; then
    : # the caller ran it (tests/cudastub/run.sh)
  elif [ -x "$BUILD/$t" ]; then
    "$BUILD/$t" >"$tmp/unit" 2>&1; rc=$?
    cat "$tmp/unit"
    [ $rc = 0 ] && ok || bad "$t exited $rc"
  else
    bad "$BUILD/$t is missing (make gpu-test builds it)"
  fi
done

# 2. Every stdlib recipe against the CPU reference.
recipes=$($SC list | awk '/^[a-z0-9]/ {print $1}')
for r in $(sample $recipes); do
  for pm in "2 4" "4 8"; do
    set -- $pm
    $SC check "$r" -D p=$1 -D m=$2 >/dev/null 2>&1 || continue
    if timeout 300 $SC run "$r" -D p=$1 -D m=$2 --backend cuda --check --json >"$tmp/j" 2>"$tmp/e" &&
       json_ok "$tmp/j" "$(want_tp $1)"; then ok
    else bad "run $r p=$1 m=$2 --backend cuda --check"; head -3 "$tmp/e" >&2; fi
  done
done

# 2b. Collectives on the GPU: a split vocabulary (docs/vocab.md#running-the-split-model) and
# synchronized optimizer steps (docs/steps.md#optimizer-synchronization), against the CPU
# reference.
for vp in vocab-1 vocab-2; do
  for r in 1f1b $(full && echo v-half); do
    if timeout 300 $SC run $r -D p=4 -D m=8 -D vocab_par=$vp --backend cuda --check --json >"$tmp/j" 2>"$tmp/e" &&
       json_ok "$tmp/j" "$(want_tp 4)"; then ok
    else bad "run $r p=4 vocab_par=$vp --backend cuda --check"; head -3 "$tmp/e" >&2; fi
  done
done
for s in sync post-validation; do
  if timeout 300 $SC run zb-h2 -D p=4 -D m=8 -D steps=3 -D optim_sync=$s -D clip=0.9 --backend cuda --check --json >"$tmp/j" 2>"$tmp/e" &&
     json_ok "$tmp/j" "$(want_tp 4)"; then ok
  else bad "run zb-h2 steps=3 optim_sync=$s --backend cuda --check"; head -3 "$tmp/e" >&2; fi
done

# 3. Both transports agree; runs repeat bit for bit.
hex() { sed 's/.*"loss_hex": "\([^"]*\)".*/\1/' "$1"; }
STAGECRAFT_TRANSPORT=cuda-local $SC run zb-h1 -D p=2 -D m=4 --backend cuda --check --json >"$tmp/a" 2>"$tmp/e" &&
  json_ok "$tmp/a" cuda-local && ok || { bad "zb-h1 over cuda-local"; head -3 "$tmp/e" >&2; }
$SC run zb-h1 -D p=2 -D m=4 --backend cuda --json >"$tmp/b" 2>"$tmp/e"
$SC run zb-h1 -D p=2 -D m=4 --backend cuda --json >"$tmp/c" 2>"$tmp/e"
[ -n "$(hex "$tmp/b")" ] && [ "$(hex "$tmp/b")" = "$(hex "$tmp/c")" ] && ok || bad "cuda runs differ: $(hex "$tmp/b") vs $(hex "$tmp/c")"
[ "$(hex "$tmp/a")" = "$(hex "$tmp/b")" ] && ok || bad "cuda-local vs $(want_tp 2): $(hex "$tmp/a") vs $(hex "$tmp/b")"
if [ "$gpus" -ge 2 ]; then
  expect 0 '"transport": "nccl"' -- $SC run zb-h1 -D p=2 -D m=4 --backend cuda --json
else
  expect 3 "STAGECRAFT_TRANSPORT=nccl: 2 devices on 1 GPUs" -- env STAGECRAFT_TRANSPORT=nccl $SC run zb-h1 -D p=2 -D m=4 --backend cuda
fi

# 4. MPI: one rank per GPU.
if [ -n "$SC_CUDASTUB" ]; then
  skipped "the CUDA stand-in's NCCL works within one process (tests/cudastub/run.sh tests the GPU choice under mpirun)"
elif have_mpi; then
  np=$gpus; [ "$np" -gt 4 ] && np=4
  expect 0 '"transport": "nccl"' -- timeout 300 mpirun -np $np $SC run 1f1b -D p=$np -D m=$((2*np)) --backend cuda --check --json
  expect 3 "are on the same GPU (mpirun started $((gpus+1)) ranks on this node" -- timeout 120 mpirun -np $((gpus+1)) --oversubscribe $SC run gpipe -D p=$((gpus+1)) --backend cuda
  if [ "$gpus" -ge 2 ]; then
    # A rank stopped mid-step: the others give up after the timeout, abort
    # their communicators, and the job ends.
    # (a step of about 20 s on an H200: 1024 microbatches of 2048 x 4096)
    STAGECRAFT_TIMEOUT=5 timeout 120 mpirun -np 2 $SC run 1f1b -D p=2 -D m=1024 -D hidden=4096 -D seq=256 -D batch=8 --backend cuda >"$tmp/out" 2>"$tmp/err" &
    tpid=$!
    sleep 12
    mpid=$(ps -o pid= --ppid $tpid | tr -d ' ')
    victim=$(ps -o pid= --ppid "$mpid" 2>/dev/null | sed -n 2p | tr -d ' ')
    [ -n "$victim" ] && kill -STOP "$victim"
    wait $tpid; rc=$?
    [ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null
    if [ -n "$victim" ] && [ $rc != 0 ] && [ $rc != 124 ] && grep -q "a peer is gone or stuck" "$tmp/err"; then ok
    else bad "stopped rank under nccl: exit $rc (victim '$victim')"; head -5 "$tmp/err" >&2; fi
  else
    skipped "a stopped NCCL peer needs two GPUs (the watchdog is tested in gpu_test_backend_cuda)"
  fi
else
  skipped "mpirun missing or built without MPI"
fi

# 5. Out of memory: before allocating (predicted vs free), and mid-step (450000
# bytes per device hold the parameters, gradients and AdamW moments of 1f1b's
# default model, not its activations).
expect 4 "predicted" -- $SC run 1f1b -D p=1 -D m=1 -D hidden=16384 -D layers=40 --backend cuda
grep -q "free of" "$tmp/err" && grep -q "out of memory on d0" "$tmp/err" && ok || bad "GPU OOM message: $(cat "$tmp/err")"
STAGECRAFT_DEVICE_MEMORY=450000 expect 4 "out of memory on d" -- timeout 120 $SC run 1f1b --backend cuda
grep -q "GPU [0-9]* has" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ] && ok || bad "device cap on cuda: $(cat "$tmp/err")"

# 6. Offload (issue 4): bit-exact against no offload on the same backend.
if $SC check 1f1b -D p=2 -D m=4 -D offload=none >/dev/null 2>&1; then
  if $SC run 1f1b -D p=2 -D m=4 -D offload=none --backend cuda --json >"$tmp/n" 2>"$tmp/e" &&
     $SC run 1f1b -D p=2 -D m=4 -D offload=all --backend cuda --check --json >"$tmp/o" 2>>"$tmp/e" &&
     [ "$(hex "$tmp/n")" = "$(hex "$tmp/o")" ]; then ok
  else bad "offload=all on cuda: $(hex "$tmp/o") vs $(hex "$tmp/n")"; head -3 "$tmp/e" >&2; fi
else
  skipped "-D offload is not known to this stagecraft (issue 4)"
fi

# 7. run --graph (docs/graphs.md): step 2 captured, step 3 replayed; every
# step's loss has the eager run's bits (cuda-local: NCCL is not captured).
for r in 1f1b zb-h1; do
  for mode in eager graph; do
    flag=; [ $mode = graph ] && flag=--graph
    STAGECRAFT_TRANSPORT=cuda-local $SC run $r -D p=4 -D m=8 -D steps=3 --backend cuda --check \
      $flag --json >"$tmp/$mode" 2>"$tmp/e" || { bad "run $r --graph ($mode): $(head -1 "$tmp/e")"; continue 2; }
  done
  if python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
sys.exit(not (a["step_loss"] == b["step_loss"] and b.get("graph_replays") == 2))' "$tmp/eager" "$tmp/graph" &&
     [ "$(hex "$tmp/eager")" = "$(hex "$tmp/graph")" ]; then ok
  else bad "run $r --graph: $(hex "$tmp/graph") vs eager $(hex "$tmp/eager")"; fi
done

# 8. Expert parallelism (docs/run.md#expert-parallelism): ep = 2 at p = 1,
# a GPU per device, the all-to-alls through nccl and cuda-local: the CPU
# reference within 1e-4, peaks and parameter bytes == predicted, the same
# loss bits both ways; one GPU is refused in one line. (bench/gpu/ep.sh
# times dualpipev against 1f1b.)
X=tests/fixtures/models/run-mixtral.json
if [ "$gpus" -ge 2 ]; then
  for t in nccl cuda-local; do
    STAGECRAFT_TRANSPORT=$t $SC run 1f1b --model $X -D p=1 -D m=2 -D ep=2 --backend cuda --check \
      --json >"$tmp/ep_$t" 2>"$tmp/e" && json_ok "$tmp/ep_$t" $t && ok ||
      { bad "run 1f1b -D ep=2 over $t"; head -3 "$tmp/e" >&2; }
  done
  [ "$(hex "$tmp/ep_nccl")" = "$(hex "$tmp/ep_cuda-local")" ] && ok ||
    bad "ep=2: nccl's loss $(hex "$tmp/ep_nccl"), cuda-local's $(hex "$tmp/ep_cuda-local")"
else
  # one GPU: the 1 x 2 devices emulated on it, over cuda-local
  $SC run 1f1b --model $X -D p=1 -D m=2 -D ep=2 --backend cuda --check --json >"$tmp/ep_1" \
    2>"$tmp/e" && json_ok "$tmp/ep_1" cuda-local && ok ||
    { bad "run 1f1b -D ep=2 on one GPU (emulated)"; head -3 "$tmp/e" >&2; }
fi

echo "gpu: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
