"""make_fixtures.py — write the parity fixtures tests/test_parity.c checks the C model against.

What it does: for each case below (a small model: V 13, d 32, L 3, H 4,
d_ff 48, T 8, B 2, and one variant of value residual / depth routing each) it
draws random weights and a random batch, runs the reference of ref_model.py
in float64, and writes one HDF5 file per case with the config, the batch, the
parameters, the logits, the losses, every gradient, the gates / halting
probabilities / exit confidences, and the losses and parameters of 3 AdamW
steps.  Values are computed in float64 and stored as float32; the parameters
are rounded to float32 *before* the reference uses them, so the float32 C
model starts from exactly the numbers the ground truth was computed from.

What it does not: it does not read or call the C code, and it does not decide
tolerances (tests/test_parity.c does).

Usage: /usr/bin/python3 scripts/reference/make_fixtures.py OUT_DIR [CASE ...]   (make fixtures)
       with CASE names, only those cases are (re)written.
Deterministic: each case draws from its own torch.Generator seeded from the
case name, and HDF5 timestamps are off, so reruns give identical files.
"""
import math
import os
import sys
import zlib

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_model as rm  # noqa: E402

B, T = 2, 8
N_ADAM_STEPS = 3
# AdamW as in training (torch.optim.AdamW, betas (0.9, 0.95), decay 0.1, clip 1.0,
# constant lr 1e-2) except eps: 1e-4 instead of training's 1e-8.  Why: Adam's
# step is lr·g/(|g|+eps), whose sensitivity to g is up to lr/(4·eps); with
# eps 1e-8 a parameter whose gradient happens to be ~1e-7 (a quiet FFN unit,
# a cancelling sum) moves by a full ±lr on float32 rounding noise alone, and
# even this same reference run in float32 misses its float64 self by 1.9e-3
# (satformer_lastk_gqa, layers.1.ffn.w2) — the check would measure rounding, not
# the optimiser.  With eps 1e-4 the float32 reference stays within 5e-6 on
# every case, and a misplaced eps (inside the sqrt, before the bias correction)
# is easier, not harder, to see.  The C optimiser reads eps from the file.
OPT = dict(lr=1e-2, weight_decay=0.1, beta1=0.9, beta2=0.95, eps=1e-4, grad_clip=1.0)

