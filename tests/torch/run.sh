#!/bin/sh
# run.sh — stagecraft against real PyTorch
# (docs/interchange.md#pytorch-pipelining-csv, docs/interchange.md#python). For
# each pinned version (TORCH_VERSIONS) a virtual environment under TORCH_VENVS
# (default ~/.cache/stagecraft/torch, kept between runs: installed once) gets
# torch from PyPI; the package of python/ runs from the source tree with this
# build's binary (no second build). Then, on CPU with gloo over loopback, 2 and 4
# processes: every stdlib recipe that fits trains one step through its
# compute_comms export loaded by Program.torch_schedule, and through the
# compute_only export the way torchtitan loads it; loss and gradients equal a
# non-pipelined reference within 1e-5 (tests/torch/train.py). PyTorch's own
# schedules are dumped (tests/torch/dump.py) and must import into stagecraft
# and match tests/torch/fixtures. Every launch is bounded by a timeout. Where
# torch cannot be installed (no PyPI), each version is skipped with the reason.
# Prints "torch: N passed, N failed[, N skipped]".
#
# The virtual environments are shared by every checkout on the machine
# (TORCH_VENVS, default ~/.cache/stagecraft/torch; installs take a lock), and
# so is a record of passing runs: a version whose inputs (the exports and
# figures of every case below, computed now by this build, the package in
# python/ and these scripts) equal those of a run that passed is not trained
# again; the line says so, with the key. A fresh machine (CI) always runs.
# One version trains at a time on the machine (a lock): concurrent test runs
# wait, then reuse the record when their inputs are equal.
SC=${SC:-build/stagecraft}
case $SC in /*) ;; *) SC=$PWD/$SC ;; esac
VERSIONS=${TORCH_VERSIONS:-"2.15.0 2.14.1"}
VENVS=${TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/stagecraft/torch}
LIMIT=${TORCH_TIMEOUT:-900}
pass=0; fail=0; skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
say() { echo "torch: $*"; }

# Recipes that fit PyTorch's model (each stage a module; any placement),
# with the parameters for p = 2 and p = 4 (m at least what the recipe needs).
RECIPES="gpipe,1f1b,interleaved,zb-h1,zb-h2,zb-v,v-zb,v-half,v-min,1f1b-v,zb-auto,zbv-auto,gis:v=2,dualpipev:m=8,dualpipev:m=12;tfb=1.5"
# make check skips this suite (tests/run.sh); with SC_TORCH=run it runs a
# sample (SC_TIER=check, tests/tier.sh): the newest version, 2 ranks, the
# sample recipes, and only where that version is installed already (make
# test installs it; an install takes minutes).
. tests/tier.sh
WORLDS="2 4"
if ! full; then
  VERSIONS=${VERSIONS%% *}; WORLDS=2
  RECIPES=$(sample $(echo "$RECIPES" | tr ',' ' ') | tr '\n' ',' | sed 's/,$//')
fi

. tests/torch/venv.sh # venv_for

free_port() { # a TCP port nobody listens on now (gloo's rendezvous)
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The inputs of one version's run: what this build exports and reports for
# every case (both dialects, compute_only, the JSON dump, the figures), the
# package and these scripts. Equal inputs give equal results.
inputs_key() { # version
  {
    echo "$1"
    cat tests/torch/*.py tests/torch/run.sh examples/torch/*.py 2>/dev/null
    find python -type f -name '*.py' | sort | xargs cat
    for w in $WORLDS; do
      for spec in $(echo "$RECIPES" | tr ',' ' '); do
        name=${spec%%:*}; extra=""
        [ "$name" != "$spec" ] && extra=$(echo "${spec#*:}" | tr ';' '\n' | sed 's/^/-D /' | tr '\n' ' ')
        for f in torch-csv torch-csv-comms json; do
          # shellcheck disable=SC2086
          "$SC" export "$name" -D p=$w $extra --time-limit 0 --format $f 2>&1
        done
        # shellcheck disable=SC2086
        "$SC" export "$name" -D p=$w $extra --time-limit 0 --format torch-csv-comms --torch 2.14 2>&1
        # shellcheck disable=SC2086
        "$SC" sim "$name" -D p=$w $extra --time-limit 0 --json 2>&1
      done
    done
  } | sha256sum | cut -c1-16
}

launch() { # python world -> runs train.py on `world` ranks, counts its summary
  py=$1; world=$2; port=$(free_port)
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

# The package from the source tree (python/), its binary this build's
# ($STAGECRAFT, which every launch sets): the C core is not compiled again.
# pip install ./python, the package as a user installs it with its own
# binary, is tests/py/test_wheel.py's (make test).
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
for v in $VERSIONS; do
  py=$(venv_for "$v" 2>"$tmp/why")
  if [ -z "$py" ]; then
    skip=$((skip+1)); say "SKIP PyTorch $v: $(tail -1 "$tmp/why")"; continue
  fi
  key=$(inputs_key "$v"); rec="$VENVS/passed/$v-$key"
  # One training run at a time on the machine (each is 2 to 4 processes of
  # torch): a run that waited finds the record of the one before it when
  # their inputs are equal.
  exec 9>"$VENVS/.run-lock"; flock 9
  if [ -f "$rec" ]; then
    n=$(cat "$rec"); pass=$((pass+n))
    say "PyTorch $v: inputs equal those of a run that passed ($rec): its $n checks stand"
    exec 9>&-; continue
  fi
  pass0=$pass; fail0=$fail
  say "PyTorch $("$py" -c 'import torch; print(torch.__version__)') in $VENVS/$v"
  for w in $WORLDS; do launch "$py" $w; done
  if ! full; then :
  # The README's example: five steps of examples/torch/train_mlp.py, 2 ranks.
  elif STAGECRAFT=$SC timeout "$LIMIT" "$py" -m torch.distributed.run --nproc-per-node 2 \
       --master-port "$(free_port)" examples/torch/train_mlp.py zb-v >"$tmp/ex.log" 2>&1 &&
     grep -q '^step 4: loss' "$tmp/ex.log"; then pass=$((pass+1))
  else fail=$((fail+1)); say "FAIL: examples/torch/train_mlp.py: $(grep -v Warning "$tmp/ex.log" | tail -2)"; fi
  # PyTorch's own schedules: dumped now, imported, and equal to the fixtures.
  rm -rf "$tmp/dump"
  if ! full; then :
  elif timeout "$LIMIT" "$py" tests/torch/dump.py "$tmp/dump" >"$tmp/dump.log" 2>&1; then pass=$((pass+1))
  else fail=$((fail+1)); say "FAIL: dump.py: $(tail -1 "$tmp/dump.log")"; fi
  for f in "$tmp"/dump/*.csv; do
    [ -f "$f" ] || continue
    if "$SC" import "$f" >/dev/null 2>"$tmp/err"; then pass=$((pass+1))
    else fail=$((fail+1)); say "FAIL: import $(basename "$f"): $(cat "$tmp/err")"; fi
    if cmp -s "$f" "tests/torch/fixtures/$v/$(basename "$f")"; then pass=$((pass+1))
    else fail=$((fail+1)); say "FAIL: $(basename "$f") differs from tests/torch/fixtures/$v"; fi
  done
  if [ $fail = $fail0 ]; then mkdir -p "$VENVS/passed"; echo $((pass - pass0)) >"$rec"; fi
  exec 9>&-
done
echo "torch: $pass passed, $fail failed$([ $skip = 0 ] || echo ", $skip skipped")"
[ $fail = 0 ]
