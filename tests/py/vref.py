#!/usr/bin/env python3
"""vref.py — an independent evaluator of the V-shape schedules as the
Controllable Memory paper (arXiv 2405.15362) and the Zero Bubble paper
(arXiv 2401.10241, ZB-V) build them, written from the papers' descriptions
(docs/recipes.md, docs/blocks.md#blocks-as-values) for tests and benchmarks: the figures stagecraft
must reach or beat (issue 19). It shares no code with stagecraft.

Passes of one device, as the papers name them (two chunks per device, V
placement: chunk 0 is stage d, chunk 1 stage 2p-1-d):
  F  forward of chunk 0   (flows device 0 -> p-1)
  f  forward of chunk 1   (flows device p-1 -> 0; on p-1 right after F)
  B  backward of chunk 1  (flows device 0 -> p-1; on 0 after f: the loss)
  b  backward of chunk 0  (flows device p-1 -> 0; on p-1 after B)
  W, w  the weight gradients of B and b (same device, after them)
An order is a list per device of (kind, mb). Costs: F, f take tf, B, b tb,
W, w tw (a chunk's share); c is the transfer time between devices.

  timing(orders, p, m, tf, tb, tw, c) -> figures (makespan, bubble rate as
      stagecraft defines it: 1 - max busy / max span, peak in units)
  vblock(p, m, kind)       V-Half / V-Min: block, repeat, the paper's
                           reorder of warm-up and cool-down in slots
  zbv_greedy(p, m, tf, tb, tw, c, mem)   the Zero Bubble paper's cost-aware
                           ZB-V heuristic (mem in units)
  vzb(p, m, tf, tb, tw, c, mem)    V-ZB: the best block of the paper's
                           family (appendix) with the warm-up and cool-down
                           restructured into staircases

python3 tests/py/vref.py P M KIND [tf tb tw c] prints the figures and the
orders.
"""
import sys

KINDS = "FfBbWw"
MEMD = {"F": 1, "f": 1, "B": 0, "b": 0, "W": -1, "w": -1}


def dep_of(kind, d, p):
    """The pass (kind, device) that (kind, d) waits for, or None, and
    whether it crosses devices."""
    if kind == "F":
        return ("F", d - 1, True) if d > 0 else None
    if kind == "f":
        return ("f", d + 1, True) if d < p - 1 else ("F", d, False)
    if kind == "B":
        return ("B", d - 1, True) if d > 0 else ("f", d, False)
    if kind == "b":
        return ("b", d + 1, True) if d < p - 1 else ("B", d, False)
    if kind == "W":
        return ("B", d, False)
    return ("b", d, False)


def timing(orders, p, m, tf, tb, tw, c=0.0):
    """Eager timing of per-device orders: each pass as soon as its device is
    free and what it needs is done (+ c across devices)."""
    cost = {"F": tf, "f": tf, "B": tb, "b": tb, "W": tw, "w": tw}
    end = {}
    start = {}
    pc = [0] * p
    tfree = [0.0] * p
    left = sum(len(o) for o in orders)
    while left:
        moved = False
        for d in range(p):
            o = orders[d]
            while pc[d] < len(o):
                k, mb = o[pc[d]]
                dep = dep_of(k, d, p)
                t = tfree[d]
                if dep:
                    key = (dep[0], dep[1], mb)
                    if key not in end:
                        break
                    t = max(t, end[key] + (c if dep[2] else 0.0))
                start[(k, d, mb)] = t
                end[(k, d, mb)] = t + cost[k]
                tfree[d] = t + cost[k]
                pc[d] += 1
                left -= 1
                moved = True
        if not moved:
            raise ValueError("orders deadlock")
    busy = span = mk = 0.0
    peak = []
    for d in range(p):
        o = orders[d]
        b = sum(cost[k] for k, _ in o)
        s0 = start[(o[0][0], d, o[0][1])]
        e1 = end[(o[-1][0], d, o[-1][1])]
        busy, span, mk = max(busy, b), max(span, e1 - s0), max(mk, e1)
        cur = top = 0
        for k, _ in o:
            cur += MEMD[k]
            top = max(top, cur)
        peak.append(top / 2)
    return {"makespan": mk, "bubble_rate": 1 - busy / span if span else 0.0,
            "peak": peak, "peak_max": max(peak), "start": start}


