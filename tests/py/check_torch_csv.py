"""check_torch_csv.py FILE.csv compute_only|compute_comms

An independent reading of PyTorch pipelining's CSV rules (schedules.py:
_Action.from_str's grammar and _validate_schedule's checks), used to test
what stagecraft exports. Exits 1 with a message on the first violation."""
import re
import sys

TOKEN = re.compile(r"^(\d+)(F|I|B|W|SEND_F|RECV_F|SEND_B|RECV_B|UNSHARD|RESHARD|REDUCE_GRAD)(\d*)$")


def fail(msg):
    print("check_torch_csv: " + msg)
    sys.exit(1)


def main():
    path, dialect = sys.argv[1], sys.argv[2]
    with open(path, newline="") as f:
        rows = [line.rstrip("\r\n").split(",") for line in f]
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
            if kind in ("UNSHARD", "RESHARD", "REDUCE_GRAD"):
                if mb:
                    fail(f"{cell}: {kind} takes no microbatch")
            elif not mb:
                fail(f"{cell}: no microbatch")
            if stage_rank.setdefault(s, rank) != rank:
                fail(f"stage {s} on ranks {stage_rank[s]} and {rank}")
            if mb:
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
    for s in stages:
        f_ = sorted(acts.get((s, "F"), []))
        i_, w_, b_ = (sorted(acts.get((s, k), [])) for k in "IWB")
        if f_ != list(range(nmb)):
            fail(f"stage {s}: forwards {f_}, expected 0..{nmb - 1}")
        if i_ != w_ or sorted(i_ + b_) != list(range(nmb)):
            fail(f"stage {s}: I {i_} W {w_} B {b_}")
    if dialect == "compute_comms":
        # Every send has its receive on the peer rank.
        for (s, kind), mbs in acts.items():
            peer = {"SEND_F": (s + 1, "RECV_F"), "SEND_B": (s - 1, "RECV_B")}.get(kind)
            if peer and sorted(acts.get(peer, [])) != sorted(mbs):
                fail(f"{kind} of stage {s} unmatched by {peer[1]} of stage {peer[0]}")
    print(f"ok {len(rows)} ranks, {len(stages)} stages, {nmb} microbatches")


main()
