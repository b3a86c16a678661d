#!/usr/bin/env bash
# sweep.sh — `gatelab sweep`, `runs` and `collect` on the real binary, real
# training runs and a real registry (read back with the sqlite3 tool).
#
# A 4-run grid (λ × seed) of a tiny TSA model (d 32, L 2, threads 1) on the
# test's own corpus (tests/corpus.h) is run three ways: uninterrupted; killed with kill -9 (the whole
# process group, mid-sweep) and started again; stopped with SIGINT (what Ctrl-C
# sends) and started again.  The three registries must hold the same runs,
# each once, FINISHED, with identical metrics (all but tokens_per_s, which is
# a timing).  Then --dry-run, `runs --format csv`, --index and collect, and
# the Slurm array script (run locally as array task 0).
#
# Prints one PASS/FAIL line per check.  Needs $GATELAB_BIN and sqlite3.
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W="$(mktemp -d "${TMPDIR:-/tmp}/gatelab-sweep-XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT; echo "work folder: $W"
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
cd "$W" || exit 1
export GATELAB_ROOT="$ROOT"

q() { sqlite3 -batch -noheader -cmd ".timeout 10000" "$1" "$2"; }

if ! command -v sqlite3 >/dev/null; then fail "sqlite3 tool missing (apt-get install sqlite3)"; exit 1; fi
if [ ! -x "$BIN" ]; then fail "no gatelab binary at $BIN (run make)"; exit 1; fi

cat > grid.ini <<'EOF'
; a tiny TSA model: 4 runs of 600 steps, about 1.5 s each on one thread
[model]
d_model = 32
n_layer = 2
n_head = 2
n_kv_head = 2
d_ff = 64
seq_len = 32
depth_routing = tsa
[data]
task = text
file = corpus.txt
[train]
steps = 600
batch_size = 4
warmup = 20
threads = 1
eval_every = 200
eval_windows = 4
ckpt_every = 200                 ; = eval_every: see dump() below
log_every = 20
[log]
experiment = grid
trace = 0
[sweep]
lambda = 0, 0.01
seed = 1, 2
EOF

