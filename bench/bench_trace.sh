#!/bin/sh
# bench_trace.sh — costs --from-trace on generated merged traces
# (tests/py/gen_trace.py): many processes (one stage each) and many steps.
# Prints the median CPU seconds of 3 runs (bench/cputime.py: wall time is
# noise on a shared machine), the size of the file and the peak memory of
# one run. The reader is linear in the events (docs/costs.md#large-traces);
# the figures of the quadratic reader it replaced are in bench/traces.md.
SC=${SC:-./stagecraft}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for spec in "--procs 10000" "--procs 40000" "--procs 100000" "--procs 2 --steps 20000"; do
  # shellcheck disable=SC2086
  python3 tests/py/gen_trace.py "$tmp/t.json" $spec --mb 1
  cpu=$(python3 bench/cputime.py 3 $SC --max-mem 0 costs --from-trace "$tmp/t.json" -o "$tmp/c.json")
  rss=$(/usr/bin/time -f %M $SC --max-mem 0 costs --from-trace "$tmp/t.json" -o "$tmp/c.json" 2>&1 >/dev/null | tail -n 1)
  printf 'costs --from-trace %-24s %6.1f MB  %7.2f s CPU  %6d MB peak\n' "$spec" \
    "$(python3 -c "import os; print(os.path.getsize('$tmp/t.json') / 1e6)")" "$cpu" "$((rss / 1024))"
done
