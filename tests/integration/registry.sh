#!/usr/bin/env bash
# registry.sh — the registry commands on the real binary and a real registry
# (read back with the sqlite3 tool and Python's csv and json modules):
#
#   tag RUN key=value / --remove key, runs --tag key=value, runs with variant,
#   chosen params and tags; delete / restore (hidden from runs and tables,
#   files untouched, runs --deleted); compare (table, csv, json); metrics in
#   long form (csv, json) with the parameters as data, not in the name
#   (ablate's zero.all.delta_loss stored as zero.delta_loss {"gates":"all"});
#   --help and bad arguments of each new command.
#
# Trains a 4-run sweep of the tiny model (value residual x seed) first.
# Prints one PASS/FAIL line per check.  Needs $GATELAB_BIN, sqlite3, python3.
set -u
. "$(dirname "$0")/lib.sh"
W="$(mktemp -d "${TMPDIR:-/tmp}/gatelab-registry-XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT; echo "work folder: $W"
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
cd "$W" || exit 1
q() { sqlite3 -batch -noheader -cmd ".timeout 10000" "$1" "$2"; }
for tool in sqlite3 python3; do
    command -v $tool > /dev/null || { fail "$tool missing"; exit 1; }
done
R="$W/res"
DB="$R/gatelab.db"

# 1. Four runs: seed 1 and 2, plain and SATFormer.
cp "$TINY" tiny.ini
"$BIN" sweep tiny.ini --axis value_residual=none,satformer --axis seed=1,2 train.threads=1 train.steps=20 \
    --results "$R" > sweep.out 2> sweep.err; rc=$?
