#!/bin/sh
# cli.sh — the command line contract (docs/cli.md): outputs, JSON, exit codes,
# one-line errors. Run from the repository root: sh tests/cli.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# expect CODE SUBSTRING -- command...   (SUBSTRING searched in stdout+stderr)
expect() {
  code=$1; sub=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ "$rc" = "$code" ] && cat "$tmp/out" "$tmp/err" | grep -qF -- "$sub"; then
    pass=$((pass+1))
  else
    fail=$((fail+1)); echo "FAIL: $* (exit $rc, want $code; want '$sub')" >&2
    sed 's/^/  | /' "$tmp/out" "$tmp/err" | head -5 >&2
  fi
}
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*" >&2; }
# Errors are one line on stderr.
one_line_err() {
  "$@" >/dev/null 2>"$tmp/err"
  if [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q '^stagecraft: error: ' "$tmp/err"; then pass=$((pass+1))
  else fail=$((fail+1)); echo "FAIL: not one error line: $*" >&2; cat "$tmp/err" >&2; fi
}

expect 0 "usage: stagecraft" -- $SC --help
# --help names every option that errors point to; --version says SC_VERSION.
expect 0 "--allow-write DIR" -- $SC --help
expect 0 "--force-costs" -- $SC --help
v=$(sed -n 's/^#define SC_VERSION "\(.*\)"/\1/p' lang/core/core.h)
[ -n "$v" ] && [ "$($SC --version)" = "stagecraft $v" ] && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: --version: $($SC --version 2>&1)" >&2; }
expect 0 "interleaved" -- $SC list
expect 0 "w_keep" -- $SC list 1f1b
expect 0 "microbatches per step" -- $SC list examples/mymodel/schedule.lua
for r in gpipe 1f1b interleaved zb-h1 zb-h2 examples/custom_order.lua examples/custom_block.lua examples/mymodel/schedule.lua; do
  expect 0 "ok: $r:" -- $SC check $r
done
expect 0 "bubble rate   27.2727%" -- $SC sim 1f1b
expect 0 "makespan      10" -- $SC sim 1f1b -D p=2 -D m=2 -D tcomm=0.5
expect 0 "d3  |...F" -- $SC show 1f1b --ascii
expect 0 "SEND act s1 mb0 -> d1" -- $SC show 1f1b --dump
expect 0 '"peak_memory_max": 5.5' -- $SC sim interleaved --json

# sim --json: one object with the contract's fields and the right values.
$SC sim zb-h1 -D p=4 -D m=8 --json >"$tmp/j.json"
if python3 - "$tmp/j.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
need = ["recipe", "devices", "stages", "microbatches", "instructions", "makespan",
        "bubble_rate", "peak_memory", "peak_memory_max"]
assert all(k in j for k in need), j
assert j["recipe"] == "zb-h1" and j["devices"] == 4 and j["microbatches"] == 8
assert abs(j["bubble_rate"] - 3 / 27) < 1e-12
assert j["peak_memory"] == [4, 4, 4, 4] and j["peak_memory_max"] == 4
PY
then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: sim --json contents" >&2; fi

# Errors: message, exit code, one line.
expect 2 "unknown parameter 'q' for recipe '1f1b'" -- $SC check 1f1b -D q=1
expect 2 "parameter 'm': expected a number, got 'x'" -- $SC sim 1f1b -D m=x
expect 2 "parameter 'm': expected a number, got '4,8' (a sweep of values, like 4,8 or 2:8:2, runs in sim and compare only)" -- $SC show 1f1b -D m=4,8
# show's views: one at a time (a terminal view or files), none silently dropped.
expect 2 "show: --ascii and --dump print to the terminal, --svg and --trace write files: give one kind" -- \
  $SC show 1f1b --ascii --svg "$tmp/views.svg"
[ -e "$tmp/views.svg" ] && bad "show --ascii --svg wrote the picture" || ok
# Two outputs in one file: the second would replace the first, so the
# command is refused before it runs (one line, exit 2), and nothing is written.
expect 2 "--trace and --profile name the same file '$tmp/same.json': give each output a file of its own" -- \
  $SC run 1f1b -D p=2 -D m=2 --trace "$tmp/same.json" --profile "$tmp/same.json"
one_line_err $SC run 1f1b -D p=2 -D m=2 --trace "$tmp/same.json" --profile "$tmp/./same.json"
mkdir -p "$tmp/sub"
expect 2 "--svg and --trace name the same file '$tmp/same.json'" -- $SC show 1f1b --svg "$tmp/sub/../same.json" --trace "$tmp/same.json"
expect 2 "--svg and --trace name the same file '-'" -- $SC show 1f1b --svg - --trace -
[ -e "$tmp/same.json" ] && bad "a refused command wrote $tmp/same.json" || ok
expect 2 "show: --ascii and --dump are two views: give one" -- $SC show 1f1b --dump --ascii
expect 0 "# stagecraft program" -- $SC show 1f1b --dump --dump
expect 2 "unknown recipe 'nope'" -- $SC check nope
expect 2 "missing RECIPE" -- $SC check
expect 2 "unknown option '--frobnicate'" -- $SC sim 1f1b --frobnicate
expect 2 "unknown option '--jsn' for 'sim'; did you mean '--json'?" -- $SC sim 1f1b --jsn
expect 2 "-D needs NAME=VALUE" -- $SC sim 1f1b -D m
expect 3 "interleaved needs m to be a multiple of p and m >= p (m = 6, p = 4)" -- $SC check interleaved -D m=6
expect 3 "devices p = 0 is out of range" -- $SC check 1f1b -D p=0
expect 3 "cost: times must be finite and >= 0" -- $SC check gpipe -D tf=-1
one_line_err $SC check interleaved -D m=6
one_line_err $SC check 1f1b -D q=1

cat >"$tmp/syntax.lua" <<'LUA'
local P = sc.params { {"p", 2, "devices"} }
return sc.program { p = P.p, m = 2 order = "F0" }
LUA
expect 8 "syntax.lua:2:" -- $SC check "$tmp/syntax.lua"
cat >"$tmp/runtime.lua" <<'LUA'
local x = nil
return x.field
LUA
expect 8 "runtime.lua:2: attempt to index a nil value" -- $SC check "$tmp/runtime.lua"
echo 'return 42' >"$tmp/noprog.lua"
expect 8 "did not return a program (it returned number)" -- $SC check "$tmp/noprog.lua"
cat >"$tmp/missing.lua" <<'LUA'
return sc.program { p = 2, m = 2,
  order = { "F0 F1 BW0 BW1", "F0 BW0 F1" } }
LUA
expect 5 "missing.lua:1: pass missing: B or BW of stage 1, microbatch 1" -- $SC check "$tmp/missing.lua"
cat >"$tmp/dup.lua" <<'LUA'
return sc.program { p = 2, m = 1, placement = {0, 1},
  order = function(d) return d == 0 and "F0 BW0 F0.0" or "F0 BW0" end }
LUA
expect 5 "pass twice: F s0 mb0" -- $SC check "$tmp/dup.lua"
cat >"$tmp/cycle.lua" <<'LUA'
return sc.program { p = 2, m = 2,
  order = { "F0 BW0 F1 BW1", "F1 F0 BW0 BW1" } }
LUA
expect 5 "dependency cycle across devices: d" -- $SC check "$tmp/cycle.lua"
one_line_err $SC check "$tmp/cycle.lua"
expect 5 "d1 #0 (F s1 mb1) needs F s0 mb1 from d0" -- $SC check "$tmp/cycle.lua"
# compare writes all or nothing: a row that fails (exit 5) writes no --svg
# of the rows that succeeded; an output that cannot be written stops compare
# and plan before any recipe runs or any search (exit 2, docs/errors.md).
expect 5 "not written: a row failed" -- $SC compare 1f1b "$tmp/cycle.lua" --svg "$tmp/cmp.svg"
[ ! -e "$tmp/cmp.svg" ] && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: compare wrote --svg with a failed row" >&2; }
expect 0 "" -- $SC compare 1f1b zb-h1 --svg "$tmp/cmp.svg"
[ -s "$tmp/cmp.svg" ] && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: compare --svg not written" >&2; }
expect 2 "cannot write '$tmp/none/x.svg'" -- $SC compare 1f1b "$tmp/cycle.lua" --svg "$tmp/none/x.svg"
[ ! -s "$tmp/out" ] && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: compare ran before checking --svg" >&2; }
expect 2 "cannot write '$tmp/none/x.svg'" -- $SC plan -D p=4 -D m=8 --svg "$tmp/none/x.svg"
[ ! -s "$tmp/out" ] && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: plan searched before checking --svg" >&2; }

# Exit codes belong to the error that ends the run, not to one caught before.
printf 'pcall(sc.program, {p = 0, m = 1, order = {}})\nerror("plain error")\n' >"$tmp/stale.lua"
expect 8 "stale.lua:2: plain error" -- $SC "$tmp/stale.lua"
expect 2 "cannot open $tmp/nofile.lua" -- $SC "$tmp/nofile.lua"
expect 7 "is too large (at most 50000000 passes)" -- $SC check gpipe -D p=4000 -D m=5000
expect 2 "expected an integer, got 2.5" -- sh -c "echo 'sc.load(\"1f1b\", {p = 2.5})' | $SC"
expect 2 "--width needs a number" -- $SC show 1f1b --width

# A script with arguments.
printf 'print(#arg, arg[1], sc.load("gpipe", {m = tonumber(arg[1])}):sim().peak_memory_max)\n' >"$tmp/s.lua"
expect 0 "1	7	7" -- $SC "$tmp/s.lua" 7
# Stdin as a script when not a TTY.
expect 0 "Program(4 devices" -- sh -c "echo 'print(sc.load(\"1f1b\"))' | $SC"

# The automatic scheduler: which schedule won, --time-limit, its errors.
expect 0 "ok: zb-auto:" -- $SC check zb-auto --time-limit 0
expect 0 "schedule      heuristic won" -- $SC sim zb-auto --time-limit 0
expect 0 '"auto": {"method": ' -- $SC sim zbv-auto -D p=2 -D m=4 --json --time-limit 0.1
expect 2 "--time-limit needs a number of seconds" -- $SC sim zb-auto --time-limit -1
expect 3 "below the 1 units one microbatch needs" -- $SC sim zb-auto -D mem=0.5

# Offload (docs/offload.md): the sim summary, --json fields, the host-link rows.
expect 0 "ok: gis:" -- $SC check gis
expect 0 "offload_chunks" -- $SC list gis
expect 0 "offload       all, ratio 0.1 (devices 2k, 2k+1 share a host link): 55 of 64 records moved" -- $SC sim gis -D offload=all -D offload_ratio=0.1
expect 0 "without       peak 3 units (max)" -- $SC sim gis -D offload=all -D offload_ratio=0.1
# full offload refused in one line above PipeOffload's bound (1; 1/2 shared), backed off within it
expect 5 "full offload needs ratio <= 0.5 on a link devices 2k, 2k+1 share" -- $SC sim gis -D p=8 -D m=32 -D offload=all -D link_shared=true -D offload_ratio=0.6
[ "$(wc -l <"$tmp/err")" = 1 ] && ok || bad "full offload's refusal is one line: $(cat "$tmp/err")"
expect 5 "full offload needs ratio <= 1 on a link of its own" -- $SC check 1f1b -D offload=all -D link_shared=false -D offload_ratio=1.5
expect 0 "413 of 512 records moved" -- $SC sim gis -D p=8 -D m=32 -D offload=all -D link_shared=true -D offload_ratio=0.4
expect 0 "320 of 512 records moved" -- $SC sim gis -D p=8 -D m=32 -D offload=all -D link_shared=true -D offload_ratio=0.5
expect 0 "  h |" -- $SC show gis -D offload=all
expect 0 "OFFLOAD s0 mb0 100%" -- $SC show gis -D offload=all --dump
$SC sim gis -D p=16 -D m=64 -D v=4 -D g=8 -D offload=selective -D offload_chunks=2 -D offload_ratio=0.05 --json >"$tmp/o.json"
$SC sim gis -D p=16 -D m=64 -D v=4 -D g=8 --json >"$tmp/o0.json"
if python3 - "$tmp/o.json" "$tmp/o0.json" <<'PY'
import json, sys
j, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
o = j["offload"]
assert "offload" not in b
for k in ("policy", "ratio", "shared_link", "records", "moved", "skipped", "backed_off", "chunks",
          "peak_memory_without", "peak_memory_without_max", "units_moved", "host_peak",
          "host_peak_max", "link_busy_d2h", "link_busy_h2d", "link_usage_d2h", "link_usage_h2d"):
    assert k in o, k
assert o["policy"] == "selective" and o["chunks"] == [2] * 16
assert o["peak_memory_without"] == b["peak_memory"] and o["peak_memory_without_max"] == 10
assert j["peak_memory_max"] < 0.5 * b["peak_memory_max"], j["peak_memory_max"]
assert j["bubble_rate"] == b["bubble_rate"] and j["makespan"] == b["makespan"]
assert len(o["link_usage_d2h"]) == 16 and all(len(u) == 20 for u in o["link_usage_d2h"])
assert all(0 <= x <= 1 + 1e-9 for u in o["link_usage_h2d"] for x in u)
assert abs(sum(o["link_usage_d2h"][0]) / 20 - o["link_busy_d2h"][0]) < 1e-9
for k in ("recipe", "devices", "stages", "microbatches", "instructions", "makespan", "bubble_rate",
          "peak_memory", "peak_memory_max", "busy"):
    assert k in j, k
PY
then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: sim --json offload fields" >&2; fi
$SC show gis -D offload=all --svg "$tmp/o.svg" && xmllint --noout "$tmp/o.svg" && grep -q "OFFLOAD s0 mb0" "$tmp/o.svg" &&
  pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: svg with host row" >&2; }
$SC show gis -D offload=all --trace "$tmp/o.trace" &&
  python3 -c "import json,sys; ev=json.load(open(sys.argv[1]))['traceEvents']; assert any(e.get('cat') == 'RELOAD' for e in ev); assert any(e.get('name') == 'thread_name' and e['args']['name'] == 'd0 host' for e in ev)" "$tmp/o.trace" &&
  pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: trace host thread" >&2; }
# The advice is sim's (docs/offload.md#the-host-link): what the example says
# of gis at this k is what sim gives for the command it prints.
expect 0 "3903 of 4096 records moved, 1 stayed (the link is busy)" -- $SC examples/can_offload.lua 16384 4096 440 21
expect 0 "full offload is not sustainable" -- $SC examples/can_offload.lua 16384 4096 440 21 shared
expect 0 "full offload is sustainable" -- $SC examples/can_offload.lua 65536 4096 440 21 shared 8 32 2
cmd=$(grep '^try: ' "$tmp/out" | sed 's/^try: stagecraft //')
# shellcheck disable=SC2086
$SC $cmd --json >"$tmp/adv.json" 2>&1 && python3 -c "import json,sys; o=json.load(open(sys.argv[1]))['offload']; assert o['backed_off'] == 0 and o['moved'] == 447, o" "$tmp/adv.json" && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: the advice's command: $(head -c 300 "$tmp/adv.json")" >&2; }
# PyTorch has no offload action: the comms export leaves the copies out.
$SC export gis -D offload=all --format torch-csv-comms >"$tmp/o.csv" && $SC export gis --format torch-csv-comms >"$tmp/o0.csv" &&
  cmp -s "$tmp/o.csv" "$tmp/o0.csv" && ! grep -q OFFLOAD "$tmp/o.csv" &&
  pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: torch-csv-comms without host copies" >&2; }

# Vocabulary parallelism (docs/vocab.md): sim --json gains the vocabulary
# placement, the collectives' time and, with a model, the bytes; dump,
# ASCII, SVG and trace show the passes and the collectives.
VP="-D p=4 -D m=8 -D layers=16 -D hidden=1024 -D seq=512 -D batch=1 -D vocab=64000"
if $SC sim 1f1b $VP -D vocab_par=vocab-1 --json >"$tmp/v.json" && python3 - "$tmp/v.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["vocab_par"] == "vocab-1" and j["time_unit"] == "s"
assert len(j["coll_busy"]) == 4 and j["collectives"] == 4 * 8 * 6
assert len(set(round(b, 12) for b in j["busy"])) == 1          # every device as busy
assert len(set(j["param_bytes"])) == 1 and j["param_bytes_max"] > 0
assert abs(j["peak_activation_bytes"][0] - j["peak_memory"][0] * j["unit_bytes"]) < 1
PY
then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: sim --json vocab-1 fields" >&2; fi
if $SC sim 1f1b $VP -D vocab_par=baseline --json >"$tmp/b.json" && python3 - "$tmp/b.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert "coll_busy" not in j and j["param_bytes"][3] > j["param_bytes"][1]
PY
then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: sim --json baseline fields" >&2; fi
expect 0 "ALLREDUCE max S mb0" -- $SC show 1f1b -D p=2 -D m=2 -D vocab_par=vocab-1 --dump
expect 0 "BCAST F s1 mb1 from d1" -- $SC show 1f1b -D p=2 -D m=2 -D vocab_par=vocab-1 --dump
expect 0 "ALLREDUCE sum T mb1" -- $SC show 1f1b -D p=2 -D m=2 -D vocab_par=vocab-2 --dump
expect 0 "  c |" -- $SC show 1f1b $VP -D vocab_par=vocab-1
expect 0 "S output layer, T its weight grad" -- $SC show v-half $VP -D vocab_par=vocab-2
expect 0 "collectives   192 instructions" -- $SC sim zb-h1 $VP -D vocab_par=vocab-1
$SC show 1f1b $VP -D vocab_par=vocab-1 --svg "$tmp/v.svg" && xmllint --noout "$tmp/v.svg" &&
  grep -q "ALLREDUCE sum S mb0 part 2" "$tmp/v.svg" && grep -q "S output" "$tmp/v.svg" &&
  pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: svg with collectives" >&2; }
$SC show 1f1b $VP -D vocab_par=vocab-1 --trace "$tmp/v.trace" &&
  python3 -c "import json,sys; ev=json.load(open(sys.argv[1]))['traceEvents']; assert any(e.get('cat') == 'ALLREDUCE' for e in ev); assert any(e.get('cat') == 'S' for e in ev); assert any(e.get('name') == 'thread_name' and e['args']['name'] == 'd0 collectives' for e in ev)" "$tmp/v.trace" &&
  pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: trace with collectives" >&2; }
$SC export 1f1b -D p=2 -D m=2 -D vocab_par=vocab-1 --format json >"$tmp/v.dump" &&
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); ops=[i['op'] for s in j['streams'] for i in s]; assert 'S' in ops and 'EW' in ops and 'BCAST' in ops; a=[i for s in j['streams'] for i in s if i['op']=='ALLREDUCE'][0]; assert a['red'] in ('sum','max') and 'bytes' in a; assert [i for s in j['streams'] for i in s if i['op']=='S'][0]['shard'] == 0" "$tmp/v.dump" &&
  pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL: json dump with vocabulary passes" >&2; }
