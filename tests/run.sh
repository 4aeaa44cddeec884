#!/bin/sh
# run.sh — the test suites, in two tiers (tests/tier.sh):
#   make check   SC_TIER=check: C unit tests, Lua tests of the DSL, the
#                command line, the docs, the layout, and a sample of every
#                end-to-end suite but the real-PyTorch ones (at most 90
#                CPU-seconds, about a minute on two idle cores);
#   make test    every suite whole, the real-PyTorch ones included.
# The suites: C unit tests (build/test_*), Lua tests of the DSL
# (tests/lua/test_*.lua), the command line (tests/cli.sh), export and import
# (tests/interchange.sh), the REPL on a pseudo-terminal
# (tests/py/repl_pty.py), the Python package (tests/py/test_package.py) and
# real PyTorch (tests/torch/run.sh; the verdicts against it:
# tests/torch/corpus.sh; cost files from its traces: tests/torch/trace.sh;
# the model description against its models' real bytes:
# tests/torch/model_bytes.sh),
# the layering (tests/py/layout.py), the
# V-shape recipes against the authors' schedules (tests/py/vcompare.py),
# the runtime (tests/runtime.sh), the decoder it trains (tests/decoder.sh),
# training steps (tests/steps.sh), expert parallelism (tests/moe.sh), the
# sandbox and limits (tests/sandbox.sh), the error catalogue
# (tests/errors.sh), the lists kept in one table each against their other
# copies (tests/py/lists.py), what a newcomer meets (tests/ux.sh), compare
# (tests/compare.sh), the lower bound and the exact optimum (tests/bound.sh,
# tests/exact.sh),
# plan (tests/plan.sh), microbatches of different lengths (tests/lengths.sh),
# sequence slices (tests/slices.sh),
# every example of the documents (tests/py/docs.py),
# pictures (tests/pictures.sh), cost files and profiles (tests/costs.sh),
# the GPU tests (tests/gpu/run.sh, skipped without a GPU), the GPU session
# script on the stand-in (tests/gpusession.sh), the CUDA module
# on the CPU stand-in of CUDA (tests/cudastub/run.sh, everywhere), the
# Makefile's deps step (tests/build.sh), libstagecraft and the Lua module
# installed and used as a user would (tests/embed.sh, whole in both tiers:
# a few seconds), pip install of the package into a fresh venv
# (tests/py/test_wheel.py).
#
# Independent suites run concurrently, SC_JOBS at a time (default: the
# number of cores plus one; the long ones first, and the longest mostly wait
# on MPI, PyTorch and timeouts). Each suite's output goes to its own log; a
# line per suite as it ends (its wall seconds, its CPU seconds: user +
# system of it and every process it waited for, and its summary), then the
# whole log of every suite that failed, the five slowest suites, and one
# summary line "all (TIER, S s, C CPU-s): N passed, N failed". No suite
# asserts a wall-clock figure (the machine's load decides those: bench/
# measures); a timeout only ends a run that hangs.
# A suite that prints no summary, or exits non-zero without a failure, is
# broken (a failure). BUILD names the build folder (build, or build-asan
# under `make asan`). `sh tests/run.sh --one K DIR` is the runner's own
# entry for one suite.
BUILD=${BUILD:-build}
SC=${SC:-$BUILD/stagecraft}
SC_TIER=${SC_TIER:-test}
export SC BUILD SC_TIER

