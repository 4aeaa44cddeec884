#!/bin/sh
# tests/embed.sh — libstagecraft, installed (docs/embed.md): `make install
# PREFIX=T` puts the binary, the libraries, the header, stagecraft.pc, the
# Lua module and the stdlib recipes under T; examples/embed.c and
# tests/embed/contexts.c, tests/embed/engine.c (compare and plan) and
# tests/embed/texts.c (the commands' texts) build with `pkg-config --cflags --libs stagecraft`
# (PKG_CONFIG_PATH into T) and run; the installed binary runs from another
# folder; stock lua5.4 requires the module (LUA_CPATH into T), gets the API
# of recipes, and sc.load runs recipes in the sandbox; `make uninstall`
# leaves nothing. The make that installs inherits the flags of the make
# that runs the tests (MAKEFLAGS: make asan's BUILD, OPT, SAN), so nothing
# is rebuilt. Run from the repository root: sh tests/embed.sh
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
BUILD=${BUILD:-build}
T=$tmp/prefix
mk() { make -s --no-print-directory NODEPS=1 BUILD="$BUILD" PREFIX="$T" "$@"; }

if ! mk install >"$tmp/install.log" 2>&1; then
  bad "make install PREFIX=$T: $(tail -5 "$tmp/install.log")"
  echo "embed: $pass passed, $fail failed"; exit 1
fi
for f in bin/stagecraft lib/libstagecraft.so lib/libstagecraft.so.0 lib/libstagecraft.a \
         include/stagecraft.h lib/pkgconfig/stagecraft.pc lib/lua/5.4/stagecraft.so \
         share/stagecraft/stdlib/zb-h1.lua; do
  [ -e "$T/$f" ] && ok || bad "make install: no $f"
done

# The installed binary: the stdlib is in it, not read from this tree.
(cd "$tmp" && "$T/bin/stagecraft" sim zb-h1 -D p=4 -D m=8 --json) >"$tmp/inst.json" 2>&1
"$SC" sim zb-h1 -D p=4 -D m=8 --json >"$tmp/sim.json" 2>&1
cmp -s "$tmp/inst.json" "$tmp/sim.json" && ok || bad "installed binary: $(head -c 300 "$tmp/inst.json")"
"$T/bin/stagecraft" --help | grep -q "stagecraft" && ok || bad "installed binary --help"

# Built against the installed library, as a user would. Under make asan the
# library carries the sanitizers: a program linked to it links their runtime
# too, and lua5.4 (built without them) loads the module with the runtime
# preloaded (its own leaks are not this test's: detect_leaks=0 there).
export PKG_CONFIG_PATH="$T/lib/pkgconfig"
flags=$(pkg-config --cflags --libs stagecraft 2>"$tmp/pc.err") && ok || bad "pkg-config: $(cat "$tmp/pc.err")"
lua_env=""
if readelf -d "$T/lib/libstagecraft.so" 2>/dev/null | grep -q 'libasan'; then
  flags="-fsanitize=address,undefined $flags"
  lua_env="LD_PRELOAD=$(cc -print-file-name=libasan.so):$(cc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0"
fi
printf 'print(sc.version)\n' >"$tmp/version.lua"
[ "$(pkg-config --modversion stagecraft)" = "$("$SC" "$tmp/version.lua")" ] && ok ||
  bad "stagecraft.pc's version $(pkg-config --modversion stagecraft)"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/embed" examples/embed.c $flags 2>"$tmp/cc.err" && ok ||
  bad "examples/embed.c against the installed library: $(head -5 "$tmp/cc.err")"
(cd "$tmp" && ./embed zb-h1 p=4 m=8) >"$tmp/out" 2>&1
grep -q "makespan 27  bubble 11.11%  peak 4 4 4 4" "$tmp/out" && [ -s "$tmp/zb-h1.csv" ] && ok ||
  bad "embed zb-h1: $(cat "$tmp/out")"
"$SC" export zb-h1 -D p=4 -D m=8 --format torch-csv 2>/dev/null | cmp -s - "$tmp/zb-h1.csv" && ok ||
  bad "embed's torch-csv differs from export's"
