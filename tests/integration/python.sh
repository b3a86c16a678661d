#!/usr/bin/env bash
# python.sh — the Python package scripts/python/gatelab against runs the C binary trained here:
# gatelab.runs() has one row per run with typed parameter columns and the headline the registry
# holds (the same number `gatelab metrics` prints), run arguments resolve as in the CLI (exact,
# unique prefix, run folder; ambiguous and unknown are errors naming the candidates), the trace
# reads with named axes and the same values h5dump prints, and the probe text decodes through the
# run's vocabulary into text that stands in the corpus.
# The layout `make demo` makes (runs trained with a relative --results from the clone's root) reads
# from any working folder and from a copy, every snippet of docs/python.md runs as written, and
# docs/python_example.py runs from another folder; the registry is never written, whatever its
# folder is called (exp#2), and errors name the file.
# Needs Debian's python3-numpy, python3-h5py, python3-pandas (scripts/setup.sh installs them).
set -u
. "$(dirname "$0")/lib.sh"
PY="${GATELAB_PYTHON:-/usr/bin/python3}"
PKG="$(cd "$(dirname "$0")/../../scripts/python" && pwd)"
if ! "$PY" -c 'import numpy, h5py, pandas' 2> /dev/null; then
    skip "the Python package (no numpy, h5py and pandas for $PY: apt-get install python3-numpy python3-h5py python3-pandas)"
    exit 0
fi
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1
R="$W/results"
ok=1
for v in sat1:satformer sat2:satformer base:none; do
    "$BIN" train "$TINY" model.value_residual="${v#*:}" train.steps=20 --run-id "${v%%:*}" --results "$R" --quiet \
        > "$W/train.log" 2>&1 || ok=0
done
check "train three tiny runs" test $ok = 1
[ $ok = 1 ] || { tail -20 "$W/train.log"; exit 1; }
loss=$(sqlite3 "$R/gatelab.db" "select printf('%.17g', value) from metrics where run_id='base' and split='val' and name='final.loss'")
h5dump -m '%.9g' -d /sat/alpha -y -w 0 "$R/runs/sat1/trace.h5" | sed -n '/DATA {/,/}/p' | tr -s ' ,' '\n' | grep -E '^[0-9.e+-]+$' > "$W/alpha.h5dump"

out=$(PYTHONPATH="$PKG" "$PY" - "$R" "$loss" "$W/alpha.h5dump" "$GATELAB_DATA/corpus.txt" <<'PY' 2>&1
import sys, numpy as np, gatelab
R, loss, dump, corpus = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
bad = []
def ok(what, cond):
    print(("PASS " if cond else "FAIL ") + what)
df = gatelab.runs(results=R)
ok(f"runs(): one row per run ({len(df)})", sorted(df.run_id) == ["base", "sat1", "sat2"])
ok("runs(): parameters are typed columns (model.d_model int, train.lr float, model.value_residual str)",
   df["model.d_model"].dtype.kind == "i" and df["train.lr"].dtype.kind == "f" and set(df["model.value_residual"]) == {"none", "satformer"})
b = df[df.run_id == "base"].iloc[0]
# the reference is the sqlite3 shell's printf, which keeps ~16 digits, not the 17 a double needs
ok(f"runs(): the headline val.final.loss is the registry's ({b['val.final.loss']!r} vs {loss!r}) with its provenance ({b['val.final.loss.measured_on']})",
   abs(b["val.final.loss"] - loss) <= 1e-14 * abs(loss) and b["val.final.loss.measured_on"].startswith("val["))
ok("runs(status='finished'): the status matches whatever its case", len(gatelab.runs(results=R, status="finished")) == 3)
try:
    gatelab.runs(results=R, experiment="nosuch"); ok("runs(experiment=unknown) raises", False)
except gatelab.RegistryError as e:
    ok(f"runs(experiment=unknown) raises naming the known ones ({e})", "tiny" in str(e))
m = gatelab.metrics(results=R, run="base", split="val")
ok("metrics(): long form with params dicts and the run's parameters as columns",
   {"name", "value", "params", "model.d_model"} <= set(m.columns) and isinstance(m.params.iloc[0], dict))
ok("load_run(exact id)", gatelab.load_run("base", results=R).id == "base")
ok("load_run(unique prefix)", gatelab.load_run("ba", results=R).id == "base")
ok("load_run(run folder) finds the folder's own registry", gatelab.load_run(R + "/runs/sat2").db == R + "/gatelab.db")
for arg, word in (("sat", "ambiguous"), ("zzz", "no such run")):
    try:
        gatelab.load_run(arg, results=R); ok(f"load_run({arg!r}) raises", False)
    except gatelab.RegistryError as e:
        ok(f"load_run({arg!r}) raises: {e}", word in str(e) and (arg != "sat" or ("sat1" in str(e) and "sat2" in str(e))))
run = gatelab.load_run("sat1", results=R)
ok("the run's config is typed (model.norm_eps float, train.steps 20)",
   isinstance(run.config["model"]["norm_eps"], float) and run.config.get_key("train.steps") == 20)
a = run.trace["sat/alpha"]
ok(f"trace: sat/alpha has named axes {a.axes} and shape {a.shape}", a.axes == ("step", "layer", "token", "kv_head") and a.ndim == 4)
ref = np.loadtxt(dump, dtype=np.float32)
ok(f"trace: sat/alpha equals h5dump's {ref.size} values exactly (9 digits: a float32 round-trips)", ref.size == a.size and np.array_equal(ref, np.asarray(a).ravel()))
text = "".join(run.trace.probe_text)
T = run.config["model"]["seq_len"]
corpus_text = open(corpus, encoding="utf-8").read()
ok(f"trace: the first probe window decodes to corpus text ({text[:30]!r}…)", len(text) >= T and text[:T] in corpus_text)
ok("trace: categories by name", set(run.trace.category_names()) <= {"structural", "functional", "semantic"})
c = run.checkpoint
ok("checkpoint: the parameters the C tensor table names, with shapes", c.params["embed"].shape == (run.config["model"]["vocab_size"], run.config["model"]["d_model"]))
ok("checkpoint: decode(encode(text)) round-trips", c.decode(c.encode(text[:T])) == text[:T])
PY
)
echo "$out"
echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "the Python checks did not run: $(echo "$out" | tail -3)"

