#!/usr/bin/env bash
# snapshot_registry.sh LIVE.db OUT.db PATTERN... — a committed snapshot of some
# runs of a live registry (docs/report/registries/README.md): a consistent copy
# (sqlite3 .backup, the live registry is only read), every run whose id matches
# none of the SQL LIKE patterns deleted with its rows, experiments left without
# runs removed, then VACUUM INTO OUT.db.  OUT.db must not exist (a snapshot is
# never overwritten in place: write a new file, check it, then move it).
# Restore: gatelab collect MAIN.db OUT.db [more snapshots...].
#   scripts/snapshot_registry.sh /work/runs/decisive/gatelab.db decisive-cost.db 'cost-paper%'
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 LIVE.db OUT.db PATTERN... (SQL LIKE patterns of run ids)" >&2; exit 2; }
live=$1 out=$2; shift 2
[ -f "$live" ] || { echo "snapshot: $live: no such registry" >&2; exit 1; }
[ -e "$out" ] && { echo "snapshot: $out exists; write a new file and move it over after checking it" >&2; exit 1; }
command -v sqlite3 > /dev/null || { echo "snapshot: sqlite3 not installed (apt-get install sqlite3)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sqlite3 -readonly "$live" ".backup '$tmp/copy.db'"
keep="0"
for p in "$@"; do keep="$keep OR run_id LIKE '${p//\'/\'\'}'"; done
sqlite3 "$tmp/copy.db" <<SQL
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TEMP TABLE drop_ids AS SELECT run_id FROM runs WHERE NOT ($keep);
DELETE FROM metrics WHERE run_id IN (SELECT run_id FROM drop_ids);
DELETE FROM params WHERE run_id IN (SELECT run_id FROM drop_ids);
DELETE FROM artifacts WHERE run_id IN (SELECT run_id FROM drop_ids);
DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM drop_ids);
DELETE FROM tags WHERE run_id IN (SELECT run_id FROM drop_ids);
DELETE FROM runs WHERE run_id IN (SELECT run_id FROM drop_ids);
DELETE FROM experiments WHERE id NOT IN (SELECT DISTINCT experiment_id FROM runs);
COMMIT;
VACUUM INTO '$tmp/out.db';
SQL
n=$(sqlite3 "$tmp/out.db" "SELECT count(*) FROM runs")
[ "$n" -gt 0 ] || { echo "snapshot: no run of $live matches $*; nothing written" >&2; exit 1; }
mv "$tmp/out.db" "$out"
echo "snapshot: $n runs of $live into $out ($(stat -c %s "$out") bytes)"
