#!/bin/sh
# steps.sh — training steps back to back (docs/steps.md): -D steps and
# optim_sync for every recipe, per-step simulation figures, pictures with
# the step boundary, and `run` training several steps with AdamW, checked
# against the single-device reference trained for the same steps (threads
# and MPI ranks). Run from the repository root: sh tests/steps.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_disable_dlclose=1
# use_tls=0: LeakSanitizer's tracer crashes reading the dynamic TLS of the
# dlopen'ed OpenBLAS in MPI ranks at exit ("Tracer caught signal 11").
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan_mpi.supp:print_suppressions=0:fast_unwind_on_malloc=0:use_tls=0"
MPIRUN="mpirun -np 4 --oversubscribe"

. tests/lib.sh # ok, bad, expect


# 1. The keys: every recipe takes steps and optim_sync; typos are errors.
expect 0 "ok: zb-h1: 4 devices" -- $SC check zb-h1 -D steps=3
expect 0 "steps         3 (optim_sync none)" -- $SC sim zb-h2 -D steps=3
expect 0 "1        24          51          0.0000%" -- $SC sim zb-h2 -D steps=3   # docs/steps.md#simulation
expect 2 "parameter 'steps': expected a number, got 'x'" -- $SC sim 1f1b -D steps=x
expect 2 "parameter 'steps': expected an integer, got '2.5'" -- $SC sim 1f1b -D steps=2.5
expect 3 "steps = 0 is out of range" -- $SC sim 1f1b -D steps=0
expect 3 "unknown optim_sync 'bogus' (none, sync, post-validation)" -- $SC sim 1f1b -D optim_sync=bogus
expect 3 "a PyTorch schedule holds one training step" -- $SC export 1f1b -D steps=2 --format torch-csv
expect 0 "(end of step 1)" -- $SC show 1f1b -D p=2 -D m=2 -D steps=2 --dump
expect 0 "2 steps (optim_sync none)" -- $SC show 1f1b -D p=2 -D m=2 -D steps=2 --dump
# The field of sc.program, and a recipe that declares steps itself.
cat >"$tmp/two.lua" <<'LUA'
local P = sc.params { {"steps", 2, "training steps"} }
local prog = sc.program { p = 2, m = 4, rule = "zb-h1", steps = P.steps }
assert(prog.steps == P.steps and prog.optim_sync == "none")
return prog
LUA
expect 0 '"steps": 2' -- $SC sim "$tmp/two.lua" --json
expect 0 '"steps": 5' -- $SC sim "$tmp/two.lua" -D steps=5 --json
printf '%s\n' 'return sc.program { p = 2, m = 2, rule = "1f1b", steps = "many" }' >"$tmp/badsteps.lua"
expect 3 "program: 'steps' must be an integer (got 'many')" -- $SC check "$tmp/badsteps.lua"
printf '%s\n' 'return sc.program { p = 2, m = 2, rule = "1f1b", optim_sync = 3 }' >"$tmp/badsync.lua"
expect 3 "program: 'optim_sync' must be a string" -- $SC check "$tmp/badsync.lua"

# Offload on a shared link plans step 0's copies; later steps take their
# microbatch's planned duration (a step's copies never index past the plan).
expect 0 '"step_makespan": [28, 28, 28, 28, 28, 28]' -- $SC sim gis -D p=4 -D m=8 -D offload=all -D steps=6 --json

# 2. Per-step figures: with no synchronization, each device starts its next
# step when it ends its last: four steps keep one step's bubble (ZB-H2's and
# ZB-V's parallelograms, and 1F1B's trapezoid, tile), and every step alone
# has the bubble of one.
for r in zb-h2 zb-v 1f1b; do
  $SC sim $r -D p=8 -D m=32 --json >"$tmp/one.json" 2>"$tmp/err" &&
  $SC sim $r -D p=8 -D m=32 -D steps=4 --json >"$tmp/four.json" 2>>"$tmp/err" &&
  python3 - "$tmp/one.json" "$tmp/four.json" "$r" <<'PY' && ok || { bad "sim $r steps=4"; cat "$tmp/err" >&2; }
import json, sys
one, four, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert four["steps"] == 4 and four["optim_sync"] == "none", four
assert len(four["step_makespan"]) == 4 and len(four["step_bubble_rate"]) == 4
assert all(abs(b - one["bubble_rate"]) < 1e-12 for b in four["step_bubble_rate"]), four
assert abs(sum(four["step_makespan"]) - four["makespan"]) < 1e-9, four
assert four["bubble_rate"] <= one["bubble_rate"] + 1e-12, (one, four)
PY
done

