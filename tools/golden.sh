#!/bin/sh
# tools/golden.sh BIN OUTDIR — writes what the interpreter produces for every
# stdlib recipe (sim --json, show --ascii, show --dump, every export format,
# with and without offload, and imports of the CSV exports) into OUTDIR, one
# file per command, so that two builds can be compared byte for byte:
#   sh tools/golden.sh ./stagecraft /tmp/before   (old build)
#   sh tools/golden.sh ./stagecraft /tmp/after    (new build)
#   diff -r /tmp/before /tmp/after
# Timing-dependent output (zb-auto's search) is pinned with --time-limit 0.
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") out=$2
mkdir -p "$out"
recipes=$("$bin" list | awk '/^[^ ]/ {print $1}')
for r in $recipes; do
  for cfg in "" "-D p=3 -D m=7 -D tf=1 -D tb=1.5 -D tw=0.5 -D tcomm=0.25" "-D offload=all" \
             "-D offload=selective -D offload_chunks=0.5 -D w_keep=0.5"; do
    tag=$(printf '%s' "$cfg" | tr -c 'A-Za-z0-9._=\n-' '_')
    base="$out/$r${tag:+.$tag}"
    # shellcheck disable=SC2086
    "$bin" sim "$r" $cfg --time-limit 0 --json >"$base.sim.json" 2>&1; echo "rc=$?" >>"$base.sim.json"
    # shellcheck disable=SC2086
    "$bin" show "$r" $cfg --time-limit 0 --ascii >"$base.ascii" 2>&1; echo "rc=$?" >>"$base.ascii"
    # shellcheck disable=SC2086
    "$bin" show "$r" $cfg --time-limit 0 --dump >"$base.dump" 2>&1; echo "rc=$?" >>"$base.dump"
    for f in torch-csv torch-csv-comms json trace svg; do
      # shellcheck disable=SC2086
      "$bin" export "$r" $cfg --time-limit 0 --format $f >"$base.$f" 2>&1; echo "rc=$?" >>"$base.$f"
    done
    for f in torch-csv torch-csv-comms; do
      if head -n 1 "$base.$f" | grep -q '^rc=' ; then continue; fi
      sed '$d' "$base.$f" >"$out/in.csv"
      (cd "$out" && "$bin" import in.csv --json) >"$base.$f.import" 2>&1; echo "rc=$?" >>"$base.$f.import"
      rm -f "$out/in.csv"
    done
  done
done
# the scheduler's wall-clock time is the one figure that differs run to run
sed -i 's/"seconds": [0-9.e-]*/"seconds": T/' "$out"/*.sim.json
ls "$out" | wc -l
