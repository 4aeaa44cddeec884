#!/bin/sh
# interchange.sh — export and import (docs/cli.md, docs/interchange.md): PyTorch CSV round
# trips of every stdlib recipe in both dialects, PyTorch's grammar and rules
# checked independently (tests/py/check_torch_csv.py), each import error
# class, old letters, the JSON dump, the Chrome trace, the SVG picture and
# writes that leave nothing half-done. Run from the repository root.
SC=${SC:-./stagecraft}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, expect, later, verdicts
ko() { bad "$@"; }

# Two dumps with the same lines but for where the transfers stand.
same_but_transfers() {
  t='/^(SEND|RECV) /d'
  cmp -s "$(sed -E "$t" "$1" >"$1.p"; echo "$1.p")" "$(sed -E "$t" "$2" >"$2.p"; echo "$2.p")" &&
    cmp -s "$(sort "$1" >"$1.s"; echo "$1.s")" "$(sort "$2" >"$2.s"; echo "$2.s")"
}
# Round trips: the streams of the recipe and of its re-import are the same.
roundtrip() { # recipe dialect-format args...   (TORCH=2.14 for the older dialect)
  r=$1; fmt=$2; shift 2
  dia=compute_only; [ "$fmt" = torch-csv-comms ] && dia=compute_comms
  # --time-limit 0: an automatic schedule's search must not depend on how
  # loaded the machine is (the two evaluations below must agree).
  if ! $SC export "$r" "$@" --time-limit 0 --format "$fmt" --torch "${TORCH:-2.15}" -o "$tmp/rt.csv" 2>"$tmp/err"; then
    ko "export $r $fmt $*"; cat "$tmp/err" >&2; return; fi
  later --with tests/py/check_torch_csv.py "$tmp/rt.csv" "PyTorch rules, $r $fmt $*" $dia "${TORCH:-2.15}"
  # A CSV cannot mark where a run of transfers splits into groups (docs/semantics.md#the-semantics):
  # a compute_comms import reads each run as one group, so the markers are
  # compared without that note.
  # An import keeps the file's waits (docs/semantics.md#waits): compared
  # without them (and without the indices and the count they shift).
  strip='s/  \(new group\)$//; s/^ *[0-9]+  //; /^# stagecraft program/d; /^WAIT /d'
  $SC show "$r" "$@" --time-limit 0 --dump | sed -E "$strip" >"$tmp/a.dump"
  costs=$(echo "$@" | tr ' ' '\n' | grep -E '^(tf|tb|tw|tcomm|w_keep)=' | sed 's/^/-D /' | tr '\n' ' ')
  # shellcheck disable=SC2086
  $SC import "$tmp/rt.csv" $costs --dump 2>"$tmp/err" | sed -E "$strip" >"$tmp/b.dump"
  # A compute_comms file is lowered for its reading (docs/semantics.md#lowering-per-mode):
  # where that takes PyTorch's placement, the same passes in the same order
  # and the same transfers, placed otherwise.
  if cmp -s "$tmp/a.dump" "$tmp/b.dump"; then ok
  elif [ "$dia" = compute_comms ] && same_but_transfers "$tmp/a.dump" "$tmp/b.dump"; then ok
  else ko "round trip $r $fmt $*"; diff "$tmp/a.dump" "$tmp/b.dump" | head -5 >&2; cat "$tmp/err" >&2; fi
}
recipes=$($SC list | grep -v '^ ' | awk '{print $1}')
[ -n "$recipes" ] || ko "no stdlib recipes listed"
for r in $(sample $recipes); do
  [ "$r" = dualpipe ] && continue # two copies of the model: refused below
  [ "$r" = seq1f1b ] && continue # sequence slices: PyTorch has none, refused (tests/slices.sh)
  for fmt in torch-csv torch-csv-comms; do
    roundtrip "$r" $fmt
    roundtrip "$r" $fmt -D p=2 -D m=4
    roundtrip "$r" $fmt -D tf=1.5 -D tb=2 -D tw=0.5 -D tcomm=0.25
  done
done
roundtrip examples/custom_order.lua torch-csv
roundtrip examples/custom_block.lua torch-csv-comms
for r in $(sample 1f1b zb-v interleaved); do TORCH=2.14 roundtrip $r torch-csv-comms; done

# The compute_only columns are lock-step time steps (1F1B, p=2, m=2).
$SC export 1f1b -D p=2 -D m=2 --format torch-csv >"$tmp/s.csv"
printf '0F0,0F1,,0B0,,0B1\n,1F0,1B0,1F1,1B1\n' >"$tmp/want.csv"
if cmp -s "$tmp/s.csv" "$tmp/want.csv"; then ok; else ko "1f1b compute_only layout"; cat "$tmp/s.csv" >&2; fi
# compute_comms for PyTorch 2.15: each WAIT_SEND right before the first pass
# that waits for its SEND's group under docs/semantics.md#the-semantics (d0's
# I0 waits for the group of RECV_B0, posted after both sends), the rest before
# the reductions.
$SC export zb-h1 -D p=2 -D m=2 --format torch-csv-comms >"$tmp/s.csv" 2>"$tmp/note"
printf '0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0WAIT_SEND_F0,0WAIT_SEND_F1,0I0,0W0,0RECV_B1,0I1,0W1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1RECV_F1,1I0,1SEND_B0,1F1,1I1,1SEND_B1,1W0,1W1,1WAIT_SEND_B0,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n' >"$tmp/want.csv"
if cmp -s "$tmp/s.csv" "$tmp/want.csv"; then ok; else ko "zb-h1 compute_comms"; cat "$tmp/s.csv" >&2; fi
$SC export zb-h1 -D p=2 -D m=2 --format torch-csv-comms --torch 2.14.1 >"$tmp/s.csv" 2>/dev/null
printf '0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0I0,0W0,0RECV_B1,0I1,0W1,0REDUCE_GRAD\n1RECV_F0,1F0,1RECV_F1,1I0,1SEND_B0,1F1,1I1,1SEND_B1,1W0,1W1,1REDUCE_GRAD\n' >"$tmp/want.csv"
if cmp -s "$tmp/s.csv" "$tmp/want.csv"; then ok; else ko "zb-h1 compute_comms for 2.14"; cat "$tmp/s.csv" >&2; fi
# What export says beside the file: the placement and how to load it.
if grep -qF 'placement (stage -> rank, loop): rank 0: 0, rank 1: 1' "$tmp/note" &&
   grep -qF 'PyTorch >= 2.15: each rank builds its stages and runs _PipelineScheduleRuntime(stages, n_microbatches=2, ...)._load_csv("FILE", format="compute_comms")' "$tmp/note"; then ok
