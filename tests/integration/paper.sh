#!/usr/bin/env bash
# paper.sh — `make paper PRESET=smoke` end to end: every stage of
# scripts/paper.sh on minute-sized runs, a REPORT.md with one row per claim
# of experiments/paper/claims.ini (each computed or "not measured: <reason>"), and a rerun that trains and measures nothing again.
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
C=experiments/paper/claims.ini
want=$(grep -E '^\[' "$C" | grep -vcE '^\[(report|disclosure|question|summary|table)')
ids=$(grep -E '^\[' "$C" | grep -vE '^\[(report|disclosure|question|summary|table)' | tr -d '[]')
rows=$(sed -n '/^## Rows/,/^## Primary endpoints/p' "$R" | grep -cE '^\| [^-| ][^|]* \| ')
check "one report row per row of claims.ini: $want (got $((rows - 1)) plus the header)" [ "$rows" -eq $((want + 1)) ]
missing=0
for id in $ids; do grep -qE "^\| $id \|" "$R" || { echo "row $id missing"; missing=$((missing + 1)); }; done
check "every claims.ini row is in the report ($missing missing)" [ "$missing" -eq 0 ]
bad=$(sed -n '/^## Rows/,/^## Primary endpoints/p' "$R" | grep -E '^\| [0-9A-Z]' | \
      grep -vcE '\*\*reproduced\*\*|\*\*not reproduced\*\*|\*\*direction reproduced, magnitude differs\*\*|\*inconclusive\*|\*uninformative\*|\| described \(|operating point not reached \(|not judged \(premise failed\) \(|not measured: ')
check "every row has a verdict or says 'not measured: <reason>' ($bad without)" [ "$bad" -eq 0 ]
check "claims 1 and 2 (copy, sort: no data set needed) are computed" \
    bash -c "! grep -E '^\| (1a|1b|2a|2b) \|' '$R' | grep -qE '\| not measured( \||: )'"
check "TSA rows say which quality they read (hard, or soft because hard was not measured)" \
    bash -c "grep -E '^\| 1a \|' '$R' | grep -qE 'val/hard.tlops_saved|not measured\)'"
check "the report lists the disclosed changes of method" grep -q '^## Disclosed changes' "$R"
nq=$(grep -cE '^\[question ' "$C")
check "the Questions table has one line per [question] of claims.ini ($nq), each with its state and rows" \
    bash -c "[ \$(sed -n '/^## Questions/,/^## Claims/p' '$R' | grep -cE '^\| Q[0-9]+\. .*\| (answered|partly|not yet)[^|]* \| [0-9A-Za-z-]+ ') -eq $nq ]"
check "the report states its pre-registration" grep -q '^Pre-registration:' "$R"
check "the forest plot's numbers are written" [ -s "$PAPER_RESULTS/figures/paper_forest.tsv" ]
check "the p histogram of TSA on copy and sort is drawn, its shares summing to 1 per series" \
    bash -c "grep -q '^!\[paper_p_hist\](figures/paper_p_hist.png)' '$R' && awk -F'\t' 'NR > 1 { for (k = 2; k <= NF; k += 2) s[k] += \$k; nc = NF } END { if (nc < 3) exit 1; for (k = 2; k <= nc; k += 2) if (s[k] < 0.999 || s[k] > 1.001) exit 1 }' '$PAPER_RESULTS/figures/paper_p_hist.tsv'"
check "no published number as a C literal of the report or post code (0.726, 0.549, 0.71)" \
    bash -c "! grep -nE '0\.726|0\.833|0\.549|0\.341|0\.0071|1\.75|1\.82' analysis/paper/paper.c analysis/paper/claims.c harness/cli/cmd_paper.c"
if grep -q 'SKIPPED' "$W/first.log"; then
    skip "make paper PRESET=smoke on Tiny Shakespeare and enwik8 (text groups: $(grep -m1 -o 'SKIPPED: [^(]*' "$W/first.log"))"
else
    check "with the data set, claim 9 (Tiny Shakespeare) is measured: each budget of row 9a has its own verdict" \
        bash -c "grep -E '^\| 9a \|' '$R' | grep -q '→ .*(secondary: does not decide the row)'"
    check "the report links figures" grep -q '^## Figures' "$R"
    check "paper post matched early exit to the α read from claims.ini, saying hard or soft" \
        grep -qE 'early exit matched to the (hard|soft) α .*the paper.s α [0-9.]+' "$W/first.log"
fi
check "the provenance of every row with runs names the OpenBLAS kernel they recorded (trained and benched alike)" \
    bash -c "grep -E '^- \*\*.* Runs: ' '$R' > '$W/prov.txt' && [ -s '$W/prov.txt' ] && ! grep -v 'OpenBLAS kernel [A-Za-z0-9]' '$W/prov.txt' && ! grep 'not recorded' '$W/prov.txt'"
# "Made by" reruns what the row read: the plan lines of its runs' groups, no other (it named the
# first plan line listing the claim, e.g. the dense partners' sweep for TSA's own rows).
made_by_groups() {  # a provenance line -> "runs-groups|made-by-groups", each sorted and distinct
    local runs made
    runs=$(sed -n 's/.* Runs: \([^(]*\) (trained.*/\1/p' <<<"$1" | tr ',' '\n' | sed -n 's/^ *paper-\(.*\)-[0-9]*-[0-9a-f]*$/\1/p' | sort -u | tr '\n' ' ')
    made=$(grep -o 'log\.experiment=paper-[A-Za-z0-9_-]*' <<<"$1" | sed 's/.*=paper-//' | sort -u | tr '\n' ' ')
    echo "$runs|$made"
}
bad_made=0; n_made=0
while IFS= read -r line; do
    n_made=$((n_made + 1)); g=$(made_by_groups "$line")
    [ "${g%%|*}" = "${g#*|}" ] || { echo "  ${line:0:12}…: runs of ${g%%|*}, made by ${g#*|}"; bad_made=$((bad_made + 1)); }
