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
STATE_BYTES = {2: 380, 3: 380}   # format version -> bytes of the training state (3: BPE merges)
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
        self.tokenizer, n_merges = "char", 0
        if version >= 3:                      # tokenizer (1 = bpe) and the merge count
            tok, n_merges = struct.unpack_from("<II", data, off)
            self.tokenizer = "bpe" if tok == 1 else f"tokenizer {tok}"
            off += 8
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
        self.vocab = [st[92 + i:93 + i] for i in range(min(vocab_size, 256))]
        off += STATE_BYTES[version]
        self.merges = [struct.unpack_from("<HH", data, off + 4 * k) for k in range(n_merges)]
        for left, right in self.merges:      # id 256 + k is merge k: its bytes are left's then right's
            self.vocab.append(self.vocab[left] + self.vocab[right])
        off += 4 * n_merges
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
        """Text to token ids (char runs; a BPE run's text is encoded by `gatelab eval --text`, which
        applies the merges by rank); a byte the vocabulary lacks raises ValueError naming it."""
        if self.merges:
            return self._encode_bpe(text)
        index = {b: i for i, b in enumerate(self.vocab)}
        out = []
        for ch in text.encode("utf-8"):
            b = bytes([ch])
            if b not in index:
                raise ValueError(f"byte {b!r} is not in this run's vocabulary ({len(self.vocab)} tokens)")
            out.append(index[b])
        return out

    def _encode_bpe(self, text):
        """Byte-level BPE exactly as harness/store/bpe.c's bpe_encode: chunks by bpe_chunk_len;
        within a chunk, repeatedly merge every occurrence (left to right) of its lowest-rank pair."""
        rank = {pair: k for k, pair in enumerate(self.merges)}
        data = text.encode("utf-8")
        out, i = [], 0
        while i < len(data):
            n = _chunk_len(data, i)
            s = list(data[i:i + n])
            while True:
                best = None
                for k in range(len(s) - 1):
                    r = rank.get((s[k], s[k + 1]))
                    if r is not None and (best is None or r < best):
                        best = r
                if best is None:
                    break
                bl, br = self.merges[best]
                o, k = [], 0
                while k < len(s):
                    if k + 1 < len(s) and s[k] == bl and s[k + 1] == br:
                        o.append(256 + best)
                        k += 2
                    else:
                        o.append(s[k])
                        k += 1
                s = o
            out.extend(s)
            i += n
        return out


CHUNK_MAX = 256


def _letter(c):
    return 97 <= (c | 0x20) <= 122 or c >= 0x80


def _chunk_len(p, at):
    """bpe_chunk_len of harness/store/bpe.c on p[at:]: a word (letters, with the one space before
    it), or a run of non-letters up to a letter or to the space that starts the next word."""
    n = len(p) - at
    lim, i = min(n, CHUNK_MAX), 0
    if p[at] == 32 and lim > 1 and _letter(p[at + 1]):
        i = 1
    if _letter(p[at + i]):
        while i < lim and _letter(p[at + i]):
            i += 1
        return i
    while i < lim and not _letter(p[at + i]):
        if i > 0 and p[at + i] == 32 and i + 1 < n and _letter(p[at + i + 1]):
            break
        i += 1
    return i
