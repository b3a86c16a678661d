"""torch_decode.py — the PyTorch anchor of the decoding benchmark (scripts/bench/decode.c).

What it does: loads the model, token stream and arg maxes that
`bench_decode --dump DIR` wrote (the same weights, the same tokens), and
decodes them the way a careful PyTorch user would on CPU: a KV cache
preallocated per block, a plain eager loop of one token per sequence per step
under torch.inference_mode(), fused QKV and W1|W3 projections (one GEMM each),
grouped-query attention as a batched matmul over the cache.  For the TSA
variant (sparse inference) a halted token (p > 0.5) skips its FFN in that
block, and at batch 1 (one halted token: nothing else to do) its query and
attention too, as model/decode.c does; at batch > 1 the attention runs for
every row (gathering the kept rows' caches cost more than it saved here) and
the FFN on the kept rows.  It prints one JSON line per timed repetition:

  {"impl": "pytorch", "variant", "batch", "prompt", "new", "threads", "rep",
   "decode_tokens_per_s", "decode_cpu_tokens_per_s", "prefill_ms", "alpha",
   "argmax_agree" (share of steps whose arg max equals bench_decode's), "torch"}

What it does not: it sets no environment variables and times nothing but
its own loop; scripts/bench/decode.sh interleaves it with bench_decode.

Usage: /usr/bin/python3 scripts/bench/torch_decode.py DIR [--threads N] [--reps R] [--warmup W]
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F


def load(d):
    cfg = {}
    with open(os.path.join(d, "config.txt")) as f:
        for line in f:
            k, v = line.split()
            cfg[k] = v if k == "variant" else float(v) if "." in v or "e" in v else int(v)
    with open(os.path.join(d, "params.f32"), "rb") as f:
        raw = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
    P = {}
    with open(os.path.join(d, "params.idx")) as f:
        for line in f:
            name, off, size, rows, cols = line.split()
            off, size, rows, cols = int(off), int(size), int(rows), int(cols)
            t = raw[off:off + size]
            P[name] = t.view(rows, cols) if cols > 1 else t.view(rows)
    B, S, new = cfg["batch"], cfg["prompt"] + cfg["new"], cfg["new"]

    def ints(name, shape):
        with open(os.path.join(d, name), "rb") as f:
            return torch.frombuffer(bytearray(f.read()), dtype=torch.int32).view(*shape).long()
    return cfg, P, ints("tokens.i32", (B, S)), ints("argmax.i32", (B, new))


class Decoder:
    def __init__(self, cfg, P):
        self.c = cfg
        self.tsa = cfg["variant"] == "tsa"
        d, H, Hkv, L = cfg["d_model"], cfg["n_head"], cfg["n_kv_head"], cfg["n_layer"]
        self.H, self.Hkv, self.hd, self.L, self.eps = H, Hkv, d // H, L, cfg["norm_eps"]
        self.ff = cfg["d_ff"]
        self.embed = P["embed"]
        self.head = P.get("head", P["embed"])
        self.final_norm = P["final_norm"]
        self.blocks = []
        for n in range(L):
            g = lambda k: P["layers.%d.%s" % (n, k)]
            b = dict(attn_norm=g("attn_norm"), ffn_norm=g("ffn_norm"), q_norm=g("attn.q_norm"),
                     k_norm=g("attn.k_norm"), wo=g("attn.wo"), w2=g("ffn.w2"),
                     wqkv=torch.cat([g("attn.wq"), g("attn.wk"), g("attn.wv")]).contiguous(),
                     w13=torch.cat([g("ffn.w1"), g("ffn.w3")]).contiguous())
            if self.tsa and n >= 1:
                r = lambda k: P["routers.%d.%s" % (n - 1, k)]
                b.update(fc1_w=r("fc1_w"), fc1_b=r("fc1_b"), fc2_w=r("fc2_w"), fc2_b=r("fc2_b"))
            self.blocks.append(b)
        T, hd = cfg["seq_len"], self.hd
        freq = cfg["rope_base"] ** (-2.0 * torch.arange(hd // 2, dtype=torch.float64) / hd)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]
        self.cos, self.sin = ang.cos().float(), ang.sin().float()  # (T, hd/2), as model/rope.c
        self.B = cfg["batch"]
        self.kc = [torch.zeros(self.B, Hkv, T, hd) for _ in range(L)]
        self.vc = [torch.zeros(self.B, Hkv, T, hd) for _ in range(L)]
        self.run = self.total = 0

    def rms(self, x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g

    def rope(self, x, cos, sin):  # x (..., hd); cos/sin broadcast to (..., hd/2)
        h = self.hd // 2
        x1, x2 = x[..., :h], x[..., h:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def router(self, b, x):
        return torch.sigmoid(F.linear(F.gelu(F.linear(x, b["fc1_w"], b["fc1_b"])), b["fc2_w"], b["fc2_b"])).squeeze(-1)

    def prefill(self, tok):  # tok (B, T0): the full causal forward, caches filled
        B, T0 = tok.shape
        H, Hkv, hd = self.H, self.Hkv, self.hd
        cos, sin = self.cos[:T0, None, :], self.sin[:T0, None, :]
        mask = torch.full((T0, T0), float("-inf")).triu(1)
        h = F.embedding(tok, self.embed)
        for n, b in enumerate(self.blocks):
            x = self.rms(h, b["attn_norm"])
            qkv = F.linear(x, b["wqkv"]).view(B, T0, H + 2 * Hkv, hd)
            q = self.rope(self.rms(qkv[:, :, :H], b["q_norm"]), cos, sin).transpose(1, 2)
            k = self.rope(self.rms(qkv[:, :, H:H + Hkv], b["k_norm"]), cos, sin).transpose(1, 2)
            v = qkv[:, :, H + Hkv:].transpose(1, 2)
            self.kc[n][:, :, :T0] = k
            self.vc[n][:, :, :T0] = v
            q = q.reshape(B, Hkv, (H // Hkv) * T0, hd)
            s = (q @ k.transpose(2, 3)).view(B, Hkv, H // Hkv, T0, T0) / math.sqrt(hd) + mask
            o = (torch.softmax(s, -1).view(B, Hkv, -1, T0) @ v).view(B, H, T0, hd)
            ao = F.linear(o.transpose(1, 2).reshape(B, T0, H * hd), b["wo"])
            hm = h + ao
            f1, f3 = F.linear(self.rms(hm, b["ffn_norm"]), b["w13"]).split(self.ff, -1)
            f = F.linear(F.silu(f1) * f3, b["w2"])
            if "fc1_w" in b:
                p = self.router(b, x)
                upd = (1 - p)[..., None] * (ao + f)
                h = h + torch.where((p > 0.5)[..., None], torch.zeros_like(upd), upd)
            else:
                h = hm + f
        return F.linear(self.rms(h[:, -1], self.final_norm), self.head)

    def step(self, tok, pos):  # tok (B,): one token per sequence at position pos
        H, Hkv, hd, B = self.H, self.Hkv, self.hd, tok.shape[0]
        cos, sin = self.cos[pos], self.sin[pos]
        h = F.embedding(tok, self.embed)
        for n, b in enumerate(self.blocks):
            x = self.rms(h, b["attn_norm"])
            qkv = F.linear(x, b["wqkv"]).view(B, H + 2 * Hkv, hd)
            self.kc[n][:, :, pos] = self.rope(self.rms(qkv[:, H:H + Hkv], b["k_norm"]), cos, sin)
            self.vc[n][:, :, pos] = qkv[:, H + Hkv:]
            idx = None
            if "fc1_w" in b:
                p = self.router(b, x)
                keep = p <= 0.5
                K = int(keep.sum())
                self.total += B
                self.run += K
                if K == 0:
                    continue  # every token halted: only their keys and values were made
                if K < B:
                    idx = keep.nonzero().squeeze(1)
            # attention for every row: gathering the kept rows' caches costs more than it saves
            q = self.rope(self.rms(qkv[:, :H], b["q_norm"]), cos, sin)
            s = (q.view(B, Hkv, H // Hkv, hd) @ self.kc[n][:, :, :pos + 1].transpose(2, 3)) / math.sqrt(hd)
            o = (torch.softmax(s, -1) @ self.vc[n][:, :, :pos + 1]).reshape(B, H * hd)  # (B, Hkv, rep, P) · (B, Hkv, P, hd)
            ao = F.linear(o, b["wo"])
            hm = h + ao
            if idx is not None:  # the FFN of the kept rows only
                hm, ao, hr, p = hm[idx], ao[idx], h[idx], p[idx]
            else:
                hr = h
            f1, f3 = F.linear(self.rms(hm, b["ffn_norm"]), b["w13"]).split(self.ff, -1)
            f = F.linear(F.silu(f1) * f3, b["w2"])
            out = hr + (1 - p)[:, None] * (ao + f) if "fc1_w" in b else hm + f
            if idx is None:
                h = out
            else:
                h = h.clone()
                h[idx] = out
        return F.linear(self.rms(h, self.final_norm), self.head)


def one_rep(dec, tokens, prompt, new):
    dec.run = dec.total = 0
    t0 = time.perf_counter()
    dec.prefill(tokens[:, :prompt])
    t1, c1 = time.perf_counter(), time.process_time()
    am = []
    for s in range(new):
        logits = dec.step(tokens[:, prompt + s], prompt + s)
        am.append(logits.argmax(-1))
    t2, c2 = time.perf_counter(), time.process_time()
    return t1 - t0, t2 - t1, c2 - c1, torch.stack(am, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="the folder bench_decode --dump wrote")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--reps", type=int, default=1, help="timed repetitions (default 1)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed repetitions first (default 1)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg, P, tokens, ref_argmax = load(args.dir)
    B, prompt, new = cfg["batch"], cfg["prompt"], cfg["new"]
    with torch.inference_mode():
        dec = Decoder(cfg, P)
        for k in range(args.warmup + args.reps):
            pre, wall, cpu, am = one_rep(dec, tokens, prompt, new)
            if k < args.warmup:
                continue
            print(json.dumps({
                "impl": "pytorch", "variant": cfg["variant"], "batch": B, "prompt": prompt, "new": new,
                "threads": torch.get_num_threads(), "rep": k - args.warmup,
                "decode_tokens_per_s": round(B * new / wall, 1), "decode_cpu_tokens_per_s": round(B * new / cpu, 1),
                "prefill_ms": round(pre * 1e3, 2), "alpha": round(dec.run / dec.total, 4) if dec.total else 1.0,
                "argmax_agree": round(float((am == ref_argmax).float().mean()), 4), "torch": torch.__version__}),
                flush=True)


if __name__ == "__main__":
    main()
