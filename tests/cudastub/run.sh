#!/bin/sh
# tests/cudastub/run.sh — the CUDA module on the CUDA STAND-IN (a test
# double of the CUDA runtime, cuBLAS and NCCL on the CPU; README.md here).
# Needs no GPU and no CUDA: it runs on every machine, in every `make test`,
# so the module's stream, event, memory and transport logic is exercised on
# every CI run. The module is the real one (runtime/cuda/*.c, and the
# kernels of cuda_kernels.cu compiled for the host), built against the
# stand-in as $BUILD/cudastub/libstagecraft_cuda.so.
#   1. the GPU unit test (tests/gpu/test_backend_cuda.c) on 1 and 2 emulated
#      GPUs, and with random delays on every stream operation; the decoder's
#      slots (tests/gpu/test_decoder_cuda.c: references in double, finite
#      differences) on 1 emulated GPU, and on 2 with random delays;
#   2. every stdlib recipe `run --backend cuda --check` at p=4 m=8, on 1
#      emulated GPU (cuda-local) and on 4 of them (nccl), with offload=none
#      and offload=all: the CPU reference within 1e-4, measured peaks ==
#      predicted, the expected transport, no violation;
#   2b. recomputation (all, partial, mixed with offload's budget) on 1 and 4;
#   3. some of them again, also at p=2, with 0-300 us random delays on every
#      stream operation; overlapped pairs (dualpipev, dualpipe) on two
#      streams per GPU, the lane's bits the serial halves';
#   4. runs that fail on purpose (device memory caps) end with one line and
#      exit 4, and free nothing a queued copy still uses;
#   5. p=1 and cuda-local without NCCL; NCCL missing; NCCL_DEBUG and --json;
#      no device; the module found beside the executable, a stale one refused;
#   6. tests/gpu/run.sh itself on the stand-in (it must pass; without a
#      device it must skip; with a broken module it must fail), without
#      what this suite already ran (its unit test, every recipe);
#   7. mpirun: ranks that each see only their own GPU are accepted, two
#      ranks on one GPU refused;
#   8. run --graph: captured and replayed steps with the eager run's loss
#      bits, the capture slots' test (tests/gpu/test_graph_cuda.c), and the
#      programs refused with their reason;
#   9. expert parallelism (ep=2): a GPU per device, the all-to-alls through
#      NCCL and cuda-local, fewer GPUs and --graph refused.
# A violation of CUDA's rules found by the stand-in (use after free, use
# before the allocation is reached, a stale error) fails the run (exit 86).
# Run from the repository root: sh tests/cudastub/run.sh
BUILD=${BUILD:-build}
SC=${SC:-$BUILD/stagecraft}
STUB=$BUILD/cudastub
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan_mpi.supp:print_suppressions=0:fast_unwind_on_malloc=0"
export STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so"
export STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so"
export SC_CUDASTUB=1 STAGECRAFT_TIMEOUT=120
unset CUDA_VISIBLE_DEVICES SC_CUDASTUB_DELAY_US NCCL_DEBUG NCCL_DEBUG_FILE STAGECRAFT_TRANSPORT

. tests/lib.sh # ok, bad, expect, full, sample

for f in "$STUB/libstagecraft_cuda.so" "$STUB/libsc_cudastub.so" "$STUB/libsc_ncclstub.so" "$BUILD/gpu_test_backend_cuda" "$BUILD/gpu_test_decoder_cuda" "$BUILD/gpu_test_moe_cuda"; do
  if [ ! -f "$f" ]; then
    echo "FAIL: $f is missing (make test builds the stand-in)" >&2
    echo "cudastub: 0 passed, 1 failed"; exit 1
  fi
done


# A --json result of --backend cuda --check on the stand-in (tests/py/runjson.py;
# `later` queues one for a single python3 at the end).
CHK="--tol 1e-4 --backend cuda --stand-in"
# json_ok FILE TRANSPORT: queued too (a python3 start each was most of a
# check); a failure is reported with its label by verdicts.
json_ok() { # file transport
  _jk=$(( ${_jk:-0} + 1 ))
  later "$1" "json_ok $_jk: a --json result of --backend cuda --check on $2" $CHK --transport "$2"
}

