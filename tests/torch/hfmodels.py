"""hfmodels.py — the decoder models of the families stagecraft reads
(docs/model.md#hugging-face-configs), written by hand from a config.json
with Hugging Face's module names and parameter shapes (transformers is not
needed): llama, mistral, qwen2 (q, k, v biases), qwen3 (q and k norms),
mixtral (experts w1, w2, w3 and a router), deepseek_v3 (MLA, the first
layers dense, then routed and shared experts and a router with its
e_score_correction_bias). Built in pipeline stages: stage 0 holds the
embedding and its decoder layers, the last stage its decoder layers, the
final norm and the head; with tie_word_embeddings and more than one stage
the last stage holds its own copy of the embedding matrix as the head.

The kernels are chosen by KERNELS["mode"]:
  "fused"  what trainers of these models run and docs/model.md#formulas
           assumes: an RMSNorm kernel that keeps its input and the per-token
           reciprocal RMS (torch's CUDA _fused_rms_norm, Apex, Transformer
           Engine), a fused SwiGLU that keeps its two inputs (Megatron-LM's
           SwiGLUFunction) and SDPA with enable_gqa (k and v with their own
           heads, as FlashAttention keeps them);
  "hf"     the eager modeling code of transformers as written: LlamaRMSNorm
           (an fp32 copy of the input), act_fn(gate_proj(x)) * up_proj(x);
           KERNELS["repeat_kv"] repeats k and v to the query heads before SDPA
           (transformers' repeat_kv).
Used by model_bytes.py."""
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELS = {"mode": "fused", "repeat_kv": False}


