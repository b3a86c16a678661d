#!/bin/bash
# decisive_workers.sh — the script that restores round two's live registries on a replaced machine
# (scripts/decisive_workers.sh): `restore` builds them from the committed snapshots with every run
# of every snapshot, leaves an existing registry and the snapshots untouched, and the commands that
# start trainings refuse, naming the step to run first, where a registry or binary is missing.
# Nothing here trains (`build`, `g4` and `shk` need clones and hours).
source "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SNAP="$ROOT/docs/report/registries"
S="$ROOT/scripts/decisive_workers.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
command -v sqlite3 > /dev/null || { skip "decisive workers: sqlite3 not installed"; exit 0; }
ls "$SNAP"/decisive*.db > /dev/null 2>&1 || { skip "decisive workers: no docs/report/registries/decisive*.db"; exit 0; }
export GATELAB_BIN="$BIN" RUNS="$W/runs"
sums_before=$(cd "$SNAP" && sha256sum ./*.db)

bash "$S" restore 2> "$W/restore.err"
check "restore exits 0" test $? -eq 0
# every run of every snapshot, once (a run in two files is one run of the registry)
want=$(for f in "$SNAP"/decisive*.db; do sqlite3 -readonly "$f" "SELECT run_id FROM runs"; done | sort -u | wc -l)
got=$(sqlite3 -readonly "$RUNS/decisive/gatelab.db" "SELECT count(*) FROM runs")
check "restore: the live registry holds the snapshots' $want runs (got $got)" test "$got" -eq "$want"
wantp=$(for f in "$SNAP"/pilot*.db; do sqlite3 -readonly "$f" "SELECT run_id FROM runs"; done | sort -u | wc -l)
gotp=$(sqlite3 -readonly "$RUNS/pilot/gatelab.db" "SELECT count(*) FROM runs")
check "restore: the pilot registry holds the snapshots' $wantp runs (got $gotp)" test "$gotp" -eq "$wantp"
sqlite3 "$RUNS/decisive/gatelab.db" "UPDATE runs SET status = 'KILLED' WHERE run_id = (SELECT min(run_id) FROM runs)"
live=$(sha256sum < "$RUNS/decisive/gatelab.db")
bash "$S" restore 2> "$W/again.err"
check "restore again leaves the existing registry alone" test "$(sha256sum < "$RUNS/decisive/gatelab.db")" = "$live"
check "restore again says so" grep -q "exists; left alone" "$W/again.err"
check "the snapshots are unchanged" test "$(cd "$SNAP" && sha256sum ./*.db)" = "$sums_before"

bash "$S" shk 2> "$W/shk.err"; rc=$?
check "shk without a training binary exits 1 (got $rc)" test "$rc" -eq 1
check "shk names the build step" grep -q "run '.*decisive_workers.sh build' first" "$W/shk.err"
RUNS="$W/none" bash "$S" g4 2> "$W/g4.err"; rc=$?
check "g4 without a registry exits 1 (got $rc)" test "$rc" -eq 1
check "g4 names the restore step" grep -q "run '.*decisive_workers.sh restore' first" "$W/g4.err"
bash "$S" bogus 2> /dev/null; rc=$?
check "an unknown command exits 2 (got $rc)" test "$rc" -eq 2
# every group the shk worker names is a line of the plan
for g in $(sed -n '/^SHK_RUNS="/,/"$/p' "$S" | tr -d '"' | sed 's/^SHK_RUNS=//' | awk '{ print $1 }' | sort -u); do
    check "shk's group $g is a line of decisive.plan" grep -qE "^$g[[:space:]]" "$ROOT/experiments/paper/decisive.plan"
done
