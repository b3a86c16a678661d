#!/usr/bin/env bash
# resolve.sh — what a name on the command line means (issue 21), on the real
# binary, real run folders and real registries (read back with sqlite3):
#
#   one resolver for every RUN argument and run flag: exact id, unique prefix,
#   or a run folder (which brings its own registry); ambiguous and unknown
#   are errors naming the candidates / the near miss; compare no longer
#   crashes on either; eval --match-run PREFIX; metrics --run X unknown fails;
#   unknown experiments and gates are errors; did-you-mean for commands, flags
#   and values; values in any case; train --resume RUN alone continues from the
#   run's config.ini and ends bit for bit like a run never stopped.
#
# Prints one PASS/FAIL line per check.  Needs $GATELAB_BIN, sqlite3.
set -u
. "$(dirname "$0")/lib.sh"
W="$(mktemp -d "${TMPDIR:-/tmp}/gatelab-resolve-XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1 # tiny models: one thread is fastest and immune to a busy machine
command -v sqlite3 > /dev/null || { fail "sqlite3 missing"; exit 1; }
R="$W/results"; R2="$W/other"
mkdir -p "$W/elsewhere"
q() { sqlite3 -batch -noheader -cmd ".timeout 10000" "$1" "$2"; }
hex_of() { sed -n 's/.*objective of the last batch [^ ]* (\([^)]*\)).*/\1/p' "$1/train.log" | tail -1; }

# expect RC PATTERN WHAT COMMAND...: exit code RC and PATTERN (grep -E; "" none) in stdout + stderr; 60 s at most
expect() {
    local want=$1 pat=$2 what=$3; shift 3
    timeout 60 "$@" > "$W/out" 2>&1; local rc=$?
    if [ $rc -eq "$want" ] && { [ -z "$pat" ] || grep -qE -- "$pat" "$W/out"; }; then pass "$what"
    else fail "$what (rc $rc, want $want: $(head -c 400 "$W/out"))"; fi
}

# ---- runs: two TSA runs sharing a prefix, an early-exit run, a plain one, one in another results folder ----
TSA="model.value_residual=satformer model.depth_routing=tsa train.threads=1"
"$BIN" train "$TINY" $TSA --run-id tsa-full --results "$R" --quiet > "$W/t1" 2>&1
check "train tsa-full (SATFormer + TSA, 40 steps)" test $? -eq 0
{ (GATELAB_KILL_AFTER_CKPT=20 exec "$BIN" train "$TINY" $TSA --run-id tsa-killed --results "$R" --quiet) > "$W/t2" 2>&1; } 2> /dev/null
check "tsa-killed dies of SIGKILL after its step-20 checkpoint" test $? -eq 137
"$BIN" train "$TINY" model.depth_routing=early_exit train.steps=10 train.threads=1 --run-id ee --results "$R" --quiet > "$W/t3" 2>&1
check "train ee (early exit)" test $? -eq 0
"$BIN" train "$TINY" train.threads=1 --run-id plain --results "$R" --quiet > "$W/t4" 2>&1
check "train plain" test $? -eq 0
{ (GATELAB_KILL_AFTER_CKPT=20 exec "$BIN" train "$TINY" train.threads=1 --run-id far --results "$R2" --quiet) > "$W/t5" 2>&1; } 2> /dev/null
check "far (another results folder) dies after its step-20 checkpoint" test $? -eq 137

# ---- train --resume: the run alone is enough ----
sum=$(sha256sum < "$R/runs/tsa-killed/ckpt")
expect 1 "model.value_residual: satformer -> none.*model.depth_routing: tsa -> none" \
    "resume with the manifest but not the run's overrides: refused naming the keys, not a missing tensor" \
    "$BIN" train "$TINY" --resume tsa-killed --results "$R" --quiet
check "the refused resume left the checkpoint as it was" test "$(sha256sum < "$R/runs/tsa-killed/ckpt")" = "$sum"
expect 0 "" "train --resume PREFIX alone (tsa-ki: tsa-killed) continues from the run's config.ini" \
    "$BIN" train --resume tsa-ki --results "$R" --quiet