GQA = dict(n_kv_head=2)
CASES = {
    "base_mha_qk": dict(n_kv_head=4, qk_norm=1, tied=1),
    # seq_len 16 > T 8 also checks a forward shorter than the model's context
    "base_gqa_noqk_untied": dict(n_kv_head=2, qk_norm=0, tied=0, seq_len=16),
    "base_gqa_qk": dict(GQA),
    "resformer_plus_gqa": dict(GQA, value_residual="resformer", resformer_variant="plus"),
    "resformer_learnable_gqa": dict(GQA, value_residual="resformer", resformer_variant="learnable"),
    "resformer_identity_gqa": dict(GQA, value_residual="resformer", resformer_variant="identity"),
    "satformer_gqa": dict(GQA, value_residual="satformer"),
    "satformer_lastk_gqa": dict(GQA, value_residual="satformer", n_layer=4,
                                value_residual_last_k=2, decay_gates=0),
    "tsa_gqa": dict(GQA, depth_routing="tsa", tsa_lambda=0.05),
    "tsa_satformer_gqa": dict(GQA, depth_routing="tsa", tsa_lambda=0.05,
                              value_residual="satformer", router_hidden=8),
    "early_exit_gqa": dict(GQA, depth_routing="early_exit", exit_weighting="linear"),
    "early_exit_uniform": dict(n_kv_head=4, depth_routing="early_exit", exit_weighting="uniform"),
    # cross-layer (docs/crosslayer.md); combinations with value residuals and TSA
    "denseformer_gqa": dict(GQA, cross_layer="denseformer"),
    "denseformer_tsa_satformer_gqa": dict(GQA, cross_layer="denseformer", depth_routing="tsa",
                                          tsa_lambda=0.05, value_residual="satformer", router_hidden=8),
    "hyper_gqa": dict(GQA, cross_layer="hyper"),
    "hyper3_resformer_gqa": dict(GQA, cross_layer="hyper", hc_expansion=3,
                                 value_residual="resformer", resformer_variant="plus"),
    "mudd_gqa": dict(GQA, cross_layer="mudd", n_layer=4),
    "mudd_satformer_gqa": dict(GQA, cross_layer="mudd", value_residual="satformer"),
    # SATFormer's gate functions and gate bias (model.sat_gate, model.sat_gate_bias) and the
    # official code's single AdamW group (train.weight_decay_policy = all)
    "satformer_sigmoid_gqa": dict(GQA, value_residual="satformer", sat_gate="sigmoid"),
    "satformer_softmax_gqa": dict(GQA, value_residual="satformer", sat_gate="softmax"),
    "satformer_softmax_mha": dict(n_kv_head=4, value_residual="satformer", sat_gate="softmax"),
    "satformer_softmax_sigmoid_gqa": dict(GQA, value_residual="satformer", sat_gate="softmax_sigmoid"),
    "satformer_tanh_gqa": dict(GQA, value_residual="satformer", sat_gate="tanh"),
    "satformer_identity_gqa": dict(GQA, value_residual="satformer", sat_gate="identity"),
    "satformer_relu_bias_gqa": dict(GQA, value_residual="satformer", sat_gate_bias=1),
    "satformer_softmax_bias_gqa": dict(GQA, value_residual="satformer", sat_gate="softmax", sat_gate_bias=1),
    "satformer_bias_decay_all_gqa": dict(GQA, value_residual="satformer", sat_gate_bias=1,
                                         weight_decay_policy="all"),
    "resformer_learnable_decay_all_gqa": dict(GQA, value_residual="resformer", resformer_variant="learnable",
                                              weight_decay_policy="all"),
    # hard routing (docs/model.md "Mixture-of-Depths", "Random routing")
    "mod_gqa": dict(GQA, depth_routing="mod", mod_capacity=0.5, mod_every=1),
    "mod_every2_satformer_gqa": dict(GQA, depth_routing="mod", mod_capacity=0.375, mod_every=2, n_layer=4,
                                     value_residual="satformer"),
    "random_gqa": dict(GQA, depth_routing="random", random_alpha=0.5),
    # the TSA paper's own model (docs/model.md "The TSA paper's own configuration"): the gpt2 backbone,
    # TSA in the paper's form, dropout with the C model's masks for a fixed key
    "gpt2_mha": dict(backbone="gpt2", n_kv_head=4, qk_norm=0, norm_eps=1e-5),
    "gpt2_tsa_paper_dropout": dict(backbone="gpt2", n_kv_head=4, qk_norm=0, norm_eps=1e-5, depth_routing="tsa",
                                   tsa_form="paper", tsa_lambda=0.05, dropout=0.1),
    "tsa_paper_gqa": dict(GQA, depth_routing="tsa", tsa_form="paper", tsa_lambda=0.05),
    # early exit in the TSA paper's form (an exit norm per block, uniform mean over the L exits), on its
    # gpt2 backbone and on the llama block; L 4 so that a token can exit after block 1 or 2 or not at all
    "early_exit_paper_gpt2": dict(backbone="gpt2", n_kv_head=4, qk_norm=0, norm_eps=1e-5, n_layer=4,
                                  depth_routing="early_exit", exit_form="paper", exit_weighting="uniform"),
    "early_exit_paper_gqa": dict(GQA, n_layer=4, depth_routing="early_exit", exit_form="paper",
                                 exit_weighting="uniform"),
}
# the dropout cases' key (model.h drop_key; the rows are numbered from 0)
DROP_KEY = 0x9E3779B97F4A7C15

INT_ATTRS = ("vocab_size", "d_model", "n_layer", "n_head", "n_kv_head", "d_ff", "seq_len",
             "qk_norm", "tied", "value_residual_last_k", "decay_gates", "router_hidden")
