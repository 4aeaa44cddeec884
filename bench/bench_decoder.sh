#!/bin/sh
# bench_decoder.sh — the decoder the runtime trains (docs/run.md#the-decoder)
# at a real model's width: Llama-3-8B's config (hidden 4096, GQA 32/8,
# head_dim 128, SwiGLU 14336) with fewer layers and a smaller vocabulary
# (LAYERS, VOCAB), on CPU threads; then the built-in MLP of the same hidden
# size beside it. Prints the step time, and per device the peak activation
# bytes measured against predicted (the byte model of the decoder's record).
#   sh bench/bench_decoder.sh        LAYERS=2 VOCAB=1024 SEQ=16 RECIPE=zb-h1
SC=${SC:-build/stagecraft}
LAYERS=${LAYERS:-2} VOCAB=${VOCAB:-1024} SEQ=${SEQ:-16} RECIPE=${RECIPE:-zb-h1}
CFG=${CFG:-tests/fixtures/models/llama3-8b.json}
echo "bench_decoder: $RECIPE p=2 m=4, $CFG with layers $LAYERS, vocab $VOCAB, seq $SEQ, batch 1"
for what in decoder mlp; do
  if [ $what = decoder ]; then m="--model $CFG"; else m="-D hidden=4096"; fi
  # shellcheck disable=SC2086
  "$SC" run "$RECIPE" -D p=2 -D m=4 -D layers="$LAYERS" -D vocab="$VOCAB" -D seq="$SEQ" -D batch=1 \
    $m --json 2>/dev/null | python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
meas, pred = j["peak_activation_bytes"], j["predicted_peak_activation_bytes"]
print("%-8s step %7.3f s  peak activation bytes per device %s, predicted %s: %s" % (
    sys.argv[1], j["step_time_s"], meas, pred, "equal" if meas == pred else "DIFFERENT"))
' $what
done
