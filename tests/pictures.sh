#!/bin/sh
# pictures.sh — pictures at realistic sizes (docs/simulation.md,
# docs/interchange.md#svg-pictures): the SVG's width from the content or
# --width, the --from/--to window, microbatch labels wherever they fit, chunk
# shades in the legend, transfers drawn as they are (a tick when tcomm = 0),
# and an ASCII view that never shows a pass that is not there. Each picture is
# also rendered with rsvg-convert. Run from the repository root: sh
# tests/pictures.sh
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*" >&2; }
py() { # py NAME SCRIPT ARGS...
  name=$1; script=$2; shift 2
  if python3 -c "$script" "$@" 2>"$tmp/pyerr"; then ok; else bad "$name"; cat "$tmp/pyerr" >&2; fi
}
render() { # render FILE.svg: well-formed, and rsvg-convert draws it
  if command -v xmllint >/dev/null; then xmllint --noout "$1" && ok || bad "$1 is not XML"; fi
  if command -v rsvg-convert >/dev/null; then rsvg-convert "$1" -o "$1.png" && [ -s "$1.png" ] && ok || bad "rsvg-convert $1"; fi
}
# What the checks read from a picture: width, plot, cells with their title
# and label, transfer marks.
LIB='
import re, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
def load(path):
    root = ET.parse(path).getroot()
    cells, labels, xfers = [], [], []
    for g in root.iter(ns + "g"):
        if not g.get("id"):
            continue
        items = list(g)
        for i, e in enumerate(items):
            t = e.find(ns + "title")
            if e.tag == ns + "rect" and t is not None and re.match(r"(F|B|W|BW) s\d+ mb\d+", t.text):
                cells.append((e, t.text))
            if e.tag == ns + "text" and e.get("fill") == "white":
                labels.append((float(e.get("x")), e.text))
            if t is not None and ("SEND" in t.text or "RECV" in t.text):
                xfers.append((e, t.text))
    return root, cells, labels, xfers
'

# Width from the content: p = 16, m = 64 gets a number in every cell.
$SC show zb-h1 -D p=16 -D m=64 --svg "$tmp/big.svg" && render "$tmp/big.svg"
py "p=16 m=64: wide enough for a label in every cell" "$LIB"'
root, cells, labels, _ = load(sys.argv[1])
assert len(cells) == 16 * 64 * 3, len(cells)
assert len(labels) == len(cells), (len(labels), len(cells))
assert all(float(e.get("width")) >= 14 for e, _ in cells)
assert 3000 < int(root.get("width")) <= 20200, root.get("width")
for (e, t), (x, text) in zip(cells, labels):
    assert t.split("mb")[1].split()[0] == text
' "$tmp/big.svg"
# A V schedule at p = 8, m = 16 keeps its numbers; the legend names the shades.
$SC show zb-v -D p=8 -D m=16 --svg "$tmp/v.svg" && render "$tmp/v.svg"
py "V schedule: labels and chunk shades" "$LIB"'
root, cells, labels, _ = load(sys.argv[1])
assert len(labels) == len(cells) == 8 * 2 * 16 * 3
legend = [t.text for t in root.iter(ns + "title") if t.text and ", chunk " in t.text]
assert legend == ["F forward, chunk 0", "F forward, chunk 1", "B input grad, chunk 0",
                  "B input grad, chunk 1", "W weight grad, chunk 0", "W weight grad, chunk 1"], legend
fills = {}
for e, t in cells:
    stage = int(t.split()[1][1:])
    fills.setdefault((t.split()[0], stage < 8), set()).add(e.get("fill"))
assert all(len(v) == 1 for v in fills.values()) and fills[("F", True)] != fills[("F", False)]
assert "shades: chunk 0 to 1, later chunks darker" in open(sys.argv[1]).read()
' "$tmp/v.svg"
# --width is honoured with --svg (pixels of the plot), and by export.
$SC show zb-h1 --svg "$tmp/w.svg" --width 2000 && $SC export zb-h1 --format svg --width 1500 -o "$tmp/w2.svg" &&
  grep -q 'width="2130"' "$tmp/w.svg" && grep -q 'width="1630"' "$tmp/w2.svg" && ok || bad "--width with --svg"
# --from/--to: only that part of the step, and the header says so.
$SC show zb-h1 -D p=8 -D m=32 --svg "$tmp/win.svg" --from 20 --to 40 && render "$tmp/win.svg"
$SC export zb-h1 -D p=8 -D m=32 --format json -o "$tmp/win.json"
py "--from/--to window" "$LIB"'
import json
root, cells, labels, _ = load(sys.argv[1])
d = json.load(open(sys.argv[2]))
inside = sum(1 for st in d["streams"] for i in st if i["op"] in ("F", "B", "W", "BW") and i["t1"] > 20 and i["t0"] < 40)
assert len(cells) == inside, (len(cells), inside)
plot = int(root.get("width")) - 56 - 74
for e, t in cells:
    x, w = float(e.get("x")), float(e.get("width"))
    assert 56 - 1e-6 <= x and x + w <= 56 + plot + 1e-6, (x, w, t)
