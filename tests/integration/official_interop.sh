#!/usr/bin/env bash
# official_interop.sh — `gatelab import` and the TSA paper's official layout (scripts/python/gatelab/official.py):
#  (1) export → import of a trained run gives an equal model: the same evaluation loss bit for bit, and a
#      second export equal to the first (h5diff); the run is registered FINISHED under experiment import;
#      an existing folder, a folder outside runs/, an id the registry holds, a file that is not HDF5, and
#      (with h5py) an extra, missing, mis-shaped or non-finite tensor, or two ids of one byte, are refused,
#      named, with nothing left;
#  (2) gatelab → official state_dict → gatelab gives every tensor back to 1e-6;
#  (3) a torch module of the official layout (written in tests/official_interop.py) loads
#      to_official_tsa(run) with strict=True and its loss on a text equals `gatelab eval --text` to 1e-5.
# (2) and (3) need Debian's python3-torch and python3-h5py (SKIP, saying which, without them).
set -u
. "$(dirname "$0")/lib.sh"
PY="${GATELAB_PYTHON:-/usr/bin/python3}"
PKG="$(cd "$(dirname "$0")/../../scripts/python" && pwd)"
PYTEST="$(cd "$(dirname "$0")/.." && pwd)/official_interop.py"
scratch

# ---- (1) the C round trip
"$BIN" train "$TINY" train.steps=20 --run-id a --results "$R" --quiet > "$W/train.log" 2>&1 ||
    { fail "train a tiny run: $(tail -3 "$W/train.log")"; exit 1; }
