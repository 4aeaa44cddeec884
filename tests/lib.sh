# lib.sh — the harness the shell tests share. Sourced from the repository
# root (`. tests/lib.sh`) after the test has made its scratch folder $tmp:
#   ok                      one check passed
#   bad TEXT...             one failed; TEXT on stderr after "FAIL: "
#   expect CODE SUBSTRING -- command...
#                           runs the command; passes when it exits with CODE
#                           and SUBSTRING is in its stdout or stderr (kept in
#                           $tmp/out and $tmp/err), else shows their start
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
