"""gatelab.official — the TSA paper's own PyTorch models and gatelab runs, both ways.

What it does: `to_official_tsa(run)` gives a gatelab run of the paper's form (backbone gpt2, TSA in
tsa_form paper, or the dense baseline; multi-head attention) as a dict of numpy arrays laid out as
the state_dict of the official code's `TSATransformer` (the dense baseline: its
`BaselineTransformer`), so `module.load_state_dict({k: torch.from_numpy(v) ...}, strict=True)`
loads it.  `from_official_tsa(state_dict, run_dir, ...)` goes the other way: it writes an HDF5 file
in gatelab's export layout (docs/files.md "Export") and has `gatelab import` make the run folder,
its checkpoint and its registry row, so every command opens the run (eval, probe, ablate, heads,
sample, report).

What it does not: import torch (a state_dict of torch tensors or numpy arrays is accepted), copy
or run the official code, or write a gatelab checkpoint or registry itself: `gatelab import` is
the only writer.

The mapping is one table, OFFICIAL_NAMES: official name -> gatelab tensor name ({i} a block,
{l} a router).  Two entries are not one-to-one: the official fused `attn.qkv.weight` is the rows
of wq, wk and wv stacked (3d, d), and the tied `head.weight` is the embedding again.
"""
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

# official name -> gatelab name; a tuple of gatelab names is stacked row-wise (the fused qkv)
OFFICIAL_NAMES = (
    ("token_emb.weight", "embed"),
    ("pos_emb.weight", "pos_embed"),
    ("blocks.{i}.ln1.weight", "layers.{i}.attn_norm"),
    ("blocks.{i}.ln1.bias", "layers.{i}.attn_norm_bias"),
    ("blocks.{i}.attn.qkv.weight", ("layers.{i}.attn.wq", "layers.{i}.attn.wk", "layers.{i}.attn.wv")),
    ("blocks.{i}.attn.proj.weight", "layers.{i}.attn.wo"),
    ("blocks.{i}.ln2.weight", "layers.{i}.ffn_norm"),
    ("blocks.{i}.ln2.bias", "layers.{i}.ffn_norm_bias"),
    ("blocks.{i}.ffn.net.0.weight", "layers.{i}.ffn.w1"),
    ("blocks.{i}.ffn.net.0.bias", "layers.{i}.ffn.b1"),
    ("blocks.{i}.ffn.net.3.weight", "layers.{i}.ffn.w2"),
    ("blocks.{i}.ffn.net.3.bias", "layers.{i}.ffn.b2"),
    ("routers.{l}.mlp.0.weight", "routers.{l}.fc1_w"),
    ("routers.{l}.mlp.0.bias", "routers.{l}.fc1_b"),
    ("routers.{l}.mlp.2.weight", "routers.{l}.fc2_w"),
    ("routers.{l}.mlp.2.bias", "routers.{l}.fc2_b"),
    ("ln_f.weight", "final_norm"),
    ("ln_f.bias", "final_norm_bias"),
    ("head.weight", "embed"),  # tied: the official head is the token embedding
)
DEPTH_BUFFER = "_last_depth_reg_loss"  # TSATransformer's scalar buffer (the last depth penalty; not a weight)
LN_EPS = 1e-5                          # torch.nn.LayerNorm's default, which the official model keeps
ROUTER_INIT_BIAS = -1.0                # the official router's initial output bias (only a start: not a weight)


def _rows(n_layer, routed):
    """(official name, gatelab name or tuple) for a model of n_layer blocks, with routers or not."""
    out = []
    for off, gl in OFFICIAL_NAMES:
        if "{i}" in off:
            reps = [dict(i=i) for i in range(n_layer)]
        elif "{l}" in off:
            reps = [dict(l=r) for r in range(n_layer - 1)] if routed else []
        else:
            reps = [{}]
        for k in reps:
            out.append((off.format(**k), tuple(g.format(**k) for g in gl) if isinstance(gl, tuple) else gl.format(**k)))
    return out