# Registry content that must not depend on interruptions: run ids, statuses,
# params and every metric except the timing one.  With a second argument the
# train loss is left out too: train logs the mean loss since the last
# evaluation, and a run stopped by a signal checkpoints at any step, so after
# its resume that mean covers fewer steps (kill -9 resumes from the periodic
# checkpoints, which fall on evaluation steps here, so there it is compared).
dump() {
    local skip="'tokens_per_s'"
    [ -n "${2:-}" ] && skip="'tokens_per_s') AND NOT (split = 'train' AND name = 'loss'"
    q "$1" "SELECT run_id, status, name FROM runs ORDER BY run_id;"
    q "$1" "SELECT run_id, key, value FROM params ORDER BY run_id, key;"
    q "$1" "SELECT run_id, step, split, name, quote(value) FROM metrics WHERE (name NOT IN ($skip))
            ORDER BY run_id, step, split, name;"
}
group_members() { # "pid state" of each process in process group $PG_WANTED, read from /proc (no procps)
    local f rest
    for f in /proc/[0-9]*/stat; do
        rest=$(cat "$f" 2>/dev/null) || continue
        rest=${rest##*) }                     # after "pid (comm) ": state ppid pgrp ...
        set -- $rest
        [ "$3" = "$PG_WANTED" ] && echo "${f//[^0-9]/} $1"
    done
}
alive_in_group() { # processes (not zombies) in process group $1
    PG_WANTED="$1" group_members | awk '$2 != "Z" && $2 != "X"' | grep -q .
}

wait_for() { # wait_for SECONDS CONDITION...: poll until the condition holds
    local limit=$(( $1 * 10 )); shift
    for _ in $(seq "$limit"); do "$@" && return 0; sleep 0.1; done
    return 1
}

# A run of the second half has a checkpoint while the first half is finished.
mid_sweep() {
    local db="$1/gatelab.db" n id
    [ -f "$db" ] || return 1
    n=$(q "$db" "SELECT count(*) FROM runs WHERE status='FINISHED'" 2>/dev/null) || return 1
    [ "${n:-0}" -ge 1 ] || return 1
    for id in $(q "$db" "SELECT run_id FROM runs WHERE status='RUNNING'" 2>/dev/null); do
        [ -f "$1/runs/$id/ckpt" ] && return 0
    done
    return 1
}

# 1. Uninterrupted.
t0=$(date +%s)
"$BIN" sweep grid.ini -j 2 --results ref > ref.out 2> ref.err; rc=$?
check "uninterrupted sweep exits 0" [ "$rc" -eq 0 ]
check "uninterrupted sweep: 4 runs, all FINISHED" \
    [ "$(q ref/gatelab.db "SELECT count(*) FROM runs WHERE status='FINISHED'")" = 4 ]
check "uninterrupted sweep: metrics logged for every run" \
    [ "$(q ref/gatelab.db "SELECT count(DISTINCT run_id) FROM metrics WHERE split='val' AND name='loss'")" = 4 ]
dump ref/gatelab.db > ref.dump

# 2. kill -9 of the whole process group in the middle, then the same command again.  A run is
# tiny (about 1.5 s): on a loaded machine the run seen with a checkpoint can finish between the
# poll and the kill, leaving nothing to resume; such a try is made again (up to 5), so that the
# resume below is always tested.
resumable() { # unfinished runs of registry $1 whose folder has a checkpoint
    local id n=0
    for id in $(q "$1/gatelab.db" "SELECT run_id FROM runs WHERE status <> 'FINISHED'"); do
        [ -f "$1/runs/$id/ckpt" ] && n=$((n + 1))
    done
    echo "$n"
}
for try in 1 2 3 4 5; do
    rm -rf k9
    setsid "$BIN" sweep grid.ini -j 2 --results k9 > k9a.out 2> k9a.err &
    pg=$!
    if ! wait_for 60 mid_sweep k9; then
        fail "kill -9: the sweep never reached the middle (see $W/k9a.err)"
        kill -9 -- "-$pg" 2>/dev/null
        break
    fi
    kill -9 -- "-$pg" 2>/dev/null
    wait "$pg" 2>/dev/null
    [ "$(resumable k9)" -ge 1 ] && break
    echo "try $try: the run with a checkpoint finished before the kill; again"
done
left=$(q k9/gatelab.db "SELECT count(*) FROM runs WHERE status <> 'FINISHED'")
check "kill -9 hit the sweep in the middle ($left of 4 runs unfinished, $(resumable k9) with a checkpoint; try $try)" \
    [ "$(resumable k9)" -ge 1 ]
sleep 0.3
if alive_in_group "$pg"; then fail "kill -9 left processes behind"; PG_WANTED="$pg" group_members
else pass "kill -9 left no process of the sweep alive"; fi
"$BIN" sweep grid.ini -j 2 --results k9 > k9b.out 2> k9b.err; rc=$?
check "sweep after kill -9 exits 0" [ "$rc" -eq 0 ]
check "sweep after kill -9 resumed an interrupted run from its checkpoint" grep -q "resuming from its checkpoint" k9b.err
check "sweep after kill -9 did not rerun finished runs" \
    [ "$(grep -c ' started ' k9b.err)" -eq "$left" ]
check "after kill -9: 4 runs, each once, all FINISHED" \
    [ "$(q k9/gatelab.db "SELECT count(*) || '/' || sum(status='FINISHED') FROM runs")" = "4/4" ]
dump k9/gatelab.db > k9.dump
if cmp -s ref.dump k9.dump; then pass "after kill -9: registry identical to the uninterrupted sweep's (ids, statuses, params, metrics)"
else fail "after kill -9: registry differs from the uninterrupted sweep's"; diff ref.dump k9.dump | head -20; fi

# 3. SIGINT to the process group (Ctrl-C): runs checkpoint and are marked KILLED; rerun completes.
setsid "$BIN" sweep grid.ini -j 2 --results int > inta.out 2> inta.err &
pg=$!
if wait_for 60 mid_sweep int; then
    kill -INT -- "-$pg" 2>/dev/null
    wait "$pg"; rc=$?
    check "Ctrl-C: sweep stops with exit 130" [ "$rc" -eq 130 ]
    # A run in training when the signal came is KILLED; the signal can also fall between two runs
    # (one has just FINISHED, the next is not started: none KILLED, the rest SCHEDULED), so the
    # check is that none is left RUNNING and the sweep did stop short of its 4 runs.
    st=$(q int/gatelab.db "SELECT sum(status='KILLED') || ' KILLED, ' || sum(status='SCHEDULED') || ' SCHEDULED, ' || sum(status='RUNNING') || ' RUNNING' FROM runs")
    check "Ctrl-C: interrupted runs are KILLED, none left RUNNING, the sweep stopped short ($st)" \
        [ "$(q int/gatelab.db "SELECT sum(status='RUNNING') = 0 AND sum(status IN ('KILLED', 'SCHEDULED')) >= 1 FROM runs")" = 1 ]
else
    fail "Ctrl-C: the sweep never reached the middle (see $W/inta.err)"
    kill -9 -- "-$pg" 2>/dev/null
fi
"$BIN" sweep grid.ini -j 2 --results int > intb.out 2> intb.err; rc=$?
check "sweep after Ctrl-C exits 0 with all 4 FINISHED" \
    [ "$rc" -eq 0 -a "$(q int/gatelab.db "SELECT sum(status='FINISHED') FROM runs")" = 4 ]
dump int/gatelab.db no-train-loss > int.dump
dump ref/gatelab.db no-train-loss > ref-nl.dump
if cmp -s ref-nl.dump int.dump; then pass "after Ctrl-C: registry identical to the uninterrupted sweep's (but the train-loss window means)"
else fail "after Ctrl-C: registry differs from the uninterrupted sweep's"; diff ref-nl.dump int.dump | head -20; fi

# 4. A finished sweep started again does nothing.
"$BIN" sweep grid.ini -j 2 --results ref > again.out 2> again.err; rc=$?
check "a finished sweep run again starts nothing" [ "$rc" -eq 0 -a "$(grep -c ' started ' again.err)" -eq 0 ]

# 5. --dry-run lists the runs with their overrides and writes nothing.
"$BIN" sweep grid.ini --dry-run --results dry > dry.out 2> dry.err; rc=$?
ids_dry=$(awk '$1 ~ /^[0-9]+$/ {print $2}' dry.out | sort | tr '\n' ' ')
ids_ref=$(q ref/gatelab.db "SELECT run_id FROM runs ORDER BY run_id" | tr '\n' ' ')
check "--dry-run lists the 4 run ids the sweep registers" [ "$rc" -eq 0 -a "$ids_dry" = "$ids_ref" ]
check "--dry-run shows each run's overrides" grep -q "model.tsa_lambda=0.01 train.seed=2" dry.out
check "--dry-run writes nothing" [ ! -e dry ]

# 6. runs --format csv / json / table.
"$BIN" runs --db ref/gatelab.db --format csv > runs.csv; rc=$?
check "runs --format csv: header and 4 FINISHED rows" \
    [ "$rc" -eq 0 -a "$(head -1 runs.csv | cut -d, -f1-6)" = "run_id,experiment,name,status,step,train_loss" \
      -a "$(grep -c ',FINISHED,600,' runs.csv)" -eq 4 ]
vl=$(awk -F, 'NR > 1 && $7 != "" && $8 != "" {n++} END {print n+0}' runs.csv)
check "runs --format csv: val loss and α present for every run" [ "$vl" -eq 4 ]
"$BIN" runs --db ref/gatelab.db --format json > runs.json
check "runs --format json: 4 objects" [ "$(grep -c '"run_id"' runs.json)" -eq 4 ]
"$BIN" runs --db ref/gatelab.db --experiment grid --status FINISHED > runs.txt
check "runs (table) filtered by experiment and status: 4 runs" grep -q "^4 runs" runs.txt

# 7. --index and collect: task databases with an overlapping run merge once.
# (Shorter runs here: train.steps=100 for every run, so other ids than above.)
S=train.steps=100
"$BIN" sweep grid.ini $S --dry-run > dry100.out 2>&1
"$BIN" sweep grid.ini $S --index 1 --db tasks/t1.db --results idx > i1.out 2> i1.err; rc1=$?
"$BIN" sweep grid.ini $S --index 2 --db tasks/t2.db --results idx > i2.out 2> i2.err; rc2=$?
"$BIN" sweep grid.ini $S --index 1 --db tasks/t2.db --results idx > i3.out 2> i3.err; rc3=$?
id1=$(awk '$1 == "1" {print $2}' dry100.out)
check "--index 1 runs exactly sweep run 1 ($id1)" \
    [ "$rc1" -eq 0 -a -n "$id1" -a "$(q tasks/t1.db "SELECT group_concat(run_id) FROM runs")" = "$id1" ]
check "--index tasks finish (the second task's run 1 resumes from the finished checkpoint)" \
    [ "$rc2" -eq 0 -a "$rc3" -eq 0 ]
"$BIN" collect idx/main.db tasks/t1.db tasks/t2.db > collect.out 2>&1; rc=$?
check "collect: 2 runs, each once, FINISHED" \
    [ "$rc" -eq 0 -a "$(q idx/main.db "SELECT count(*) || '/' || sum(status='FINISHED') FROM runs")" = "2/2" ]
a=$(q tasks/t1.db "SELECT quote(value) FROM metrics WHERE run_id='$id1' AND split='val' AND name='loss' AND step=100")
b=$(q idx/main.db "SELECT quote(value) FROM metrics WHERE run_id='$id1' AND split='val' AND name='loss' AND step=100")
check "collect: run 1 keeps the metrics of the task that trained it (val loss $a)" [ -n "$a" -a "$a" = "$b" ]
n_before=$(q idx/main.db "SELECT count(*) FROM metrics")
"$BIN" collect idx/main.db tasks/t1.db tasks/t2.db > collect2.out 2>&1
check "collect again: nothing duplicated" [ "$(q idx/main.db "SELECT count(*) FROM runs")" = 2 -a \
    "$(q idx/main.db "SELECT count(*) FROM metrics")" = "$n_before" -a "$n_before" -gt 0 ]

# 8. The Slurm array script: its shape, and array task 0 run here without Slurm.
"$BIN" sweep grid.ini $S -j 2 --emit-slurm grid.sbatch --results slurm > slurm.out 2>&1; rc=$?
check "--emit-slurm writes an array script" [ "$rc" -eq 0 -a -f grid.sbatch ]
check "--emit-slurm: --array=0-3%2, --signal=B:USR1@120, %A_%a logs, --index from the task id" bash -c '
    grep -q "^#SBATCH --array=0-3%2$" grid.sbatch && grep -q "^#SBATCH --signal=B:USR1@120$" grid.sbatch &&
    grep -q "^#SBATCH --output=.*%A_%a" grid.sbatch && grep -q -- "--index \"\$SLURM_ARRAY_TASK_ID\"" grid.sbatch &&
    bash -n grid.sbatch'
check "--emit-slurm writes no registry" [ ! -e slurm/gatelab.db ]
mkdir -p slurm/slurm/grid
SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_JOB_ID=7 TMPDIR="$W" bash grid.sbatch > task0.out 2>&1; rc=$?
id0=$(awk '$1 == "0" {print $2}' dry100.out)
check "array task 0 (run locally) runs sweep run 0 into its own registry" \
    [ "$rc" -eq 0 -a "$(q slurm/slurm/grid/task-0.db "SELECT run_id || ' ' || status FROM runs")" = "$id0 FINISHED" ]
"$BIN" collect slurm/gatelab.db slurm/slurm/grid/task-*.db > /dev/null 2>&1
check "collect of the array task's registry" [ "$(q slurm/gatelab.db "SELECT run_id FROM runs")" = "$id0" ]

# 9. Bad input: nothing written.
printf '[sweep]\nlambda = 0, , 0.1\n' > bad.ini
"$BIN" sweep bad.ini --results bad > bad.out 2> bad.err; rc=$?
check "a sweep list with an empty item: exit 2, file:line and key named, nothing written" \
    bash -c "[ $rc -eq 2 ] && [ ! -e bad ] && grep -q 'bad.ini:2' bad.err && grep -q 'tsa_lambda' bad.err"
"$BIN" sweep grid.ini scale=xs,nosuch --results bad > bad2.out 2> bad2.err; rc=$?
check "an unknown scale on the command line: exit 2, named, nothing written" \
    bash -c "[ $rc -eq 2 ] && [ ! -e bad ] && grep -q 'nosuch' bad2.err"

echo "sweep.sh: $(( $(date +%s) - t0 )) s"
