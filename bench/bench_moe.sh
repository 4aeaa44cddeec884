#!/bin/sh
# bench_moe.sh — the predicted step gain of dualpipev over 1f1b with MoE
# all-to-alls (docs/semantics.md#expert-parallelism), against an injected
# all-to-all latency (-D coll_us) and the EP degree: mixtral-8x7b, p = 4,
# m = 16, seq 4096, the model's costs (400 TFLOP/s, 100 GB/s). Prints one
# row per point; bench/moe.md keeps the figures.
SC=${SC:-./stagecraft}
M=tests/fixtures/models/mixtral-8x7b.json
mk() { $SC sim "$1" -D p=4 -D m=16 --model $M -D seq=4096 -D ep="$2" -D coll_us="$3" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["makespan"])'; }
printf '%-4s %-9s %-11s %-11s %-11s %s\n' ep coll_us 1f1b dualpipev zb-h1 gain
for ep in 1 2 4 8; do
  for us in 10 1000 5000 20000; do
    a=$(mk 1f1b $ep $us); v=$(mk dualpipev $ep $us); z=$(mk zb-h1 $ep $us)
    printf '%-4s %-9s %-11.4f %-11.4f %-11.4f %.3f\n' $ep $us "$a" "$v" "$z" \
      "$(python3 -c "print($a / $v)")"
  done
done