def _router_hidden(d):
    return max(d // 4, 16)


def _paper_form_problems(m):
    """What keeps a gatelab [model] config from the official layout (empty: nothing)."""
    why = []
    get = lambda k, default=None: m.get(k, default)
    if get("backbone", "llama") != "gpt2":
        why.append(f"model.backbone = {get('backbone', 'llama')} (needs gpt2)")
    routing = get("depth_routing", "none")
    if routing == "tsa" and get("tsa_form", "gatelab") != "paper":
        why.append(f"model.tsa_form = {get('tsa_form', 'gatelab')} (needs paper)")
    elif routing not in ("tsa", "none"):
        why.append(f"model.depth_routing = {routing} (needs tsa, or none for the dense baseline)")
    if get("n_kv_head") != get("n_head"):
        why.append(f"model.n_kv_head = {get('n_kv_head')} with n_head = {get('n_head')} (needs multi-head attention)")
    for key, want in (("value_residual", "none"), ("cross_layer", "none"), ("tied", 1), ("qk_norm", 0)):
        if get(key, want) != want:
            why.append(f"model.{key} = {get(key)} (needs {want})")
    if np.float32(get("norm_eps", 0)) != np.float32(LN_EPS):
        why.append(f"model.norm_eps = {get('norm_eps')} (needs {LN_EPS:g}, torch.nn.LayerNorm's)")
    d, R = get("d_model"), get("router_hidden", 0)
    if routing == "tsa" and isinstance(d, int) and R not in (0, _router_hidden(d)):
        why.append(f"model.router_hidden = {R} (the official router's is max(d/4, 16) = {_router_hidden(d)})")
    return why


def to_official_tsa(run):
    """The run (a gatelab.Run, or what gatelab.load_run takes) as {official name: float32 array}:
    TSATransformer's state_dict for a TSA run, BaselineTransformer's for a dense one.
    A run not of the paper's form raises ValueError, one line saying what differs."""
    from .run import Run, load_run
    if not isinstance(run, Run):
        run = load_run(run)
    m = run.config.get("model", {})
    why = _paper_form_problems(m)
    if why:
        raise ValueError(f"run {run.id} is not of the TSA paper's form: " + "; ".join(why))
    params = run.checkpoint.params
    routed = m.get("depth_routing") == "tsa"
    out, used = {}, set()
    for off, gl in _rows(int(m["n_layer"]), routed):
        names = gl if isinstance(gl, tuple) else (gl,)
        missing = [g for g in names if g not in params]
        if missing:
            raise ValueError(f"run {run.id}: its checkpoint lacks {', '.join(missing)} (for {off})")
        out[off] = np.concatenate([params[g] for g in names]) if len(names) > 1 else params[gl].copy()
        used.update(names)
    extra = sorted(set(params) - used)
    if extra:
        raise ValueError(f"run {run.id}: tensors the official model has no place for: {', '.join(extra)}")
    if routed:
        out[DEPTH_BUFFER] = np.zeros((), dtype=np.float32)
    return out


def _array(v):
    """A torch tensor or array-like as a float32 numpy array."""
    if hasattr(v, "detach"):
        v = v.detach().cpu()
        v = v.float() if hasattr(v, "float") else v
        v = v.numpy()
    return np.asarray(v, dtype=np.float32)


def _gatelab_bin():
    """$GATELAB_BIN, else build/gatelab of the clone holding this package, else gatelab on PATH."""
    env = os.environ.get("GATELAB_BIN")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    built = os.path.join(root, "build", "gatelab")
    if os.access(built, os.X_OK):
        return built
    found = shutil.which("gatelab")
    if found:
        return found
    raise FileNotFoundError(f"no gatelab binary: build it (make, in {root}) or set GATELAB_BIN")


def _config_text(*, V, d, L, H, F, T, dropout, routed, R, tsa_lambda, data):
    model = [("vocab_size", V), ("d_model", d), ("n_layer", L), ("n_head", H), ("n_kv_head", H), ("d_ff", F),
             ("seq_len", T), ("norm_eps", f"{LN_EPS:g}"), ("qk_norm", 0), ("tied", 1), ("backbone", "gpt2"),
             ("dropout", repr(float(dropout)))]
    if routed:
        model += [("depth_routing", "tsa"), ("tsa_form", "paper"), ("router_hidden", R),
                  ("router_init_bias", repr(ROUTER_INIT_BIAS)), ("tsa_lambda", repr(float(tsa_lambda)))]
    text = "[model]\n" + "".join(f"{k} = {v}\n" for k, v in model)
    if data:
        text += f"[data]\nfile = {data}\n"
    return text


def from_official_tsa(state_dict, run_dir, *, vocab, seq_len, tsa_lambda, dropout, n_head, data=None,
                      experiment="import", step=0):
    """Make the gatelab run run_dir (<results>/runs/<id>, new) from an official TSATransformer's (or
    BaselineTransformer's) state_dict; returns the gatelab.Run.

    vocab: the byte of each token id (bytes, a list of ints 0..255, or an ASCII str such as
    "".join(tokenizer.itos[i] for i in range(V))), as long as the embedding;
    seq_len: the context length (the first seq_len rows of pos_emb are kept); tsa_lambda, dropout:
    the run's λ and dropout rate (recorded in its config); n_head: the attention heads (the fused
    qkv matrix does not show them); data: the run's data.file (what `gatelab eval RUN` reads;
    `eval --text FILE` needs none); experiment: its experiment in the registry; step: its recorded
    step.  A missing, extra or mis-shaped tensor raises ValueError naming it; `gatelab import`
    failing raises RuntimeError with its message."""
    import h5py

    sd = {k: _array(v) for k, v in state_dict.items()}
    if "token_emb.weight" not in sd:
        raise ValueError("state_dict has no token_emb.weight: not the official TSA code's layout")
    V, d = sd["token_emb.weight"].shape
    blocks = {int(m.group(1)) for k in sd for m in [re.match(r"blocks\.(\d+)\.", k)] if m}
    L = max(blocks) + 1 if blocks else 0
    routed = any(k.startswith("routers.") for k in sd)
    if L < 1 or blocks != set(range(L)):
        raise ValueError(f"state_dict's blocks are {sorted(blocks)}: expected 0..{L - 1}")
    if d % n_head:
        raise ValueError(f"n_head = {n_head} does not divide d_model = {d}")
    rows = _rows(L, routed)
    want = {off for off, _ in rows} | ({DEPTH_BUFFER} if routed else set())
    missing, extra = sorted(want - set(sd)), sorted(set(sd) - want)
    if missing or extra:
        raise ValueError("state_dict is not the official layout of %d blocks%s: %s" % (
            L, " with routers" if routed else "",
            "; ".join(s for s in (missing and "missing " + ", ".join(missing), extra and "unexpected " + ", ".join(extra)) if s)))
    if not np.array_equal(sd["head.weight"], sd["token_emb.weight"]):
        raise ValueError("head.weight differs from token_emb.weight: gatelab's gpt2 model ties them, as the official one does")
    F = sd["blocks.0.ffn.net.0.weight"].shape[0]
    R = sd["routers.0.mlp.0.weight"].shape[0] if routed else 0
    P = sd["pos_emb.weight"].shape[0]
    if not 1 <= seq_len <= P:
        raise ValueError(f"seq_len = {seq_len}: pos_emb.weight has {P} positions")
    sd["pos_emb.weight"] = sd["pos_emb.weight"][:seq_len]
    if isinstance(vocab, str):  # a character vocabulary: one byte per id only when it is ASCII
        bad = sorted({c for c in vocab if ord(c) > 127})
        if bad:
            raise ValueError(f"vocab has characters beyond ASCII ({''.join(bad[:8])!r}…): gatelab's ids are bytes; "
                             "a character-level vocabulary of non-ASCII text has no byte per id")
        vocab = vocab.encode("ascii")
    vb = bytes(vocab)
    if len(vb) != V:
        raise ValueError(f"vocab has {len(vb)} entries, token_emb.weight {V} ids")
    expect = {"token_emb.weight": (V, d), "pos_emb.weight": (seq_len, d)}
    for i in range(L):
        expect.update({f"blocks.{i}.attn.qkv.weight": (3 * d, d), f"blocks.{i}.attn.proj.weight": (d, d),
                       f"blocks.{i}.ffn.net.0.weight": (F, d), f"blocks.{i}.ffn.net.3.weight": (d, F),
                       f"blocks.{i}.ffn.net.0.bias": (F,), f"blocks.{i}.ffn.net.3.bias": (d,)})
        for n in ("ln1", "ln2"):
            expect.update({f"blocks.{i}.{n}.weight": (d,), f"blocks.{i}.{n}.bias": (d,)})
    for r in range(L - 1 if routed else 0):
        expect.update({f"routers.{r}.mlp.0.weight": (R, d), f"routers.{r}.mlp.0.bias": (R,),
                       f"routers.{r}.mlp.2.weight": (1, R), f"routers.{r}.mlp.2.bias": (1,)})
    expect.update({"ln_f.weight": (d,), "ln_f.bias": (d,), "head.weight": (V, d)})
    for k, shape in expect.items():
        if sd[k].shape != shape:
            raise ValueError(f"{k} is {sd[k].shape}, expected {shape} (d_model {d}, d_ff {F}, vocab {V})")
    tensors = {}
    for off, gl in rows:
        if off == "head.weight":
            continue  # tied: the embedding
        if isinstance(gl, tuple):
            for g, part in zip(gl, np.split(sd[off], len(gl))):
                tensors[g] = part
        else:
            tensors[gl] = sd[off]
    config = _config_text(V=V, d=d, L=L, H=n_head, F=F, T=seq_len, dropout=dropout, routed=routed, R=R,
                          tsa_lambda=tsa_lambda, data=data)
    with tempfile.TemporaryDirectory(prefix="gatelab-import-") as tmp:
        h5 = os.path.join(tmp, "official.h5")
        with h5py.File(h5, "w") as f:
            f.attrs["schema_version"] = np.int32(1)
            f.attrs["format"] = "gatelab model export"
            f.attrs["config"] = config
            f.attrs["step"] = np.int64(step)
            for name, a in tensors.items():
                f.create_dataset(name, data=np.ascontiguousarray(a, dtype=np.float32))
            f.create_dataset("vocab", data=np.frombuffer(vb, dtype=np.uint8))
        p = subprocess.run([_gatelab_bin(), "import", h5, "--out", run_dir, "--experiment", experiment],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError((p.stderr or p.stdout).strip().splitlines()[-1] if (p.stderr or p.stdout).strip()
                               else f"gatelab import exited {p.returncode}")
    from .run import load_run
    return load_run(run_dir if os.sep in run_dir else os.path.join(".", run_dir))
