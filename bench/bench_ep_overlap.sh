#!/bin/sh
# bench_ep_overlap.sh — issue 47 item 4's measurement: the
# step of 1f1b and dualpipev at ep = 2 (run-mixtral, p = 4, CPU threads)
# with an injected all-to-all latency (STAGECRAFT_A2A_LATENCY_US, a real
# sleep in the local transport's all-to-all completion;
# docs/run.md#expert-parallelism), best of ROUNDS, and dualpipev's gain
# (1f1b's step / dualpipev's), and dualpipev with its pairs in turn
# (STAGECRAFT_PAIRS=serial: no lane, no overlap); then at each of PLATS
# the simulator's prediction of the gain from run --profile, PROUNDS
# rounds (below). LATS=" " skips the first table. HOW=mpi runs the 8
# devices as MPI ranks (mpirun -np 8 --oversubscribe; the MPI transport's
# latency is measured on each rank from when every member's counts had
# come, transport_mpi.c) instead of threads.
#   sh bench/bench_ep_overlap.sh   LATS="0 1000 2000 5000" ROUNDS=3 PLATS="2000 5000" PROUNDS=3
#   HOW=mpi sh bench/bench_ep_overlap.sh
SC=${SC:-build/stagecraft}
LATS=${LATS:-"0 1000 2000 5000"} ROUNDS=${ROUNDS:-3} PLATS=${PLATS:-"2000 5000"}
PROUNDS=${PROUNDS:-3} HOW=${HOW:-threads}
case $HOW in
  threads) RUN= as="8 threads" ;;
  mpi) RUN="mpirun -np 8 --oversubscribe" as="8 MPI ranks"
       export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
         OMPI_MCA_btl_vader_single_copy_mechanism=none ;;
  *) echo "bench_ep_overlap: HOW is threads or mpi, not '$HOW'" >&2; exit 2 ;;
esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
X=tests/fixtures/models/run-mixtral.json
echo "bench_ep_overlap: run-mixtral, ep=2, p=4 ($as), best of $ROUNDS step times"
printf '%-10s %-12s %-12s %-14s %-6s\n' latency_us 1f1b_s dualpipev_s dv_serial_s gain
for lat in $LATS; do
  for r in 1f1b dualpipev serial; do
    best=""
    for i in $(seq "$ROUNDS"); do
      rr=$r pairs=
      [ $r = serial ] && rr=dualpipev pairs=serial
      t=$(STAGECRAFT_PAIRS=$pairs STAGECRAFT_A2A_LATENCY_US=$lat $RUN "$SC" run $rr --model $X -D ep=2 --json |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_s"])') || exit 1
      best=$(python3 -c 'import sys; a = sys.argv[1:]; print(min(float(x) for x in a))' $best $t)
    done
    eval "t_$r=$best"
  done
  printf '%-10s %-12.6f %-12.6f %-14.6f %-6.3f\n' "$lat" "$t_1f1b" "$t_dualpipev" "$t_serial" \
    "$(python3 -c "print($t_1f1b / $t_dualpipev)")"
done
# The prediction: run --profile of each recipe at each latency (its own
# cost file: the passes less their measured all-to-alls, dispatch and
# combine per stage; its measured step, the median of its steps), the
# simulator's step from it beside the measured step of the same profile,
# and the two gains; PROUNDS rounds, 1f1b and dualpipev in turn within a
# round (the load moves between rounds), then the median of the rounds'
# gains and the error of the predicted one (pred / meas - 1), and the best
# of the rounds: each recipe's run with the least measured step (load
# only adds time), with its own prediction.
echo
printf '%-10s %-6s %-10s %-10s %-10s %-10s %-9s %-9s %-7s\n' latency_us round 1f1b_meas \
  1f1b_pred dv_meas dv_pred gain_meas gain_pred err
for lat in $PLATS; do
  : >"$tmp/rows"
  for i in $(seq "$PROUNDS"); do
    for r in 1f1b dualpipev; do
      STAGECRAFT_A2A_LATENCY_US=$lat $RUN "$SC" run $r --model $X -D ep=2 --profile "$tmp/$r.json" \
        >/dev/null 2>&1 || { echo "run --profile $r failed"; exit 1; }
    done
    python3 -c '
import json, sys
a, b = (json.load(open(f))["measured"] for f in sys.argv[3:5])
m = [a["step_time_s"], a["predicted_step_time_s"], b["step_time_s"], b["predicted_step_time_s"]]
g, p = m[0] / m[2], m[1] / m[3]
print("%-10s %-6s %-10.6f %-10.6f %-10.6f %-10.6f %-9.3f %-9.3f %+.3f" % (sys.argv[1], sys.argv[2], *m, g, p, p / g - 1))
' "$lat" "$i" "$tmp/1f1b.json" "$tmp/dualpipev.json" | tee -a "$tmp/rows"
  done
  python3 -c '
import statistics, sys
rows = [l.split() for l in open(sys.argv[2])]
g, p = (statistics.median(float(r[k]) for r in rows) for k in (6, 7))
print("%-10s %-6s %-10s %-10s %-10s %-10s %-9.3f %-9.3f %+.3f" % (sys.argv[1], "median", "", "", "", "", g, p, p / g - 1))
a, b = (min(rows, key=lambda r: float(r[k])) for k in (2, 4)) # load only adds time
m = [float(a[2]), float(a[3]), float(b[4]), float(b[5])]
g, p = m[0] / m[2], m[1] / m[3]
print("%-10s %-6s %-10.6f %-10.6f %-10.6f %-10.6f %-9.3f %-9.3f %+.3f" % (sys.argv[1], "best", *m, g, p, p / g - 1))
' "$lat" "$tmp/rows"
done