FLOAT_ATTRS = ("norm_eps", "rope_base", "tsa_lambda")
STR_ATTRS = ("value_residual", "resformer_variant", "depth_routing", "exit_weighting")
# written only when cross_layer != "none", so the files of the other cases keep their bytes
XL_INT_ATTRS = ("hc_expansion",)
XL_STR_ATTRS = ("cross_layer",)
# written only when they differ from these defaults, so the files of the other cases keep their bytes
OPTIONAL_ATTRS = (("sat_gate", "relu"), ("sat_gate_bias", 0), ("weight_decay_policy", "matrices"))
# written only when they differ from these defaults (the gpt2 and paper cases), likewise
PAPER_ATTRS = (("backbone", "llama"), ("tsa_form", "gatelab"), ("exit_form", "gatelab"))
# written only by the mod and random cases, likewise
ROUTE_INT_ATTRS = ("mod_every",)
ROUTE_FLOAT_ATTRS = ("mod_capacity", "random_alpha")

M64 = (1 << 64) - 1


def _mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def random_keep(cfg, tokens):
    """Random routing's evaluation draw as model/routing.c makes it: per window
    the key is FNV-1a 64 of its token ids (xor T), and pair (block n, position
    i) is computed when the 24-bit uniform of mix64(key ^ mix64((n << 40) + i + 1))
    is below random_alpha (as float32).  (L, B, T); block 0 always runs."""
    Bn, Tn = tokens.shape
    keep = torch.ones(cfg.n_layer, Bn, Tn, dtype=torch.float64)
    alpha = float(np.float32(cfg.random_alpha))
    for b in range(Bn):
        key = 0xCBF29CE484222325
        for t in tokens[b].tolist():
            key = ((key ^ t) * 0x100000001B3) & M64
        key ^= Tn
        for n in range(1, cfg.n_layer):
            for i in range(Tn):
                u = (_mix64(key ^ _mix64(((n << 40) + i + 1) & M64)) >> 40) / 16777216.0
                keep[n, b, i] = 1.0 if u < alpha else 0.0
    return keep


def dropout_masks(cfg, Bn, Tn):
    """model/dropout.c's masks for key DROP_KEY, rows from 0: site (kind, block n), site = kind·64 + n,
    has the stream key ks = mix64(key ^ mix64(site + 1)); pair p = index >> 1 of its entries hashes to
    h = mix64(ks + p·γ) (γ = 0x9E3779B97F4A7C15), entry 2p's 24-bit uniform u is bits 8..31 of h,
    entry 2p + 1's bits 40..63; the entry is dropped when u < ceil(rate·2^24) (rate float32: u/2^24
    below the rate), else scaled by float32 1/(1 − rate).  Indices: (b·T + i)·C + c for an activation
    (B, T, C), ((b·T + i)·H + h)·T + j for attention probability (b, h, i, j).  Kinds: 0 the embedding
    sum, 1 the attention probabilities, 2 the FFN hidden activation, 3 the FFN output."""
    rate = np.float32(cfg.dropout)
    inv = float(np.float32(1.0) / (np.float32(1.0) - rate))
    thr = math.ceil(float(rate) * 16777216.0)

    def scale(site, index):
        ks = _mix64(DROP_KEY ^ _mix64(site + 1))
        h = _mix64((ks + (index >> 1) * 0x9E3779B97F4A7C15) & M64)
        u = (h >> (40 if index & 1 else 8)) & 0xFFFFFF
        return 0.0 if u < thr else inv

    def rows(kind, n, C):
        m = torch.empty(Bn, Tn, C, dtype=torch.float64)
        for b in range(Bn):
            for i in range(Tn):
                for c in range(C):
                    m[b, i, c] = scale(kind * 64 + n, (b * Tn + i) * C + c)
        return m

    H = cfg.n_head
    masks = {"embed": rows(0, 0, cfg.d_model)}
    for n in range(cfg.n_layer):
        att = torch.zeros(Bn, H, Tn, Tn, dtype=torch.float64)
        for b in range(Bn):
            for h in range(H):
                for i in range(Tn):
                    for j in range(i + 1):
                        att[b, h, i, j] = scale(64 + n, ((b * Tn + i) * H + h) * Tn + j)
        masks[("att", n)] = att
        masks[("ffn_hidden", n)] = rows(2, n, cfg.d_ff)
        masks[("ffn_out", n)] = rows(3, n, cfg.d_model)
    return masks