expect 3 "zb-v needs m >= 2p-1" -- "$tmp/embed" zb-v p=4 m=2
ldd "$tmp/embed" | grep -q "$T/lib/libstagecraft.so.0" && ok || bad "embed does not load the installed library"
# The static library, with the libraries pkg-config --static names.
san=""; case "$flags" in -fsanitize*) san="-fsanitize=address,undefined" ;; esac
# shellcheck disable=SC2046,SC2086
cc -std=c11 $san -o "$tmp/embed_static" examples/embed.c $(pkg-config --cflags stagecraft) "$T/lib/libstagecraft.a" \
  $(pkg-config --static --libs-only-l stagecraft | sed 's/-lstagecraft//') 2>"$tmp/cc.err" &&
  (cd "$tmp" && ./embed_static zb-h1 p=4 m=8) | grep -q "makespan 27  bubble 11.11%" && ok ||
  bad "examples/embed.c against libstagecraft.a: $(head -5 "$tmp/cc.err")"
mkdir -p "$tmp/rec"
printf 'local f = io.open("/etc/passwd")\nreturn sc.program{p = 2, m = 2, rule = "1f1b"}\n' >"$tmp/rec/reads.lua"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/contexts" tests/embed/contexts.c $flags 2>"$tmp/cc.err" && ok ||
  bad "tests/embed/contexts.c: $(head -5 "$tmp/cc.err")"
printf 'local s = string.rep("a", 40)\nreturn s:find(string.rep("a*", 40) .. "b")\n' >"$tmp/rec/find.lua"
printf 'while true do end\n' >"$tmp/rec/loop.lua"
"$tmp/contexts" "$tmp/rec/reads.lua" "$tmp/rec/find.lua" "$tmp/rec/loop.lua" >"$tmp/out" 2>&1 && grep -q "contexts: [0-9]* passed, 0 failed" "$tmp/out" && ok ||
  bad "contexts: $(cat "$tmp/out")"
python3 - "$tmp/out" "$tmp/sim.json" <<'PY' && ok || bad "the library's figures are not sim --json's"
import json, sys
line = [l for l in open(sys.argv[1]) if l.startswith("zb-h1")][0].split()
s = json.load(open(sys.argv[2]))
got = dict(zip(line[3::2], line[4::2]))
assert int(got["instructions"]) == s["instructions"], got
assert float(got["makespan"]) == s["makespan"] and abs(float(got["bubble_rate"]) - s["bubble_rate"]) < 1e-14
assert [float(x) for x in line[-4:]] == s["peak_memory"]
PY

# The commands' texts from a C host (tests/embed/texts.c): byte for byte
# the commands' output, one writer for both (the Python package's results).
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/texts" tests/embed/texts.c $flags 2>"$tmp/cc.err" && ok ||
  bad "tests/embed/texts.c: $(head -5 "$tmp/cc.err")"
mkdir -p "$tmp/texts.d"
(cd "$tmp/texts.d" && "$tmp/texts") >"$tmp/texts.out" 2>&1 && grep -q "texts: [0-9]* passed, 0 failed" "$tmp/texts.out" && ok ||
  bad "texts: $(cat "$tmp/texts.out")"
"$SC" sim zb-v -D p=4 -D m=8 --time-limit 0 --json 2>/dev/null | cmp -s - "$tmp/texts.d/figures.json" && ok ||
  bad "stagecraft_figures_json is not sim --json"
"$SC" export zb-v -D p=4 -D m=8 --time-limit 0 --format torch-csv-comms --torch 2.14 2>/dev/null |
  cmp -s - "$tmp/texts.d/comms-2.14.csv" && ok || bad "stagecraft_export_as is not export --torch 2.14"
"$SC" export zb-v -D p=4 -D m=8 --time-limit 0 --format json 2>/dev/null | cmp -s - "$tmp/texts.d/dump.json" && ok ||
  bad "stagecraft_export_as json is not export --format json"