else ko "export note"; cat "$tmp/note" >&2; fi
expect 0 "placement (stage -> rank, V): rank 0: 0 7, rank 1: 1 6, rank 2: 2 5, rank 3: 3 4" -- $SC export zb-v --format torch-csv --torchtitan -o "$tmp/t.csv"
expect 0 "--parallelism.pipeline_parallel_schedule_csv $tmp/t.csv --parallelism.pipeline_parallel_schedule ZBVZeroBubble --parallelism.pipeline_parallel_degree 4, with --training.local_batch_size = 8 x" -- $SC export zb-v --format torch-csv --torchtitan -o "$tmp/t.csv"
expect 0 "--parallelism.pipeline_parallel_schedule Interleaved1F1B --parallelism.pipeline_parallel_degree 4" -- $SC export interleaved --format torch-csv --torchtitan -o "$tmp/t.csv"
expect 2 "--torchtitan: torchtitan loads compute_only files (--format torch-csv)" -- $SC export zb-v --format torch-csv-comms --torchtitan
expect 3 "--torchtitan: torchtitan places stages by its schedule class" -- $SC export "$(printf 'return sc.program { p = 2, m = 1, stages = 3, placement = {0, 1, 1}, order = { "F0 BW0", "F0.0 F0.1 BW0.1 BW0.0" } }' >"$tmp/tab.lua"; echo "$tmp/tab.lua")" --format torch-csv --torchtitan
expect 2 "--torch 1.13: torch.distributed.pipelining reads schedule CSV files from PyTorch 2.4 on" -- $SC export 1f1b --format torch-csv-comms --torch 1.13
expect 2 "--torch 'x': expected a PyTorch version like 2.15 or 2.14.1" -- $SC export 1f1b --format torch-csv-comms --torch x
expect 2 "--torch applies to --format torch-csv and torch-csv-comms only" -- $SC export 1f1b --format json --torch 2.15

# Overlapped pairs (docs/interchange.md#pytorch-pipelining-csv): exported as
# (a;b)OVERLAP_F_B and imported as pairs again (the round trips above);
# dualpipev's orders are PyTorch 2.15's ScheduleDualPipeV's, action for
# action (its own dumps, tests/torch/fixtures); an overlap that is not a
# forward with a backward runs in turn; two copies of the model are refused.
for p in 2 4; do
  m=$((2 * p))
  $SC import tests/torch/fixtures/2.15.0/DualPipeV-p$p-m$m.compute_only.csv --dump | tail -n +2 >"$tmp/a.dump"
  $SC show dualpipev -D p=$p -D m=$m --dump | tail -n +2 >"$tmp/b.dump"
  if cmp -s "$tmp/a.dump" "$tmp/b.dump" && grep -q " + BW s" "$tmp/b.dump"; then ok
  else ko "dualpipev p=$p m=$m is not PyTorch's DualPipeV"; diff "$tmp/a.dump" "$tmp/b.dump" | head -3 >&2; fi
done
expect 0 "(0F3;3B1)OVERLAP_F_B" -- $SC export dualpipev -D p=2 -D m=4 --format torch-csv
expect 0 "--parallelism.pipeline_parallel_schedule DualPipeV" -- $SC export dualpipev -D p=2 -D m=4 --format torch-csv
expect 3 "PyTorch's pipelining runs one copy of the model (this program has 2" -- $SC export dualpipe --format torch-csv-comms
printf '0F0,(0F1;0W0)OVERLAP_F_B,0I0,0I1,0W1\n' >"$tmp/fw.csv"
printf '0F0,0I0,(0F1;0W0)OVERLAP_F_B,0I1,0W1\n' >"$tmp/fw2.csv"
expect 0 "F s0 mb1" -- $SC import "$tmp/fw2.csv" --dump
grep -q " + " "$tmp/out" && ko "F with W imported as a pair" || ok

# Import: the report, JSON, both letter conventions, OVERLAP_F_B, quotes, CRLF.
printf '0F0,0F1,,0I0,0W0,0I1,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\n' >"$tmp/new.csv"
printf '0F0,0F1,,0B0,0W0,0B1,0W1\r\n,1F0,1B0,1F1,1B1,1W0,1W1\r\n' >"$tmp/old.csv"
expect 0 "bubble rate" -- $SC import "$tmp/new.csv"
expect 0 '"dialect": "compute_only", "devices": 2, "stages": 2, "microbatches": 2' -- $SC import "$tmp/new.csv" --json
$SC import "$tmp/new.csv" --dump >"$tmp/new.dump"; $SC import "$tmp/old.csv" --dump >"$tmp/old.dump"
if cmp -s "$tmp/new.dump" "$tmp/old.dump" && grep -q "W s0 mb1" "$tmp/old.dump"; then ok; else ko "old letters (B then W) read as I"; fi
printf '0F0,0B0\n1F0,1B0\n' >"$tmp/full.csv"; printf '0F0,0BW0\n1F0,1BW0\n' >"$tmp/fullold.csv"
expect 0 "BW s1 mb0" -- $SC import "$tmp/full.csv" --dump
expect 0 "BW s1 mb0" -- $SC import "$tmp/fullold.csv" --dump
printf '0F0,0F1,,0I0,0W0,0I1,0W1\n,1F0,(1I0;1F1)OVERLAP_F_B,1I1,1W0,1W1\n' >"$tmp/ov.csv"
expect 0 '"instructions": ' -- $SC import "$tmp/ov.csv" --json
printf '"0F0", 0F1 ,,0I0,0W0,0I1,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\n' >"$tmp/q.csv"
expect 0 "microbatches  2" -- $SC import "$tmp/q.csv"
$SC export zb-h1 -D p=2 -D m=3 --format torch-csv -o "$tmp/c.csv"
mk=$($SC sim zb-h1 -D p=2 -D m=3 -D tf=2 -D tcomm=0.5 --json | sed 's/.*"makespan": \([^,]*\),.*/\1/')
expect 0 "\"makespan\": $mk," -- $SC import "$tmp/c.csv" -D tf=2 -D tcomm=0.5 --json
expect 2 "unknown parameter 'p' for import" -- $SC import "$tmp/c.csv" -D p=2
expect 2 "missing FILE.csv" -- $SC import
expect 2 "cannot read '$tmp/none.csv'" -- $SC import "$tmp/none.csv"
$SC sim zb-h2 --json >"$tmp/sim.json"; $SC export zb-h2 --format torch-csv -o "$tmp/zb.csv"
$SC import "$tmp/zb.csv" --json >"$tmp/imp.json"
if python3 - "$tmp/sim.json" "$tmp/imp.json" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("devices", "stages", "microbatches", "instructions", "makespan", "bubble_rate", "peak_memory", "peak_memory_max", "busy"):
    assert a[k] == b[k], (k, a[k], b[k])
PY
then ok; else ko "import --json agrees with sim --json"; fi