def batch(cfg, gen):
    tokens = torch.randint(0, cfg.vocab_size, (B, T), generator=gen)
    targets = torch.randint(0, cfg.vocab_size, (B, T), generator=gen)
    mask = (torch.rand(B, T, generator=gen, dtype=torch.float64) < 0.8).to(torch.float64)
    if mask.min() > 0:  # at least one position not scored
        mask[1, int(torch.randint(0, T, (1,), generator=gen))] = 0.0
    assert mask.sum() > 0
    return tokens, targets, mask


def choose_tau(cfg, conf):
    """A threshold for the paper-form exit check: the midpoint of a gap between two confidences of
    blocks 1..L-2 (conf (L, B, T), float64) that spreads the tokens best over the exits 1..L-1 (the
    most even split: the largest smallest count), then the widest gap.  The float32 C model's
    confidences sit within ~1e-7 of these, so a gap of 1e-4 on each side keeps every decision the
    reference's; rounded to float32, as the C model holds it."""
    L = cfg.n_layer
    vals = sorted(set(float(v) for v in conf[1:L - 1].reshape(-1)))
    best = None
    for lo, hi in zip(vals, vals[1:]):
        tau = float(np.float32(0.5 * (lo + hi)))
        margin = min(tau - lo, hi - tau)
        if margin < 1e-4:
            continue
        block = torch.full(conf.shape[1:], L - 1, dtype=torch.long)
        for n in range(L - 2, 0, -1):
            block = torch.where(conf[n] > tau, torch.full_like(block, n), block)
        spread = min(int((block == e).sum()) for e in range(1, L))
        if best is None or (spread, margin) > best[:2]:
            best = (spread, margin, tau)
    assert best is not None and best[0] > 0, "no threshold sends tokens to every exit; change the case"
    return best[2]


def open_untimed(path, groups):
    """A new HDF5 file whose root group and subgroups carry no timestamps, so
    that rerunning the script rewrites byte-identical files."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl)
    f = h5py.File(fid)
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    for g in groups:
        h5py.h5g.create(f.id, g.encode(), gcpl=gcpl)
    return f


def put_str(f, key, s):
    raw = s.encode("utf-8")
    f.attrs.create(key, np.array(raw, dtype=h5py.string_dtype("utf-8", len(raw))))


def put(f, name, t, **kw):
    a = t.detach().to(torch.float32).numpy() if torch.is_tensor(t) else np.asarray(t, np.float32)
    return f.create_dataset(name, data=a, track_times=False, **kw)


def run_reference(cfg, P, tokens, targets, mask):
    """Forward + gradients of P, then N_ADAM_STEPS AdamW steps on a copy.
    Returns (forward outputs, gradients in P's order, losses_adam, params after)."""
    P = {k: v.detach().clone().requires_grad_(True) for k, v in P.items()}
    keep = random_keep(cfg, tokens).to(P["embed"].dtype) if cfg.depth_routing == "random" else None
    drop = None
    if cfg.dropout > 0:
        drop = {k: v.to(P["embed"].dtype) for k, v in dropout_masks(cfg, *tokens.shape).items()}
    fwd = lambda Pp: rm.forward(cfg, Pp, tokens, targets, mask, route_keep=keep, drop=drop)
    out = fwd(P)
    grads = torch.autograd.grad(out["loss"], list(P.values()))
    for gname, g in zip(P, grads):
        assert g is not None, gname

    # forward, backward, clip, step — N_ADAM_STEPS times; then one more forward
    Q = {k: v.detach().clone().requires_grad_(True) for k, v in P.items()}
    opt = rm.make_adamw(cfg, Q, lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"],
                        weight_decay=OPT["weight_decay"])
    losses = []
    for _ in range(N_ADAM_STEPS):
        opt.zero_grad(set_to_none=False)
        loss = fwd(Q)["loss"]
        losses.append(float(loss))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(Q.values()), OPT["grad_clip"])
        opt.step()
    with torch.no_grad():
        losses.append(float(fwd(Q)["loss"]))
    return out, grads, losses, Q


