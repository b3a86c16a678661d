#!/usr/bin/env bash
# run_ids.sh — one run-id grammar (docs/registry.md, "Run ids"), one trainer
# per run, no repeated sweep items (issue 28.6):
#   - ids of 128-159 bytes, with a newline, a tab, a '/', or starting with '-'
#     are refused by train (exit 2, nothing created) and by the registry;
#     127 bytes and the odd-but-legal (quote, backslash, byte 0xff) are kept whole
#   - a sweep whose ids would pass 127 bytes (a long experiment name) is
#     refused, saying how long the name may be
#   - two `train --run-id X` started together: one trains, the other stops
#     having written nothing (the run folder is claimed by a lock on train.log)
#   - seed=1,2,1 (and 1,01: one configuration twice) refused before anything runs
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data" OMP_NUM_THREADS=1
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"
x() { head -c "$1" /dev/zero | tr '\0' x; }
trn() { "$BIN" train "$TINY" --results "$R" --quiet "$@"; }

for bad in "$(x 128)" "$(x 159)" "$(printf 'a\nb')" "$(printf 'a\tb')" "a/b" "-a" ".."; do
    trn --run-id "$bad" > /dev/null 2> "$W/e"; rc=$?
    shown=$(printf '%s' "$bad" | head -c 12 | tr '\n\t' '??')
    check "train --run-id '$shown…' (${#bad} bytes): refused (exit $rc), nothing created" \
        bash -c "test $rc -eq 2 && grep -q 'run id' '$W/e' && test ! -e '$R/runs'"
done
id127=$(x 127)
trn --run-id "$id127" > /dev/null 2>&1; rc=$?
check "a 127-byte id trains (exit $rc) and is listed whole" \
    bash -c "test $rc -eq 0 && '$BIN' runs --results '$R' --format csv | grep -q '^$id127,'"
odd=$(printf 'odd"q\\b\377id')
trn --run-id "$odd" > /dev/null 2>&1
check "an id with a quote, a backslash and 0xff is legal (exit $?)" test -d "$R/runs/$odd"

# a sweep with a long experiment name
"$BIN" sweep "$TINY" "log.experiment=$(x 120)" --axis train.seed=1,2 --results "$R" --dry-run > /dev/null 2> "$W/s1"; rc=$?
check "a sweep whose ids would be 133 bytes: refused (exit $rc), saying the name may have at most 114" \
    bash -c "test $rc -ne 0 && grep -q 'at most 114' '$W/s1'"

# two trainers of one run id at once
long=(train.steps=400 train.eval_every=200 train.ckpt_every=200)
trn --run-id twin "${long[@]}" > "$W/t1" 2>&1 & p1=$!
trn --run-id twin "${long[@]}" > "$W/t2" 2>&1 & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
check "two train --run-id twin at once: exactly one trains (exits $r1, $r2)" \
    bash -c "test \$(( ($r1 == 0) + ($r2 == 0) )) -eq 1"
check "the other says the run is being trained (or already has its checkpoint)" \
    bash -c "cat '$W/t1' '$W/t2' | grep -qE 'being trained by another process|already has a checkpoint'"
check "one training in train.log (one 'headline' line)" test "$(grep -c 'headline:' "$R/runs/twin/train.log")" -eq 1
check "the registry holds one FINISHED run twin" \
    test "$(sqlite3 "$R/gatelab.db" "select status from runs where run_id='twin'")" = FINISHED

# repeated sweep items
for axis in 1,2,1 "1, 2 ,1" 1,01; do
    "$BIN" sweep "$TINY" --axis train.seed="$axis" --results "$W/sw" > /dev/null 2> "$W/s2"; rc=$?
    check "sweep --axis train.seed=$axis: refused (exit $rc), nothing trained" \
        bash -c "test $rc -ne 0 && grep -qE 'appears twice|same configuration' '$W/s2' && test ! -e '$W/sw/runs'"
done
