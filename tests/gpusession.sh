#!/bin/sh
# tests/gpusession.sh — bench/gpu/session.sh, the one command of a GPU
# session (bench/gpu.md, "How to run the GPU session"), so that it cannot
# rot between the sessions that get a GPU:
#   make check: its plan (--dry-run), a wrong argument and a missing build
#   refused in one line;
#   make test: the whole session on the CUDA stand-in (tests/cudastub, one
#   emulated GPU like the machine lent, small models): every section runs
#   and its rows are in summary.txt (the unit tests, the recipes' and the
#   decoder's --check, the graphs' same loss bits, the MoE's runs), at most
#   8 files come back; then a section that hangs is stopped by its own
#   limit, and a section with no budget left is not started, both said in
#   the summary (not under make asan). Figures on the stand-in mean
#   nothing; none is asserted.
# Run from the repository root: sh tests/gpusession.sh
BUILD=${BUILD:-build}
SC=${SC:-$BUILD/stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect, full

G=bench/gpu/session.sh
expect 0 "section 5: compute-sanitizer" -- env BUILD="$BUILD" sh $G --dry-run
[ "$(grep -c '^  section [1-5]: ' "$tmp/out")" = 5 ] && ok || bad "--dry-run lists 5 sections"
expect 2 "unknown argument '--bogus'" -- env BUILD="$BUILD" sh $G --bogus
expect 1 "is missing (make gpu-bundle" -- env BUILD="$tmp/none" SC="$tmp/none/stagecraft" OUT="$tmp/o0" sh $G

# Under make asan (BUILD=build-asan) the session is not run on the stand-in:
# it tests the script, and tests/cudastub/run.sh runs its C code there.
asan=; case $BUILD in *asan*) asan=1 ;; esac
if full && [ -z "$asan" ]; then
  export STAGECRAFT_CUDA_MODULE="$BUILD/cudastub/libstagecraft_cuda.so"
  export STAGECRAFT_NCCL_LIBRARY="$BUILD/cudastub/libsc_ncclstub.so"
  export SC_CUDASTUB=1 SC_CUDASTUB_GPUS=1
  unset SC_CUDASTUB_DELAY_US STAGECRAFT_TRANSPORT
  O=$tmp/o1
  # limits for a loaded CI machine, not the GPU's (the hang below tests
  # them): far above the ~80 s the stand-in's session takes alone, so that
  # only a hang stops a section here (at load 13 sections took 180-240 s)
  if SESSION_S=3000 SESSION_CAP_1=600 SESSION_CAP_2=600 SESSION_CAP_3=600 SESSION_CAP_4=600 \
     BUILD=$BUILD OUT=$O timeout 3100 sh $G >"$tmp/log" 2>&1; then ok
  else bad "session.sh on the stand-in failed"; tail -n 20 "$tmp/log" >&2; fi
  S=$O/summary.txt
  for n in 1 2 3 4 5; do
    grep -q "^section $n: done in" "$S" && ok || bad "section $n not done: $(grep "^section $n:" "$S")"
  done
  for want in "| gpu_test_backend_cuda | ok |" "| gpu_test_decoder_cuda | ok |" "| gpu_test_moe_cuda | ok |" \
              "| gpu_test_graph_cuda | ok |" "| run dualpipev p=2 m=4 --check (cuda-local) | ok |" \
              "| decoder zb-h1 p=2 m=4 --check | ok |" "| CUDA stand-in (test double) | 1f1b | 2 |" \
              "| MoE dualpipev p=2 m=4 --check | ok |" "| dualpipev | cuda-local |" \
              "dualpipev cuda-local: ok" "compute-sanitizer not found" "all sections: done" \
              "(CUDA backend): CUDA stand-in (test double): the decoder (hidden 64, 2 layers" "graphs at hidden 64: executor" "MoE dualpipev / 1f1b"; do
    grep -qF -- "$want" "$S" && ok || bad "summary.txt lacks '$want'"
  done
  # graphs: both sizes, the same loss bits
  [ "$(grep -c '^| [0-9]* | .* | yes | 0x' "$S")" = 2 ] && ok || bad "graphs: not 2 sizes with the same loss bits"
  n=$(ls "$O" | wc -l); [ "$n" -le 8 ] && ok || bad "$n files in OUT (at most 8 come back)"
  ls "$O" | grep -q '[^A-Za-z0-9._-]' && bad "a name in OUT the device tool cannot return" || ok
  tar tzf "$O/raw.tar.gz" | grep -q "s2/run.json" && tar tzf "$O/raw.tar.gz" | grep -q "s3/graphs.txt" && ok || bad "raw.tar.gz lacks s2/run.json or s3/graphs.txt"
  # A hang: section 1 stopped at its limit (32 s budget - 10 s kept = 22 s, less
  # the driver's own start), then
  # no budget left for section 5; the summary says both, the driver fails.
  O=$tmp/o2
  SESSION_TEST_HANG=1 SESSION_S=32 SESSION_SECTIONS="1 5" BUILD=$BUILD OUT=$O timeout 120 sh $G >"$tmp/log" 2>&1
  rc=$?
  [ $rc = 1 ] && ok || bad "a hung section: exit $rc, want 1"
  grep -q "^section 1: STOPPED by its limit of 2[0-2] s" "$O/summary.txt" && ok || bad "the hung section not stopped at its limit: $(grep "^section 1" "$O/summary.txt")"
  grep -q "^not run: [0-9]* s of the budget left" "$O/summary.txt" && ok || bad "section 5 started without budget"
  grep -q "NOT all done" "$O/summary.txt" && ok || bad "the summary does not say NOT all done"
fi
echo "gpusession: $pass passed, $fail failed"
[ "$fail" = 0 ]