def check_orders(orders, p, m):
    """Every pass once; each device's W after its B (chunk by chunk)."""
    for d in range(p):
        seen = {}
        for k, mb in orders[d]:
            assert (k, mb) not in seen, (d, k, mb)
            seen[(k, mb)] = len(seen)
            if k in "Ww":
                assert seen.get(("B" if k == "W" else "b", mb), 1 << 30) < seen[(k, mb)], (d, k, mb)
        assert len(seen) == 6 * m, (d, len(seen))


# ---------------------------------------------------------------------------
# V-Half and V-Min: the block, repeated every 6 slots, then the reorder.

def block_offsets(p, kind):
    """Slot of F, f, B, b of microbatch 0 on device i (docs/blocks.md#blocks-as-values)."""
    out = []
    for i in range(p):
        if kind == "min":
            c = 2 if p % 3 == 0 else 0
            out.append({"F": i, "f": 2 * p - i - 1, "B": 2 * p + c + i, "b": 4 * p + c - i - 1})
        else:
            c = 3 if p % 2 == 0 else 0
            out.append({"F": 2 * i, "f": 3 * p - i - 2, "B": 3 * p + c + 2 * i - 1,
                        "b": 6 * p + c - i - 2})
    return out


class Grid:
    """One device's passes on the slot grid: slot -> (kind, mb) and back.
    W's are either explicit (kind 'W', generic: the n-th W follows the n-th
    backward) or implied (each free slot retires one pending backward)."""

    def __init__(self):
        self.at = {}
        self.slot = {}

    def put(self, k, mb, t):
        assert t not in self.at, (k, mb, t, self.at[t])
        self.at[t] = (k, mb)
        self.slot[(k, mb)] = t

    def move(self, k, mb, t):
        del self.at[self.slot[(k, mb)]]
        self.put(k, mb, t)

    def last(self):
        return max(self.at) if self.at else -1

    def profile(self, implied):
        """Memory after each slot 0..last (chunks), W's explicit or implied."""
        cur = pend = 0
        prof = []
        for t in range(self.last() + 1):
            x = self.at.get(t)
            if x:
                cur += MEMD[x[0]] if x[0] in "FfWw" else 0
                if x[0] in "Bb" and implied:
                    pend += 1
            elif implied and pend:
                cur -= 1
                pend -= 1
            prof.append(cur)
        return prof

    def peak(self, implied):
        prof = self.profile(implied)
        return max([0] + prof)


def place_w(g, split):
    """W's into the free slots after their backward, the earliest pending
    first; with split, W (of B) before w (of b) when both are pending."""
    nb = {"W": 0, "w": 0}
    pend = []
    last = g.last()
    for t in range(last + 1):
        x = g.at.get(t)
        if x and x[0] in "Bb":
            pend.append("W" if x[0] == "B" else "w")
        elif not x and pend:
            k = pend.pop(0) if not split else ("W" if "W" in pend else "w")
            if split:
                pend.remove(k)
            g.put(k if split else "W", nb[k if split else "W"], t)
            nb[k if split else "W"] += 1
    t = last + 1
    while pend:
        k = pend.pop(0) if not split else ("W" if "W" in pend else "w")
        if split:
            pend.remove(k)
        g.put(k if split else "W", nb[k if split else "W"], t)
        nb[k if split else "W"] += 1
        t += 1


