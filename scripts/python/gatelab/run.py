"""gatelab.run — one run: its config (typed), metrics, trace, checkpoint and model.

What it does: `load_run("paper-sat-003")` resolves the run like the CLI (exact id, unique prefix,
run folder), reads its resolved config.ini into typed sections, and opens its metrics, trace and
checkpoint on first use.  `run.model()` builds a torch module from the checkpoint (gatelab.model).

What it does not: train or evaluate in C; nothing here writes to the run.
"""
import configparser
import os

from . import registry
from .ckpt import Checkpoint
from .trace import Trace


class Config(dict):
    """{section: {key: typed value}}; `cfg["model"]["d_model"]`, or `cfg.get_key("model.d_model")`."""

    @classmethod
    def from_text(cls, text, source="config.ini"):
        p = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";", "#"))
        p.optionxform = str
        try:
            p.read_string(text, source=source)
        except configparser.Error as e:
            raise registry.RegistryError(f"{source}: not a gatelab config ({e})") from None
        return cls({s: {k: registry.typed(v) for k, v in p[s].items()} for s in p.sections()})

    def get_key(self, key, default=None):
        section, _, name = key.partition(".")
        return self.get(section, {}).get(name, default)


class Run:
    def __init__(self, run_id, db):
        self.id = run_id
        self.db = db
        self.row = registry.run_row(db, run_id)
        self.experiment = self.row.get("experiment")
        self.status = self.row.get("status")
        self.folder = self._folder()
        text = self.row.get("config_text")
        cfg_path = os.path.join(self.folder, "config.ini")
        if not text and os.path.isfile(cfg_path):
            with open(cfg_path, encoding="utf-8") as f:
                text = f.read()
        self.config = Config.from_text(text or "", source=cfg_path)
        self._metrics = self._trace = self._ckpt = None

    def _folder(self):
        with registry.connect(self.db) as con:
            r = con.execute("select path from artifacts where run_id = ? and kind = 'ckpt'", (self.id,)).fetchone()
        if r and r[0]:
            path = r[0] if os.path.isabs(r[0]) else os.path.join(os.path.dirname(self.db), r[0])
            return os.path.dirname(path)
        return os.path.join(os.path.dirname(os.path.abspath(self.db)), "runs", self.id)

    def __repr__(self):
        return f"<gatelab run {self.id} ({self.status}, {self.experiment}) in {self.folder}>"

    @property
    def metrics(self):
        """Every metric row of this run in long form (gatelab.metrics)."""
        if self._metrics is None:
            self._metrics = registry.metrics(db=self.db, run=self.id, with_params=False)
        return self._metrics

    @property
    def checkpoint(self):
        if self._ckpt is None:
            path = os.path.join(self.folder, "ckpt")
            if not os.path.isfile(path):
                raise FileNotFoundError(f"run {self.id}: no checkpoint at {path}")
            self._ckpt = Checkpoint(path)
        return self._ckpt

    @property
    def vocab(self):
        """Token id -> text (the checkpoint's byte vocabulary, each byte decoded on its own)."""
        return [b.decode("utf-8", errors="replace") for b in self.checkpoint.vocab]

    @property
    def trace(self):
        if self._trace is None:
            path = os.path.join(self.folder, "trace.h5")
            if not os.path.isfile(path):
                raise FileNotFoundError(f"run {self.id}: no trace at {path} (trained with log.trace = 0?)")
            ckpt = os.path.join(self.folder, "ckpt")
            self._trace = Trace(path, vocab=self.vocab if os.path.isfile(ckpt) else None)
        return self._trace

    def decode(self, ids):
        return self.checkpoint.decode(ids)

    def encode(self, text):
        return self.checkpoint.encode(text)

    def model(self, dtype=None):
        """A torch.nn.Module whose forward is this run's model (gatelab.model.GatelabModel)."""
        from .model import GatelabModel
        return GatelabModel.from_run(self, dtype=dtype)


def load_run(id_or_prefix, db=None, results=None):
    """The Run named by an exact id, a unique prefix, or a run folder."""
    path, run_id = registry.resolve(id_or_prefix, db=db, results=results)
    return Run(run_id, path)
