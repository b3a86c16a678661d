#!/usr/bin/env bash
# demo.sh — `make demo` end to end (scripts/demo.sh --quick: few steps): on the
# built-in tasks (what a bare clone without data runs) it exits 0, trains the
# 11 runs, and every file it lists at the end exists; where Tiny Shakespeare
# is found, the same on it (skipped, saying so, where it is not).
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_BIN="$BIN" OMP_NUM_THREADS=1

listed_files_exist() { # log: every path after "Files:" that names a file or folder exists
    local log=$1 bad=0 p
    for p in $(sed -n '/^Files:/,$p' "$log" | grep -oE '/[^ ]+' | grep -v '[*<]'); do
        [ -e "$p" ] || { echo "listed but missing: $p"; bad=1; }
    done
    return $bad
}

GATELAB_RESULTS="$W/builtin" "$ROOT/scripts/demo.sh" --quick --builtin > "$W/b.log" 2>&1
rc=$?
check "built-in tasks: the demo exits 0 (exit $rc)" test $rc -eq 0 || tail -30 "$W/b.log"
check "built-in tasks: copy, sort and MQAR runs, 11 FINISHED" \
    test "$(sqlite3 "$W/builtin/gatelab.db" "select count(*) from runs where status='FINISHED'")" -eq 11
check "built-in tasks: it ends with the list of its files, and they exist" \
    bash -c "grep -q '^Files:' '$W/b.log' && $(declare -f listed_files_exist); listed_files_exist '$W/b.log'"
check "built-in tasks: the report page is there with its figures" \
    bash -c "grep -q 'data:image/svg+xml;base64' '$W/builtin/report/demo.html'"
check "built-in tasks: no figure failed (skipped ones carry a note)" bash -c "! grep -qi 'gnuplot.*failed' '$W/b.log'"
F="$W/builtin/figures/demo"
check "built-in tasks: the figures go to results/figures/demo/, the ablation bars of the SATFormer run among them" \
    bash -c "ls '$F'/loss_step.png '$F'/ablation_demo-copy-satformer-*.png > /dev/null"
check "built-in tasks: the Pareto plot's axes show no negative value (a loss, a share saved)" \
    bash -c "test -s '$F/pareto.svg' && ! grep -qE '<text> *-[0-9]' '$F/pareto.svg'"
check "built-in tasks: the demo fills its own TSA-vs-early-exit row (matched, an exit loss)" \
    bash -c "grep -q '^| copy | xs | demo-copy-tsa-' '$W/builtin/tables/tsa_vs_exit.md' && ! grep -q 'not matched' '$W/builtin/tables/tsa_vs_exit.md'"
check "built-in tasks: one line says what the sparse TSA loss means" \
    bash -c "grep -q '^   what it means: soft [0-9.]* vs sparse [0-9.]* nats/token' '$W/b.log'"
check "built-in tasks: tables keep their column headers (the registry list, the τ sweep)" \
    bash -c "grep -q '^run_id  *experiment  *variant' '$W/b.log' && grep -qE '^ +τ +α +TLOps %' '$W/b.log'"
check "built-in tasks: each run shows its headline, the val loss over the whole split" \
    test "$(grep -c '^   headline: val loss' "$W/b.log")" -eq 11

if [ -n "$(data_path tinyshakespeare.txt)" ]; then
    GATELAB_RESULTS="$W/text" "$ROOT/scripts/demo.sh" --quick > "$W/t.log" 2>&1
    rc=$?
    check "Tiny Shakespeare: the demo exits 0 (exit $rc)" test $rc -eq 0 || tail -30 "$W/t.log"
    check "Tiny Shakespeare: it trained on it and shows a sample" \
        bash -c "grep -q 'Tiny Shakespeare found at' '$W/t.log' && grep -q 'gatelab sample' '$W/t.log'"
    check "Tiny Shakespeare: it ends with the list of its files, and they exist" \
        bash -c "$(declare -f listed_files_exist); listed_files_exist '$W/t.log'"
else
    skip "the demo on Tiny Shakespeare (tinyshakespeare.txt not found by \`gatelab data\`; \`make data\` fetches it)"
fi