# 1. The GPU unit test on the stand-in (make check: on 1 GPU; NCCL between
# GPUs is section 6a's there).
for g in 1 $(full && echo 2); do
  if SC_CUDASTUB_GPUS=$g "$BUILD/gpu_test_backend_cuda" >"$tmp/u" 2>&1 && grep -q ' 0 failed' "$tmp/u"; then ok
  else bad "gpu_test_backend_cuda on $g emulated GPU(s)"; tail -8 "$tmp/u" >&2; fi
done
if ! full; then :
elif SC_CUDASTUB_GPUS=2 SC_CUDASTUB_DELAY_US=200 "$BUILD/gpu_test_backend_cuda" >"$tmp/u" 2>&1; then ok
else bad "gpu_test_backend_cuda with random delays"; tail -8 "$tmp/u" >&2; fi
# The decoder's slots (a second or so): plain, and with random delays.
for d in $(full && echo 0) 200; do
  if SC_CUDASTUB_GPUS=$((1 + d / 200)) SC_CUDASTUB_DELAY_US=$d "$BUILD/gpu_test_decoder_cuda" >"$tmp/u" 2>&1 &&
     grep -q '^decoder-cuda: [1-9][0-9]* passed, 0 failed' "$tmp/u"; then ok
  else bad "gpu_test_decoder_cuda (delays $d us)"; tail -8 "$tmp/u" >&2; fi
done
# The mixture of experts' slots, with random delays.
if SC_CUDASTUB_DELAY_US=100 "$BUILD/gpu_test_moe_cuda" >"$tmp/u" 2>&1 &&
   grep -q '^moe-cuda: [1-9][0-9]* passed, 0 failed' "$tmp/u"; then ok
else bad "gpu_test_moe_cuda (delays 100 us)"; tail -8 "$tmp/u" >&2; fi

# 2. Every stdlib recipe through the module's real objects.
recipes=$($SC list | awk '/^[a-z0-9]/ {print $1}')
runs=0
# LeakSanitizer's own tracer can crash at exit reading the dynamic TLS of
# the dlopen'ed OpenBLAS and stub ("Tracer caught signal 11", "LeakSanitizer
# has encountered a fatal error": no leak was found or reported, the check
# itself died; tests/steps.sh meets it in MPI ranks). Such a run is run
# again once; a leak report, a sanitizer finding or any other failure is not.
run_stub() { # gpus [env...] -- args of run
  g=$1; shift
  env SC_CUDASTUB_GPUS="$g" "$@" >"$tmp/j" 2>"$tmp/e" && return 0
  grep -q "LeakSanitizer has encountered a fatal error" "$tmp/e" || return 1
  env SC_CUDASTUB_GPUS="$g" "$@" >"$tmp/j" 2>"$tmp/e"
}
one() { # recipe p m gpus offload [env...]
  r=$1 p=$2 m=$3 g=$4 off=$5; shift 5
  want=cuda-local; [ "$g" = "$p" ] && want=nccl
  if run_stub "$g" "$@" timeout 300 $SC run "$r" -D p="$p" -D m="$m" -D offload="$off" \
       --backend cuda --check --json; then
    later "$tmp/j" "run $r p=$p m=$m offload=$off on $g emulated GPU(s) $*" $CHK --transport $want
  else bad "run $r p=$p m=$m offload=$off on $g emulated GPU(s) $*"; head -4 "$tmp/e" >&2; fi
  runs=$((runs+1))
}
# make check: one GPU count and offload per sample recipe, in turn (the
# four pairs over the sample), at p=2 m=4 (NCCL on 2 GPUs; on 4: 6b's).
k=0 p2=4 m2=8; full || { p2=2 m2=4; }
for r in $(sample $recipes); do
  $SC check "$r" -D p=$p2 -D m=$m2 >/dev/null 2>&1 || { bad "$r does not build at p=$p2 m=$m2"; continue; }
  k=$((k+1)); want=$(echo 1none ${p2}all 1all ${p2}none | cut -d' ' -f$(( (k - 1) % 4 + 1 )))
  for g in 1 $p2; do
    for off in none all; do
      full || [ "$g$off" = "$want" ] || continue
      [ "$r$off" = forwardall ] && continue # forward-only: no offload (docs/guide.md#forward-only)
      [ "$r$off" = seq1f1ball ] && continue # slices: no offload yet (docs/slices.md)
      one "$r" $p2 $m2 $g $off
    done
  done