# `make demo`'s layout: the runs trained from the clone's root with the relative --results results,
# so the registry's paths were given relative to the clone's root, not to the registry's folder
stand_in_root
DOC="$(cd "$(dirname "$0")/../.." && pwd)/docs/python.md"
EX="$(cd "$(dirname "$0")/../.." && pwd)/docs/python_example.py"
ok=1
for v in base:none satformer:satformer; do
    (cd "$T" && "$BIN" train "$TINY" model.value_residual="${v#*:}" log.experiment=demo-copy train.steps=20 \
        --run-id "demo-copy-${v%%:*}-1" --results results --quiet) > "$W/train.log" 2>&1 || ok=0
done
check "train two runs as make demo does (relative --results, from the clone's root)" test $ok = 1
[ $ok = 1 ] || { tail -20 "$W/train.log"; exit 1; }
HAVE_TORCH=0; "$PY" -c 'import torch' 2> /dev/null && HAVE_TORCH=1
# every ```python block of docs/python.md, in order, in one namespace, in the clone's root
out=$(cd "$T" && "$PY" - "$DOC" "$HAVE_TORCH" <<'PY' 2>&1
import re, sys, traceback
doc, torch_ok = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2] == "1"
ns = {}
for i, block in enumerate(re.findall(r"```python\n(.*?)```", doc, re.S), 1):
    head = block.strip().splitlines()[0]
    if "torch" in block and not torch_ok:
        print(f"SKIP docs/python.md snippet {i} ({head}: no PyTorch for this interpreter)")
        continue
    if "from tsa." in block:  # the TSA paper's own package: not a dependency of gatelab (official_interop.sh
        try:                   # checks the same mapping against a module of the official layout)
            import tsa  # noqa: F401
        except ImportError:
            print(f"SKIP docs/python.md snippet {i} ({head}: the TSA paper's official package is not installed)")
            continue
    try:
        exec(compile(block, f"docs/python.md snippet {i}", "exec"), ns)
        print(f"PASS docs/python.md snippet {i} runs as written ({head})")
    except Exception:
        print(f"FAIL docs/python.md snippet {i} ({head}): " + traceback.format_exc().strip().splitlines()[-1])
