#!/bin/sh
# decoder.sh — `run --model config.json` trains a Llama-style decoder
# (docs/run.md#the-decoder; runtime/model/model_decoder.c): through the
# loop, Zero-Bubble, V-shape and pair recipes its loss and every gradient
# match the single-device reference and the measured peak activation bytes
# equal the prediction (B frees its b_only parts: a per-stage w_keep);
# several steps learn; offload and recomputation keep the peaks exact;
# MPI ranks give the threads' loss bit for bit; the configs it does not
# train yet are refused in one line; a Mixtral-style config trains its
# mixture of experts (docs/run.md#mixture-of-experts) the same way. The
# kernels themselves: build/test_decoder_ops, build/test_moe_ops. Run from
# the repository root: sh tests/decoder.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan_mpi.supp:print_suppressions=0:fast_unwind_on_malloc=0"
. tests/lib.sh # ok, bad, expect, later, verdicts
F=tests/fixtures/models
M=$F/run-llama.json   # hidden 64, 4 heads over 2 KV heads, head_dim 16, inter 128, 8 layers
hex() { sed 's/.*"loss_hex": "\([^"]*\)".*/\1/' "$1"; }

# 1. The recipes (4 devices), each against the reference (runjson.py:
# loss and gradients within 1e-5, peaks exact).
for r in zb-h1 dualpipev $(full && echo 1f1b zb-v v-zb interleaved gpipe zb-h2 v-half v-min 1f1b-v); do
  if $SC run $r --model $M --check --json >"$tmp/j" 2>"$tmp/e"; then later "$tmp/j" "run $r --model --check"
  else bad "run $r --model --check"; head -3 "$tmp/e" >&2; fi
done
# Multi-query attention (1 KV head), head_dim from hidden / heads, another
# eps and the default rope_theta, over 2 devices.
if ! full; then :
elif $SC run zb-h1 -D p=2 -D m=4 --model $F/run-mqa.json --check --json >"$tmp/j" 2>"$tmp/e"; then
  later "$tmp/j" "run zb-h1 --model run-mqa --check"
else bad "run zb-h1 --model run-mqa --check"; head -3 "$tmp/e" >&2; fi

# 2. The model's object in --json; and the reference is bitwise (the same
# operations in the same order on one device).
$SC run 1f1b -D p=2 -D m=2 --model $M --check --json >"$tmp/j" 2>"$tmp/e" || bad "run 1f1b --model"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
m = j["model"]
assert m["kind"] == "decoder" and (m["heads"], m["kv_heads"], m["head_dim"], m["inter"]) == (4, 2, 16, 128), m
assert m["rope_theta"] == 500000 and m["norm_eps"] == 1e-5 and m["layers"] == 8, m
assert j["loss"] == j["reference_loss"] and j["max_grad_rel_err"] == 0, j
' "$tmp/j" && ok || bad "run --json: the decoder's model object"

# 3. Several steps learn (the same batch each step), with the optimizer
# synchronized and post-validated; memory policies keep the peaks exact.
for a in "-D@offload=all@-D@offload_ratio=0.1" $(full && echo "-D@steps=3@-D@optim_sync=sync" \
         "-D@steps=2@-D@optim_sync=post-validation@-D@clip=0.5" "-D@recompute=all"); do
  a=$(echo "$a" | tr @ ' ')
  # shellcheck disable=SC2086
  if $SC run zb-h1 --model $M $a --check --json >"$tmp/j" 2>"$tmp/e"; then later "$tmp/j" "run zb-h1 --model $a"
  else bad "run zb-h1 --model $a --check"; head -3 "$tmp/e" >&2; fi
done
$SC run zb-h1 --model $M -D steps=3 --json >"$tmp/j" 2>"$tmp/e" || bad "run --model -D steps=3"
python3 -c '
import json, sys
l = json.load(open(sys.argv[1]))["step_loss"]
assert len(l) == 3 and l[0] > l[1] > l[2], l
' "$tmp/j" && ok || bad "the decoder's loss falls over 3 steps"

