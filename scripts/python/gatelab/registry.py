"""gatelab.registry — the run registry (results/gatelab.db) read from Python.

What it does: opens the SQLite registry read-only (never creates or writes it), resolves a run
argument the way the gatelab CLI does (exact id, unique prefix, or a run folder, which
resolves to its own results folder's registry), and returns runs and metrics as pandas
DataFrames with each run's parameters as typed columns.

What it does not: train, evaluate or change anything; it reads the schema documented in
docs/registry.md (version 3, the only one gatelab reads too; an older file is refused with the
way to upgrade it).
"""
import json
import os
import sqlite3
import urllib.parse

SCHEMA_VERSIONS = (3,)


class RegistryError(Exception):
    """A registry that cannot be read, or a run argument that names no single run."""


def typed(value):
    """A parameter value as stored (text) to int, float or str, the way the manifest reads it."""
    if value is None:
        return None
    s = str(value).strip()
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    if len(s) >= 2 and s[0] == s[-1] == '"':
        return s[1:-1]
    return s


def default_results():
    return os.environ.get("GATELAB_RESULTS") or "results"


def db_path(db=None, results=None):
    """The registry file: db if given, else <results>/gatelab.db."""
    if db:
        return db
    return os.path.join(results or default_results(), "gatelab.db")


def _uri(path, mode):
    """The SQLite URI of path opened with mode: the path percent-escaped, so a folder named
    `exp#2` or `a?b` is that folder (unescaped, `#` would end the path and drop `mode=ro`, and
    SQLite would create a file `exp` for writing)."""
    return "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=" + mode


class _Connection(sqlite3.Connection):
    """A connection whose errors name the registry file (sqlite3's own name no file)."""

    def execute(self, sql, params=()):
        try:
            return super().execute(sql, params)
        except sqlite3.Error as e:
            raise RegistryError(f"{self.gl_path}: {e} (while reading the registry)") from None

    def __exit__(self, *exc):
        self.close()          # sqlite3's own __exit__ only ends a transaction
        return False


def connect(path):
    """A read-only connection to the registry at path (immutable when its folder cannot be
    written, so a colleague's read-only results open too): never creates or writes a file.
    RegistryError naming path when it is not one."""
    if not os.path.isfile(path):
        raise RegistryError(f"{path}: no registry there (train a run, or give db=/results=)")
    folder = os.path.dirname(os.path.abspath(path))
    mode = "ro" if os.access(folder, os.W_OK) else "ro&immutable=1"
    try:
        con = sqlite3.connect(_uri(path, mode), uri=True, factory=_Connection)
        con.gl_path = path
        con.row_factory = sqlite3.Row
        version = con.execute("select version from schema_version").fetchone()
    except (sqlite3.Error, RegistryError) as e:
        msg = str(e).split(": ", 1)[-1] if isinstance(e, RegistryError) else str(e)
        raise RegistryError(f"{path}: not a gatelab registry ({msg})") from None
    if version is None or version[0] not in SCHEMA_VERSIONS:
        v = None if version is None else version[0]
        con.close()
        raise RegistryError(f"{path}: registry schema version {v}; this package reads "
                            f"{', '.join(map(str, SCHEMA_VERSIONS))} (an older file: open it once with "
                            f"`gatelab runs --fix-stale --db {path}` of gatelab commit f576d3d, which "
                            f"upgrades it; docs/registry.md, \"Schema versions\")")
    _ensure_views(con)
    return con


