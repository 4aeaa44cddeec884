#!/bin/sh
# bench_exact.sh — sim --optimal past the MILP's reach (docs/bound.md#the-search):
# the incumbent, the bound, the certified gap and the CPU seconds of each
# case of bench/exact.md. Prints figures; it does not pass or fail.
#   sh bench/bench_exact.sh [build/stagecraft] [SECONDS]
SC=${1:-build/stagecraft}
T=${2:-120}
run() {
  python3 - "$SC" "$T" "$@" <<'PY'
import json, resource, subprocess, sys, time
sc, t, args = sys.argv[1], sys.argv[2], sys.argv[3:]
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
w0 = time.time()
out = subprocess.run([sc, 'sim'] + args + ['--json', f'--optimal={t}'], capture_output=True, text=True)
w = time.time() - w0
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
j = json.loads(out.stdout)
o = j['optimal']
print(f"{' '.join(args):70s} makespan {j['makespan']:<8g} incumbent {o['incumbent']:<8g} "
      f"bound {o['bound']:<8.6g} gap {100 * o['gap']:.2f} % status {o['status']} "
      f"cpu {cpu:.1f} s wall {w:.1f} s")
PY
}
run v-zb -D p=8 -D m=32 -D mem=6 -D tw=0.63 -D tcomm=0.016
run v-zb -D p=8 -D m=32 -D mem=8 -D tw=0.63 -D tcomm=0.016
run v-zb -D p=8 -D m=32 -D tw=0.63 -D tcomm=0.016
run v-zb -D p=4 -D m=16 -D tw=0.63 -D tcomm=0.016
run v-zb -D p=4 -D m=16 -D mem=4 -D tw=0.63 -D tcomm=0.016
run v-zb -D p=4 -D m=16 -D mem=3 -D tw=0.63 -D tcomm=0.016
run zbv-auto -D p=4 -D m=16 -D mem=4 -D tw=0.63 -D tcomm=0.016