done
! full || [ "$runs" -ge 56 ] && ok || bad "only $runs recipe runs (every stdlib recipe should run)"

# 2b. Recomputation (docs/recompute.md): R recomputes the dropped parts on
# the device's compute stream; the peaks as predicted, the reference's
# gradients within 1e-4 (and the memory policies mixed).
# (make check: its sample's first recipe on 1 GPU, the second on 2, at p=2
# m=4; make test: p=4 m=8 on 1 and 4.)
k=0 p2=4 m2=8; full || { p2=2 m2=4; }
for r in $(sample zb-h1 gis v-half interleaved); do
  k=$((k+1))
  for g in 1 $p2; do
    full || [ $(( (k + g) % 2 )) = 0 ] || continue
    # (the budget moves records at either size: 32 at p=4 under mem 3, 4 at p=2 under 1.5)
    mixed="recompute=budget -D offload=budget -D mem=$([ $p2 = 4 ] && echo 3 || echo 1.5) -D offload_ratio=0.5"
    [ "$r" = zb-h1 ] && mixed="" # its delayed W hold the records: 4 units at p = 4
    i=0
    for rc in "recompute=all" "recompute=selective -D recompute_frac=0.5" ${mixed:+"$mixed"}; do
      # (make check: all for the first recipe, the mixed budget for the second)
      i=$((i+1)); full || [ $i = $((k == 1 ? 1 : 3)) ] || continue
      want=cuda-local; [ "$g" = $p2 ] && want=nccl
      if SC_CUDASTUB_GPUS=$g timeout 300 $SC run "$r" -D p=$p2 -D m=$m2 -D $rc --backend cuda --check \
           --json >"$tmp/j" 2>"$tmp/e" && json_ok "$tmp/j" $want; then ok
      else bad "run $r $rc on $g emulated GPU(s)"; head -4 "$tmp/e" >&2; fi
    done
  done
done

# 3. Random delays on every stream operation (0-300 us); make check: one
# recipe (section 2 ran the others of its sample), at p=2 on 2 GPUs with
# offload (make test: p=4 on 1 GPU with offload, p=2 on 2 without).
for r in $(full && echo zb-h1 interleaved 1f1b-v) zb-v; do
  if full; then
    one $r 4 8 1 all SC_CUDASTUB_DELAY_US=300
    one $r 2 4 2 none SC_CUDASTUB_DELAY_US=300
  else one $r 2 4 2 all SC_CUDASTUB_DELAY_US=300; fi
done

# Overlapped pairs (docs/run.md#overlapped-pairs): the backward half on the
# lane's stream, ordered after the device's stream by an event (the NCCL
# receive the compute stream waits for included: without the event the
# stand-in sees the lane use memory before its allocation is reached).
# (make check: p=2 on 1 GPU here; on 2 GPUs through NCCL in streams below)
full && one dualpipev 4 8 4 none SC_CUDASTUB_DELAY_US=300
one dualpipev 2 4 1 none SC_CUDASTUB_DELAY_US=300
full && one dualpipe 4 8 4 none SC_CUDASTUB_DELAY_US=300
# Two streams: with pairs, each GPU's SGEMMs are queued on two streams (the
# device's and the lane's; SC_CUDASTUB_STREAMS reports them at exit), with
# STAGECRAFT_PAIRS=serial and without pairs on one; the lane gives the bits
# of the serial halves (the stand-in's SGEMM is deterministic).
streams() { # what every line must say, env...
  want=$1; shift
  env SC_CUDASTUB_GPUS=2 SC_CUDASTUB_STREAMS=1 SC_CUDASTUB_DELAY_US=100 "$@" \
    timeout 300 $SC run "$r" -D p=2 -D m=4 --backend cuda --json >"$tmp/j" 2>"$tmp/e"
  n=$(grep -c "^cudastub: GPU [01]: SGEMMs on $want$" "$tmp/e")
  [ "$n" = 2 ] && sed -n 's/.*"loss_hex": "\([^"]*\)".*/\1/p' "$tmp/j" ||
    { bad "$r $* on 2 emulated GPUs: not every GPU's SGEMMs on $want"; head -4 "$tmp/e" >&2; }
}
r=dualpipev
lane=$(streams "2 streams") && serial=$(streams "1 stream" STAGECRAFT_PAIRS=serial) &&
  [ -n "$lane" ] && [ "$lane" = "$serial" ] && ok || bad "dualpipev: the lane's loss $lane, the serial pairs' $serial"
