#!/usr/bin/env bash
# faults.sh — no stuck runs, no silent loss (issue 13): the real `gatelab train`
# under injected faults, with tests/fault/enospc.c preloaded (built by make as
# $BUILD/fault/enospc.so; no privileges, no tmpfs):
#   - SIGTERM during set-up / step 0, and a kill before the first checkpoint:
#     the command the message suggests continues the run, bit for bit
#   - a full disk for the checkpoint, the trace and the registry, from the start
#     and part-way: an error naming the file and a non-zero exit (never a crash
#     or a silent row), earlier files intact, resume ends like never stopping
#   - a run left RUNNING by a full registry disk shows as STALE, --fix-stale
#     marks it KILLED
# Faults arrive at named writes (a byte budget, "the first write to trace.h5"),
# never on a timer.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"
SHIM="${GATELAB_FAULT_SHIM:-$(cd "$(dirname "$BIN")" && pwd)/fault/enospc.so}"
if [ ! -f "$SHIM" ]; then fail "fault shim $SHIM not built (make builds it with the tests)"; exit 1; fi
# an ASan build wants its runtime first; the shim only wraps libc calls, so let it go first
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

status() { sqlite3 "$R/gatelab.db" "select status from runs where run_id='$1'"; }
steps() { h5dump -A 0 -y -d /step "$R/runs/$1/trace.h5" 2>/dev/null | sed -n '/DATA {/,/}/p' | tr -d ' \n' | sed 's/DATA{//; s/}//'; }
# faulty RUN_ID VAR=VALUE... -- ARGS: train under the shim with the fault settings given
faulty() { local id=$1; shift; local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    # (…; exit) so that this subshell, not the script, reports a kill -9 (to /dev/null)
    (env LD_PRELOAD="$SHIM" "${envs[@]}" "$BIN" train "$TINY" --run-id "$id" --results "$R" --quiet "$@" > "$W/$id.out" 2>&1; exit $?) 2>/dev/null; }
resume() { timeout 300 "$BIN" train "$TINY" --resume "$1" --results "$R" --quiet > "$W/$1.resume" 2>&1; }

"$BIN" train "$TINY" --run-id ref --results "$R" --quiet > /dev/null 2>&1
ref=$(last_hex ref)
check "the reference run finishes ($ref)" test -n "$ref"

# 1. SIGTERM during set-up (at the first write of trace.h5, before step 0 is evaluated)
faulty t0 GATELAB_FAULT_SIGNAL=15 GATELAB_FAULT_SIGNAL_PATH=trace.h5 --; rc=$?
check "SIGTERM in step 0: exit 3 (KILLED), says --resume t0" test $rc -eq 3 -a "$(status t0)" = KILLED
check "SIGTERM in step 0: the message names the resume command" grep -q -- "--resume t0" "$W/t0.out"
resume t0; rc=$?
check "SIGTERM in step 0: --resume t0 exits 0 (rc $rc: $(head -c 200 "$W/t0.resume"))" test $rc -eq 0
check "SIGTERM in step 0: resumed run ends bit for bit like never stopping ($(last_hex t0))" test "$(last_hex t0)" = "$ref"
check "SIGTERM in step 0: the trace holds steps 0,20,40 once ($(steps t0))" test "$(steps t0)" = "0,20,40"

# kill -9 before the first checkpoint: --resume starts the run again and says so
faulty k0 GATELAB_FAULT_SIGNAL=9 GATELAB_FAULT_SIGNAL_PATH=trace.h5 --
check "kill -9 in set-up leaves no checkpoint" test ! -e "$R/runs/k0/ckpt"
resume k0; rc=$?
check "kill -9 before the first checkpoint: --resume k0 exits 0 (rc $rc: $(head -c 200 "$W/k0.resume"))" test $rc -eq 0
check "kill -9 before the first checkpoint: the log says it starts again from step 0" grep -q "no checkpoint yet" "$R/runs/k0/train.log"
check "kill -9 before the first checkpoint: ends like never stopping" test "$(last_hex k0)" = "$ref"