# Import errors: one line, the row and cell named, the exit code of the class.
bad_csv() { # code message csv-text (lib.sh's bad stays: a failed expect calls it)
  printf "$3" >"$tmp/bad.csv"
  expect "$1" "$tmp/bad.csv: $2" -- $SC import "$tmp/bad.csv"
  if [ "$(wc -l <"$tmp/err")" = 1 ]; then ok; else ko "not one line: $2"; fi
}
bad_csv 3 "row 2 (rank 1), cell 3 '1X0': unknown action type 'X'" '0F0,0B0\n1F0,,1X0\n'
bad_csv 3 "row 1 (rank 0), cell 1 'F0': expected <stage><TYPE>[<mb>]" 'F0,0B0\n'
bad_csv 3 "row 1 (rank 0), cell 2 '0F': F needs a microbatch number" '0F0,0F\n'
bad_csv 3 "row 1 (rank 0), cell 1 '0F0x': unexpected characters" '0F0x\n'
bad_csv 3 "row 1 (rank 0), cell 2 '0F1;': unexpected characters" '0F0,0F1;\n'
bad_csv 3 "row 1 (rank 0), cell 1 '(0F0)X': expected (a;b)OVERLAP_F_B" '(0F0)X\n'
bad_csv 3 "the file has no rows" ''
bad_csv 3 "row 1 (rank 0), cell 3: empty cell in a compute_comms file" '0F0,0SEND_F0,,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n'
bad_csv 5 "row 2 (rank 1), cell 3 '3F0': unknown stage 3: stages are 0..S-1, each on one rank, and stage 2 is on no rank" '0F0,0B0\n1F0,1B0,3F0,3B0\n'
bad_csv 5 "row 2 (rank 1), cell 5 '1SEND_F0': unknown stage 2: SEND_F of stage 1 has no peer stage" '0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0,1SEND_F0\n'
bad_csv 5 "row 1 (rank 0), cell 2 '0W0': W before its input gradient (I at cell 3)" '0F0,0W0,0I0\n1F0,1I0,1W0\n'
bad_csv 5 "row 1 (rank 0), cell 2 '0W0': W before its input gradient: stage 0, microbatch 0 has no I" '0F0,0W0\n1F0,1I0,1W0\n'
bad_csv 5 "row 2 (rank 1), cell 2 '1W0': W before its input gradient (B at cell 3)" '0F0,0I0,0W0\n1F0,1W0,1B0\n'
bad_csv 5 "row 1 (rank 0), cell 1 '0I0': backward before its forward" '0I0,0F0,0W0\n1F0,1B0\n'
bad_csv 5 "row 2 (rank 1): missing microbatch: stage 1 has no F of microbatch 1 (the file names microbatches 0..1)" '0F0,0B0,0F1,0B1\n1F0,1B0\n'
bad_csv 5 "row 1 (rank 0): missing microbatch: stage 0 has no backward (I and W, or B) of microbatch 1" '0F0,0B0,0F1\n1F0,1B0,1F1,1B1\n'
bad_csv 5 "row 1 (rank 0): missing microbatch: stage 0 has an I but no W of microbatch 0" '0F0,0I0\n1F0,1B0\n'
bad_csv 5 "row 2 (rank 1), cell 1 '1F1': stage 1 on two ranks: rank 0 (row 1, cell 2) and rank 1" '0F0,1F0,0B0,1B0\n1F1,1B1\n'
bad_csv 5 "row 1 (rank 0), cell 3 '0F0': pass twice: F of stage 0, microbatch 0 is also at cell 1" '0F0,0B0,0F0\n'
bad_csv 5 "row 2 (rank 1) holds no stage" '0F0,0B0\n\n'
bad_csv 5 "row 2 (rank 1), cell 4 '0SEND_B0': stage 0 is on rank 0 (row 1), not on this rank" '0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,0SEND_B0\n'
bad_csv 5 "d1 #0 (F s1 mb0) reads activations from d0 but no RECV of it comes before it" '0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD\n1F0,1RECV_F0,1B0,1SEND_B0,1REDUCE_GRAD\n'
bad_csv 5 "transfers out of posting order: d0 #1 (SEND act s1 mb0 -> d1) and d1 #0 (RECV act s1 mb1 <- d0) pair up" '0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n1RECV_F1,1F1,1RECV_F0,1F0,1B0,1SEND_B0,1B1,1SEND_B1,1REDUCE_GRAD\n'
bad_csv 5 "transfers out of posting order: d0 #2 (SEND act s1 mb1 -> d1) and d1 #0 (RECV act s1 mb0 <- d0) pair up" '0F0,0F1,0SEND_F1,0SEND_F0,0RECV_B0,0RECV_B1,0B0,0B1,0REDUCE_GRAD\n1RECV_F0,1RECV_F1,1F0,1F1,1B0,1B1,1SEND_B0,1SEND_B1,1REDUCE_GRAD\n'
# Two pairs out of posting order on d0, to d2 first in its stream and to d1
# later: the pair named is d0's with the lower peer (the order (sender,
# receiver, rank) the message has always followed). Interleaved at p = 3:
# d0 sends activations to d1 and gradients to d2; each SEND (with its
# wait) is moved after the next one to the same peer.
$SC export interleaved -D p=3 -D m=6 -D v=2 --format torch-csv-comms -o "$tmp/po.csv" 2>/dev/null
python3 - "$tmp/po.csv" <<'EOF'
import sys
rows = open(sys.argv[1]).read().strip().split("\n")
r = rows[0].split(",")
for s, t in (("B0", "B1"), ("F3", "F4")):
    r.remove("3SEND_" + s)
    r.insert(r.index("3SEND_" + t) + 1, "3SEND_" + s)
    r.remove("3WAIT_SEND_" + s)
    r.insert(r.index("3SEND_" + s) + 1, "3WAIT_SEND_" + s)
rows[0] = ",".join(r)
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
EOF
expect 5 "transfers out of posting order: d0 #46 (SEND act s4 mb4 -> d1) and d1 #44 (RECV act s4 mb3 <- d0) pair up (send and receive 10 between d0 and d1" -- $SC import "$tmp/po.csv"
bad_csv 6 "deadlock: d0 #5 (BW s0 mb0): its running group's RECV grad s0 mb0 <- d1 is unmatched, waits for d1; d1 #1 (F s1 mb0)" '0F0,0RECV_B0,0F1,0SEND_F0,0SEND_F1,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n'