def unit_squeeze(grids, p):
    """Each pass as early as its device (one slot per pass, order kept) and
    its dependency (the slot after) allow; returns new grids."""
    items = sorted((t, d, KINDS.index(k), mb) for d in range(p) for t, (k, mb) in grids[d].at.items())
    end = {}
    nfree = [0] * p
    out = [Grid() for _ in range(p)]
    for t, d, ki, mb in items:
        k = KINDS[ki]
        s = nfree[d]
        dep = dep_of(k, d, p)
        if dep and k not in "Ww":
            s = max(s, end[(dep[0], dep[1], mb)])
        if k in "Ww":  # the n-th W of a device follows its n-th backward
            pass
        end[(k, d, mb)] = s + 1
        nfree[d] = s + 1
        out[d].put(k, mb, s)
    return out


def reorder_round(grids, p, m, with_w):
    """The paper's reorder on the slot grid: every pass of every device in
    one global order (slot, device, kind, mb); the steady state (from the
    first b of device 0 up to the F of the last microbatch) stays; every
    other pass (the warm-up only when W's are explicit) moves to the
    earliest free slot after the passes it depends on (as already moved)
    where the device's memory stays within the peak of the whole grid."""
    peak = max(g.peak(not with_w) for g in grids)
    items = sorted((t, d, KINDS.index(k), mb) for d in range(p) for t, (k, mb) in grids[d].at.items())
    taken = [set() for _ in range(p)]
    phase = 0
    for t, d, ki, mb in items:
        k = KINDS[ki]
        g = grids[d]
        if phase == 0 and k == "b" and d == 0:
            phase = 1
        if phase == 1:
            if k == "F" and mb == m - 1:
                phase = 2
            taken[d].add(t)
            continue
        if phase == 0 and not with_w:
            taken[d].add(t)
            continue
        lo = -1
        if k == "W":
            bs = sorted(g.slot[x] for x in g.slot if x[0] in "Bb")
            lo = bs[mb]
        else:
            dep = dep_of(k, d, p)
            if dep:
                lo = grids[dep[1]].slot[(dep[0], mb)]
            # f, B, b also after the previous kind on the same device
            prev = {"f": "F", "B": "f", "b": "B"}.get(k)
            if prev:
                lo = max(lo, g.slot[(prev, mb)])
        if mb > 0:
            lo = max(lo, g.slot[(k, mb - 1)])
        placed = t
        for s in range(lo + 1, t):
            if s in taken[d]:
                continue
            g.move(k, mb, s)
            if g.peak(not with_w) <= peak:
                placed = s
                break
            g.move(k, mb, t)
        taken[d].add(placed)
    return grids


def strip_w(grids):
    for g in grids:
        for key in [x for x in g.slot if x[0] in "Ww"]:
            del g.at[g.slot[key]]
            del g.slot[key]


def vblock(p, m, kind, reorder=True):
    off = block_offsets(p, kind)
    grids = []
    for d in range(p):
        g = Grid()
        for k in "FfBb":
            for mb in range(m):
                g.put(k, mb, off[d][k] + 6 * mb)
        grids.append(g)
    if reorder:
        for g in grids:
            place_w(g, False)
        grids = reorder_round(grids, p, m, True)
        grids = unit_squeeze(grids, p)
        strip_w(grids)
        grids = reorder_round(grids, p, m, False)
        for g in grids:
            place_w(g, False)
        grids = unit_squeeze(grids, p)
        strip_w(grids)
    for g in grids:
        place_w(g, True)
    return [[g.at[t] for t in sorted(g.at)] for g in grids]


# ---------------------------------------------------------------------------
# ZB-V, the Zero Bubble paper's cost-aware greedy for the V placement.

