#!/bin/sh
# tools/blas_cores.sh [TARGET] — runs `make TARGET` (default: check) once for
# each OpenBLAS core type this CPU can run, with OPENBLAS_CORETYPE set (the
# Debian OpenBLAS is built for every x86-64 core and picks one from CPUID; a
# cloud machine whose CPUID is masked gets the generic Prescott kernel). The
# results must not depend on it: no test may pin bits of one kernel (issue
# 26). A core type the CPU cannot run (an instruction it lacks) is left out,
# found by running one small training step under it first.
# Prints one line per core type and exits non-zero if any run failed.
set -u
target=${1:-check}
cd "$(dirname "$0")/.." || exit 2
make -s stagecraft >/dev/null || exit 2
cores="Prescott Core2 Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake SapphireRapids"
rc=0; ran=""
for c in $cores; do
  # OpenBLAS falls back to the CPU's own kernel for a name it does not know
  # (and says so): such a name is not a run of its own.
  if ! out=$( { OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=$c timeout 60 ./stagecraft run 1f1b -D p=2 -D m=2; } 2>&1); then
    echo "blas_cores: $c: not run (this CPU cannot run it)"; continue
  fi
  core=$(echo "$out" | sed -n 's/^Core: //p' | head -n 1)
  if [ "$core" != "$c" ]; then
    echo "blas_cores: $c: not run (OpenBLAS chose ${core:-another core} instead)"; continue
  fi
  log=$(mktemp)
  if OPENBLAS_CORETYPE=$c make -s "$target" >"$log" 2>&1; then
    echo "blas_cores: $c: make $target: $(tail -n 1 "$log")"
  else
    echo "blas_cores: $c: make $target FAILED: $(tail -n 1 "$log")"; grep -E '^(FAIL|BROKEN|====)' "$log" | head -20
    rc=1
  fi
  rm -f "$log"; ran="$ran $c"
done
echo "blas_cores: ran make $target under:${ran:- none}"
exit $rc
