"""torch_bench.py — the PyTorch CPU baseline for gatelab's throughput benchmark.

What it does: times one training step (forward + backward + global-norm clip +
AdamW) and one forward-only pass of the reference benchmark model — V 65,
d 256, L 6, H 8, Hkv 8, d_ff 1024, T 256, B 32, qk-norm, rotary, SwiGLU, tied
head, no variants (docs/model.md) — and prints one JSON line:

  {"impl": "pytorch", "torch": ..., "threads": N, "train_tokens_per_s": median,
   "fwd_tokens_per_s": median, "train_step_ms_median": ..., "fwd_ms_median": ...,
   "peak_rss_mib": ..., "blas_core": ...}

It aims to be a strong, fair eager baseline for torch 1.13 on CPU (no SDPA in
1.13): fused QKV and W1|W3 projections (one GEMM each), the causal mask added
by the same baddbmm that scales q·kᵀ, rotary and RMSNorm as a handful of
vectorised ops on contiguous tensors, foreach AdamW, forward-only under
torch.inference_mode().  Tokens/s counts B·T tokens per step.

What it does not: it does not check numerics (tests/test_parity.c does, with
scripts/reference/ref_model.py), and it sets no environment variables — the
wrapper that runs both benchmarks chooses the BLAS build, allocator and OpenMP
policy (see the report of the change that added this file).

Usage: /usr/bin/python3 scripts/bench/torch_bench.py [--threads N] [--steps S]
"""
import argparse
import ctypes
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

CFG = dict(V=65, d=256, L=6, H=8, Hkv=8, d_ff=1024, T=256, B=32, eps=1e-6, rope_base=10000.0)
ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, clip=1.0)
WARMUP = 3


class Model(torch.nn.Module):
    """Pre-norm Llama-style decoder as in docs/model.md, laid out for speed."""

    def __init__(self, c):
        super().__init__()
        V, d, L, H, Hkv, ff = c["V"], c["d"], c["L"], c["H"], c["Hkv"], c["d_ff"]
        self.c = c
        self.hd = d // H
        std = 0.02
        self.embed = torch.nn.Parameter(torch.randn(V, d) * std)
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            b = torch.nn.Module()
            b.attn_norm = torch.nn.Parameter(torch.ones(d))
            b.wqkv = torch.nn.Parameter(torch.randn((H + 2 * Hkv) * self.hd, d) * std)  # wq|wk|wv
            b.wo = torch.nn.Parameter(torch.randn(d, H * self.hd) * std)
            b.q_norm = torch.nn.Parameter(torch.ones(self.hd))
            b.k_norm = torch.nn.Parameter(torch.ones(self.hd))
            b.ffn_norm = torch.nn.Parameter(torch.ones(d))
            b.w13 = torch.nn.Parameter(torch.randn(2 * ff, d) * std)  # w1|w3
            b.w2 = torch.nn.Parameter(torch.randn(d, ff) * std)
            self.blocks.append(b)
        self.final_norm = torch.nn.Parameter(torch.ones(d))
        T, hd = c["T"], self.hd
        freq = c["rope_base"] ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2 / hd)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]
        # (T, hd) tables so that rotate-half is x·cos + rot(x)·sin in two fused mults
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1).float())
        self.register_buffer("sin", torch.cat([-ang.sin(), ang.sin()], -1).float())
        self.register_buffer("mask", torch.full((T, T), float("-inf")).triu(1))

    def rms(self, x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c["eps"]) * g

    def rope(self, x):  # x (B, nh, T, hd)
        half = self.hd // 2
        rot = torch.cat([x[..., half:], x[..., :half]], -1)
        return torch.addcmul(x * self.cos, rot, self.sin)

    def forward(self, tokens, targets):
        c = self.c
        B, T = tokens.shape
        H, Hkv, hd, ff = c["H"], c["Hkv"], self.hd, c["d_ff"]
        scale = 1.0 / math.sqrt(hd)
        mask = self.mask[:T, :T]
        h = F.embedding(tokens, self.embed)                       # (B, T, d)
        for b in self.blocks:
            x = self.rms(h, b.attn_norm)
            qkv = F.linear(x, b.wqkv).view(B, T, H + 2 * Hkv, hd).transpose(1, 2)  # (B, heads, T, hd)
            q, k, v = qkv.split([H, Hkv, Hkv], dim=1)
            q = self.rope(self.rms(q, b.q_norm))
            k = self.rope(self.rms(k, b.k_norm))
            if Hkv != H:
                k = k.repeat_interleave(H // Hkv, dim=1)
                v = v.repeat_interleave(H // Hkv, dim=1)
            q = q.reshape(B * H, T, hd)
            k = k.reshape(B * H, T, hd)
            v = v.reshape(B * H, T, hd)
            s = torch.baddbmm(mask, q, k.transpose(1, 2), alpha=scale)   # (B*H, T, T)
            o = torch.bmm(torch.softmax(s, dim=-1), v)
            o = o.view(B, H, T, hd).transpose(1, 2).reshape(B, T, H * hd)
            h = h + F.linear(o, b.wo)
            x2 = self.rms(h, b.ffn_norm)
            f1, f3 = F.linear(x2, b.w13).split(ff, dim=-1)
            h = h + F.linear(F.silu(f1) * f3, b.w2)
        logits = F.linear(self.rms(h, self.final_norm), self.embed)
        return F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def blas_core():
    """The OpenBLAS core of the library this process loaded, via openblas_get_corename."""
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f
                           if "openblas" in line.split()[-1] or "libblas" in line.split()[-1]})
    except OSError:
        return "unknown"
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            fn = lib.openblas_get_corename
            fn.restype = ctypes.c_char_p
            name = fn().decode()
            cfg = lib.openblas_get_config
            cfg.restype = ctypes.c_char_p
            return "%s (%s; %s)" % (name, cfg().decode().strip(), os.path.basename(os.path.realpath(path)))
        except (OSError, AttributeError):
            continue
    return "unknown"


def median_ms(fn, steps):
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps after 3 warm-up ones (>= 10)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.steps < 10:
        ap.error("--steps must be at least 10 (the median of fewer is noise)")
    if args.threads < 1:
        ap.error("--threads must be at least 1")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    c = CFG
    model = Model(c)
    params = list(model.parameters())
    decay = [p for p in params if p.dim() == 2]
    no_decay = [p for p in params if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ADAMW["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"], foreach=True)
    tokens = torch.randint(0, c["V"], (c["B"], c["T"]))
    targets = torch.randint(0, c["V"], (c["B"], c["T"]))

    def train_step():
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, ADAMW["clip"])
        opt.step()
        return loss

    def fwd_step():
        with torch.inference_mode():
            return model(tokens, targets)

    train_ms = median_ms(train_step, args.steps)
    fwd_ms = median_ms(fwd_step, args.steps)
    tokens_per_step = c["B"] * c["T"]
    out = {
        "impl": "pytorch",
        "torch": torch.__version__,
        "threads": args.threads,
        "train_tokens_per_s": round(tokens_per_step / (train_ms / 1e3), 1),
        "fwd_tokens_per_s": round(tokens_per_step / (fwd_ms / 1e3), 1),
        "train_step_ms_median": round(train_ms, 2),
        "fwd_ms_median": round(fwd_ms, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "blas_core": blas_core(),
    }
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
