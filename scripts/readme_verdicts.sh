#!/usr/bin/env bash
# readme_verdicts.sh [REPORT] [README] — regenerate the README's summary of the verdicts from a
# generated reproduction report: its first screen, the "## What to believe" table (claims | in plain
# words | verdict | the number | tested at), one line per table line — each claim number on exactly
# one line, with one verdict (where the claims of a line, or the parts of one claim, differ, the
# report's verdict cell names each, and so does the README) — written between the README's markers
#   <!-- verdicts: begin (scripts/readme_verdicts.sh) -->  and  <!-- verdicts: end -->
# (default REPORT docs/report/REPORT.md, README README.md).  --check: exit 1, saying so, when the
# README's block is not what REPORT gives (tests/integration/docs.sh), and write nothing.
set -euo pipefail
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
cd "$(dirname "$0")/.."
report="${1:-docs/report/REPORT.md}"; readme="${2:-README.md}"
begin='<!-- verdicts: begin (scripts/readme_verdicts.sh) -->'; end='<!-- verdicts: end -->'
[ -f "$report" ] || { echo "readme_verdicts: no report $report (gatelab paper report writes it)" >&2; exit 2; }
grep -qxF "$begin" "$readme" && grep -qxF "$end" "$readme" ||
    { echo "readme_verdicts: $readme lacks the markers '$begin' and '$end'" >&2; exit 2; }
# "| claims | words | verdict | number | tested at |" lines of the What-to-believe section, header and
# rule left out: "- **Claims 1, 2** — words: verdict (row 2b: number)"
block=$(awk -F' \\| ' '
    /^## What to believe/ { on = 1; next }
    on && /^## / { on = 0 }
    on && /^\| / && !/^\| claims \|/ && !/^\| ---/ {
        c = $1; sub(/^\| /, "", c); n = split(c, w, " ")
        label = (n > 1 ? "Claims " : "Claim ") w[1]
        for (i = 2; i <= n; i++) label = label (i == n ? " and " : ", ") w[i]
        printf "- **%s** — %s: %s (%s)\n", label, $2, $3, $4
    }' "$report")
[ -n "$block" ] || { echo "readme_verdicts: $report has no '## What to believe' table" >&2; exit 2; }
new=$(awk -v b="$begin" -v e="$end" -v blk="$block" '
    $0 == b { print; print blk; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' "$readme")
if [ $check = 1 ]; then
    [ "$new" = "$(cat "$readme")" ] && exit 0
    echo "readme_verdicts: $readme's summary of the verdicts is not $report's (run scripts/readme_verdicts.sh)" >&2
    exit 1
fi
tmp=$(mktemp "$readme.XXXXXX")
printf '%s\n' "$new" > "$tmp" && mv "$tmp" "$readme"
