"""official_interop.py — the Python half of tests/integration/official_interop.sh (it runs this).

(2) a gatelab run of the TSA paper's form → to_official_tsa → from_official_tsa → a gatelab run with
    every tensor equal to 1e-6 (and the same `gatelab eval --text` loss);
(3) a torch module of the official layout — written here from the paper's description of its model
    (GPT-2 style blocks: LayerNorm, learned positions, fused bias-free qkv, GELU MLP with biases; a
    ReLU router on the residual stream before each block n >= 1, h += (1-p)·attn, then h += (1-p)·ffn;
    tied head), not copied from its code — loads to_official_tsa(run) with strict=True, and its loss
    on a text equals `gatelab eval RUN --text` to 1e-5; the same for the dense baseline's layout.
Also: a run not of the paper's form, and a state_dict missing a tensor, with a mis-shaped one or an
untied head, or a non-ASCII character vocabulary, are refused in one line naming what, nothing made.

argv: RESULTS SCRATCH — runs `paper` (TSA, tsa_form paper) and `dense` (gpt2, no routing) in
RESULTS, SCRATCH/batch.txt and SCRATCH/<run>.eval.json (gatelab eval --text of it).
Prints PASS/FAIL lines; exits 1 on any FAIL.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import gatelab

R, W = sys.argv[1], sys.argv[2]
failed = 0


def ok(what, cond):
    global failed
    failed += not cond
    print(("PASS " if cond else "FAIL ") + what)


class Attention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d, 3 * d, bias=False)   # rows: q (d), k (d), v (d); head h at rows h·hd of each
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / (d // self.n_head) ** 0.5            # (B, H, T, T)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = att.softmax(-1) @ v                                                  # causal: j <= i
        return self.proj(y.transpose(1, 2).reshape(B, T, d))


class FeedForward(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Dropout(0.0), nn.Linear(d_ff, d), nn.Dropout(0.0))

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    def __init__(self, d, n_head, d_ff):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), Attention(d, n_head)
        self.ln2, self.ffn = nn.LayerNorm(d), FeedForward(d, d_ff)

    def forward(self, h, active):
        h = h + active * self.attn(self.ln1(h))
        return h + active * self.ffn(self.ln2(h))


class Router(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, h):
        return torch.sigmoid(self.mlp(h).squeeze(-1))   # the halting probability p, (B, T)


class OfficialLayout(nn.Module):
    """TSATransformer's parameter layout (routed) or BaselineTransformer's (not routed)."""

    def __init__(self, V, d, n_layer, n_head, d_ff, T, routed):
        super().__init__()
        self.token_emb, self.pos_emb = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, n_head, d_ff) for _ in range(n_layer))
        if routed:
            self.routers = nn.ModuleList(Router(d, max(d // 4, 16)) for _ in range(n_layer - 1))
            self.register_buffer("_last_depth_reg_loss", torch.tensor(0.0))
        self.routed = routed
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, V, bias=False)
        self.head.weight = self.token_emb.weight

    def forward(self, x, bypass_routers=False):
        h = self.token_emb(x) + self.pos_emb(torch.arange(x.shape[1]))
        h = self.blocks[0](h, 1.0)
        for n, block in enumerate(self.blocks[1:]):
            routed = self.routed and not bypass_routers
            p = self.routers[n](h) if routed else torch.zeros(h.shape[:2], dtype=h.dtype)
            h = block(h, (1.0 - p).unsqueeze(-1))
        return self.head(self.ln_f(h))


def eval_text_loss(run_dir):
    p = subprocess.run([os.environ["GATELAB_BIN"], "eval", run_dir, "--text", f"{W}/batch.txt"],
                       capture_output=True, text=True)
    return json.loads(p.stdout.splitlines()[0])["loss"] if p.returncode == 0 else float("nan")


for name in ("paper", "dense"):
    run = gatelab.load_run(f"{R}/runs/{name}")
    m = run.config["model"]
    sd = gatelab.to_official_tsa(run)
    routed = name == "paper"
    ok(f"{name}: to_official_tsa gives {len(sd)} arrays, {'with' if routed else 'without'} routers and the "
       f"depth buffer", all(isinstance(v, np.ndarray) for v in sd.values())
       and any(k.startswith("routers.") for k in sd) == routed and ("_last_depth_reg_loss" in sd) == routed)

    # (3) the official layout loads it strictly and computes gatelab's loss
    mod = OfficialLayout(m["vocab_size"], m["d_model"], m["n_layer"], m["n_head"], m["d_ff"], m["seq_len"], routed)
    res = mod.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=True)
    ok(f"{name}: load_state_dict(strict=True) into the official layout (no missing or unexpected keys)",
       not res.missing_keys and not res.unexpected_keys)
    text = open(f"{W}/batch.txt", encoding="utf-8").read()
    ids = run.checkpoint.encode(text)
    T = m["seq_len"]
    nw = (len(ids) - 1) // T
    x = torch.tensor(ids[:nw * T]).view(nw, T)
    y = torch.tensor(ids[1:nw * T + 1]).view(nw, T)
    mod = mod.double().eval()
    with torch.no_grad():
        loss = F.cross_entropy(mod(x).reshape(-1, m["vocab_size"]), y.reshape(-1)).item()
    ref = json.load(open(f"{W}/{name}.eval.json"))["loss"]
    ok(f"{name}: the official layout's loss on {nw} windows of {T} tokens is gatelab eval --text's to 1e-5 "
       f"({loss:.9f} vs {ref:.9f}, |Δ| {abs(loss - ref):.2e})", abs(loss - ref) <= 1e-5)
    if routed:  # the check sees the routers: without them the loss is far outside the tolerance
        with torch.no_grad():
            full = F.cross_entropy(mod(x, bypass_routers=True).reshape(-1, m["vocab_size"]), y.reshape(-1)).item()
        ok(f"{name}: the routers move the loss by {abs(full - ref):.2e}, over 10 times the 1e-5 tolerance",
           abs(full - ref) > 1e-4)

    # (2) and back: the same tensors, the same model
    vocab = b"".join(run.checkpoint.vocab)
    back = gatelab.from_official_tsa({k: torch.from_numpy(v) for k, v in sd.items()}, f"{R}/runs/{name}-back",
                                     vocab=vocab, seq_len=T, tsa_lambda=m.get("tsa_lambda", 0.0),
                                     dropout=m.get("dropout", 0.0), n_head=m["n_head"], data="corpus.txt")
    a, b = run.checkpoint.params, back.checkpoint.params
    worst = max((float(np.max(np.abs(a[k] - b[k]))) for k in a if k in b and a[k].shape == b[k].shape), default=0.0)
    ok(f"{name}: gatelab → official → gatelab: the same {len(a)} tensors, each to 1e-6 (worst {worst:.1e})",
       set(a) == set(b) and all(a[k].shape == b[k].shape for k in a) and worst <= 1e-6)
    ok(f"{name}: the round-tripped run is registered FINISHED in experiment import ({back.status}, {back.experiment})",
       back.status == "FINISHED" and back.experiment == "import")
    la, lb = eval_text_loss(f"{R}/runs/{name}"), eval_text_loss(f"{R}/runs/{name}-back")
    ok(f"{name}: gatelab eval --text gives the round-tripped run the same loss ({la!r}, {lb!r})", la == lb)

# refusals, one line each
try:
    gatelab.to_official_tsa(gatelab.load_run(f"{R}/runs/a"))
    ok("to_official_tsa refuses a llama run", False)
except ValueError as e:
    ok(f"to_official_tsa refuses a run not of the paper's form in one line: {e}",
       "\n" not in str(e) and "model.backbone = llama" in str(e))
sd = gatelab.to_official_tsa(gatelab.load_run(f"{R}/runs/paper"))
del sd["routers.0.mlp.2.bias"]
try:
    gatelab.from_official_tsa(sd, f"{R}/runs/never", vocab=b"".join(gatelab.load_run(f"{R}/runs/paper").checkpoint.vocab),
                              seq_len=32, tsa_lambda=0.01, dropout=0.1, n_head=2)
    ok("from_official_tsa refuses a state_dict missing a tensor", False)
except ValueError as e:
    ok(f"from_official_tsa refuses a state_dict missing a tensor, naming it: {e}",
       "routers.0.mlp.2.bias" in str(e) and not os.path.exists(f"{R}/runs/never"))
vocab = b"".join(gatelab.load_run(f"{R}/runs/paper").checkpoint.vocab)
refusals = (("a mis-shaped tensor", "blocks.1.attn.qkv.weight", lambda sd: sd.update(
                 {"blocks.1.attn.qkv.weight": sd["blocks.1.attn.qkv.weight"][:-1]}), vocab),
            ("a head not tied to the embedding", "head.weight", lambda sd: sd.update(
                 {"head.weight": sd["head.weight"] + 1}), vocab),
            ("a vocabulary of non-ASCII characters", "beyond ASCII", lambda sd: None, "é" * len(vocab)))
for what, word, edit, voc in refusals:
    sd = gatelab.to_official_tsa(gatelab.load_run(f"{R}/runs/paper"))
    edit(sd)
    try:
        gatelab.from_official_tsa(sd, f"{R}/runs/never", vocab=voc, seq_len=32, tsa_lambda=0.01, dropout=0.1, n_head=2)
        ok(f"from_official_tsa refuses {what}", False)
    except ValueError as e:
        ok(f"from_official_tsa refuses {what}: {e}", word in str(e) and not os.path.exists(f"{R}/runs/never"))
sys.exit(1 if failed else 0)