done < <(grep -E '^- \*\*.* Runs: paper-.* Made by: ' "$R")
check "each row's 'Made by' is the sweep of the groups whose runs it read ($n_made rows, $bad_made wrong)" \
    [ "$n_made" -gt 0 -a "$bad_made" -eq 0 ]
made_by_dir() { # every "Made by" says --results DIR, none names the folder read, the section names it once
    local made; made=$(grep -E '^- \*\*.* Made by: ' "$R")
    grep -qF -- '--results DIR`' <<<"$made" && ! grep -qF -- "--results $PAPER_RESULTS" <<<"$made" &&
        grep -qF "this report read \`$PAPER_RESULTS\`" "$R"
}
check "'Made by' says --results DIR and the section names the folder read once (a regenerated report does not change with it)" made_by_dir
check "the report states the whole-split loss of every run" grep -q '^## Every run' "$R"
check "the bench stage measured the costs (experiment cost-paper: $(grep -c . "$PAPER_RESULTS/bench.jsonl" 2>/dev/null) lines)" \
    bash -c "sqlite3 '$PAPER_RESULTS/gatelab.db' \"select count(*) from runs where run_id like 'cost-paper-s-%'\" | grep -qx 7"
check "claims 8 and 14 are answered from the bench, not from sweep timings" \
    bash -c "grep -E '^\| (8a|14a) \|' '$R' | grep -c 'interleaved rounds' | grep -qx 2"
cnt() { sqlite3 "$PAPER_RESULTS/gatelab.db" "select count(*) from runs where run_id like '$1'"; }
check "every cost run records the commit of the bench binary that measured it (the report's provenance)" \
    [ "$(sqlite3 "$PAPER_RESULTS/gatelab.db" "select count(*) from runs where run_id like 'cost-paper%' and (git_commit is null or length(git_commit) != 40)")" = 0 ]
check "the bench stage timed plain, SATFormer, Hyper-Connections and MUDDFormer at 12 and 24 blocks" \
    [ "$(cnt 'cost-paper-L12-s-%')/$(cnt 'cost-paper-L24-s-%')/$(cnt 'cost-paper-mem-L24-s-%')" = 4/4/3 ]
check "... with 12 and 24 blocks in their recorded configs" \
    [ "$(sqlite3 "$PAPER_RESULTS/gatelab.db" "select group_concat(distinct value) from params where key = 'model.n_layer' and run_id like 'cost-paper-L24-%'")" = 24 ]
if grep -q 'SKIPPED' "$W/first.log"; then
    check "without Tiny Shakespeare there is no TSA checkpoint: the bench stage says trained sparse inference was not measured" \
        grep -q 'trained sparse inference (claim 8) not measured' "$W/first.log"
else
    ck=$(sqlite3 "$PAPER_RESULTS/gatelab.db" "select value from tags where run_id = 'cost-paper-ckpt-trained-sparse' and key = 'checkpoint'")
    check "trained sparse inference measured a TSA run of the claim-8 line ($ck)" \
        bash -c "case '$ck' in '$PAPER_RESULTS/runs/paper-tsa-'*) exit 0;; *) exit 1;; esac"
    check "... with the α its routers reached at each batch, a share of blocks in (0, 1]" \
        [ "$(sqlite3 "$PAPER_RESULTS/gatelab.db" "select count(*) from metrics where run_id = 'cost-paper-ckpt-trained-sparse' and name like 'sparse_alpha_b%' and value > 0 and value <= 1")" = 3 ]
    dense_run=$(ls -d "$PAPER_RESULTS"/runs/paper-sat-000-* | head -1)
    check "bench --checkpoint of a dense run: refused, naming its depth_routing" \
        bash -c "! '$(dirname "$BIN")/bench_gatelab' --quick --no-sgemm --variants '' --checkpoint '$dense_run' 2>&1 | grep -q 'depth_routing = none has no sparse inference' && exit 1; ! '$(dirname "$BIN")/bench_gatelab' --quick --no-sgemm --variants '' --checkpoint '$dense_run' > /dev/null 2>&1"
    check "row 8d reads the trained run beside its ideal at the α reached" \
        bash -c "grep -E '^\| 8d \|' '$R' | grep -q 'sparse_ideal_b1 = .* at the α it reached'"
fi
check "no claim-4 (enwik8) TSA line in the smoke plan: the bench stage says the enwik8 break-even was not measured" \
    grep -q 'no finished TSA run of a claim-4 plan line (or PAPER_SPARSE_RUN_ENWIK8): trained sparse inference (claim 4) not measured' "$W/first.log"

scripts/paper.sh smoke > "$W/second.log" 2>&1; rc=$?
check "rerun exits 0" [ "$rc" -eq 0 ]
trained=$(grep -c 'started paper-' "$W/second.log")
measured=$(grep -c '^\[paper post\] [a-z].*: ' "$W/second.log")
check "rerun trains nothing ($trained started) and measures nothing ($measured)" [ "$trained" -eq 0 -a "$measured" -eq 0 ]
want_parts=6; grep -q 'SKIPPED' "$W/first.log" && want_parts=5
check "rerun does not bench again ($want_parts parts already measured)" [ "$(grep -c 'bench: already measured' "$W/second.log")" = "$want_parts" ]
