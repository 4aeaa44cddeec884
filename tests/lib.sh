# lib.sh — the harness the shell tests share. Sourced from the repository
# root (`. tests/lib.sh`) after the test has made its scratch folder $tmp:
#   ok                      one check passed
#   bad TEXT...             one failed; TEXT on stderr after "FAIL: "
#   expect CODE SUBSTRING -- command...
#                           runs the command; passes when it exits with CODE
#                           and SUBSTRING is in its stdout or stderr (kept in
#                           $tmp/out and $tmp/err), else shows their start
#   have_mpi                mpirun runs $SC with the mpi transport (below)
# The counters are $pass and $fail; each test prints them at its end.
# full and sample (tests/tier.sh) choose what the check tier runs.
. tests/tier.sh # full, sample: the tiers of make check and make test
pass=${pass:-0}; fail=${fail:-0}
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*" >&2; }
expect() {
  code=$1; sub=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ "$rc" = "$code" ] && cat "$tmp/out" "$tmp/err" | grep -qF -- "$sub"; then ok
  else bad "$* (exit $rc, want $code; want '$sub')"; sed 's/^/  | /' "$tmp/out" "$tmp/err" | head -5 >&2; fi
}

# have_mpi: true when mpirun runs $SC with the mpi transport (mpirun found,
# the MPI module loads). Probed once per suite; tests/run.sh probes once for
# all the suites and exports SC_MPI=yes when it works (a "no" is not passed
# on: each suite then tries for itself, with its own environment).
have_mpi() {
  if [ -z "${SC_MPI:-}" ]; then
    SC_MPI=no
    command -v mpirun >/dev/null &&
      timeout 60 mpirun -np 1 $SC run 1f1b -D p=1 -D m=1 --json 2>/dev/null | grep -q '"transport": "mpi"' &&
      SC_MPI=yes
  fi
  [ "$SC_MPI" = yes ]
}

# Results checked later, many in one python3 (each start costs more than
# most checks):
#   later [--with SCRIPT] FILE LABEL [OPTION...]
#                           keeps a copy of FILE for SCRIPT (default
#                           tests/py/runjson.py: a `run --check --json` result's
#                           loss, gradients and peaks; tests/py/check_torch_csv.py
#                           takes DIALECT VERSION), with OPTIONS
#   pycheck LABEL SCRIPT ARGS...
#                           queues `python3 -c SCRIPT ARGS` (below)
#   verdicts                runs each SCRIPT once (--batch) over its files:
#                           ok, or bad "LABEL: why"; a suite calls it before
#                           it prints its counters
later() {
  _lw=tests/py/runjson.py
  [ "$1" = --with ] && { _lw=$2; shift 2; }
  _later=$(( ${_later:-0} + 1 )); mkdir -p "$tmp/later"
  _lf=$tmp/later/$_later; case ${1##*/} in *.*) _lf=$_lf.${1##*.} ;; esac
  cp "$1" "$_lf" || { bad "$2: no file to check"; return; }
  _ll=$2; shift 2
  printf '%s\t%s\t%s\n' "$_lf" "$_ll" "$*" >>"$tmp/later/$(basename "$_lw" .py).list"
}
# pycheck LABEL SCRIPT ARGS...: a check `python3 -c SCRIPT ARGS`, queued for
# verdicts (tests/py/pycheck.py runs them all in one python3): the files of
# $tmp among ARGS copied now, as they are (a suite writes over them); on
# failure LABEL and the exception's last line. ARGS hold no spaces.
pycheck() {
  _pl=$1; _pn=$(( ${_pn:-0} + 1 )); mkdir -p "$tmp/py"
  printf '%s\n' "$2" >"$tmp/py/$_pn.py"; shift 2
  _pa=""
  for _a; do
    case $_a in "$tmp"/*) [ -f "$_a" ] && cp "$_a" "$tmp/py/$_pn.${_a##*/}" && _a=$tmp/py/$_pn.${_a##*/} ;; esac
    _pa="$_pa $_a"
  done
  # shellcheck disable=SC2086
  later --with tests/py/pycheck.py "$tmp/py/$_pn.py" "$_pl" $_pa
}
verdicts() {
  for _list in "$tmp"/later/*.list; do
    [ -f "$_list" ] || continue
    python3 "tests/py/$(basename "$_list" .list).py" --batch "$_list" >"$tmp/later/out" 2>&1
    _seen=0
    while IFS= read -r _v; do
      _seen=$((_seen+1))
      case $_v in "ok "*) ok ;; *) bad "${_v#FAIL }" ;; esac
    done <"$tmp/later/out"
    [ "$_seen" = "$(wc -l <"$_list")" ] ||
      bad "$(basename "$_list" .list).py checked $_seen of $(wc -l <"$_list"): $(tail -3 "$tmp/later/out")"
  done
  rm -rf "$tmp/later"; _later=0
}