check "a 4-run sweep with two --axis lists finishes" [ "$rc" -eq 0 ]
ids=($(q "$DB" "SELECT run_id FROM runs ORDER BY run_id"))
A=${ids[0]}; B=${ids[1]}; C=${ids[2]}
check "the registry is at schema 3" [ "$(q "$DB" "SELECT version FROM schema_version")" = 3 ]
# Provenance is the binary's build (gatelab --version), not the working directory's: the
# sweep ran in $W, outside any git checkout, yet each run records the commit gatelab was built from.
ver=$("$BIN" --version | sed -n 's/.*(commit \([^)]*\)).*/\1/p')
short=${ver%-dirty}; vdirty=0; [ "$short" != "$ver" ] && vdirty=1
short=${short##*-g}  # a tag's describe form (v1.0-3-gabc1234) ends with the hash
if ! [[ "$short" =~ ^[0-9a-f]{7,40}$ ]]; then
    echo "note: gatelab --version says '$ver' (a tag or unknown), not a hash: the commit check is skipped"
    [ "$short" != unknown ] || check "a binary built outside git records no commit" [ "$(q "$DB" "SELECT count(*) FROM runs WHERE git_commit IS NOT NULL")" = 0 ]
else
    check "every run records the binary's commit ($ver), though trained outside a git checkout" \
        [ "$(q "$DB" "SELECT count(*) FROM runs WHERE substr(git_commit, 1, ${#short}) = '$short' AND length(git_commit) = 40 AND git_dirty = $vdirty")" = 4 ]
fi

# 2. runs: variant and chosen params as columns.
"$BIN" runs --db "$DB" > runs.txt
check "runs: variant and the swept keys as columns" \
    bash -c "head -1 runs.txt | grep -q 'variant' && head -1 runs.txt | grep -q 'value_residual' && head -1 runs.txt | grep -q 'seed'"
check "runs: a SATFormer run's variant is satformer" grep -q "^$C .*satformer" runs.txt
"$BIN" runs --db "$DB" --format csv > runs.csv
check "runs --format csv: variant, tags and one column per swept key" python3 -c '
import csv, sys
rows = list(csv.DictReader(open("runs.csv")))
assert len(rows) == 4, rows
r = {x["run_id"]: x for x in rows}
assert r[sys.argv[1]]["variant"] == "baseline" and r[sys.argv[1]]["model.value_residual"] == "none"
assert r[sys.argv[2]]["variant"] == "satformer" and r[sys.argv[2]]["train.seed"] == "1"
' "$A" "$C"

# 3. Tags.
"$BIN" tag "$A" note=baseline "owner=Ada L" --db "$DB" > tag.out 2>&1; rc=$?
check "tag RUN key=value key=value" [ "$rc" -eq 0 -a "$(q "$DB" "SELECT group_concat(key || '=' || value, ';') FROM (SELECT * FROM tags WHERE run_id='$A' ORDER BY key)")" = "note=baseline;owner=Ada L" ]
"$BIN" tag "$R/runs/$B" note=second --db "$DB" > /dev/null 2>&1
check "tag accepts a run folder" [ "$(q "$DB" "SELECT value FROM tags WHERE run_id='$B'")" = second ]
"$BIN" runs --db "$DB" --tag note=baseline --format json > tagged.json
check "runs --tag note=baseline lists exactly that run, with its tags" python3 -c '
import json, sys
d = json.load(open("tagged.json"))
assert [x["run_id"] for x in d] == [sys.argv[1]], d
assert d[0]["tags"] == {"note": "baseline", "owner": "Ada L"}, d[0]["tags"]
assert d[0]["params"]["train.seed"] == "1" and d[0]["variant"] == "baseline"
' "$A"
"$BIN" tag "$A" --remove owner --db "$DB" > /dev/null 2>&1
check "tag --remove key" [ "$(q "$DB" "SELECT count(*) FROM tags WHERE run_id='$A'")" = 1 ]
"$BIN" tag nosuch-run x=1 --db "$DB" > nosuch.out 2>&1; rc=$?
check "tag of an unknown run: exit 1, says so" bash -c "[ $rc -eq 1 ] && grep -q 'nosuch-run is not in the registry' nosuch.out"
"$BIN" tag "$A" "bad key=1" --db "$DB" > badkey.out 2>&1; rc=$?
check "a tag key with a space is refused" bash -c "[ $rc -ne 0 ] && grep -q 'tag key' badkey.out"
"$BIN" tag "$A" novalue --db "$DB" > noeq.out 2>&1; rc=$?
check "a tag without '=': exit 2" bash -c "[ $rc -eq 2 ] && grep -q 'key=value' noeq.out"

# 4. Soft delete and restore: hidden from runs and tables, files and rows kept.
rows_before=$(q "$DB" "SELECT count(*) FROM metrics WHERE run_id='$B'")
"$BIN" delete "$B" --db "$DB" > del.out 2>&1; rc=$?
"$BIN" runs --db "$DB" --format csv > runs_del.csv
check "delete RUN: gone from runs, rows and run folder kept" bash -c "[ $rc -eq 0 ] && ! grep -q '^$B,' runs_del.csv &&
    [ -d '$R/runs/$B' ] && [ \"\$(sqlite3 '$DB' \"SELECT count(*) FROM metrics WHERE run_id='$B'\")\" = $rows_before ]"
"$BIN" runs --db "$DB" --deleted > runs_all.txt
check "runs --deleted shows it, marked deleted" bash -c "grep -q '^$B ' runs_all.txt && grep -q 'deleted (gatelab restore $B' runs_all.txt"
"$BIN" tables --db "$DB" --out tables > tables.out 2>&1
check "tables leave the deleted run out (the baseline has 1 seed, not 2)" grep -q '| baseline | 1 |' tables/loss_by_variant.md
"$BIN" metrics --db "$DB" > all.csv
check "metrics leave the deleted run out" bash -c "! grep -q '^$B,' all.csv && grep -q '^$A,' all.csv"
"$BIN" restore "$B" --db "$DB" > res.out 2>&1; rc=$?
"$BIN" runs --db "$DB" --format csv > runs_res.csv
"$BIN" tables --db "$DB" --out tables2 > tables2.out 2>&1
check "restore RUN brings it back (runs; tables: 2 seeds)" bash -c "[ $rc -eq 0 ] && grep -q '^$B,' runs_res.csv &&
    grep -q '| baseline | 2 |' tables2/loss_by_variant.md"
"$BIN" delete nosuch --db "$DB" > delno.out 2>&1; rc=$?
check "delete of an unknown run: exit 1" [ "$rc" -eq 1 ]

# 5. compare: the params that differ, then the headline side by side.
"$BIN" compare "$A" "$C" --db "$DB" > cmp.txt 2>&1; rc=$?
check "compare (table): model.depth_routing differs, seed (equal) not shown, headline rows" bash -c "[ $rc -eq 0 ] &&
    grep -q '^model.value_residual  *none  *satformer' cmp.txt && ! grep -q '^train.seed' cmp.txt &&
    grep -q '^val/final.loss ' cmp.txt && grep -q '^variant  *baseline  *satformer' cmp.txt"
"$BIN" compare "$A" "$B" "$C" --db "$DB" --format json > cmp.json; rc=$?
check "compare --format json: strict JSON, runs in order, numbers as numbers" python3 -c '
import json, sys
d = json.load(open("cmp.json"), parse_constant=lambda c: sys.exit("non-standard constant " + c))
assert d["runs"] == sys.argv[1:4], d["runs"]
assert set(d["params"]) == {"model.value_residual", "train.seed"}, d["params"]
assert all(isinstance(v, float) for v in d["metrics"]["val/final.loss"]), d["metrics"]["val/final.loss"]
' "$A" "$B" "$C"
"$BIN" compare "$A" "$B" --db "$DB" --format csv > cmp.csv
check "compare --format csv: kind,key,<runs>; the seed row" python3 -c '
import csv, sys
rows = list(csv.reader(open("cmp.csv")))
assert rows[0] == ["kind", "key", sys.argv[1], sys.argv[2]], rows[0]
assert ["param", "train.seed", "1", "2"] in rows, rows
' "$A" "$B"
"$BIN" compare "$A" --db "$DB" > cmp1.out 2>&1; rc=$?
check "compare with one run: exit 2" [ "$rc" -eq 2 ]

# 6. metrics in long form; parameters as data (ablate writes zero.all.* names).
"$BIN" ablate "$C" --mode zero --windows 4 --results "$R" > ablate.out 2>&1; rc=$?
check "ablate --mode zero on the SATFormer run" [ "$rc" -eq 0 ]
check "the registry stores zero.delta_loss with params {\"gates\":\"all\"}, no name with the label in it" bash -c "
    [ \"\$(sqlite3 '$DB' \"SELECT count(*) FROM metrics WHERE run_id='$C' AND split='ablation' AND name='zero.delta_loss' AND params='{\\\"gates\\\":\\\"all\\\"}'\")\" = 1 ] &&
    [ \"\$(sqlite3 '$DB' \"SELECT count(*) FROM metrics WHERE name LIKE '%.all.%'\")\" = 0 ]"
"$BIN" metrics --db "$DB" --run "$C" --name 'zero.*' > zero.csv; rc=$?
check "metrics --format csv (default): long form, params a JSON object, ready for csv readers" python3 -c '
import csv, json, sys
rows = list(csv.DictReader(open("zero.csv")))
want = ["run_id", "experiment", "variant", "split", "name", "params", "step", "value", "se", "data_split",
        "win_first", "win_count", "tokens", "wall_time"]
assert list(rows[0].keys()) == want, list(rows[0].keys())
d = [r for r in rows if r["name"] == "zero.delta_loss" and json.loads(r["params"]) == {"gates": "all"}]
assert len(d) == 1 and d[0]["run_id"] == sys.argv[1] and d[0]["variant"] == "satformer", rows
float(d[0]["value"])
assert all(r["name"].startswith("zero.") for r in rows)
' "$C"
"$BIN" metrics --db "$DB" --experiment tiny --format json > all.json; rc=$?
check "metrics --format json: strict JSON, every row of every visible run, params objects" python3 -c '
import json, sys
d = json.load(open("all.json"), parse_constant=lambda c: sys.exit("non-standard constant " + c))
n = int(sys.argv[1])
assert len(d) == n, (len(d), n)
assert all(isinstance(r["params"], dict) for r in d)
' "$(q "$DB" "SELECT count(*) FROM metrics")"
"$BIN" metrics --db "$DB" --format xml > /dev/null 2> fmt.err; rc=$?
check "metrics --format xml: exit 2, names the flag" bash -c "[ $rc -eq 2 ] && grep -q -- '--format' fmt.err"

# 7. --help on each new command: exit 0, lists its flags.
for c in "tag:--remove" "delete:--db" "restore:--results" "compare:--format" "metrics:--name"; do
    cmd=${c%%:*}; flag=${c#*:}
    "$BIN" $cmd --help > help.out 2>&1; rc=$?
    check "$cmd --help: exit 0, lists $flag" bash -c "[ $rc -eq 0 ] && grep -q -- '$flag' help.out"
done
"$BIN" metrics --nosuch > bad.out 2>&1; rc=$?
check "an unknown flag: exit 2" [ "$rc" -eq 2 ]