"$BIN" export "$R/runs/a" --out "$W/a.h5" > /dev/null || { fail "export the tiny run"; exit 1; }
out=$("$BIN" import "$W/a.h5" --out "$R/runs/b" 2>&1)
check "import: $out" test -f "$R/runs/b/ckpt" -a -f "$R/runs/b/config.ini"
check "import: the run's config.ini is the exported run's" cmp -s "$R/runs/a/config.ini" "$R/runs/b/config.ini"
ea=$("$BIN" eval a --results "$R" --record 2> /dev/null | head -1)
eb=$("$BIN" eval b --results "$R" --record 2> /dev/null | head -1)
same=$(sqlite3 "$R/gatelab.db" "select count(*) from metrics x join metrics y on x.step = y.step and x.split = y.split
    and x.name = y.name where x.run_id = 'a' and y.run_id = 'b' and x.split = 'val' and x.name = 'final.loss'
    and x.value is not null and x.value = y.value")
la=$(echo "$ea" | sed 's/.*,"loss":\([^,]*\),.*/\1/'); lb=$(echo "$eb" | sed 's/.*,"loss":\([^,]*\),.*/\1/')
check "eval of the imported run: the same whole-split loss bit for bit (the registry's doubles equal; $la, $lb)" \
    test "$same" = 1 -a "$la" = "$lb" -a -n "$la"
"$BIN" export "$R/runs/b" --out "$W/b.h5" > /dev/null
if command -v h5diff > /dev/null; then
    check "export of the imported run equals the first export (h5diff: every tensor, the vocabulary, every attribute)" \
        h5diff "$W/a.h5" "$W/b.h5"
else
    skip "export → import → export compared with h5diff (no h5diff: apt-get install hdf5-tools)"
fi
row=$(sqlite3 "$R/gatelab.db" "select r.status || ' ' || e.name from runs r join experiments e on e.id = r.experiment_id
    where r.run_id = 'b'")
ev=$(sqlite3 "$R/gatelab.db" "select detail from run_events where run_id = 'b' and kind = 'import'")
check "registry: the imported run is FINISHED in experiment import ($row), its event names the file ($ev)" \
    test "$row" = "FINISHED import" -a "${ev#imported from $W/a.h5}" != "$ev"
"$BIN" train "$TINY" train.steps=10 data.tokenizer=bpe data.vocab_size=300 --run-id bpe --results "$R" --quiet \
    > "$W/train.log" 2>&1 && "$BIN" export "$R/runs/bpe" --out "$W/bpe.h5" > /dev/null &&
    "$BIN" import "$W/bpe.h5" --out "$R/runs/bpe2" > /dev/null && "$BIN" export "$R/runs/bpe2" --out "$W/bpe2.h5" > /dev/null
check "a BPE run (its merges) goes through export → import → export unchanged" \
    "$(command -v h5diff || echo false)" "$W/bpe.h5" "$W/bpe2.h5"
"$BIN" import "$W/a.h5" --out "$R/runs/c" --experiment interop > /dev/null 2>&1
check "import --experiment puts the run in that experiment" \
    test "$(sqlite3 "$R/gatelab.db" "select e.name from runs r join experiments e on e.id = r.experiment_id where r.run_id = 'c'")" = interop
"$BIN" import "$W/a.h5" --out "$W/fresh/runs/f" > /dev/null 2>&1
check "import into a results folder not made yet: runs/ and its registry are created" \
    test -f "$W/fresh/runs/f/ckpt" -a "$(sqlite3 "$W/fresh/gatelab.db" "select status from runs where run_id = 'f'" 2>&1)" = FINISHED
(cd "$R/runs" && "$BIN" import "$W/a.h5" --out g > /dev/null 2>&1)
check "import --out ID inside <results>/runs: the run registers in <results>/gatelab.db" \
    test -f "$R/runs/g/ckpt" -a "$(sqlite3 "$R/gatelab.db" "select status from runs where run_id = 'g'")" = FINISHED

# refusals: exit 1, one line naming what, nothing written
refused() { # WHAT WORD FILE OUT: import must exit 1 with WORD in its message and leave OUT absent
    local msg rc
    msg=$("$BIN" import "$3" --out "$4" 2>&1); rc=$?
    check "refused ($1): $msg" test $rc = 1 -a ! -e "$4" -a "${msg#*$2}" != "$msg"
}
rows_before=$(sqlite3 "$R/gatelab.db" "select count(*) from runs")
sum_before=$(cat "$R/runs/b/ckpt" "$R/runs/b/config.ini" | sha256sum)
msg=$("$BIN" import "$W/a.h5" --out "$R/runs/b" 2>&1); rc=$?
check "refused (an existing run folder): $msg" test $rc = 1 -a "${msg#*exists already}" != "$msg"
check "the existing run's files are untouched" test "$(cat "$R/runs/b/ckpt" "$R/runs/b/config.ini" | sha256sum)" = "$sum_before"
mkdir -p "$W/elsewhere"
refused "a folder whose parent is not runs/" "runs/<id>" "$W/a.h5" "$W/elsewhere/x"
refused "a folder under a missing folder not named runs" "runs/<id>" "$W/a.h5" "$W/nowhere/x"
check "… which import did not create" test ! -e "$W/nowhere"
mv "$R/runs/c" "$W/c.moved"
refused "an id the registry holds, its folder gone" "already in the registry" "$W/a.h5" "$R/runs/c"
printf 'not hdf5\n' > "$W/text.h5"
refused "not an HDF5 file" "not an HDF5 file" "$W/text.h5" "$R/runs/d"
refused "no such file" "a.h5.none" "$W/a.h5.none" "$R/runs/d"
"$BIN" import "$W/a.h5" > /dev/null 2>&1
check "no --out is bad usage (exit 2)" test $? = 2
msg=$("$BIN" import "$W/a.h5" --out "$R/runs/e" --experiment 'a/b' 2>&1); rc=$?
check "a bad --experiment is bad usage, named, nothing made: $msg" test $rc = 2 -a ! -e "$R/runs/e" -a "${msg#*--experiment}" != "$msg"
help=$("$BIN" import --help); top=$("$BIN" --help | grep '^  gatelab import ')
check "import --help and its line of gatelab --help list --out, --experiment, --db" \
    test "${help#*--out}" != "$help" -a "${help#*--experiment}" != "$help" -a "${help#*--db}" != "$help" \
    -a "${top#*--out RUN_DIR}" != "$top" -a "${top#*--experiment}" != "$top" -a "${top#*--db}" != "$top"
if "$PY" -c 'import h5py, numpy' 2> /dev/null; then
    "$PY" - "$W/a.h5" "$W" <<'PY'
import shutil, sys, h5py, numpy as np
src, w = sys.argv[1], sys.argv[2]
def variant(name, edit):
    shutil.copy(src, f"{w}/{name}.h5")
    with h5py.File(f"{w}/{name}.h5", "r+") as f:
        edit(f)
variant("extra", lambda f: f.create_dataset("layers.9.attn.wq", data=np.zeros((4, 4), np.float32)))
variant("missing", lambda f: f.__delitem__("layers.1.ffn.w3"))
def reshape(f):
    del f["layers.0.attn.wo"]
    f.create_dataset("layers.0.attn.wo", data=np.zeros((32, 31), np.float32))
variant("shape", reshape)
def nan(f):
    f["final_norm"][3] = np.nan
variant("nan", nan)
def twice(f):
    f["vocab"][1] = f["vocab"][0]
variant("twice", twice)
PY
    for v in "extra:layers.9.attn.wq is not a tensor" "missing:layers.1.ffn.w3 is missing" \
        "shape:layers.0.attn.wo is (32, 31) in the file, (32, 32)" "nan:final_norm holds a value that is not finite" "twice:ids 0 and 1 the same byte"; do
        refused "the hand-made file ${v%%:*}.h5" "${v#*:}" "$W/${v%%:*}.h5" "$R/runs/${v%%:*}"
    done
else
    skip "import refusing an extra, missing, mis-shaped or non-finite tensor (no h5py for $PY: apt-get install python3-h5py)"
fi
check "no refused import left a registry row ($rows_before rows before)" \
    test "$(sqlite3 "$R/gatelab.db" "select count(*) from runs")" = "$rows_before"

# ---- (2) and (3): the official layout, from Python
if ! "$PY" -c 'import torch, h5py, numpy, pandas' 2> /dev/null; then
    skip "the official TSA layout from Python (no torch, h5py, numpy and pandas for $PY: apt-get install python3-torch python3-h5py python3-pandas)"
    exit 0
fi
gpt2="model.backbone=gpt2 model.n_kv_head=2 model.qk_norm=0 model.norm_eps=1e-5 model.dropout=0.1"
ok=1
"$BIN" train "$TINY" $gpt2 model.depth_routing=tsa model.tsa_form=paper model.tsa_lambda=0.01 train.steps=20 \
    --run-id paper --results "$R" --quiet > "$W/train.log" 2>&1 || ok=0
"$BIN" train "$TINY" $gpt2 train.steps=20 --run-id dense --results "$R" --quiet >> "$W/train.log" 2>&1 || ok=0
check "train a tiny TSA run of the paper's form and a dense gpt2 run" test $ok = 1
[ $ok = 1 ] || { tail -5 "$W/train.log"; exit 1; }
head -c 4000 "$GATELAB_DATA/corpus.txt" > "$W/batch.txt"
for run in paper dense; do
    "$BIN" eval "$R/runs/$run" --text "$W/batch.txt" 2> /dev/null | head -1 > "$W/$run.eval.json"
done
out=$(GATELAB_BIN="$BIN" PYTHONPATH="$PKG" "$PY" "$PYTEST" "$R" "$W" 2>&1)
echo "$out"
echo "$out" | grep -qE '^(PASS|FAIL) ' || fail "the Python checks did not run: $(echo "$out" | tail -3)"
