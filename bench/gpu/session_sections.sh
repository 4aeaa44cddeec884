# bench/gpu/session_sections.sh — the five sections of bench/gpu/session.sh,
# sourced by it and run one at a time under their own time limit
# (`session.sh --section N`). Each writes its raw output to stdout (the
# driver keeps it as sN.log), its files under $W/sN/ (into raw.tar.gz) and
# its summary rows to $W/sN.rows as soon as each is known, so that a section
# stopped by its limit still leaves the rows it finished. Needs BUILD, SC,
# W and SMALL from the driver. Tested by tests/gpusession.sh.
R=bench/gpu/session_report.py
rows() { cat >>"$W/s$N.rows"; }
row() { echo "$*" >>"$W/s$N.rows"; }
begin() { N=$1; D=$W/s$1; mkdir -p "$D"; }
say() { echo; echo "==== $* ($(date -u +%H:%M:%S))"; }
# runjson.py's verdict on a --check result: "ok" or "FAILED: why"
verdict() { # file transport
  stand=; [ "${SC_CUDASTUB:-0}" = 1 ] && stand=--stand-in
  why=$(python3 tests/py/runjson.py "$1" --tol 1e-4 --backend cuda $stand --transport "$2" 2>&1) &&
    echo ok || echo "FAILED: $(echo "$why" | head -n 1)"
}
gpus() { cat "$W/gpus" 2>/dev/null || echo 1; }
# moe_config FILE HIDDEN INTER HEADS KV LAYERS: tiny-mixtral.json (4 experts,
# top 2) at that size
moe_config() {
  python3 -c 'import json, sys; c = json.load(open("tests/fixtures/models/tiny-mixtral.json")); h, i, a, k, l = map(int, sys.argv[2:]); c.update(hidden_size=h, intermediate_size=i, num_attention_heads=a, num_key_value_heads=k, num_hidden_layers=l, vocab_size=32000 if h > 256 else 256); json.dump(c, open(sys.argv[1], "w"), indent=1)' "$@"
}

# ---- 1. the environment, the unit tests, a few recipes --check -----------
sec_1() {
  begin 1
  say "environment"
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), host $(hostname), $(uname -srm), $(nproc) cores"
  nvidia-smi 2>&1 | head -20
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1
  python3 -c 'import nvidia.nccl, os; d = os.path.join(list(nvidia.nccl.__path__)[0], "lib"); print("nccl wheel:", d, os.listdir(d))' 2>&1
  command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>&1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for f in "$SC" "$BUILD/libstagecraft_cuda.so"; do echo "ldd $f:"; ldd "$f" 2>&1; done
  say "probe"
  if ! timeout 60 "$SC" run 1f1b -D p=1 -D m=1 --backend cuda --json >"$D/probe.json" 2>"$D/probe.err"; then
    cat "$D/probe.err"
    row "the cuda backend does not run: $(head -n 1 "$D/probe.err")"
    return 1
  fi
  g=$(timeout 60 "$SC" run 1f1b -D p=8 -D m=8 -D hidden=8 -D vocab=8 -D seq=1 -D batch=1 --backend cuda --json 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["gpus"])')
  echo "${g:-1}" >"$W/gpus"
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["gpu"])' "$D/probe.json" >"$W/gpu"
  drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  row "GPU: $(cat "$W/gpu") x $(gpus)${drv:+, driver $drv}; $(nproc) CPU cores."
  row ""
  row "| test | result | detail |"
  row "|---|---|---|"
  for t in backend decoder moe graph; do
    say "gpu_test_${t}_cuda"
    timeout 90 "$BUILD/gpu_test_${t}_cuda" >"$D/unit_$t.txt" 2>&1; rc=$?
    cat "$D/unit_$t.txt"
    sum=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$D/unit_$t.txt" | tail -n 1)
    res=ok; { [ $rc = 0 ] && echo "$sum" | grep -q ' 0 failed'; } || res="FAILED (exit $rc)"
    row "| gpu_test_${t}_cuda | $res | ${sum:-no summary} |"
  done
  trs=cuda-local; [ "$(gpus)" -ge 2 ] && trs="cuda-local nccl"
  for t in $trs; do
    for r in 1f1b zb-h1 zb-v dualpipev; do
      say "run $r --check ($t)"
      STAGECRAFT_TRANSPORT=$t timeout 90 "$SC" run $r -D p=2 -D m=4 --backend cuda --check --json \
        >"$D/chk_${r}_$t.json" 2>"$D/chk.err"
      cat "$D/chk.err"
      python3 $R check "run $r p=2 m=4 --check ($t)" "$D/chk_${r}_$t.json" "$(verdict "$D/chk_${r}_$t.json" "$t")" | rows
    done
  done
  [ "$(gpus)" -ge 2 ] || row "| nccl between devices | not run | one GPU: NCCL needs a GPU per device (the unit test's one-GPU communicator ran) |"
}