"$SC" compare 1f1b zb-h1 -D p=4 -D m=8,16 --time-limit 0 --json 2>/dev/null | cmp -s - "$tmp/texts.d/compare.json" && ok ||
  bad "stagecraft_compare_json is not compare --json"
"$SC" sim zb-v -D p=4 -D m=8 --time-limit 0 --json --with-program >"$tmp/with.json" 2>/dev/null
"$SC" plan -D p=4 -D m=8 --cap 3 --time-limit 0 --json >"$tmp/plan3.json" 2>/dev/null
python3 - "$tmp/texts.d" "$tmp/with.json" "$tmp/plan3.json" <<'PY' && ok || bad "stagecraft_plan_json or _digest is not the command's"
import json, os, sys
d = sys.argv[1]
w = json.load(open(sys.argv[2]))
assert open(os.path.join(d, "digest.txt")).read() == w["digest"], w["digest"]
a, b = json.load(open(os.path.join(d, "plan.json"))), json.load(open(sys.argv[3]))
a.pop("seconds"), b.pop("seconds")
assert a == b
PY

# The engine from a C host: stagecraft_compare's rows and stagecraft_plan's
# pick are the commands' (tests/embed/engine.c).
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/engine" tests/embed/engine.c $flags 2>"$tmp/cc.err" && ok ||
  bad "tests/embed/engine.c: $(head -5 "$tmp/cc.err")"
"$tmp/engine" >"$tmp/engine.out" 2>&1 && grep -q "engine: [0-9]* passed, 0 failed" "$tmp/engine.out" && ok ||
  bad "engine: $(cat "$tmp/engine.out")"
"$SC" compare 1f1b zb-h1 -D p=4 -D m=8,16 --json >"$tmp/compare.json" 2>&1
"$SC" plan -D p=4 -D m=8 --cap 4 --time-limit 0 --json >"$tmp/plan.json" 2>&1
python3 - "$tmp/engine.out" "$tmp/compare.json" "$tmp/plan.json" <<'PY' && ok || bad "the library's compare and plan are not the commands': $(cat "$tmp/engine.out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
rows = [l.split() for l in lines if l.startswith("row ")]
want = json.load(open(sys.argv[2]))["rows"]
assert len(rows) == len(want), (rows, want)
for r, w in zip(rows, want):
    assert r[1] == w["recipe"] and r[2:4] == ["%s=%s" % kv for kv in w["parameters"].items()], (r, w)
    assert float(r[4]) == w["makespan"] and abs(float(r[5]) - w["bubble_rate"]) < 1e-14, (r, w)
    assert float(r[6]) == w["peak_memory_max"] and int(r[7]) == w["instructions"], (r, w)
pick = [l for l in lines if l.startswith("pick ")][0]
plan = json.load(open(sys.argv[3]))
c = plan["candidates"][plan["pick"]]
assert pick.split()[1] == c["recipe"] and float(pick.split()[-2]) == c["makespan"], (pick, c)
assert int(pick.split()[-1]) == len(plan["candidates"]), pick
PY

# The Lua module in stock lua5.4 (Debian's lua5.4; the deps step installs it).
if command -v lua5.4 >/dev/null; then
  export LUA_CPATH="$T/lib/lua/5.4/?.so;;"
  cat >"$tmp/use.lua" <<'LUA'