class _Greedy:
    def __init__(self, p, m, tf, tb, tw, c, max_chunks, fill_f, fill_b, approved):
        self.p, self.m, self.c = p, m, c
        self.cost = {"F": tf, "f": tf, "B": tb, "b": tb, "W": tw, "w": tw}
        self.maxm = max_chunks
        self.fill_f, self.fill_b = fill_f, fill_b
        self.approved = approved or [-1] * p
        self.top_approved = max(self.approved)
        self.cnt = [dict.fromkeys(KINDS, 0) for _ in range(p)]
        self.end = {}
        self.cur = [0.0] * p
        self.mem = [0] * p
        self.idle = [0.0] * p
        self.pend = [[] for _ in range(p)]
        self.order = [[] for _ in range(p)]

    def dep(self, k, d):
        """The cross-device pass (kind, device, mb) that k's next mb on d needs."""
        mb = self.cnt[d][k]
        x = dep_of(k, d, self.p)
        return (x[0], x[1], mb) if x and x[2] else None

    def budget(self, d):
        return max(max(self.idle), self.top_approved - self.approved[d])

    def put(self, k, d):
        mb = self.cnt[d][k]
        assert mb < self.m, (k, d)
        nob = self.cur[d] + self.cost[k]
        t = nob
        x = self.dep(k, d)
        if x:
            assert x in self.end, (k, d, x)
            t = max(t, self.end[x] + self.c + self.cost[k])
        if self.cnt[d]["F"] > 0:
            self.idle[d] += t - nob
        self.end[(k, d, mb)] = t
        self.cur[d] = t
        self.mem[d] += MEMD[k]
        self.order[d].append((k, mb))
        if k in "Bb":
            self.pend[d].append("W" if k == "B" else "w")
        self.cnt[d][k] += 1

    def put_w(self, d):
        self.put(self.pend[d].pop(0), d)

    def fill_gap(self, d, x, extra):
        """W's while the input x arrives after a W would end; then one more
        when the wait still exceeds the device's share of the bubble."""
        if not x:
            return
        while self.pend[d] and self.end[x] + self.c >= self.cur[d] + self.cost["W"]:
            self.put_w(d)
        if self.pend[d] and extra and self.end[x] + self.c - self.cur[d] > self.budget(d) - self.idle[d]:
            self.put_w(d)

    def run(self):
        p, m = self.p, self.m
        for i in range(p):
            self.put("F", i)
        for i in range(p - 1, -1, -1):
            if i < p - 1:
                arrive = self.end[("f", i + 1, 0)] + self.c
                while (self.mem[i] + 2 + 2 * i <= self.maxm and self.cur[i] + self.cost["F"] <= arrive
                       and self.cnt[i]["F"] < m):
                    for j in range(i + 1):
                        self.put("F", j)
            self.put("f", i)
        k = "F"
        for i in range(1, p):
            c = self.cnt
            while (c[i]["F"] + c[i]["f"] < c[i - 1]["F"] + c[i - 1]["f"]
                   or c[i]["f"] <= c[i - 1]["f"] < m):
                for j in range(p - 1, i - 1, -1):
                    if c[j][k] < m:
                        self.put(k, j)
                k = "f" if k == "F" else "F"
        for _ in range(2 * m):
            up, down = [], []
            for i in range(p):
                c = self.cnt[i]
                if c["b"] >= c["B"]:
                    up.append(i)
                elif i == p - 1 or ("b", i + 1, c["b"]) in self.end or c["B"] >= m:
                    down.append(i)
                else:
                    up.append(i)
            for i, k in [(i, "b") for i in reversed(down)] + [(i, "B") for i in up]:
                self.fill_gap(i, self.dep(k, i), k == "b" or self.fill_b)
                self.put(k, i)
            for i in range(p):
                c = self.cnt[i]
                if c["f"] >= m:
                    continue
                k = None
                if c["f"] >= c["F"]:
                    k = "F"
                elif i == p - 1 or ("f", i + 1, c["f"]) in self.end:
                    k = "f"
                elif c["F"] < m and (i == 0 or ("F", i - 1, c["F"]) in self.end):
                    k = "F"
                if k is None:
                    continue
                while self.mem[i] + 1 > self.maxm:
                    self.put_w(i)
                self.fill_gap(i, self.dep(k, i), self.fill_f)
                self.put(k, i)
        for i in range(p):
            while self.pend[i]:
                self.put_w(i)
        return self


