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
ok=1; for t in copy sort mqar; do grep -q 'data:image/svg+xml;base64' "$W/builtin/report/demo-$t.html" || ok=0; done
check "built-in tasks: one report page per task's experiment, with its figures" test $ok = 1
check "built-in tasks: no figure failed (skipped ones carry a note)" bash -c "! grep -qi 'gnuplot.*failed' '$W/b.log'"
check "built-in tasks: one experiment per task (demo-copy, demo-mqar, demo-sort), each holding only its task's runs" \
    test "$(sqlite3 "$W/builtin/gatelab.db" "select group_concat(e.name || ':' || (select count(*) from runs r where r.experiment_id = e.id and r.run_id not like e.name || '-%'), ' ') from (select * from experiments order by name) e")" = "demo-copy:0 demo-mqar:0 demo-sort:0"
F="$W/builtin/figures/demo-copy"
check "built-in tasks: the figures go to results/figures/demo-copy/, the ablation bars of the SATFormer run among them" \
    bash -c "ls '$F'/loss_step.png '$F'/ablation_demo-copy-satformer-*.png > /dev/null"
check "built-in tasks: loss_step of demo-copy draws copy runs only (one task on one axis: no curve is labelled by task)" \
    bash -c "grep -q '^satformer	wall_s' '$F/data/loss.tsv' && ! grep -qE '^(copy|sort|mqar) ' '$F/data/loss.tsv' &&
             ! ls '$F'/data/ablation_demo-sort-* 2> /dev/null | grep -q ."
check "built-in tasks: each run's gate bands and head map sit in its experiment's folder, none loose in figures/" \
    bash -c "ls '$F'/gate_bands_demo-copy-satformer-*_alpha.png '$F'/heads_demo-copy-satformer-*.png > /dev/null &&
             ! ls '$W/builtin/figures/'*.png 2> /dev/null | grep -q ."
check "built-in tasks: the Pareto plot's axes show no negative value (a loss, a share saved)" \
    bash -c "test -s '$F/pareto.svg' && ! grep -qE '<text> *-[0-9]' '$F/pareto.svg'"
check "built-in tasks: the demo fills its own TSA-vs-early-exit row (matched, an exit loss)" \
    bash -c "grep -q '^| copy | xs | demo-copy-tsa-' '$W/builtin/tables/demo-copy/tsa_vs_exit.md' && ! grep -q 'not matched' '$W/builtin/tables/demo-copy/tsa_vs_exit.md'"
check "built-in tasks: one line says what the sparse TSA loss means" \
    bash -c "grep -q '^   what it means: soft [0-9.]* vs sparse [0-9.]* nats/token' '$W/b.log'"
check "built-in tasks: tables keep their column headers (the registry list, the τ sweep)" \
    bash -c "grep -q '^run_id  *experiment  *variant' '$W/b.log' && grep -qE '^ +τ +α +TLOps %' '$W/b.log'"
check "built-in tasks: each run shows its headline, the val loss over the whole split" \
    test "$(grep -c '^   headline: val loss' "$W/b.log")" -eq 11

# Every command of the README's "main commands" on the demo's runs, as a newcomer would type them
# (those that train, sweep or serve are left to their own tests; a text prompt becomes the
# built-in task's symbols, as the README's comment says)
RB="$W/builtin"
id_of() { sqlite3 "$RB/gatelab.db" "select run_id from runs where run_id like 'demo-$1-%' order by run_id desc limit 1"; }
sat=$(id_of copy-satformer) tsa=$(id_of copy-tsa) ee=$(id_of copy-exit) msat=$(id_of mqar-satformer)
sed -n '/^## The main commands/,/^## /p' "$ROOT/README.md" | sed -n '/^```sh/,/^```/p' | grep '^build/gatelab ' |
    sed 's/ *# .*//' > "$W/readme.cmds"
