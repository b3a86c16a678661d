#!/usr/bin/env bash
# json.sh — every JSON line gatelab prints, read back with a strict parser
# (Python's json with parse_constant raising on NaN/Infinity, UTF-8 decoded
# strictly): eval (split, --text, --sparse, --tau, --match-alpha), ablate
# (zero, mean, file, full-depth, random, exit), heads --json, sample --json,
# runs --format json, compare --format json and metrics --format json, on tiny baseline, SATFormer, TSA and early-exit runs
# trained here.  Counts (tokens, windows, step, …) must be JSON integers, every
# line that names a run starts with the one run reference (run_id, run_dir),
# and a run id with a quote, a backslash and a byte that is not UTF-8 comes back
# escaped and readable.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1
R="$W/results"
cat > "$W/tiny.ini" <<INI
[model]
d_model = 32
n_layer = 3
n_head = 2
n_kv_head = 2
d_ff = 64
seq_len = 32
[data]
file = corpus.txt
[train]
steps = 20
batch_size = 4
lr = 3e-3
warmup = 5
threads = 1
eval_every = 10
eval_windows = 4
ckpt_every = 20
log_every = 5
[log]
experiment = tiny
INI
odd=$(printf 'odd"q\\b\377id')  # a quote, a backslash and the byte 0xff
tr() { "$BIN" train "$W/tiny.ini" "$@" --results "$R" --quiet > "$W/train.out" 2>&1; }
tr --run-id base && tr model.value_residual=satformer --run-id sat &&
    tr model.depth_routing=tsa model.tsa_lambda=0.01 model.router_init_bias=0 --run-id tsa &&
    tr model.depth_routing=early_exit --run-id ee && tr --run-id "$odd"
check "train the tiny runs (baseline, SATFormer, TSA, early exit, an odd run id)" test $? -eq 0
# a FAILED run whose error message holds a quote, a backslash, a tab and a newline
tr --run-id failed && sqlite3 "$R/gatelab.db" "UPDATE runs SET status = 'FAILED', exit_code = 1,
    error = 'loss \"nan\" at step 3 \\ see' || char(9) || 'train.log' || char(10) || 'end' WHERE run_id = 'failed'"
check "a failed run with an awkward error message in the registry" test $? -eq 0

