"""model_bytes.py — stagecraft's model description against real PyTorch
(docs/model.md#checked-against-pytorch). The models of tests/fixtures/models/
are built in PyTorch from the same config.json (tests/torch/hfmodels.py:
Hugging Face's module names and shapes, in pipeline stages) and compared with
what `stagecraft sim 1f1b -D p=S --model FILE --json` reports for them:

  published  the public models' totals, counted on torch's meta device
             (nothing allocated), equal the published figures;
  stages     per stage, the parameters (exactly) and their bytes, for S
             stages split as stagecraft splits them (the first L % S stages
             one decoder layer more); the stage's layer counts;
  kinds      the model's family, layers, total, and the parameters of one
             layer of each kind;
  step       the tiny models allocated for real in fp32 and in bf16, one
             forward, backward and torch.optim.AdamW step on each stage: the
             bytes of parameters, gradients and optimizer states per device
             equal stagecraft's for -D precision=pure (gradients and both
             moments in the parameters' dtype) and -D precision=mixed (bf16
             parameters; fp32 gradients, master weights and moments, built
             the way Megatron-LM's distributed optimizer keeps them), ZeRO 0.
             torch's AdamW keeps a 4-byte `step` tensor per parameter too: it
             is left out of the optimizer's bytes (stagecraft counts the
             moments and master weights only);
  act        the bytes a decoder layer keeps for backward, per token: the
             tensors torch.autograd.graph.saved_tensors_hooks sees in one
             forward, each storage once, parameters and the rotary tables
             (computed once for all layers) left out; for the kernels the
             formula assumes (within 10% of stagecraft's act_bytes_per_token)
             and for transformers' eager code (exactly the documented
             difference).

Prints one line per check (ok, FAIL or SKIP) and "model_bytes: N passed,
N failed[, N skipped]". Usage: model_bytes.py STAGECRAFT [--sample] (make
check: fewer stage counts)."""
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfmodels as hm  # noqa: E402

FIX = "tests/fixtures/models/"
# The published totals (tests/unit/test_model.c gives the sources).
PUBLISHED = {
    "llama3-8b": 8030261248, "llama3-70b": 70553706496, "qwen2.5-7b": 7615616512,
    "mixtral-8x7b": 46702792704, "mistral-7b-v0.1": 7241732096, "qwen3-0.6b": 596049920,
    "deepseek-v3": 671026419200,
}
# Uneven splits (-D split=[...]): fewer layers beside the embedding and head.
UNEVEN = {"llama3-8b": [7, 9, 9, 7], "qwen3-0.6b": [6, 8, 8, 6],
          "deepseek-v3": [14, 16, 16, 15]}
TINY = ["tiny-llama", "tiny-mistral", "tiny-qwen2", "tiny-qwen3", "tiny-mixtral",
        "tiny-deepseek-v3"]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CFG_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}

counts = {"passed": 0, "failed": 0, "skipped": 0}


def ok(what, figures=""):
    counts["passed"] += 1
    print(f"ok   {what}{': ' + figures if figures else ''}", flush=True)


def fail(what, why):
    counts["failed"] += 1
    print(f"FAIL {what}: {why}", flush=True)


def skip(what, why):
    counts["skipped"] += 1
    print(f"SKIP {what}: {why}", flush=True)


def check(what, cond, figures, why=None):
    if cond:
        ok(what, figures)
    else:
        fail(what, why or figures)


class Stagecraft:
    """`sim 1f1b -D p=S --model FILE --json` with -D settings, cached. The
    keys this suite reads (params, bytes, model) are checked once: where the
    binary does not report them, every comparison is a SKIP saying so."""

    def __init__(self, exe):
        self.exe, self.cache, self.missing = exe, {}, None
        try:
            out = self.sim("tiny-llama", 2)
            miss = [k for k in ("params", "bytes", "model") if k not in out]
            if miss:
                self.missing = f"stagecraft's sim --json has no {', '.join(miss)}"
        except RuntimeError as e:
            self.missing = f"stagecraft's sim cannot read a model ({e})"

    def sim(self, model, S, **D):
        D = dict({"seq": 64, "batch": 2}, **D)  # a model needs the sequence length
        key = (model, S, tuple(sorted(D.items())))
        if key not in self.cache:
            args = [self.exe, "sim", "1f1b", "-D", f"p={S}", "--model", FIX + model + ".json",
                    "--json", "--time-limit", "0"]
            for k, v in sorted(D.items()):
                args += ["-D", f"{k}={v}"]
            r = subprocess.run(args, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(args[1:])}: exit {r.returncode}: "
                                   f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
            self.cache[key] = json.loads(r.stdout)
        return self.cache[key]


