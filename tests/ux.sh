#!/bin/sh
# ux.sh — what a newcomer meets first (issue 20): typos and the near names
# they get, parameters given but never read, `list`, text from recipes
# cleaned of control characters, notes, versions, the examples as their
# headers say to run them. Run from the repository root: sh tests/ux.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

. tests/lib.sh # ok, bad, expect

# ---- near names: commands, recipes, -D names, fields -----------------------
expect 2 "unknown command 'simm': did you mean 'sim'?" -- $SC simm
expect 2 "unknown command 'chekc': did you mean 'check'?" -- $SC chekc 1f1b
expect 2 "unknown command 'frobnicate' (commands: list, check, sim" -- $SC frobnicate
expect 2 "cannot open nofile.lua" -- $SC nofile.lua
expect 0 "Program(2 devices" -- sh -c "echo 'print(sc.load(\"1f1b\", {p = 2}))' | $SC -"
expect 2 "unknown recipe 'zb-h3': did you mean 'zb-h1' or 'zb-h2'?" -- $SC sim zb-h3
expect 2 "unknown recipe 'gpip': did you mean 'gpipe'?" -- $SC check gpip
expect 2 "unknown parameter 'tcom' for recipe '1f1b': did you mean 'tcomm'?" -- $SC sim 1f1b -D tcom=1
expect 2 "unknown parameter 'M' for recipe 'zb-h1': did you mean 'm'?" -- $SC sim zb-h1 -D M=16
printf 'return sc.program { p = 2, m = 2, rule = "1f1b", offlod = "all", tcom = 5 }\n' >"$tmp/typo.lua"
expect 3 "typo.lua:1: program: unknown fields 'offlod' (did you mean 'offload'?), 'tcom' (did you mean 'tcomm'?)" -- $SC check "$tmp/typo.lua"

# ---- parameters given but never read ---------------------------------------
cat >"$tmp/drops.lua" <<'LUA'
local P = sc.params { doc = "drops w_keep", {"p", 4, "devices"}, {"m", 8, "microbatches"}, sc.COSTS }
return sc.program { p = P.p, m = P.m, tf = P.tf, tb = P.tb, tw = P.tw, tcomm = P.tcomm, rule = "1f1b" }
LUA
expect 2 "parameter 'w_keep' is given (0) but recipe '$tmp/drops.lua' does not read it, so it would change nothing" -- $SC sim "$tmp/drops.lua" -D w_keep=0
$SC check "$tmp/drops.lua" >"$tmp/out" 2>"$tmp/err"
if [ $? = 0 ] && grep -q "^stagecraft: warning: recipe '$tmp/drops.lua' declares parameter 'w_keep' but does not read it" "$tmp/err" &&
   [ "$(grep -c warning "$tmp/err")" = 1 ] && grep -q "^ok: " "$tmp/out"; then ok; else bad "warning for a declared, unread parameter"; cat "$tmp/err" >&2; fi
expect 2 "recipe '1f1b' reads it only when offload is selective, so it would change nothing" -- $SC sim 1f1b -D offload_chunks=2
expect 0 "ok: gis" -- $SC check gis -D offload=selective -D offload_chunks=2
# No stdlib recipe warns, none with its defaults ignores a parameter.
for r in $($SC list | awk '{print $1}'); do
  $SC check "$r" --time-limit 0 >/dev/null 2>"$tmp/err" && [ ! -s "$tmp/err" ] && ok || { bad "check $r is quiet"; cat "$tmp/err" >&2; }
done