# PyTorch 2.15's waits: read, checked against its rules, kept as WAIT.
printf '0F0,0SEND_F0,0RECV_B0,0WAIT_SEND_F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1WAIT_SEND_B0,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n' >"$tmp/w.csv"
expect 0 '"dialect": "compute_comms", "devices": 2, "stages": 2, "microbatches": 1, "instructions": 14' -- $SC import "$tmp/w.csv" --json
bad_csv 3 "row 1 (rank 0), cell 3 '0WAIT_SEND_F0': WAIT_SEND_F without a pending SEND_F of stage 0, microbatch 0 before it on this rank" '0F0,0RECV_B0,0WAIT_SEND_F0,0SEND_F0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0,1WAIT_SEND_B0\n'
bad_csv 3 "row 2 (rank 1), cell 4 '1SEND_B0': SEND_B without its WAIT_SEND_B after it" '0F0,0SEND_F0,0RECV_B0,0WAIT_SEND_F0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n'
bad_csv 3 "row 1 (rank 0), cell 5 '0REDUCE_GRAD': REDUCE_GRAD without its WAIT_REDUCE_GRAD" '0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n'
bad_csv 3 "row 1 (rank 0), cell 5 '0WAIT_REDUCE_GRAD': WAIT_REDUCE_GRAD without a pending REDUCE_GRAD of stage 0" '0F0,0SEND_F0,0RECV_B0,0B0,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n'
bad_csv 3 "row 1 (rank 0), cell 2 '0WAIT_RECV_F0': unknown action type 'WAIT_RECV_F'" '0F0,0WAIT_RECV_F0\n'
# A wait blocks its rank until the send has met its receive
# (docs/semantics.md#waits): each rank waits on its send before posting the
# receive the other's wait needs. PyTorch on gloo hangs on this file
# ("Timed out waiting ... for send operation to complete"); with each wait
# after its rank's receive, it trains.
bad_csv 6 "deadlock: d0 #4 (WAIT act s1 mb1 -> d1): its running group's SEND act s1 mb1 -> d1 is unmatched, waits for d1; d1 #4 (WAIT grad s0 mb0 -> d0): its running group's SEND grad s0 mb0 -> d0 is unmatched, waits for d0; the cycle closes at d0" '0F0,0SEND_F0,0F1,0SEND_F1,0WAIT_SEND_F1,0RECV_B0,0WAIT_SEND_F0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1WAIT_SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n'
printf '0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0WAIT_SEND_F1,0WAIT_SEND_F0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1WAIT_SEND_B0,1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n' >"$tmp/late.csv"
# Crossing cells (docs/modes.md#crossing-cells): with the waits late, rank 0
# posts 0SEND_F1, 0RECV_B0 and rank 1 1SEND_B0, 1RECV_F1. PyTorch posts each
# cell alone; on one NCCL communicator a rank's cells run one at a time and
# a send waits for its receive once the message outgrows NCCL's buffers, so
# each rank blocks in its send. Refused in the nccl mode (before, accepted:
# the run of two cells read as one group); gloo and per-link run it; eager
# sends (messages within --eager-bytes) run it on NCCL too.
cross="deadlock: cells cross: rank 0 cell 4 (0SEND_F1) waits for rank 1 cell 5 (1RECV_F1), behind rank 1 cell 4 (1SEND_B0), which waits for rank 0 cell 5 (0RECV_B0), behind the first; PyTorch posts each cell alone"
expect 6 "$tmp/late.csv: $cross" -- $SC import "$tmp/late.csv"
if [ "$(wc -l <"$tmp/err")" = 1 ] && grep -qF "per-link communicators (--comm per-link) run the file (docs/modes.md#crossing-cells)" "$tmp/err"; then ok
else ko "crossing cells: one line, naming per-link"; fi
expect 6 "$cross" -- $SC import "$tmp/late.csv" --comm nccl -D tcomm=0.5
cp "$tmp/late.csv" "$tmp/late.nccl.csv"
expect 6 "$cross" -- $SC import "$tmp/late.nccl.csv"
expect 6 "$cross" -- $SC import "$tmp/late.csv" --format torch-csv-comms
expect 0 "instructions  24 verified" -- $SC import "$tmp/late.csv" --comm per-link
expect 0 "instructions  24 verified" -- $SC import "$tmp/late.csv" --comm gloo
expect 0 "instructions  24 verified" -- $SC import "$tmp/late.csv" --eager-bytes 4194304 -D msg_bytes=1048576
expect 0 "instructions  24 verified" -- $SC import "$tmp/late.csv" --eager-bytes 1048576 -D msg_bytes=1048576
expect 6 "$cross" -- $SC import "$tmp/late.csv" --eager-bytes 4194304 -D msg_bytes=16777216
expect 6 "$cross" -- $SC import "$tmp/late.csv" -D msg_bytes=1048576
expect 2 "--eager-bytes needs the size of the messages, which a file does not hold: -D msg_bytes=BYTES" -- $SC import "$tmp/late.csv" --eager-bytes 4194304
expect 2 "--eager-bytes 'x': expected bytes >= 0" -- $SC import "$tmp/late.csv" --eager-bytes x
expect 2 "msg_bytes: expected bytes >= 0, got -1" -- $SC import "$tmp/late.csv" -D msg_bytes=-1
# Receive first (rank 0 0RECV_B0, 0SEND_F1; rank 1 1RECV_F1, 1SEND_B0): a
# receive waits for its send at any size, so eager sends do not help.
printf '0F0,0SEND_F0,0F1,0RECV_B0,0SEND_F1,0WAIT_SEND_F0,0WAIT_SEND_F1,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1RECV_F1,1SEND_B0,1WAIT_SEND_B0,1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n' >"$tmp/rfirst.csv"
expect 6 "deadlock: cells cross: rank 0 cell 4 (0RECV_B0) waits for rank 1 cell 5 (1SEND_B0), behind rank 1 cell 4 (1RECV_F1)" -- $SC import "$tmp/rfirst.csv" --eager-bytes 4194304 -D msg_bytes=1024
expect 0 "instructions  24 verified" -- $SC import "$tmp/rfirst.csv" --comm per-link
# The same cells in the rank's order on both sides run on NCCL at any size.
printf '0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0WAIT_SEND_F0,0WAIT_SEND_F1,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1WAIT_SEND_B0,1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n' >"$tmp/same.csv"
expect 0 "instructions  24 verified" -- $SC import "$tmp/same.csv"
# --comm gloo (docs/semantics.md#modes): each transfer alone, running once
# posted. The crossed waits hang there too; PyTorch's DualPipeV runs like ZBV.
expect 6 "deadlock: d0 #4 (WAIT act s1 mb1 -> d1)" -- $SC import "$tmp/bad.csv" --comm gloo
fx=tests/torch/fixtures/2.15.0
expect 0 "makespan      35" -- $SC import $fx/DualPipeV-p4-m8.compute_comms.csv
expect 0 "makespan      27" -- $SC import $fx/DualPipeV-p4-m8.compute_comms.csv --comm gloo
expect 0 "makespan      28.5" -- $SC import $fx/Interleaved1F1B-p4-m8.compute_comms.csv --comm gloo
expect 2 "--comm 'mpi': expected nccl, gloo or per-link" -- $SC import "$tmp/late.csv" --comm mpi
# --comm per-link (docs/semantics.md#modes): each transfer alone, after the
# one before it on its directed link. An early receive deadlocks on one
# communicator per rank and runs per-link (and on gloo, which PyTorch shows:
# tests/torch/corpus.py); per-link's figures lie between gloo's and NCCL's.
printf '0F0,0RECV_B0,0F1,0SEND_F0,0WAIT_SEND_F0,0SEND_F1,0WAIT_SEND_F1,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1WAIT_SEND_B0,1F1,1B1,1SEND_B1,1WAIT_SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n' >"$tmp/early.csv"
expect 6 "deadlock: d0 #4 (WAIT act s1 mb0 -> d1): its running group's RECV grad s0 mb0 <- d1 is unmatched" -- $SC import "$tmp/early.csv"
expect 0 "instructions  24 verified" -- $SC import "$tmp/early.csv" --comm per-link
expect 0 "instructions  24 verified" -- $SC import "$tmp/early.csv" --comm gloo
expect 6 "deadlock: d0 #4 (WAIT act s1 mb1 -> d1)" -- $SC import "$tmp/bad.csv" --comm per-link
expect 0 "makespan      49.5" -- $SC import $fx/DualPipeV-p4-m8.compute_comms.csv -D tcomm=0.5
expect 0 "makespan      42" -- $SC import $fx/DualPipeV-p4-m8.compute_comms.csv -D tcomm=0.5 --comm per-link
expect 0 "makespan      38" -- $SC import $fx/DualPipeV-p4-m8.compute_comms.csv -D tcomm=0.5 --comm gloo
# --comm on recipe commands and the recipe field comm; the JSON dump states it
expect 0 "makespan      39" -- $SC sim interleaved -D p=4 -D m=8 -D tcomm=0.5
expect 0 "makespan      35.5" -- $SC sim interleaved -D p=4 -D m=8 -D tcomm=0.5 --comm per-link
expect 2 "--comm 'x': expected nccl, gloo or per-link" -- $SC check 1f1b --comm x
expect 0 '"comm": "per-link"' -- $SC export 1f1b -D p=2 -D m=2 --format json --comm per-link
expect 0 '"comm": "nccl"' -- $SC export 1f1b -D p=2 -D m=2 --format json
expect 0 "verified in the per-link mode" -- $SC export 1f1b -D p=2 -D m=2 --format torch-csv-comms --comm per-link
printf 'return sc.program{p = 2, m = 4, rule = "1f1b", tcomm = 0.5, comm = "gloo"}\n' >"$tmp/gl.lua"
expect 0 '"comm": "gloo"' -- $SC export "$tmp/gl.lua" --format json
expect 0 '"comm": "nccl"' -- $SC export "$tmp/gl.lua" --format json --comm nccl
# Lowering per mode (docs/semantics.md#lowering-per-mode): with tcomm > 0 the
# lowering keeps PyTorch's placement where it is no slower as streams and
# faster as the file reads (ZB-H1 p = 3: 27 both; ours read back took 29.5).
zb="-D p=3 -D m=7 -D tb=1.5 -D tw=0.5 -D tcomm=0.25"
# shellcheck disable=SC2086
$SC export zb-h1 $zb --format torch-csv-comms -o "$tmp/zb.csv" 2>/dev/null
expect 0 "makespan      27" -- $SC sim zb-h1 $zb
expect 0 "makespan      27" -- $SC import "$tmp/zb.csv" -D tb=1.5 -D tw=0.5 -D tcomm=0.25
# Lowered for a file (SC_LOWER_FILE), the file's reading decides: 1F1B p = 2
# with tcomm = 2 keeps our streams (25) for sim, its file takes PyTorch's
# placement (28; ours read back 30); the same at tcomm = 0 (1F1B-V: 14, ours
# 14.5) and for import --format (ZBVZeroBubble p = 4: 33.5, ours 38); a
# recipe's p:export writes the same file and leaves p:sim() at the streams'.
expect 0 "makespan      25" -- $SC sim 1f1b -D p=2 -D m=4 -D tcomm=2
$SC export 1f1b -D p=2 -D m=4 -D tcomm=2 --format torch-csv-comms -o "$tmp/f1.csv" 2>/dev/null
expect 0 "makespan      28" -- $SC import "$tmp/f1.csv" -D tcomm=2
$SC export 1f1b-v -D p=2 -D m=4 --format torch-csv-comms -o "$tmp/f2.csv" 2>/dev/null
expect 0 "makespan      14" -- $SC import "$tmp/f2.csv"
$SC import $fx/ZBVZeroBubble-p4-m8.compute_only.csv -D tb=1.5 -D tw=0.5 -D tcomm=0.25 \
  --format torch-csv-comms -o "$tmp/f3.csv" 2>/dev/null