# 2. the trace's disk full from the start, and 3. filling part-way through the appends
for b in 0 2000 6000 9000 14000 19500 48500; do  # 48500: tears /step's header (resume rebuilds from trace.h5.prev)
    id="tr$b"
    faulty "$id" GATELAB_FAULT_BYTES=$b GATELAB_FAULT_PATH=trace.h5 --; rc=$?
    out=$(head -c 300 "$W/$id.out")
    if [ $rc -eq 0 ]; then
        check "trace disk full after $b bytes: exit 0 only with every row written ($(steps $id))" test "$(steps $id)" = "0,20,40"
        continue
    fi
    check "trace disk full after $b bytes: exit 1, no crash (rc $rc)" test $rc -eq 1
    check "trace disk full after $b bytes: the error names trace.h5 and the full disk ($out)" \
        grep -q "trace.h5.*No space left on device" "$W/$id.out"
    check "trace disk full after $b bytes: no HDF5 shutdown noise" bash -c "! grep -q 'infinite loop' '$W/$id.out'"
    check "trace disk full after $b bytes: the run is FAILED, not RUNNING" test "$(status $id)" = FAILED
    resume "$id"; rc=$?
    check "trace disk full after $b bytes: resume with room exits 0 (rc $rc: $(head -c 200 "$W/$id.resume"))" test $rc -eq 0
    check "trace disk full after $b bytes: resumed trace has steps 0,20,40 ($(steps $id)), no -1 row" test "$(steps $id)" = "0,20,40"
    check "trace disk full after $b bytes: resumed run ends like never stopping" test "$(last_hex $id)" = "$ref"
done

# checkpoint disk full: the first save fails (no earlier one), or a later one (the earlier stays)
faulty c0 GATELAB_FAULT_BYTES=0 GATELAB_FAULT_PATH=/ckpt --; rc=$?
check "ckpt disk full at the first save: exit 1 naming the checkpoint (rc $rc)" test $rc -eq 1
check "ckpt disk full at the first save: does not claim an unchanged previous checkpoint" \
    bash -c "grep -q 'no earlier checkpoint' '$W/c0.out' && ! grep -q 'is unchanged' '$W/c0.out'"
resume c0; rc=$?
check "ckpt disk full at the first save: resume exits 0 and ends like never stopping" test $rc -eq 0 -a "$(last_hex c0)" = "$ref"
size=$(stat -c %s "$R/runs/ref/ckpt")
faulty c1 GATELAB_FAULT_BYTES=$((size + size / 2)) GATELAB_FAULT_PATH=/ckpt --; rc=$?
check "ckpt disk full at the second save: exit 1 (rc $rc)" test $rc -eq 1
check "ckpt disk full at the second save: the message says the previous checkpoint is unchanged" grep -q "previous checkpoint.*is unchanged" "$W/c1.out"
check "ckpt disk full at the second save: no .tmp left behind" test ! -e "$R/runs/c1/ckpt.tmp"
resume c1; rc=$?
check "ckpt disk full at the second save: resume starts at step 10" grep -q "resuming at step 10 " "$R/runs/c1/train.log"
check "ckpt disk full at the second save: resume exits 0, ends like never stopping" test $rc -eq 0 -a "$(last_hex c1)" = "$ref"

# registry disk full part-way: the run cannot even record its end, and stays RUNNING ...
faulty g1 GATELAB_FAULT_BYTES=100000 GATELAB_FAULT_PATH=gatelab.db --; rc=$?
check "registry disk full: exit 1 naming the registry (rc $rc)" bash -c "test $rc -eq 1 && grep -q gatelab.db '$W/g1.out'"
check "registry disk full: the run is left RUNNING ($(status g1))" test "$(status g1)" = RUNNING
"$BIN" runs --db "$R/gatelab.db" > "$W/runs.out" 2>&1
check "gatelab runs shows it STALE, naming the gone process" grep -q "^g1 .*STALE" "$W/runs.out"
"$BIN" runs --db "$R/gatelab.db" --fix-stale > "$W/fix.out" 2>&1
check "gatelab runs --fix-stale marks it KILLED ($(status g1))" test "$(status g1)" = KILLED
check "--fix-stale leaves finished runs alone ($(status ref))" test "$(status ref)" = FINISHED
resume g1; rc=$?
check "registry disk full: resume with room exits 0 and ends like never stopping" test $rc -eq 0 -a "$(last_hex g1)" = "$ref"
check "registry: the resumed run is FINISHED" test "$(status g1)" = FINISHED