PY
)
echo "$out"
echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "the docs/python.md snippets did not run: $(echo "$out" | tail -3)"
mkdir -p "$W/elsewhere"
if [ $HAVE_TORCH = 1 ]; then
    (cd "$W/elsewhere" && "$PY" "$EX" ../root/results/runs/demo-copy-satformer-1 --gatelab "$BIN") > "$W/ex.demo" 2>&1
    check "docs/python_example.py from another folder on a run folder of make demo's layout ($(grep -o 'relative difference [^ ]*' "$W/ex.demo"))" \
        grep -q 'every α set to 0' "$W/ex.demo"
    (cd "$W/elsewhere" && "$PY" "$EX" demo-copy-sat --results ../root/results --gatelab "$BIN") > "$W/ex.demo2" 2>&1
    check "docs/python_example.py from another folder on a run id with --results" grep -q 'every α set to 0' "$W/ex.demo2"
fi
# a copy of the results folder, in a folder whose name SQLite's URI syntax would cut (#), read
# while the original is gone; the registry is never written and nothing is created beside it
cp -r "$T/results" "$W/exp#2"
mv "$T/results" "$T/results.gone"
sum=$(sha256sum "$W/exp#2/gatelab.db" | cut -d' ' -f1)
mkfifo "$W/exp#2/runs/demo-copy-base-1/trace.h5.fifo"
out=$(cd "$W/elsewhere" && PYTHONPATH="$PKG" timeout 60 "$PY" - "$W/exp#2" <<'PY' 2>&1
import os, shutil, sys, gatelab
R = sys.argv[1]
def ok(what, cond):
    print(("PASS " if cond else "FAIL ") + what)
run = gatelab.load_run("demo-copy-sat", results=R)
ok(f"a copied results folder is read where it is ({run.folder})", run.folder == os.path.join(os.path.abspath(R), "runs", run.id))
ok("…its trace, checkpoint and run folder path read from the copy",
   run.trace["sat/alpha"].ndim == 4 and run.checkpoint.step == 20 and gatelab.load_run(R + "/runs/demo-copy-base-1").id == "demo-copy-base-1")
ok("runs() on a folder named exp#2", len(gatelab.runs(results=R)) == 2)
base = os.path.join(R, "runs", "demo-copy-base-1")
os.rename(os.path.join(base, "trace.h5"), os.path.join(base, "trace.h5.real"))
os.rename(os.path.join(base, "trace.h5.fifo"), os.path.join(base, "trace.h5"))
try:
    gatelab.load_run("demo-copy-base", results=R).trace; ok("a FIFO as trace.h5 raises", False)
except OSError as e:
    ok(f"a FIFO as trace.h5 raises at once, naming it ({e})", "trace.h5" in str(e) and "regular" in str(e))
os.remove(os.path.join(base, "trace.h5"))
with open(os.path.join(base, "trace.h5"), "wb") as f:
    f.write(b"not hdf5" * 100)
try:
    gatelab.load_run("demo-copy-base", results=R).trace; ok("a damaged trace.h5 raises", False)
except OSError as e:
    ok(f"a damaged trace.h5 raises naming the file ({e})", base + "/trace.h5" in str(e))
shutil.rmtree(os.path.join(R, "runs", "demo-copy-satformer-1"))
try:
    gatelab.load_run("demo-copy-sat", results=R).checkpoint; ok("a missing run folder raises", False)
except FileNotFoundError as e:
    ok(f"a missing run folder says so, naming it ({e})", "no run folder" in str(e) and "demo-copy-satformer-1" in str(e))
os.makedirs("bad#1", exist_ok=True)
open("bad#1/gatelab.db", "w").write("this is not a database " * 100)
try:
    gatelab.runs(results="bad#1"); ok("a file that is not a registry raises", False)
except gatelab.RegistryError as e:
    ok(f"a file that is not a registry raises naming it ({e})", "bad#1/gatelab.db" in str(e))
PY
)
echo "$out"
echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "the copy checks did not run: $(echo "$out" | tail -3)"
check "the registry in exp#2 is unchanged (read only)" test "$(sha256sum "$W/exp#2/gatelab.db" | cut -d' ' -f1)" = "$sum"
# (SQLite's WAL readers keep their shared index gatelab.db-shm beside a WAL registry, as the
# sqlite3 shell does; the database itself is what must not change)
check "no file exp or bad was created by a cut URI, no rollback journal" \
    test ! -e "$W/exp" -a ! -e "$W/exp#2/gatelab.db-journal" -a ! -e "$W/elsewhere/bad"
mv "$T/results.gone" "$T/results"

