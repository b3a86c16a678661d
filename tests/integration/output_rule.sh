#!/usr/bin/env bash
# output_rule.sh — one output rule for every file a command writes at a path
# the user names (issue 45 items 1, 2, 13): a temporary beside the destination
# (O_EXCL|O_NOFOLLOW), fsync, rename; a destination that exists and is not of
# the command's own kind (the registry, a checkpoint, a trace, a link to one)
# is refused, named, and left as it was.  Checked on `probe --out`,
# `sample --trace`, `report --probe … --out`, `heads --attribution`,
# `sweep --emit-slurm` and `analyze --seeds --out`, and a
# full disk under the probe cache (tests/fault/enospc.c): a message that says
# "No space left", no crash in HDF5 at exit, no partial file.
set -u
. "$(dirname "$0")/lib.sh"
scratch
SHIM="${GATELAB_FAULT_SHIM:-$(cd "$(dirname "$BIN")" && pwd)/fault/enospc.so}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
"$BIN" train "$TINY" model.value_residual=satformer train.threads=1 --run-id sat --results "$R" --quiet > "$W/train.out" 2>&1 ||
    { fail "train a tiny SATFormer ($(tail -3 "$W/train.out"))"; exit 1; }
D="$R/runs/sat"
sum() { sha256sum "$1" | cut -c1-64; }
db0=$(sum "$R/gatelab.db"); ck0=$(sum "$D/ckpt"); tr0=$(sum "$D/trace.h5")
intact() { test "$(sum "$R/gatelab.db")" = "$db0" -a "$(sum "$D/ckpt")" = "$ck0" -a "$(sum "$D/trace.h5")" = "$tr0"; }
echo "x" > "$W/prompt.txt"

# item 1: probe --out / sample --trace / report --probe --out pointed at the registry, a checkpoint, a trace, a link to one
for dest in "$R/gatelab.db" "$D/ckpt" "$D/trace.h5" "$W/link-to-db"; do
    [ "$dest" = "$W/link-to-db" ] && ln -sf "$R/gatelab.db" "$dest"
    n=$(basename "$dest")
    "$BIN" probe sat --prompt "hello world" --out "$dest" --results "$R" > "$W/p.out" 2>&1; rc=$?
    check "probe --out $n: refused (rc $rc), the message names it ($(head -c 200 "$W/p.out"))" \
        bash -c "[ $rc -ne 0 ] && grep -q '$n' '$W/p.out'"
    "$BIN" sample sat --prompt "hello" --tokens 8 --trace "$dest" --results "$R" > "$W/s.out" 2>&1; rc=$?
    check "sample --trace $n: refused (rc $rc: $(tail -c 200 "$W/s.out"))" test $rc -ne 0
    check "after probe/sample at $n: registry, checkpoint and trace are byte for byte as they were" intact
    check "no temporary left beside $n" test ! -e "$dest.tmp"
done
"$BIN" runs --results "$R" > /dev/null 2>&1
check "later commands still work (runs exits 0)" test $? -eq 0

# the own kind is replaced, atomically
"$BIN" probe sat --prompt "hello world" --out "$W/p.h5" --results "$R" > "$W/p.out" 2>&1; rc1=$?
"$BIN" probe sat --prompt "hello again" --out "$W/p.h5" --results "$R" > "$W/p.out" 2>&1; rc2=$?
check "probe --out replaces its own probe cache (rc $rc1, $rc2: $(tail -c 200 "$W/p.out"))" test $rc1 -eq 0 -a $rc2 -eq 0
check "the replaced cache reads back (report --probe)" "$BIN" report --probe "$W/p.h5" --html --out "$W/p.html"
check "report --probe --out replaces its own page" "$BIN" report --probe "$W/p.h5" --html --out "$W/p.html"
printf 'notes\n' > "$W/notes.txt"
"$BIN" probe sat --prompt "hello" --out "$W/notes.txt" --results "$R" > "$W/p.out" 2>&1; rc=$?
check "probe --out over a text file: refused, the file kept (rc $rc)" bash -c "[ $rc -ne 0 ] && [ \"\$(cat '$W/notes.txt')\" = notes ]"
for dest in "$R/gatelab.db" "$D/ckpt" "$W/notes.txt" "$W/link-to-db"; do
    "$BIN" report --probe "$W/p.h5" --html --out "$dest" > "$W/r.out" 2>&1; rc=$?
    check "report --probe --out $(basename "$dest"): refused (rc $rc: $(head -c 200 "$W/r.out"))" test $rc -ne 0
done
"$BIN" report sat --html --out "$D/ckpt" --results "$R" > "$W/r.out" 2>&1; rc=$?
check "report RUN --html --out at the checkpoint: refused (rc $rc: $(tail -c 200 "$W/r.out"))" \
    bash -c "[ $rc -ne 0 ] && grep -q 'not a gatelab HTML report' '$W/r.out'"