# 4. What it does not train yet: one line, exit 2 (a config's parts) or 3.
# The config's sizes, not a recipe's defaults for the built-in model (1f1b
# declares hidden, layers and vocab); -D given besides still wins.
sed 's/"hidden_size": 48/"hidden_size": 36/' $F/run-mqa.json >"$tmp/h36.json"
expect 0 '"hidden": 36, "layers": 4, "vocab": 96' -- $SC run 1f1b -D p=2 -D m=2 --model "$tmp/h36.json" --json
expect 0 '"hidden": 36, "layers": 2, "vocab": 96' -- $SC run 1f1b -D p=2 -D m=2 -D layers=2 --model "$tmp/h36.json" --json
expect 2 "multi-head latent attention (MLA) is not trained yet" -- $SC run 1f1b --model $F/tiny-deepseek-v3.json
expect 2 "biases is not trained yet" -- $SC run 1f1b --model $F/tiny-llama.json
expect 2 "qk_norm is not trained yet" -- $SC run 1f1b --model $F/tiny-qwen3.json
expect 2 "biases is not trained yet" -- $SC run 1f1b --model $F/tiny-qwen2.json
expect 3 "the decoder is not trained with copies of the model (dualpipe) yet" -- \
  $SC run dualpipe --model $M
expect 3 "the decoder is not trained with a split vocabulary yet" -- \
  $SC run 1f1b --model $M -D vocab_par=vocab-1
expect 2 "nope.json" -- $SC run 1f1b --model nope.json

# 5. The CUDA module on its CPU stand-in (tests/cudastub/, built by make
# test): a loop and the pairs (the lane's W scatters the embedding's
# gradient), with random delays on every stream operation. Skipped when the
# stand-in is not built, or its backend has no decoder slots. (make check:
# the pairs on 2 devices, 4 microbatches, a layer a stage: a sixth of the 4
# devices' CPU.)
STUB=${BUILD:-build}/cudastub
PM=; full || PM="-D p=2 -D m=4 -D layers=4"
if [ -f "$STUB/libstagecraft_cuda.so" ]; then
  for r in dualpipev $(full && echo zb-h1); do
    # shellcheck disable=SC2086
    STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" \
      SC_CUDASTUB=1 SC_CUDASTUB_DELAY_US=50 timeout 300 $SC run $r $PM --backend cuda --model $M --check --json \
      >"$tmp/j" 2>"$tmp/e"
    if grep -q "has no decoder layers" "$tmp/e"; then continue; fi
    if [ -s "$tmp/j" ]; then later "$tmp/j" "run $r --backend cuda (stand-in) --model --check" --backend cuda --stand-in
    else bad "run $r --backend cuda (stand-in) --model --check"; head -3 "$tmp/e" >&2; fi
  done
fi

# 6. MPI: one rank per device, the threads' loss bit for bit.
if have_mpi; then
  for r in zb-h1 $(full && echo zb-v interleaved); do
    $SC run $r --model $M --json >"$tmp/a" 2>"$tmp/e"
    # (--check: each rank trains the reference too; make test only)
    timeout -k 10 120 mpirun -np 4 --oversubscribe $SC run $r --model $M $(full && echo --check) --json \
      >"$tmp/b" 2>"$tmp/e"
    if grep -q '"transport": "mpi"' "$tmp/b" && [ "$(hex "$tmp/a")" = "$(hex "$tmp/b")" ]; then ok
      if full; then later "$tmp/b" "mpirun -np 4 run $r --model --check"; fi
    else bad "threads vs mpirun -np 4 on $r --model"; head -3 "$tmp/e" >&2; fi
  done
fi

# 7. Mixture of experts (run-mixtral: 4 experts, top 2; run-moe-shared: 6
# experts, top 3, a shared expert): the recipes against the reference
# (bitwise on threads), the predicted peaks and parameter bytes exact; MPI
# ranks give the threads' bits; the stand-in within its tolerance.
X=$F/run-mixtral.json
for r in zb-h1 dualpipev $(full && echo 1f1b zb-v v-zb interleaved gpipe zb-h2 v-half v-min 1f1b-v); do
  if $SC run $r --model $X --check --json >"$tmp/j" 2>"$tmp/e"; then later "$tmp/j" "run $r --model run-mixtral --check"
  else bad "run $r --model run-mixtral --check"; head -3 "$tmp/e" >&2; fi
