#!/bin/sh
# trace.sh — costs from PyTorch traces (docs/costs.md#costs-from-a-pytorch-trace)
# of every PyTorch 2.15 schedule class, recorded here on the CPU: P ranks
# under gloo on loopback (launched as tests/torch/run.sh launches train.py)
# train a small pipelined GPT under each schedule in turn and record STEPS
# steps of each under torch.profiler (tests/torch/trace.py). For each,
# `costs --from-trace` must make a cost file, the same from the traces
# trimmed as the fixtures are (tests/torch/fixtures/trace), with every stage
# timed from every microbatch of every step, times > 0 and each stage's
# backward within a factor 30 of its forward; `sim` of the matching
# stdlib recipe and `import` of the schedule PyTorch ran (its
# compute_comms dump) with the file must give a step in seconds.
# Schedule1F1B recorded without with_stack=True is refused with what to
# record. Nothing here is checked against a wall clock (the machine's load
# decides those figures; bench/bench_trace.sh prints the prediction beside
# the measured step). make check skips it (tests/run.sh; SC_TORCH=run make
# check: three classes at p = 2); make test: every
# class and stagecraft's own CSV at p = 2, four at p = 4, and Interleaved1F1B
# with FSDP2 (two replicas of a 2-rank pipeline: its UNSHARD and
# REDUCE_GRAD give fsdp_time and reduce_time). Needs the venv
# tests/torch/run.sh installs (TORCH_VENVS); skipped without it, saying so.
# Prints "trace: N passed, N failed[, N skipped]".
SC=${SC:-build/stagecraft}
case $SC in /*) ;; *) SC=$PWD/$SC ;; esac
VENVS=${TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/stagecraft/torch}
M=8; STEPS=3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh # ok, bad, full
# make test installs the venv, or waits for the install under way (run.sh,
# beside this suite); make check uses it only where it is installed.
. tests/torch/venv.sh # venv_for
py=$(venv_for 2.15.0 2>"$tmp/why")
if [ -z "$py" ]; then
  echo "trace: skipped: no PyTorch 2.15: $(tail -1 "$tmp/why")"
  echo "trace: 0 passed, 0 failed, 1 skipped"; exit 0
fi
RUNS="2:ScheduleInterleaved1F1B,ScheduleZBVZeroBubble,Schedule1F1B+stack"
full && RUNS="2:ScheduleInterleaved1F1B,ScheduleLoopedBFS,ScheduleInterleavedZeroBubble,ScheduleZBVZeroBubble,ScheduleDualPipeV,ScheduleGPipe,ScheduleGPipe+stack,Schedule1F1B,Schedule1F1B+stack,zb-h1,1f1b,interleaved
4:ScheduleInterleaved1F1B,ScheduleDualPipeV,ScheduleGPipe,Schedule1F1B+stack,ScheduleInterleaved1F1B+fsdp"
# One PyTorch job at a time on the machine (run.sh's lock).
exec 9>"$VENVS/.run-lock"; flock 9

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

record() { # P dir sources... -> P ranks of trace.py write dir/<source>/...
  p=$1; d=$2; shift 2; mkdir -p "$d"; port=$(free_port); pids=""
  for r in $(seq 0 $((p - 1))); do
    timeout 600 "$py" tests/torch/trace.py "$SC" "$r" "$p" "$port" "$d" $M $STEPS "$@" --trim \
      >"$d/log$r" 2>&1 &
    pids="$pids $!"
  done
  rc=0; for q in $pids; do wait "$q" || rc=$?; done
  return $rc
}

recipe_of() { # the stdlib recipe that runs a class's schedule, or nothing
  case $1 in
    ScheduleInterleaved1F1B) echo "interleaved -D v=2" ;;
    ScheduleZBVZeroBubble) echo zb-v ;;
    ScheduleDualPipeV) echo dualpipev ;;
    ScheduleGPipe*) echo gpipe ;;
    Schedule1F1B*) echo 1f1b ;;
    Schedule*) ;;
    *) echo "$1" ;;
  esac
}

echo "$RUNS" | while IFS=: read -r p sources; do echo "$p $sources"; done >"$tmp/runs"
while read -r p sources; do
  d=$tmp/p$p
  # shellcheck disable=SC2086
  if ! record "$p" "$d" $(echo "$sources" | tr , ' '); then
    bad "p=$p: trace.py failed: $(grep -hv -e USDT -e gpuGetDeviceCount "$d"/log* | tail -3)"
    continue
  fi
  for s in $(echo "$sources" | tr , ' '); do
    e=$d/$s; whole="" trimmed=""
    # one pipeline's ranks (with +fsdp, one replica's: p / 2 of them)
    for f in "$e"/rank*.trim.json; do whole="$whole ${f%.trim.json}.json"; trimmed="$trimmed $f"; done
    pp=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["p"])' "$e/steps.json")
    if [ "$s" = Schedule1F1B ]; then # no span of its own without with_stack
      # shellcheck disable=SC2086
      expect 3 "but Schedule1F1B names none: record a single-stage schedule with torch.profiler.profile(with_stack=True)" -- \
        "$SC" costs --from-trace $whole
      continue
    fi
    # shellcheck disable=SC2086
    "$SC" costs --from-trace $whole -o "$e/costs.json" 2>"$e/err" ||
      { bad "$s p=$p: costs --from-trace: $(cat "$e/err")"; continue; }
    # shellcheck disable=SC2086
    "$SC" costs --from-trace $trimmed -o "$e/costs_trim.json" 2>"$e/err" ||
      { bad "$s p=$p: costs --from-trace of the trimmed traces: $(cat "$e/err")"; continue; }
    rec=$(recipe_of "$s")
    if [ -n "$rec" ]; then
      # shellcheck disable=SC2086
      "$SC" sim $rec -D p="$pp" -D m=$M -D costs="$e/costs.json" --json >"$e/sim.json" 2>"$e/err" ||
        bad "$s p=$p: sim $rec with the cost file: $(grep -v warning "$e/err" | tail -1)"
    fi
    if [ -f "$e/schedule.csv" ]; then
      "$SC" import "$e/schedule.csv" -D costs="$e/costs.json" --json >"$e/import.json" 2>"$e/err" ||
        bad "$s p=$p: import of the schedule PyTorch ran, -D costs: $(grep -v warning "$e/err" | tail -1)"
    fi
    # shellcheck disable=SC2086
    "$SC" costs --check $whole --json >"$e/check.json" 2>"$e/err" ||
      bad "$s p=$p: costs --check: $(grep -v -e warning -e note "$e/err" | tail -1)"
    echo "$s $p $e" >>"$tmp/checks"
  done
done <"$tmp/runs"

# The cost files, all in one python3.
[ -f "$tmp/checks" ] && python3 - "$tmp/checks" $M $STEPS <<'PY' >"$tmp/verdicts" 2>&1
import json, os, sys
checks, m, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
SPLIT = {"ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble", "ScheduleDualPipeV", "zb-h1"}
for line in open(checks):
    source, ranks, d = line.split()
    try:
        c = json.load(open(f"{d}/costs.json"))
        t = json.load(open(f"{d}/costs_trim.json"))
        cls, fsdp = source.split("+")[0], source.endswith("+fsdp")
        st = json.load(open(f"{d}/steps.json"))
        S, p = st["stages"], st["p"]
        for k in ("stages", "devices", "placement", "tf", "tb", "tw", "tbw", "tfb", "tcomm",
                  "fsdp_time", "reduce_time", "samples"):
            assert c.get(k) == t.get(k), f"the trimmed traces give another {k}: {t.get(k)} for {c.get(k)}"
        assert c["stages"] == S and c["devices"] == p, (c["stages"], c["devices"])
        if cls in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV"):
            assert c["placement"] == [s if s < p else 2 * p - 1 - s for s in range(S)], c["placement"]
        else:
            assert c["placement"] == [s % p for s in range(S)], c["placement"]
        n, sm = m * steps, c["samples"]
        if cls == "ScheduleDualPipeV":   # some passes run in pairs: tfb
            assert all(0 < x <= n for x in sm["tf"]) and "tfb" in c, sm
        else:
            assert sm["tf"] == [n] * S, sm
            assert sm["tb" if cls in SPLIT else "tbw"] == [n] * S, sm
        for s in range(S):
            f, b = c["tf"][s], c["tb"][s] + c["tw"][s]
            assert f > 0 and b > 0, f"stage {s}: tf {f}, tb + tw {b}"
            # a bound on gross misreading only: a loaded machine stretches passes unevenly
            assert 1 / 300 < b / f < 300, f"stage {s}: tb + tw {b:.3g} s against tf {f:.3g} s"
        ms = c["measured"]
        assert ms["steps"] == steps and ms["microbatches"] == m and ms["backend"] == "gloo", ms
        assert ms["fsdp"] is fsdp, ms
        if fsdp:   # FSDP's all-gather and reduce-scatter, one per stage and step
            assert c["fsdp_time"] > 0 and c["reduce_time"] > 0, c
            assert sm["fsdp_time"] >= S * steps and sm["reduce_time"] == S * steps, sm
        line = (f"{source} p={p}: {S} stages, tf {1e3 * sum(c['tf']) / S:.3g} ms, "
                f"tb+tw {1e3 * sum(c['tb'][s] + c['tw'][s] for s in range(S)) / S:.3g} ms")
        for what, f, key in (("sim", "sim.json", "predicted_step_time_s"),
                             ("import", "import.json", "predicted_step_time_s")):
            if os.path.exists(f"{d}/{f}") and os.path.getsize(f"{d}/{f}"):
                j = json.load(open(f"{d}/{f}"))
                assert j.get("time_unit") == "s" and j[key] > 0, (what, j)
                line += f"; {what} {j[key]:.4g} s"
        k = json.load(open(f"{d}/check.json"))   # costs --check: the schedule of the traces
        assert len(k["steps_s"]) == steps and len(k["own_s"]) == steps, k
        if os.path.exists(f"{d}/import.json"):   # is the one PyTorch dumped
            i = json.load(open(f"{d}/import.json"))["predicted_step_time_s"]
            assert abs(k["predicted_s"] - i) <= 1e-7 * i, (k["predicted_s"], i)
        line += f"; check {k['predicted_s']:.4g} s (own error {100 * k['own_error']:+.1f}%)"
        line += f"; measured {json.load(open(f'{d}/steps.json'))['median_s']:.4g} s"
        print("ok " + line)
    except Exception as e:
        print(f"FAIL {source} ({ranks} ranks): {type(e).__name__}: {e}")
PY
[ -f "$tmp/verdicts" ] && while IFS= read -r v; do
  case $v in
    "ok "*) ok; echo "trace: ${v}" ;;
    *) bad "${v#FAIL }" ;;
  esac
done <"$tmp/verdicts"
echo "trace: $pass passed, $fail failed"
[ $fail = 0 ]
