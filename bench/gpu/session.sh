#!/bin/sh
# bench/gpu/session.sh — the whole GPU session in ONE command, for a session
# that gets a GPU machine for a few minutes (issue 51, issue 47's GPU items;
# bench/gpu.md, "How to run the GPU session"). On the GPU machine, from the
# repository root, with the `make gpu-bundle` build carried there
# (build-gpu/run/: no compiler, no network needed), it runs in priority
# order, each section under its own time limit (timeout), so that one hang
# cannot eat the budget:
#   1. the environment, the GPU unit tests, a few recipes --check on
#      cuda-local (and nccl where there are 2 GPUs or more);
#   2. the decoder at Llama-3-8B width, a few layers: --check at a reduced
#      size, then step time, MFU against the measured GEMM peak, predicted
#      bytes against the runtime's and the GPU's (nvidia-smi's samples of
#      memory used: what cudaMemGetInfo reports), the prediction from a
#      GPU profile and from a fresh process that loads it;
#   3. CUDA graphs on and off at hidden 1024 and 4096 (bench/gpu/graphs.sh);
#   4. MoE: ep = 2 dualpipev against 1f1b, measured against predicted
#      (bench/gpu/ep.sh) where there are 2 GPUs or more; on one GPU ep = 2
#      is refused by the runtime (a GPU per device), and the section times
#      dualpipev against 1f1b at ep = 1 instead and records the refusal;
#   5. compute-sanitizer memcheck on one small run, with the time left.
# Everything goes to $OUT (at most 8 files come back from the machine):
# summary.txt (the figures, in the rows of bench/gpu.md's tables), s1.log ..
# s5.log (each section's raw output) and raw.tar.gz (every JSON result and
# profile). The summary is rewritten after every section, so a session cut
# short still returns what it finished.
#
#   sh bench/gpu/session.sh [--dry-run]
# BUILD      the build folder (default build-gpu/run when it is there, else build)
# OUT        where the results go (default /tmp/gpusession)
# SESSION_S  the wall budget of all sections, seconds (default 540: 9 minutes)
# SESSION_SECTIONS  which sections run (default "1 2 3 4 5")
# SESSION_CAP_N     section N's own limit (defaults below)
# SESSION_SMALL=1   small models (the CUDA stand-in: set whenever SC_CUDASTUB=1)
# --dry-run prints the plan (sections, limits, build, output) and runs nothing.
# On the CPU stand-in (tests/gpusession.sh): SC_CUDASTUB=1
# STAGECRAFT_CUDA_MODULE=build/cudastub/libstagecraft_cuda.so
# STAGECRAFT_NCCL_LIBRARY=build/cudastub/libsc_ncclstub.so SC_CUDASTUB_GPUS=1.
if [ "${1:-}" = --section ]; then
  . bench/gpu/session_sections.sh
  # a section that hangs, for the test of the limits (tests/gpusession.sh)
  [ "${SESSION_TEST_HANG:-}" = "$2" ] && sleep 1000
  "sec_$2"
  exit $?
fi
if [ -z "${BUILD:-}" ]; then
  BUILD=build; [ -x build-gpu/run/stagecraft ] && BUILD=build-gpu/run
fi
SC=${SC:-$BUILD/stagecraft}
OUT=${OUT:-/tmp/gpusession}
SESSION_S=${SESSION_S:-540}
SECTIONS=${SESSION_SECTIONS:-"1 2 3 4 5"}
SMALL=${SESSION_SMALL:-0}; [ "${SC_CUDASTUB:-0}" = 1 ] && SMALL=1
TITLES="environment-and-tests decoder-at-8B-width graphs-on-off moe-ep2 compute-sanitizer"
cap() { eval "echo \${SESSION_CAP_$1:-\$(echo 90 170 110 90 600 | cut -d' ' -f$1)}"; }
title() { echo "$TITLES" | cut -d' ' -f"$1"; }

