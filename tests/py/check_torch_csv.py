"""check_torch_csv.py FILE.csv compute_only|compute_comms [VERSION]
check_torch_csv.py --batch LIST


A quick reading of PyTorch pipelining's CSV rules (schedules.py:
_Action.from_str's grammar with (a;b)OVERLAP_F_B, _validate_schedule's checks and, for VERSION 2.15
(the default) and later, the rules of _validate_send_waits and of the
REDUCE_GRAD / WAIT_REDUCE_GRAD pairing), used by tests/interchange.sh where
PyTorch is not installed. PyTorch's own validators check the same exports in
tests/torch/ (docs/interchange.md#pytorch-pipelining-csv). Exits 1 with a
message on the first violation. With --batch, LIST has a line
"FILE<TAB>LABEL<TAB>DIALECT VERSION" per file, all checked in this one process
(tests/interchange.sh queues its exports): "ok LABEL" or "FAIL LABEL: why"
per line, in order."""
import re
import sys

OLD = r"F|I|B|W|SEND_F|RECV_F|SEND_B|RECV_B|UNSHARD|RESHARD|REDUCE_GRAD"
NEW = r"WAIT_SEND_F|WAIT_SEND_B|WAIT_REDUCE_GRAD|" + OLD


class Bad(Exception):
    pass


def fail(msg):
    raise Bad(msg)


def check(path, dialect, version_text):
    """A line on the file when it keeps the rules, else raises Bad."""
    version = tuple(int(x) for x in (version_text or "2.15").split(".")[:2])
    waits = version >= (2, 15)
    TOKEN = re.compile(r"^(\d+)(" + (NEW if waits else OLD) + r")(\d*)$")
    with open(path, newline="") as f:
        rows = [line.rstrip("\r\n").split(",") for line in f]
    # (a;b)OVERLAP_F_B: compute actions run as one (_Action.from_str); each
    # counts as its own action here.
    overlap = re.compile(r"^\(([^()]*)\)OVERLAP_F_B$")
    for r, row in enumerate(rows):
        cells = []
        for cell in row:
            m = overlap.match(cell)
            if not m:
                cells.append(cell)
                continue
            subs = m.group(1).split(";")
            if len(subs) < 2 or not all(re.match(r"^\d+[FIBW]\d+$", x) for x in subs):
                fail(f"rank {r}: bad overlap {cell!r}")
            cells += subs
        rows[r] = cells
    if not rows:
        fail("no rows")
    stage_rank, acts = {}, {}
    for rank, row in enumerate(rows):
        for step, cell in enumerate(row):
            if cell == "":
                if dialect == "compute_comms":
                    fail(f"rank {rank} step {step}: empty cell in compute_comms")
                continue
            m = TOKEN.match(cell)
            if not m:
                fail(f"rank {rank} step {step}: bad token {cell!r}")
            s, kind, mb = int(m.group(1)), m.group(2), m.group(3)
            if dialect == "compute_only" and kind not in ("F", "I", "B", "W"):
                fail(f"rank {rank} step {step}: {cell} in a compute_only file")
            if kind in ("UNSHARD", "RESHARD", "REDUCE_GRAD", "WAIT_REDUCE_GRAD"):
                if mb:
                    fail(f"{cell}: {kind} takes no microbatch")
            elif not mb:
                fail(f"{cell}: no microbatch")
            if stage_rank.setdefault(s, rank) != rank:
                fail(f"stage {s} on ranks {stage_rank[s]} and {rank}")
            if mb and not kind.startswith("WAIT"):
                a = acts.setdefault((s, kind), [])
                a.append(int(mb))
                # PyTorch: I or B after the F of the same (stage, mb); W after its I.
                if kind in ("I", "B") and int(mb) not in acts.get((s, "F"), []):
                    fail(f"{cell}: backward before forward")
                if kind == "W" and int(mb) not in acts.get((s, "I"), []):
                    fail(f"{cell}: W before its I")
    stages = sorted(stage_rank)
    if stages != list(range(len(stages))):
        fail(f"stages are not 0..S-1: {stages}")
    nmb = len(acts.get((0, "F"), []))
    # A forward-only file (_ScheduleForwardOnly's actions): no backward
    # anywhere, hence no gradient transfer and no reduction.
    fwd_only = not any(k in ("I", "W", "B") for (_, k) in acts) and not any(
        c.endswith("REDUCE_GRAD") for row in rows for c in row)
    for s in stages:
        f_ = sorted(acts.get((s, "F"), []))
        i_, w_, b_ = (sorted(acts.get((s, k), [])) for k in "IWB")
        if f_ != list(range(nmb)):
            fail(f"stage {s}: forwards {f_}, expected 0..{nmb - 1}")
        if not fwd_only and (i_ != w_ or sorted(i_ + b_) != list(range(nmb))):
            fail(f"stage {s}: I {i_} W {w_} B {b_}")
    if dialect == "compute_comms" and waits:
        for rank, row in enumerate(rows):
            pending, reduce_open = set(), None
            for cell in row:
                m = TOKEN.match(cell)
                s, kind, mb = int(m.group(1)), m.group(2), m.group(3)
                if kind in ("SEND_F", "SEND_B"):
                    pending.add((kind, s, mb))
                elif kind in ("WAIT_SEND_F", "WAIT_SEND_B"):
                    key = (kind[5:], s, mb)
                    if key not in pending:
                        fail(f"rank {rank}: {cell} has no pending send")
                    pending.remove(key)
                elif kind == "REDUCE_GRAD":
                    if reduce_open is not None:
                        fail(f"rank {rank}: {cell} while stage {reduce_open} has a pending reduction")
                    reduce_open = s
                elif kind == "WAIT_REDUCE_GRAD":
                    if reduce_open != s:
                        fail(f"rank {rank}: {cell} without its pending REDUCE_GRAD")
                    reduce_open = None
            if pending:
                fail(f"rank {rank}: sends without a wait: {sorted(pending)}")
            if reduce_open is not None:
                fail(f"rank {rank}: REDUCE_GRAD of stage {reduce_open} without WAIT_REDUCE_GRAD")
    if dialect == "compute_comms":
        # Every send has its receive on the peer rank.
        for (s, kind), mbs in acts.items():
            peer = {"SEND_F": (s + 1, "RECV_F"), "SEND_B": (s - 1, "RECV_B")}.get(kind)
            if peer and sorted(acts.get(peer, [])) != sorted(mbs):
                fail(f"{kind} of stage {s} unmatched by {peer[1]} of stage {peer[0]}")
    if fwd_only and any(k in ("SEND_B", "RECV_B") for (_, k) in acts):
        fail("a forward-only file with gradient transfers")
    return f"ok {len(rows)} ranks, {len(stages)} stages, {nmb} microbatches"


def main(argv):
    if len(argv) == 3 and argv[1] == "--batch":
        for line in open(argv[2]):
            path, label, rest = (line.rstrip("\n").split("\t") + ["", ""])[:3]
            try:
                check(path, *(rest.split() + ["compute_only", ""])[:2])
                print(f"ok {label}")
            except (Bad, OSError) as e:
                print(f"FAIL {label}: check_torch_csv: {e}")
        return 0
    try:
        print(check(argv[1], argv[2], argv[3] if len(argv) > 3 else ""))
    except Bad as e:
        print("check_torch_csv: " + str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