r=1f1b; streams "1 stream" >/dev/null && ok

# 4. Failures on purpose: one line, exit 4, nothing freed under a queued copy.
for r in 1f1b $(full && echo zb-h1 interleaved); do
  for g in 1 4; do
    for cap in 60000 $(full && echo 150000); do
      SC_CUDASTUB_GPUS=$g SC_CUDASTUB_DELAY_US=200 STAGECRAFT_DEVICE_MEMORY=$cap \
        timeout 120 $SC run $r -D p=4 -D m=8 -D offload=all --backend cuda >"$tmp/out" 2>"$tmp/err"; rc=$?
      if [ $rc = 4 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "out of memory on d" "$tmp/err"; then ok
      else bad "$r cap $cap on $g GPU(s): exit $rc"; head -4 "$tmp/err" >&2; fi
    done
  done
done

# 5. p=1 never starts NCCL; without NCCL, cuda-local; NCCL's log; no device.
STAGECRAFT_NCCL_LIBRARY=/nonexistent/libnccl.so.2 expect 0 '"transport": "cuda-local"' -- $SC run 1f1b -D p=1 -D m=2 --backend cuda --check --json
grep -q transport_note "$tmp/out" && bad "p=1 explains why not nccl: $(cat "$tmp/out")" || ok
SC_CUDASTUB_GPUS=2 STAGECRAFT_NCCL_LIBRARY=/nonexistent/libnccl.so.2 expect 0 '"transport_note": "STAGECRAFT_NCCL_LIBRARY=/nonexistent/libnccl.so.2 does not load' -- $SC run 1f1b -D p=2 -D m=4 --backend cuda --check --json
grep -q '"transport": "cuda-local"' "$tmp/out" && ok || bad "no NCCL: not cuda-local"
SC_CUDASTUB_GPUS=2 STAGECRAFT_NCCL_LIBRARY=/nonexistent/libnccl.so.2 STAGECRAFT_TRANSPORT=nccl expect 3 "STAGECRAFT_TRANSPORT=nccl: STAGECRAFT_NCCL_LIBRARY=/nonexistent/libnccl.so.2 does not load" -- $SC run 1f1b -D p=2 -D m=4 --backend cuda
SC_CUDASTUB_GPUS=1 expect 0 "transport cuda-local (not nccl: 2 devices on 1 GPUs, and NCCL needs one GPU per device)" -- $SC run 1f1b -D p=2 -D m=4 --backend cuda
# NCCL's debug log must not land in --json's stdout (it goes to stdout by default)
{ SC_CUDASTUB_GPUS=2 NCCL_DEBUG=INFO $SC run 1f1b -D p=2 -D m=4 --backend cuda --json 2>&1 >"$tmp/j" | cat >"$tmp/e"; }
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/j" 2>/dev/null && grep -q "NCCL INFO" "$tmp/e" && ok ||
  bad "NCCL_DEBUG=INFO: stdout is not one JSON object, or the log is not on stderr: $(head -c 300 "$tmp/j")"
SC_CUDASTUB_GPUS=0 expect 3 "no usable CUDA device (cudaGetDeviceCount: no NVIDIA driver or GPU found" -- $SC run 1f1b -D p=1 --backend cuda
# The module beside a copied executable is found; none: a clear line; a stale one: refused.
mkdir -p "$tmp/bin"; cp "$SC" "$tmp/bin/stagecraft"
env -u STAGECRAFT_CUDA_MODULE "$tmp/bin/stagecraft" run 1f1b -D p=1 --backend cuda >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 3 ] && grep -qE "libstagecraft_cuda.so is missing|not built into this binary" "$tmp/err" && ok ||
  bad "a copied executable without its module: exit $rc: $(cat "$tmp/err")"