check "after report --probe and report --html: registry, checkpoint and trace are as they were" intact
check "after report --probe: the text file is as it was" test "$(cat "$W/notes.txt")" = notes

# item 2: heads --attribution through a planted link
mkdir -p "$D/analysis"; printf 'precious\n' > "$W/precious"
ln -sf "$W/precious" "$D/analysis/attribution.tsv"
"$BIN" heads sat --attribution --windows 2 --batch 2 --results "$R" > "$W/a.out" 2>&1; rc=$?
check "heads --attribution: a link at attribution.tsv is refused (rc $rc: $(tail -c 200 "$W/a.out"))" \
    bash -c "[ $rc -ne 0 ] && grep -q 'attribution.tsv' '$W/a.out'"
check "heads --attribution: the link's target is as it was" test "$(cat "$W/precious")" = precious
rm -f "$D/analysis/attribution.tsv"
"$BIN" heads sat --attribution --windows 2 --batch 2 --results "$R" > "$W/a.out" 2>&1; rc1=$?
"$BIN" heads sat --attribution --windows 2 --batch 2 --results "$R" > "$W/a.out" 2>&1; rc2=$?
check "heads --attribution writes and then replaces its own tables (rc $rc1, $rc2)" \
    bash -c "[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && head -1 '$D/analysis/attribution.tsv' | grep -q '^site'"

# the same rule for the other files a command writes where the user says: --emit-slurm, analyze --seeds
printf 'precious\n' > "$W/precious"
"$BIN" sweep "$TINY" --axis seed=1,2 --emit-slurm "$R/gatelab.db" --results "$R" > "$W/sl.out" 2>&1; rc=$?
check "sweep --emit-slurm at the registry: refused (exit $rc: $(head -c 200 "$W/sl.out")), the registry as it was" \
    bash -c "[ $rc -ne 0 ] && grep -q 'not a gatelab Slurm script' '$W/sl.out'"
check "... registry, checkpoint and trace byte for byte as they were" intact
"$BIN" sweep "$TINY" --axis seed=1,2 --emit-slurm "$W/job.sh" --results "$R" > /dev/null 2>&1; rc1=$?
"$BIN" sweep "$TINY" --axis seed=1,2 --emit-slurm "$W/job.sh" --results "$R" > /dev/null 2>&1; rc2=$?
check "sweep --emit-slurm writes, then replaces, its own script (exit $rc1, $rc2)" \
    bash -c "[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && head -1 '$W/job.sh' | grep -q '^#!/bin/bash'"
"$BIN" train "$TINY" model.value_residual=satformer train.threads=1 train.seed=2 --run-id sat2 --results "$R" --quiet > /dev/null 2>&1
mkdir -p "$W/seeds"; ln -sf "$W/precious" "$W/seeds/seeds.tsv"
"$BIN" analyze --seeds sat,sat2 --out "$W/seeds" --results "$R" > "$W/se.out" 2>&1; rc=$?
check "analyze --seeds: a link at seeds.tsv is refused (exit $rc: $(tail -c 200 "$W/se.out")), its target kept" \
    bash -c "[ $rc -ne 0 ] && grep -q 'seeds.tsv' '$W/se.out' && [ \"\$(cat '$W/precious')\" = precious ]"
rm -f "$W/seeds/seeds.tsv"
"$BIN" analyze --seeds sat,sat2 --out "$W/seeds" --results "$R" > "$W/se.out" 2>&1; rc=$?
check "analyze --seeds writes its table otherwise (exit $rc)" bash -c "[ $rc -eq 0 ] && head -1 '$W/seeds/seeds.tsv' | grep -q '^run_a'"

# item 13: the probe cache's disk fills: "No space left" named, no crash in HDF5 at exit, no partial file
if [ ! -f "$SHIM" ]; then fail "fault shim $SHIM not built (make builds it with the tests)"; exit 1; fi
for b in 0 3000 9000; do
    rm -f "$W/full.h5"
    env LD_PRELOAD="$SHIM" GATELAB_FAULT_BYTES=$b GATELAB_FAULT_PATH=full.h5 \
        "$BIN" probe sat --prompt "hello world" --out "$W/full.h5" --results "$R" > "$W/f.out" 2>&1; rc=$?
    check "probe cache disk full after $b bytes: exit 1, no crash (rc $rc)" test $rc -eq 1
    check "probe cache disk full after $b bytes: the message says no space left ($(head -c 300 "$W/f.out"))" \
        grep -q "full.h5.*No space left on device" "$W/f.out"
    check "probe cache disk full after $b bytes: no partial file, no temporary" test ! -e "$W/full.h5" -a ! -e "$W/full.h5.tmp"
done
