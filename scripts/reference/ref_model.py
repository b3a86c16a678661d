"""ref_model.py — an independent PyTorch reference of the gatelab model.

What it does: defines the model of docs/model.md with every variant the
parity fixtures cover — plain pre-norm Llama-style blocks (GQA, optional
qk-norm, rotary, SwiGLU, tied or untied head), the value residual
(ResFormer plus / learnable / identity, SATFormer gates — ReLU, sigmoid,
softmax, softmax·sigmoid, tanh or identity, with or without a bias —,
optionally on the last k blocks only), and depth routing (TSA soft routers with a depth penalty,
early exit with weighted per-block losses), and cross-layer connectivity
(DenseFormer depth-weighted averages, dynamic hyper-connections, MUDD
connections; docs/crosslayer.md), and the TSA paper's own model (backbone
gpt2: LayerNorm with bias, learned positions, GELU MLP with biases; TSA in
the paper's form; dropout with masks given by the caller) — as a plain function of a
dictionary of named parameters, so that autograd gives the gradients and
torch.optim.AdamW the optimiser steps.

What it does not: it is not fast, holds no state, and was written from the
design and the conventions below only, not from the C code, so that it is an
independent check of model/*.c.  Everything runs in whatever dtype the
parameters have; make_fixtures.py uses float64 so the fixture is the ground
truth for the float32 C model.

Conventions (the contract the C model is held to):
  * weights are (out, in): y = x Wᵀ; no biases in the backbone;
  * RMSNorm(x) = x / sqrt(mean(x²) + eps) · g;
  * qk-norm: RMSNorm over each head's hd features, one (hd,) scale shared by
    all heads, applied to q and k before rotary;
  * rotary, rotate-half: for i < hd/2, freq_i = base^(-2i/hd), angle = pos·freq_i,
    out[i] = x[i]cos − x[i+hd/2]sin, out[i+hd/2] = x[i+hd/2]cos + x[i]sin,
    positions 0..T-1 in every window;
  * GQA: query head h reads kv head h // (H / Hkv);
  * V1 = block 0's v (x Wvᵀ, before qk-norm and rotary, which v never gets),
    not detached; mixing blocks M = {1 ≤ n ≤ L-1, and n ≥ L-k when k > 0};
  * SATFormer: α = gate(xv Wαᵀ + b) per token, one value per KV head, where
    xv is the block's value-path norm output and gate is, as in the official
    SATFormer code (ValueResidualMixing): relu, sigmoid, tanh, identity
    elementwise; softmax = Hkv·softmax over the KV-head axis of the token;
    softmax_sigmoid = Hkv·softmax(z)·sigmoid(z); b (attn.alpha_bias, Hkv) only
    when sat_gate_bias; v' = v + α·V1;
  * AdamW: two groups (decay on the tensors `decays` marks, none on the rest),
    or, with weight_decay_policy "all", one group that decays every tensor;
  * TSA router r = n-1 reads block n's attention-norm output; block n's update
    a + f is scaled by (1 − p); the FFN still sees h + a unscaled;
  * backbone gpt2 (the TSA paper's code, docs/model.md "The TSA paper's own
    configuration"): LayerNorm(x) = (x − mean)/sqrt(var + eps)·g + b (biased
    variance) for every norm; h0 = E[token] + pos_embed[position]; no rotary,
    no qk-norm; FFN = (GELU_erf(x W1ᵀ + b1)) W2ᵀ + b2; the embedding is not
    decayed;
  * tsa_form paper: router r = n-1 reads the raw residual stream h entering
    block n, p = σ(w2·ReLU(W1 h + b1) + b2); h ← h + (1−p)·a, then the FFN
    reads that h and h ← h + (1−p)·f;
  * dropout: multiplicative masks (0 or 1/(1 − r)) handed in by the caller
    on the embedding sum, the attention probabilities, the FFN hidden
    activation and the FFN output (make_fixtures.py computes the C model's);
  * early exit: every block's output goes through the shared final norm and
    head; loss = Σ w_n CE_n, w ∝ n+1 (linear) or 1/L (uniform);
  * early exit in the TSA paper's form (exit_form paper; its official
    early-exit baseline): the exit after block n < L-1 has its own norm
    layers.{n}.exit_norm (the backbone's kind: RMSNorm, or LayerNorm with
    layers.{n}.exit_norm_bias on gpt2), the exit after the last block is
    final_norm; every exit uses the (tied) head; the training loss is the plain
    mean of the L exits' losses, block 0's included.  At evaluation with a
    threshold τ (paper_exit_eval): a token's prediction is the logits of the
    first exit n in 1..L-2 whose max softmax probability is > τ, else the
    last exit's; nothing else changes (its state goes on through every block,
    so the dense forward's exit logits are exactly those predictions);
  * cross-layer (docs/crosslayer.md; states s_0 = embedding, s_{n+1} = output
    of block n):
      denseformer  block n+1 reads Σ_j dwa.{n}[j] s_j (the final norm reads the
                   last average);
      hyper        S = hc_expansion streams, all = embedding at the start; a
                   module around each attention (k = 2n) and FFN (k = 2n+1):
                   H̄ = H / rms(H) per stream (no scale), α = Sα + sα·tanh(H̄ Wαᵀ)
                   (S, S+1), β = Sβ + sβ·tanh(H̄ wβᵀ) (S); layer input
                   x = Σ_i α[i,0] H_i, streams after = β_j y + Σ_i α[i,1+j] H_i;
                   final h = Σ_i H_i;
      mudd         after block n, w = w2·GELU(w1·(s_{n+1}/rms)) + bias, viewed
                   (C, n+2) with C = 4 (q, k, v, r) or 1 after the last block;
                   stream c = Σ_j w[c, j] s_j; block n ≥ 1 normalises q, k, v
                   streams with attn_norm / attn_norm_k / attn_norm_v, adds its
                   attention to the r stream; SATFormer's gate reads the
                   normed value stream.
"""
import dataclasses
import math