cp "$STUB/libstagecraft_cuda.so" "$STUB/libsc_cudastub.so" "$tmp/bin/"
env -u STAGECRAFT_CUDA_MODULE "$tmp/bin/stagecraft" run 1f1b -D p=1 --backend cuda --check >"$tmp/out" 2>"$tmp/err" && ok ||
  bad "the module beside a copied executable: $(cat "$tmp/err")"
printf '%s\n' 'struct t { int v; unsigned long h; } sc_cuda_api_v1 = {2, 1};' >"$tmp/stale.c"
if cc -shared -fPIC -o "$tmp/stale.so" "$tmp/stale.c" 2>/dev/null; then
  STAGECRAFT_CUDA_MODULE="$tmp/stale.so" expect 3 "is not a module of this stagecraft" -- $SC run 1f1b -D p=1 --backend cuda
fi

# 6. The GPU test script on the stand-in: passes with a device, skips
# without one, fails when the backend is broken (never "SKIP" then).
# (With a device it takes a while: make test only.) What this suite runs
# itself is not run a second time: its unit test (section 1 here, on the
# same 2 GPUs) and every recipe (section 2 here: the script runs its sample).
if full; then
  SC_CUDASTUB_GPUS=2 SC_GPU_UNIT=done SC_TIER=check BUILD=$BUILD SC=$SC sh tests/gpu/run.sh >"$tmp/g" 2>&1; rc=$?
  if [ $rc = 0 ] && grep -qE '^gpu: [1-9][0-9]* passed, 0 failed' "$tmp/g"; then ok
  else bad "tests/gpu/run.sh on 2 emulated GPUs: exit $rc"; grep -E 'FAIL|gpu:' "$tmp/g" | head -8 >&2; fi
fi
SC_CUDASTUB_GPUS=0 BUILD=$BUILD SC=$SC sh tests/gpu/run.sh >"$tmp/g" 2>&1; rc=$?
[ $rc = 0 ] && grep -q "SKIP: no GPU (.*no NVIDIA driver or GPU found" "$tmp/g" && ok || bad "tests/gpu/run.sh without a device: exit $rc: $(head -3 "$tmp/g")"
STAGECRAFT_CUDA_MODULE="$tmp/stale.so" BUILD=$BUILD SC=$SC sh tests/gpu/run.sh >"$tmp/g" 2>&1; rc=$?
[ $rc != 0 ] && grep -q "FAIL" "$tmp/g" && ! grep -q "SKIP: no GPU" "$tmp/g" && ok || bad "tests/gpu/run.sh with a broken module: exit $rc: $(head -3 "$tmp/g")"

# 6a. Steps synchronized through NCCL
# (docs/steps.md#optimizer-synchronization): the optimizer's all-reduces and
# broadcasts reduce device memory (the state's numbers were host memory, which
# NCCL cannot read: the stand-in reported it); clipping, a skip on inf and
# post-validation's rollback on four emulated GPUs (make check: on two, p=2 m=4).
g6=4 pm6="-D p=4 -D m=8"; full || { g6=2; pm6="-D p=2 -D m=4"; }
for s in $(full && echo sync) post-validation; do
  for a in "-D clip=0.9" "-D inf_step=1 -D inf_device=2"; do
    full || [ "$a" = "-D clip=0.9" ] || continue
    # shellcheck disable=SC2086
    if SC_CUDASTUB_GPUS=$g6 SC_CUDASTUB_DELAY_US=100 timeout 300 $SC run zb-h2 $pm6 -D steps=3 \
         -D optim_sync=$s $a --backend cuda --check --json >"$tmp/j" 2>"$tmp/e" && json_ok "$tmp/j" nccl &&
       python3 - "$tmp/j" "$s" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["optim_sync"] == sys.argv[2] and j["steps"] == 3, j