# The model part (python3-torch): the PyTorch module rebuilt from a checkpoint computes the C loss
# on the same text (docs/python_example.py, which also caches α through a hook), hooks that return
# their input change nothing, and a misspelt hook name is an error — for SATFormer + TSA, for a
# BPE run (the package encodes text with the run's merges as bpe_encode does) and (the loss only) for
# the TSA paper's early exit (gpt2, exit_form = paper: the checkpoint's per-block exit norms load by name).
if ! "$PY" -c 'import torch' 2> /dev/null; then
    skip "the model part of the Python package (no PyTorch for $PY: apt-get install python3-torch)"
    exit 0
fi
ok=1
"$BIN" train "$TINY" model.value_residual=satformer model.depth_routing=tsa train.steps=20 --run-id st --results "$R" \
    --quiet > "$W/train.log" 2>&1 || ok=0
"$BIN" train "$TINY" data.tokenizer=bpe data.vocab_size=300 model.value_residual=satformer train.steps=20 --run-id bpe \
    --results "$R" --quiet > "$W/train.log" 2>&1 || ok=0
"$BIN" train "$TINY" model.backbone=gpt2 model.qk_norm=0 model.depth_routing=early_exit model.exit_form=paper \
    model.exit_weighting=uniform train.steps=20 --run-id ee --results "$R" --quiet > "$W/train.log" 2>&1 || ok=0
check "train tiny SATFormer+TSA, BPE and paper-form early-exit runs for the model checks" test $ok = 1
head -c 4000 "$GATELAB_DATA/corpus.txt" > "$W/text.txt"
EX="$(cd "$(dirname "$0")/../.." && pwd)/docs/python_example.py"
for run in st bpe ee; do
    "$PY" "$EX" "$R/runs/$run" "$W/text.txt" --gatelab "$BIN" > "$W/ex.$run" 2>&1; rc=$?
    check "docs/python_example.py on $run: PyTorch loss = C loss to 1e-5 ($(grep -o 'relative difference [^ ]*' "$W/ex.$run"))" \
        test $rc -eq 0
done
check "…and it caches α through a hook and reports the loss with α switched off" grep -q "every α set to 0: loss" "$W/ex.st"
hl=$(sqlite3 "$R/gatelab.db" "select printf('%.4f', value) from metrics where run_id='st' and split='val' and name='hard.loss' order by win_count desc limit 1")
check "…and it prints the TSA run's headline with the skipping done ($hl), its soft loss beside it" \
    grep -qE "^headline val loss $hl, skipping done, soft [0-9.]+ \(on val\[" "$W/ex.st"
out=$(PYTHONPATH="$PKG" "$PY" - "$R" <<'PY' 2>&1
import sys, torch, gatelab
run = gatelab.load_run("st", results=sys.argv[1])
m = run.model()
ids = run.encode(run.trace.decode())
names = m.hook_names(ids)
print(("PASS " if {"blocks.1.attn.hook_alpha", "blocks.1.hook_halt_p", "hook_logits"} <= set(names) else "FAIL ")
      + f"hook_names lists the gate and halting hooks ({len(names)} names)")
base = float(m(ids)["task_loss"])
same = float(m.run_with_hooks(ids, fwd_hooks=[(n, lambda t, name: t) for n in names])["task_loss"])
print(("PASS " if same == base else "FAIL ") + f"hooks that return their input change nothing ({same} = {base})")
halt = float(m.run_with_hooks(ids, fwd_hooks=[("blocks.1.hook_halt_p", lambda t, name: torch.ones_like(t))])["task_loss"])
print(("PASS " if halt != base else "FAIL ") + f"p = 1 through hook_halt_p skips block 1's update (loss {halt:.6f} vs {base:.6f})")
try:
    m.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_alpah", lambda t, name: t)])
    print("FAIL a misspelt hook name is an error")
except KeyError as e:
    print(f"PASS a misspelt hook name is an error ({e})")
PY
)
echo "$out"
echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "the hook checks did not run: $(echo "$out" | tail -3)"

# The cache object (gatelab.cache): the residual stream decomposed adds up to the final residual, the
# heads to their block's attention update, the logit attributions to the logits; the V1 share equals
# what `gatelab probe` (the C model) writes; to_str_tokens; hooks as a context manager.
for run in st bpe; do
    head -c 2000 "$GATELAB_DATA/corpus.txt" | tail -c 30 | tr -d '\n' > "$W/prompt.$run"   # under seq_len: one window
    "$BIN" probe "$run" --results "$R" --text "$W/prompt.$run" --out "$W/probe.$run.h5" > /dev/null 2>&1 ||
        fail "gatelab probe $run for the V1 share reference"
