#!/usr/bin/env bash
# docs.sh — the documentation a clone has is whole and says what the code does:
# no reference to a file outside the repository (the old design document of
# ../shared, which a clone does not have),
# every relative link of README.md and docs/*.md reaches a file of the
# repository, the README stays a five-minute read with the two commands and its
# screenshot, names every library it links, and the commands written in the
# experiments' manifest headers run (as a dry run).
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

# the files of the checkout, .git and build outputs left out
files() { (cd "$ROOT" && find . -path ./.git -prune -o -path ./build -prune -o -path ./results -prune -o -path ./data -prune \
                            -o -type f -print | sed 's|^\./||'); }
doc=DESIGN # its name, split so that this file does not match it itself
hits=$(files | (cd "$ROOT" && xargs -d '\n' grep -l "${doc}[.]md" 2> /dev/null) | tr '\n' ' ')
check "no file of the repository points to ../shared's design document, which a clone does not have (${hits:-none})" test -z "$hits"

# relative links [text](path) and ![alt](path), anchors and web addresses left out
bad=""
for md in "$ROOT"/README.md "$ROOT"/docs/*.md; do
    dir=$(dirname "$md")
    for link in $(grep -oE '\]\([^)# ]+' "$md" | sed 's/^](//' | grep -vE '^(https?|mailto):'); do
        [ -e "$dir/$link" ] || bad="$bad ${md#"$ROOT"/}:$link"
    done
done
check "every relative link in README.md and docs/*.md reaches a file (${bad:-all do})" test -z "$bad"

n=$(wc -l < "$ROOT/README.md")
check "the README is a five-minute read ($n lines <= 250)" test "$n" -le 250
check "the README gives the two commands" \
    bash -c "grep -qE '^make demo( |$)' '$ROOT/README.md' && grep -qE '^make test( |$)' '$ROOT/README.md'"
check "the README's screenshot of the report is in the repository" test -s "$ROOT/docs/figures/report.png"
missing=""
for lib in OpenBLAS HDF5 SQLite inih jansson cmocka gnuplot; do
    grep -qE "^\| $lib( |,)" "$ROOT/README.md" || missing="$missing $lib"
done
check "the README says why each library is used (${missing:-every one})" test -z "$missing"
check "the benchmarks, the reproduction and the tests have their own pages" \
    test -s "$ROOT/docs/benchmarks.md" -a -s "$ROOT/docs/reproduction.md" -a -s "$ROOT/docs/testing.md"

# the commands a manifest's header suggests: `;   gatelab sweep …` lines, run as a dry run
bad=""
for ini in "$ROOT"/experiments/*.ini; do
    while IFS= read -r cmd; do
        [ -n "$cmd" ] || continue
        # shellcheck disable=SC2086
        (cd "$ROOT" && eval "\"$BIN\" ${cmd#gatelab } --dry-run --results \"$W/r\"") > "$W/dry" 2>&1 ||
            bad="$bad ${ini#"$ROOT"/}:'$cmd'($(head -c 160 "$W/dry" | tr '\n' ' '))"
    done < <(sed -n 's/^;[[:space:]]*\(gatelab sweep .*\)$/\1/p' "$ini")
done
check "the sweep commands in experiments/*.ini headers run (--dry-run) (${bad:-all do})" test -z "$bad"

# the README's summary of the verdicts is regenerated from the committed report, and --check
# notices a summary that is not (a copy with one verdict changed)
if [ -f "$ROOT/docs/report/REPORT.md" ]; then
    check "the README's verdict summary is docs/report/REPORT.md's (scripts/readme_verdicts.sh --check)" \
        bash "$ROOT/scripts/readme_verdicts.sh" --check
    sed '/^<!-- verdicts: begin/{n;s/: /: 99, /}' "$ROOT/README.md" > "$W/README.md"
    check "a README whose summary differs from the report fails --check" \
        bash -c "! bash '$ROOT/scripts/readme_verdicts.sh' --check '$ROOT/docs/report/REPORT.md' '$W/README.md' 2> /dev/null"
fi
