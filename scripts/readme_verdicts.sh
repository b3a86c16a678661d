#!/usr/bin/env bash
# readme_verdicts.sh [REPORT] [README] — regenerate the README's summary of the verdicts from a
# generated reproduction report: the claims of REPORT's "## Claims" table (claim | verdict | rows),
# one line per verdict, written between the README's markers
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
# "| claim | verdict | rows |" lines of the Claims section, header and rule left out; a verdict's
# markdown emphasis kept, claims joined in the report's order under each verdict in a fixed order
block=$(awk -F' \\| ' '
    /^## Claims/ { on = 1; next }
    on && /^## / { on = 0 }
    on && /^\| / && !/^\| claim \|/ && !/^\| ---/ {
        c = $1; sub(/^\| /, "", c); v = $2
        key = v; gsub(/\*/, "", key)
        if (!(key in list)) { vis[key] = v; list[key] = c } else list[key] = list[key] ", " c
    }
    END {
        n = split("reproduced|direction reproduced, magnitude differs|not reproduced|inconclusive|uninformative|described|not measured", order, "|")
        for (i = 1; i <= n; i++) if (order[i] in list) printf "- %s: %s\n", vis[order[i]], list[order[i]]
        for (k in list) { known = 0; for (i = 1; i <= n; i++) if (order[i] == k) known = 1
                          if (!known) printf "- %s: %s\n", vis[k], list[k] }
    }' "$report")
[ -n "$block" ] || { echo "readme_verdicts: $report has no '## Claims' table" >&2; exit 2; }
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