done
out=$(PYTHONPATH="$PKG" "$PY" - "$R" "$W" <<'PY' 2>&1
import sys, h5py, numpy as np, torch, gatelab
R, W = sys.argv[1], sys.argv[2]
def ok(what, cond):
    print(("PASS " if cond else "FAIL ") + what)
for rid in ("st", "bpe"):
    run = gatelab.load_run(rid, results=R)
    m = run.model()
    text = open(f"{W}/prompt.{rid}", encoding="utf-8").read()
    out, cache = m.run_with_cache(text)
    L, H = m.cfg.n_layer, m.cfg.n_head
    final = cache[f"blocks.{L - 1}.hook_resid_post"]
    parts, labels = cache.decompose_resid(return_labels=True)
    d = float((parts.sum(0) - final).abs().max())
    ok(f"{rid}: decompose_resid ({', '.join(labels)}) adds up to the final residual (max diff {d:.1e})", d < 1e-9)
    acc, al = cache.accumulated_resid(return_labels=True)
    ok(f"{rid}: accumulated_resid is {L}+1 states ({al}), the last the final residual",
       acc.shape[0] == L + 1 and torch.equal(acc[-1], final) and torch.equal(acc[0], cache["blocks.0.hook_resid_pre"]))
    heads, hl = cache.stack_head_results(return_labels=True)
    worst = max(float((heads[n * H:(n + 1) * H].sum(0) - cache.block_scale(n) * cache[f"blocks.{n}.hook_attn_out"]).abs().max())
                for n in range(L))
    ok(f"{rid}: stack_head_results ({len(hl)} heads) add up to each block's scaled attention update (max diff {worst:.1e})",
       worst < 1e-9 and hl[0] == "L0H0")
    tok = m.tokens(text)
    tgt = torch.roll(tok, -1, dims=1)                     # the next token at each position (the last wraps)
    attrs = cache.logit_attrs(parts, tgt)
    want = out["logits"].gather(-1, tgt[..., None])[..., 0]
    d = float((attrs.sum(0) - want).abs().max())
    ok(f"{rid}: logit_attrs of the parts add up to the logits of the next tokens (max diff {d:.1e})", d < 1e-8)
    v1, vl = cache.stack_v1_results(return_labels=True)
    # attention is linear in the values: the heads on v + α·V1 = the heads on v + the V1 parts
    n = 1
    plain = cache._head_out(n, cache[f"blocks.{n}.attn.hook_v"])
    d = float((plain + v1[:H] - heads[n * H:(n + 1) * H]).abs().max())
    ok(f"{rid}: stack_v1_results ({vl[:2]}…) is the V1 part of each head's output (heads on v + V1 parts = heads; {d:.1e})",
       d < 1e-9)
    with h5py.File(f"{W}/probe.{rid}.h5", "r") as f:
        c_share = f["v1/share"][:]                       # (L, P, Hkv), float32, the C model
    py = np.stack([cache.v1_share(k)[0].numpy() for k in range(1, L)])
    d = float(np.nanmax(np.abs(py - c_share[1:L, :py.shape[1]])))
    ok(f"{rid}: v1_share equals gatelab probe's /v1/share (C, float32) to 1e-4 (max diff {d:.1e})",
       c_share.shape[1] == py.shape[1] and d < 1e-4)
    st = m.to_str_tokens(text)
    joined = b"".join(run.checkpoint.vocab[i] for i in tok[0].tolist()).decode("utf-8")
    ok(f"{rid}: to_str_tokens gives one string per token ({st[:4]}…), joined the text",
       len(st) == tok.shape[1] and ("".join(st) == text if rid == "st" else joined == text))
m = gatelab.load_run("st", results=R).model()
ids = m.tokens(open(f"{W}/prompt.st", encoding="utf-8").read())
base = float(m(ids)["task_loss"])
ones = [("blocks.1.hook_halt_p", lambda t, name: torch.ones_like(t))]
with m.hooks(fwd_hooks=ones):
    inside = float(m(ids)["task_loss"])
after = float(m(ids)["task_loss"])
ok(f"hooks as a context manager: inside, the hook applies ({inside:.6f} = run_with_hooks "
   f"{float(m.run_with_hooks(ids, fwd_hooks=ones)['task_loss']):.6f}); after, it is gone ({after:.6f} = {base:.6f})",
   inside == float(m.run_with_hooks(ids, fwd_hooks=ones)["task_loss"]) and after == base and inside != base)
try:
    with m.hooks(fwd_hooks=[("blocks.1.hook_halt_pp", lambda t, name: t)]):
        m(ids)
    ok("a misspelt hook name in a with block is an error", False)
except KeyError as e:
    ok(f"a misspelt hook name in a with block is an error on leaving it ({e})", "hook_halt_pp" in str(e) and not m._ctx)
PY
)
echo "$out"
echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "the cache checks did not run: $(echo "$out" | tail -3)"