def stage_bytes(st):
    """Bytes of the model state a stage holds: parameters (a tied copy
    included) and the checkpoint's buffers."""
    return sum(hm.nbytes(t) for t in hm.held(st))


def published(name, parts):
    total = sum(hm.count(s, s.tied_copy) for s in hm.stages(parts, 1))
    check(f"published {name}", total == PUBLISHED[name],
          f"{total:,} parameters in torch (meta), published {PUBLISHED[name]:,}")


def compare_stages(sc, name, parts, S, counts=None):
    """counts: an uneven split, given to stagecraft as -D split=[...]."""
    what = f"stages {name} S={S}" + (f" split={counts}" if counts else "")
    sts = hm.stages(parts, S, counts)
    per = [hm.count(s, s.tied_copy) for s in sts]
    pbytes = [stage_bytes(s) for s in sts]
    split = counts or hm.split_layers(parts.c["L"], S)
    fig = f"params {per} ({split} layers), bytes {pbytes}"
    if sc.missing:
        return skip(what, f"{sc.missing} (torch: {fig})")
    try:
        out = sc.sim(name, S, **({"split": str(counts).replace(" ", "")} if counts else {}))
    except RuntimeError as e:
        return fail(what, str(e))
    bad = []
    if out["params"] != per:
        bad.append(f"params {out['params']}, torch {per}")
    if out["model"]["stage_layers"] != split:
        bad.append(f"stage_layers {out['model']['stage_layers']}, torch {split}")
    if out["bytes"]["params"] != pbytes:
        bad.append(f"bytes.params {out['bytes']['params']}, torch {pbytes}")
    check(what, not bad, fig, "; ".join(bad))


def compare_kinds(sc, name, parts):
    what = f"kinds {name}"
    if sc.missing:
        return skip(what, sc.missing)
    try:
        m = sc.sim(name, 2)["model"]
    except RuntimeError as e:
        return fail(what, str(e))
    c = parts.c
    total = sum(hm.count(s, s.tied_copy) for s in hm.stages(parts, 1))
    want = hm.kind_params(parts)
    bad = []
    if m["family"] != c["type"]:
        bad.append(f"family {m['family']}, model_type {c['type']}")
    if m["params"] != total or m["layers"] != c["L"]:
        bad.append(f"params {m['params']} layers {m['layers']}, torch {total} {c['L']}")
    for kind, n in want.items():
        got = m["kinds"].get(kind, {}).get("params")
        if got != n:
            bad.append(f"{kind} {got}, torch {n}")
    for kind in m["kinds"]:
        if kind not in want:
            bad.append(f"{kind} in stagecraft, not in the torch model")
    check(what, not bad, ", ".join(f"{k} {v}" for k, v in want.items()), "; ".join(bad))


def optimizer(name, params):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    return torch.optim.SGD(params, lr=1e-3)  # no momentum: no state


def train_step(parts, S, mixed, opt_name="adamw", seq=16, batch=2):
    """One forward, backward and optimizer step of the S stages. Returns per
    stage (params count, params bytes, grads bytes, optimizer bytes, step
    bytes). mixed: parameters in their dtype, fp32 gradients (the fp32
    buffer Megatron-LM accumulates into), fp32 master weights that the
    optimizer updates and copies back."""
    sts = hm.stages(parts, S)
    c = parts.c
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, c["V"], (batch, seq), generator=g)
    tgt = torch.randint(0, c["V"], (batch, seq), generator=g)
    x = ids
    for st in sts:
        x = st(x)
    hm.loss_fn(x, tgt).backward()
    out = []
    for st in sts:
        params = [p for p in hm.held(st) if isinstance(p, torch.nn.Parameter)]
        missing = [n for n, p in st.named_parameters() if p.grad is None]
        if missing:
            raise RuntimeError(f"no gradient for {missing[:3]}")
        if mixed:
            masters = []
            for p in params:
                m = p.detach().float().clone().requires_grad_(True)
                m.grad, p.grad = p.grad.float(), None
                masters.append(m)
            grads = sum(hm.nbytes(m.grad) for m in masters)
            opt = optimizer(opt_name, masters)
            opt.step()
            with torch.no_grad():
                for p, m in zip(params, masters):
                    p.copy_(m)
            extra = sum(hm.nbytes(m) for m in masters)
        else:
            grads = sum(hm.nbytes(p.grad) for p in params)
            opt = optimizer(opt_name, params)
            opt.step()
            extra = 0
        state = [(k, v) for s in opt.state.values() for k, v in s.items() if torch.is_tensor(v)]
        optim = extra + sum(hm.nbytes(v) for k, v in state if k != "step")
        step = sum(hm.nbytes(v) for k, v in state if k == "step")
        out.append((hm.count(st, st.tied_copy), stage_bytes(st), grads, optim, step))
        opt.zero_grad(set_to_none=True)
        for p in params:
            p.grad = None
    return out


