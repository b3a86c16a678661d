"""gatelab.cache — the activations of one forward (model.run_with_cache) with TransformerLens's helpers.

What it does: `ActivationCache` is the {hook name: tensor} dict run_with_cache returns, plus the views
an interpretability session reaches for first, computed from the cached hooks and the checkpoint's
parameters, in the model's own arithmetic (gatelab.model, scripts/reference/ref_model.py):

    out, cache = model.run_with_cache(text)
    resid, labels = cache.accumulated_resid(return_labels=True)      # (L+1, B, T, d): each block's input, then the output
    parts, labels = cache.decompose_resid(return_labels=True)        # embed, then each block's attention and MLP update
    heads, labels = cache.stack_head_results(return_labels=True)     # every head's share of its block's attention update
    v1, labels = cache.stack_v1_results(return_labels=True)          # the part of each head's output that came through V1
    attrs = cache.logit_attrs(parts, tokens)                         # each part's direct effect on the logit of tokens
    cache.v1_share(2)                                                # (B, T, Hkv) ‖α·V1‖ / ‖v + α·V1‖, as `gatelab probe` writes it

The residual stream of block n is h_{n+1} = h_n + s_n·(attn_n + mlp_n) with s_n = 1, TSA's 1 − p_n
(blocks n ≥ 1) or random routing's 0/1 draw, so the parts above, each scaled by its block's s_n, add up
to the final residual exactly (to float64 rounding); apply_ln_to_stack divides every part by the
final RMSNorm's scale of the whole residual (TransformerLens's convention), so the logit attributions
add up to the logits.

What it does not: decompose models whose residual stream is not a sum of block updates (DenseFormer,
MUDDFormer and Hyper-Connections mix earlier states; MoD routes a subset of tokens through its own
block); those raise NotImplementedError naming the key.  Nothing here changes the model.
"""
class ActivationCache(dict):
    """{hook name: tensor} of one forward, with the model that made it (for its parameters and sizes)."""

    def __init__(self, activations, model):
        super().__init__(activations)
        self.model = model
        self.cfg = model.cfg

    # ---- helpers ----
    def _get(self, name):
        if name not in self:
            raise KeyError(f"{name}: not in this cache (run_with_cache with names_filter=None keeps every hook; "
                           f"model.hook_names() lists them)")
        return self[name]

    def _torch(self):
        import torch
        return torch

    def _check_sum(self, what):
        c = self.cfg
        if getattr(c, "cross_layer", "none") != "none":
            raise NotImplementedError(f"{what}: model.cross_layer = {c.cross_layer} mixes earlier residual states; "
                                      f"the stream is not a sum of block updates")
        if c.depth_routing == "mod":
            raise NotImplementedError(f"{what}: model.depth_routing = mod runs a subset of tokens through its "
                                      f"blocks; the stream is not a sum of whole-sequence block updates")

    def block_scale(self, n):
        """s_n, the factor of block n's update in the residual stream: 1, TSA's (1 − p_n)[..., None]
        (blocks n ≥ 1) or random routing's kept draw; a tensor broadcasting against (B, T, d)."""
        c = self.cfg
        if c.depth_routing == "tsa" and n >= 1:
            return (1.0 - self._get(f"blocks.{n}.hook_halt_p"))[..., None]
        if c.depth_routing == "random" and n >= 1:
            raise NotImplementedError("decompose: random routing's draw is not cached; use the model's output")
        return 1.0

    # ---- the residual stream ----
    def accumulated_resid(self, layer=None, return_labels=False):
        """The residual stream at each block's input and after the last block: (layer + 1, B, T, d) of
        blocks.n.hook_resid_pre for n < layer, then the stream after block layer − 1 (default: every
        block, the last entry the final residual ln_final normalises).  Labels "0_pre", …, "L_post"."""
        torch = self._torch()
        L = self.cfg.n_layer
        layer = L if layer is None else layer
        if not 0 <= layer <= L:
            raise ValueError(f"layer {layer}: this model has blocks 0..{L - 1} (accumulated_resid takes 0..{L})")
        parts = [self._get(f"blocks.{n}.hook_resid_pre") for n in range(layer)]
        labels = [f"{n}_pre" for n in range(layer)]
        if layer == L:
            parts.append(self._get(f"blocks.{L - 1}.hook_resid_post"))
            labels.append(f"{L - 1}_post")
        else:
            parts.append(self._get(f"blocks.{layer}.hook_resid_pre"))
            labels.append(f"{layer}_pre")
        out = torch.stack(parts)
        return (out, labels) if return_labels else out

    def decompose_resid(self, layer=None, return_labels=False):
        """The residual stream after block layer − 1 (default: the final one) as a sum of parts: the
        embedding, then each block's attention and MLP update times its scale s_n.  (C, B, T, d) with
        C = 1 + 2·layer; labels "embed", "0_attn_out", "0_mlp_out", …"""
        self._check_sum("decompose_resid")
        torch = self._torch()
        L = self.cfg.n_layer
        layer = L if layer is None else layer
        parts, labels = [self._get("hook_embed")], ["embed"]
        for n in range(layer):
            s = self.block_scale(n)
            parts += [s * self._get(f"blocks.{n}.hook_attn_out"), s * self._get(f"blocks.{n}.hook_mlp_out")]
            labels += [f"{n}_attn_out", f"{n}_mlp_out"]
        out = torch.stack(parts)
        return (out, labels) if return_labels else out

    # ---- heads ----
    def _values(self, n):
        """Block n's values as attention reads them (after the value residual): (B, T, Hkv, hd)."""
        name = f"blocks.{n}.attn.hook_v_mixed"
        return self[name] if name in self else self._get(f"blocks.{n}.attn.hook_v")

    def _head_out(self, n, values):
        """Each query head of block n applied to values (B, T, Hkv, hd), through its slice of W_O and
        times the block's scale: (H, B, T, d)."""
        torch = self._torch()
        c = self.cfg
        H, Hkv, hd = c.n_head, c.n_kv_head, c.hd
        pattern = self._get(f"blocks.{n}.attn.hook_pattern")                      # (B, H, T, T)
        vh = values.repeat_interleave(H // Hkv, dim=2).transpose(1, 2)             # (B, H, T, hd)
        z = pattern @ vh                                                           # (B, H, T, hd)
        wo = self.model.P()[f"layers.{n}.attn.wo"].view(-1, H, hd)                 # (d, H, hd)
        res = torch.einsum("bhtk,dhk->hbtd", z, wo)
        return res * self.block_scale(n)

    def stack_head_results(self, layer=None, return_labels=False):
        """Every head's part of its block's attention update (times the block's scale s_n), for blocks
        0..layer−1: (layer·H, B, T, d), labels "L{n}H{h}"; block n's heads sum to s_n·attn_out."""
        self._check_sum("stack_head_results")
        torch = self._torch()
        L = self.cfg.n_layer if layer is None else layer
        parts, labels = [], []
        for n in range(L):
            parts.append(self._head_out(n, self._values(n)))
            labels += [f"L{n}H{h}" for h in range(self.cfg.n_head)]
        out = torch.cat(parts)
        return (out, labels) if return_labels else out

    def _v1_part(self, n):
        """The part of block n's values that came from V1 (B, T, Hkv, hd): SATFormer's α·V1."""
        c = self.cfg
        if c.value_residual != "satformer":
            raise ValueError(f"the V1 part per head needs a per-token gate on V1 (model.value_residual = "
                             f"satformer); this model has {c.value_residual}")
        if n < 1 or f"blocks.{n}.attn.hook_alpha" not in self:
            return None
        return self._get(f"blocks.{n}.attn.hook_alpha")[..., None] * self._get(f"blocks.{n}.attn.hook_v1")

    def stack_v1_results(self, return_labels=False):
        """For every gated block n ≥ 1 and query head h, the part of the head's output that came through
        V1: its attention pattern applied to α·V1, through its slice of W_O, times s_n.  (G·H, B, T, d),
        labels "L{n}H{h}" (h a query head; KV head h // (H / Hkv) carries its V1)."""
        torch = self._torch()
        parts, labels = [], []
        for n in range(1, self.cfg.n_layer):
            v1 = self._v1_part(n)
            if v1 is None:
                continue
            parts.append(self._head_out(n, v1))
            labels += [f"L{n}H{h}" for h in range(self.cfg.n_head)]
        out = torch.cat(parts)
        return (out, labels) if return_labels else out

    def v1_share(self, n):
        """‖α·V1‖ / ‖v + α·V1‖ per token and KV head of block n (B, T, Hkv): the share of the value path the
        gate brings from block 0, as `gatelab probe` records it (/v1/share)."""
        part = self._v1_part(n)
        if part is None:
            raise ValueError(f"block {n} has no V1 gate (blocks 1..{self.cfg.n_layer - 1} do)")
        v = self._get(f"blocks.{n}.attn.hook_v")
        return part.norm(dim=-1) / (v + part).norm(dim=-1)

    # ---- to the logits ----
    def apply_ln_to_stack(self, stack):
        """Each part of stack (…, B, T, d) through the final RMSNorm with the scale of the whole final
        residual: part / rms(h_final) · g, so the parts of a decomposition still add up."""
        h = self._get(f"blocks.{self.cfg.n_layer - 1}.hook_resid_post")
        rms = (h.pow(2).mean(-1, keepdim=True) + self.cfg.norm_eps).sqrt()
        return stack / rms * self.model.P()["final_norm"]

    def logit_attrs(self, stack, tokens, apply_ln=True):
        """The direct effect of each part of stack (C, B, T, d) on the logit of tokens (B, T) at each
        position: (C, B, T).  With apply_ln, the parts go through apply_ln_to_stack first; the sum over
        the parts of a decompose_resid stack is then the logits of those tokens."""
        torch = self._torch()
        P = self.model.P()
        head_w = P["embed"] if self.cfg.tied else P["head"]
        x = self.apply_ln_to_stack(stack) if apply_ln else stack
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        return (x * head_w[tokens]).sum(-1)

    def __repr__(self):
        return f"<ActivationCache of {len(self)} hooks: {', '.join(list(self)[:4])}{', …' if len(self) > 4 else ''}>"