def read_config(path):
    """config.json as the sizes hfconfig.c reads, its defaults filled in."""
    with open(path) as f:
        j = json.load(f)

    def get(key, default=None):
        v = j.get(key)
        return default if v is None else v

    t = j["model_type"]
    c = dict(type=t, h=j["hidden_size"], i=j["intermediate_size"], H=j["num_attention_heads"],
             L=j["num_hidden_layers"], V=j["vocab_size"], tie=get("tie_word_embeddings", False),
             eps=get("rms_norm_eps", 1e-6), theta=get("rope_theta", 10000.0),
             dtype=get("torch_dtype", get("dtype", "bfloat16")))
    c["K"] = get("num_key_value_heads", c["H"])
    c["d"] = get("head_dim", c["h"] // c["H"])
    c["attn_bias"] = t in ("llama", "qwen3", "deepseek_v3") and get("attention_bias", False)
    c["qkv_bias"] = t == "qwen2"
    c["mlp_bias"] = t == "llama" and get("mlp_bias", False)
    c["qk_norm"] = t == "qwen3"
    c["E"] = 0
    if t == "mixtral":
        c.update(E=j["num_local_experts"], k=j["num_experts_per_tok"], moe_i=c["i"], shared=0,
                 first_dense=0, freq=1)
    if t == "deepseek_v3":
        c.update(E=j["n_routed_experts"], k=j["num_experts_per_tok"],
                 moe_i=j["moe_intermediate_size"], shared=get("n_shared_experts", 0),
                 first_dense=get("first_k_dense_replace", 0), freq=get("moe_layer_freq", 1),
                 q_lora=get("q_lora_rank", 0), kv_lora=j["kv_lora_rank"],
                 nope=j["qk_nope_head_dim"], rope=j["qk_rope_head_dim"], vd=j["v_head_dim"],
                 scale=get("routed_scaling_factor", 1.0), norm_topk=get("norm_topk_prob", False))
    return c


def is_moe(c, layer_idx):
    return c["E"] > 0 and layer_idx >= c["first_dense"] and layer_idx % c["freq"] == 0


class Linear(nn.Linear):
    """nn.Linear (weight out x in, bias out); no initialization on the meta
    device, where there is nothing to initialize (the big models build fast)."""

    def reset_parameters(self):
        if not self.weight.is_meta:
            super().reset_parameters()


class FusedRMSNormFn(torch.autograd.Function):
    """Keeps the input and the fp32 reciprocal RMS per token, as a fused
    RMSNorm kernel does; the output is computed as LlamaRMSNorm computes it."""

    @staticmethod
    def forward(ctx, x, w, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, w, rstd)
        return w * (xf * rstd).to(x.dtype)

    @staticmethod
    def backward(ctx, gy):
        x, w, rstd = ctx.saved_tensors
        xhat = x.float() * rstd
        gw = (gy.float() * xhat).reshape(-1, x.shape[-1]).sum(0).to(w.dtype)
        g = (gy * w).float()
        gx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        return gx.to(x.dtype), gw, None


class RMSNorm(nn.Module):
    """LlamaRMSNorm: weight of n."""

    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        if KERNELS["mode"] == "fused":
            return FusedRMSNormFn.apply(x, self.weight, self.eps)
        dtype = x.dtype  # transformers' LlamaRMSNorm.forward
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


class FusedSwiGLUFn(torch.autograd.Function):
    """silu(g) * u keeping g and u only (Megatron-LM's SwiGLUFunction keeps
    its input and recomputes in backward)."""

    @staticmethod
    def forward(ctx, g, u):
        ctx.save_for_backward(g, u)
        return F.silu(g) * u

    @staticmethod
    def backward(ctx, gy):
        g, u = ctx.saved_tensors
        gf, uf, gyf = g.float(), u.float(), gy.float()
        s = torch.sigmoid(gf)
        dg = gyf * uf * s * (1 + gf * (1 - s))
        return dg.to(g.dtype), (gyf * gf * s).to(u.dtype)


def swiglu(g, u):
    if KERNELS["mode"] == "fused":
        return FusedSwiGLUFn.apply(g, u)
    return F.silu(g) * u


class MLP(nn.Module):
    """LlamaMLP / DeepseekV3MLP: gate_proj, up_proj (width x h), down_proj."""

    def __init__(self, h, width, bias=False):
        super().__init__()
        self.gate_proj = Linear(h, width, bias=bias)
        self.up_proj = Linear(h, width, bias=bias)
        self.down_proj = Linear(width, h, bias=bias)

    def forward(self, x):
        return self.down_proj(swiglu(self.gate_proj(x), self.up_proj(x)))


class MixtralExpert(nn.Module):
    """MixtralBlockSparseTop2MLP: w1 (gate), w3 (up), w2 (down)."""

    def __init__(self, h, width):
        super().__init__()
        self.w1 = Linear(h, width, bias=False)
        self.w2 = Linear(width, h, bias=False)
        self.w3 = Linear(h, width, bias=False)

    def forward(self, x):
        return self.w2(swiglu(self.w1(x), self.w3(x)))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def rope_tables(seq, dim, theta, dtype):
    """cos and sin (seq x dim), computed once per forward and shared by every
    layer, as LlamaModel's rotary_emb does."""
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    f = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    emb = torch.cat((f, f), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def repeat_kv(x, n):
    b, k, s, d = x.shape
    return x if n == 1 else x[:, :, None].expand(b, k, n, s, d).reshape(b, k * n, s, d)


def attend(q, k, v, scale=None):
    """SDPA, causal; k and v with fewer heads than q go in as they are
    (enable_gqa) or repeated first (KERNELS["repeat_kv"])."""
    n = q.shape[1] // k.shape[1]
    if n > 1 and KERNELS["repeat_kv"]:
        k, v, n = repeat_kv(k, n), repeat_kv(v, n), 1
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=n > 1)


class Attention(nn.Module):
    """LlamaAttention (and Mistral's, Qwen2's with q, k, v biases, Qwen3's
    with q_norm and k_norm of head_dim)."""

    def __init__(self, c):
        super().__init__()
        h, H, K, d = c["h"], c["H"], c["K"], c["d"]
        b = c["attn_bias"] or c["qkv_bias"]
        self.H, self.K, self.d = H, K, d
        self.q_proj = Linear(h, H * d, bias=b)
        self.k_proj = Linear(h, K * d, bias=b)
        self.v_proj = Linear(h, K * d, bias=b)
        self.o_proj = Linear(H * d, h, bias=c["attn_bias"])
        if c["qk_norm"]:
            self.q_norm = RMSNorm(d, c["eps"])
            self.k_norm = RMSNorm(d, c["eps"])

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.H, self.d)
        k = self.k_proj(x).view(b, s, self.K, self.d)
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = rope(q.transpose(1, 2), cos, sin), rope(k.transpose(1, 2), cos, sin)
        v = self.v_proj(x).view(b, s, self.K, self.d).transpose(1, 2)
        o = attend(q, k, v)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, self.H * self.d))