expect 3 "PyTorch's pipelining schedules have no vocabulary passes" -- $SC export 1f1b -D vocab_par=vocab-2 --format torch-csv
# Output that cannot be written is an error (issue 21): a full device or a
# closed stdout never exits 0 with nothing written.
printf '0F0,0I0,0W0\n' >"$tmp/one.csv"
for c in "sim 1f1b --json" "sim 1f1b" "show 1f1b" "show 1f1b --dump" "check 1f1b" "list" \
         "export 1f1b --format json" "export 1f1b --format torch-csv" "import $tmp/one.csv" \
         "import $tmp/one.csv --json" "run 1f1b -D p=2 -D m=2 --json"; do
  # shellcheck disable=SC2086
  $SC $c >/dev/full 2>"$tmp/err"; rc=$?
  # (one error line; torch-csv exports add their notes)
  if [ $rc = 2 ] && [ "$(grep -c '^stagecraft: error: ' "$tmp/err")" = 1 ] &&
     grep -q "^stagecraft: error: cannot write" "$tmp/err" && ! grep -qv '^stagecraft: \(error\|note\): ' "$tmp/err"; then pass=$((pass+1))
  else fail=$((fail+1)); echo "FAIL: $c >/dev/full: exit $rc" >&2; cat "$tmp/err" >&2; fi
