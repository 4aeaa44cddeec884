#!/bin/sh
# bench_pattern.sh — stagecraft's pattern matcher (lang/sandbox/pattern.c)
# against Lua 5.4's own on the workloads of bench/bench_pattern.lua: the
# seconds of each, then the ratio of the totals. Run from the repository
# root: sh bench/bench_pattern.sh [STAGECRAFT]
SC=${1:-${SC:-./stagecraft}}
command -v lua5.4 >/dev/null || { echo "bench_pattern: lua5.4 is missing"; exit 1; }
a=$(mktemp); b=$(mktemp); trap 'rm -f "$a" "$b"' EXIT
lua5.4 bench/bench_pattern.lua >"$a"
"$SC" bench/bench_pattern.lua >"$b"
echo "lua5.4:"; cat "$a"; echo "stagecraft:"; cat "$b"
awk 'FNR == NR { l += $(NF - 2); next } { s += $(NF - 2) } END { printf "total: lua5.4 %.3f s, stagecraft %.3f s, ratio %.2f\n", l, s, s / l }' "$a" "$b"