assert "time 20 to 40 of 103" in open(sys.argv[1]).read()
' "$tmp/win.svg" "$tmp/win.json"
# Transfers as they are: with tcomm = 0 a tick, with tcomm a bar that long.
$SC show 1f1b -D p=4 -D m=4 --svg "$tmp/t0.svg" --width 1000 && $SC show 1f1b -D p=4 -D m=4 -D tcomm=0.5 --svg "$tmp/t5.svg" --width 1000
py "transfers: a tick when tcomm = 0, tcomm long otherwise" "$LIB"'
_, _, _, x0 = load(sys.argv[1])
bars = [e for e, t in x0 if e.tag == ns + "rect"]
assert bars and all(float(e.get("width")) == 1 for e in bars)
assert "tcomm = 0: a tick" in open(sys.argv[1]).read()
root, _, _, x5 = load(sys.argv[2])
sx = 1000 / float(re.search(r"makespan ([0-9.]+)", open(sys.argv[2]).read()).group(1))
bars = [e for e, t in x5 if e.tag == ns + "rect"]
assert bars and all(abs(float(e.get("width")) - 0.5 * sx) < 0.02 for e in bars), [e.get("width") for e in bars][:5]
waits = [e for e, t in x5 if e.tag == ns + "line"]
assert waits and all("waits for its peer" in t for e, t in x5 if e.tag == ns + "line")
' "$tmp/t0.svg" "$tmp/t5.svg"

# ASCII: at every width, each column shows a kind only when passes of that
# kind (and no other) run in it, '+' only when several kinds do, '.' when
# none; at full scale every pass appears.
for spec in "zb-h1 -D p=4 -D m=8" "zb-v -D p=4 -D m=8" "interleaved -D p=4 -D m=8 -D tf=1.5" "1f1b -D p=4 -D m=6 -D tcomm=0.3" "gis -D p=8 -D m=16"; do
  $SC export $spec --format json -o "$tmp/a.json"
  for w in 10 17 40 120; do $SC show $spec --width $w >"$tmp/a.$w.txt"; done
  py "ascii never shows a pass that is not there: $spec" '
import json, re, sys
d = json.load(open(sys.argv[1]))
mk = d["simulation"]["makespan"]
kind = {"F": "F", "B": "B", "W": "W", "BW": "X"}
for w in (10, 17, 40, 120):
    lines = open(sys.argv[2] + ".%d.txt" % w).read().split("\n")
    # the unit as the view computes it: the shortest pass, widened to fit
    unit = min(i["t1"] - i["t0"] for st in d["streams"] for i in st
               if i["op"] in kind and i["t1"] > i["t0"])
    import math
    if math.ceil(mk / unit - 1e-9) > w:
        unit = mk / w
    rows = [l for l in lines if re.match(r"d\d+ *\|", l)]
    assert len(rows) == d["devices"]
    for dev, row in enumerate(rows):
        cells = row.split("|")[1]
        passes = [i for i in d["streams"][dev] if i["op"] in kind]
        for c, ch in enumerate(cells):
            a, e = c * unit, (c + 1) * unit
            eps = 1e-9 * unit
            there = {kind[i["op"]] for i in passes if i["t1"] > a + eps and i["t0"] < e - eps}
            if ch == ".":
                assert not there or "several kinds" not in lines[-2] and all(i["t0"] > (a + e) / 2 or i["t1"] <= (a + e) / 2 for i in passes), (w, dev, c)
            elif ch == "+":
                assert len(there) >= 2, (w, dev, c, there)
            else:
                assert ch in there, (w, dev, c, ch, there)
        if "several kinds" not in lines[-2]:  # full scale: every pass shows
            for i in passes:
                cols = [c for c in range(len(cells)) if i["t0"] <= (c + 0.5) * unit < i["t1"]]
                assert cols and all(cells[c] == kind[i["op"]] for c in cols), (w, dev, i)
' "$tmp/a.json" "$tmp/a"
done

# Offload: an OFFLOAD and a RELOAD at the same time both show (the upper half
# of the host row the copies out, the lower the copies back).
$SC show 1f1b -D p=4 -D m=8 -D offload=all -D offload_ratio=0.3 --svg "$tmp/off.svg" && render "$tmp/off.svg"
py "offload: copies out above the copies back" "$LIB"'
root, _, _, _ = load(sys.argv[1])
ys = {}
for g in root.iter(ns + "g"):
    for e in g:
        t = e.find(ns + "title")
        if e.tag == ns + "rect" and t is not None and t.text.split()[0] in ("OFFLOAD", "RELOAD"):
            ys.setdefault((g.get("id"), t.text.split()[0]), set()).add(float(e.get("y")) + float(e.get("height")) / 2)
devs = {d for d, _ in ys}
assert devs, "no host copies drawn"
for d in devs:
    o, r = ys.get((d, "OFFLOAD"), set()), ys.get((d, "RELOAD"), set())
    assert len(o) <= 1 and len(r) <= 1 and (not o or not r or max(o) < min(r)), (d, o, r)
assert any(ys.get((d, "OFFLOAD")) and ys.get((d, "RELOAD")) for d in devs)
' "$tmp/off.svg"
echo "pictures: $pass passed, $fail failed"
[ "$fail" = 0 ]