def float32_errors(out, grads, losses, Q, out32, grads32, losses32, Q32):
    """The errors test_parity.c measures, for the float32 reference."""
    d = lambda a, b: float((a.double() - b.double()).abs().max())
    e = {}
    e["loss"] = abs(float(out32["loss"]) - float(out["loss"])) / abs(float(out["loss"]))
    e["logits"] = d(out32["logits"], out["logits"]) / float(out["logits"].abs().max())
    e["grad"] = max(d(g32, g) / max(float(g.abs().max()), 1e-6) for g32, g in zip(grads32, grads))
    e["adam_loss"] = max(abs(a - b) / abs(b) for a, b in zip(losses32, losses))
    e["adam_param"] = max(d(Q32[k], Q[k]) / float(Q[k].abs().max()) for k in Q)
    return e


def make_case(name, over, out_dir):
    cfg = rm.Config(**over)
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    P = rm.random_params(cfg, gen, torch.float64)
    tokens, targets, mask = batch(cfg, gen)
    shapes = rm.param_shapes(cfg)
    out, grads, losses, Q = run_reference(cfg, P, tokens, targets, mask)
    # The same computation in float32: what a correct float32 implementation
    # can reach.  Printed next to the test's tolerances so an ill-conditioned
    # fixture (e.g. a gradient near Adam's eps, a ReLU gate at 0) shows here.
    P32 = {k: v.to(torch.float32) for k, v in P.items()}
    out32, grads32, losses32, Q32 = run_reference(cfg, P32, tokens, targets, mask.float())
    f32 = float32_errors(out, grads, losses, Q, out32, grads32, losses32, Q32)
    ev = None
    if cfg.exit_paper():  # the paper's evaluation at a threshold, from the dense forward at P
        tau = choose_tau(cfg, out["exit_conf"])
        ev = rm.paper_exit_eval(cfg, out, targets, mask, tau)
        out["exit_tau"] = (tau, ev)

    path = os.path.join(out_dir, name + ".h5")
    tmp = path + ".tmp"
    groups = ["params", "grads", "params_after"]
    groups += [g for k, g in (("sat_alpha", "sat"), ("resformer_lambda", "resformer"),
                              ("tsa_p", "tsa"), ("exit_conf", "exit"), ("route_keep", "route"),
                              ("mod_weight", "mod"), ("exit_tau", "exit_paper")) if k in out]
    with open_untimed(tmp, groups) as f:
        for k in INT_ATTRS:
            f.attrs.create(k, np.int32(getattr(cfg, k)))
        for k in FLOAT_ATTRS:
            f.attrs.create(k, np.float32(getattr(cfg, k)))
        for k in STR_ATTRS:
            put_str(f, k, getattr(cfg, k))
        if cfg.cross_layer != "none":
            for k in XL_INT_ATTRS:
                f.attrs.create(k, np.int32(getattr(cfg, k)))
            for k in XL_STR_ATTRS:
                put_str(f, k, getattr(cfg, k))
        for k, default in OPTIONAL_ATTRS:
            v = getattr(cfg, k)
            if v != default:
                if isinstance(v, str):
                    put_str(f, k, v)
                else:
                    f.attrs.create(k, np.int32(v))
        for k, default in PAPER_ATTRS:
            if getattr(cfg, k) != default:
                put_str(f, k, getattr(cfg, k))
        if cfg.dropout > 0:
            f.attrs.create("dropout", np.float32(cfg.dropout))
            put_str(f, "drop_key", "0x%016x" % DROP_KEY)
        if cfg.depth_routing in ("mod", "random"):
            for k in ROUTE_INT_ATTRS:
                f.attrs.create(k, np.int32(getattr(cfg, k)))
            for k in ROUTE_FLOAT_ATTRS:
                f.attrs.create(k, np.float32(getattr(cfg, k)))
        put_str(f, "case", name)
        f.attrs.create("B", np.int32(B))
        f.attrs.create("T", np.int32(T))
        f.attrs.create("n_adam_steps", np.int32(N_ADAM_STEPS))
        for k, v in OPT.items():
            f.attrs.create(k, np.float32(v))

        f.create_dataset("tokens", data=tokens.to(torch.int32).numpy(), track_times=False)
        f.create_dataset("targets", data=targets.to(torch.int32).numpy(), track_times=False)
        put(f, "mask", mask)
        for pname, t in P.items():
            ds = put(f, "params/" + pname, t)
            ds.attrs.create("decay", np.int32(rm.decays(cfg, pname, shapes[pname])))
        put(f, "logits", out["logits"])
        put(f, "loss", out["loss"].reshape(1))
        put(f, "task_loss", out["task_loss"].reshape(1))
        for pname, g in zip(P, grads):
            put(f, "grads/" + pname, g)
        put(f, "losses_adam", np.array(losses))
        for pname, t in Q.items():
            put(f, "params_after/" + pname, t)
        if "sat_alpha" in out:
            put(f, "sat/alpha", out["sat_alpha"])
        if "resformer_lambda" in out:
            put(f, "resformer/lambda", out["resformer_lambda"])
        if "tsa_p" in out:
            put(f, "tsa/p", out["tsa_p"])
        if "exit_conf" in out:
            put(f, "exit/confidence", out["exit_conf"])
        if "route_keep" in out:
            put(f, "route/keep", out["route_keep"])
        if "mod_weight" in out:
            put(f, "mod/weight", out["mod_weight"])
        if ev is not None:
            f.attrs.create("exit_tau", np.float32(tau))
            f.create_dataset("exit_paper/block", data=ev["block"].to(torch.int32).numpy(), track_times=False)
            put(f, "exit_paper/logits", ev["logits"])
            put(f, "exit_paper/loss", ev["loss"].reshape(1))
            put(f, "exit_paper/active_frac", np.array([ev["active_frac"], ev["active_frac_paper"]]))
    os.replace(tmp, path)
    return path, out, losses, f32


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_fixtures.py OUT_DIR [CASE ...]")
    out_dir = sys.argv[1]
    unknown = [c for c in sys.argv[2:] if c not in CASES]
    if unknown:
        sys.exit("make_fixtures.py: unknown case(s) %s; known: %s" % (" ".join(unknown), " ".join(CASES)))
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    for name, over in CASES.items():
        if len(sys.argv) > 2 and name not in sys.argv[2:]:
            continue
        path, out, losses, f32 = make_case(name, over, out_dir)
        extra = ""
        if "sat_alpha" in out:
            a = out["sat_alpha"]
            M = rm.Config(**over).mixing_blocks()
            extra += " alpha>0 %.2f" % float((a[M] > 0).double().mean())
        if "tsa_p" in out:
            p = out["tsa_p"]
            extra += " p %.2f..%.2f" % (float(p.min()), float(p.max()))
        if "exit_conf" in out:
            c = out["exit_conf"]
            extra += " conf %.2f..%.2f" % (float(c.min()), float(c.max()))
        if "route_keep" in out:
            extra += " α %.3f" % float(out["route_keep"][1:].mean())
        if "exit_tau" in out:
            tau, ev = out["exit_tau"]
            L = rm.Config(**over).n_layer
            extra += " τ %.4f exits %s" % (tau, "/".join(str(int((ev["block"] == e).sum())) for e in range(1, L)))
        print("%-26s loss %.5f task %.5f adam %s%s  %d bytes" % (
            name, float(out["loss"]), float(out["task_loss"]),
            " ".join("%.4f" % x for x in losses), extra, os.path.getsize(path)))
        print("    float32 reference vs float64: " + " ".join("%s %.1e" % kv for kv in f32.items()))


if __name__ == "__main__":
    main()
