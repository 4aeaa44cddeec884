"""session_report.py — the rows of bench/gpu/session.sh's summary.txt, from
the files its sections write (`run --json`, `run --profile`, bench_gemm's
table, nvidia-smi's samples). Prints markdown table rows in the shape of
bench/gpu.md's tables; a missing or broken input prints a row that says so
(the session must write its summary whatever failed).

  session_report.py check LABEL RUN.json VERDICT     --check: loss, error, peaks
  session_report.py gemm GEMM.txt                    the best TFLOP/s (a number)
  session_report.py smi SAMPLES BASE_MIB             peak GPU memory used (MiB) over BASE
  session_report.py decoder RUN.json FRESH.json GEMM_TFLOPS SMI_MIB GPU
                                                     step, MFU, bytes, prediction
  session_report.py moe LABEL RUN.json [BASE.json]   step, predicted, vs 1f1b
"""
import json
import os
import sys


def headline(text):
    """A phrase of bench/README.md's line, into $SESSION_HEADLINE (session.sh)."""
    path = os.environ.get("SESSION_HEADLINE")
    if path:
        with open(path, "a") as f:
            f.write(text + "\n")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def num(x, fmt="%.4f"):
    return fmt % x if isinstance(x, (int, float)) else "-"


def pct(x):
    return "%+.2f %%" % (x * 100) if isinstance(x, (int, float)) else "-"


def check(label, path, verdict):
    r = load(path)
    if r is None:
        print("| %s | FAILED | no result (see the log) |" % label)
        return
    peaks = "equal" if r.get("peak_activation_bytes") == r.get("predicted_peak_activation_bytes") \
        else "DIFFERENT"
    print("| %s | %s | loss %s, max grad rel err %s, peaks %s (%s), %s |" % (
        label, verdict, num(r.get("loss"), "%.6f"), num(r.get("max_grad_rel_err"), "%.2e"),
        peaks, r.get("peak_activation_bytes"), r.get("transport", "?")))


def gemm(path):
    best = 0.0
    try:
        for line in open(path):
            w = line.split()
            if len(w) >= 3 and w[0] in ("F", "B", "W") and w[-1].endswith("%"):
                best = max(best, float(w[-2]))
    except (OSError, ValueError):
        pass
    print("%.1f" % best)


def smi(path, base):
    vals = []
    try:
        for line in open(path):
            line = line.strip()
            if line.isdigit():
                vals.append(int(line))
    except OSError:
        pass
    print(max(vals) - int(base) if vals else -1)


def decoder_flops(md, devices_m):
    """Model flops of one training step (F + B + W = 3 x forward's products),
    attention's two products counted whole (causal masking not subtracted)."""
    h, L, V = md["hidden"], md["layers"], md["vocab"]
    s, b = md["seq"], md["batch"]
    hd = md.get("head_dim") or h // md.get("heads", 1)
    q, kv = md.get("heads", 1) * hd, md.get("kv_heads", md.get("heads", 1)) * hd
    inter = md.get("inter", 4 * h)
    per_token = L * (2 * h * (2 * q + 2 * kv) + 2 * 2 * s * q + 2 * 3 * h * inter) + 2 * h * V
    return 3.0 * per_token * s * b * devices_m


def decoder(path, fresh, tflops, smi_mib, gpu):
    r, f = load(path), load(fresh)
    if r is None:
        print("| %s | FAILED: no result (see s2.log) | | | | | | |" % gpu)
        return
    fl = decoder_flops(r["model"], r["microbatches"])
    step = r["step_time_s"]
    mfu = fl / step / (float(tflops) * 1e12) if float(tflops) > 0 else None
    pred = [sum(p.get("predicted_" + k, 0) for k in ("params", "grads", "optimizer")) + a
            for p, a in zip(r.get("params", []), r.get("predicted_peak_activation_bytes", []))]
    meas = [sum(p.get(k, 0) for k in ("params", "grads", "optimizer")) + a
            for p, a in zip(r.get("params", []), r.get("peak_activation_bytes", []))]
    mib = lambda x: "%.0f" % (x / 2**20)
    smi_s = "%s MiB" % smi_mib if int(smi_mib) >= 0 else "not measured (no nvidia-smi)"
    fe = pct(f.get("prediction_error")) if f else "-"
    print("| %s | %s | %d | %.4g TFLOP | %.4f | %s | %s | %s | %s | %s / %s MiB | %s |" % (
        gpu, r["recipe"], r["devices"], fl / 1e12, step,
        "%.1f %% of %s" % (mfu * 100, tflops) if mfu else "-",
        num(r.get("predicted_step_time_s")), pct(r.get("prediction_error")), fe,
        "+".join(mib(x) for x in pred), "+".join(mib(x) for x in meas), smi_s))
    headline("the decoder (hidden %d, %d layers, seq %d): %.3f s a step, MFU %s, "
             "predicted %s" % (r["model"]["hidden"], r["model"]["layers"], r["model"]["seq"], step,
                               "%.1f %%" % (mfu * 100) if mfu else "-", pct(r.get("prediction_error"))))


def moe(label, path, base):
    r, b = load(path), load(base) if base else None
    if r is None:
        print("| %s | FAILED: no result (see s4.log) | | | |" % label)
        return
    rel = r["step_time_s"] / b["step_time_s"] if b else 1.0
    print("| %s | %s | %.4f | %s | %s | %.3f | %s |" % (
        label, r.get("transport", "?"), r["step_time_s"], num(r.get("predicted_step_time_s")),
        pct(r.get("prediction_error")), rel, r.get("loss_hex", "-")))
    if b:
        headline("MoE %s / 1f1b %.3f" % (label, rel))


def main(a):
    cmd = a[0] if a else ""
    if cmd == "check" and len(a) == 4:
        check(a[1], a[2], a[3])
    elif cmd == "gemm" and len(a) == 2:
        gemm(a[1])
    elif cmd == "smi" and len(a) == 3:
        smi(a[1], a[2])
    elif cmd == "decoder" and len(a) == 6:
        decoder(*a[1:])
    elif cmd == "moe" and len(a) in (3, 4):
        moe(a[1], a[2], a[3] if len(a) == 4 else None)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
