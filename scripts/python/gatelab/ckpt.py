"""gatelab.ckpt — a run's binary checkpoint (docs/files.md "ckpt") read with numpy.

What it does: checks the magic, version, byte order, length and FNV-1a checksum the way the C
loader does, and returns the parameters as named float32 arrays with their shapes, the
training state (step, tokens seen, the byte vocabulary) and the run's resolved config text.

What it does not: load AdamW moments into anything (they are returned only on request) or
write a checkpoint; gatelab itself is the only writer.
"""
import struct

import numpy as np

MAGIC = b"GLABCKPT"
BYTE_ORDER = 0x01020304
HEADER_BYTES = 48
NAME_MAX = 48
TENSOR_BYTES = NAME_MAX + 32
STATE_BYTES = {2: 380}   # format version -> bytes of the training state
SUM_BYTES = 8


class CkptError(Exception):
    """A file that is not a gatelab checkpoint this package reads, with what to do."""


def fnv1a64(data):
    """FNV-1a 64 of a bytes object (the checksum of the last 8 bytes), vectorised in blocks."""
    h = 0xcbf29ce484222325
    prime = 0x100000001b3
    mask = 0xFFFFFFFFFFFFFFFF
    for b in data:            # sequential by definition: ~0.4 s per MB in CPython
        h = ((h ^ b) * prime) & mask
    return h


class Checkpoint:
    """params: {name: float32 array of its shape}; step, tokens_seen, vocab (list of bytes,
    token id -> byte), config_text; decay: {name: 1 when AdamW decays it}."""

    def __init__(self, path, verify=False, moments=False):
        """verify: also recompute the FNV-1a checksum (slow in Python, ~0.4 s per MB; the length
        and header are always checked, and gatelab's own loader always verifies)."""
        with open(path, "rb") as f:
            data = f.read()
        self.path = path
        if len(data) < HEADER_BYTES or data[:8] != MAGIC:
            raise CkptError(f"{path}: not a gatelab checkpoint (no GLABCKPT magic)")
        version, order, total, self.model_hash, n_params, n_tensors, cfg_len = struct.unpack_from(
            "<IIQQQII", data, 8)
        if order != BYTE_ORDER:
            raise CkptError(f"{path}: written on a machine of the other byte order")
        if version not in STATE_BYTES:
            raise CkptError(f"{path}: checkpoint format version {version}; this package reads "
                            f"{sorted(STATE_BYTES)} (update scripts/python/gatelab/ckpt.py with docs/files.md)")
        if total != len(data):
            raise CkptError(f"{path}: {len(data)} bytes where the header says {total}: the file was cut short")
        if verify:
            (want,) = struct.unpack_from("<Q", data, len(data) - SUM_BYTES)
            if fnv1a64(data[:-SUM_BYTES]) != want:
                raise CkptError(f"{path}: checksum mismatch: corrupted; restore it or restart the run")
        off = HEADER_BYTES
        tensors = []
        for _ in range(n_tensors):
            name = data[off:off + NAME_MAX].split(b"\0", 1)[0].decode()
            t_off, size, ndim, s0, s1, decay = struct.unpack_from("<QQiiii", data, off + NAME_MAX)
            tensors.append((name, t_off, size, ndim, s0, s1, decay))
            off += TENSOR_BYTES
        st = data[off:off + STATE_BYTES[version]]
        self.step, = struct.unpack_from("<q", st, 0)
        self.elapsed_s, = struct.unpack_from("<d", st, 72)
        self.tokens_seen, = struct.unpack_from("<q", st, 80)
        vocab_size, = struct.unpack_from("<i", st, 88)
        self.vocab = [st[92 + i:93 + i] for i in range(vocab_size)]
        off += STATE_BYTES[version]
        self.config_text = data[off:off + cfg_len].decode("utf-8")
        off += cfg_len
        arrays = [np.frombuffer(data, dtype="<f4", count=n_params, offset=off + k * 4 * n_params)
                  for k in range(3 if moments else 1)]
        self.params, self.decay, self.adam_m, self.adam_v = {}, {}, {}, {}
        for name, t_off, size, ndim, s0, s1, decay in tensors:
            shape = (s0,) if ndim == 1 else (s0, s1)
            self.params[name] = arrays[0][t_off:t_off + size].reshape(shape).copy()
            self.decay[name] = decay
            if moments:
                self.adam_m[name] = arrays[1][t_off:t_off + size].reshape(shape).copy()
                self.adam_v[name] = arrays[2][t_off:t_off + size].reshape(shape).copy()

    def decode(self, ids):
        """Token ids to text through the checkpoint's byte vocabulary (UTF-8, errors replaced)."""
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")

    def encode(self, text):
        """Text to token ids; a byte the vocabulary lacks raises ValueError naming it."""
        index = {b: i for i, b in enumerate(self.vocab)}
        out = []
        for ch in text.encode("utf-8"):
            b = bytes([ch])
            if b not in index:
                raise ValueError(f"byte {b!r} is not in this run's vocabulary ({len(self.vocab)} tokens)")
            out.append(index[b])
        return out