# The suites, one per line: NAME<TAB>COMMAND (a shell command line), the
# longest first.
suites() {
  # The real-PyTorch suites: make test only. make check skips them (they
  # run torch processes for minutes of CPU: more than half the check tier's
  # time before); SC_TORCH=run runs their samples under check
  # too. make asan skips them (SC_TORCH=skip): they exercise PyTorch and the
  # package, not C code that the other suites do not.
  torch=${SC_TORCH:-$(full && echo run || echo skip)}
  if [ "$torch" = skip ]; then
    why="make test runs them$(full || echo '; SC_TORCH=run make check, their samples')"
    printf 'tests/torch/*.sh\techo "torch: skipped under make %s (%s)"; echo "torch: 0 passed, 0 failed, 1 skipped"\n' \
      "$(full && echo asan || echo check)" "$why"
  else
    printf 'tests/torch/run.sh\tsh tests/torch/run.sh\n'
    printf 'tests/torch/corpus.sh\tsh tests/torch/corpus.sh\n'
    printf 'tests/torch/trace.sh\tsh tests/torch/trace.sh\n'
    printf 'tests/torch/model_bytes.sh\tsh tests/torch/model_bytes.sh\n'
  fi
  # pip install ./python into a fresh venv builds the C core (whole under make test)
  printf 'tests/py/test_wheel.py\tpython3 tests/py/test_wheel.py "$SC"\n'
  for s in tests/cudastub/run.sh tests/runtime.sh tests/interchange.sh tests/steps.sh \
           tests/sandbox.sh; do
    printf '%s\tsh %s\n' "$s" "$s"
  done
  printf 'tests/py/docs.py\tpython3 tests/py/docs.py "$SC"\n'
  # the V-shape recipes against the authors' schedules rebuilt by
  # tests/py/vref.py (the whole grid, p = 3..16: bench/bench_vshape.sh)
  # (make check: p = 3, every V recipe; make test p = 4 and 6 too)
  ps=3; full && ps=3,4,6
  printf 'tests/py/vcompare.py p=%s\tpython3 tests/py/vcompare.py "$SC" --p %s --m 2\n' "$ps" "$ps"
  full && printf 'tests/py/vcompare.py p=4 m=4\tpython3 tests/py/vcompare.py "$SC" --p 4 --m 4\n'
  for t in tests/lua/test_*.lua; do
    # test scripts use io, os.exit, dofile; a limit on CPU time rather than
    # the wall clock's --max-time, which a loaded machine can reach first
    printf '%s\tulimit -t 600; "$SC" --trust --max-time 0 %s\n' "$t" "$t"
  done
  for s in tests/errors.sh tests/costs.sh tests/pictures.sh tests/cli.sh tests/compare.sh \
           tests/bound.sh tests/exact.sh tests/plan.sh tests/lengths.sh tests/model.sh tests/decoder.sh \
           tests/ux.sh tests/forward.sh tests/slices.sh tests/moe.sh \
           tests/gpu/run.sh tests/gpusession.sh tests/build.sh tests/embed.sh; do
    printf '%s\tsh %s\n' "$s" "$s"
  done
  printf 'tests/py/repl_pty.py\tpython3 tests/py/repl_pty.py "$SC"\n'
  printf 'tests/py/test_package.py\tpython3 tests/py/test_package.py "$SC"\n'
  printf 'tests/py/layout.py\tpython3 tests/py/layout.py "$BUILD"\n'   # no call cycles, layering, file sizes
  printf 'tests/py/lists.py\tpython3 tests/py/lists.py "$SC"\n'   # one table per list, and its copies
  for t in "$BUILD"/test_*; do
    [ -x "$t" ] && printf '%s\t%s\n' "$t" "$t"
  done
}

. tests/tier.sh # full

# --one K DIR: run suite K of DIR/list into DIR/K.log, its exit code and
# seconds into DIR/K.rc; print its line.
if [ "${1:-}" = --one ]; then
  k=$2 dir=$3
  line=$(sed -n "${k}p" "$dir/list")
  name=${line%%"	"*} cmd=${line#*"	"}
  start=$(date +%s.%N)
  sh -c "$cmd" >"$dir/$k.log" 2>&1 </dev/null
  rc=$?
  secs=$(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}')
  # CPU seconds (user + system) of the suite and every process it waited
  # for: this shell's `times` (not in a subshell), second line ("0m1.20s 0m0.30s").
  times >"$dir/$k.cpu"
  cpu=$(awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); printf "%.1f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$dir/$k.cpu")
  echo "$rc $secs ${cpu:-0}" >"$dir/$k.rc"
  sum=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$dir/$k.log" | tail -n 1)
  printf '%6s s %6s CPU-s  %-34s %s\n' "$secs" "${cpu:-?}" "$name" "${sum:-(no summary; exit $rc)}"
  exit 0