done
for r in $(full && echo 1f1b zb-h1 zb-v dualpipev); do
  if $SC run $r --model $F/run-moe-shared.json --check --json >"$tmp/j" 2>"$tmp/e"; then
    later "$tmp/j" "run $r --model run-moe-shared --check"
  else bad "run $r --model run-moe-shared --check"; head -3 "$tmp/e" >&2; fi
done
$SC run zb-h1 -D p=2 -D m=2 --model $F/run-moe-shared.json --check --json >"$tmp/j" 2>"$tmp/e" ||
  bad "run zb-h1 --model run-moe-shared"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
m = j["model"]
assert (m["experts"], m["experts_per_tok"], m["moe_inter"], m["shared_inter"]) == (6, 3, 24, 24), m
assert j["loss"] == j["reference_loss"] and j["max_grad_rel_err"] == 0 and j["bitwise"], j
' "$tmp/j" && ok || bad "run --json: the MoE model object, bitwise"
if full; then
  $SC run zb-h1 --model $X -D steps=3 --json >"$tmp/j" 2>"$tmp/e" || bad "run --model run-mixtral -D steps=3"
  python3 -c '
import json, sys
l = json.load(open(sys.argv[1]))["step_loss"]
assert len(l) == 3 and l[0] > l[1] > l[2], l
' "$tmp/j" && ok || bad "the MoE loss falls over 3 steps"
  for a in "-D@offload=all@-D@offload_ratio=0.1" "-D@recompute=all" "-D@steps=2@-D@optim_sync=post-validation@-D@clip=0.5"; do
    a=$(echo "$a" | tr @ ' ')
    # shellcheck disable=SC2086
    if $SC run zb-h1 --model $X $a --check --json >"$tmp/j" 2>"$tmp/e"; then later "$tmp/j" "run zb-h1 --model run-mixtral $a"
    else bad "run zb-h1 --model run-mixtral $a --check"; head -3 "$tmp/e" >&2; fi
  done
fi
expect 2 "a mixture of experts: the router's counts" -- $SC run zb-h1 --model $X --graph
# (the stand-in: make test; make check runs the slots' own test, tests/cudastub/run.sh)
if [ -f "$STUB/libstagecraft_cuda.so" ]; then
  for r in $(full && echo zb-h1 dualpipev); do
    STAGECRAFT_CUDA_MODULE="$STUB/libstagecraft_cuda.so" STAGECRAFT_NCCL_LIBRARY="$STUB/libsc_ncclstub.so" \
      SC_CUDASTUB=1 SC_CUDASTUB_DELAY_US=50 timeout 300 $SC run $r --backend cuda --model $X --check --json \
      >"$tmp/j" 2>"$tmp/e"
    if grep -q "has no mixture-of-experts slots" "$tmp/e"; then continue; fi
    if [ -s "$tmp/j" ]; then later "$tmp/j" "run $r --backend cuda (stand-in) --model run-mixtral --check" --backend cuda --stand-in
    else bad "run $r --backend cuda (stand-in) --model run-mixtral --check"; head -3 "$tmp/e" >&2; fi
  done
fi
if have_mpi; then # (tests/run.sh probed once for every suite)
  for r in $(full && echo zb-h1 zb-v) dualpipev; do
    $SC run $r --model $X --json >"$tmp/a" 2>"$tmp/e"
    timeout -k 10 120 mpirun -np 4 --oversubscribe $SC run $r --model $X $(full && echo --check) --json \
      >"$tmp/b" 2>"$tmp/e"
    if grep -q '"transport": "mpi"' "$tmp/b" && [ "$(hex "$tmp/a")" = "$(hex "$tmp/b")" ]; then ok
      if full; then later "$tmp/b" "mpirun -np 4 run $r --model run-mixtral --check"; fi
    else bad "threads vs mpirun -np 4 on $r --model run-mixtral"; head -3 "$tmp/e" >&2; fi
  done
fi

verdicts
echo "decoder: $pass passed, $fail failed"
[ "$fail" = 0 ]
