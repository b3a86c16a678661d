#!/usr/bin/env bash
# links.sh — nothing gatelab writes goes through a symbolic link (issue 28.1).
# Links planted where gatelab puts a temporary (ckpt.tmp, trace.h5.prev.tmp,
# the HTML page's .tmp), where it appends (train.log), where it writes an
# output in place (a table) and where a run folder belongs (runs/ALIAS ->
# another run's folder): each is refused with a message naming the link, a
# non-zero exit, and the file the link points at is byte for byte unchanged.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data" OMP_NUM_THREADS=1
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"
trn() { "$BIN" train "$TINY" --results "$R" --quiet "$@"; }
trn --run-id a > /dev/null 2>&1 && trn --run-id b > /dev/null 2>&1
check "train runs a and b (exit 0)" test $? -eq 0
snap() { cp -a "$R/runs/b" "$W/b.before"; }
same() { cmp -s "$R/runs/b/$1" "$W/b.before/$1"; }
more=(train.steps=60 --allow-config-change)
snap

# a planted ckpt.tmp pointing at another run's checkpoint
ln -s "$R/runs/b/ckpt" "$R/runs/a/ckpt.tmp"
trn --resume a "${more[@]}" > "$W/o1" 2>&1; rc=$?
check "ckpt.tmp a link: the save is refused (exit $rc), naming the link" \
    bash -c "test $rc -ne 0 && grep -q 'ckpt.tmp.*symbolic link' '$W/o1'"
check "ckpt.tmp a link: the other run's checkpoint is unchanged" same ckpt
check "ckpt.tmp a link: the link is still a link (not renamed over ckpt)" \
    bash -c "test -L '$R/runs/a/ckpt.tmp' && test ! -L '$R/runs/a/ckpt'"
rm "$R/runs/a/ckpt.tmp"

# a planted trace.h5.prev.tmp
ln -s "$R/runs/b/trace.h5" "$R/runs/a/trace.h5.prev.tmp"
trn --resume a "${more[@]}" > "$W/o2" 2>&1; rc=$?
check "trace.h5.prev.tmp a link: refused (exit $rc), naming it" \
    bash -c "test $rc -ne 0 && grep -q 'trace.h5.prev.tmp.*symbolic link' '$W/o2'"
check "trace.h5.prev.tmp a link: the other run's trace is unchanged" same trace.h5
rm "$R/runs/a/trace.h5.prev.tmp"

# train.log a link to another run's log
mv "$R/runs/a/train.log" "$W/a.log"
ln -s "$R/runs/b/train.log" "$R/runs/a/train.log"
trn --resume a "${more[@]}" > "$W/o3" 2>&1; rc=$?
check "train.log a link: refused (exit $rc), naming it" \
    bash -c "test $rc -ne 0 && grep -q 'train.log is a symbolic link' '$W/o3'"
check "train.log a link: the other run's log is unchanged" same train.log
rm "$R/runs/a/train.log"; mv "$W/a.log" "$R/runs/a/train.log"

# runs/alias -> runs/b: resuming the alias would rewrite b as a second run
ln -s "$R/runs/b" "$R/runs/alias"
trn --resume alias "${more[@]}" > "$W/o4" 2>&1; rc=$?
check "--resume ALIAS (a link to run b's folder): refused (exit $rc), naming b's folder" \
    bash -c "test $rc -ne 0 && grep -q 'runs/alias is a symbolic link to .*runs/b' '$W/o4'"
check "--resume ALIAS: b's checkpoint and trace are unchanged" bash -c "$(declare -f same); R='$R' W='$W' same ckpt && R='$R' W='$W' same trace.h5"
check "--resume ALIAS: no run 'alias' in the registry" \
    test "$(sqlite3 "$R/gatelab.db" "select count(*) from runs where run_id='alias'")" = 0
rm "$R/runs/alias"

# the HTML page's temporary
echo precious > "$W/precious"
mkdir -p "$W/out"; ln -s "$W/precious" "$W/out/page.html.tmp"
"$BIN" report b --html --out "$W/out/page.html" --results "$R" > "$W/o5" 2>&1; rc=$?
check "report --html with OUT.tmp a link: refused (exit $rc), naming it" \
    bash -c "test $rc -ne 0 && grep -q 'page.html.tmp.*symbolic link' '$W/o5'"
check "report --html: the link's target is unchanged" test "$(cat "$W/precious")" = precious

# a table written in place
mkdir -p "$W/tab"; ln -s "$W/precious" "$W/tab/loss_by_variant.md"
"$BIN" tables --out "$W/tab" --results "$R" > "$W/o6" 2>&1
check "tables with a table a link: the link's target is unchanged" test "$(cat "$W/precious")" = precious

# and with no links, the resume goes through and leaves no temporary
trn --resume a "${more[@]}" > "$W/o7" 2>&1; rc=$?
check "no links: the resume finishes (exit $rc)" test $rc -eq 0
check "no .tmp files left in the run folder" bash -c "! ls '$R/runs/a' | grep -q 'tmp'"
