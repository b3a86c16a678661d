#!/usr/bin/env bash
# registry_hostile.sh — the registry under careless and hostile conditions
# (issue 28.3), on the real binary and a real SQLite file:
#   - a registry in a folder the reader cannot write (a colleague's results, a
#     read-only mount): read (mode=ro, immutable=1, said), nothing created
#   - a registry locked by another process: "locked", not "not a registry"
#   - schema_version 0 or -1: refused by readers and writers (no upgrade-table
#     index out of range; UBSan in make asan)
#   - tag / delete with a mistyped --db or an empty GATELAB_RESULTS: an error,
#     and no registry created
#   - a tag value of 600 bytes listed whole (table, csv, json); `a; b=c` and
#     another tag read back as two tags from the CSV
#   - an unparseable params cell: `metrics` fails naming it, never prints {}
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'chmod -R u+w "$W" 2>/dev/null; rm -rf "$W"' EXIT
chmod 755 "$W"
export GATELAB_DATA="$W/data" OMP_NUM_THREADS=1
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"; DB="$R/gatelab.db"
"$BIN" train "$TINY" --run-id a --results "$R" --quiet > /dev/null 2>&1
check "train run a (exit $?)" test -f "$DB"

# 1. a folder the reader cannot write (as another user: root writes anywhere)
if id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null; then
    chmod -R a+rX "$W"; chmod a-w "$R"
    ls "$R" > "$W/before.ls"
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$BIN" runs --db "$DB" > "$W/ro.out" 2> "$W/ro.err"; rc=$?
    check "a registry in a read-only folder is read (exit $rc, run a listed)" \
        bash -c "test $rc -eq 0 && grep -q '^a ' '$W/ro.out'"
    check "reading it says it is read as immutable" grep -q 'cannot write; reading it as immutable' "$W/ro.err"
    check "reading it creates nothing in the folder" bash -c "ls '$R' | cmp -s - '$W/before.ls'"
    chmod u+w "$R"
else
    skip "read-only folder (needs the user nobody and setpriv)"
fi

# 2. locked by another process
python3 - "$DB" > "$W/lock.out" 2>&1 <<'EOF' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA locking_mode=EXCLUSIVE")
c.execute("BEGIN EXCLUSIVE")
c.execute("UPDATE runs SET status = status")
print("locked", flush=True)
time.sleep(8)
c.execute("ROLLBACK")
EOF
lock=$!
for _ in $(seq 50); do grep -q locked "$W/lock.out" && break; sleep 0.1; done
GATELAB_DB_BUSY_MS=300 "$BIN" runs --db "$DB" > /dev/null 2> "$W/lk.err"; rc=$?
check "a locked registry: exit $rc, said to be locked (not 'not a gatelab registry')" \
    bash -c "test $rc -ne 0 && grep -q 'locked by another process' '$W/lk.err' && ! grep -q 'not a gatelab registry' '$W/lk.err'"
kill "$lock" 2> /dev/null; wait "$lock" 2> /dev/null

# 3. schema_version below 1
for v in -1 0; do
    cp "$DB" "$W/s$v.db"; sqlite3 "$W/s$v.db" "UPDATE schema_version SET version = $v"
    "$BIN" runs --db "$W/s$v.db" > /dev/null 2> "$W/s$v.r"; r1=$?
    "$BIN" train "$TINY" --run-id s --db "$W/s$v.db" --results "$W/sres" --quiet > /dev/null 2> "$W/s$v.t"; r2=$?
    check "schema_version $v: runs and train refuse it (exit $r1, $r2), naming the version" \
        bash -c "test $r1 -eq 1 -a $r2 -ne 0 && grep -q 'schema_version is $v, not a version gatelab writes' '$W/s$v.r' &&
                 grep -q 'schema_version is $v' '$W/s$v.t'"
done

# 4. commands that create no run create no registry
"$BIN" tag a k=v --db "$W/typo/gatelab.db" > /dev/null 2> "$W/t4"; rc=$?
check "tag with a mistyped --db: exit $rc, no registry created" \
    bash -c "test $rc -ne 0 && test ! -e '$W/typo' && grep -qE 'no registry (there|at)' '$W/t4'"
mkdir -p "$W/cwd"
(cd "$W/cwd" && GATELAB_RESULTS= "$BIN" delete a > /dev/null 2> "$W/t5"); rc=$?
check "delete with an empty GATELAB_RESULTS: exit $rc, no results/gatelab.db created" \
    bash -c "test $rc -ne 0 && test ! -e '$W/cwd/results'"
