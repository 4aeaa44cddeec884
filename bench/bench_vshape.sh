#!/bin/sh
# bench_vshape.sh — stagecraft's V-shape recipes (v-half, v-min, v-zb and
# zbv-auto with time_limit 0) against the authors' schedules of the same
# name, rebuilt by tests/py/vref.py (issue 19; docs/recipes.md): every p from 3
# to 16, m = 2p and 4p, unit costs, (1, 1.2, 0.8), (1, 1.5, 1), (1, 1, 0.5)
# and the realistic (29850, 29767, 18868, comm 466). Prints one markdown row
# per case (stagecraft's simulated bubble and, in brackets, its dataflow
# timing's; the authors' orders through stagecraft's simulator and the
# dataflow timing; the peaks) and the summary. Not pass/fail: make test runs
# the same comparison on p = 3, 4, 6.
#
#   sh bench/bench_vshape.sh [STAGECRAFT] [CACHE.json]
#
# The authors' V-ZB (its block search in Python) takes most of the time: up
# to tens of minutes for the whole grid; CACHE keeps its figures between runs.
SC=${1:-build/stagecraft}
CACHE=${2:-}
set -- python3 tests/py/vcompare.py "$SC" --p 3-16 --m 2,4 --table
[ -n "$CACHE" ] && set -- "$@" --cache "$CACHE"
"$@"