def compare_step(sc, name, S, dtype, precision, opt_name="adamw"):
    what = f"step {name} S={S} {dtype} {precision}"
    what += "" if opt_name == "adamw" else f" {opt_name}"
    c = hm.read_config(FIX + name + ".json")
    parts = hm.Parts(c, "cpu", DTYPES[dtype], seed=S)
    hm.KERNELS.update(mode="fused", repeat_kv=False)
    try:
        got = train_step(parts, S, precision == "mixed", opt_name)
    except RuntimeError as e:
        return fail(what, f"torch: {e}")
    fig = (f"params {[r[1] for r in got]} grads {[r[2] for r in got]} "
           f"optimizer {[r[3] for r in got]} bytes" + (
               f" (AdamW's step tensors, {[r[4] for r in got]} bytes, left out)"
               if opt_name == "adamw" else ""))
    if sc.missing:
        return skip(what, f"{sc.missing} (torch: {fig})")
    try:
        out = sc.sim(name, S, dtype=dtype, precision=precision, optimizer=opt_name, zero=0, dp=1)
    except RuntimeError as e:
        return fail(what, str(e))
    cols = {"params": 0, "bytes.params": 1, "bytes.grads": 2, "bytes.optimizer": 3}
    bad = []
    for key, i in cols.items():
        mine = [r[i] for r in got]
        theirs = out["params"] if key == "params" else out["bytes"][key.split(".")[1]]
        if theirs != mine:
            bad.append(f"{key} {theirs}, torch {mine}")
    b = out["bytes"]
    for d in range(S):
        parts_sum = sum(b[k][d] for k in ("params", "grads", "optimizer", "activations",
                                          "workspace"))
        if b["total"][d] != parts_sum:
            bad.append(f"bytes.total[{d}] {b['total'][d]} != the sum of its parts {parts_sum}")
    check(what, not bad, fig, "; ".join(bad))


