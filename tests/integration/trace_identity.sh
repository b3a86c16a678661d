#!/usr/bin/env bash
# trace_identity.sh — a trace gets only rows that are its own (issue 28.2), on
# the real `gatelab train --resume`:
#   - log.probe_windows 2 -> 1 with --allow-config-change (an ASan
#     heap-buffer-overflow in H5Dwrite before): the old trace is kept whole as
#     trace.1.h5, a new trace.h5 of 1 window holds the evaluations after the
#     checkpoint, train.log and the registry say so
#   - another split (data.val_frac) likewise starts a new trace
#   - another model's trace.h5 copied into the run folder: refused, naming the
#     difference, the file untouched
#   - trace.h5 deleted with trace.h5.prev present: rebuilt from the copy, said
#   - no temporary (trace.h5.tmp, trace.h5.tmp.prev) left by any resume
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data" OMP_NUM_THREADS=1
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"
trn() { "$BIN" train "$TINY" --results "$R" --quiet "$@"; }
attr() { h5dump -A 0 -a "/$2" "$R/runs/$1" 2>/dev/null | sed -n 's/^ *(0): //p' | head -1; }
steps() { h5dump -A 0 -d /step "$R/runs/$1" 2>/dev/null | sed -n '/DATA {/,/}/p' | tr -d ' \n' | sed 's/DATA{(0)://; s/}//'; }
notmp() { ! ls "$R/runs/$1" | grep -q 'tmp'; }
trn --run-id a > /dev/null 2>&1 && trn --run-id b > /dev/null 2>&1 && trn --run-id c > /dev/null 2>&1 &&
    trn --run-id other model.n_layer=3 > /dev/null 2>&1
check "train runs a, b, c and a 3-block run (exit 0)" test $? -eq 0
check "a new trace records its identity (vocab_size, split, probe_sha256; schema 3)" \
    bash -c "test '$(attr a/trace.h5 schema_version)' = 3 && test -n '$(attr a/trace.h5 vocab_size)' &&
             echo '$(attr a/trace.h5 split)' | grep -q 'val windows 0-1: bytes' &&
             echo '$(attr a/trace.h5 probe_sha256)' | grep -qE '^\"[0-9a-f]{64}\"$'"

# 1. fewer probe windows on resume
trn --resume a --allow-config-change log.probe_windows=1 train.steps=60 > "$W/o1" 2>&1; rc=$?
check "probe_windows 2 -> 1 on resume: exit 0 ($rc), no overflow" test $rc -eq 0
check "the old trace is kept whole as trace.1.h5 (steps 0,20,40; n_probe 64)" \
    bash -c "test '$(steps a/trace.1.h5)' = '0,20,40' && test '$(attr a/trace.1.h5 n_probe)' = 64"
check "the new trace.h5 has 1 window (n_probe 32) and the evaluations after step 40" \
    bash -c "test '$(attr a/trace.h5 n_probe)' = 32 && test '$(steps a/trace.h5)' = 60"
check "train.log says the probe changed and where the old trace is" \
    grep -q "the probe changed (n_probe.*64 in the trace, 32 in this run; the trace up to step 40 is kept as .*trace.1.h5" "$R/runs/a/train.log"
check "the registry records a trace_change event" \
    test "$(sqlite3 "$R/gatelab.db" "select count(*) from run_events where run_id='a' and kind='trace_change'")" = 1
check "no temporary left (trace.h5.tmp, trace.h5.tmp.prev)" notmp a
"$BIN" analyze a --results "$R" > "$W/o1a" 2>&1
check "analyze reads the new trace (exit $?)" test $? -eq 0

# 2. another split
trn --resume b --allow-config-change data.val_frac=0.05 train.steps=60 > "$W/o2" 2>&1; rc=$?
check "another validation split on resume: exit 0 ($rc), a new trace beside the old" \
    bash -c "test $rc -eq 0 && test -f '$R/runs/b/trace.1.h5' && grep -q 'trace_change\|the probe changed' '$R/runs/b/train.log'"
check "the new trace's split is the new one" bash -c "test '$(attr b/trace.h5 split)' != '$(attr b/trace.1.h5 split)'"

# 3. another model's trace in the run folder
cp "$R/runs/other/trace.h5" "$R/runs/c/trace.h5"; cp "$R/runs/c/trace.h5" "$W/foreign.h5"
trn --resume c --allow-config-change train.steps=60 > "$W/o3" 2>&1; rc=$?
check "another model's trace.h5: refused (exit $rc), naming n_layer 3 vs 2" \
    bash -c "test $rc -ne 0 && grep -q 'not a trace of what this run records: n_layer: 3 in the trace, 2 in this run' '$W/o3'"
check "another model's trace.h5: the file is untouched" cmp -s "$R/runs/c/trace.h5" "$W/foreign.h5"
check "another model's trace.h5: no trace.1.h5 made" test ! -e "$R/runs/c/trace.1.h5"

# 4. trace.h5 deleted, trace.h5.prev present
rm "$R/runs/a/trace.h5"
trn --resume a --allow-config-change log.probe_windows=1 train.steps=80 > "$W/o4" 2>&1; rc=$?
check "trace.h5 deleted with .prev present: rebuilt from the copy, said (exit $rc)" \
    bash -c "test $rc -eq 0 && grep -q 'trace.h5 is missing; rebuilding it from the copy' '$W/o4'"
check "the rebuilt trace holds the copy's rows (none: it was taken before step 60) and continues (80)" test "$(steps a/trace.h5)" = "80"
check "no temporary left after the rebuild" notmp a