n=0
while IFS= read -r line; do
    case "$line" in *" train "*|*" sweep "*|*" serve "*|*"--resume"*) continue ;; esac
    cmd=$(echo "$line" | sed -e 's|^build/gatelab|"$BIN"|' -e 's/\[--split val|test\]/--split test/' -e 's/RUN|EXPERIMENT/RUN/' \
        -e 's/\[EXPERIMENT\]/EXPERIMENT/' -e 's/lambda_sweep/EXPERIMENT/' -e "s|--out model.h5|--out $W/model.h5|" \
        -e 's/--prompt "[^"]*"/--prompt "0123456789|"/')
    case "$cmd" in *"--pair mqar"*) cmd=${cmd//RUN/$msat} ;; esac
    case "$cmd" in *"--sparse"*) cmd=${cmd//TSA --sparse/$tsa --sparse} ;; esac
    cmd=$(echo "$cmd" | sed -e "s/RUN RUN/$sat $tsa/" -e "s/EXIT/$ee/" -e "s/TSA/$tsa/" -e "s/RUN/$sat/" -e "s/EXPERIMENT/demo-copy/")
    out=$(eval "$cmd --results '$RB'" 2>&1 < /dev/null); rc=$?
    n=$((n + 1))
    check "README command on the demo's runs: $line (exit $rc$([ $rc = 0 ] || echo ": $(echo "$out" | tail -1)"))" test $rc = 0
done < "$W/readme.cmds"
check "the README's main commands were found and run ($n)" test "$n" -ge 15

# the item-5 dead ends, on the demo's runs
G() { "$BIN" "$@" --results "$RB"; }
G probe "$sat" --prompt "0123456789|0123456789" > "$W/p1" 2>&1 && G probe "$sat" --prompt "0123|4567" > "$W/p2" 2>&1
check "probe: one cache per text (two prompts, two files; neither overwritten)" \
    test "$(ls "$RB/runs/$sat/analysis/"probe_*.h5 | wc -l)" -ge 2
check "probe on a copy run: a prompt out of the task's format is called so, with the format and an example" \
    bash -c "grep -q 'not in the format run .* was trained on: the copy task' '$W/p2' && grep -q \"e.g. '0123456789|0123456789'\" '$W/p2'"
check "probe on a copy run in its format: says the task scores only the answers" grep -q 'scores only the answers' "$W/p1"
check "metrics --name 'val/*' (the split/name form compare prints) matches the val rows" \
    bash -c "[ \$('$BIN' metrics --run '$sat' --name 'val/*' --results '$RB' | wc -l) -gt 2 ] &&
             [ \$('$BIN' metrics --run '$sat' --name 'val/final.loss' --results '$RB' | grep -c ',val,final.loss,') -ge 1 ]"
check "report RUN without --html writes the HTML page" \
    bash -c "'$BIN' report '$sat' --results '$RB' --out '$W/plain.html' > /dev/null && grep -q '<html' '$W/plain.html'"
check "did you mean: a mistyped run id prefix" bash -c "'$BIN' eval demo-cpy --results '$RB' 2>&1 | grep -q 'did you mean demo-cop'"
check "did you mean: a mistyped manifest file" bash -c "cd '$ROOT' && '$BIN' train experiments/copy_tas.ini --results '$W/none' 2>&1 | grep -q 'did you mean experiments/copy_tsa.ini'"
check "did you mean: a mistyped enum value" bash -c "cd '$ROOT' && '$BIN' train experiments/copy_tsa.ini model.value_residual=satfromer --results '$W/none' 2>&1 | grep -q 'did you mean satformer'"

if [ -n "$(data_path tinyshakespeare.txt)" ]; then
    GATELAB_RESULTS="$W/text" "$ROOT/scripts/demo.sh" --quick > "$W/t.log" 2>&1
    rc=$?
    check "Tiny Shakespeare: the demo exits 0 (exit $rc)" test $rc -eq 0 || tail -30 "$W/t.log"
    check "Tiny Shakespeare: it trained on it and shows a sample" \
        bash -c "grep -q 'Tiny Shakespeare found at' '$W/t.log' && grep -q 'gatelab sample' '$W/t.log'"
    check "Tiny Shakespeare: it ends with the list of its files, and they exist" \
        bash -c "$(declare -f listed_files_exist); listed_files_exist '$W/t.log'"
    tsat=$(sqlite3 "$W/text/gatelab.db" "select run_id from runs where run_id like 'demo-text-satformer-%' limit 1")
    check "Tiny Shakespeare: the README's eval RUN --split test works on the demo's run (it keeps a test split)" \
        bash -c "'$BIN' eval '$tsat' --split test --results '$W/text' > /dev/null"
else
    skip "the demo on Tiny Shakespeare (tinyshakespeare.txt not found by \`gatelab data\`; \`make data\` fetches it)"
fi
