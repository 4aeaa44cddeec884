#!/bin/sh
# model_bytes.sh — the model description against real PyTorch
# (tests/torch/model_bytes.py, docs/model.md#checked-against-pytorch): the
# models of tests/fixtures/models/ built in PyTorch 2.15 on the CPU from the
# same config.json (tests/torch/hfmodels.py), in pipeline stages; the
# published totals counted on the meta device; per stage the parameters and
# their bytes, and on the tiny models after one real step the bytes of
# gradients and AdamW's states, against `sim --model FILE --json`; the
# bytes a decoder layer keeps for backward (saved_tensors_hooks) against
# act_bytes_per_token. make test runs all of it (well under a minute of
# CPU); make check skips it (tests/run.sh; SC_TORCH=run make check runs a
# sample: fewer stage counts and sequence lengths, where the venv is there).
# Needs the venv tests/torch/run.sh installs (TORCH_VENVS): make test
# installs it; SC_TORCH=run make check skips without it, saying so.
# Prints "model_bytes: N passed, N failed[, N skipped]".
SC=${SC:-build/stagecraft}
VENVS=${TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/stagecraft/torch}
. tests/tier.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/torch/venv.sh # venv_for: make test installs the venv (or waits for run.sh's install)
py=$(venv_for 2.15.0 2>"$tmp/why")
if [ -z "$py" ]; then
  echo "model_bytes: skipped: no PyTorch 2.15: $(tail -1 "$tmp/why")"
  echo "model_bytes: 0 passed, 0 failed, 1 skipped"; exit 0
fi
if full; then timeout 600 "$py" tests/torch/model_bytes.py "$SC"
else timeout 600 "$py" tests/torch/model_bytes.py "$SC" --sample; fi
rc=$?
if [ $rc = 124 ]; then
  echo "model_bytes: FAIL: timed out after 600 s"; echo "model_bytes: 0 passed, 1 failed"
fi
exit $rc