class MLAttention(nn.Module):
    """DeepseekV3Attention: q through q_a_proj, q_a_layernorm, q_b_proj (or
    q_proj straight when q_lora_rank is null), k and v from the latent of
    kv_a_proj_with_mqa (with the shared rope key), kv_a_layernorm,
    kv_b_proj; o_proj from H v-heads."""

    def __init__(self, c):
        super().__init__()
        h, H = c["h"], c["H"]
        self.H, self.nope, self.rope, self.vd = H, c["nope"], c["rope"], c["vd"]
        self.kv_lora = c["kv_lora"]
        qd = H * (c["nope"] + c["rope"])
        if c["q_lora"]:
            self.q_a_proj = Linear(h, c["q_lora"], bias=c["attn_bias"])
            self.q_a_layernorm = RMSNorm(c["q_lora"], c["eps"])
            self.q_b_proj = Linear(c["q_lora"], qd, bias=False)
        else:
            self.q_proj = Linear(h, qd, bias=False)
        self.kv_a_proj_with_mqa = Linear(h, c["kv_lora"] + c["rope"], bias=c["attn_bias"])
        self.kv_a_layernorm = RMSNorm(c["kv_lora"], c["eps"])
        self.kv_b_proj = Linear(c["kv_lora"], H * (c["nope"] + c["vd"]), bias=False)
        self.o_proj = Linear(H * c["vd"], h, bias=c["attn_bias"])

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        H = self.H
        q = (self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))) if hasattr(self, "q_a_proj")
             else self.q_proj(x))
        q = q.view(b, s, H, self.nope + self.rope).transpose(1, 2)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        latent, k_pe = self.kv_a_proj_with_mqa(x).split([self.kv_lora, self.rope], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent)).view(b, s, H, self.nope + self.vd)
        k_nope, v = kv.transpose(1, 2).split([self.nope, self.vd], dim=-1)
        q_pe, k_pe = rope(q_pe, cos, sin), rope(k_pe.view(b, 1, s, self.rope), cos, sin)
        q = torch.cat((q_nope, q_pe), dim=-1)
        k = torch.cat((k_nope, k_pe.expand(b, H, s, self.rope)), dim=-1)
        o = attend(q, k, v, scale=(self.nope + self.rope) ** -0.5)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, H * self.vd))


def dispatch(x, experts, idx, weights):
    """Each token to its experts, the outputs weighted and summed (the loop of
    MixtralSparseMoeBlock and DeepseekV3MoE; every expert runs, even on no
    tokens, so that every expert has a gradient)."""
    out = torch.zeros_like(x)
    mask = F.one_hot(idx, len(experts)).permute(2, 1, 0)
    for e, expert in enumerate(experts):
        slot, tok = torch.where(mask[e])
        y = expert(x[tok]) * weights[tok, slot, None]
        out.index_add_(0, tok, y.to(x.dtype))
    return out


class MixtralMoE(nn.Module):
    """MixtralSparseMoeBlock: gate (E x h, no bias), experts."""

    def __init__(self, c):
        super().__init__()
        self.k = c["k"]
        self.gate = Linear(c["h"], c["E"], bias=False)
        self.experts = nn.ModuleList(MixtralExpert(c["h"], c["moe_i"]) for _ in range(c["E"]))

    def forward(self, x):
        shape = x.shape
        x = x.view(-1, shape[-1])
        w = F.softmax(self.gate(x), dim=1, dtype=torch.float)
        w, idx = torch.topk(w, self.k, dim=-1)
        w = (w / w.sum(dim=-1, keepdim=True)).to(x.dtype)
        return dispatch(x, self.experts, idx, w).view(shape)


class TopkRouter(nn.Module):
    """DeepseekV3TopkRouter: weight (E x h) and the e_score_correction_bias
    buffer (E; in the checkpoint, not trained by the gradient)."""

    def __init__(self, c):
        super().__init__()
        self.k, self.scale, self.norm = c["k"], c["scale"], c["norm_topk"]
        self.weight = nn.Parameter(torch.empty(c["E"], c["h"]))
        if not self.weight.is_meta:
            nn.init.normal_(self.weight, std=0.02)
        self.register_buffer("e_score_correction_bias", torch.zeros(c["E"]))

    def forward(self, x):
        scores = F.linear(x.float(), self.weight.float()).sigmoid()
        choice = scores.detach() + self.e_score_correction_bias.float()
        idx = torch.topk(choice, self.k, dim=-1).indices
        w = scores.gather(1, idx)
        if self.norm:
            w = w / (w.sum(dim=-1, keepdim=True) + 1e-20)
        return idx, w * self.scale


class DeepseekMoE(nn.Module):
    """DeepseekV3MoE: experts (moe_intermediate_size), gate, shared_experts
    (one MLP of n_shared_experts x moe_intermediate_size)."""

    def __init__(self, c):
        super().__init__()
        self.experts = nn.ModuleList(MLP(c["h"], c["moe_i"]) for _ in range(c["E"]))
        self.gate = TopkRouter(c)
        if c["shared"]:
            self.shared_experts = MLP(c["h"], c["moe_i"] * c["shared"])

    def forward(self, x):
        shape = x.shape
        flat = x.view(-1, shape[-1])
        idx, w = self.gate(flat)
        out = dispatch(flat, self.experts, idx, w.to(x.dtype)).view(shape)
        return out + self.shared_experts(x) if hasattr(self, "shared_experts") else out