done
expect 2 "cannot write the output (standard output): Bad file descriptor" -- sh -c "$SC check 1f1b >&-"

# An error message never carries a raw control byte (a recipe's own error
# text included): escapes become '?', the message stays one line.
printf 'error("a\\27[31mred\\rb")\n' >"$tmp/esc.lua"
expect 8 'esc.lua:1: a?[31mred b' -- $SC check "$tmp/esc.lua"
one_line_err $SC check "$tmp/esc.lua"

# A recipe's output never mixes into what a command prints on stdout: a
# print in a recipe goes to stderr (with --trust, io.write too).
printf 'print("1F0,1F1")\nreturn sc.program { p = 2, m = 2, rule = "1f1b" }\n' >"$tmp/forge.lua"
$SC export "$tmp/forge.lua" --format torch-csv >"$tmp/out" 2>"$tmp/err"
$SC export 1f1b -D p=2 -D m=2 --format torch-csv >"$tmp/want"
if cmp -s "$tmp/out" "$tmp/want" && grep -qx "1F0,1F1" "$tmp/err"; then pass=$((pass+1))
else fail=$((fail+1)); echo "FAIL: a recipe's print forged rows of an export" >&2; head -3 "$tmp/out" >&2; fi
printf 'print("{\\"makespan\\": 0}")\nio.write("x")\nreturn sc.program { p = 2, m = 2, rule = "1f1b" }\n' >"$tmp/forge2.lua"
for c in "sim $tmp/forge.lua --json" "--trust sim $tmp/forge2.lua --json" "run $tmp/forge.lua --json"; do
  # shellcheck disable=SC2086
  $SC $c >"$tmp/out" 2>"$tmp/err"
  if python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/out" 2>/dev/null && [ -s "$tmp/err" ]; then pass=$((pass+1))
  else fail=$((fail+1)); echo "FAIL: $c: stdout is not the command's JSON alone" >&2; head -3 "$tmp/out" >&2; fi
done
expect 0 "1F0,1F1" -- $SC "$tmp/forge.lua"   # a script's print is its output

# A script's write refusals name a script; a recipe it loads stays a recipe
# (docs/sandbox.md#files-written).
mkdir "$tmp/w"
printf 'print(sc.load("1f1b"):svg("s.svg"))\n' >"$tmp/w/s.lua"
printf 'return sc.load("1f1b"):svg("r.svg") and sc.load("1f1b")\n' >"$tmp/w/r.lua"
printf 'sc.load("%s")\n' "$tmp/w/r.lua" >"$tmp/w/sr.lua"
expect 10 "s.lua:1: sandbox: svg('s.svg'): a script writes files only in a folder the user grants" -- $SC "$tmp/w/s.lua"
expect 10 "r.lua:1: sandbox: svg('r.svg'): a recipe writes files only in a folder the user grants" -- $SC "$tmp/w/sr.lua"
expect 10 "svg('r.svg'): a recipe writes files only in a folder the user grants" -- $SC check "$tmp/w/r.lua"

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
