#!/bin/sh
# bench_seq1f1b.sh — Seq1F1B against 1F1B in simulation (docs/slices.md,
# issue 49 item 3; the paper: Sun et al., arXiv 2406.03488). The grid is
# the authors' experiment script's (github.com/thunlp/Seq1F1B, exp.sh):
# GPT models of 2.7B (32 layers, hidden 2560), 7B (32, 4096) and 13B (40,
# 5120), sequences of 16k and 32k tokens, one sequence a microbatch,
# p = 8 pipeline devices, m = 8, 16, 32 microbatches, K = 4 slices, the
# costs the model gives (-D layers/hidden/seq: FLOPs at 400 TFLOP/s, the
# attention's quadratic term, vocab 50257 on the first and last stages).
# For each point: the throughput ratio (1F1B's step / Seq1F1B's), the
# activation ratio (Seq1F1B's peak activation bytes / 1F1B's) and the
# total ratio (peak bytes with parameters, gradients and AdamW states),
# for the even split and the paper's computation-wise one (compute). Then
# the geometric means against the paper's headline: 1.14x the throughput
# at half the memory. Prints a table; passes or fails nothing.
SC=${SC:-./stagecraft}
ms=${SEQ_MS:-"8 16 32"}
python3 - "$SC" "$ms" <<'PY'
import json, math, subprocess, sys
sc, ms = sys.argv[1], [int(x) for x in sys.argv[2].split()]
models = [("2.7B", 32, 2560), ("7B", 32, 4096), ("13B", 40, 5120)]

def sim(recipe, extra):
    out = subprocess.run([sc, "sim", recipe, "--json"] + [a for k, v in extra.items()
                         for a in ("-D", "%s=%s" % (k, v))], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)

rows, g = [], {"even": [[], [], []], "compute": [[], [], []]}
print("model  seq    m   split    1f1b s   seq1f1b s  throughput  activations  total")
for name, layers, hidden in models:
    for seq in (16384, 32768):
        for m in ms:
            base = dict(p=8, m=m, layers=layers, hidden=hidden, seq=seq, vocab=50257, batch=1)
            a = sim("1f1b", base)
            for split in ("even", "compute"):
                b = sim("seq1f1b", dict(base, slices=4, slice_split=split))
                r = (a["makespan"] / b["makespan"],
                     b["peak_activation_bytes_max"] / a["peak_activation_bytes_max"],
                     b["total_bytes_max"] / a["total_bytes_max"])
                for i in range(3):
                    g[split][i].append(r[i])
                print("%-6s %-6d %-3d %-8s %-8.4g %-10.4g %-11.3f %-12.3f %.3f" %
                      (name, seq, m, split, a["makespan"], b["makespan"], *r))
for split in ("even", "compute"):
    gm = [math.exp(sum(map(math.log, v)) / len(v)) for v in g[split]]
    print("geomean %-8s throughput %.3fx  activations %.3f  total memory %.3f  (%d points)" %
          (split, gm[0], gm[1], gm[2], len(g[split][0])))
print("paper (abstract): 1.14x throughput, half the memory footprint")
PY
