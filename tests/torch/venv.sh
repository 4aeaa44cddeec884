# venv.sh — sourced by the real-PyTorch suites (run.sh, corpus.sh,
# trace.sh): the venv of a PyTorch version, installed from PyPI once per
# machine under a lock (the suites run side by side: whichever asks first
# installs, the others wait for it). Needs VENVS, tmp and tests/tier.sh's
# full. Under SC_TIER=check (SC_TORCH=run make check; make check itself
# skips these suites) it installs nothing: a version not installed yet is a
# skip (with the reason); make test installs it.
NUMPY=2.4.6 # torch's pipelining sends its metadata through numpy (not a dependency of the wheel)

venv_for() { # version -> prints the venv's python (torch, numpy), or nothing (reason on stderr)
  v=$1; d=$VENVS/$v
  if ! full && ! [ -x "$d/bin/python" ]; then
    echo "not installed in $d; make check does not install it (make test does)" >&2; return
  fi
  mkdir -p "$VENVS"
  exec 8>"$VENVS/.lock-$v"; flock 8   # one install per machine; others wait for it
  if [ "$("$d/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" != "$v" ]; then
    rm -rf "$d"
    python3 -m venv "$d" 2>"$tmp/venv.err" ||
      { echo "python3 -m venv failed: $(tail -1 "$tmp/venv.err")" >&2; exec 8>&-; return; }
    echo "torch: installing torch==$v from PyPI into $d (once; about 3 to 10 minutes)" >&2
    if ! timeout 1500 "$d/bin/python" -m pip install -q "torch==$v" "numpy==$NUMPY" >"$tmp/pip.log" 2>&1; then
      echo "pip install torch==$v failed: $(grep -v '^ ' "$tmp/pip.log" | tail -1)" >&2
      rm -rf "$d"; exec 8>&-; return
    fi
  elif ! "$d/bin/python" -c 'import numpy' 2>/dev/null &&
       ! "$d/bin/python" -m pip install -q "numpy==$NUMPY" >"$tmp/pip.log" 2>&1; then
    echo "pip install numpy==$NUMPY failed: $(grep -v '^ ' "$tmp/pip.log" | tail -1)" >&2
    exec 8>&-; return
  fi
  exec 8>&-
  echo "$d/bin/python"
}
