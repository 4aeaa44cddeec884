#!/bin/sh
# bench_ep_run.sh — expert parallelism as run trains it (runtime/run/run_ep.c,
# docs/run.md#expert-parallelism): a Mixtral-shaped config (hidden HIDDEN,
# 8 heads over 2 KV heads, expert width INTER, EXPERTS experts, TOP per
# token) at ep = 1, 2 and 4 on CPU threads (p x E of them), each recipe
# of RECIPES at p = 2, m = 4, batch 4 (the same total batch: ep = E splits
# it), best of ROUNDS step times; per ep the measured peak activation bytes
# and parameter bytes of d0 (run --json), which equal the predicted ones.
# HOW="threads mpi" adds each point as MPI ranks (mpirun -np p x E
# --oversubscribe: runtime/run/run_ep_mpi.c); EPS chooses the ep degrees.
#   sh bench/bench_ep_run.sh        HIDDEN=256 INTER=512 EXPERTS=4 TOP=2 LAYERS=4 SEQ=32
SC=${SC:-build/stagecraft}
HIDDEN=${HIDDEN:-256} INTER=${INTER:-512} EXPERTS=${EXPERTS:-4} TOP=${TOP:-2}
LAYERS=${LAYERS:-4} SEQ=${SEQ:-32} ROUNDS=${ROUNDS:-3} RECIPES=${RECIPES:-"1f1b dualpipev"}
HOW=${HOW:-threads} EPS=${EPS:-"1 2 4"}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 -c '
import json, sys
h, i, e, k, l = (int(x) for x in sys.argv[1:6])
json.dump({"model_type": "mixtral", "hidden_size": h, "intermediate_size": i,
           "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": l,
           "vocab_size": 1024, "rope_theta": 1e6, "rms_norm_eps": 1e-5,
           "num_local_experts": e, "num_experts_per_tok": k}, open(sys.argv[6], "w"))
' "$HIDDEN" "$INTER" "$EXPERTS" "$TOP" "$LAYERS" "$tmp/m.json"
echo "bench_ep_run: p=2 m=4, hidden $HIDDEN, inter $INTER, $EXPERTS experts top $TOP, $LAYERS layers, seq $SEQ, batch 4 (best of $ROUNDS)"
printf '%-10s %-3s %-8s %-12s %-14s %-12s\n' recipe ep devices step_s d0_peak_bytes d0_params
for r in $RECIPES; do
  for ep in $EPS; do for how in $HOW; do
    best=""
    launch=""
    [ "$how" = mpi ] && launch="mpirun -np $((2 * ep)) --oversubscribe"
    for i in $(seq "$ROUNDS"); do
      # shellcheck disable=SC2086
      $launch "$SC" run "$r" -D p=2 -D m=4 -D seq="$SEQ" -D batch=4 -D ep="$ep" --model "$tmp/m.json" \
        --json >"$tmp/j" 2>"$tmp/err" || { echo "run $r ep=$ep ($how) failed: $(head -1 "$tmp/err")"; exit 1; }
      best=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); b = sys.argv[2]
t = j["step_time_s"]
p = j["params"][0]
assert j["peak_activation_bytes"][0] == j["predicted_peak_activation_bytes"][0]
assert p["params"] == p["predicted_params"]
if b and float(b.split()[0]) <= t: print(b)
else: print(t, j["peak_activation_bytes"][0], p["params"])' "$tmp/j" "$best")
    done
    set -- $best
    printf '%-10s %-3s %-8s %-12.6f %-14s %-12s\n' "$r" "$ep" "$((2 * ep))$([ "$how" = mpi ] && echo ' ranks')" "$1" "$2" "$3"
  done; done
done
