#!/bin/sh
# run.sh — stagecraft against real PyTorch (SPEC.md §15.3, §15.5). For each
# pinned version (TORCH_VERSIONS) a virtual environment under TORCH_VENVS
# (default build/torch, kept between runs: installed once) gets torch from
# PyPI and the package of python/. Then, on CPU with gloo over loopback, 2
# and 4 processes: every stdlib recipe that fits trains one step through its
# compute_comms export loaded by Program.torch_schedule, and through the
# compute_only export the way torchtitan loads it; loss and gradients equal a
# non-pipelined reference within 1e-5 (tests/torch/train.py). PyTorch's own
# schedules are dumped (tests/torch/dump.py) and must import into stagecraft
# and match tests/torch/fixtures. Every launch is bounded by a timeout.
# Where torch cannot be installed (no PyPI), each version is skipped with the
# reason. Prints "torch: N passed, N failed[, N skipped]".
SC=${SC:-build/stagecraft}
case $SC in /*) ;; *) SC=$PWD/$SC ;; esac
VERSIONS=${TORCH_VERSIONS:-"2.15.0 2.14.1"}
VENVS=${TORCH_VENVS:-build/torch}
LIMIT=${TORCH_TIMEOUT:-900}
pass=0; fail=0; skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
say() { echo "torch: $*"; }

# Recipes that fit PyTorch's model (each stage a module; any placement),
# with the parameters for p = 2 and p = 4 (m at least what the recipe needs).
RECIPES="gpipe,1f1b,interleaved,zb-h1,zb-h2,zb-v,v-zb,v-half,v-min,1f1b-v,zb-auto,zbv-auto,gis:v=2"

venv_for() { # version -> prints the venv's python, or nothing (reason on stderr)
  v=$1; d=$VENVS/$v
  if [ -x "$d/bin/python" ] &&
     [ "$("$d/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" = "$v" ]; then
    "$d/bin/pip" install -q --no-deps --force-reinstall ./python >/dev/null 2>&1 ||
      { echo "pip install ./python failed" >&2; return; }
    echo "$d/bin/python"; return
  fi
  rm -rf "$d"; mkdir -p "$VENVS"
  python3 -m venv "$d" 2>"$tmp/venv.err" || { echo "python3 -m venv failed: $(tail -1 "$tmp/venv.err")" >&2; return; }
  say "installing torch==$v from PyPI into $d (once; about 3 to 10 minutes)" >&2
  if ! timeout 1500 "$d/bin/pip" install -q "torch==$v" >"$tmp/pip.log" 2>&1; then
    echo "pip install torch==$v failed: $(grep -v '^ ' "$tmp/pip.log" | tail -1)" >&2; rm -rf "$d"; return
  fi
  "$d/bin/pip" install -q ./python >/dev/null 2>&1 || { echo "pip install ./python failed" >&2; return; }
  echo "$d/bin/python"
}

launch() { # python world -> runs train.py on `world` ranks, counts its summary
  py=$1; world=$2; port=$((29500 + $$ % 1000 + world))
  pids=""
  for r in $(seq 0 $((world - 1))); do
    STAGECRAFT=$SC timeout "$LIMIT" "$py" tests/torch/train.py "$r" "$world" "$port" "$RECIPES" \
      >"$tmp/rank$r.log" 2>&1 &
    pids="$pids $!"
  done
  rc=0; for p in $pids; do wait "$p" || rc=$?; done
  cat "$tmp/rank0.log"
  line=$(grep -E '^torch p[0-9]+: [0-9]+ passed, [0-9]+ failed' "$tmp/rank0.log" | tail -1)
  if [ -z "$line" ] || [ $rc != 0 ]; then
    fail=$((fail+1)); say "FAIL: $world ranks exited $rc (124: timeout after $LIMIT s)"
    for r in $(seq 1 $((world - 1))); do tail -3 "$tmp/rank$r.log"; done
    return
  fi
  p=$(echo "$line" | awk '{print $3}'); f=$(echo "$line" | awk '{print $5}')
  pass=$((pass+p)); fail=$((fail+f))
}

for v in $VERSIONS; do
  py=$(venv_for "$v" 2>"$tmp/why")
  if [ -z "$py" ]; then
    skip=$((skip+1)); say "SKIP PyTorch $v: $(tail -1 "$tmp/why")"; continue
  fi
  say "PyTorch $("$py" -c 'import torch; print(torch.__version__)') in $VENVS/$v"
  launch "$py" 2
  launch "$py" 4
  # The README's example: five steps of examples/torch/train_mlp.py, 2 ranks.
  if STAGECRAFT=$SC timeout "$LIMIT" "$(dirname "$py")/torchrun" --nproc-per-node 2 \
       --master-port $((29400 + $$ % 100)) examples/torch/train_mlp.py zb-v >"$tmp/ex.log" 2>&1 &&
     grep -q '^step 4: loss' "$tmp/ex.log"; then pass=$((pass+1))
  else fail=$((fail+1)); say "FAIL: examples/torch/train_mlp.py: $(grep -v Warning "$tmp/ex.log" | tail -2)"; fi
  # PyTorch's own schedules: dumped now, imported, and equal to the fixtures.
  rm -rf "$tmp/dump"
  if timeout "$LIMIT" "$py" tests/torch/dump.py "$tmp/dump" >"$tmp/dump.log" 2>&1; then pass=$((pass+1))
  else fail=$((fail+1)); say "FAIL: dump.py: $(tail -1 "$tmp/dump.log")"; fi
  for f in "$tmp"/dump/*.csv; do
    [ -f "$f" ] || continue
    if "$SC" import "$f" >/dev/null 2>"$tmp/err"; then pass=$((pass+1))
    else fail=$((fail+1)); say "FAIL: import $(basename "$f"): $(cat "$tmp/err")"; fi
    if cmp -s "$f" "tests/torch/fixtures/$v/$(basename "$f")"; then pass=$((pass+1))
    else fail=$((fail+1)); say "FAIL: $(basename "$f") differs from tests/torch/fixtures/$v"; fi
  done
done
echo "torch: $pass passed, $fail failed$([ $skip = 0 ] || echo ", $skip skipped")"
[ $fail = 0 ]