h_full=$(hex_of "$R/runs/tsa-full"); h_res=$(hex_of "$R/runs/tsa-killed")
check "kill -9 + resume alone ends bit for bit like never stopping ($h_res = $h_full)" test -n "$h_full" -a "$h_res" = "$h_full"
check "the resumed run is FINISHED at step 40" \
    test "$(q "$R/gatelab.db" "select status || ' ' || (select max(step) from metrics where run_id='tsa-killed' and split='train') from runs where run_id='tsa-killed'")" = "FINISHED 40"
(cd "$W/elsewhere" && "$BIN" train --resume "$R2/runs/far" --quiet) > "$W/far.out" 2>&1
check "train --resume FOLDER alone, from another folder, no --results (exit $?)" test -s "$R2/runs/far/train.log"
h_plain=$(hex_of "$R/runs/plain"); h_far=$(hex_of "$R2/runs/far")
check "... ends bit for bit like the same run never stopped ($h_far = $h_plain)" test -n "$h_plain" -a "$h_far" = "$h_plain"
check "... in the folder's own registry (FINISHED there), no ./results made" \
    test "$(q "$R2/gatelab.db" "select status from runs where run_id='far'")" = FINISHED -a ! -e "$W/elsewhere/results"

expect 0 "" "train --resume FINISHED_RUN train.steps=50 --allow-config-change: trained further from config.ini" \
    "$BIN" train --resume plain train.steps=50 --allow-config-change --results "$R" --quiet
check "... to step 50, the change recorded" \
    test "$(q "$R/gatelab.db" "select max(step) from metrics where run_id='plain' and split='train'")" = 50 \
    -a "$(q "$R/gatelab.db" "select count(*) from run_events where run_id='plain' and kind='config_change'")" = 1

# ---- compare: no crash on a prefix or an unknown run ----
expect 1 "run 'tsa' is ambiguous: 2 runs start with it \(tsa-full, tsa-killed\)" \
    "compare PREFIX nosuchrun: the ambiguous prefix named with its candidates (was a segfault)" \
    "$BIN" compare tsa nosuchrun --results "$R"
expect 1 "run nosuchrun is not in the registry" "compare ID nosuchrun: exit 1 naming it (was a segfault)" \
    "$BIN" compare tsa-full nosuchrun --results "$R"
expect 0 "tsa-full +tsa-killed" "compare takes unique prefixes" "$BIN" compare tsa-f tsa-ki --results "$R"
expect 1 "compare reads one registry" "compare of runs in two registries says so" \
    "$BIN" compare tsa-full "$R2/runs/far" --results "$R"

# ---- the same resolver for every command ----
expect 0 "." "sample PREFIX" "$BIN" sample tsa-f --tokens 5 --results "$R"
expect 0 '"run_id":"tsa-full"' "eval PREFIX (the JSON line names the full id)" "$BIN" eval tsa-f --windows 2 --results "$R"
expect 0 "exported" "export PREFIX" "$BIN" export tsa-f --out "$W/x.h5" --results "$R"
expect 0 "run tsa-full" "analyze PREFIX" "$BIN" analyze tsa-f --no-db --out "$W/an" --results "$R"
expect 0 "mode zero" "ablate PREFIX --mode ZERO (any case)" "$BIN" ablate tsa-f --mode ZERO --windows 2 --no-db --results "$R"
expect 0 "" "tag PREFIX key=value" "$BIN" tag tsa-f note=first --results "$R"
check "... the tag is on tsa-full" test "$(q "$R/gatelab.db" "select value from tags where run_id='tsa-full' and key='note'")" = first
expect 1 "ambiguous: 2 runs start with it \(tsa-full, tsa-killed\)" "tag AMBIGUOUS: exit 1 listing the candidates" \
    "$BIN" tag tsa note=x --results "$R"
expect 1 "did you mean tsa-full\?" "tag of a typo: exit 1 with did-you-mean" "$BIN" tag tsa-fulll note=x --results "$R"
expect 0 "^deleted tsa-killed$" "delete PREFIX prints the full id" "$BIN" delete tsa-ki --results "$R"
expect 0 "^restored tsa-killed$" "restore PREFIX finds the deleted run" "$BIN" restore tsa-ki --results "$R"
"$BIN" metrics --run tsa-f --results "$R" > "$W/m.csv" 2> "$W/m.err"; rc=$?
check "metrics --run PREFIX: only tsa-full's rows" \
    bash -c "[ $rc -eq 0 ] && [ \$(tail -n +2 '$W/m.csv' | cut -d, -f1 | sort -u) = tsa-full ]"