assert any(j["step_skipped"]) or any(c < 1 for c in j["step_clip_coef"]), j
assert sys.argv[2] != "post-validation" or sum(j["step_rollbacks"]) > 0, j["step_rollbacks"]
PY
    then ok; else bad "run zb-h2 steps=3 optim_sync=$s $a on 4 emulated GPUs"; head -4 "$tmp/e" >&2; fi
  done
done

# 6b. A split vocabulary (docs/vocab.md#running-the-split-model): its all-reduces and broadcasts on
# NCCL's second communicator and stream (four emulated GPUs, random delays):
# the check passes (loss, gradients, parameters, activation and parameter
# bytes).
for r in 1f1b $(full && echo v-half); do
  for vp in vocab-1 $(full && echo vocab-2); do # (make check: vocab-2 below)
    if SC_CUDASTUB_GPUS=4 SC_CUDASTUB_DELAY_US=100 timeout 300 $SC run $r -D p=4 -D m=8 -D vocab_par=$vp \
         --backend cuda --check --json >"$tmp/j" 2>"$tmp/e" && json_ok "$tmp/j" nccl &&
       grep -q '"vocab_par": "'$vp'"' "$tmp/j"; then ok
    else bad "run $r vocab_par=$vp on 4 emulated GPUs"; head -4 "$tmp/e" >&2; fi
  done
done
# Fewer GPUs than devices: the cuda-local transport's collectives, through
# the host in device order (one GPU for four devices, and two).
# (make check: vocab-2 on 1 GPU at p=2 m=4)
pm6b="-D p=4 -D m=8"; full || pm6b="-D p=2 -D m=4"
for g in 1 $(full && echo 2); do
  for vp in $(full && echo vocab-1) vocab-2; do
    # shellcheck disable=SC2086
    if SC_CUDASTUB_GPUS=$g SC_CUDASTUB_DELAY_US=100 timeout 300 $SC run v-half $pm6b -D vocab_par=$vp \
         --backend cuda --check --json >"$tmp/j" 2>"$tmp/e" && json_ok "$tmp/j" cuda-local; then ok
    else bad "run v-half vocab_par=$vp on $g emulated GPU(s), cuda-local"; head -4 "$tmp/e" >&2; fi
  done
done
for s in $(full && echo sync post-validation); do # (make check: 6a's on NCCL)
  if SC_CUDASTUB_GPUS=1 SC_CUDASTUB_DELAY_US=100 timeout 300 $SC run zb-h2 -D p=4 -D m=8 -D steps=3 \
       -D optim_sync=$s -D clip=0.9 --backend cuda --check --json >"$tmp/j" 2>"$tmp/e" &&
     json_ok "$tmp/j" cuda-local && grep -q '"step_clip_coef": \[0\.' "$tmp/j"; then ok
  else bad "run zb-h2 steps=3 optim_sync=$s clip on 1 emulated GPU"; head -4 "$tmp/e" >&2; fi
done

# 7. mpirun: each rank sees only its own GPU (CUDA_VISIBLE_DEVICES per
# rank): accepted (the run goes on to NCCL, which the stand-in has within
# one process only); both on one GPU: refused. (make test only: 3 mpiruns)
if ! full; then :
elif have_mpi; then
  cat >"$tmp/own.sh" <<EOF
#!/bin/sh
CUDA_VISIBLE_DEVICES=\$OMPI_COMM_WORLD_LOCAL_RANK exec "\$@"
EOF
  SC_CUDASTUB_GPUS=2 timeout 120 mpirun -np 2 sh "$tmp/own.sh" $SC run 1f1b -D p=2 -D m=4 --backend cuda >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc != 0 ] && grep -q "the stand-in NCCL works within one process" "$tmp/err" && ! grep -q "same GPU" "$tmp/err" && ok ||
    bad "ranks with a GPU each: exit $rc: $(head -3 "$tmp/err")"
  SC_CUDASTUB_GPUS=2 CUDA_VISIBLE_DEVICES=0 expect 3 "ranks 0 and 1 are on the same GPU" -- timeout 120 mpirun -np 2 $SC run 1f1b -D p=2 -D m=4 --backend cuda