class DecoderLayer(nn.Module):
    """input_layernorm, self_attn, post_attention_layernorm, then mlp
    (block_sparse_moe in Mixtral's checkpoint)."""

    def __init__(self, c, layer_idx):
        super().__init__()
        self.input_layernorm = RMSNorm(c["h"], c["eps"])
        self.self_attn = MLAttention(c) if c["type"] == "deepseek_v3" else Attention(c)
        self.post_attention_layernorm = RMSNorm(c["h"], c["eps"])
        self.moe = is_moe(c, layer_idx)
        if c["type"] == "mixtral":
            self.block_sparse_moe = MixtralMoE(c)
        elif self.moe:
            self.mlp = DeepseekMoE(c)
        else:
            self.mlp = MLP(c["h"], c["i"], bias=c["mlp_bias"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        ff = self.block_sparse_moe if hasattr(self, "block_sparse_moe") else self.mlp
        return x + ff(self.post_attention_layernorm(x))


def split_layers(L, S):
    """Decoder layers per stage: even, the first L % S stages one more."""
    return [L // S + (1 if s < L % S else 0) for s in range(S)]


class Parts:
    """The model's modules, built once (on device, in dtype): embed_tokens,
    the decoder layers, norm, lm_head (None when tied)."""

    def __init__(self, c, device="cpu", dtype=torch.float32, seed=0):
        self.c = c
        torch.manual_seed(seed)
        with torch.device(device):
            self.embed = nn.Embedding(c["V"], c["h"])
            self.layers = [DecoderLayer(c, l) for l in range(c["L"])]
            self.norm = RMSNorm(c["h"], c["eps"])
            self.head = None if c["tie"] else Linear(c["h"], c["V"], bias=False)
        for m in [self.embed, self.norm, self.head] + self.layers:
            if m is not None:
                m.to(dtype)
        self.device, self.dtype = device, dtype


class Stage(nn.Module):
    """One pipeline stage: embed_tokens on the first, then its decoder
    layers, norm and lm_head on the last."""

    def __init__(self, c, embed, layers, norm, head):
        super().__init__()
        self.c = c
        self.embed_tokens = embed
        self.layers = nn.ModuleList(layers)
        self.norm, self.lm_head = norm, head

    def forward(self, x):
        if self.embed_tokens is not None:
            x = self.embed_tokens(x)
        c = self.c
        dim = c["rope"] if c["type"] == "deepseek_v3" else c["d"]
        cos, sin = rope_tables(x.shape[1], dim, c["theta"], x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        if self.lm_head is not None:
            x = self.lm_head(self.norm(x))
        return x


def stages(parts, S, counts=None):
    """The S stages over the built parts (modules shared, not copied), with
    counts[s] decoder layers on stage s (default split_layers). A tied head
    is the embedding's own weight with one stage, a copy of it on the last
    stage with more (stage.tied_copy names it)."""
    c, n = parts.c, counts or split_layers(parts.c["L"], S)
    out, first = [], 0
    for s in range(S):
        last = s == S - 1
        head = parts.head
        if last and c["tie"]:
            with torch.device(parts.device):
                head = Linear(c["h"], c["V"], bias=False).to(parts.dtype)
            if S == 1:
                head.weight = parts.embed.weight
            elif not head.weight.is_meta:
                with torch.no_grad():
                    head.weight.copy_(parts.embed.weight)
        st = Stage(c, parts.embed if s == 0 else None, parts.layers[first:first + n[s]],
                   parts.norm if last else None, head if last else None)
        st.tied_copy = head.weight if last and c["tie"] and S > 1 else None
        out.append(st)
        first += n[s]
    return out


def held(module):
    """The tensors a module holds as model state: its parameters and the
    buffers its checkpoint has (e_score_correction_bias), each once."""
    seen, out = set(), []
    for t in list(module.parameters()) + [b for n, b in module.named_buffers()
                                          if n.endswith("e_score_correction_bias")]:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def count(module, exclude=None):
    return sum(t.numel() for t in held(module) if t is not exclude)


def nbytes(t):
    return t.numel() * t.element_size()


def kind_params(parts):
    """Parameters of one layer of each kind, stagecraft's names."""
    out = {"embedding": count(parts.embed), "final-norm": count(parts.norm),
           "head": count(parts.head) if parts.head is not None else 0}
    for l, layer in enumerate(parts.layers):
        out.setdefault("decoder-moe" if layer.moe else "decoder",
                       count(layer))
    return out


def loss_fn(logits, target):
    return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), target.view(-1))