fi

command -v python3 >/dev/null || echo "note: python3 is needed by several suites (the REPL, docs, layout)" >&2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
# python3 found once: the suites start it hundreds of times, and a version
# manager's shim (pyenv's: a bash script that asks pyenv which one) costs
# more than the interpreter's own start (0.11 CPU-s against 0.04 on the
# machine of bench/tiers.md). The same interpreter, through a
# two-line script on PATH (a symlink would lose a venv's pyvenv.cfg).
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ -x "$py" ]; then
  mkdir "$dir/bin"; printf '#!/bin/sh\nexec "%s" "$@"\n' "$py" >"$dir/bin/python3"
  chmod +x "$dir/bin/python3"; PATH=$dir/bin:$PATH; export PATH
fi
# MPI found once for every suite that runs ranks (tests/lib.sh's have_mpi:
# a probe is an mpirun, a third of a CPU-second): SC_MPI=yes when it works;
# otherwise each suite probes for itself.
if command -v mpirun >/dev/null &&
   OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
   timeout 60 mpirun -np 1 "$SC" run 1f1b -D p=1 -D m=1 --json 2>/dev/null </dev/null | grep -q '"transport": "mpi"'; then
  SC_MPI=yes; export SC_MPI
fi
suites >"$dir/list"
n=$(wc -l <"$dir/list")
jobs=${SC_JOBS:-$(( $(nproc 2>/dev/null || echo 1) + 1 ))}
echo "tests ($SC_TIER): $n suites, $jobs at a time"
start=$(date +%s)
seq 1 "$n" | xargs -P "$jobs" -I{} sh tests/run.sh --one {} "$dir"

pass=0; fail=0; skip=0; broken=0
k=0
while [ $k -lt "$n" ]; do
  k=$((k+1))
  line=$(sed -n "${k}p" "$dir/list"); name=${line%%"	"*}
  rc=$(cut -d' ' -f1 "$dir/$k.rc" 2>/dev/null || echo 99)
  sum=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$dir/$k.log" | tail -n 1)
  bad=""
  if [ -z "$sum" ]; then
    bad="BROKEN: $name printed no summary (exit $rc)"
  else
    p=$(echo "$sum" | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^passed/) print $(i-1)}')
    f=$(echo "$sum" | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^failed/) print $(i-1)}')
    s=$(echo "$sum" | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^skipped/) print $(i-1)}')
    pass=$((pass+p)); fail=$((fail+f)); skip=$((skip+${s:-0}))
    [ "$rc" != 0 ] && [ "$f" = 0 ] && bad="BROKEN: $name exited $rc"
    [ "$f" != 0 ] && bad="FAILED: $name"
  fi
  if [ -n "$bad" ]; then
    echo
    echo "==== $bad; its log:"
    cat "$dir/$k.log"
    case $bad in BROKEN*) broken=$((broken+1)); echo "$bad" >&2 ;; esac
  fi
done

# The five slowest suites (wall seconds), and the CPU seconds of all.
k=0
while [ $k -lt "$n" ]; do
  k=$((k+1))
  printf '%s\t%s\n' "$(cat "$dir/$k.rc" 2>/dev/null)" "$(sed -n "${k}p" "$dir/list" | cut -f1)"
done >"$dir/times"
echo "slowest:"
sort -t' ' -k2,2 -rn "$dir/times" | head -n 5 | awk -F'\t' '{ split($1, t, " "); printf "%6s s %6s CPU-s  %s\n", t[2], t[3], $2 }'
cpu=$(awk '{ c += $3 } END { printf "%.0f", c }' "$dir/times")

[ $broken = 0 ] || fail=$((fail+broken))
echo "all ($SC_TIER, $(( $(date +%s) - start )) s, $cpu CPU-s): $pass passed, $fail failed$([ $skip = 0 ] || echo ", $skip skipped")"
[ $fail = 0 ]
