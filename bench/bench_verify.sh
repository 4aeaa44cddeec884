#!/bin/sh
# bench_verify.sh — what `check` costs per instruction as programs grow
# (issue 27: verification near-linear in instructions): a plain program, a
# split vocabulary (collectives of every device per microbatch) and two
# steps under post-validation (a chain of broadcasts per step, and the
# rollback path's broadcasts), at p = 32 .. P_MAX with m = 2p. Each line:
# the instructions, the process's CPU seconds (the median of ROUNDS runs)
# and the microseconds per instruction; a cost that stays flat as p grows
# is linear in instructions.
#   sh bench/bench_verify.sh        Environment: SC (./stagecraft), ROUNDS (3), P_MAX (128)
SC=${SC:-./stagecraft}
ROUNDS=${ROUNDS:-3}
P_MAX=${P_MAX:-128}
cpu() { python3 "$(dirname "$0")/cputime.py" "$ROUNDS" "$@"; }
printf '%-16s %5s %10s %9s %12s\n' case p instr cpu_s us/instr
for kind in plain vocab postval; do
  p=32
  while [ $p -le "$P_MAX" ]; do
    m=$((2 * p))
    case $kind in
      plain) set -- -D p=$p -D m=$m ;;
      vocab) set -- -D p=$p -D m=$m -D vocab_par=vocab-1 -D layers=$((4 * p)) -D vocab=65536 ;;
      postval) set -- -D p=$p -D m=$m -D steps=2 -D optim_sync=post-validation ;;
    esac
    n=$("$SC" check zb-h1 "$@" 2>&1 | sed -n 's/.* \([0-9]*\) instructions verified.*/\1/p')
    t=$(cpu "$SC" check zb-h1 "$@")
    printf '%-16s %5d %10d %9.3f %12.3f\n' "zb-h1 $kind" $p "$n" "$t" \
      "$(python3 -c "print($t * 1e6 / $n)")"
    p=$((2 * p))
  done
done