def _views():
    """[(name, text)] of views.sql, the registry's views as gatelab embeds them (docs/registry.md,
    "Views"): statements separated by a line holding only ';', each "CREATE VIEW name AS ...",
    cut as gatelab cuts them (leading blank and comment lines dropped, trailing blanks), so a view a
    gatelab stored compares equal to this text when it is this version."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "views.sql"), encoding="utf-8") as f:
        text = f.read()
    out = []
    for chunk in text.split("\n;\n"):
        lines = chunk.split("\n")
        while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
            lines.pop(0)
        stmt = "\n".join(lines).rstrip("\n ")
        if stmt:
            out.append((stmt[len("CREATE VIEW "):].split(" ", 1)[0], stmt))
    return out


def _ensure_views(con):
    """The views on a read-only connection: a registry that lacks them, or holds another version of
    them, gets this package's as TEMP views (the connection's own; nothing is written to the file)."""
    for name, stmt in _views():
        have = con.execute("select sql from main.sqlite_master where type = 'view' and name = ?", (name,)).fetchone()
        if have is None or have[0] != stmt:
            con.execute(f"drop view if exists temp.{name}")
            con.execute("create temp view " + stmt[len("CREATE VIEW "):])


def _run_folder(arg):
    """(results folder, run id) when arg is a run folder (results/runs/<id> holding config.ini)."""
    if not os.path.isdir(arg) or not os.path.isfile(os.path.join(arg, "config.ini")):
        return None
    full = os.path.realpath(arg)
    runs_dir, run_id = os.path.split(full)
    results = os.path.dirname(runs_dir)
    if os.path.basename(runs_dir) != "runs":
        raise RegistryError(f"{arg}: a run folder must sit in <results>/runs/ (this one is in {runs_dir})")
    return results, run_id


def resolve(arg, db=None, results=None):
    """(registry path, run id) for a run argument: exact id, unique prefix, or a run folder.
    An ambiguous prefix or an unknown id raises RegistryError naming the candidates."""
    folder = _run_folder(arg) if os.sep in arg or arg.startswith(".") else None
    if folder:
        path = db or os.path.join(folder[0], "gatelab.db")
        arg = folder[1]
    else:
        path = db_path(db, results)
    with connect(path) as con:
        ids = [r[0] for r in con.execute(
            "select run_id from runs where deleted_time is null and run_id >= ? and run_id < ? order by run_id",
            (arg, arg + "\U0010ffff"))]
    if arg in ids:
        return path, arg
    if len(ids) == 1:
        return path, ids[0]
    if not ids:
        raise RegistryError(f"run '{arg}': no such run in {path} (gatelab runs --db {path} lists them)")
    shown = ", ".join(ids[:8]) + (f", … ({len(ids)} in all)" if len(ids) > 8 else "")
    raise RegistryError(f"run '{arg}' is ambiguous in {path}: {shown}")


def runs(db=None, results=None, experiment=None, tags=None, status=None, deleted=False):
    """One row per run: run_id, experiment, status, `variant` (the label every gatelab view prints,
    the registry's view run_variant) and every parameter as a typed column (`model.d_model`, …), the
    headline metrics (`val.final.loss`, `val.hard.loss`, `val.hard_paper.loss` (TSA, the paper's
    sparse form; never the headline), …) and their provenance
    (`val.final.loss.measured_on`), the headline by gatelab's one rule, read from the registry's view
    run_headline (`val.headline.loss`, `val.headline.kind`, `val.soft.loss`: a TSA or early-exit run
    with the skipping done; docs/registry.md, "The headline"), and tags as `tag.<key>`.

    experiment, status: exact names (a name that matches no run raises RegistryError, naming
    the known ones); tags: a dict {key: value} every returned run carries."""
    import pandas as pd

    path = db_path(db, results)
    with connect(path) as con:
        where, args = [], []
        if not deleted:
            where.append("r.deleted_time is null")
        if experiment is not None:
            _check_experiment(con, path, experiment)
            where.append("e.name = ?")
            args.append(experiment)
        if status is not None:
            where.append("upper(r.status) = upper(?)")
            args.append(status)
        sql = ("select r.run_id, e.name as experiment, r.name as sweep_values, r.status, v.label as variant, r.seed, "
               "r.git_commit, r.created_time, r.start_time, r.end_time, r.error from runs r "
               "left join experiments e on e.id = r.experiment_id left join run_variant v on v.run_id = r.run_id")
        if where:
            sql += " where " + " and ".join(where)
        rows = [dict(r) for r in con.execute(sql + " order by r.run_id", args)]
        ids = [r["run_id"] for r in rows]
        by_id = {r["run_id"]: r for r in rows}
        for r in con.execute("select run_id, key, value from params"):
            if r[0] in by_id:
                by_id[r[0]][r[1]] = typed(r[2])
        for r in con.execute("select run_id, key, value from tags"):
            if r[0] in by_id:
                by_id[r[0]]["tag." + r[1]] = r[2]
        for r in con.execute(
                "select run_id, split, name, value, data_split, win_first, win_count, tokens from metrics "
                "where (name like 'final.%' or name like 'hard.%' or name like 'hard_paper.%' or name like 'matched.%' "
                "or name like 'matched_paper.%') "
                "and params = '{}' "
                "order by run_id, split, name, win_count"):
            if r[0] not in by_id:
                continue
            key = f"{r[1]}.{r[2]}"
            by_id[r[0]][key] = r[3]   # the measurement on the most windows wins (order by win_count)
            by_id[r[0]][key + ".measured_on"] = _prov(r[4], r[5], r[6], r[7])
        nan = float("nan")
        for r in by_id.values():
            r["val.headline.loss"], r["val.headline.kind"], r["val.soft.loss"] = nan, None, nan
        for r in con.execute("select run_id, source, loss, soft_loss from run_headline "
                             "where split = 'val' and source <> 'periodic'"):
            if r[0] in by_id:
                by_id[r[0]].update({"val.headline.loss": nan if r[2] is None else r[2], "val.headline.kind": r[1],
                                    "val.soft.loss": nan if r[3] is None else r[3]})
    df = pd.DataFrame([by_id[i] for i in ids])
    if tags:
        for k, v in tags.items():
            col = "tag." + k
            df = df[df[col] == str(v)] if col in df else df.iloc[0:0]
    return df.reset_index(drop=True)


def headline(con, run_id, split="val"):
    """The headline of one run on split from the registry's view run_headline, as runs() gives it:
    {"loss", "kind" ("final", "hard", "hard_missing"; None without one), "soft_loss", "measured_on"}
    (NaN where there is none)."""
    nan = float("nan")
    r = con.execute("select source, loss, soft_loss, data_split, win_first, win_count, tokens from run_headline "
                    "where run_id = ? and split = ? and source <> 'periodic'", (run_id, split)).fetchone()
    if r is None:
        return {"loss": nan, "kind": None, "soft_loss": nan, "measured_on": None}
    return {"loss": nan if r[1] is None else r[1], "kind": r[0], "soft_loss": nan if r[2] is None else r[2],
            "measured_on": _prov(r[3], r[4], r[5], r[6])}


def _prov(split, first, count, tokens):
    if not split:
        return "?"
    s = f"{split}[{first},{first + count})" if count else split
    return s + (f" {int(tokens)} tok" if tokens is not None else "")


def metrics(db=None, results=None, run=None, experiment=None, split=None, name=None, with_params=True):
    """Every metric row in long form: run_id, step, split, name, params (a dict), value,
    provenance (data_split, win_first, win_count, tokens, se) and, with_params, the run's
    parameters as typed columns (so a groupby on `model.value_residual` needs no join)."""
    import pandas as pd

    path = db_path(db, results)
    if run is not None:
        path, run = resolve(run, db=db, results=results)
    with connect(path) as con:
        where, args = ["r.deleted_time is null"], []
        if run is not None:
            where.append("m.run_id = ?")
            args.append(run)
        if experiment is not None:
            where.append("e.name = ?")
            args.append(experiment)
        if split is not None:
            where.append("m.split = ?")
            args.append(split)
        if name is not None:
            where.append("m.name = ?")
            args.append(name)
        sql = ("select m.run_id, e.name as experiment, m.step, m.split, m.name, m.params, m.value, m.wall_time, "
               "m.data_split, m.win_first, m.win_count, m.tokens, m.se from metrics m "
               "join runs r on r.run_id = m.run_id left join experiments e on e.id = r.experiment_id where "
               + " and ".join(where) + " order by m.run_id, m.split, m.name, m.step")
        try:
            df = pd.read_sql_query(sql, con, params=args)
        except Exception as e:   # pandas wraps sqlite3's errors in its own DatabaseError
            raise RegistryError(f"{path}: {e} (while reading the metrics)") from None
        if experiment is not None and df.empty:
            _check_experiment(con, path, experiment)
        par = {}
        if with_params and not df.empty:
            for r in con.execute("select run_id, key, value from params"):
                par.setdefault(r[0], {})[r[1]] = typed(r[2])
    df["params"] = [json.loads(p) if p else {} for p in df["params"]]
    if par:
        p = pd.DataFrame.from_dict(par, orient="index")
        p.index.name = "run_id"
        df = df.join(p, on="run_id")
    return df


def _check_experiment(con, path, experiment):
    """RegistryError naming the known experiments when experiment is not one of path's."""
    known = [r[0] for r in con.execute("select name from experiments order by name")]
    if experiment not in known:
        raise RegistryError(f"experiment '{experiment}': none such in {path} (known: {', '.join(known) or 'none'})")


def run_row(path, run_id):
    """The runs-table row of one run as a dict (with its experiment name), or RegistryError."""
    with connect(path) as con:
        r = con.execute("select r.*, e.name as experiment from runs r left join experiments e "
                        "on e.id = r.experiment_id where r.run_id = ?", (run_id,)).fetchone()
        if r is None:
            raise RegistryError(f"run '{run_id}': no such run in {path}")
        return dict(r)