# strict FILE MODE: MODE "lines" (every line starting with { is one JSON object) or "doc" (one JSON value).
strict() {
    python3 - "$@" <<'PY'
import json, sys
path, mode = sys.argv[1], sys.argv[2]
COUNTS = {"tokens", "windows", "step", "layers", "rank", "block", "kv_head", "exit_code", "val_tokens", "first",
          "win_first", "win_count"}
def no_constant(c):
    raise ValueError("not JSON: " + c)
def walk(v, where):
    if isinstance(v, dict):
        for k, x in v.items():
            if k in COUNTS and x is not None and not isinstance(x, int):
                raise ValueError("%s.%s = %r is not an integer" % (where, k, x))
            walk(x, where + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            walk(x, "%s[%d]" % (where, i))
text = open(path, "rb").read().decode("utf-8", errors="strict")
docs = [text] if mode == "doc" else [l for l in text.splitlines() if l.startswith("{")]
if not docs:
    sys.exit("no JSON line in " + path)
for d in docs:
    v = json.loads(d, parse_constant=no_constant)
    walk(v, "$")
    if mode == "lines" and list(v)[:2] != ["run_id", "run_dir"]:
        sys.exit("the line does not start with run_id, run_dir: " + d[:120])
print("%d JSON value(s) ok" % len(docs))
PY
}
# js WHAT MODE COMMAND...: the command exits 0 and its stdout passes strict
js() {
    local what=$1 mode=$2; shift 2
    if "$@" > "$W/out" 2> "$W/err" && strict "$W/out" "$mode" > "$W/chk" 2>&1; then pass "$what: $(cat "$W/chk")"
    else fail "$what (rc/parse: $(tail -c 300 "$W/chk" 2>/dev/null) $(tail -c 300 "$W/err"))"; fi
}
E=(--results "$R")
js "eval on the validation split" lines "$BIN" eval base --windows 4 "${E[@]}"
printf 'it is the end of the day, and the end.\n' > "$W/text.txt"
js "eval --text" lines "$BIN" eval base --text "$W/text.txt" "${E[@]}"
js "eval --sparse (TSA)" lines "$BIN" eval tsa --sparse --windows 4 "${E[@]}"
js "eval --tau (early exit)" lines "$BIN" eval ee --tau 0.5 --windows 4 "${E[@]}"
js "eval --match-alpha (early exit)" lines "$BIN" eval ee --match-alpha 0.9 --windows 4 "${E[@]}"
js "ablate --mode zero" lines "$BIN" ablate sat --mode zero --windows 4 "${E[@]}"
js "ablate --mode mean --heads L2H1" lines "$BIN" ablate sat --mode mean --heads L2H1 --windows 4 "${E[@]}"
printf '1 0 0\n2 1 0.5\n' > "$W/values.tsv"
js "ablate --mode file" lines "$BIN" ablate sat --mode file --values "$W/values.tsv" --windows 4 --no-db "${E[@]}"
js "ablate --mode full-depth" lines "$BIN" ablate tsa --mode full-depth --windows 4 "${E[@]}"
js "ablate --mode random" lines "$BIN" ablate tsa --mode random --windows 4 "${E[@]}"
js "ablate --mode exit" lines "$BIN" ablate ee --mode exit --taus 0.5,0.9 --windows 4 "${E[@]}"
js "heads --json" lines "$BIN" heads sat --json --no-figure --windows 4 "${E[@]}"
js "sample --json" lines "$BIN" sample base --json --tokens 30 --prompt "it's
the" "${E[@]}"
js "runs --format json" doc "$BIN" runs --format json "${E[@]}"
js "compare --format json" doc "$BIN" compare base sat ee "$odd" --format json "${E[@]}"
python3 - "$W/out" <<'PY' && pass "compare --format json: the runs in order, val/final.loss numbers, params as strings" || fail "compare --format json content"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert d["runs"] == ["base", "sat", "ee", 'odd"q\\b\ufffdid'], d["runs"]
assert all(isinstance(v, float) for v in d["metrics"]["val/final.loss"]), d["metrics"]
assert d["params"]["model.value_residual"][:2] == ["none", "satformer"], d["params"]
PY
js "metrics --format json" doc "$BIN" metrics --format json "${E[@]}"
python3 - "$W/out" "$(sqlite3 "$R/gatelab.db" "SELECT count(*) FROM metrics")" <<'PY' && pass "metrics --format json: every row, params objects, integer steps" || fail "metrics --format json content"
import json, sys
rows = json.load(open(sys.argv[1], encoding="utf-8"))
assert len(rows) == int(sys.argv[2]), (len(rows), sys.argv[2])
assert all(isinstance(r["params"], dict) and isinstance(r["step"], int) for r in rows)
assert any(r["params"].get("tau") is not None for r in rows if r["name"] == "exit.loss"), "no exit.loss with a tau"
PY
check "metrics --format json keeps one row per line" test "$(grep -c '"run_id"' "$W/out")" -eq "$(sqlite3 "$R/gatelab.db" "SELECT count(*) FROM metrics")"
js "eval of a run id with a quote, a backslash and byte 0xff" lines "$BIN" eval "$odd" --windows 2 "${E[@]}"
python3 - "$W/out" <<'PY' && pass "the odd run id reads back as odd\"q\\b<U+FFFD>id" || fail "the odd run id did not read back"
import json, sys
v = json.loads(open(sys.argv[1], encoding="utf-8").readline())
sys.exit(v["run_id"] != 'odd"q\\b\ufffdid')
PY
"$BIN" runs --format json "${E[@]}" > "$W/runs.json"
python3 - "$W/runs.json" <<'PY' && pass "runs --format json: 6 runs, the failed one with its error" || fail "runs --format json content"
import json, sys
rows = json.load(open(sys.argv[1], encoding="utf-8"))
bad = [r for r in rows if r["run_id"] == "failed"]
sys.exit(not (len(rows) == 6 and bad and bad[0]["status"] == "FAILED" and
              bad[0]["error"] == 'loss "nan" at step 3 \\ see\ttrain.log\nend'))
PY
check "runs --format json keeps one run per line" test "$(grep -c '"run_id"' "$W/runs.json")" -eq 6
check "no -nan or inf anywhere in what was printed" bash -c "! grep -qiE '(-?nan|inf)[,}]' '$W/out' '$W/runs.json'"
