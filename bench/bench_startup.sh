#!/bin/sh
# bench_startup.sh — start-up and output (issue 48, item 5): the
# instructions of a small `sim` and of `export` of the same recipe in each
# format, and the ratios export/sim. Instructions, not time: a figure that
# does not depend on the machine's load. Counted with valgrind's callgrind
# (whole process: dynamic linking included), else `perf stat -e
# instructions` (user space).
#   sh bench/bench_startup.sh [RECIPE ARGS...]     default: 1f1b -D p=4 -D m=8
# SC: the binary (default build/stagecraft); BEFORE: a second binary, whose
# figures are printed beside (`BEFORE=/tmp/old/build/stagecraft`).
# Targets: sim <= 6 M instructions; json and trace <= 2x sim, svg <= 3x.
SC=${SC:-build/stagecraft}
small=0
[ $# -gt 0 ] || { small=1; set -- 1f1b -D p=4 -D m=8; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if command -v valgrind >/dev/null; then
  tool=callgrind
elif command -v perf >/dev/null && perf stat -e instructions:u true >/dev/null 2>&1; then
  tool=perf
else
  echo "bench_startup: neither valgrind nor perf (with access to the counters): nothing measured"
  exit 0
fi

# count BINARY ARGS...: the instructions of one run (its output to a file).
count() {
  bin=$1
  shift
  if [ $tool = callgrind ]; then
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    sed -n 's/.*refs: *//p' "$tmp/err" | tr -d ,
  else
    perf stat -x, -e instructions:u "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    grep instructions "$tmp/err" | cut -d, -f1
  fi
}

echo "bench_startup: $tool instructions of '$SC sim $*' and of export of the same"
printf '%-8s %14s %8s' what instructions "x sim"
[ -n "$BEFORE" ] && printf ' %14s %8s %8s' before "x sim" "after/before"
echo
sim=$(count "$SC" sim "$@")
[ -n "$BEFORE" ] && bsim=$(count "$BEFORE" sim "$@")
for what in sim json trace svg; do
  if [ $what = sim ]; then
    n=$sim
    [ -n "$BEFORE" ] && b=$bsim
  else
    n=$(count "$SC" export "$@" --format $what)
    [ -n "$BEFORE" ] && b=$(count "$BEFORE" export "$@" --format $what)
  fi
  printf '%-8s %14s %8s' $what "$n" "$(awk -v a="$n" -v b="$sim" 'BEGIN{printf "%.2f", a/b}')"
  [ -n "$BEFORE" ] && printf ' %14s %8s %8s' "$b" "$(awk -v a="$b" -v s="$bsim" 'BEGIN{printf "%.2f", a/s}')" \
    "$(awk -v a="$n" -v b="$b" 'BEGIN{printf "%.2f", a/b}')"
  echo
done
printf 'shared libraries loaded by %s: %s\n' "$SC" "$(ldd "$SC" 2>/dev/null | grep -c '=>')"
[ $small = 1 ] && awk -v s="$sim" 'BEGIN{ if (s > 6000000) print "note: the small sim is above its target of 6 M instructions" }'
