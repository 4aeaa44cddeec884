#!/usr/bin/env python3
"""bench_bound_grid.py — how far `plan`'s pick is from the lower bound of
its class (docs/bound.md, docs/plan.md), over a grid: p in {4, 8, 16},
m in {8, 16, 32, 64}, three caps (p/2, 3p/4 and p units: 1F1B peaks at p)
and three cost sets:

  zb     the Zero Bubble paper's ratios (tf = tb = 1, tw = 0.63) and its
         communication (tcomm = 0.016);
  tb1.5  a slower backward: tb = 1.5 (tf = tw = 1), no communication;
  comm   heavy communication: tcomm = 0.3 (tf = tb = tw = 1).

Every point is one `plan --json --time-limit 0` (the automatic schedulers'
heuristics only: the same figures on any machine). It prints a line a
point (the pick, its makespan, the bound, the gap), then the median and
the maximum gap, and checks the bound on the way: every candidate within
the cap at or above it (a row above its makespan would be a false bound).

  SC=build/stagecraft python3 bench/bench_bound_grid.py [--p 4,8] [--m 8,16]
"""
import json
import os
import statistics
import subprocess
import sys

COSTS = {
    "zb": ["-D", "tw=0.63", "-D", "tcomm=0.016"],
    "tb1.5": ["-D", "tb=1.5"],
    "comm": ["-D", "tcomm=0.3"],
}


def arg(name, default):
    if name in sys.argv:
        return [int(x) for x in sys.argv[sys.argv.index(name) + 1].split(",")]
    return default


def plan(sc, p, m, cap, costs):
    cmd = [sc, "plan", "-D", "p=%d" % p, "-D", "m=%d" % m, "--cap", "%g" % cap,
           "--time-limit", "0", "--json"] + COSTS[costs]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    sc = os.environ.get("SC", "./stagecraft")
    gaps, false_bounds, rows = [], 0, 0
    for p in arg("--p", [4, 8, 16]):
        for m in arg("--m", [8, 16, 32, 64]):
            for cap in (p / 2, 3 * p / 4, p):
                for costs in COSTS:
                    j = plan(sc, p, m, cap, costs)
                    for c in j["candidates"]:
                        if c.get("makespan") is None or c.get("lower_bound") is None:
                            continue
                        rows += 1
                        if c["lower_bound"] > c["makespan"] * (1 + 1e-9) + 1e-9:
                            false_bounds += 1
                            print("FALSE BOUND", p, m, cap, costs, c["recipe"], c["knobs"],
                                  c["makespan"], c["lower_bound"])
                    if j["pick"] is None:
                        print("p=%-2d m=%-2d cap %-5g %-6s no pick" % (p, m, cap, costs))
                        continue
                    c = j["candidates"][j["pick"]]
                    gaps.append((c["gap"], p, m, cap, costs))
                    name = c["recipe"] + (" " + c["knobs"] if c["knobs"] else "")
                    print("p=%-2d m=%-2d cap %-5g %-6s %-34s %9.4g  bound %9.4g  gap %6.2f %%"
                          % (p, m, cap, costs, name, c["makespan"], c["lower_bound"],
                             100 * c["gap"]))
    g = sorted(x[0] for x in gaps)
    worst = max(gaps)
    print("%d points: median gap %.2f %%, maximum %.2f %% (p=%d m=%d cap %g %s); "
          "%d within 2 %%; %d candidate rows, %d bounds above their makespan"
          % (len(g), 100 * statistics.median(g), 100 * worst[0], worst[1], worst[2],
             worst[3], worst[4], sum(1 for x in g if x <= 0.02), rows, false_bounds))
    return 1 if false_bounds else 0


if __name__ == "__main__":
    sys.exit(main())
