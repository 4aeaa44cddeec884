#!/bin/sh
# tests/fuzz/run.sh — one libFuzzer harness for `make fuzz` (which runs
# FUZZ_JOBS of them at a time): SECONDS of fuzzing on the seed corpus
# tests/fuzz/corpus/NAME (and tests/fuzz/NAME.dict when there is one), the
# new inputs kept in BUILD/corpus/NAME. Runaway inputs are caught by each
# harness's CPU budget (tests/fuzz/cpu_limit.h), not by the wall clock: the
# wall-clock -timeout is only for a harness that blocks. Any crash, leak,
# sanitizer report or timeout fails, with the log's tail and the input
# left in BUILD/NAME-crash-*.
# Usage: sh tests/fuzz/run.sh BUILD SECONDS BUILD/fuzz_NAME
b=$1 t=$2 f=$3
n=${f##*/fuzz_}
mkdir -p "$b/corpus/$n"
dict=; [ -f "tests/fuzz/$n.dict" ] && dict=-dict=tests/fuzz/$n.dict
# shellcheck disable=SC2086
if "$f" -max_total_time="$t" -timeout=900 -rss_limit_mb=2048 -print_final_stats=1 \
     -artifact_prefix="$b/$n-" $dict "$b/corpus/$n" "tests/fuzz/corpus/$n" >"$b/fuzz-$n.log" 2>&1; then
  echo "fuzz: $n ran $t s: $(grep -E '^stat::number_of_executed_units|^Done' "$b/fuzz-$n.log" | tr '\n' ' ')"
else
  tail -n 60 "$b/fuzz-$n.log"
  echo "fuzz: $n FAILED (the input is in $b/$n-crash-*, -leak-*, -timeout-* or -oom-*)"
  exit 1
fi