(cd "$W/cwd" && GATELAB_RESULTS= "$BIN" restore a > /dev/null 2>&1; "$BIN" runs --fix-stale > /dev/null 2>&1)
check "restore and runs --fix-stale without a registry create none either" test ! -e "$W/cwd/results"

# 5. tags whole and apart
long=$(head -c 600 /dev/zero | tr '\0' x)
"$BIN" tag a "note=$long" "semi=a; b=c" other=1 --db "$DB" > /dev/null 2>&1
check "a 600-byte tag value is listed whole in the table" grep -q "note=$long" <("$BIN" runs --db "$DB")
check "... and in JSON" bash -c "'$BIN' runs --db '$DB' --format json | python3 -c 'import json,sys; r=json.load(sys.stdin); r=r[0] if isinstance(r,list) else r; sys.exit(0 if r[\"tags\"][\"note\"]==\"x\"*600 else 1)'"
"$BIN" runs --db "$DB" --format csv > "$W/runs.csv"
check "CSV keeps tags apart: 'a; b=c' reads back as one tag of three" python3 - "$W/runs.csv" "$long" <<'EOF'
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
tags = row["tags"].split("\n")
want = ["note=" + sys.argv[2], "other=1", "semi=a; b=c"]
print(tags if tags != want else "", end="")
sys.exit(0 if sorted(tags) == sorted(want) else 1)
EOF
n=$(head -c 1100 /dev/zero | tr '\0' y)
"$BIN" tag a "huge=$n" --db "$DB" > /dev/null 2> "$W/t6"; rc=$?
check "a tag value over 1024 bytes is refused (exit $rc), saying the limit" \
    bash -c "test $rc -ne 0 && grep -q 'more than the 1024' '$W/t6'"

# 6. an unparseable params cell
sqlite3 "$DB" "UPDATE metrics SET params = '{\"k\": ' WHERE rowid = (SELECT min(rowid) FROM metrics)"
"$BIN" metrics --db "$DB" --format json > "$W/m.json" 2> "$W/m.err"; rc=$?
check "metrics with a damaged params cell: exit $rc, the cell named" \
    bash -c "test $rc -ne 0 && grep -q 'the params cell .* is not a JSON object' '$W/m.err'"
"$BIN" metrics --db "$DB" > /dev/null 2>&1; rc=$?
check "... in CSV too (exit $rc)" test $rc -ne 0

# 7. collect validates a task registry whole before it deletes anything (issue 45 items 3, 5, 6, 12)
runs_of() { sqlite3 "$1" "select run_id || ':' || status from runs order by run_id" | tr '\n' ' '; }
#    a task run that names an experiment its registry does not hold: refused, the main run kept
cp "$DB" "$W/m3.db"; sqlite3 "$W/m3.db" "UPDATE runs SET status = 'RUNNING' WHERE run_id = 'a'"
cp "$DB" "$W/t3.db"; sqlite3 "$W/t3.db" "UPDATE runs SET experiment_id = 999 WHERE run_id = 'a'"
before=$(sqlite3 "$W/m3.db" "select count(*) from params where run_id = 'a'")
"$BIN" collect "$W/m3.db" "$W/t3.db" > "$W/c3.out" 2>&1; rc=$?
check "collect: a task run naming a missing experiment is refused (exit $rc: $(head -c 200 "$W/c3.out"))" \
    bash -c "test $rc -ne 0 && grep -q \"run 'a' names experiment id 999\" '$W/c3.out' && ! grep -q '1 run merged' '$W/c3.out'"
check "... and the main registry keeps run a and its params ($(runs_of "$W/m3.db"))" \
    test "$(runs_of "$W/m3.db")" = "a:RUNNING " -a "$(sqlite3 "$W/m3.db" "select count(*) from params where run_id = 'a'")" = "$before"
#    params with their columns in another order: merged by name, not crosswise
#    (a registry another tool wrote: without gatelab's views, which SQLite's rename would refuse to leave
#    pointing at a dropped params; docs/registry.md, "Views")
cp "$DB" "$W/t3b.db"
sqlite3 "$W/t3b.db" "DROP VIEW IF EXISTS run_variant; DROP VIEW IF EXISTS run_headline; CREATE TABLE p2 (key TEXT NOT NULL, value TEXT, run_id TEXT NOT NULL REFERENCES runs(run_id),
    PRIMARY KEY (run_id, key)); INSERT INTO p2 SELECT key, value, run_id FROM params; DROP TABLE params;
    ALTER TABLE p2 RENAME TO params"