# The registry's views (docs/registry.md, "Views"): on committed snapshots (read-only, lacking the
# views: TEMP views, the file untouched), gatelab.runs() names every run with the label and the
# headline `gatelab runs` prints, both read from run_variant and run_headline.
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
for snap in decisive-q1i decisive-q2 decisive-q1e; do
    src="$ROOT/docs/report/registries/$snap.db"
    [ -f "$src" ] || { skip "views: $src is not here"; continue; }
    cp "$src" "$W/$snap.db"
    sum=$(sha256sum < "$W/$snap.db")
    "$BIN" runs --db "$W/$snap.db" --format json > "$W/$snap.json" 2> "$W/$snap.err" || fail "gatelab runs on $snap: $(cat "$W/$snap.err")"
    out=$(PYTHONPATH="$PKG" "$PY" - "$W/$snap.db" "$W/$snap.json" <<'PY' 2>&1
import sys, json, math, gatelab
df = gatelab.runs(db=sys.argv[1])
c = {r["run_id"]: r for r in json.load(open(sys.argv[2]))}
bad = []
for _, r in df.iterrows():
    j = c[r.run_id]
    if r.variant != j["variant"]:
        bad.append(f"{r.run_id}: label {r.variant!r} vs {j['variant']!r}")
    kind = j["val_kind"] if j["val_headline"] else None
    if r["val.headline.kind"] != kind:
        bad.append(f"{r.run_id}: kind {r['val.headline.kind']} vs {kind}")
    want = j["val_loss"] if kind in ("final", "hard") else float("nan")
    got = r["val.headline.loss"]
    if not ((math.isnan(got) and math.isnan(want)) or abs(got - want) <= 1e-8 * abs(want)):
        bad.append(f"{r.run_id}: headline {got!r} vs {want!r}")
print(("PASS" if not bad and len(df) == len(c) else "FAIL")
      + f" views: gatelab.runs() and gatelab runs name all {len(df)} runs of the snapshot alike (label, headline kind and loss)"
      + ("; " + "; ".join(bad[:3]) if bad else ""))
PY
)
    echo "$out" | sed "s/ views: / views ($snap): /"
    echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "views ($snap): the check did not run: $(echo "$out" | tail -3)"
    check "views ($snap): neither reader wrote the read-only snapshot (TEMP views)" test "$(sha256sum < "$W/$snap.db")" = "$sum"
done

# config.ini records every [model] key; the reference has model.exit_form in both forms (the paper's with
# its per-block exit norms), and still refuses a key it does not know
if [ $HAVE_TORCH = 0 ]; then
    skip "the reference's exit_form check (no PyTorch for $PY)"
    exit 0
fi
PYPATH="$(cd "$(dirname "$0")/../.." && pwd)/scripts/python"
out=$("$PY" - "$PYPATH" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[1])
from gatelab.model import config_from_run
base = {"vocab_size": "16", "d_model": "8", "n_layer": "2", "n_head": "2", "n_kv_head": "2", "d_ff": "16",
        "seq_len": "8"}
try:
    config_from_run({"model": dict(base, exit_form="gatelab")})
    print("PASS a run recording exit_form = gatelab builds the reference config")
except Exception as e:
    print(f"FAIL exit_form = gatelab refused: {e}")
try:
    c = config_from_run({"model": dict(base, depth_routing="early_exit", exit_weighting="uniform", exit_form="paper")})
    import ref_model
    names = ref_model.param_shapes(c)
    print(("PASS" if c.exit_form == "paper" and "layers.0.exit_norm" in names and "layers.1.exit_norm" not in names
           else "FAIL") + " exit_form = paper builds the reference config with an exit norm per block but the last")
except Exception as e:
    print(f"FAIL exit_form = paper refused: {e}")
try:
    config_from_run({"model": dict(base, exit_shape="odd")})
    print("FAIL a [model] key the reference does not know was accepted")
except ValueError as e:
    print(("PASS" if "exit_shape" in str(e) else "FAIL") + f" an unknown [model] key is refused naming it ({e})")
PY
)
echo "$out"
echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "the exit_form checks did not run: $(echo "$out" | tail -3)"
