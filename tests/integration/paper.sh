#!/usr/bin/env bash
# paper.sh — `make paper PRESET=smoke` end to end: every stage of
# scripts/paper.sh on minute-sized runs, a REPORT.md with one row per claim
# (1-14, claim 3 twice), and a rerun that trains and measures nothing again.
# Without Tiny Shakespeare (a bare clone) the text groups are skipped with a
# visible reason and their claims read "not run"; the tasks still run.
set -u
. "$(dirname "$0")/lib.sh"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
W="$(mktemp -d "${TMPDIR:-/tmp}/gatelab-paper-XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT; echo "work folder: $W"
export PAPER_RESULTS="$W/res" GATELAB_BIN="$BIN"

scripts/paper.sh smoke > "$W/first.log" 2>&1; rc=$?
check "make paper PRESET=smoke exits 0 (log $W/first.log)" [ "$rc" -eq 0 ]
R="$PAPER_RESULTS/REPORT.md"
check "REPORT.md written" [ -s "$R" ]
rows=$(grep -cE '^\| (1|2|3|3 \(paper scale\)|4|5|6|7|8|9|10|11|12|13|14) \|' "$R")
check "one row per claim: 15 rows (got $rows)" [ "$rows" -eq 15 ]
bad=$(grep -E '^\| [0-9]' "$R" | grep -vcE 'reproduced\*\*|inconclusive\*|not run')
check "every row has a verdict or says 'not run' ($bad without)" [ "$bad" -eq 0 ]
check "claims 1 and 2 (copy, sort: no data set needed) have a verdict" \
    bash -c "grep -E '^\| (1|2) \|' '$R' | grep -vq 'not run'"
if grep -q 'SKIPPED' "$W/first.log"; then
    skip "make paper PRESET=smoke on Tiny Shakespeare and enwik8 (text groups: $(grep -m1 -o 'SKIPPED: [^(]*' "$W/first.log"))"
else
    check "with the data set, claim 9 (Tiny Shakespeare) has a verdict" \
        bash -c "grep -E '^\| 9 \|' '$R' | grep -vq 'not run'"
    check "the report links figures" grep -q '^## Figures' "$R"
fi
check "the report states the whole-split loss of every run" grep -q '^## Every run' "$R"
check "the bench stage measured the costs (experiment cost-paper: $(grep -c . "$PAPER_RESULTS/bench.jsonl" 2>/dev/null) lines)" \
    bash -c "sqlite3 '$PAPER_RESULTS/gatelab.db' \"select count(*) from runs where run_id like 'cost-paper-s-%'\" | grep -qx 7"
check "claims 8 and 14 are answered from the bench, not from sweep timings" \
    bash -c "grep -E '^\| (8|14) \|' '$R' | grep -c 'interleaved rounds' | grep -qx 2"

scripts/paper.sh smoke > "$W/second.log" 2>&1; rc=$?
check "rerun exits 0" [ "$rc" -eq 0 ]
trained=$(grep -c 'started paper-' "$W/second.log")
measured=$(grep -c '^\[paper post\] [a-z].*: ' "$W/second.log")
check "rerun trains nothing ($trained started) and measures nothing ($measured)" [ "$trained" -eq 0 -a "$measured" -eq 0 ]
check "rerun does not bench again" grep -q 'bench: already measured' "$W/second.log"