# 3. Pictures: a tick where each device ends a step, a line where the last
# does; trace instants at the same places.
if $SC show zb-h2 -D p=4 -D m=8 -D steps=3 --svg "$tmp/s.svg" --trace "$tmp/s.json" 2>"$tmp/err" &&
   xmllint --noout "$tmp/s.svg" && [ "$(grep -c 'class="step"' "$tmp/s.svg")" = 12 ] &&
   [ "$(grep -c 'class="step-end"' "$tmp/s.svg")" = 3 ] &&
   python3 - "$tmp/s.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
ends = [e for e in ev if e.get("cat") == "step" and e["ph"] == "i"]
assert len([e for e in ends if e["s"] == "t"]) == 12, ends
assert len([e for e in ends if e["s"] == "p"]) == 3, ends
PY
then ok; else bad "show --svg/--trace with steps"; cat "$tmp/err" >&2; fi

# 4. run: N steps of AdamW against the reference trained for N steps:
# losses of every step, the last step's gradients and the parameters
# bitwise (W in microbatch order, the same float operations). (Queued, as
# sync_ok's below: lib.sh's pycheck, one python3 for all at the end.)
steps_ok() { # file steps
  pycheck "steps_ok $(( ${_ck:-0} + 1 )) (steps=$2)" 'import json, sys
j, n = json.load(open(sys.argv[1])), int(sys.argv[2])
assert j["bitwise"] is True, j
if n > 1:
    assert j["steps"] == n and len(j["step_loss"]) == n, j
    assert j["step_loss"] == j["reference_step_loss"], j
    assert j["max_param_rel_err"] == 0, j
    assert all(a > b for a, b in zip(j["step_loss"], j["step_loss"][1:])), j["step_loss"]
    assert len(j["step_times_s"]) == n and all(t > 0 for t in j["step_times_s"]), j
    assert len(j["simulated_step_makespan"]) == n, j
' "$1" "$2"; _ck=$(( ${_ck:-0} + 1 ))
}
for r in $(sample zb-h1 zb-v interleaved); do
  for n in $(full && echo 1 2) 5; do
    if $SC run $r -D p=4 -D m=8 -D steps=$n --check --json >"$tmp/j" 2>"$tmp/e" && steps_ok "$tmp/j" $n; then ok
    else bad "run $r steps=$n --check"; head -3 "$tmp/e" >&2; fi
  done
done
# The text: a progress line per step while it runs, then the table.
expect 0 "step 3/3: loss" -- $SC run zb-h1 -D steps=3
expect 0 "optimizer     AdamW lr 0.002, betas 0.8 0.99, eps 1e-06, weight decay 0" -- \
  $SC run zb-h1 -D steps=2 -D lr=0.002 -D beta1=0.8 -D beta2=0.99 -D eps=1e-6 -D weight_decay=0
$SC run zb-h1 -D steps=3 2>/dev/null | grep -q "^2 .*stepped" && ok || bad "run table"
# Optimizer settings: checked, and clipping or skipping need a synchronization.
expect 2 "optimizer setting 'lr': expected a number, got 'x'" -- $SC run 1f1b -D lr=x
expect 3 "optimizer: beta2 = 1 is out of range" -- $SC run 1f1b -D beta2=1
expect 3 "clipping (-D clip) needs -D optim_sync=sync or post-validation" -- $SC run 1f1b -D clip=1
expect 3 "skipping a step on inf (-D inf_step) needs -D optim_sync=sync" -- $SC run 1f1b -D inf_step=0
# A different learning rate changes the result: the check compares parameters.
a=$($SC run zb-h1 -D steps=2 --json 2>/dev/null | sed 's/.*"loss_hex": "\([^"]*\)".*/\1/')
b=$($SC run zb-h1 -D steps=2 -D lr=0.01 --json 2>/dev/null | sed 's/.*"loss_hex": "\([^"]*\)".*/\1/')
[ -n "$a" ] && [ "$a" != "$b" ] && ok || bad "lr does not change step 2's loss ('$a' vs '$b')"