"$BIN" collect "$W/m3b.db" "$W/t3b.db" > "$W/c3b.out" 2>&1; rc=$?
check "collect: params columns in another order merge by name (exit $rc; data.file of a = $(sqlite3 "$W/m3b.db" "select value from params where run_id = 'a' and key = 'data.file'" 2>&1))" \
    bash -c "test $rc -eq 0 && test \"\$(sqlite3 '$W/m3b.db' \"select value from params where run_id = 'a' and key = 'data.file'\")\" = corpus.txt &&
             test \"\$(sqlite3 '$W/m3b.db' \"select count(*) from params where run_id <> 'a'\")\" = 0"
#    a task registry missing a column: refused, named
cp "$DB" "$W/t3c.db"; sqlite3 "$W/t3c.db" "ALTER TABLE tags RENAME COLUMN value TO val"
"$BIN" collect "$W/m3c.db" "$W/t3c.db" > "$W/c3c.out" 2>&1; rc=$?
check "collect: a task registry whose tags table lacks a column is refused, named (exit $rc)" \
    bash -c "test $rc -ne 0 && grep -q 'table tags has no column value' '$W/c3c.out'"
#    run ids train refuses
for bad in '../../evil' '-x' 'a/b'; do
    cp "$DB" "$W/t5.db"
    sqlite3 "$W/t5.db" "UPDATE runs SET run_id = '$bad'; UPDATE params SET run_id = '$bad'; UPDATE metrics SET run_id = '$bad'"
    rm -f "$W/m5.db"
    "$BIN" collect "$W/m5.db" "$W/t5.db" > "$W/c5.out" 2>&1; rc=$?
    check "collect: run id '$bad' (which train refuses) is refused (exit $rc: $(head -c 160 "$W/c5.out"))" \
        bash -c "test $rc -ne 0 && grep -q 'nothing was merged' '$W/c5.out' && test -z \"\$(sqlite3 '$W/m5.db' 'select run_id from runs' 2>/dev/null)\""
done
#    a recursive view named runs: refused at once, by runs and by collect
cp "$DB" "$W/v.db"
sqlite3 "$W/v.db" "ALTER TABLE runs RENAME TO runs_t; CREATE VIEW runs AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL
    SELECT n + 1 FROM c) SELECT r.* FROM runs_t r, c"
timeout 60 "$BIN" runs --db "$W/v.db" > "$W/v.out" 2>&1; rc=$?
check "runs on a registry whose runs is a recursive view: returns (exit $rc), says it is a view" \
    bash -c "test $rc -ne 0 -a $rc -ne 124 && grep -q 'runs is a view, not a table' '$W/v.out'"
timeout 60 "$BIN" collect "$W/mv.db" "$W/v.db" > "$W/v.out" 2>&1; rc=$?
check "collect of it: returns (exit $rc), says it is a view" \
    bash -c "test $rc -ne 0 -a $rc -ne 124 && grep -q 'runs is a view, not a table' '$W/v.out'"
cp "$DB" "$W/mv2.db"; sqlite3 "$W/mv2.db" "ALTER TABLE tags RENAME TO tags_t; CREATE VIEW tags AS SELECT * FROM tags_t"
timeout 60 "$BIN" collect "$W/mv2.db" "$DB" > "$W/v.out" 2>&1; rc=$?
check "collect into a main registry whose tags is a view: refused (exit $rc)" \
    bash -c "test $rc -ne 0 -a $rc -ne 124 && grep -q 'tags is a view, not a table' '$W/v.out'"
#    a task registry in a read-only folder with commits still in its -wal: refused, not silently skipped
if id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null; then
    mkdir -p "$W/ro6" "$W/nb6"; cp "$DB" "$W/ro6/task.db"
    python3 - "$W/ro6/task.db" <<'EOF'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("UPDATE runs SET name = 'from-the-wal'")
os._exit(0)  # no close: the commit stays in task.db-wal
EOF
    chmod -R a+rX "$W"; chmod a-w "$W/ro6"; chmod 777 "$W/nb6"
    check "the task registry's -wal holds a commit" test -s "$W/ro6/task.db-wal"
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$BIN" collect "$W/nb6/main.db" "$W/ro6/task.db" > "$W/c6.out" 2>&1; rc=$?
    check "collect of a read-only task registry with commits in its -wal: refused, naming the -wal (exit $rc: $(head -c 200 "$W/c6.out"))" \
        bash -c "test $rc -ne 0 && grep -q 'task.db-wal holds' '$W/c6.out'"
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$BIN" runs --db "$W/ro6/task.db" > /dev/null 2> "$W/r6.err"; rc=$?
    check "runs on it says the -wal holds commits it does not see (exit $rc)" \
        bash -c "test $rc -eq 0 && grep -q 'task.db-wal holds commits this read does not see' '$W/r6.err'"
    chmod u+w "$W/ro6"
else
    skip "collect from a read-only folder (needs the user nobody and setpriv)"
fi
