"""gatelab.model — a run's model as a torch.nn.Module, with named hook points.

What it does: builds the model of a run's checkpoint on the independent PyTorch reference
(scripts/reference/ref_model.py, the same code the parity fixtures come from), so its forward
equals the C model's to float rounding; `run_with_cache` returns every named activation and
`run_with_hooks` lets a function read or replace one, TransformerLens style:

    model = gatelab.load_run("demo-sat").model()
    out, cache = model.run_with_cache("To be, or not to be")   # cache: gatelab.cache.ActivationCache
    alpha = cache["blocks.2.attn.hook_alpha"]                # (B, T, Hkv)
    parts, labels = cache.decompose_resid(return_labels=True)
    model.run_with_hooks(tokens, fwd_hooks=[("blocks.3.hook_halt_p", lambda p, name: p * 0)])
    with model.hooks(fwd_hooks=[("blocks.3.hook_halt_p", lambda p, name: p * 0)]):
        out = model(tokens)                                  # every forward inside the block is hooked
    model.to_str_tokens("To be")                             # ["T", "o", " ", "b", "e"]

Hook names (`model.hook_names()` lists those this model has): hook_embed;
blocks.N.hook_resid_pre, blocks.N.attn.hook_q / hook_k / hook_v (before the value residual),
blocks.N.attn.hook_v1 (block 0's values, N ≥ 1), blocks.N.attn.hook_alpha (SATFormer gate),
blocks.N.attn.hook_lambda (ResFormer λ1, λ2), blocks.N.attn.hook_v_mixed (after it),
blocks.N.attn.hook_pattern (B, H, T, T), blocks.N.hook_attn_out, blocks.N.hook_mlp_out,
blocks.N.hook_halt_p (TSA: the halting probability scaling block N, N ≥ 1),
blocks.N.hook_exit_logits (early exit), blocks.N.hook_resid_post; ln_final.hook_normalized,
hook_logits.  A hook is fn(tensor, name) and returns None (read only) or the replacement.

What it does not: train (use gatelab), or run fast: it is the reference, in float64 by default.
"""
import dataclasses
import os
import sys

import numpy as np

_REF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reference")


def _ref():
    if _REF not in sys.path:
        sys.path.insert(0, _REF)
    import ref_model
    return ref_model


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("gatelab.model needs PyTorch (Debian: apt-get install python3-torch)") from e
    return torch


# [model] keys that only set initial values or name a preset: a trained checkpoint carries the
# parameters themselves, so the reference needs none of them
INIT_ONLY = {"scale", "router_init_bias", "sat_gate_bias_init", "resformer_lambda1_init"}


def config_from_run(cfg):
    """The reference Config of a run's [model] section.  A key the reference does not know, other
    than the init-only ones, raises ValueError naming it: the reference would compute another model."""
    rm = _ref()
    model = cfg["model"]
    fields = {f.name: f for f in dataclasses.fields(rm.Config)}
    unknown = sorted(k for k in model if k not in fields and k not in INIT_ONLY)
    if unknown:
        raise ValueError(f"[model] {', '.join(unknown)}: not in the PyTorch reference "
                         f"(scripts/reference/ref_model.py); this run's model cannot be rebuilt here")
    kw = {k: (str(model[k]) if isinstance(f.default, str) else type(f.default)(model[k]))
          for k, f in fields.items() if k in model}
    return rm.Config(**kw)


class GatelabModel:
    """Not an nn.Module subclass at import time (torch is optional): from_run returns an
    instance of the nn.Module class built on first use."""

    @staticmethod
    def from_run(run, dtype=None):
        torch = _torch()
        cls = _module_class(torch)
        return cls(config_from_run(run.config), run.checkpoint.params, run.checkpoint, dtype or torch.float64)


_CLASS = None