def zero3_bytes(name, S, dtype, dp, rank):
    """Rank `rank` of dp: each stage under FSDP2's fully_shard (torch's
    ZeRO-3: parameters, gradients and optimizer states sharded on dim 0),
    one forward, backward and AdamW step, over a fake process group (one
    process; the collectives move no data, the shards have their real
    sizes). Per stage (params, grads, optimizer) bytes of this rank."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=dp)
    try:
        c = hm.read_config(FIX + name + ".json")
        parts = hm.Parts(c, "cpu", DTYPES[dtype], seed=S)
        sts = hm.stages(parts, S)
        for st in sts:
            for layer in st.layers:
                fully_shard(layer)
            fully_shard(st)
        g = torch.Generator().manual_seed(1)
        x = torch.randint(0, c["V"], (2, 16), generator=g)
        for st in sts:
            x = st(x)
        x.float().square().mean().backward()
        local = lambda t: t.to_local() if hasattr(t, "to_local") else t  # noqa: E731
        out = []
        for st in sts:
            params = list(st.parameters())
            opt = torch.optim.AdamW(params, lr=1e-3)
            opt.step()
            out.append((sum(hm.nbytes(local(p)) for p in params),
                        sum(hm.nbytes(local(p.grad)) for p in params),
                        sum(hm.nbytes(local(v)) for s in opt.state.values()
                            for k, v in s.items() if k != "step")))
        return out
    finally:
        dist.destroy_process_group()


def compare_zero3(sc, name, S, dtype, dp):
    what = f"zero3 {name} S={S} {dtype} dp={dp}"
    got = {r: zero3_bytes(name, S, dtype, dp, r) for r in (0, dp - 1)}
    fig = (f"FSDP2 ranks 0 and {dp - 1}: params {[x[0] for x in got[0]]} grads "
           f"{[x[1] for x in got[0]]} optimizer {[x[2] for x in got[0]]} bytes")
    if sc.missing:
        return skip(what, f"{sc.missing} (torch: {fig})")
    try:
        out = sc.sim(name, S, dtype=dtype, precision="pure", optimizer="adamw", zero=3, dp=dp)
    except RuntimeError as e:
        return fail(what, str(e))
    bad = []
    for i, key in enumerate(("params", "grads", "optimizer")):
        for r, rows in got.items():
            mine = [x[i] for x in rows]
            if out["bytes"][key] != mine:
                bad.append(f"bytes.{key} {out['bytes'][key]}, torch rank {r} {mine}")
    check(what, not bad, fig, "; ".join(bad))


# ---------------------------------------------------------------- activations

def saved_per_token(layer, c, seq, batch=2, detail=None):
    """Bytes per token the layer's forward keeps for backward: the tensors
    saved_tensors_hooks packs, each storage once; parameters, buffers and
    the rotary tables (shared by all layers) left out. detail: a list that
    gets (bytes per token, shape, dtype) of each storage."""
    g = torch.Generator().manual_seed(seq)
    x = torch.randn(batch, seq, c["h"], generator=g).to(torch.bfloat16).requires_grad_(True)
    dim = c["rope"] if c["type"] == "deepseek_v3" else c["d"]
    cos, sin = hm.rope_tables(seq, dim, c["theta"], torch.bfloat16)
    skip_ptrs = {t.untyped_storage().data_ptr()
                 for t in list(layer.parameters()) + list(layer.buffers()) + [cos, sin]}
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = layer(x, cos, sin)
    seen = {}
    for t in packed:
        st = t.untyped_storage()
        if st.data_ptr() not in skip_ptrs:
            seen[st.data_ptr()] = (st.nbytes(), tuple(t.shape), t.dtype)
    y.float().square().mean().backward()  # the saved tensors do serve a backward
    tokens = batch * seq
    if detail is not None:
        detail.extend((n / tokens, shape, dt) for n, shape, dt in seen.values())
    total = sum(n for n, _, _ in seen.values())
    assert total % tokens == 0, (total, tokens)
    return total // tokens


def sdpa_saves():
    """What SDPA keeps on the CPU: the flash kernel's q, k and v (k, v with
    their own heads under enable_gqa), the output and the fp32 log-sum-exp,
    no s x s probabilities."""
    what = "act sdpa"
    b, s, H, K, d = 2, 64, 8, 2, 32
    q = torch.randn(b, H, s, d, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, K, s, d, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, K, s, d, dtype=torch.bfloat16, requires_grad=True)
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    kinds = sorted((tuple(t.shape), str(t.dtype).replace("torch.", "")) for t in packed)
    want = sorted([((b, H, s, d), "bfloat16"), ((b, K, s, d), "bfloat16"),
                   ((b, K, s, d), "bfloat16"), ((b, H, s, d), "bfloat16"),
                   ((b, H, s), "float32")])
    name = type(o.grad_fn).__name__
    check(what, "Flash" in name and kinds == want,
          f"{name} keeps q {b}x{H}x{s}x{d}, k and v {b}x{K}x{s}x{d}, out, "
          f"log-sum-exp {b}x{H}x{s} fp32",
          f"{name} keeps {kinds}, expected {want}")


def compare_act(sc, sample):
    sdpa_saves()
    seqs = [64, 256] if sample else [64, 128, 256]
    c = hm.read_config(FIX + "tiny-llama.json")
    torch.manual_seed(0)
    layer = hm.DecoderLayer(c, 0).to(torch.bfloat16)
    h, i, H, K, d, e = c["h"], c["i"], c["H"], c["K"], c["d"], 2
    measured = {}
    for mode, rep in (("fused", False), ("hf", False), ("hf", True)):
        hm.KERNELS.update(mode=mode, repeat_kv=rep)
        measured[mode, rep] = {s: saved_per_token(layer, c, s) for s in seqs}
    hm.KERNELS.update(mode="fused", repeat_kv=False)
    # repeat_kv: k and v with H heads instead of K, nothing else (torch only)
    a, r = measured["hf", False], measured["hf", True]
    check("act repeat_kv", all(r[s] - a[s] == 2 * e * (H - K) * d for s in seqs),
          f"transformers' eager layer keeps {r[seqs[0]]} B/token with repeat_kv, "
          f"{a[seqs[0]]} with enable_gqa: 2e(H-K)d = {2 * e * (H - K) * d} more",
          f"{[r[s] - a[s] for s in seqs]}, expected {2 * e * (H - K) * d}")
    if sc.missing:
        for s in seqs:
            skip(f"act decoder s={s}", sc.missing)
        skip("act decoder eager", sc.missing)
    else:
        for s in seqs:
            try:
                f = sc.sim("tiny-llama", 2, seq=s, batch=2)["model"]["kinds"]["decoder"][
                    "act_bytes_per_token"]
            except RuntimeError as err:
                fail(f"act decoder s={s}", str(err))
                continue
            m = measured["fused", False][s]
            check(f"act decoder s={s}", abs(m - f) <= 0.10 * f,
                  f"torch keeps {m} B/token, stagecraft {f} ({(m - f) / f:+.2%}; "
                  f"the two RMSNorms' fp32 reciprocal RMS, 8 B, are not in the formula)",
                  f"torch keeps {m} B/token, stagecraft {f} ({(m - f) / f:+.2%}): more than "
                  f"10% apart")
            if s == seqs[0]:
                diff = 2 * (4 * h + 4) + e * i
                hf = measured["hf", False][s]
                check("act decoder eager", hf == f + diff,
                      f"transformers' eager layer keeps {hf} B/token = stagecraft's {f} "
                      f"+ 2(4h + 4) + e*i = {diff} ({diff / f:+.1%})",
                      f"{hf} B/token, stagecraft {f} + {diff} = {f + diff}")
    # mixture of experts (mixtral)
    c = hm.read_config(FIX + "tiny-mixtral.json")
    torch.manual_seed(0)
    layer = hm.DecoderLayer(c, 0).to(torch.bfloat16)
    for s in seqs[-1:] if sample else seqs[1:]:
        m = saved_per_token(layer, c, s)
        if sc.missing:
            skip(f"act decoder-moe s={s}", sc.missing)
            continue
        try:
            f = sc.sim("tiny-mixtral", 2, seq=s, batch=2)["model"]["kinds"]["decoder-moe"][
                "act_bytes_per_token"]
        except RuntimeError as err:
            fail(f"act decoder-moe s={s}", str(err))
            continue
        check(f"act decoder-moe s={s}", abs(m - f) <= 0.10 * f,
              f"torch keeps {m} B/token, stagecraft {f} ({(m - f) / f:+.2%})",
              f"torch keeps {m} B/token, stagecraft {f} ({(m - f) / f:+.2%}): more than "
              f"10% apart")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: model_bytes.py STAGECRAFT [--sample]")
    sample = "--sample" in sys.argv[2:]
    torch.set_num_threads(1)
    start = time.process_time()
    sc = Stagecraft(sys.argv[1])
    if sc.missing:
        print(f"note: the comparisons with stagecraft are skipped: {sc.missing}")
        sc.missing = "stagecraft reports no model (see the note above)"
    S_big = [2, 4] if sample else [2, 3, 4, 8]
    for name in PUBLISHED:
        c = hm.read_config(FIX + name + ".json")
        parts = hm.Parts(c, "meta", DTYPES[CFG_DTYPE[c["dtype"]]])
        published(name, parts)
        for S in S_big:
            compare_stages(sc, name, parts, S)
        if name in UNEVEN:
            compare_stages(sc, name, parts, len(UNEVEN[name]), UNEVEN[name])
        compare_kinds(sc, name, parts)
        del parts
    for name in TINY:
        c = hm.read_config(FIX + name + ".json")
        compare_kinds(sc, name, hm.Parts(c, "meta", torch.bfloat16))
        for S in ([2] if sample else [2, 3]):
            for dtype in ("fp32", "bf16"):
                compare_step(sc, name, S, dtype, "pure")
        compare_step(sc, name, 2, "bf16", "mixed")
        if name in ("tiny-llama", "tiny-qwen3") and not sample:
            compare_step(sc, name, 2, "bf16", "pure", "sgd")
            compare_step(sc, name, 2, "bf16", "mixed", "sgd")
    # ZeRO-3 as torch's FSDP2 shards (sizes that dp divides: FSDP2 pads each
    # parameter's dim 0 to a multiple of dp, stagecraft's flat ceil(n / dp))
    compare_zero3(sc, "tiny-llama", 2, "bf16", 2)
    if not sample:
        compare_zero3(sc, "tiny-mistral", 2, "fp32", 4)
    compare_act(sc, sample)
    print(f"model_bytes: torch {torch.__version__}, {time.process_time() - start:.1f} CPU-s")
    n = counts
    print(f"model_bytes: {n['passed']} passed, {n['failed']} failed"
          + (f", {n['skipped']} skipped" if n["skipped"] else ""))
    sys.exit(1 if n["failed"] else 0)


if __name__ == "__main__":
    main()