local sc = require "stagecraft"
local p = sc.load("zb-h1", {p = 4, m = 8})
local s = p:sim()
print(sc.version, p.devices, s.makespan, s.bubble_rate, p:check())
print(type(sc.program), type(sc.params), sc.isprogram(p), type(sc.block))
local ok, err = pcall(sc.load, arg[1])
print(ok, err)
assert(p:export("torch-csv") == io.open(arg[2]):read("a"))
print(type(io.open), print == _G.print)
local plan = sc.plan{p = 4, m = 8, cap = 4, time_limit = 0}
print("plan", plan.candidates[plan.pick].recipe, plan.candidates[plan.pick].makespan, #plan.candidates)
local rows = sc.compare{"1f1b", "zb-h1", p = 4, m = "8,16"}
print("compare", #rows, rows[1].recipe, rows[1].makespan, rows[4].recipe, rows[4].parameters.m, rows[4].makespan)
LUA
  env $lua_env lua5.4 "$tmp/use.lua" "$tmp/rec/reads.lua" "$tmp/zb-h1.csv" >"$tmp/out" 2>&1
  grep -q "^0.2.0	4	27.0	0.11111111111111" "$tmp/out" && ok || bad "lua5.4 require: $(cat "$tmp/out")"
  grep -q "^false	.*sandbox: .*io" "$tmp/out" && ok || bad "lua5.4: sc.load of a recipe that reads a file: $(cat "$tmp/out")"
  grep -q "^function	true" "$tmp/out" && ok || bad "lua5.4: the host's io and print: $(cat "$tmp/out")"
  grep -q "^function	function	true	function" "$tmp/out" && ok || bad "lua5.4: the module's API: $(cat "$tmp/out")"
  grep -q "^plan	interleaved-zb	24.75	26$" "$tmp/out" && ok || bad "lua5.4: sc.plan: $(cat "$tmp/out")"
  grep -q "^compare	4	1f1b	33.0	zb-h1	16	51.0$" "$tmp/out" && ok || bad "lua5.4: sc.compare: $(cat "$tmp/out")"
  # The host's strings stay the host's (docs/embed.md#the-lua-module): one
  # metatable per Lua state, left as it was; methods the host adds later are
  # found, dump too. A recipe's `string` is still its sandbox's (no dump).
  printf 'local b = string.dump(function() end)\nreturn sc.program{p = 2, m = 2, rule = "1f1b"}\n' >"$tmp/rec/dump.lua"
  cat >"$tmp/strings.lua" <<'LUA'
local mt = getmetatable("")
local index = mt.__index
local sc = require "stagecraft"
function string.shout(s) return s:upper() .. "!" end
print(getmetatable("") == mt and mt.__index == index and index == string, ("x"):shout(),
      ("x").dump == string.dump)
local p = sc.load("zb-h1", {p = 2, m = 4})
print(("y"):shout(), p.devices, getmetatable("").__index == string)
print(pcall(sc.load, arg[1]))
LUA
  env $lua_env lua5.4 "$tmp/strings.lua" "$tmp/rec/dump.lua" >"$tmp/out" 2>&1
  grep -q "^true	X!	true$" "$tmp/out" && grep -q "^Y!	2	true$" "$tmp/out" && ok ||
    bad "lua5.4: require replaced the host's string methods: $(cat "$tmp/out")"
  grep -q "^false	.*dump.lua:1: sandbox: string.dump is not available to recipes" "$tmp/out" && ok ||
    bad "lua5.4: a recipe's string.dump: $(cat "$tmp/out")"
  # the same API as recipes: the module's public names, as in stagecraft
  # (sc.plan and sc.compare included: the engine's, docs/embed.md)
  printf 'local t = {}\nfor k in pairs(%s) do if not k:match("^_") then t[#t + 1] = k end end\ntable.sort(t)\nprint(table.concat(t, " "))\n' \
    'require "stagecraft"' >"$tmp/keys.lua"
  env $lua_env lua5.4 "$tmp/keys.lua" >"$tmp/keys.lua.out" 2>&1
  "$SC" "$tmp/keys.lua" >"$tmp/keys.sc.out" 2>&1
  [ -s "$tmp/keys.sc.out" ] && cmp -s "$tmp/keys.lua.out" "$tmp/keys.sc.out" && ok ||
    bad "the module's names in lua5.4 and in stagecraft differ: $(diff "$tmp/keys.lua.out" "$tmp/keys.sc.out" | head -5)"
else
  echo "embed: lua5.4 not installed (make's deps step installs it as root): the Lua module's checks skipped"
fi

# make uninstall: nothing left.
mk uninstall >"$tmp/out" 2>&1 && ok || bad "make uninstall: $(tail -3 "$tmp/out")"
left=$(find "$T" -type f -o -type l 2>/dev/null)
[ -z "$left" ] && ok || bad "left after uninstall: $left"
echo "embed: $pass passed, $fail failed"
[ "$fail" = 0 ]