expect 0 "makespan      33.5" -- $SC import "$tmp/f3.csv" -D tb=1.5 -D tw=0.5 -D tcomm=0.25
mkdir -p "$tmp/fl"
cat >"$tmp/fl/r.lua" <<'LUA'
local p = sc.program{p = 2, m = 4, rule = "1f1b", tcomm = 2}
local before = p:sim().makespan
p:export("torch-csv-comms", "l.csv")
print("sim", before, p:sim().makespan)
return p
LUA
expect 0 "sim	25.0	25.0" -- $SC check "$tmp/fl/r.lua" --allow-write "$tmp/fl"
cmp -s "$tmp/f1.csv" "$tmp/fl/l.csv" && ok || ko "p:export(torch-csv-comms): not the CLI's file"
# ... and never where ours is faster (gpipe p = 4 in gloo's mode: ours 36,
# PyTorch's 43); our lowering of PyTorch's compute order, written by import
expect 0 "makespan      36" -- $SC sim gpipe -D p=4 -D m=8 -D tcomm=0.5 --comm gloo
$SC import $fx/LoopedBFS-p4-m8.compute_only.csv -D tcomm=0.5 --comm gloo --format torch-csv-comms \
  -o "$tmp/lb.gloo.csv" 2>"$tmp/note" && ok || ko "import --format torch-csv-comms"
grep -q "verified in gloo's mode" "$tmp/note" && ok || ko "import --format: the mode's note"
# the name states the mode: read in gloo's (31.5; the NCCL mode's reading 36)
expect 0 "makespan      31.5" -- $SC import "$tmp/lb.gloo.csv" -D tcomm=0.5
expect 0 "makespan      36" -- $SC import "$tmp/lb.gloo.csv" -D tcomm=0.5 --comm nccl
cp "$tmp/lb.gloo.csv" "$tmp/lb.csv"
expect 0 "makespan      36" -- $SC import "$tmp/lb.csv" -D tcomm=0.5
expect 2 "names the gloo mode, but the program is verified in the nccl mode" -- $SC export 1f1b --format torch-csv-comms -o "$tmp/x.gloo.csv"
expect 2 "names the per-link mode, but the program is verified in the gloo mode" -- $SC import "$tmp/lb.gloo.csv" --format torch-csv-comms -o "$tmp/x.per-link.csv"
expect 2 "-o goes with --format" -- $SC import "$tmp/lb.csv" -o "$tmp/y.csv"
expect 2 "--format writes the program: not with --json" -- $SC import "$tmp/lb.csv" --json --format json
expect 2 "--torch applies to --format torch-csv and torch-csv-comms only" -- $SC import "$tmp/lb.csv" --format json --torch 2.15
# Waits per mode (docs/modes.md#files): per-link with tcomm > 0, each before
# the first pass after its SEND completes: the file reads as the streams
# (25.5; with the NCCL mode's places 26.5)
$SC export zb-v -D p=2 -D m=4 -D tcomm=2 --comm per-link --format torch-csv-comms -o "$tmp/z.per-link.csv" 2>/dev/null
expect 0 "makespan      25.5" -- $SC sim zb-v -D p=2 -D m=4 -D tcomm=2 --comm per-link
expect 0 "makespan      25.5" -- $SC import "$tmp/z.per-link.csv" -D tcomm=2
# Both lowerings of PyTorch's compute orders (bench/lower_vs_torch.py: ours never slower)
if python3 bench/lower_vs_torch.py "$SC" --sample >"$tmp/lvt" 2>&1 && grep -q "lower_vs_torch: 15 passed, 0 failed" "$tmp/lvt"; then ok
else ko "lower_vs_torch --sample: $(tail -3 "$tmp/lvt")"; fi
printf 'return sc.program{p = 2, m = 4, rule = "1f1b", comm = "mpi"}\n' >"$tmp/gl.lua"
expect 3 'program: comm must be "nccl", "gloo" or "per-link"' -- $SC check "$tmp/gl.lua"
# A comms file's reductions (PyTorch scales a stage's gradients by 1/m at
# its REDUCE_GRAD): one per stage, after the stage's backward passes.
bad_csv 5 "row 2 (rank 1): stage 1 has no REDUCE_GRAD: PyTorch scales a stage's gradients by 1/m there, and without it the stage trains to m times its gradients" '0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0\n'
bad_csv 5 "row 1 (rank 0), cell 6 '0REDUCE_GRAD': REDUCE_GRAD twice: stage 0 is also reduced at cell 5" '0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD\n'
bad_csv 5 "row 1 (rank 0), cell 4 '0W0': backward after the REDUCE_GRAD of stage 0 (cell 3)" '0F0,0I0,0REDUCE_GRAD,0W0\n'


