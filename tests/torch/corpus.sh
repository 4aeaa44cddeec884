#!/bin/sh
# corpus.sh — stagecraft's verdicts against PyTorch (tests/torch/corpus.py,
# docs/semantics.md#waits): generated programs (exports, PyTorch's own
# lowerings, their mutations) imported by stagecraft and run by PyTorch 2.15
# with gloo; no accepted program may hang, fail or train to wrong gradients.
# make check skips it (tests/run.sh; SC_TORCH=run make check runs a sample:
# the 2-rank hand-made hostile programs, one export and one mutation);
# make test two recipes and their mutations at 2 ranks,
# then two with PyTorch's per-edge communicators (--per-link), then the
# per-link exports of one recipe and of PyTorch's orders, then FSDP2 stages
# (tests/torch/fsdp.py --sample; its whole run: bench/torch.md); the whole
# corpus, 2 and 4 ranks, takes 10 to 17 minutes a run: bench/torch.md. Needs the
# venv tests/torch/run.sh installs (TORCH_VENVS); skipped without it.
# Prints "corpus: N passed, N failed[, N skipped]".
SC=${SC:-build/stagecraft}
VENVS=${TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/stagecraft/torch}
. tests/tier.sh
. tests/torch/venv.sh # venv_for: make test installs the venv (or waits for run.sh's install)
tmp=$(mktemp -d)
py=$(venv_for 2.15.0 2>"$tmp/why")
if [ -z "$py" ]; then
  echo "corpus: skipped: no PyTorch 2.15: $(tail -1 "$tmp/why")"
  rm -rf "$tmp"; echo "corpus: 0 passed, 0 failed, 1 skipped"; exit 0
fi
rm -rf "$tmp"
# One corpus at a time on the machine: the ranks are timed.
exec 9>"$VENVS/.lock-corpus"; flock 9
if ! full; then exec "$py" tests/torch/corpus.py "$SC" --sample; fi
# make test: with one communicator, then with PyTorch's per-edge ones
# (docs/semantics.md#modes); one summary line of all.
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$py" tests/torch/corpus.py "$SC" --worlds 2 --recipes 1f1b,zb-v | tee "$out"
"$py" tests/torch/corpus.py "$SC" --worlds 2 --recipes 1f1b,v-half --per-link | tee -a "$out"
# exports lowered per mode (docs/semantics.md#lowering-per-mode): a recipe and
# our lowering of PyTorch's classes' orders, waits placed per-link
"$py" tests/torch/corpus.py "$SC" --worlds 2 --recipes zb-v --exports-only per-link,2 --per-link | tee -a "$out"
# FSDP2 stages (docs/fsdp.md#verification): an export and its mutations on 2 x 2 ranks.
"$py" tests/torch/fsdp.py "$SC" --sample | sed 's/^fsdp: /corpus: /' | tee -a "$out"
grep -E '^corpus: [0-9]+ passed' "$out" | awk '{p += $2; f += $4} END {
  printf "corpus: %d passed, %d failed (all runs)\n", p, f; exit (f > 0) }'
