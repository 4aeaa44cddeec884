#!/bin/sh
# bench_moe_step.sh — the mixture of experts the runtime trains
# (docs/run.md#mixture-of-experts) beside the dense decoder of the same
# sizes: a Mixtral-shaped config (hidden HIDDEN, 8 heads over 2 KV heads,
# expert width INTER, EXPERTS experts, TOP per token) and the same config
# without experts (one SwiGLU of width INTER), zb-h1 on 2 CPU threads,
# m = 4. Prints the step time, per device the peak activation bytes
# measured against predicted and the parameter bytes (run --json "params").
#   sh bench/bench_moe_step.sh        HIDDEN=512 INTER=1408 EXPERTS=8 TOP=2 LAYERS=4 SEQ=64
SC=${SC:-build/stagecraft}
HIDDEN=${HIDDEN:-512} INTER=${INTER:-1408} EXPERTS=${EXPERTS:-8} TOP=${TOP:-2}
LAYERS=${LAYERS:-4} SEQ=${SEQ:-64} ROUNDS=${ROUNDS:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for what in moe dense; do
  python3 -c '
import json, sys
h, i, e, k, l, what = sys.argv[1:7]
c = {"model_type": "mixtral" if what == "moe" else "llama", "hidden_size": int(h),
     "intermediate_size": int(i), "num_attention_heads": 8, "num_key_value_heads": 2,
     "num_hidden_layers": int(l), "vocab_size": 1024, "rope_theta": 1e6, "rms_norm_eps": 1e-5}
if what == "moe":
    c.update(num_local_experts=int(e), num_experts_per_tok=int(k))
json.dump(c, open(sys.argv[7], "w"))
' "$HIDDEN" "$INTER" "$EXPERTS" "$TOP" "$LAYERS" $what "$tmp/$what.json"
done
echo "bench_moe: zb-h1 p=2 m=4, hidden $HIDDEN, inter $INTER, $EXPERTS experts top $TOP, $LAYERS layers, seq $SEQ, batch 2 (best of $ROUNDS)"
for what in moe dense; do
  best=""
  for r in $(seq "$ROUNDS"); do
    "$SC" run zb-h1 -D p=2 -D m=4 -D seq="$SEQ" -D batch=2 --model "$tmp/$what.json" --json \
      >"$tmp/$what.$r" 2>/dev/null || echo "run failed ($what)"
  done
  python3 -c '
import json, sys
js = [json.load(open(f)) for f in sys.argv[2:]]
j = min(js, key=lambda j: j["step_time_s"])
meas, pred = j["peak_activation_bytes"], j["predicted_peak_activation_bytes"]
par = [(p["params"], p["predicted_params"]) for p in j["params"]]
print("%-6s step %7.3f s  peak activation bytes %s (predicted %s: %s)  parameter bytes %s (%s)" % (
    sys.argv[1], j["step_time_s"], meas, pred, "equal" if meas == pred else "DIFFERENT",
    [a for a, b in par], "as predicted" if all(a == b for a, b in par) else "DIFFERENT"))
' $what "$tmp"/$what.[0-9]*
done