# 5. Synchronized optimizer steps (docs/steps.md#optimizer-synchronization):
# the verifier proves sync and post-validation on every stdlib recipe (but
# dualpipe's and interleaved-zb's post-validation, refused); the
# simulator pins the figures of docs/steps.md#simulation and the rollback
# path's cost.
for r in $(sample $($SC list | awk '/^[a-z0-9]/ {print $1}')); do
  $SC check "$r" -D p=4 -D m=8 >/dev/null 2>&1 || continue
  for s in sync post-validation; do
    if [ "$r" = forward ]; then # forward-only: no optimizer step (docs/guide.md#forward-only)
      expect 3 "a forward-only program" -- $SC check "$r" -D p=4 -D m=8 -D steps=3 -D optim_sync=$s
      continue
    fi
    if [ "$r $s" = "dualpipe post-validation" ] || [ "$r $s" = "interleaved-zb post-validation" ]; then
      # dualpipe: copies of the model (docs/guide.md#copies); interleaved-zb: its
      # rollback path can deadlock (docs/recipes.md): refused
      expect 3 "go with optim_sync = post-validation yet" -- $SC check "$r" -D p=4 -D m=8 -D steps=3 -D optim_sync=$s
      continue
    fi
    if $SC check "$r" -D p=4 -D m=8 -D steps=3 -D optim_sync=$s -D tcomm=0.2 >/dev/null 2>"$tmp/err"; then ok
    else bad "check $r optim_sync=$s"; head -2 "$tmp/err" >&2; fi
  done
done
for r in zb-h2 zb-v; do
  for s in none sync post-validation; do
    $SC sim $r -D p=8 -D m=32 -D steps=4 -D optim_sync=$s --json >"$tmp/$r-$s.json" 2>"$tmp/err" || bad "sim $r $s"
  done
  python3 - "$tmp" "$r" <<'PY' && ok || bad "pinned figures of $r"
import json, sys
d, r = sys.argv[1], sys.argv[2]
j = {s: json.load(open(f"{d}/{r}-{s}.json")) for s in ("none", "sync", "post-validation")}
pv, sync = j["post-validation"], j["sync"]
assert pv["bubble_rate"] <= 0.005 and j["none"]["bubble_rate"] <= 0.005, pv  # one step: 0
assert sync["bubble_rate"] > pv["bubble_rate"] + 0.02, (sync, pv)
barrier = (sync["makespan"] - pv["makespan"]) / 3  # each step but the first waits
assert abs(barrier - (7 if r == "zb-h2" else 3.5)) < 1e-9, barrier  # (p-1) tf, or half
assert len(pv["rollback_cost"]) == 4 and pv["rollback_cost"][3] == 0, pv
assert all(c > 0 for c in pv["rollback_cost"][:3]), pv
assert "rollback_cost" not in sync
PY
done
expect 0 "(rollback path)" -- $SC show zb-h2 -D p=2 -D m=3 -D steps=2 -D optim_sync=post-validation --dump
expect 0 "VALIDATE  (of step 1)" -- $SC show zb-h2 -D p=2 -D m=3 -D steps=2 -D optim_sync=post-validation --dump
if $SC export zb-v -D steps=2 -D optim_sync=post-validation --format trace -o "$tmp/pv.json" &&
   $SC export zb-v -D steps=2 -D optim_sync=post-validation --format json -o "$tmp/pvd.json" &&
   python3 tests/py/check_trace.py "$tmp/pv.json" "$tmp/pvd.json" >/dev/null; then ok
else bad "trace of post-validation"; fi

# 6. run with sync and post-validation: clipping, a skip on inf, the
# rollback path, all against the reference (bitwise here: the same float
# operations, and the state's sums happen to round alike).
sync_ok() { # file steps mode what
  pycheck "sync_ok $(( ${_ck:-0} + 1 )) (steps=$2 $3 $4)" 'import json, sys
j, n, mode, what = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3], sys.argv[4]
assert j["optim_sync"] == mode and j["steps"] == n, j
assert j["step_loss"] == j["reference_step_loss"], j
assert j["max_param_rel_err"] <= 1e-5 and j["max_grad_rel_err"] <= 1e-5, j
if what == "clip":
    assert any(c < 1 for c in j["step_clip_coef"]), j["step_clip_coef"]
if what == "inf":
    assert j["step_skipped"][min(1, n - 1)] and sum(j["step_skipped"]) == 1, j["step_skipped"]
if mode == "post-validation" and what != "plain" and n > 1:
    assert sum(j["step_rollbacks"]) > 0, j["step_rollbacks"]