else
  echo "cudastub: mpirun missing or built without MPI: section 7 not run"
fi

# 8. run --graph (docs/graphs.md): step 2 captured on every device as one
# graph, replayed for step 3; the losses of every step have the eager run's
# bits, the reference's within 1e-4; programs that cannot be captured are
# refused with the reason. (make check: zb-h1 at p=2 m=4 on 1 GPU with random delays,
# the unit test on 2 GPUs with delays, one fault; full: 1f1b, more recipes, 4 GPUs, optim_sync sync with clipping,
# the decoder.)
same_bits() { # eager.json graph.json
  python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
sys.exit(not (a["step_loss"] == b["step_loss"] and a["loss_hex"] == b["loss_hex"] and
              b.get("graph_replays") == len(b["step_loss"]) - 1))' "$1" "$2"
}
graph_pair() { # recipe gpus delay_us [-D ...]  (GP: p and m, default p=4 m=8)
  r=$1 g=$2 dl=$3; shift 3
  gp=${GP:-"-D p=4 -D m=8"}
  for mode in eager graph; do
    flag=; [ $mode = graph ] && flag=--graph
    # shellcheck disable=SC2086
    if ! SC_CUDASTUB_GPUS=$g SC_CUDASTUB_DELAY_US=$dl timeout 300 $SC run "$r" $gp \
         -D steps=3 "$@" --backend cuda --check $flag --json >"$tmp/$mode.json" 2>"$tmp/e"; then
      bad "run $r --graph ($mode, $g GPUs, delays $dl us $*)"; head -4 "$tmp/e" >&2; return
    fi
  done
  if json_ok "$tmp/graph.json" cuda-local && same_bits "$tmp/eager.json" "$tmp/graph.json"; then ok
  else bad "run $r --graph on $g GPUs (delays $dl us $*): not the eager run's bits"; fi
}
if full; then graph_pair zb-h1 1 100; else GP="-D p=2 -D m=4" graph_pair zb-h1 1 100; fi
if full; then
  graph_pair 1f1b 1 0
  for r in gpipe interleaved zb-h2 zb-v v-half; do graph_pair "$r" 1 0; done
  graph_pair 1f1b 4 100 # NCCL is not captured: cuda-local on 4 GPUs
  graph_pair zb-h2 1 100 -D optim_sync=sync -D clip=0.9
  graph_pair zb-h1 1 0 --model tests/fixtures/models/run-llama.json # the decoder
fi
for d in 0 200; do
  if SC_CUDASTUB_GPUS=$((1 + d / 200)) SC_CUDASTUB_DELAY_US=$d "$BUILD/gpu_test_graph_cuda" >"$tmp/u" 2>&1 &&
     grep -q '^graph-cuda: [1-9][0-9]* passed, 0 failed' "$tmp/u"; then ok
  else bad "gpu_test_graph_cuda (delays $d us)"; tail -8 "$tmp/u" >&2; fi
done
G="timeout 120 $SC run 1f1b -D p=2 -D m=4 --backend cuda --graph"
expect 3 "--graph: offload copies wait on the host (d0, instruction" -- $G -D steps=3 -D offload=all
expect 3 "--graph: the program has 1 step" -- $G
expect 3 "--graph: post-validation" -- $G -D steps=3 -D optim_sync=post-validation
expect 3 "--graph: an overlapped pair" -- timeout 120 $SC run dualpipev -D p=4 -D m=8 -D steps=3 --backend cuda --graph
expect 3 "--graph: backend 'cpu' cannot capture" -- timeout 120 $SC run 1f1b -D p=2 -D m=4 -D steps=3 --graph
# A captured operation that fails (SC_CUDASTUB_CAPTURE_FAULT=N: the N-th):
# every device stops, the capture is ended before anything is freed, one
# line, exit 9, no violation (a free of the dropped graph's memory is not one).
# (make check: the 40th at p=2 m=4; make test: the 5th, 40th, 400th at p=4 m=8)
pm8="-D p=2 -D m=4"; full && pm8="-D p=4 -D m=8"
for f in $(full && echo 5 400) 40; do
  # shellcheck disable=SC2086
  SC_CUDASTUB_CAPTURE_FAULT=$f expect 9 "stagecraft: error: " -- timeout 120 $SC run 1f1b $pm8 -D steps=3 --backend cuda --graph