# ---- 2. the decoder at Llama-3-8B width ------------------------------------
sec_2() {
  begin 2
  CFG=tests/fixtures/models/llama3-8b.json
  CHK="-D layers=2 -D vocab=1024 -D seq=16 -D batch=1"
  SZ="-D layers=4 -D vocab=32768 -D seq=1024 -D batch=1"
  GEMM="4096 4096 4096 8192"; PMAX=20
  if [ "$SMALL" = 1 ]; then
    CFG=tests/fixtures/models/run-llama.json; CHK="-D layers=2"; SZ="-D layers=2"; GEMM="64 64"; PMAX=2
  fi
  row "Model: $CFG; --check at $CHK; timed at $SZ; zb-h1 and 1f1b, p = 2 emulated on the GPU, m = 4."
  row ""
  row "| check | result | detail |"
  row "|---|---|---|"
  say "run zb-h1 --check at $CHK"
  # shellcheck disable=SC2086
  timeout 150 "$SC" run zb-h1 --model $CFG $CHK -D p=2 -D m=4 --backend cuda --check --json >"$D/check.json" 2>"$D/check.err"
  cat "$D/check.err"
  python3 $R check "decoder zb-h1 p=2 m=4 --check" "$D/check.json" "$(verdict "$D/check.json" cuda-local)" | rows
  say "GEMM peak (gpubench_bench_gemm $GEMM)"
  # shellcheck disable=SC2086
  timeout 60 "$BUILD/gpubench_bench_gemm" $GEMM >"$D/gemm.txt" 2>&1
  cat "$D/gemm.txt"
  tf=$(python3 $R gemm "$D/gemm.txt")
  say "run 1f1b --profile at $SZ"
  base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null)
  smi=
  if [ -n "$base" ]; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 100 >"$D/smi.txt" 2>/dev/null &
    smi=$!
  fi
  # shellcheck disable=SC2086
  "$SC" run 1f1b --model $CFG $SZ -D p=2 -D m=4 --backend cuda --profile "$D/prof.json" \
    --profile-max-time $PMAX --json >"$D/run.json" 2>"$D/run.err"
  [ -n "$smi" ] && kill "$smi" 2>/dev/null
  cat "$D/run.err"
  say "a fresh process with the profile"
  # shellcheck disable=SC2086
  "$SC" run 1f1b --model $CFG $SZ -D p=2 -D m=4 -D costs="$D/prof.json" --warmup 2 --backend cuda \
    --json >"$D/fresh.json" 2>"$D/fresh.err"
  cat "$D/fresh.err"
  used=$(python3 $R smi "$D/smi.txt" "${base:-0}")
  row ""
  row "| decoder | recipe | devices | model flops a step | step (s) | MFU (of the GEMM peak, TFLOP/s) | predicted (s) | error | fresh process | bytes per device, predicted / runtime's (params+grads+optimizer+activations) | GPU memory used over the start (nvidia-smi, as cudaMemGetInfo) |"
  row "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
  python3 $R decoder "$D/run.json" "$D/fresh.json" "$tf" "$used" "$(cat "$W/gpu" 2>/dev/null)" | rows
  row ""
  row "The allocator's own peak (cudaMemPoolAttrUsedMemHigh) is not reported by \`run\`; the GPU's"
  row "memory used includes the CUDA context, cuBLAS's workspace and the pool's kept blocks."
}

# ---- 3. CUDA graphs on and off -----------------------------------------------
sec_3() {
  begin 3
  if [ "$SMALL" = 1 ]; then export SC_BENCH_GRAPH_SIZES="32 64" SC_BENCH_GRAPH_SEQ=16; fi
  say "bench/gpu/graphs.sh"
  BUILD=$BUILD SC=$SC sh bench/gpu/graphs.sh >"$D/graphs.txt" 2>&1; rc=$?
  cat "$D/graphs.txt"
  row "bench/gpu/graphs.sh (hidden ${SC_BENCH_GRAPH_SIZES:-1024 4096}; bench/gpu/README-graphs.md):"
  row ""
  grep '^|' "$D/graphs.txt" | rows
  grep -E 'FAILED|differ' "$D/graphs.txt" | sed 's/^/    /' | rows
  grep '^| [0-9]* | ' "$D/graphs.txt" | tail -n 1 | awk -F'|' '{ gsub(/ /, "", $2); gsub(/^ | $/, "", $6);
    gsub(/^ | $/, "", $7); print "graphs at hidden " $2 ": executor " $6 " of the step eager, " $7 " with graphs" }' \
    >>"$SESSION_HEADLINE"
  return $rc
}

