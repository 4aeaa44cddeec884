#!/bin/sh
# bench_seq1f1b_run.sh — Seq1F1B trained by the CPU runtime (docs/slices.md#run)
# against 1F1B on the same decoder: a Llama-shaped config (hidden HIDDEN, 8
# heads over 2 KV heads, inter 2.75 hidden, LAYERS layers, vocab 1024), one
# sequence of SEQ tokens a microbatch, p = 4 threads, m = 8, K = SLICES
# even slices. Prints per recipe the best step time of ROUNDS
# runs, the peak activation bytes per device measured against predicted,
# and the ratios to 1f1b. Passes or fails nothing.
#   sh bench/bench_seq1f1b_run.sh        HIDDEN=256 LAYERS=8 SEQ=256 SLICES=4 ROUNDS=3
SC=${SC:-build/stagecraft}
HIDDEN=${HIDDEN:-256} LAYERS=${LAYERS:-8} SEQ=${SEQ:-256} SLICES=${SLICES:-4} ROUNDS=${ROUNDS:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 -c '
import json, sys
h, l = int(sys.argv[1]), int(sys.argv[2])
json.dump({"model_type": "llama", "hidden_size": h, "intermediate_size": h * 11 // 4,
           "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": l,
           "vocab_size": 1024, "rope_theta": 5e5, "rms_norm_eps": 1e-5}, open(sys.argv[3], "w"))
' "$HIDDEN" "$LAYERS" "$tmp/model.json"
echo "bench_seq1f1b_run: p=4 m=8, hidden $HIDDEN, $LAYERS layers, seq $SEQ, batch 1, slices $SLICES (best of $ROUNDS)"
for what in "1f1b" "seq1f1b -D slices=$SLICES"; do
  name=$(echo "$what" | tr -d ' ' | sed 's/-Dslices=/ K=/; s/-Dslice_split=/ /')
  for r in $(seq "$ROUNDS"); do
    "$SC" run $what -D p=4 -D m=8 -D seq="$SEQ" -D batch=1 --model "$tmp/model.json" --json \
      >"$tmp/r.$r" 2>"$tmp/e" || { echo "run failed ($what): $(head -1 "$tmp/e")"; }
  done
  python3 -c '
import json, sys
js = [json.load(open(f)) for f in sys.argv[2:]]
j = min(js, key=lambda j: j["step_time_s"])
meas, pred = j["peak_activation_bytes"], j["predicted_peak_activation_bytes"]
print("%-24s step %7.3f s  peak activation bytes %s (predicted %s: %s)" % (
    sys.argv[1], j["step_time_s"], meas, pred, "equal" if meas == pred else "DIFFERENT"))
' "$name" "$tmp"/r.* | tee -a "$tmp/all"
  rm -f "$tmp"/r.*
done
python3 -c '
import re, sys
rows = [l for l in open(sys.argv[1])]
def f(l):
    t = float(re.search(r"step +([0-9.]+)", l).group(1))
    b = [int(x) for x in re.search(r"bytes \[([0-9, ]+)\]", l).group(1).split(",")]
    return t, max(b)
t0, b0 = f(rows[0])
for l in rows[1:]:
    t, b = f(l)
    print("%-24s step %.3fx of 1f1b, peak %.3f of 1f1b" % (l.split(" step")[0].strip(), t / t0, b / b0))
' "$tmp/all"
