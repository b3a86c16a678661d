#!/usr/bin/python3
"""A worked example of the Python package (docs/python.md), notebook style: run it cell by cell in
an interpreter, or whole:

    /usr/bin/python3 docs/python_example.py RUN [TEXT_FILE] [--results DIR] [--gatelab BIN]

RUN is a run id, a unique prefix or a run folder (after `make demo`, e.g. the demo's SATFormer run);
TEXT_FILE is any text in the run's vocabulary (default: the run's own probe text).  It decodes the
probe text from the trace, rebuilds the model in PyTorch, checks that its loss on the text equals
the C model's (`gatelab eval RUN --text FILE`) to 1e-5, and caches the SATFormer gate α through a
hook.  Exits 1 when the two losses disagree.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts", "python"))   # the one line a user needs

import torch  # noqa: E402  (python3-torch)

import gatelab  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("run")
ap.add_argument("text", nargs="?")
ap.add_argument("--results", default=None)
ap.add_argument("--gatelab", default=os.path.join(HERE, "..", "build", "gatelab"))
a = ap.parse_args()

# %% 1. the run: its config, headline and trace
run = gatelab.load_run(a.run, results=a.results)
print(run)
print("model:", {k: run.config["model"][k] for k in ("d_model", "n_layer", "value_residual", "depth_routing")})
h = run.headline          # TSA and early exit: the loss with the skipping done, the soft one beside it
if h["kind"] is not None:
    kind = {"final": "", "hard": ", skipping done", "hard_missing": " (with the skipping done: not recorded)"}[h["kind"]]
    soft = f", soft {h['soft_loss']:.4f}" if h["soft_loss"] == h["soft_loss"] else ""
    print(f"headline val loss {h['loss']:.4f}{kind}{soft} (on {h['measured_on']})")

# %% 2. the probe text, decoded from the trace alone, with each token's category
probe = run.trace.decode()
print("probe text:", repr(probe[:120]), "…")
print("categories of the first 12 probe tokens:", run.trace.category_names()[:12])

# %% 3. the model in PyTorch, and its loss on a text beside the C model's
text = open(a.text, encoding="utf-8").read() if a.text else probe
ids = run.encode(text)
T = run.config["model"]["seq_len"]
W = (len(ids) - 1) // T                       # `eval --text`: consecutive windows of T + 1 tokens
if W < 1:
    sys.exit(f"the text has {len(ids)} tokens: fewer than one window of {T} + 1")
tok = torch.tensor([ids[w * T:(w + 1) * T] for w in range(W)])
tgt = torch.tensor([ids[w * T + 1:(w + 1) * T + 1] for w in range(W)])
model = run.model()
out, cache = model.run_with_cache(tok, targets=tgt, mask=torch.ones(tok.shape, dtype=torch.float64))
py_loss = float(out["task_loss"])
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write(text)
c_out = subprocess.run([a.gatelab, "eval", run.folder, "--text", f.name], capture_output=True, text=True)
os.unlink(f.name)
if c_out.returncode:
    sys.exit(f"gatelab eval failed: {c_out.stderr.strip()}")
c_loss = json.loads(c_out.stdout.strip().splitlines()[-1])["loss"]
rel = abs(py_loss - c_loss) / abs(c_loss)
print(f"loss on {W} windows: PyTorch {py_loss:.9f}, C {c_loss:.9f}, relative difference {rel:.1e}")

# %% 4. the gates through hooks: cache α, then switch it off and see what it carried
alpha = {n: t for n, t in cache.items() if n.endswith("attn.hook_alpha")}
for name, t in alpha.items():
    print(f"{name}: mean α {t.mean():.4f}, max {t.max():.4f}, shape {tuple(t.shape)}")
if alpha:
    zeroed = model.run_with_hooks(tok, targets=tgt, mask=torch.ones(tok.shape, dtype=torch.float64),
                                  fwd_hooks=[(n, lambda t, name: torch.zeros_like(t)) for n in alpha])
    print(f"every α set to 0: loss {float(zeroed['task_loss']):.6f} (ΔL {float(zeroed['task_loss']) - py_loss:+.6f})")

sys.exit(0 if rel <= 1e-5 else 1)