# ---- list ---------------------------------------------------------------------
$SC list >"$tmp/list"
n=$(ls stdlib/*.lua | grep -vc '/_')
if [ "$(wc -l <"$tmp/list")" = "$n" ] && ! grep -q ' = ' "$tmp/list"; then ok; else bad "list: one line per recipe ($n)"; cat "$tmp/list" >&2; fi
expect 0 "    offload_chunks   = 1.0      selective: chunks per device" -- $SC list gis
expect 0 "    g                = 0        group size" -- $SC list gis

# ---- text from recipes is cleaned of control characters -----------------------
printf '%s\n' 'local P = sc.params { doc = "evil\27]52;c;ZXZpbA==\7 doc\27[2J", {"p", 4, "devices\27[31m red"}, {"m", "x\27[H", "m"} }' \
  'sc.note("note \27[2J here")' \
  'error("boom \27[2J\155[1m end")' >"$tmp/evil.lua"
$SC list "$tmp/evil.lua" >"$tmp/out" 2>&1
if ! grep -q "$(printf '\033')" "$tmp/out" && ! grep -q "$(printf '\007')" "$tmp/out" && grep -q 'evil?\]52;c;ZXZpbA==? doc?\[2J' "$tmp/out" &&
   grep -q 'devices?\[31m red' "$tmp/out"; then ok; else bad "list cleans doc and descriptions"; od -c "$tmp/out" | head >&2; fi
$SC check "$tmp/evil.lua" >"$tmp/out" 2>&1
if ! grep -q "$(printf '\033')" "$tmp/out" && ! LC_ALL=C grep -q "$(printf '\233')" "$tmp/out" && grep -q 'boom ?\[2J?\[1m end' "$tmp/out" &&
   grep -q 'note: note ?\[2J here' "$tmp/out"; then ok; else bad "errors and notes are cleaned"; od -c "$tmp/out" | head >&2; fi

# ---- versions -------------------------------------------------------------------
printf 'sc.need_version "99.0"\nreturn sc.program { p = 1, m = 1, rule = "1f1b" }\n' >"$tmp/future.lua"
expect 3 "future.lua:1: this recipe needs stagecraft 99.0 (major version 99) (this is " -- $SC check "$tmp/future.lua"
v=$(echo 'print(sc.version)' | $SC)
printf 'sc.need_version "%s"\nreturn sc.program { p = 1, m = 1, rule = "1f1b" }\n' "$v" >"$tmp/now.lua"
expect 0 "ok: " -- $SC check "$tmp/now.lua"
expect 0 "stagecraft $v" -- sh -c "$SC --help; echo stagecraft \$(echo 'print(sc.version)' | $SC)"

# ---- exports from Lua are the command line's ----------------------------------
for f in torch-csv torch-csv-comms json trace svg; do
  echo "io.write(sc.load('zb-h1', {p = 3, m = 5}):export('$f', nil, {title = 'zb-h1'}))" | $SC >"$tmp/lua.$f"
  $SC export zb-h1 -D p=3 -D m=5 --format $f >"$tmp/cli.$f"
  cmp -s "$tmp/lua.$f" "$tmp/cli.$f" && [ -s "$tmp/cli.$f" ] && ok || bad "p:export('$f') differs from stagecraft export"
done

# ---- the examples, as their headers say to run them ------------------------------
for f in examples/*.lua examples/*/*.lua; do
  grep -E '^--.*  stagecraft [a-z]' "$f" | sed -E 's/^.*  (stagecraft [a-z])/\1/; s/ +#.*//' | while read -r cmd; do
    case "$cmd" in *[A-Z][A-Z]*|*'['*) continue ;; esac   # placeholders: HIDDEN, [p [m ...]]
    ( set -f; eval "\"\$SC\"${cmd#stagecraft}" ) >"$tmp/ex" 2>"$tmp/exerr" && echo "OK" || { echo "FAILED: $cmd"; sed 's/^/  | /' "$tmp/exerr" | head -3; }
  done
done >"$tmp/examples"
if ! grep -q FAILED "$tmp/examples" && [ "$(grep -c OK "$tmp/examples")" -ge 7 ]; then ok; else bad "examples as their headers say"; cat "$tmp/examples" >&2; fi
expect 0 "note: choose_schedule: zb-auto" -- $SC sim examples/choose_schedule.lua -D mem=12

echo "ux: $pass passed, $fail failed"
[ "$fail" = 0 ]
