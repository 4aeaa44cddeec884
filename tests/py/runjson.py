"""runjson.py — the checks of a `stagecraft run --check --json` result that the
shell suites share (tests/runtime.sh, tests/cudastub/run.sh, tests/gpu/run.sh).

  runjson.py FILE [OPTION...]          one result: exit 0 when it holds, else
                                       exit 1 with the reason on stdout
  runjson.py --batch LIST              every result LIST names, in one process
                                       (tests/lib.sh's `later` and `verdicts`):
                                       LIST has a line "FILE<TAB>LABEL<TAB>OPTIONS"
                                       per result; prints "ok LABEL" or
                                       "FAIL LABEL: reason" per line, in order

OPTIONS: --tol X (relative, loss and gradients; default 1e-5), --backend B,
--stand-in (the GPU is the CUDA stand-in, tests/cudastub), --transport T. Every result: the contract's fields, a finite
positive loss within the tolerance of the single-device reference, gradients
within it, measured peak activation bytes equal to the prediction on every
device (each > 0), the parameter, gradient and optimizer bytes of every
device equal to the prediction (docs/run.md#parameter-bytes), a positive step time; with --backend cuda also the
tolerance it reports (1e-4), with --transport the transport it chose.
"""
import json
import math
import sys

NEED = ["recipe", "devices", "stages", "microbatches", "loss", "reference_loss",
        "max_grad_rel_err", "peak_activation_bytes", "peak_activation_bytes_max",
        "predicted_peak_activation_bytes", "step_time_s", "loss_hex", "params"]


STAND_IN = "CUDA stand-in (test double)"


def options(args):
    o = {"tol": 1e-5, "backend": None, "gpu": None, "transport": None}
    i = 0
    while i < len(args):
        key = args[i].lstrip("-")
        if key == "stand-in":
            o["gpu"], i = STAND_IN, i + 1
            continue
        if key not in o or i + 1 >= len(args):
            raise SystemExit(f"runjson.py: bad option {args[i]!r}")
        o[key] = float(args[i + 1]) if key == "tol" else args[i + 1]
        i += 2
    return o


def why_not(path, o):
    """None when the result at path holds, else the reason."""
    try:
        j = json.load(open(path))
    except (OSError, ValueError) as e:
        return f"not a JSON result: {e}"
    missing = [k for k in NEED if k not in j]
    tol = o["tol"]
    checks = [
        (not missing, f"missing {missing}"),
        (o["backend"] is None or j.get("backend") == o["backend"], f"backend {j.get('backend')}"),
        (o["gpu"] is None or j.get("gpu") == o["gpu"], f"gpu {j.get('gpu')}"),
        (o["transport"] is None or j.get("transport") == o["transport"],
         f"transport {j.get('transport')}, want {o['transport']} ({j.get('transport_note')})"),
        (o["backend"] != "cuda" or j.get("tolerance") == 1e-4, f"tolerance {j.get('tolerance')}"),
    ]
    for cond, what in checks:
        if not cond:
            return what
    loss, ref = j["loss"], j["reference_loss"]
    peaks = j["peak_activation_bytes"]
    checks = [
        (isinstance(loss, (int, float)) and math.isfinite(loss) and loss > 0, f"loss {loss}"),
        (abs(loss - ref) <= tol * abs(ref), f"loss {loss} against the reference's {ref}"),
        # a forward-only program has no gradients (docs/run.md#check)
        (j.get("forward_only") is True and j["max_grad_rel_err"] is None
         or j["max_grad_rel_err"] is not None and j["max_grad_rel_err"] <= tol,
         f"gradients off by {j['max_grad_rel_err']}"),
        (peaks == j["predicted_peak_activation_bytes"],
         f"peaks {peaks}, predicted {j['predicted_peak_activation_bytes']}"),
        (len(peaks) == j["devices"] and all(b > 0 for b in peaks), f"peaks {peaks}"),
        (j["step_time_s"] > 0, f"step time {j['step_time_s']}"),
        (len(j["params"]) == j["devices"] and all(
            d[k] == d["predicted_" + k] and d["params"] > 0 for d in j["params"]
            for k in ("params", "grads", "optimizer")), f"parameter bytes {j['params']}"),
    ]
    for cond, what in checks:
        if not cond:
            return what
    return None


def main(argv):
    if len(argv) == 3 and argv[1] == "--batch":
        for line in open(argv[2]):
            path, label, opts = (line.rstrip("\n").split("\t") + ["", ""])[:3]
            why = why_not(path, options(opts.split()))
            print(f"ok {label}" if why is None else f"FAIL {label}: {why}")
        return 0
    if len(argv) < 2:
        raise SystemExit(__doc__)
    why = why_not(argv[1], options(argv[2:]))
    if why is not None:
        print(why)
    return 0 if why is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
