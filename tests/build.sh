#!/bin/sh
# tests/build.sh — the Makefile's decisions that a build machine depends on:
# the deps step where no package can be installed (a GPU machine without a
# package registry, issue 22): optional tools missing is a note, Lua or BLAS
# missing an error naming them, NODEPS=1 skips the step. apt-get is replaced
# by one that fails, first on PATH. And the CUDA module does not link NCCL.
# Run from the repository root: sh tests/build.sh
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*" >&2; }
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "E: no package registry here" >&2\nexit 100\n' >"$tmp/bin/apt-get"
chmod +x "$tmp/bin/apt-get"
export PATH="$tmp/bin:$PATH"
# The makes below check what deps and echo print: they build nothing, so
# they drop the jobserver of a parallel parent (`make -j2 check`), whose
# pipe is not theirs (make would warn on stderr "jobserver unavailable").
MAKEFLAGS=$(printf '%s\n' "${MAKEFLAGS:-}" | sed -e 's/--jobserver-[a-z]*=[^ ]*//g' -e 's/^ *-j[0-9]* *//')
export MAKEFLAGS

# OpenMPI "missing" (MPI_LIBS emptied): a note, exit 0.
make -s --no-print-directory deps MPI_LIBS= >"$tmp/out" 2>&1; rc=$?
[ $rc = 0 ] && grep -q "note: missing: openmpi" "$tmp/out" && ok || bad "deps without OpenMPI, no registry: exit $rc: $(cat "$tmp/out")"
# Lua missing: an error naming it (and how to build elsewhere).
make -s --no-print-directory deps LUA_LIBS= >"$tmp/out" 2>&1; rc=$?
[ $rc != 0 ] && grep -q "error: missing: lua5.4" "$tmp/out" && grep -q "make gpu-bundle" "$tmp/out" && ok ||
  bad "deps without Lua, no registry: exit $rc: $(cat "$tmp/out")"
# NODEPS=1: nothing checked, nothing installed.
make -s --no-print-directory deps NODEPS=1 LUA_LIBS= >"$tmp/out" 2>&1; rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/out" ] && ok || bad "deps NODEPS=1: exit $rc: $(cat "$tmp/out")"
# make echo says how NCCL is used.
make -s --no-print-directory echo NODEPS=1 >"$tmp/out" 2>&1
grep -q "^CUDA     = " "$tmp/out" && ! grep -q -- "-lnccl" "$tmp/out" && ok || bad "make echo: $(cat "$tmp/out")"
# The CUDA module (when nvcc built one) does not depend on libnccl.so.2: it
# loads NCCL at run time, so p = 1 and cuda-local work where NCCL is missing.
BUILD=${BUILD:-build}
if [ -f "$BUILD/libstagecraft_cuda.so" ] && command -v readelf >/dev/null; then
  readelf -d "$BUILD/libstagecraft_cuda.so" >"$tmp/out" 2>&1
  grep -q NEEDED "$tmp/out" && ! grep -q "libnccl" "$tmp/out" && ok ||
    bad "the CUDA module links NCCL: $(grep NEEDED "$tmp/out" | tr -s ' ' | tr '\n' ' ')"
fi
echo "build: $pass passed, $fail failed"
[ "$fail" = 0 ]