expect 1 "--run run nosuch is not in the registry" "metrics --run unknown: exit 1 (was a header and exit 0)" \
    "$BIN" metrics --run nosuch --results "$R"
expect 0 "." "eval --match-run PREFIX --record (was: no headline α, whatever was recorded)" \
    "$BIN" eval ee --match-run tsa-f --record --results "$R"
check "... the matched pair is recorded against tsa-full's headline α" \
    test "$(q "$R/gatelab.db" "select count(*) from metrics a join metrics b on a.value = b.value where a.run_id='ee' and a.name='matched.alpha_target' and b.run_id='tsa-full' and b.name='final.active_frac'")" = 1
(cd "$W/elsewhere" && "$BIN" tag "$R2/runs/far" where=far) > "$W/far_tag.out" 2>&1
check "tag RUNFOLDER k=v writes the folder's own registry, not ./results/gatelab.db" \
    test "$(q "$R2/gatelab.db" "select value from tags where run_id='far' and key='where'")" = far -a ! -e "$W/elsewhere/results"
(cd "$R/runs" && "$BIN" tag tsa-full where=inside) > "$W/in_tag.out" 2>&1
check "tag RUN inside results/runs: the folder there, and its registry two up" \
    test "$(q "$R/gatelab.db" "select value from tags where run_id='tsa-full' and key='where'")" = inside
expect 1 "no such run folder" "a path that is no folder" "$BIN" sample "$W/nope/run" --results "$R"

# ---- unknown experiments, gates, statuses: errors, never exit 0 ----
expect 1 "no experiment 'NOSUCHEXP' in .*; its experiments: tiny" "figures NOSUCHEXP: exit 1 naming the experiments" \
    "$BIN" figures NOSUCHEXP --results "$R" --out "$W/fig"
expect 1 "no experiment 'NOSUCHEXP'" "tables NOSUCHEXP: exit 1 (was '0 figures', exit 0)" \
    "$BIN" tables NOSUCHEXP --results "$R" --out "$W/tab"
expect 1 "did you mean tiny\?" "tables tiyn: did you mean tiny" "$BIN" tables tiyn --results "$R" --out "$W/tab"
expect 1 "no experiment 'NOSUCHEXP'.*tiny" "metrics --experiment NOSUCHEXP: exit 1" \
    "$BIN" metrics --experiment NOSUCHEXP --results "$R"
expect 1 "no experiment 'NOSUCHEXP'.*tiny" "runs --experiment NOSUCHEXP: says none such exists, names tiny" \
    "$BIN" runs --experiment NOSUCHEXP --results "$R"
expect 1 "--gate L0H0: run tsa-full has gates L1H0..L1H0" "report RUN --html --gate L0H0 on a run without it: exit 1 (was 0 views)" \
    "$BIN" report tsa-f --html --gate L0H0 --out "$W/r.html" --results "$R"
check "... and no page was written" test ! -e "$W/r.html"
expect 1 "no SATFormer gates" "report --gate on a run without SATFormer gates" \
    "$BIN" report plain --html --gate L1H0 --out "$W/r.html" --results "$R"
expect 2 "--status 'done': expected SCHEDULED, RUNNING, FINISHED, FAILED or KILLED" "runs --status done lists the statuses" \
    "$BIN" runs --status done --results "$R"

# ---- did-you-mean and any case ----
expect 2 "^gatelab: unknown command 'trian' \(did you mean train\?\); see gatelab --help$" "gatelab trian: did you mean train" \
    "$BIN" trian
expect 2 "unknown option '--experment' \(did you mean --experiment\?\)" "runs --experment: did you mean --experiment" \
    "$BIN" runs --experment tiny --results "$R"
expect 2 "--format 'jsno': expected table, csv or json \(did you mean json\?\)" "runs --format jsno: did you mean json" \
    "$BIN" runs --format jsno --results "$R"
expect 0 "^tsa-full " "runs --status finished (lower case)" "$BIN" runs --status finished --results "$R"
"$BIN" runs --format JSON --results "$R" > "$W/runs.json" 2>&1
check "runs --format JSON (upper case) prints JSON" python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$W/runs.json"
expect 0 '"source":"val"' "eval --split VAL: the canonical split name" "$BIN" eval tsa-f --split VAL --windows 2 --results "$R"