def zbv_greedy(p, m, tf, tb, tw, c=0.0, mem=None):
    """The best of the four (fill_f, fill_b) runs, each repeated with the
    previous run's per-device bubbles as the budget while that helps."""
    maxm = int(round(2 * (mem if mem else p)))
    best = None
    for fill_b in (True, False):
        for fill_f in (True, False):
            g = _Greedy(p, m, tf, tb, tw, c, maxm, fill_f, fill_b, None).run()
            while True:
                h = _Greedy(p, m, tf, tb, tw, c, maxm, fill_f, fill_b, g.idle).run()
                if max(h.idle) < max(g.idle):
                    g = h
                else:
                    break
            if best is None or max(g.idle) < max(best.idle):
                best = g
    return best.order


# ---------------------------------------------------------------------------
# V-ZB: the paper's family of V blocks (appendix A), each repeated on the
# slot grid (rows of characters, ' ' free), squeezed, its warm-up and its
# cool-down rewritten as staircases, gaps filled greedily within the peak;
# the block whose schedule is shortest at the given costs wins.

def _peak_rows(rows):
    top = 0
    for r in rows:
        cur = 0
        for ch in r:
            if ch in "Ff":
                cur += 1
            elif ch in "Ww":
                cur -= 1
            top = max(top, cur)
    return top


def _squeeze_rows(rows, p):
    """Each pass as early as its device and its dependency allow (one slot a
    pass, the dependency's slot + 1), the order of every device kept."""
    n = max(len(r) for r in rows)
    out = [[" "] * n for _ in range(p)]
    nxt = [0] * p
    cnt = [dict.fromkeys(KINDS, 0) for _ in range(p)]
    where = {}
    pos = [0] * p
    # a device advances while its next pass's dependency is placed
    left = sum(1 for r in rows for ch in r if ch != " ")
    seqs = [[ch for ch in r if ch != " "] for r in rows]
    while left:
        moved = False
        for d in range(p):
            while pos[d] < len(seqs[d]):
                k = seqs[d][pos[d]]
                mb = cnt[d][k]
                t = nxt[d]
                dep = dep_of(k, d, p) if k not in "Ww" else None
                if dep:
                    key = (dep[0], dep[1], mb)
                    if key not in where:
                        break
                    t = max(t, where[key] + 1)
                if t >= len(out[d]):
                    for r in out:
                        r.extend([" "] * (t + 1 - len(r)))
                out[d][t] = k
                where[(k, d, mb)] = t
                cnt[d][k] += 1
                nxt[d] = t + 1
                pos[d] += 1
                left -= 1
                moved = True
        if not moved:
            return None
    n = max(nxt)
    return [r[:n] for r in out]


def _family(p):
    """(device 0's slots, deltas before the switch, after it, switch)."""
    for a in range(1, 6):
        for b in range(1, 6):
            for bb in range(1, 6):
                if len({a, b, bb}) < 3:
                    continue
                for i0 in range(5):
                    for i1 in range(i0 + 1):
                        for sw in range(1, p):
                            yield (a, b, bb), i0 + 1, i1 + 1, sw


def _with_w(pat):
    """W of B and w of b at the first free residue after each (mod 6)."""
    used = set(pat.values())
    for src, w in (("B", "W"), ("b", "w")):
        for j in range(1, 6):
            s = (pat[src] + j) % 6
            if s not in used:
                pat[w] = s
                used.add(s)
                break
    return pat


def _block(p, first, k0, k1, sw):
    pats = [_with_w({"F": 0, "f": first[0], "B": first[1], "b": first[2]})]
    for i in range(p - 1):
        k = k0 if i < sw else k1
        prev = pats[-1]
        nxt = {"F": (prev["F"] + k) % 6, "f": (prev["f"] - 1) % 6,
               "B": (prev["B"] + k) % 6, "b": (prev["b"] - 1) % 6}
        if len(set(nxt.values())) < 4:
            return None
        pats.append(_with_w(nxt))
    return pats