done

# 9. Expert parallelism (-D ep=2, docs/run.md#expert-parallelism): the p x E
# devices on a GPU each (or emulated, sharing them), the MoE layers' all-to-alls through NCCL
# (ncclSend/ncclRecv of the row counts, then of the rows) or cuda-local
# (through the host); the CPU reference within 1e-4, peaks and parameter
# bytes == predicted, the transport asked for. (make check: 1f1b at p=1 m=2
# on 2 GPUs and the refusals; full: 1f1b and dualpipev at p=4 on 8 GPUs,
# both transports, with random delays.)
X=tests/fixtures/models/run-mixtral.json
ep_run() { # recipe gpus transport delay_us [-D ...]
  r=$1 g=$2 t=$3 dl=$4; shift 4
  if SC_CUDASTUB_GPUS=$g SC_CUDASTUB_DELAY_US=$dl STAGECRAFT_TRANSPORT=$t timeout 300 $SC run "$r" \
       --model $X -D ep=2 "$@" --backend cuda --check --json >"$tmp/ep.json" 2>"$tmp/e" &&
     json_ok "$tmp/ep.json" "$t"; then ok
  else bad "run $r -D ep=2 $* on $g GPUs ($t, delays $dl us)"; head -4 "$tmp/e" >&2; fi
}
if full; then
  for r in 1f1b dualpipev; do ep_run $r 8 nccl 0; ep_run $r 8 cuda-local 200; done
  ep_run dualpipev 8 nccl 200
  ep_run 1f1b 4 cuda-local 0 -D p=2 -D m=4
  # d0 runs out of memory mid-step: its group's ranks leave their all-to-all
  # at once (the group's transports aborted), not at the watchdog's 600 s.
  for t in nccl cuda-local; do
    expect 4 "out of memory on d0" -- env SC_CUDASTUB_GPUS=4 STAGECRAFT_TRANSPORT=$t STAGECRAFT_TIMEOUT=600 \
      STAGECRAFT_DEVICE_MEMORY=1400000 timeout 120 $SC run 1f1b --model $X -D ep=2 -D p=2 -D m=4 --backend cuda
  done
else
  ep_run 1f1b 2 nccl 0 -D p=1 -D m=2
fi
# fewer GPUs than devices: emulated on them (device i on GPU i mod n), over
# cuda-local; NCCL, which needs a GPU each, refused in one line
full && ep_run dualpipev 4 cuda-local 200
ep_run 1f1b 1 cuda-local 0 -D p=1 -D m=2
expect 3 "run: STAGECRAFT_TRANSPORT=nccl needs a GPU for each of the program's devices, and they share GPUs (use cuda-local)" -- env SC_CUDASTUB_GPUS=1 STAGECRAFT_TRANSPORT=nccl timeout 120 $SC run 1f1b --model $X -D ep=2 -D p=1 -D m=2 --backend cuda
expect 3 "run: STAGECRAFT_TRANSPORT=mpi is not a transport of --backend cuda" -- env SC_CUDASTUB_GPUS=2 STAGECRAFT_TRANSPORT=mpi timeout 120 $SC run 1f1b --model $X -D ep=2 -D p=1 -D m=2 --backend cuda
expect 2 "--graph and a mixture of experts" -- env SC_CUDASTUB_GPUS=8 timeout 120 $SC run 1f1b --model $X -D ep=2 -D steps=3 --backend cuda --graph

verdicts
echo "cudastub: $pass passed, $fail failed ($runs recipe runs on the stand-in)"
[ "$fail" = 0 ]
