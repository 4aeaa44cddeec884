#!/bin/sh
# bench_ep_overlap.sh — issue 47 item 4's measurement, first half: the
# step of 1f1b and dualpipev at ep = 2 (run-mixtral, p = 4, CPU threads)
# with an injected all-to-all latency (STAGECRAFT_A2A_LATENCY_US, a real
# sleep in the local transport's all-to-all completion;
# docs/run.md#expert-parallelism), best of ROUNDS, and dualpipev's gain
# (1f1b's step / dualpipev's), and dualpipev with its pairs in turn
# (STAGECRAFT_PAIRS=serial: no lane, no overlap). The simulator's prediction of the same gain
# is not made here yet.
#   sh bench/bench_ep_overlap.sh        LATS="0 1000 2000 5000" ROUNDS=3
SC=${SC:-build/stagecraft}
LATS=${LATS:-"0 1000 2000 5000"} ROUNDS=${ROUNDS:-3}
X=tests/fixtures/models/run-mixtral.json
echo "bench_ep_overlap: run-mixtral, ep=2, p=4 (8 threads), best of $ROUNDS step times"
printf '%-10s %-12s %-12s %-14s %-6s\n' latency_us 1f1b_s dualpipev_s dv_serial_s gain
for lat in $LATS; do
  for r in 1f1b dualpipev serial; do
    best=""
    for i in $(seq "$ROUNDS"); do
      rr=$r pairs=
      [ $r = serial ] && rr=dualpipev pairs=serial
      t=$(STAGECRAFT_PAIRS=$pairs STAGECRAFT_A2A_LATENCY_US=$lat "$SC" run $rr --model $X -D ep=2 --json |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_s"])') || exit 1
      best=$(python3 -c 'import sys; a = sys.argv[1:]; print(min(float(x) for x in a))' $best $t)
    done
    eval "t_$r=$best"
  done
  printf '%-10s %-12.6f %-12.6f %-14.6f %-6.3f\n' "$lat" "$t_1f1b" "$t_dualpipev" "$t_serial" \
    "$(python3 -c "print($t_1f1b / $t_dualpipev)")"
done
