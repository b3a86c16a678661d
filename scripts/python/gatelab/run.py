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
        """<results>/runs/<id>, where <results> is the folder holding the registry: the one rule
        gatelab's C side follows too (rundir.h).  The registry's `artifacts.path` column records
        the path as training gave it (relative to where it ran, or absolute on the machine that
        trained), so it is never used to find a file: a results folder read from another working
        directory, or copied elsewhere, is read where it is."""
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
    def headline(self):
        """The run's validation headline by gatelab's one rule, the registry's view run_headline
        (docs/registry.md "The headline", "Views"): {"loss", "kind" ("final", "hard", "hard_missing"),
        "soft_loss", "measured_on"}.  A TSA or early-exit run is judged with the skipping done (val
        hard.loss), its soft loss (val final.loss, every block run) beside it."""
        with registry.connect(self.db) as con:
            return registry.headline(con, self.id)

    @property
    def checkpoint(self):
        if self._ckpt is None:
            path = os.path.join(self.folder, "ckpt")
            if not os.path.isfile(path):
                raise FileNotFoundError(f"run {self.id}: no checkpoint at {path} ({self._why_missing()})")
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
            if os.path.exists(path) and not os.path.isfile(path):
                raise OSError(f"run {self.id}: {path} is not a regular file (a FIFO, folder or device); "
                              f"not opened, so nothing blocks on it")
            if not os.path.isfile(path):
                why = ("the run was trained with log.trace = 0"
                       if self.config.get_key("log.trace") == 0 and os.path.isdir(self.folder) else self._why_missing())
                raise FileNotFoundError(f"run {self.id}: no trace at {path} ({why})")
            ckpt = os.path.join(self.folder, "ckpt")
            self._trace = Trace(path, vocab=self.vocab if os.path.isfile(ckpt) else None)
        return self._trace

    def _why_missing(self):
        """Why a file of this run's folder is absent, as far as can be told from here."""
        if not os.path.isdir(self.folder):
            return (f"no run folder {self.folder}: the registry {self.db} names run {self.id}, but its "
                    f"folder is not beside it (copy the whole results folder, runs/ included)")
        if str(self.status).upper() in ("SCHEDULED", "RUNNING"):
            return f"the run is {self.status}: nothing written yet"
        return "the file was removed, or the run failed before writing it"

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
