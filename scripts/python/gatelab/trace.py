"""gatelab.trace — a run's trace.h5 (docs/files.md "trace.h5") as numpy arrays with named axes.

What it does: reads every dataset of a finished, killed or live trace (SWMR read, retried when an
open lands inside an append), gives each gate as a `Named` array whose `.axes` are the trace's own
axis names (`step, layer, token, kv_head`), the probe tokens decoded to text through the run's
vocabulary, and the probe's token categories by name.

What it does not: write or repair a trace (gatelab does), or recompute a gate.
"""
import os
import time

import numpy as np

CATEGORIES = ("structural", "functional", "semantic")


class Named(np.ndarray):
    """A numpy array that knows its axis names: `a.axes == ("step", "layer", "token", "kv_head")`;
    `a.axis("token")` is that axis's index."""

    def __new__(cls, values, axes):
        obj = np.asarray(values).view(cls)
        obj.axes = tuple(axes)
        if len(obj.axes) != obj.ndim:
            raise ValueError(f"{obj.ndim}-d array given {len(obj.axes)} axis names {obj.axes}")
        return obj

    def __array_finalize__(self, obj):
        self.axes = getattr(obj, "axes", None)

    def axis(self, name):
        return self.axes.index(name)


def open_h5(path, tries=20):
    """h5py.File opened for SWMR reading, retried while an append is under way."""
    import h5py
    for i in range(tries):
        try:
            return h5py.File(path, "r", libver="latest", swmr=True)
        except OSError:
            if i == tries - 1:
                raise
            time.sleep(0.05)


def _text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


class Trace:
    """steps (S,), loss_train / loss_val (S,), probe_tokens (P,), probe_category (P,) codes,
    gates {"/sat/alpha": Named, …}, attrs (root attributes as Python values), and
    probe_text (decoded with `vocab`, a list of token strings, when one is known)."""

    def __init__(self, path, vocab=None):
        self.path = path
        try:
            self._read(path, vocab)
        except (OSError, KeyError, ValueError) as e:   # h5py's messages name no file
            raise OSError(f"{path}: not a readable gatelab trace ({e}); docs/files.md \"trace.h5\"") from None

    def _read(self, path, vocab):
        if not os.path.isfile(path):   # a FIFO or a folder would block or mislead h5py
            raise OSError("not a regular file")
        with open_h5(path) as f:
            self.attrs = {k: (_text(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v)
                          for k, v in f.attrs.items()}
            steps = f["step"][:]
            n = len(steps)
            while n and steps[n - 1] < 0:       # a row still being written: /step is -1
                n -= 1
            self.steps = steps[:n]
            self.loss_train = f["loss/train"][:n] if "loss/train" in f else None
            self.loss_val = f["loss/val"][:n] if "loss/val" in f else None
            self.probe_tokens = f["probe/tokens"][:]
            self.probe_category = f["probe/category"][:] if "probe/category" in f else None
            self.tokenizer = None
            if "vocab/offset" in f:  # traces that carry their vocabulary (docs/files.md "/vocab")
                off, raw = f["vocab/offset"][:], f["vocab/bytes"][:].tobytes()
                self.token_bytes = [raw[off[i]:off[i + 1]] for i in range(len(off) - 1)]
                self.tokenizer = _text(f["vocab"].attrs.get("tokenizer", b""))
                vocab = [b.decode("utf-8", errors="replace") for b in self.token_bytes]
            self.gates = {}
            for group in f:
                if group in ("probe", "loss", "step", "vocab"):
                    continue
                for name, ds in f[group].items():
                    axes = _text(ds.attrs.get("axes", b"")).split(",")
                    self.gates[f"/{group}/{name}"] = Named(ds[:n], axes)
        self.vocab = vocab

    def decode(self, ids=None):
        """Token ids (default: the probe's) to text, bytes joined before UTF-8 decoding."""
        ids = self.probe_tokens if ids is None else ids
        if getattr(self, "token_bytes", None) is not None:
            return b"".join(self.token_bytes[i] for i in ids).decode("utf-8", errors="replace")
        return "".join(self.vocab[i] for i in ids) if self.vocab is not None else None

    @property
    def probe_text(self):
        """The probe tokens as text, one string per token (None without a vocabulary)."""
        if self.vocab is None:
            return None
        return [self.vocab[i] for i in self.probe_tokens]

    def category_names(self):
        """The probe tokens' categories by name (structural / functional / semantic)."""
        return [CATEGORIES[c] for c in self.probe_category]

    def __getitem__(self, name):
        key = name if name.startswith("/") else "/" + name
        if key not in self.gates:
            raise KeyError(f"{self.path}: no gate {name} (this trace has {', '.join(self.gates) or 'none'})")
        return self.gates[key]