def _module_class(torch):
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    rm = _ref()

    class Model(torch.nn.Module):
        def __init__(self, cfg, params, ckpt, dtype):
            super().__init__()
            self.cfg = cfg
            self.ckpt = ckpt
            self.names = list(params)
            self.weights = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.from_numpy(np.asarray(params[n], dtype=np.float32)).to(dtype)) for n in self.names])
            self._probe = None
            self._ctx = []          # hook tables of the open `with model.hooks(...)` blocks

        def P(self):
            return {n: p for n, p in zip(self.names, self.weights)}

        def tokens(self, x):
            """Text (encoded with the run's vocabulary), a list of ids, or a (B, T) tensor."""
            if isinstance(x, str):
                x = self.ckpt.encode(x)
            t = torch.as_tensor(x, dtype=torch.long)
            return t[None, :] if t.ndim == 1 else t

        to_tokens = tokens  # TransformerLens's name

        def to_str_tokens(self, x):
            """Each token of x (text, ids, or a (1, T) tensor) as the text it stands for: a list of str
            (a BPE token's bytes decoded on their own, a partial UTF-8 character as U+FFFD)."""
            t = self.tokens(x)
            if t.shape[0] != 1:
                raise ValueError(f"to_str_tokens takes one sequence; this is {t.shape[0]} (index it first)")
            return [self.ckpt.vocab[i].decode("utf-8", errors="replace") for i in t[0].tolist()]

        def hooks(self, fwd_hooks=()):
            """A context manager: every forward inside `with model.hooks(fwd_hooks=[(name, fn), ...]):`
            applies the hooks as run_with_hooks does.  On leaving, a name that no forward inside called is
            an error (KeyError), so a typo cannot silently do nothing; the hooks are removed either way."""
            model = self

            class _Hooks:
                def __enter__(self):
                    self.table = {}
                    for name, fn in fwd_hooks:
                        self.table.setdefault(name, []).append(fn)
                    self.called = set()
                    model._ctx.append(self)
                    return model

                def __exit__(self, kind, value, tb):
                    model._ctx.remove(self)
                    missing = set(self.table) - self.called
                    if kind is None and missing:
                        raise KeyError(f"no hook point {', '.join(sorted(missing))} was called inside the with block "
                                       f"(model.hook_names() lists them)")
                    return False
            return _Hooks()

        def _with_ctx(self, hook):
            """hook combined with the open `with model.hooks(...)` blocks' (theirs first, outer to inner)."""
            if not self._ctx:
                return hook

            def both(t, name):
                for h in self._ctx:
                    for fn in h.table.get(name, ()):
                        h.called.add(name)
                        r = fn(t, name)
                        if r is not None:
                            t = r
                if hook is not None:
                    r = hook(t, name)
                    if r is not None:
                        t = r
                return t
            return both

        def forward(self, x, targets=None, mask=None, hook=None):
            """The reference's output dict (logits, loss, task_loss and the gates) on x.
            Without targets the next tokens of x are the targets and the last position is unscored."""
            tok = self.tokens(x)
            if targets is None:
                targets = torch.zeros_like(tok)
                targets[:, :-1] = tok[:, 1:]
                if mask is None:
                    mask = torch.ones(tok.shape, dtype=self.weights[0].dtype)
                    mask[:, -1] = 0
            if mask is None:
                mask = torch.ones(tok.shape, dtype=self.weights[0].dtype)
            keep = None
            if self.cfg.depth_routing == "random":  # the C model's evaluation draw (model/routing.c)
                from make_fixtures import random_keep
                keep = random_keep(self.cfg, tok).to(self.weights[0].dtype)
            hook = self._with_ctx(hook)
            ref_hook = (lambda name, t: hook(t, name)) if hook is not None else None
            return rm.forward(self.cfg, self.P(), tok, targets, mask, route_keep=keep, hook=ref_hook)

        def hook_names(self, x=None):
            """Every hook point this model calls (found by running it once on x or a tiny input)."""
            seen = []
            self.forward(x if x is not None else [0, 0], hook=lambda t, name: seen.append(name))
            return seen

        def run_with_cache(self, x, names_filter=None, targets=None, mask=None):
            """(output dict, ActivationCache) for x: {hook name: detached tensor} with TransformerLens's
            helpers (accumulated_resid, decompose_resid, stack_head_results, logit_attrs, …:
            gatelab.cache)."""
            from .cache import ActivationCache
            cache = {}

            def keep(t, name):
                if names_filter is None or (callable(names_filter) and names_filter(name)) or \
                        (not callable(names_filter) and name in names_filter):
                    cache[name] = t.detach()
            out = self.forward(x, targets, mask, hook=keep)
            return out, ActivationCache(cache, self)

        def run_with_hooks(self, x, fwd_hooks=(), targets=None, mask=None):
            """The output dict with each (name, fn) hook applied: fn(tensor, name) returns None or a
            replacement.  A name that this model never calls is an error, named."""
            table = {}
            for name, fn in fwd_hooks:
                table.setdefault(name, []).append(fn)
            called = set()

            def apply(t, name):
                if name not in table:
                    return None
                called.add(name)
                for fn in table[name]:
                    r = fn(t, name)
                    if r is not None:
                        t = r
                return t
            out = self.forward(x, targets, mask, hook=apply)
            missing = set(table) - called
            if missing:
                raise KeyError(f"no hook point {', '.join(sorted(missing))} in this model "
                               f"(model.hook_names() lists them)")
            return out

    _CLASS = Model
    return Model
