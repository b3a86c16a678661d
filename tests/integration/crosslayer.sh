#!/usr/bin/env bash
# crosslayer.sh — the real `gatelab train` with model.cross_layer = denseformer,
# hyper and mudd on the test's own corpus (tests/corpus.h; docs/crosslayer.md):
# each trains from a manifest and its validation loss falls, the config it
# stores names the variant, a hyper run killed (SIGKILL right after its step-20
# checkpoint) and resumed equals one that never stopped, and the refused
# combinations exit non-zero with a message naming the key.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"

for v in denseformer hyper mudd; do
    "$BIN" train "$TINY" model.n_layer=3 model.cross_layer=$v --run-id $v --results "$R" --quiet > "$W/$v.out" 2>&1
    check "$v: a tiny run finishes (exit 0)" test $? -eq 0
    first=$(sed -n 's/^step 0 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/$v/train.log" | head -1)
    final=$(sed -n 's/^step 40 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/$v/train.log" | tail -1)
    check "$v: validation loss falls ($first -> $final)" awk -v a="$first" -v b="$final" 'BEGIN{exit !(b + 0.3 < a)}'
    check "$v: config.ini records cross_layer = $v" grep -q "^cross_layer = $v\$" "$R/runs/$v/config.ini"
done

# hyper with 2 streams: kill -9 after a checkpoint, resume (same overrides), compare with a straight run
H2="model.cross_layer=hyper model.hc_expansion=2"
"$BIN" train "$TINY" model.n_layer=3 $H2 --run-id h2 --results "$R" --quiet > /dev/null 2>&1
GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" model.n_layer=3 $H2 --run-id h2k --results "$R" --quiet > /dev/null 2>&1
rc=$?
check "hyper (2 streams): SIGKILL after the step-20 checkpoint (exit $rc = 137)" test $rc -eq 137
check "hyper (2 streams): the killed run is not FINISHED" \
    bash -c "! grep -q '^finished' '$R/runs/h2k/train.log'"
"$BIN" train "$TINY" model.n_layer=3 $H2 --resume h2k --results "$R" --quiet > "$W/resume.out" 2>&1
check "hyper (2 streams): resume exits 0" test $? -eq 0
ha=$(last_hex h2); hb=$(last_hex h2k)
check "hyper (2 streams): kill -9 + resume ends bit for bit like never stopping ($ha = $hb)" test -n "$ha" -a "$ha" = "$hb"

for combo in "hyper tsa" "mudd tsa" "denseformer early_exit"; do
    set -- $combo
    "$BIN" train "$TINY" model.n_layer=3 model.cross_layer=$1 model.depth_routing=$2 --run-id bad --results "$R" --quiet > "$W/bad.out" 2>&1
    rc=$?
    check "$1 + $2 is refused (exit $rc) naming model.cross_layer" \
        bash -c "test $rc -ne 0 && grep -q 'model.cross_layer = $1 cannot be combined' '$W/bad.out'"
done
"$BIN" train "$TINY" model.n_layer=3 model.cross_layer=hyper model.hc_expansion=0 --run-id bad2 --results "$R" --quiet > "$W/bad2.out" 2>&1
rc=$?
check "hc_expansion = 0 is refused (exit $rc) naming model.hc_expansion" \
    bash -c "test $rc -ne 0 && grep -q 'hc_expansion' '$W/bad2.out'"
