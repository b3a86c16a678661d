#!/bin/bash
# registry_snapshots.sh — the registries that exist on disk still open and
# read (harness/store/registry_schema.c: only schema 3 is read, and every
# registry made so far is at 3).  On COPIES of the committed snapshots
# docs/report/registries/*.db (with their WAL files):
#   - each is at schema 3, and `runs`, `metrics`, `compare` read it;
#   - `metrics` prints one line per metric row of a visible run (the count
#     from sqlite3 itself);
#   - a registry created by this gatelab (`collect` into a new file) has the
#     same tables, columns (name, type, NOT NULL, default, key position, in
#     order) and indexes as the snapshot,
#     which the old upgrade chain made, and reads back the same rows;
#   - the snapshot files themselves are unchanged (checksums before and after).
# Needs sqlite3.  Nothing here opens a snapshot in place.
source "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SNAP="$ROOT/docs/report/registries"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
command -v sqlite3 > /dev/null || { skip "registry snapshots: sqlite3 not installed"; exit 0; }
ls "$SNAP"/*.db > /dev/null 2>&1 || { skip "registry snapshots: no docs/report/registries/*.db"; exit 0; }
sums_before=$(cd "$SNAP" && sha256sum ./*.db ./*.db-wal 2> /dev/null)

compare_json() { "$BIN" compare "$@" --db "$DB" --format json > /dev/null 2>> "$W/compare.err"; }

# the shape of a registry: every table's columns and every index, in order
shape() {
    sqlite3 "$1" "SELECT m.name, p.cid, p.name, p.type, p.\"notnull\", coalesce(p.dflt_value, ''), p.pk
                  FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid;
                  SELECT m.name, i.name, group_concat(c.name, ',') FROM sqlite_master m, pragma_index_list(m.name) i,
                  pragma_index_info(i.name) c WHERE m.type = 'table' GROUP BY m.name, i.name ORDER BY m.name, i.name;"
}

for src in "$SNAP"/*.db; do
    b=$(basename "$src" .db)
    cp "$src" "$W/$b.db"
    [ -f "$src-wal" ] && cp "$src-wal" "$W/$b.db-wal"
    DB="$W/$b.db"
    check "$b: schema 3" [ "$(sqlite3 "$DB" 'SELECT version FROM schema_version')" = 3 ]
    "$BIN" runs --db "$DB" --format csv > "$W/$b.runs" 2> "$W/$b.err"
    check "$b: runs lists every visible run" \
        [ "$(($(wc -l < "$W/$b.runs") - 1))" = "$(sqlite3 "$DB" 'SELECT count(*) FROM runs WHERE deleted_time IS NULL')" ]
    "$BIN" metrics --db "$DB" > "$W/$b.metrics" 2> "$W/$b.err"
    want=$(sqlite3 "$DB" "SELECT count(*) FROM metrics m JOIN runs r USING (run_id) WHERE r.deleted_time IS NULL")
    check "$b: metrics prints its $want rows" [ "$(($(wc -l < "$W/$b.metrics") - 1))" = "$want" ]
    two=$(tail -n +2 "$W/$b.runs" | cut -d, -f1 | head -2)
    # (the redirection inside a function: on the check line it would swallow the PASS/FAIL line too)
    if [ "$(printf '%s\n' "$two" | grep -c .)" -ge 2 ]; then
        # shellcheck disable=SC2086 # two run ids
        check "$b: compare reads two runs" compare_json $two
    else
        skip "$b: compare needs two runs (this snapshot holds one)"
    fi
    before=$(sha256sum < "$DB")
    "$BIN" collect "$W/$b.fresh.db" "$DB" > /dev/null 2> "$W/$b.err"
    check "$b: collect leaves the file it merges byte for byte as it was" [ "$before" = "$(sha256sum < "$DB")" ]
    check "$b: a registry this gatelab creates has the snapshot's shape" \
        diff <(shape "$DB") <(shape "$W/$b.fresh.db")
    "$BIN" metrics --db "$W/$b.fresh.db" > "$W/$b.fresh.metrics" 2> "$W/$b.err"
    check "$b: collected into a new registry, metrics reads the same rows" \
        cmp "$W/$b.metrics" "$W/$b.fresh.metrics"
done > "$W/out" 2>&1
cat "$W/out"
# scripts/snapshot_registry.sh: a snapshot of some runs keeps exactly those
# runs, each with all its metric rows, and collect brings them back whole.
SNAPSH="$ROOT/scripts/snapshot_registry.sh"
not() { ! "$@" > /dev/null 2>&1; }
src="$SNAP/decisive.db"
if [ -f "$src" ]; then
    cp "$src" "$W/live.db"
    first=$(sqlite3 "$W/live.db" "SELECT run_id FROM runs WHERE deleted_time IS NULL ORDER BY run_id LIMIT 1")
    pat="${first%-*-*}-%"
    "$SNAPSH" "$W/live.db" "$W/part.db" "$pat" > /dev/null 2> "$W/snap.err"
    check "snapshot_registry: keeps only the runs matching $pat" \
        [ "$(sqlite3 "$W/part.db" 'SELECT group_concat(run_id) FROM (SELECT run_id FROM runs ORDER BY run_id)')" = \
          "$(sqlite3 "$W/live.db" "SELECT group_concat(run_id) FROM (SELECT run_id FROM runs WHERE run_id LIKE '$pat' ORDER BY run_id)")" ]
    check "snapshot_registry: every metric row of those runs, no other" \
        [ "$(sqlite3 "$W/part.db" 'SELECT count(*) FROM metrics')" = \
          "$(sqlite3 "$W/live.db" "SELECT count(*) FROM metrics WHERE run_id LIKE '$pat'")" ]
    check "snapshot_registry: the live registry is unchanged" cmp "$src" "$W/live.db"
    check "snapshot_registry: refuses to overwrite a snapshot" not "$SNAPSH" "$W/live.db" "$W/part.db" "$pat"
    check "snapshot_registry: no run matches: refused, nothing written" not "$SNAPSH" "$W/live.db" "$W/none.db" 'no-such-run%'
    check "snapshot_registry: ... and no file" [ ! -e "$W/none.db" ]
    "$BIN" collect "$W/back.db" "$W/part.db" > /dev/null 2>&1
    check "snapshot_registry: collect reads it back" \
        [ "$(sqlite3 "$W/back.db" 'SELECT count(*) FROM metrics')" = "$(sqlite3 "$W/part.db" 'SELECT count(*) FROM metrics')" ]
    # the registry connection takes URIs (for the read-only ATTACH); a path
    # that starts with "file:" is still a path
    (cd "$W" && "$BIN" collect 'file:odd?.db' part.db > /dev/null 2>&1)
    check "a registry path that starts with file: is a plain file name" \
        [ "$(sqlite3 "$W/file:odd?.db" 'SELECT count(*) FROM runs')" = "$(sqlite3 "$W/part.db" 'SELECT count(*) FROM runs')" ]
fi
check "the snapshots themselves are unchanged" [ "$sums_before" = "$(cd "$SNAP" && sha256sum ./*.db ./*.db-wal 2> /dev/null)" ]
