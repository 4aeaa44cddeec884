"""check_trace.py TRACE.json DUMP.json

The Chrome trace of a program against its JSON dump: valid JSON, one slice
per compute pass, transfer and host copy (a DROP frees a record's device copy
in no time: a memory counter step, no slice), one flow arrow (s + f with the same id) per
RECV, flows between the threads of sender and receiver."""
import json
import sys


def main():
    trace = json.load(open(sys.argv[1]))
    prog = json.load(open(sys.argv[2]))
    ev = trace["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X"]
    streams = prog["streams"]
    want = sum(1 for st in streams for i in st
               if i["op"] not in ("REDUCE", "OPTIM", "VALIDATE", "DROP") and not i.get("rollback"))
    assert len(slices) == want, (len(slices), want)
    recvs = sum(1 for st in streams for i in st if i["op"] == "RECV")
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert len(starts) == recvs and starts.keys() == ends.keys(), (len(starts), recvs)
    for i, s in starts.items():
        f = ends[i]
        assert s["tid"] % 2 == 1 and f["tid"] % 2 == 1 and s["tid"] != f["tid"], (s, f)
        assert s["ts"] <= f["ts"] + 1e-6, (s, f)
    names = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    assert len(names) == 1 and names[0]["args"]["name"] == "simulated"
    print(f"ok {len(slices)} slices, {len(starts)} flows")


main()