if what == "plain":
    assert not any(j["step_skipped"]) and all(c == 1 for c in j["step_clip_coef"]), j
' "$@"; _ck=$(( ${_ck:-0} + 1 ))
}
# (make check: one of plain, clip and inf per recipe and mode, in turn:
# each mode meets all three.)
k=0
for s in sync post-validation; do
  for r in zb-h2 $(sample zb-v interleaved); do
    k=$((k+1))
    for n in $(full && echo 1) 3 $(full && echo 5); do
      i=0
      for what in plain clip inf; do
        i=$((i+1)); full || [ $(( (k + i) % 3 )) = 0 ] || continue
        case $what in plain) a="" ;; clip) a="-D clip=0.9" ;; inf) a="-D inf_step=$((n > 1 ? 1 : 0)) -D inf_device=2" ;; esac
        # shellcheck disable=SC2086
        if $SC run $r -D p=4 -D m=8 -D steps=$n -D optim_sync=$s $a --check --json >"$tmp/j" 2>"$tmp/e" &&
           sync_ok "$tmp/j" $n $s $what; then ok
        else bad "run $r steps=$n optim_sync=$s $what --check"; head -3 "$tmp/e" >&2; fi
      done
    done
  done
done
expect 0 "3 rolled back" -- $SC run zb-h2 -D steps=2 -D optim_sync=post-validation -D clip=0.9
expect 0 "skipped (inf/NaN)" -- $SC run zb-h2 -D steps=2 -D optim_sync=sync -D inf_step=1 -D inf_device=3
expect 3 "inf_step = 5, inf_device = 0: the program has steps 0..1" -- $SC run 1f1b -D steps=2 -D optim_sync=sync -D inf_step=5

# 7. MPI ranks: the same bits as threads, step by step.
if have_mpi; then
  for s in $(full && echo sync) post-validation; do
    for a in "-D clip=0.9" "-D inf_step=3 -D inf_device=2"; do
      full || [ "$a" = "-D clip=0.9" ] || continue
      # shellcheck disable=SC2086
      $SC run zb-h2 -D steps=5 -D optim_sync=$s $a --check --json >"$tmp/t.json" 2>"$tmp/e"
      # shellcheck disable=SC2086
      if timeout 120 $MPIRUN $SC run zb-h2 -D steps=5 -D optim_sync=$s $a --check --json >"$tmp/m.json" 2>>"$tmp/e"; then
        pycheck "mpirun zb-h2 optim_sync=$s $a" 'import json, sys
t, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert m["transport"] == "mpi" and t["step_loss"] == m["step_loss"], (t, m)
assert t["step_grad_norm"] == m["step_grad_norm"], (t, m)
assert m["step_loss"] == m["reference_step_loss"] and m["max_param_rel_err"] <= 1e-5, m
assert t["step_rollbacks"] == m["step_rollbacks"] and t["step_skipped"] == m["step_skipped"], (t, m)
assert m["steps"] == 5 and (sum(m["step_skipped"]) == 1 and m["step_skipped"][3]
                            or any(c < 1 for c in m["step_clip_coef"])), m' "$tmp/t.json" "$tmp/m.json"
      else bad "mpirun zb-h2 optim_sync=$s $a"; head -5 "$tmp/e" >&2; fi
    done
  done
  # (make check: zb-h2's above, its step losses and gradient norms; the
  # plain steps of a loop placement and a V under mpirun, make test)
  for r in $(full && echo zb-h1 zb-v); do
    $SC run $r -D steps=3 --check --json >"$tmp/t.json" 2>"$tmp/e"
    if timeout 120 $MPIRUN $SC run $r -D steps=3 --check --json >"$tmp/m.json" 2>>"$tmp/e" &&
       steps_ok "$tmp/m.json" 3 && python3 - "$tmp/t.json" "$tmp/m.json" <<'PY'
import json, sys
t, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert m["transport"] == "mpi" and t["step_loss"] == m["step_loss"], (t, m)
assert t["step_grad_norm"] == m["step_grad_norm"], (t, m)
PY
    then ok; else bad "mpirun $r steps=3"; head -5 "$tmp/e" >&2; fi
  done
else
  echo "steps: mpirun missing or stagecraft built without MPI: MPI tests skipped"
fi

verdicts
echo "steps: $pass passed, $fail failed"
[ "$fail" = 0 ]