# PyTorch's own dumps (tests/torch/fixtures, written by tests/torch/dump.py
# with PyTorch 2.15.0 and 2.14.1: every multi-stage schedule class, both
# dialects, OVERLAP_F_B of DualPipeV, UNSHARD/RESHARD): each imports,
# verifies and simulates, to the shape its name gives, in both dialects.
nfix=0
for f in tests/torch/fixtures/*/*.csv; do
  [ -f "$f" ] || continue
  full || case $f in */2.15.0/*-p4-*) ;; *) continue ;; esac
  nfix=$((nfix+1))
  base=${f##*/}; p=${base#*-p}; p=${p%%-*}; m=${base#*-m}; m=${m%%.*}
  want="\"devices\": $p, \"stages\": $((2*p)), \"microbatches\": $m"
  expect 0 "$want" -- $SC import "$f" --json
done
! full || [ "$nfix" -ge 40 ] && ok || ko "only $nfix PyTorch fixtures"
grep -q 'OVERLAP_F_B' tests/torch/fixtures/2.15.0/DualPipeV-p4-m8.compute_only.csv && ok || ko "no OVERLAP_F_B fixture"
grep -q 'WAIT_SEND_F' tests/torch/fixtures/2.15.0/ZBVZeroBubble-p4-m8.compute_comms.csv && ok || ko "no 2.15 waits fixture"

# FSDP (docs/fsdp.md): PyTorch's own lowerings keep their UNSHARD/RESHARD on
# import (every one proved); a recipe with fsdp exports them and its import
# has the same streams; a misplaced one is refused with one line naming it.
f=tests/torch/fixtures/2.15.0/Interleaved1F1B-p4-m8.compute_comms.csv
n=$(tr ',' '\n' <"$f" | grep -c 'UNSHARD$')
[ "$($SC import "$f" --dump | grep -c 'UNSHARD s')" = "$n" ] && [ "$n" -gt 0 ] && ok || ko "fixture UNSHARDs kept ($n)"
# The FSDP policies (docs/fsdp.md#policies): all three in the full tier, one
# under check (`sample` picks recipe names, not policies).
pols="full auto derived"; full || pols=auto
for pol in $pols; do
  for ma in 1 3; do roundtrip examples/fsdp.lua torch-csv-comms -D policy=$pol -D max_active=$ma; done
done
$SC export examples/fsdp.lua --format torch-csv-comms 2>/dev/null | head -1 | grep -q '^0UNSHARD,4UNSHARD,0F0,' && ok || ko "fsdp export"
# REDUCE_GRAD (docs/fsdp.md#interchange): the fixture's are kept; every
# policy's export has each stage's right after its last weight gradient
# (PyTorch's _add_reduce_grad), with its wait after it.
n=$(tr ',' '\n' <"$f" | grep -c '^[0-9]*REDUCE_GRAD$')
[ "$($SC import "$f" --dump | grep -c 'REDUCE_GRAD s')" = "$n" ] && [ "$n" -gt 0 ] && ok || ko "fixture REDUCE_GRADs kept ($n)"
for pol in $pols; do
  $SC export examples/fsdp.lua -D policy=$pol -D max_active=3 --format torch-csv-comms -o "$tmp/rg.csv" 2>/dev/null
  python3 - "$tmp/rg.csv" 8 <<'PY' && ok || ko "REDUCE_GRAD after the last weight gradient ($pol)"
import re, sys
m = int(sys.argv[2])
for row in open(sys.argv[1]).read().split():
    cells, seen, done = row.split(","), {}, set()
    for i, c in enumerate(cells):
        x = re.fullmatch(r"(\d+)(B|W)(\d+)", c)
        if x:
            s = x[1]
            seen[s] = seen.get(s, 0) + 1
            if seen[s] == m:
                assert cells[i + 1:i + 3] == [s + "REDUCE_GRAD", s + "WAIT_REDUCE_GRAD"], (row, c)
                done.add(s)
    assert len([c for c in cells if c.endswith("REDUCE_GRAD") and "WAIT" not in c]) == len(done) > 0
PY
done
# An imported FSDP file's collectives timed by -D fsdp_time/reduce_time (the
# reduce-scatter after the last pass lengthens the step by its time); a file
# without UNSHARD refuses them.
ms() { $SC import "$@" | awk '/^makespan / {print $2; exit}'; }
[ "$(ms "$f" -D reduce_time=5)" = "$(ms "$f" | awk '{print $1 + 5}')" ] && ok || ko "import -D reduce_time"
[ "$(ms "$f" -D fsdp_time=0.5 -D reduce_time=0)" != "$(ms "$f")" ] && ok || ko "import -D fsdp_time"
printf '0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD\n' >"$tmp/nf.csv"
expect 2 "the file has none" -- $SC import "$tmp/nf.csv" -D fsdp_time=1
bad_csv 5 "d0 #0 (F s0 mb0): stage 0 is sharded" '0F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0UNSHARD,0RESHARD\n'
bad_csv 5 "d0 #0 (UNSHARD s0) has no RESHARD of stage 0 before the optimizer step" '0UNSHARD,0F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n'
bad_csv 5 "d0 #1 (UNSHARD s0): stage 0 is already unsharded" '0UNSHARD,0UNSHARD,0F0,0B0,0RESHARD,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n'
bad_csv 5 "d0 #1 (RESHARD s0): no pass of stage 0 since its UNSHARD" '0UNSHARD,0RESHARD,0UNSHARD,0F0,0B0,0RESHARD,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n'
bad_csv 5 "d0 #3 (BW s0 mb0): stage 0 is sharded" '0UNSHARD,0F0,0RESHARD,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n'
printf 'return sc.program{p = 2, m = 2, rule = "1f1b", recompute = "all", fsdp = true}\n' >"$tmp/fr.lua"
expect 3 "fsdp: not supported with a recompute policy" -- $SC check "$tmp/fr.lua"

# JSON dump: schema fields, one instruction object per stream entry.
$SC export zb-h1 --format json -o "$tmp/p.json"
$SC check zb-h1 >"$tmp/check.txt"
if python3 - "$tmp/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "stagecraft.program" and p["version"] == 1 and p["name"] == "zb-h1"
P, S, m = p["devices"], p["stages"], p["microbatches"]
assert (P, S, m) == (4, 4, 8) and p["placement"] == [0, 1, 2, 3]
for k in ("tf", "tb", "tw", "mem"):
    assert len(p[k]) == S
assert len(p["streams"]) == P and sum(map(len, p["streams"])) == 200
ops = {"F", "B", "W", "BW", "SEND", "RECV", "REDUCE", "OPTIM"}
for st in p["streams"]:
    for i in st:
        assert i["op"] in ops and i["t0"] <= i["t1"]
        if i["op"] in ("SEND", "RECV"):
            assert i["dir"] in ("act", "grad") and 0 <= i["peer"] < P
    assert st[-2]["op"] == "REDUCE" and st[-1]["op"] == "OPTIM"
s = p["simulation"]
assert abs(s["bubble_rate"] - 3 / 27) < 1e-12 and s["peak_memory"] == [4, 4, 4, 4] and s["makespan"] == 27
PY
then ok; else ko "JSON dump schema"; fi

# Chrome trace: valid JSON, a slice per pass and transfer, a flow per RECV.
$SC export interleaved -D tcomm=0.5 --format json -o "$tmp/i.json"
$SC show interleaved -D tcomm=0.5 --trace "$tmp/i.trace"
if python3 tests/py/check_trace.py "$tmp/i.trace" "$tmp/i.json" >"$tmp/chk"; then ok; else ko "trace: $(cat "$tmp/chk")"; fi
# with offload: OFFLOAD and RELOAD are slices of the host row, DROP none
$SC export 1f1b -D p=2 -D m=4 -D offload=all --format json -o "$tmp/o.json"
$SC show 1f1b -D p=2 -D m=4 -D offload=all --trace "$tmp/o.trace" >/dev/null
if python3 tests/py/check_trace.py "$tmp/o.trace" "$tmp/o.json" >"$tmp/chk"; then ok; else ko "trace with offload: $(cat "$tmp/chk")"; fi
$SC export 1f1b --format trace >"$tmp/stdout.trace"
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/stdout.trace"; then ok; else ko "trace on stdout"; fi

# SVG: well-formed XML with a band per device, rendered to PNG.
$SC show zb-h2 -D tcomm=0.2 --svg "$tmp/z.svg" || ko "show --svg"
if command -v xmllint >/dev/null; then
  if xmllint --noout "$tmp/z.svg"; then ok; else ko "svg is not well-formed XML"; fi
fi
if python3 - "$tmp/z.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg"
bands = [g for g in root.iter(ns + "g") if g.get("id", "").startswith("d")]
assert len(bands) == 4, len(bands)
cells = [r for r in bands[0].iter(ns + "rect") if r.find(ns + "title") is not None and r.find(ns + "title").text[0] in "FBW"]
assert len(cells) == 24, len(cells)   # zb-h2 p=4 m=8: F, B, W of 8 microbatches
assert any("SEND" in (t.text or "") for t in bands[0].iter(ns + "title"))
assert len(list(bands[0].iter(ns + "polyline"))) == 1
PY
then ok; else ko "svg structure"; fi
if command -v rsvg-convert >/dev/null; then
  if rsvg-convert "$tmp/z.svg" -o "$tmp/z.png" && [ "$(head -c 8 "$tmp/z.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then ok
  else ko "rsvg-convert could not render the svg"; fi
else
  echo "note: rsvg-convert not found; SVG rendering not tested" >&2
fi
$SC export gpipe --format svg -o "$tmp/g.svg" && xmllint --noout "$tmp/g.svg" 2>/dev/null && ok || ko "export --format svg"

# Writes: nothing half-written; an existing file survives a failed export.
echo keep >"$tmp/keep.csv"
cat >"$tmp/missing.lua" <<'LUA'
return sc.program { p = 2, m = 2, order = { "F0 F1 BW0 BW1", "F0 BW0 F1" } }
LUA
expect 5 "pass missing" -- $SC export "$tmp/missing.lua" --format torch-csv -o "$tmp/keep.csv"
if [ "$(cat "$tmp/keep.csv")" = keep ] && [ "$(ls "$tmp" | grep -c tmp)" = 0 ]; then ok; else ko "failed export touched the target"; fi
expect 2 "cannot write '$tmp/nodir/x.csv'" -- $SC export 1f1b --format torch-csv -o "$tmp/nodir/x.csv"
[ ! -e "$tmp/nodir" ] && ok || ko "nodir created"
$SC export 1f1b --format torch-csv -o "$tmp/keep.csv"
if grep -q 3F7 "$tmp/keep.csv" && [ "$(ls "$tmp" | grep -c tmp)" = 0 ]; then ok; else ko "export replaces the file"; fi
expect 2 "unknown format 'xls'" -- $SC export 1f1b --format xls
expect 2 "export needs --format" -- $SC export 1f1b
expect 2 "--format needs a value" -- $SC export 1f1b --format

# import reads at most --max-mem bytes (issue 21), a device or a pipe only
# as far as its bytes can be text, and not past --max-time
# (docs/sandbox.md#files-read): /dev/zero stops at its first byte, within a
# second of CPU (it was read to the 1 GiB limit: 20 s under load); a FIFO
# whose writer never writes stops at the time limit; a pipe that holds a
# schedule is read.
expect 3 "'/dev/zero': not text: a NUL byte at offset 0" -- sh -c "ulimit -t 1; exec $SC import /dev/zero"
head -c 5000 /dev/zero | tr '\0' ',' >"$tmp/wide.csv"
expect 7 "is larger than the memory limit of 1024 bytes" -- $SC --max-mem 1K import "$tmp/wide.csv"
expect 7 "is larger than the memory limit of 1024 bytes" -- $SC import "$tmp/wide.csv" --max-mem 1K
mkfifo "$tmp/fifo"
# A writer that never writes: this shell holds the FIFO open before the
# reader starts (a background writer could open it after the reader had
# found no writer and read its end).
exec 9<>"$tmp/fifo"
expect 7 "time limit exceeded: reading '$tmp/fifo' ran longer than 1 s (--max-time SECONDS raises it" -- \
  sh -c "ulimit -t 1; exec $SC import '$tmp/fifo' --max-time 1"
exec 9>&-
$SC export 1f1b -D p=2 -D m=2 --format torch-csv -o "$tmp/p.csv" 2>/dev/null
expect 0 "devices       2" -- sh -c "cat '$tmp/p.csv' | $SC import /dev/stdin"
# The reader's tables count against --max-mem (interp's counted memory):
# 2 MB of cells need more than 16 MiB of actions.
python3 -c 'import sys; open(sys.argv[1], "w").write(",".join(["0F0"] * 500000) + "\n")' "$tmp/cells.csv"
expect 7 "memory limit exceeded: the Lua heap and the programs would grow past 16777216 bytes" -- \
  $SC import "$tmp/cells.csv" --max-mem 16M
# A cell quoted in a message has its control bytes escaped (a terminal
# escape in a CSV cannot drive the terminal of whoever imports it).
printf '0F0,0\033[2JX0\n' >"$tmp/esc.csv"
expect 3 "cell 2 '0\\x1b[2JX0': unknown action type" -- $SC import "$tmp/esc.csv"
if grep -q "$(printf '\033')" "$tmp/err"; then ko "a raw escape byte reached stderr"; else ok; fi

# Outputs that are not plain files (issue 21): a FIFO, a device, a link and
# a replaced file's mode stay what they were; several outputs are written
# all or none; a signal that ends an export leaves no temporary file.
runs() { if "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else ko "$* (exit $?)"; sed 's/^/  | /' "$tmp/err" | head -3 >&2; fi; }
mkdir -p "$tmp/w"
mkfifo "$tmp/w/fifo"
cat "$tmp/w/fifo" >"$tmp/fifo.out" & reader=$!
runs $SC export 1f1b --format json -o "$tmp/w/fifo"
wait $reader
if [ -p "$tmp/w/fifo" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/fifo.out"; then ok
else ko "export -o FIFO: replaced, or nothing read through it"; fi
runs $SC show 1f1b --svg /dev/null
[ -c /dev/null ] && ok || ko "show --svg /dev/null replaced the device"
$SC export 1f1b --format torch-csv -o /dev/stdout >"$tmp/devout" 2>"$tmp/err" && grep -q 3F7 "$tmp/devout" && ok || ko "export -o /dev/stdout"
echo old >"$tmp/w/real.csv"; chmod 640 "$tmp/w/real.csv"; ln -s real.csv "$tmp/w/link.csv"
runs $SC export 1f1b --format torch-csv -o "$tmp/w/link.csv"
if [ -L "$tmp/w/link.csv" ] && grep -q 3F7 "$tmp/w/real.csv" && [ "$(stat -c %a "$tmp/w/real.csv")" = 640 ]; then ok
else ko "export through a link: the link or the file's mode changed"; ls -la "$tmp/w" >&2; fi
echo old >"$tmp/w/m.svg"; chmod 600 "$tmp/w/m.svg"
$SC show 1f1b --svg "$tmp/w/m.svg" && [ "$(stat -c %a "$tmp/w/m.svg")" = 600 ] && ok || ko "show --svg reset the mode of the file it replaced"
ln -s nowhere "$tmp/w/dangling"
expect 2 "cannot write '$tmp/w/dangling': it is a symbolic link to a file that does not exist" -- $SC export 1f1b --format json -o "$tmp/w/dangling"
[ -L "$tmp/w/dangling" ] && [ ! -e "$tmp/w/nowhere" ] && ok || ko "a dangling link was replaced"
expect 2 "cannot write '$tmp/w': it is a folder" -- $SC export 1f1b --format json -o "$tmp/w"
echo keep >"$tmp/w/a.svg"
expect 2 "cannot write '$tmp/w/nodir/t.json'" -- $SC show 1f1b --svg "$tmp/w/a.svg" --trace "$tmp/w/nodir/t.json"
[ "$(cat "$tmp/w/a.svg")" = keep ] && ok || ko "show --svg --trace: a.svg replaced although the trace failed"
runs $SC show 1f1b --svg "$tmp/w/a.svg" --trace "$tmp/w/t.json"
grep -q "<svg" "$tmp/w/a.svg" && [ -s "$tmp/w/t.json" ] && ok || ko "show --svg --trace: both written"
leftovers() { ls -a "$1" | grep -c 'tmp' ; }
[ "$(leftovers "$tmp/w")" = 0 ] && ok || { ko "temporary files left"; ls -a "$tmp/w" >&2; }
# A FIFO that no process reads is refused, not waited on forever; a full
# device names its reason (not "Input/output error").
# (It waits those 10 s: make test only.)
! full || expect 2 "cannot write '$tmp/w/fifo': it is a FIFO that no process read within 10 s" -- timeout 30 $SC export 1f1b --format json -o "$tmp/w/fifo"
# (a reader that opens it later than the command, within those 10 s, reads it)
{ sleep 1; cat "$tmp/w/fifo" >"$tmp/fifo2.out"; } &
runs $SC export 1f1b --format json -o "$tmp/w/fifo"
wait
grep -q '"format": "stagecraft.program"' "$tmp/fifo2.out" && ok || ko "export -o FIFO whose reader came 1 s later"
expect 2 "cannot write '/dev/full': No space left on device" -- $SC show 1f1b --svg /dev/full
# A file-size limit: the write fails with its reason in one line (SIGXFSZ
# is ignored: it ended the process without a word), nothing left behind;
# and TERM, HUP, INT during the write.
mkdir -p "$tmp/k"
expect 2 "cannot write '$tmp/k/x.json': File too large" -- sh -c "ulimit -f 4; exec $SC export 1f1b --format json -o $tmp/k/x.json"
[ "$(wc -l <"$tmp/err")" = 1 ] && ok || ko "ulimit -f: not one error line"
[ "$(ls -a "$tmp/k" | grep -vc '^\.\.*$')" = 0 ] && ok || { ko "a file-size limit left a file"; ls -a "$tmp/k" >&2; }
# (a background job starts with SIGINT ignored: python puts it back)
# (make check: TERM; where the write wins the race, reading back its 67 MB
# costs a CPU-second a signal)
for sig in TERM $(full && echo HUP INT); do
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    $SC export gpipe -D p=16 -D m=3000 --format trace -o "$tmp/k/big.json" 2>/dev/null & pid=$!
  n=0; while [ $n -lt 600 ] && ! ls "$tmp/k" | grep -q tmp; do sleep 0.05; n=$((n+1)); done
  seen=$(ls "$tmp/k" | grep -c tmp)
  kill -$sig $pid 2>/dev/null; wait $pid 2>/dev/null; rc=$?
  # Killed: nothing left. Or the write ended first (rc 0, a loaded machine
  # between seeing the temporary file and the signal): the whole file only.
  left=$(ls -a "$tmp/k" | grep -vc '^\.\.*$')
  if [ "$seen" = 1 ] && { [ "$left" = 0 ] ||
       { [ $rc = 0 ] && [ "$(ls "$tmp/k")" = big.json ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/k/big.json"; }; }; then ok
  else ko "SIG$sig during an export: temporary file left (seen: $seen, exit $rc)"; ls -a "$tmp/k" >&2; fi
  rm -f "$tmp/k"/*
done

verdicts
echo "interchange: $pass passed, $fail failed"
[ "$fail" = 0 ]