def _repeat(p, m, pats):
    """Microbatch 0 of each pass at the first slot of its residue after the
    pass before it on the V (F down, f up, B down, b up), then every 6."""
    at = {}
    t = 0
    chain = [("F", d) for d in range(p)] + [("f", d) for d in range(p - 1, -1, -1)] + \
            [("B", d) for d in range(p)] + [("b", d) for d in range(p - 1, -1, -1)]
    for k, d in chain:
        r = pats[d][k]
        t += (r - t) % 6
        at[(k, d)] = t
        if k in "Bb":
            w = "W" if k == "B" else "w"
            at[(w, d)] = t + 1 + (pats[d][w] - t - 1) % 6
        t += 1
    n = max(at.values()) + 6 * m + 1
    rows = [[" "] * n for _ in range(p)]
    for (k, d), s in at.items():
        for mb in range(m):
            assert rows[d][s + 6 * mb] == " "
            rows[d][s + 6 * mb] = k
    return rows


def _warmup(rows, p, m):
    """Up to the first b of each device: F's first (2(p-1-i) slots of them),
    then i+1 pairs (F, f), then (B, W, f or F) triples; the numbers of F and
    f kept, within the peak."""
    peak = min(_peak_rows(rows), 2 * p)
    for i in range(p):
        nff = min(i + 1, peak // 2, m)
        nf = min(peak - nff, m)
        r = rows[i]
        c = dict.fromkeys("FfBW", 0)
        j = 0
        while j < len(r) and r[j] != "b":
            if r[j] != " ":
                c[r[j]] += 1
            r[j] = " "
            j += 1
        j = i
        u = dict.fromkeys("FfBW", 0)

        def put(ch):
            nonlocal j
            if j >= len(r):
                r.extend([" "] * (j + 1 - len(r)))
            r[j] = ch
            u[ch] += 1

        for _ in range(2 * (p - 1 - i)):
            if u["F"] < nf and u["F"] < c["F"]:
                put("F")
            j += 1
        for _ in range(i + 1):
            if u["F"] < nf and u["F"] < c["F"]:
                put("F")
            j += 1
            if u["f"] < nff and u["f"] < c["f"]:
                put("f")
            j += 1
        while any(u[x] < c[x] for x in "FfBW"):
            if u["B"] < c["B"]:
                put("B")
            j += 1
            if u["W"] < c["W"]:
                put("W")
            j += 1
            if u["f"] < c["f"]:
                put("f")
            elif u["F"] < c["F"]:
                put("F")
            j += 1
    n = max(len(r) for r in rows)
    for r in rows:
        r.extend([" "] * (n - len(r)))
    return rows


def _cooldown(rows, p, m):
    """After the last f: the last B's and b's as a staircase two slots
    apart (b's from device 0's last f + 2p - i down, B's from its last f +
    1 + i down), the W's they free re-added in the free slots after."""
    peak = _peak_rows(rows)
    nbb = min((peak + 1) // 2, m)
    nb = min(peak - nbb, m)
    base = -1
    for i in range(p):
        r = rows[i]
        cb = cbb = cw = cww = 0
        lastf = -1
        for j in range(len(r) - 1, -1, -1):
            ch = r[j]
            if ch == "f" and lastf < 0:
                lastf = j
            if ch == "B" and cb < i + 1 and cb < nb:
                r[j] = " "
                cb += 1
            if ch == "b" and cbb < nbb:
                r[j] = " "
                cbb += 1
        for j in range(len(r) - 1, -1, -1):
            if cw >= cb and cww >= cbb and cw + cww >= peak:
                break
            if r[j] == "W":
                r[j] = " "
                cw += 1
            elif r[j] == "w":
                r[j] = " "
                cww += 1
        if i == 0:
            base = lastf
        need = base - i + 2 * p + 1
        if need > len(r):
            r.extend([" "] * (need - len(r)))
        for k in range(cbb):
            at = base - i + 2 * p - 2 * k
            if r[at] != " ":
                return None
            r[at] = "b"
        for k in range(cb):
            r[base + 1 + i - 2 * k] = "B"
    for i in range(p):
        r = rows[i]
        lastw = max([j for j, ch in enumerate(r) if ch in "Ww"] + [-1])
        cw = cww = 0
        for j in range(len(r)):
            ch = r[j]
            if ch == "B":
                cw += 1
            elif ch == "b":
                cww += 1
            elif ch == "W":
                cw -= 1
            elif ch == "w":
                cww -= 1
            elif j > lastw:
                if cw > 0:
                    r[j] = "W"
                    cw -= 1
                elif cww > 0:
                    r[j] = "w"
                    cww -= 1
        r.extend(["W"] * cw + ["w"] * cww)
    n = max(len(r) for r in rows)
    for r in rows:
        r.extend([" "] * (n - len(r)))
    return _squeeze_rows(rows, p)


def _fill_gaps(rows, p, m):
    """Left to right, each free slot of each device takes the first later
    pass of some kind whose input is ready one slot earlier and that keeps
    the device within the peak."""
    peak = _peak_rows(rows)
    n = len(rows[0])
    lastk = [{} for _ in range(p)]
    for i in range(p):
        for j, ch in enumerate(rows[i]):
            if ch != " ":
                lastk[i][ch] = j
    cnt = [dict.fromkeys(KINDS, 0) for _ in range(p)]
    where = {}
    mem = [0] * p
    for j in range(n):
        for i in range(p):
            r = rows[i]
            ch = r[j]
            if ch != " ":
                where[(ch, i, cnt[i][ch])] = j
                cnt[i][ch] += 1
                mem[i] += MEMD[ch]
                continue
            avail = {x for x in KINDS if lastk[i].get(x, -1) > j}
            delta = top = 0
            for k in range(j + 1, n):
                if not avail:
                    break
                x = r[k]
                if x in "Ff":
                    delta += 1
                elif x in "Ww":
                    delta -= 1
                before = top
                top = max(top, delta)
                if x == " " or x not in avail:
                    continue
                avail.discard(x)
                if x in "Ff" and mem[i] + before >= peak:
                    continue
                mb = cnt[i][x]
                dep = dep_of(x, i, p)
                if dep is None:
                    ok = True
                elif dep[2]:
                    ok = where.get((dep[0], dep[1], mb), n) < j
                else:
                    ok = cnt[i][dep[0]] > mb
                if not ok:
                    continue
                r[j], r[k] = x, " "
                where[(x, i, mb)] = j
                cnt[i][x] += 1
                mem[i] += MEMD[x]
                break
    return rows


def _relabel_w(rows):
    for r in rows:
        q = []
        for j, ch in enumerate(r):
            if ch in "Bb":
                q.append("W" if ch == "B" else "w")
            elif ch in "Ww":
                r[j] = q.pop(0)


def _to_orders(rows, p, m):
    """Per-device orders, or None when a pass is missing, repeated or out
    of its dependencies' order."""
    orders = []
    where = {}
    for d in range(p):
        cnt = dict.fromkeys(KINDS, 0)
        o = []
        for j, ch in enumerate(rows[d]):
            if ch == " ":
                continue
            o.append((ch, cnt[ch]))
            where[(ch, d, cnt[ch])] = j
            cnt[ch] += 1
        if any(cnt[k] != m for k in KINDS):
            return None
        orders.append(o)
    for (k, d, mb), j in where.items():
        dep = dep_of(k, d, p)
        if dep and where[(dep[0], dep[1], mb)] >= j:
            return None
    return orders


def vzb_block_schedule(p, m, pats, mem_chunks):
    """The paper's framework for one block; orders or None."""
    mm = max(m, 2 * p)
    rows = _repeat(p, mm, pats)
    init = _peak_rows(rows)
    if (m == mm and init > mem_chunks) or init > 2 * p:
        return None, init
    rows = _squeeze_rows(rows, p)
    rows = _squeeze_rows(_warmup(rows, p, mm), p)
    if rows is None:
        return None, init
    peak = _peak_rows(rows)
    if peak > init:
        return None, init
    if m < mm:
        for r in rows:
            cnt = dict.fromkeys(KINDS, 0)
            for j, ch in enumerate(r):
                if ch != " ":
                    if cnt[ch] >= m:
                        r[j] = " "
                    else:
                        cnt[ch] += 1
        rows = _squeeze_rows(rows, p)
        if rows is None:
            return None, init
        init = peak = _peak_rows(rows)
        if peak > mem_chunks:
            return None, peak
    rows = _cooldown(rows, p, m)
    if rows is None:
        return None, init
    rows = _fill_gaps(rows, p, m)
    _relabel_w(rows)
    if _peak_rows(rows) > init:
        return None, init
    return _to_orders(rows, p, m), _peak_rows(rows)


def vzb_all(p, m, costs, mem=None):
    """V-ZB for several cost sets (tf, tb, tw, c) at once: the schedule of
    every block of the family within mem units (default p) is built once;
    for each cost set the block whose schedule has the shortest longest
    span (from the first F to the last pass) wins."""
    mem_chunks = int(round(2 * (mem if mem else p)))
    best = [None] * len(costs)
    best_t = [None] * len(costs)
    stop = None
    seen = set()
    for first, k0, k1, sw in _family(p):
        key = (first, k0, k1)
        if stop == key:
            continue
        pats = _block(p, first, k0, k1, sw)
        if pats is None:
            continue
        o, peak = vzb_block_schedule(p, m, pats, min(2 * p, mem_chunks))
        if peak > 2 * p or peak > mem_chunks:
            stop = key
            continue
        if o is None:
            continue
        sig = tuple(tuple(x) for x in o)
        if sig in seen:
            continue
        seen.add(sig)
        for i, (tf, tb, tw, c) in enumerate(costs):
            r = timing(o, p, m, tf, tb, tw, c)
            dur = {"F": tf, "f": tf, "B": tb, "b": tb, "W": tw, "w": tw}
            span = max(r["start"][(o[d][-1][0], d, o[d][-1][1])] + dur[o[d][-1][0]]
                       - r["start"][("F", d, 0)] for d in range(p))
            if best[i] is None or span < best_t[i]:
                best[i], best_t[i] = o, span
    return best


def vzb(p, m, tf, tb, tw, c=0.0, mem=None):
    """The best block of the family within mem units (default p)."""
    return vzb_all(p, m, [(tf, tb, tw, c)], mem)[0]

if __name__ == "__main__":
    P, M, KIND = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    tf, tb, tw, c = (float(x) for x in (sys.argv[4:8] if len(sys.argv) > 4 else (1, 1, 1, 0)))
    if KIND == "vzb":
        o = vzb(P, M, tf / 2, tb / 2, tw / 2, c)
    elif KIND == "zbv":
        o = zbv_greedy(P, M, tf / 2, tb / 2, tw / 2, c)
    else:
        o = vblock(P, M, KIND)
    check_orders(o, P, M)
    r = timing(o, P, M, tf / 2, tb / 2, tw / 2, c)
    print("makespan %.4f bubble %.4f peak %s" % (r["makespan"], r["bubble_rate"], r["peak"]))


def parse_torch_csv(text, p):
    """Orders from a compute-only PyTorch CSV of a V placement."""
    import re
    orders = []
    for line in text.strip().splitlines():
        o = []
        for cell in line.split(","):
            cell = cell.strip()
            if not cell:
                continue
            mt = re.fullmatch(r"(\d+)(F|I|W)(\d+)", cell)
            if not mt:
                raise ValueError("cell %r" % cell)
            s, t, mb = int(mt.group(1)), mt.group(2), int(mt.group(3))
            first = s < p
            k = {"F": "F" if first else "f", "I": "b" if first else "B", "W": "w" if first else "W"}[t]
            o.append((k, mb))
        orders.append(o)
    return orders


def to_torch_csv(orders, p):
    """Compute-only PyTorch CSV of V orders (the inverse of parse_torch_csv)."""
    rows = []
    for d, o in enumerate(orders):
        cells = []
        for k, mb in o:
            s = d if k in "Fbw" else 2 * p - 1 - d
            cells.append("%d%s%d" % (s, {"F": "F", "f": "F", "B": "I", "b": "I", "W": "W", "w": "W"}[k], mb))
        rows.append(",".join(cells))
    return "\n".join(rows) + "\n"