# ---- 4. MoE: ep = 2 dualpipev against 1f1b ---------------------------------
sec_4() {
  begin 4
  # Mixtral's shape, smaller (there is no -D for the experts' width: a config)
  EPM="-D seq=1024 -D batch=8"; shape="2048 4096 16 4 8"
  [ "$SMALL" = 1 ] && EPM="-D seq=8 -D batch=2" && shape="32 64 4 2 4"
  # shellcheck disable=SC2086
  moe_config "$D/moe.json" $shape
  say "bench/gpu/ep.sh"
  [ "$SMALL" = 1 ] && export EP_MODEL="-D hidden=32 -D layers=8 $EPM" EP_INTER=64 EP_PMAX=2
  BUILD=$BUILD SC=$SC sh bench/gpu/ep.sh >"$D/ep.txt" 2>&1; rc=$?
  cat "$D/ep.txt"
  row "bench/gpu/ep.sh on $(gpus) GPU(s) (one GPU: the ep = 2 devices emulated on it):"; row ""; row '```'; rows <"$D/ep.txt"; row '```'
  [ "$(gpus)" -ge 2 ] && return $rc
  X=tests/fixtures/models/run-mixtral.json
  row ""
  row "And dualpipev against 1f1b at ep = 1 (no all-to-all), p = 2 emulated, m = 4:"
  row ""
  row "| check | result | detail |"
  row "|---|---|---|"
  say "MoE --check at ep = 1"
  timeout 90 "$SC" run dualpipev --model $X -D p=2 -D m=4 --backend cuda --check --json >"$D/moe_check.json" 2>"$D/moe_check.err"
  cat "$D/moe_check.err"
  python3 $R check "MoE dualpipev p=2 m=4 --check" "$D/moe_check.json" "$(verdict "$D/moe_check.json" cuda-local)" | rows
  row ""
  row "| MoE (hidden, experts' width, heads, KV heads, layers: $shape; $EPM; ep = 1) | transport | step (s) | predicted from its profile (s) | error | / 1f1b | loss |"
  row "|---|---|---:|---:|---:|---:|---|"
  pmax=15; [ "$SMALL" = 1 ] && pmax=2
  for r in 1f1b dualpipev; do
    say "run $r --profile (MoE, ep = 1)"
    # shellcheck disable=SC2086
    "$SC" run $r --model "$D/moe.json" $EPM -D p=2 -D m=4 --backend cuda \
      --profile "$D/prof_$r.json" --profile-max-time $pmax --json >"$D/moe_$r.json" 2>"$D/moe.err"
    cat "$D/moe.err"
    b=; [ $r = dualpipev ] && b=$D/moe_1f1b.json
    # shellcheck disable=SC2086 # no base for 1f1b itself
    python3 $R moe "$r" "$D/moe_$r.json" $b | rows
  done
  return $rc
}

# ---- 5. compute-sanitizer on small runs, with the time left ----------------
sec_5() {
  begin 5
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
  if [ -z "$CS" ]; then
    row "compute-sanitizer not found (it comes with the CUDA toolkit): not run."
    return 0
  fi
  row "| tool | program | exit | summary |"
  row "|---|---|---:|---|"
  for what in "memcheck run" "memcheck decoder" "racecheck graph"; do
    set -- $what
    case $2 in
      run) cmd="$SC run zb-h1 -D p=2 -D m=4 --backend cuda --check" ;;
      decoder) cmd="$SC run zb-h1 --model tests/fixtures/models/run-llama.json -D p=2 -D m=4 --backend cuda --check" ;;
      graph) cmd="$BUILD/gpu_test_graph_cuda" ;;
    esac
    say "$1 on $cmd"
    # shellcheck disable=SC2086
    STAGECRAFT_TIMEOUT=600 "$CS" --tool "$1" --error-exitcode 99 $cmd >"$D/cs_$1_$2.txt" 2>&1; rc=$?
    cat "$D/cs_$1_$2.txt"
    row "| $1 | ${cmd#"$BUILD/"} | $rc | $(grep -m1 'ERROR SUMMARY' "$D/cs_$1_$2.txt" || echo '-') |"
  done
}