if [ "${1:-}" = --dry-run ]; then
  echo "bench/gpu/session.sh: plan (budget $SESSION_S s; build $BUILD; output $OUT; small models: $SMALL)"
  for n in $SECTIONS; do echo "  section $n: $(title "$n"), at most $(cap "$n") s"; done
  [ -x "$SC" ] || echo "  MISSING: $SC (make gpu-bundle, then carry build-gpu/run)"
  exit 0
fi
case "${1:-}" in "") ;; *) echo "bench/gpu/session.sh: unknown argument '$1' (--dry-run or nothing)" >&2; exit 2 ;; esac
if [ ! -x "$SC" ]; then
  echo "bench/gpu/session.sh: $SC is missing (make gpu-bundle here, carry build-gpu/run)" >&2; exit 1
fi

start=$(date +%s)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT"
# cuBLAS and the CUDA runtime may live in PyTorch's wheels only (nvidia/*/lib).
for d in $(python3 -c 'import nvidia, os; b = list(nvidia.__path__)[0]; print(" ".join(os.path.join(b, x, "lib") for x in sorted(os.listdir(b))))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d
done
[ -d /usr/local/cuda/lib64 ] && LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
SESSION_HEADLINE=$W/headline
: >"$SESSION_HEADLINE"
export LD_LIBRARY_PATH BUILD SC W SMALL SESSION_HEADLINE
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}" STAGECRAFT_TIMEOUT="${STAGECRAFT_TIMEOUT:-120}"

S=$OUT/summary.txt
{
  echo "# GPU session ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "bench/gpu/session.sh at $(cat "$BUILD/REVISION" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo '?'),"
  echo "build $BUILD, budget $SESSION_S s, small models: $SMALL. Raw output: s1.log .. s5.log, raw.tar.gz."
} >"$W/head.txt"
: >"$W/body.txt"
status=0
for n in $SECTIONS; do
  left=$((start + SESSION_S - $(date +%s) - 10)) # 10 s for the summary and the archive
  [ "$left" -lt 0 ] && left=0 # overrun by the section before: none left
  lim=$(cap "$n"); [ "$left" -lt "$lim" ] && lim=$left
  { echo; echo "## $n. $(title "$n")"; echo; } >>"$W/body.txt"
  if [ "$lim" -lt 15 ]; then
    echo "not run: ${left} s of the budget left" >>"$W/body.txt"; status=1; continue
  fi
  : >"$W/s$n.rows"
  t0=$(date +%s)
  timeout -k 5 "$lim" sh bench/gpu/session.sh --section "$n" >"$W/s$n.log" 2>&1; rc=$?
  dt=$(($(date +%s) - t0))
  cat "$W/s$n.rows" >>"$W/body.txt"
  case $rc in
    0) why="done in $dt s" ;;
    124|137) why="STOPPED by its limit of $lim s (the rows above are what it finished)"; status=1 ;;
    *) why="FAILED (exit $rc) after $dt s: see s$n.log"; status=1 ;;
  esac
  { echo; echo "section $n: $why"; } >>"$W/body.txt"
  echo "section $n ($(title "$n")): $why"
  cp "$W/s$n.log" "$OUT/s$n.log"
  cat "$W/head.txt" "$W/body.txt" >"$S"
  (cd "$W" && tar czf "$OUT/raw.tar.gz" --exclude='*.log' --exclude='*.rows' --exclude=./head.txt --exclude=./body.txt . 2>/dev/null)
done
{
  echo; echo "all sections: $([ $status = 0 ] && echo 'done' || echo 'NOT all done (above)'), $(($(date +%s) - start)) s"
  echo; echo "For bench/README.md's line (CUDA backend): $(cat "$W/gpu" 2>/dev/null || echo '?'): $(paste -sd';' "$SESSION_HEADLINE" | sed 's/;/; /g')"
} >>"$W/body.txt"
cat "$W/head.txt" "$W/body.txt" >"$S"
echo "bench/gpu/session.sh: $(($(date +%s) - start)) s; summary $S"
exit $status