import numpy as np
from collections import OrderedDict

import torch
import torch.nn.functional as F


@dataclasses.dataclass
class Config:
    vocab_size: int = 13
    d_model: int = 32
    n_layer: int = 3
    n_head: int = 4
    n_kv_head: int = 4
    d_ff: int = 48
    seq_len: int = 8
    norm_eps: float = 1e-6
    rope_base: float = 10000.0
    qk_norm: int = 1
    tied: int = 1
    value_residual: str = "none"        # none | resformer | satformer
    resformer_variant: str = "plus"     # plus | learnable | identity
    value_residual_last_k: int = 0
    decay_gates: int = 1
    sat_gate: str = "relu"              # relu | sigmoid | softmax | softmax_sigmoid | tanh | identity
    sat_gate_bias: int = 0              # 1: learned bias on the gate projection
    weight_decay_policy: str = "matrices"  # matrices | all
    depth_routing: str = "none"         # none | tsa | early_exit | mod | random
    router_hidden: int = 0              # 0: max(d/4, 16)
    tsa_lambda: float = 0.0
    exit_weighting: str = "linear"      # linear | uniform
    exit_form: str = "gatelab"          # gatelab (shared final norm) | paper (an exit norm per block)
    cross_layer: str = "none"           # none | denseformer | hyper | mudd
    hc_expansion: int = 4               # hyper: streams S
    mod_capacity: float = 0.125         # mod: share of a window's tokens a routed block processes
    mod_every: int = 2                  # mod: block n >= 1 routed when (n - 1) % mod_every == 0
    random_alpha: float = 0.5           # random: probability a (token, block >= 1) pair is computed
    backbone: str = "llama"             # llama | gpt2
    tsa_form: str = "gatelab"           # gatelab | paper
    dropout: float = 0.0                # > 0: masks come from forward's drop argument

    @property
    def hd(self):
        assert self.d_model % self.n_head == 0
        return self.d_model // self.n_head

    def exit_paper(self):
        """Early exit in the TSA paper's form: its own norm per exit, uniform mean, no exit after block 0."""
        return self.depth_routing == "early_exit" and self.exit_form == "paper"

    def exit_norm(self, n):
        """The name of the norm in front of exit n's head."""
        return f"layers.{n}.exit_norm" if self.exit_paper() and n < self.n_layer - 1 else "final_norm"

    @property
    def R(self):
        return self.router_hidden if self.router_hidden > 0 else max(self.d_model // 4, 16)

    def mixing_blocks(self):
        """Blocks that mix V1 into their values, in increasing order."""
        if self.value_residual == "none":
            return []
        L, k = self.n_layer, self.value_residual_last_k
        return [n for n in range(1, L) if k == 0 or n >= L - k]

    def routed(self, n):
        """Block n's tokens are routed (mod: every mod_every-th block from block 1; random: all n >= 1)."""
        if n < 1:
            return False
        if self.depth_routing == "mod":
            return (n - 1) % self.mod_every == 0
        return self.depth_routing in ("tsa", "random")

    def mod_k(self, T):
        """Tokens a routed MoD block processes in a window of T: round(capacity·T), in [1, T]."""
        k = int(math.floor(float(np.float32(self.mod_capacity) * np.float32(T)) + 0.5))
        return min(max(k, 1), T)

    def mudd_C(self, n):
        """MUDD ways after block n: q, k, v, r — only r after the last block."""
        return 4 if n + 1 < self.n_layer else 1


def param_shapes(cfg):
    """Every parameter name (docs/model.md pattern) with its shape, in a fixed order."""
    V, d, H, Hkv, hd, ff = cfg.vocab_size, cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.hd, cfg.d_ff
    M = cfg.mixing_blocks()
    s = OrderedDict()
    gpt2 = cfg.backbone == "gpt2"
    s["embed"] = (V, d)
    if gpt2:
        s["pos_embed"] = (cfg.seq_len, d)
    for n in range(cfg.n_layer):
        p = f"layers.{n}."
        s[p + "attn_norm"] = (d,)
        if gpt2:
            s[p + "attn_norm_bias"] = (d,)
        if cfg.cross_layer == "mudd" and n >= 1:
            s[p + "attn_norm_k"] = (d,)
            s[p + "attn_norm_v"] = (d,)
        s[p + "attn.wq"] = (H * hd, d)
        s[p + "attn.wk"] = (Hkv * hd, d)
        s[p + "attn.wv"] = (Hkv * hd, d)
        s[p + "attn.wo"] = (d, H * hd)
        if cfg.qk_norm:
            s[p + "attn.q_norm"] = (hd,)
            s[p + "attn.k_norm"] = (hd,)
        if n in M and cfg.value_residual == "satformer":
            s[p + "attn.alpha"] = (Hkv, d)
            if cfg.sat_gate_bias:
                s[p + "attn.alpha_bias"] = (Hkv,)
        if n in M and cfg.value_residual == "resformer":
            if cfg.resformer_variant == "learnable":
                s[p + "attn.lambda1"] = (1,)
            if cfg.resformer_variant in ("plus", "learnable"):
                s[p + "attn.lambda2"] = (1,)
        s[p + "ffn_norm"] = (d,)
        if gpt2:
            s[p + "ffn_norm_bias"] = (d,)
        s[p + "ffn.w1"] = (ff, d)
        if gpt2:
            s[p + "ffn.b1"] = (ff,)
        s[p + "ffn.w2"] = (d, ff)
        if gpt2:
            s[p + "ffn.b2"] = (d,)
        else:
            s[p + "ffn.w3"] = (ff, d)
        if cfg.exit_paper() and n < cfg.n_layer - 1:
            s[p + "exit_norm"] = (d,)
            if gpt2:
                s[p + "exit_norm_bias"] = (d,)
    if cfg.value_residual == "resformer" and cfg.resformer_variant == "plus":
        s["resformer.scale"] = (1,)
        s["resformer.logits"] = (len(M),)
    S = cfg.hc_expansion
    for n in range(cfg.n_layer):
        if cfg.cross_layer == "denseformer":
            s[f"dwa.{n}"] = (n + 2,)
        elif cfg.cross_layer == "hyper":
            for part in ("attn", "ffn"):
                q = f"hyper.{n}.{part}."
                s[q + "static_alpha"] = (S, S + 1)
                s[q + "static_beta"] = (S,)
                s[q + "dynamic_alpha_fn"] = (S + 1, d)
                s[q + "dynamic_beta_fn"] = (1, d)
                s[q + "dynamic_alpha_scale"] = (1,)
                s[q + "dynamic_beta_scale"] = (1,)
        elif cfg.cross_layer == "mudd":
            C, K = cfg.mudd_C(n), cfg.mudd_C(n) * (n + 2)
            s[f"mudd.{n}.w1"] = (K, d)
            s[f"mudd.{n}.w2"] = (K, K)
            s[f"mudd.{n}.bias"] = (C, n + 2)
    if cfg.depth_routing == "tsa":
        for r in range(cfg.n_layer - 1):
            s[f"routers.{r}.fc1_w"] = (cfg.R, d)
            s[f"routers.{r}.fc1_b"] = (cfg.R,)
            s[f"routers.{r}.fc2_w"] = (1, cfg.R)
            s[f"routers.{r}.fc2_b"] = (1,)
    if cfg.depth_routing == "mod":
        for n in range(1, cfg.n_layer):
            if cfg.routed(n):
                s[f"routers.{n - 1}.mod_w"] = (1, d)
    s["final_norm"] = (d,)
    if gpt2:
        s["final_norm_bias"] = (d,)
    if not cfg.tied:
        s["head"] = (V, d)
    return s


GATE_LEAVES = ("attn.lambda1", "attn.lambda2")
GATE_GLOBALS = ("resformer.scale", "resformer.logits")


def decays(cfg, name, shape):
    """1 when AdamW weight decay applies to the parameter (convention 11)."""
    if name.endswith(("attn.alpha", "attn.alpha_bias")):
        return int(cfg.decay_gates == 1)
    if name.endswith(GATE_LEAVES) or name in GATE_GLOBALS:
        return int(cfg.decay_gates == 1)
    # cross-layer: the projections decay like matrices; static weights and scales do not
    if name.startswith(("dwa.", "hyper.", "mudd.")):
        return int(name.endswith(("_fn", ".w1", ".w2")))
    if cfg.backbone == "gpt2" and name in ("embed", "pos_embed"):
        return 0  # the TSA paper's code decays no embedding (the tied head included)
    return int(len(shape) == 2)


def random_params(cfg, gen, dtype=torch.float64):
    """Non-trivial random weights (see make_fixtures.py for why these scales).

    Values are rounded through float32 first so the float32 C model and the
    float64 reference start from exactly the same numbers."""
    out = OrderedDict()
    for name, shape in param_shapes(cfg).items():
        def normal(std, mean=0.0):
            return mean + std * torch.randn(shape, generator=gen, dtype=torch.float64)
        leaf = name.split(".")[-1]
        if leaf in ("attn_norm", "ffn_norm", "final_norm", "q_norm", "k_norm",
                    "attn_norm_k", "attn_norm_v", "exit_norm"):
            t = normal(0.2, 1.0)
        elif name.startswith(("dwa.", "hyper.", "mudd.")):
            t = xl_random(cfg, name, shape, normal)
        elif name in ("embed", "head", "pos_embed"):
            t = normal(0.3)
        elif leaf in ("attn_norm_bias", "ffn_norm_bias", "final_norm_bias", "exit_norm_bias", "b1", "b2"):
            t = normal(0.1)
        elif leaf == "alpha":
            t = normal(0.3)
        elif leaf == "alpha_bias":
            t = normal(0.3, 0.2)
        elif leaf in ("lambda1", "lambda2"):
            t = normal(0.2, 0.5)
        elif name == "resformer.scale":
            t = normal(0.3, float(cfg.n_layer))
        elif name == "resformer.logits":
            t = normal(0.5)
        elif leaf == "fc1_w":
            t = normal(0.3)
        elif leaf == "fc1_b":
            t = normal(0.1)
        elif leaf == "fc2_w":
            t = normal(0.5)
        elif leaf == "fc2_b":
            t = normal(0.1)
        elif leaf == "mod_w":
            t = normal(0.3)  # router logits ~1: σ(r) clearly between 0 and 1, top-k far from ties
        elif leaf in ("wq", "wk"):
            t = normal(0.2)  # big enough that attention is far from uniform
        else:
            t = normal(0.1)
        out[name] = t.to(torch.float32).to(dtype)
    return out


def xl_random(cfg, name, shape, normal):
    """Cross-layer weights: their initial structure (a plain residual network)
    plus noise large enough that every dynamic path matters."""
    n, leaf = int(name.split(".")[1]), name.split(".")[-1]
    if name.startswith("dwa."):
        t = normal(0.3)
        t[n + 1] += 1.0
    elif leaf == "static_alpha":
        S = shape[0]
        k = 2 * n + (1 if ".ffn." in name else 0)
        t = normal(0.2)
        t[k % S, 0] += 1.0
        t[:, 1:] += torch.eye(S, dtype=t.dtype)
    elif leaf == "static_beta":
        t = normal(0.2, 1.0)
    elif leaf in ("dynamic_alpha_scale", "dynamic_beta_scale"):
        t = normal(0.1, 0.5)
    elif leaf in ("dynamic_alpha_fn", "dynamic_beta_fn"):
        # tanh arguments ~1: clearly nonlinear, not saturated.  The gradients of
        # the scalar scales are sums over tokens and streams that partly cancel
        # (a gradient through a scale-free norm is nearly orthogonal to its
        # input), so their float32 error depends on these draws; with these
        # scales the C model stays within 2.5e-5 of float64 on every hyper case
        # (tanh arguments ~0.3 left one scale gradient at 1.1e-4, over the tolerance).
        t = normal(0.2)
    elif leaf in ("w1", "w2"):
        t = normal(0.1)  # MUDD MLP pre-activations ~0.6
    else:  # mudd bias (C, n+2)
        t = normal(0.3)
        t[:, n + 1] += 1.0
    return t


def rmsnorm(x, g, eps):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * g


def layernorm(x, g, b, eps):
    mu = x.mean(dim=-1, keepdim=True)
    var = (x - mu).pow(2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g + b


def rope_tables(T, hd, base, dtype):
    half = hd // 2
    i = torch.arange(half, dtype=torch.float64)
    freq = base ** (-2.0 * i / hd)                       # (hd/2)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]  # (T, hd/2)
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def rope(x, cos, sin):
    """x (B, T, nh, hd); cos, sin (T, hd/2); rotate-half."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def rms_noscale(x, eps):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def hc_width(cfg, P, k, Hs):
    """Hyper-connection module k on streams Hs (B, T, S, d): the layer input
    (B, T, d), the carried streams Σ_i α[i,1+j] H_i (B, T, S, d) and β (B, T, S)."""
    q = f"hyper.{k // 2}.{'attn' if k % 2 == 0 else 'ffn'}."
    hbar = rms_noscale(Hs, cfg.norm_eps)
    alpha = P[q + "static_alpha"] + P[q + "dynamic_alpha_scale"][0] * torch.tanh(
        hbar @ P[q + "dynamic_alpha_fn"].T)                                   # (B, T, S, S+1)
    beta = P[q + "static_beta"] + P[q + "dynamic_beta_scale"][0] * torch.tanh(
        hbar @ P[q + "dynamic_beta_fn"].T)[..., 0]                            # (B, T, S)
    mix = torch.einsum("btsc,btsd->btcd", alpha, Hs)                          # (B, T, S+1, d)
    return mix[:, :, 0], mix[:, :, 1:], beta


def hc_depth(y, carried, beta):
    return beta[..., None] * y[:, :, None, :] + carried


def mudd_mix(cfg, P, n, states):
    """MUDD after block n over states s_0..s_{n+1}: a list of C streams."""
    B, T, d = states[-1].shape
    C, J = cfg.mudd_C(n), n + 2
    u = rms_noscale(states[-1], cfg.norm_eps)
    w = F.gelu(u @ P[f"mudd.{n}.w1"].T) @ P[f"mudd.{n}.w2"].T + P[f"mudd.{n}.bias"].reshape(-1)
    w = w.view(B, T, C, J)
    out = torch.einsum("btcj,btjd->btcd", w, torch.stack(states, dim=2))
    return [out[:, :, c] for c in range(C)]


def masked_ce(logits, targets, mask):
    """Σ mask·CE / Σ mask over (B, T); logits (B, T, V)."""
    V = logits.shape[-1]
    ce = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1).long(), reduction="none")
    m = mask.reshape(-1).to(ce.dtype)
    return (ce * m).sum() / m.sum()


def mod_block(cfg, P, n, h, q, k, v, group, hd, eps, keep_out, weight_out):
    """A routed Mixture-of-Depths block (Raposo et al. 2024), written as the
    paper describes it: the router r = h·w picks each window's top-k tokens,
    only they are gathered (in position order) and run the block among
    themselves (their q, k, v after rotary at their own positions and the
    value residual), and their update a + f, times σ(r), is added back.
    Returns the new residual stream (B, T, d)."""
    p = f"layers.{n}."
    B, T, d = h.shape
    H = q.shape[2]
    r = (h @ P[f"routers.{n - 1}.mod_w"].T)[..., 0]                  # (B, T)
    kk = cfg.mod_k(T)
    idx = torch.topk(r, kk, dim=-1).indices.sort(dim=-1).values      # (B, k) in position order
    keep = torch.zeros(B, T, dtype=h.dtype).scatter(1, idx, 1.0)
    keep_out[n] = keep
    weight_out[n] = torch.sigmoid(r).detach()
    gat = lambda x: torch.gather(x, 1, idx.view(B, kk, *([1] * (x.dim() - 2))).expand(B, kk, *x.shape[2:]))
    qs, ks, vs, hs = gat(q), gat(k), gat(v), gat(h)
    qh = qs.transpose(1, 2)
    kh = ks.repeat_interleave(group, dim=2).transpose(1, 2)
    vh = vs.repeat_interleave(group, dim=2).transpose(1, 2)
    s = (qh @ kh.transpose(-1, -2)) / math.sqrt(hd)
    s = s.masked_fill(~torch.ones(kk, kk, dtype=torch.bool).tril(), float("-inf"))
    o = (torch.softmax(s, dim=-1) @ vh).transpose(1, 2).reshape(B, kk, H * hd)
    a = o @ P[p + "attn.wo"].T
    x2 = rmsnorm(hs + a, P[p + "ffn_norm"], eps)
    f = (F.silu(x2 @ P[p + "ffn.w1"].T) * (x2 @ P[p + "ffn.w3"].T)) @ P[p + "ffn.w2"].T
    upd = torch.sigmoid(torch.gather(r, 1, idx))[..., None] * (a + f)  # (B, k, d)
    return h.scatter_add(1, idx[..., None].expand(B, kk, d), upd)


def forward(cfg, P, tokens, targets, mask, route_keep=None, hook=None, drop=None):
    """The whole model on tokens (B, T) long.

    route_keep (L, B, T): random routing's draw (1 computes the pair), given
    by the caller (make_fixtures.py writes the C model's draw).
    Returns a dict: logits (B,T,V) of the final head, loss (the optimised
    loss), task_loss (masked CE of the final head), and where the model has
    them sat_alpha (L,B,T,Hkv), resformer_lambda (L,2), tsa_p (L-1,B,T),
    exit_conf (L,B,T), route_keep (L,B,T) and mod_weight (L,B,T).

    drop: None (no dropout), or a dict of multiplicative masks: "embed" (B,T,d),
    ("att", n) (B,H,T,T), ("ffn_hidden", n) (B,T,d_ff), ("ffn_out", n) (B,T,d).

    hook: None, or fn(name, tensor) -> tensor or None, called at the named
    points of scripts/python/gatelab/model.py (TransformerLens style: a hook
    reads an activation, or returns a replacement).  None computes exactly
    what it computed before hooks existed."""
    def hk(name, x):
        if hook is None:
            return x
        r = hook(name, x)
        return x if r is None else r

    B, T = tokens.shape
    L, H, Hkv, hd, eps = cfg.n_layer, cfg.n_head, cfg.n_kv_head, cfg.hd, cfg.norm_eps
    dtype = P["embed"].dtype
    M = cfg.mixing_blocks()
    group = H // Hkv
    head_w = P["embed"] if cfg.tied else P["head"]
    cos, sin = rope_tables(T, hd, cfg.rope_base, dtype)
    causal = torch.ones(T, T, dtype=torch.bool).tril()

    out = {}
    sat_alpha = torch.zeros(L, B, T, Hkv, dtype=dtype)
    rf_lambda = torch.zeros(L, 2, dtype=dtype)
    rf_lambda[:, 1] = 1.0
    tsa_p, exit_logits = [], []
    keep_out = torch.ones(L, B, T, dtype=dtype)      # mod, random: 1 where the pair is computed
    weight_out = torch.zeros(L, B, T, dtype=dtype)   # mod: σ(r) in routed blocks

    if cfg.value_residual == "resformer" and cfg.resformer_variant == "plus":
        rf_soft = torch.softmax(P["resformer.logits"], dim=0)

    gpt2 = cfg.backbone == "gpt2"
    paper = cfg.depth_routing == "tsa" and cfg.tsa_form == "paper"
    dm = (lambda key, x: x) if drop is None else (lambda key, x: x * drop[key])

    def norm(x, name):
        if gpt2:
            return layernorm(x, P[name], P[name + "_bias"], eps)
        return rmsnorm(x, P[name], eps)

    h0 = P["embed"][tokens]
    if gpt2:
        h0 = h0 + P["pos_embed"][:T][None]
    h = hk("hook_embed", dm("embed", h0))                 # (B, T, d)
    V1 = None
    xl = cfg.cross_layer
    states = [h]                 # denseformer, mudd: s_0 .. s_n
    qkv_in = None                # mudd: the query, key, value streams of block n >= 1
    if xl == "hyper":
        Hs = h[:, :, None, :].expand(B, T, cfg.hc_expansion, h.shape[-1])
    for n in range(L):
        p = f"layers.{n}."
        if xl == "hyper":
            h, carried, beta = hc_width(cfg, P, 2 * n, Hs)
        if xl != "hyper" or h is not None:
            h = hk(f"blocks.{n}.hook_resid_pre", h)
        if qkv_in is not None:
            xn = rmsnorm(qkv_in[0], P[p + "attn_norm"], eps)
            xk = rmsnorm(qkv_in[1], P[p + "attn_norm_k"], eps)
            xv = rmsnorm(qkv_in[2], P[p + "attn_norm_v"], eps)
        else:
            xn = xk = xv = norm(h, p + "attn_norm")
        q = hk(f"blocks.{n}.attn.hook_q", (xn @ P[p + "attn.wq"].T).view(B, T, H, hd))
        k = hk(f"blocks.{n}.attn.hook_k", (xk @ P[p + "attn.wk"].T).view(B, T, Hkv, hd))
        v = hk(f"blocks.{n}.attn.hook_v", (xv @ P[p + "attn.wv"].T).view(B, T, Hkv, hd))
        if n == 0:
            V1 = v
        elif V1 is not None and cfg.value_residual != "none":
            hk(f"blocks.{n}.attn.hook_v1", V1)  # read-only view: V1 is block 0's values, shared by every block
        if cfg.qk_norm:
            q = rmsnorm(q, P[p + "attn.q_norm"], eps)
            k = rmsnorm(k, P[p + "attn.k_norm"], eps)
        if not gpt2:
            q, k = rope(q, cos, sin), rope(k, cos, sin)

        # value residual
        if n in M and cfg.value_residual == "satformer":
            z = xv @ P[p + "attn.alpha"].T                            # (B, T, Hkv)
            if cfg.sat_gate_bias:
                z = z + P[p + "attn.alpha_bias"]
            alpha = hk(f"blocks.{n}.attn.hook_alpha", sat_gate(cfg.sat_gate, z))
            sat_alpha[n] = alpha.detach()
            v = v + alpha[..., None] * V1
        elif n in M and cfg.value_residual == "resformer":
            if cfg.resformer_variant == "plus":
                l1 = P["resformer.scale"][0] * rf_soft[M.index(n)]
                l2 = P[p + "attn.lambda2"][0]
            elif cfg.resformer_variant == "learnable":
                l1 = P[p + "attn.lambda1"][0]
                l2 = P[p + "attn.lambda2"][0]
            else:
                l1 = torch.tensor(0.5, dtype=dtype)
                l2 = torch.tensor(0.5, dtype=dtype)
            rf_lambda[n, 0] = l1.detach()
            rf_lambda[n, 1] = l2.detach()
            v = l1 * V1 + l2 * v

        if n >= 1 and V1 is not None and cfg.value_residual != "none":
            v = hk(f"blocks.{n}.attn.hook_v_mixed", v)
        if cfg.depth_routing == "mod" and cfg.routed(n):
            h = hk(f"blocks.{n}.hook_resid_post", mod_block(cfg, P, n, h, q, k, v, group, hd, eps, keep_out, weight_out))
            continue

        # causal attention, GQA by repeating kv heads
        qh = q.transpose(1, 2)                                       # (B, H, T, hd)
        kh = k.repeat_interleave(group, dim=2).transpose(1, 2)
        vh = v.repeat_interleave(group, dim=2).transpose(1, 2)
        s = (qh @ kh.transpose(-1, -2)) / math.sqrt(hd)              # (B, H, T, T)
        s = s.masked_fill(~causal, float("-inf"))
        o = (dm(("att", n), hk(f"blocks.{n}.attn.hook_pattern", torch.softmax(s, dim=-1))) @ vh).transpose(1, 2).reshape(B, T, H * hd)
        a = hk(f"blocks.{n}.hook_attn_out", o @ P[p + "attn.wo"].T)

        if paper and n >= 1:  # the paper's router reads the raw h entering the block; gates in sequence
            r = f"routers.{n - 1}."
            hid = torch.relu(h @ P[r + "fc1_w"].T + P[r + "fc1_b"])
            prob = hk(f"blocks.{n}.hook_halt_p", torch.sigmoid(hid @ P[r + "fc2_w"].T + P[r + "fc2_b"])[..., 0])
            tsa_p.append(prob)
        if xl == "hyper":
            Hs = hc_depth(a, carried, beta)
            h_mid, carried, beta = hc_width(cfg, P, 2 * n + 1, Hs)
        elif paper and n >= 1:
            h_mid = h + (1.0 - prob)[..., None] * a
        else:
            h_mid = h + a
        x2 = norm(h_mid, p + "ffn_norm")
        if gpt2:
            fh = F.gelu(x2 @ P[p + "ffn.w1"].T + P[p + "ffn.b1"])    # erf GELU
            f = dm(("ffn_out", n), dm(("ffn_hidden", n), fh) @ P[p + "ffn.w2"].T + P[p + "ffn.b2"])
        else:
            fh = F.silu(x2 @ P[p + "ffn.w1"].T) * (x2 @ P[p + "ffn.w3"].T)
            f = dm(("ffn_out", n), dm(("ffn_hidden", n), fh) @ P[p + "ffn.w2"].T)
        f = hk(f"blocks.{n}.hook_mlp_out", f)

        if xl == "hyper":
            Hs = hc_depth(f, carried, beta)
            h = Hs.sum(dim=2) if n + 1 == L else None   # the next width connection gives the input
        elif paper and n >= 1:
            h = h_mid + (1.0 - prob)[..., None] * f
        elif cfg.depth_routing == "tsa" and n >= 1:
            r = f"routers.{n - 1}."
            hid = F.gelu(xn @ P[r + "fc1_w"].T + P[r + "fc1_b"])      # erf GELU
            prob = hk(f"blocks.{n}.hook_halt_p", torch.sigmoid(hid @ P[r + "fc2_w"].T + P[r + "fc2_b"])[..., 0])  # (B, T)
            tsa_p.append(prob)
            h = h + (1.0 - prob)[..., None] * (a + f)
        elif cfg.depth_routing == "random" and n >= 1:
            keep_out[n] = route_keep[n]
            h = h + route_keep[n][..., None] * (a + f)
        else:
            h = h_mid + f

        if xl == "denseformer":
            states.append(h)
            h = sum(P[f"dwa.{n}"][j] * states[j] for j in range(n + 2))
        elif xl == "mudd":
            states.append(h)
            streams = mudd_mix(cfg, P, n, states)
            h = streams[-1]
            qkv_in = streams[:3] if n + 1 < L else None

        if h is not None:
            h = hk(f"blocks.{n}.hook_resid_post", h)
        if cfg.depth_routing == "early_exit":
            exit_logits.append(hk(f"blocks.{n}.hook_exit_logits", norm(h, cfg.exit_norm(n)) @ head_w.T))

    logits = hk("hook_logits", hk("ln_final.hook_normalized", norm(h, "final_norm")) @ head_w.T)  # (B, T, V)
    task_loss = masked_ce(logits, targets, mask)
    loss = task_loss
    if cfg.depth_routing == "tsa":
        penalty = sum((1.0 - pr).mean() for pr in tsa_p) / (L - 1)
        loss = task_loss + cfg.tsa_lambda * penalty
        out["tsa_p"] = torch.stack([pr.detach() for pr in tsa_p])
    elif cfg.depth_routing == "early_exit":
        if cfg.exit_paper():
            # the official baseline averages the L exits' losses, whatever exit_weighting says;
            # gatelab's config insists on uniform so the key cannot claim otherwise
            assert cfg.exit_weighting == "uniform", "exit_form paper trains with exit_weighting uniform"
            w = [1.0 / L] * L
        elif cfg.exit_weighting == "linear":
            w = [(n + 1) / (L * (L + 1) / 2) for n in range(L)]
        else:
            w = [1.0 / L] * L
        loss = sum(w[n] * masked_ce(exit_logits[n], targets, mask) for n in range(L))
        out["exit_conf"] = torch.stack(
            [torch.softmax(lg.detach(), dim=-1).max(dim=-1).values for lg in exit_logits])
        out["exit_logits"] = torch.stack([lg.detach() for lg in exit_logits])   # (L, B, T, V)

    if cfg.depth_routing in ("mod", "random"):
        out["route_keep"] = keep_out
    if cfg.depth_routing == "mod":
        out["mod_weight"] = weight_out
    out["logits"] = logits
    out["loss"] = loss
    out["task_loss"] = task_loss
    if cfg.value_residual == "satformer":
        out["sat_alpha"] = sat_alpha
    if cfg.value_residual == "resformer":
        out["resformer_lambda"] = rf_lambda
    return out


def paper_exit_eval(cfg, out, targets, mask, tau):
    """Evaluation of early exit in the TSA paper's form at threshold tau, from a dense forward's
    outputs (out = forward(...) without dropout).  The official rule (evaluate_early_exit of the
    paper's early-exit baseline): block 0 is the stem and never exits; after block n = 1..L-2 a token
    still running exits when its exit head's max softmax probability is > tau (strictly), its
    prediction becomes exit n's logits; tokens still running after block L-1 take the last exit.  An
    exited token's state is not frozen, so the blocks after its exit are the dense ones and so are
    the exit logits of every token: choosing among them is the whole evaluation.
    Returns block (B, T) long: the exit each prediction comes from (1..L-1), logits (B, T, V),
    loss (masked CE of those logits), active_frac = mean(block)/(L-1) (the post-stem blocks run, as
    a share) and active_frac_paper = (1 + mean(block))/L (the official convention, stem counted)."""
    assert cfg.exit_paper()
    L = cfg.n_layer
    lg, conf = out["exit_logits"], out["exit_conf"]              # (L, B, T, V), (L, B, T)
    block = torch.full(conf.shape[1:], L - 1, dtype=torch.long)
    for n in range(L - 2, 0, -1):        # downwards, so the first exit that fires wins
        block = torch.where(conf[n] > tau, torch.full_like(block, n), block)
    logits = torch.gather(lg, 0, block[None, :, :, None].expand(1, *lg.shape[1:]))[0]
    mean_block = float(block.double().mean())
    return dict(block=block, logits=logits, loss=masked_ce(logits, targets, mask),
                active_frac=mean_block / (L - 1), active_frac_paper=(1.0 + mean_block) / L)


def sat_gate(kind, z):
    """SATFormer's gate function on z (..., Hkv): the official code's choices."""
    Hkv = z.shape[-1]
    if kind == "relu":
        return torch.relu(z)
    if kind == "sigmoid":
        return torch.sigmoid(z)
    if kind == "softmax":
        return torch.softmax(z, dim=-1) * Hkv
    if kind == "softmax_sigmoid":
        return torch.softmax(z, dim=-1) * torch.sigmoid(z) * Hkv
    if kind == "tanh":
        return torch.tanh(z)
    if kind == "identity":
        return z
    raise ValueError("unknown sat_gate %r" % kind)


def make_adamw(cfg, P, lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    """torch.optim.AdamW with the two parameter groups of convention 11, or one
    group holding every parameter (weight_decay_policy "all")."""
    if cfg.weight_decay_policy == "all":
        return torch.optim.AdamW([{"params": list(P.values()), "weight_decay": weight_decay}], lr=lr,
                                 betas=betas, eps=eps, weight_decay=weight_decay)
    assert cfg.weight_decay_policy == "matrices", cfg.weight_decay_policy
    shapes = param_shapes(cfg)
    dec = [P[n] for n in P if decays(cfg, n, shapes[n])]
    nodec = [P[n] for n in P if not decays(cfg, n, shapes[n])]
    groups = [g for g in ({"params": dec, "weight_decay": weight_decay},
                          {"params": nodec, "weight_decay": 0.0}) if g["params"]]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
