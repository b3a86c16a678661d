#!/usr/bin/env bash
# train.sh — the real `gatelab train` on the test's own corpus (tests/corpus.h):
# the loss falls, two identical runs agree bit for bit, a run killed with
# SIGKILL right after a checkpoint (GATELAB_KILL_AFTER_CKPT) and resumed equals
# never stopping, resuming a finished run changes nothing, and bad inputs give
# a clear error, a non-zero exit and leave files untouched.  One check trains
# on Tiny Shakespeare itself and is skipped, with the reason, without it.
set -u
. "$(dirname "$0")/lib.sh"
REAL=$(data_path tinyshakespeare.txt)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"

"$BIN" train "$TINY" --run-id a --results "$R" --quiet > "$W/a.out" 2>&1
check "a tiny run finishes (exit 0)" test $? -eq 0
first=$(sed -n 's/^step 0 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/a/train.log" | head -1)
final=$(sed -n 's/^step 40 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/a/train.log" | tail -1)
check "validation loss falls ($first -> $final)" awk -v a="$first" -v b="$final" 'BEGIN{exit !(b + 0.3 < a)}'
check "run folder holds config.ini, ckpt, trace.h5, train.log" test -s "$R/runs/a/config.ini" -a -s "$R/runs/a/ckpt" -a -s "$R/runs/a/trace.h5" -a -s "$R/runs/a/train.log"
check "the registry marks the run FINISHED" test "$(sqlite3 "$R/gatelab.db" "select status from runs where run_id='a'")" = FINISHED

"$BIN" train "$TINY" --run-id b --results "$R" --quiet > /dev/null 2>&1
ha=$(last_hex a); hb=$(last_hex b)
check "two identical runs agree bit for bit ($ha = $hb)" test -n "$ha" -a "$ha" = "$hb"

# SIGKILL (what kill -9 sends) at a known point: right after the checkpoint of step 20
GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" --run-id c --results "$R" --quiet > "$W/c0.out" 2>&1
rc=$?
check "the run died of SIGKILL after its step-20 checkpoint (exit $rc = 137)" test $rc -eq 137
check "the killed run left a checkpoint" test -s "$R/runs/c/ckpt"
check "the killed run is not FINISHED" test "$(sqlite3 "$R/gatelab.db" "select status from runs where run_id='c'")" != FINISHED
check "the killed run's log stops at step 20" bash -c "grep -q '^step 20 ' '$R/runs/c/train.log' && ! grep -qE '^(step 2[5-9]|step 3|step 40|finished)' '$R/runs/c/train.log'"
"$BIN" train "$TINY" --resume c --results "$R" --quiet > "$W/c.out" 2>&1
check "resume exits 0" test $? -eq 0
hc=$(last_hex c)
check "kill -9 + resume ends bit for bit like never stopping ($hc = $ha)" test -n "$hc" -a "$hc" = "$ha"

# resuming a finished run: a clear message, exit 0, nothing appended anywhere
log_before=$(sha256sum < "$R/runs/a/train.log"); ckpt_before=$(sha256sum < "$R/runs/a/ckpt")
n_before=$(sqlite3 "$R/gatelab.db" "select count(*) from metrics where run_id='a'")
"$BIN" train "$TINY" --resume a --results "$R" > "$W/fin.out" 2>&1
rc=$?
check "resume of a FINISHED run exits 0 (exit $rc)" test $rc -eq 0
check "resume of a FINISHED run says it has already finished" grep -q "run a has already finished" "$W/fin.out"
check "resume of a FINISHED run appends nothing (log, checkpoint, metrics; no nan)" \
    test "$(sha256sum < "$R/runs/a/train.log")" = "$log_before" -a "$(sha256sum < "$R/runs/a/ckpt")" = "$ckpt_before" \
    -a "$(sqlite3 "$R/gatelab.db" "select count(*) from metrics where run_id='a'")" = "$n_before"
check "the finished run is still FINISHED" test "$(sqlite3 "$R/gatelab.db" "select status from runs where run_id='a'")" = FINISHED
check "h5dump opens the resumed trace" bash -c "h5dump -H '$R/runs/c/trace.h5' > /dev/null"

# bad inputs: non-zero exit, a message naming what is wrong
expect_fail() { # what, pattern, command...
    local what=$1 pat=$2; shift 2
    "$@" > "$W/err.out" 2>&1; local rc=$?
    if [ $rc -ne 0 ] && grep -qiE "$pat" "$W/err.out"; then pass "$what"; else fail "$what (rc $rc: $(head -c 300 "$W/err.out"))"; fi
}
expect_fail "missing manifest" "nope.ini" "$BIN" train "$W/nope.ini" --results "$R"
printf '[model]\nd_mdoel = 32\n' > "$W/bad1.ini"
expect_fail "unknown key names file, line and key" "bad1.ini:2.*d_mdoel" "$BIN" train "$W/bad1.ini" --results "$R"
printf '[train]\nlr = fast\n' > "$W/bad2.ini"
expect_fail "malformed value names the key" "lr" "$BIN" train "$W/bad2.ini" --results "$R"
expect_fail "malformed override" "batch_size" "$BIN" train "$TINY" train.batch_size=-3 --results "$R"
expect_fail "missing data file: names it and every folder searched, and make data" \
    "missing.txt not found; searched $W/data/missing.txt \\(\\\$GATELAB_DATA\\).*data/ in the clone.*make data" \
    "$BIN" train "$TINY" data.file=missing.txt --results "$R"
: > "$W/empty.txt"
expect_fail "empty data file" "empty" "$BIN" train "$TINY" data.file="$W/empty.txt" --results "$R"
printf 'x' > "$W/one.txt"
expect_fail "one-byte data file" "one.txt" "$BIN" train "$TINY" data.file="$W/one.txt" --results "$R"

sum_before=$(sha256sum "$R/runs/a/ckpt" | cut -d' ' -f1)
expect_fail "checkpoint from another config is refused" "config|model" "$BIN" train "$TINY" model.d_model=64 --resume a --results "$R"
check "the refused checkpoint is untouched" test "$(sha256sum "$R/runs/a/ckpt" | cut -d' ' -f1)" = "$sum_before"
cp -r "$R/runs/a" "$R/runs/t"
head -c 1000 "$R/runs/a/ckpt" > "$R/runs/t/ckpt"
expect_fail "truncated checkpoint" "truncated" "$BIN" eval t --results "$R"
cp "$R/runs/a/ckpt" "$R/runs/t/ckpt"
printf '\x55' | dd of="$R/runs/t/ckpt" bs=1 seek=5000 conv=notrunc 2> /dev/null
expect_fail "corrupted checkpoint" "corrupt|checksum" "$BIN" eval t --results "$R"
check "eval prints a JSON line with loss and tokens" bash -c "'$BIN' eval a --results '$R' --windows 4 | grep -q '\"loss\":[0-9].*\"tokens\":[0-9]'"
head -c 2000 "$GATELAB_DATA/corpus.txt" > "$W/sample.txt"
check "eval --text on a file" bash -c "'$BIN' eval a --results '$R' --text '$W/sample.txt' --windows 3 | grep -q '\"tokens\":96'"
printf 'caf\xc3\xa9 ~ \x01' > "$W/odd.txt"
expect_fail "eval --text with a byte missing from the vocabulary" "0x" "$BIN" eval a --results "$R" --text "$W/odd.txt"
check "sample generates text" bash -c "'$BIN' sample a --results '$R' --tokens 40 --prompt 'ROMEO:' | grep -q '^ROMEO:'"

# the real data set, where it is: the same tiny run on Tiny Shakespeare
if [ -n "$REAL" ]; then
    "$BIN" train "$TINY" data.file="$REAL" --run-id ts --results "$R" --quiet > "$W/ts.out" 2>&1
    check "Tiny Shakespeare ($REAL): a tiny run finishes (exit 0)" test $? -eq 0
    first=$(sed -n 's/^step 0 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/ts/train.log" | head -1)
    final=$(sed -n 's/^step 40 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/ts/train.log" | tail -1)
    check "Tiny Shakespeare: validation loss falls ($first -> $final)" awk -v a="$first" -v b="$final" 'BEGIN{exit !(b + 0.3 < a)}'
else
    skip "Tiny Shakespeare: a tiny run whose loss falls (tinyshakespeare.txt not found by \`gatelab data\`; \`make data\` fetches it)"
fi

# the headline: after the last step, the whole validation split (the periodic evaluations read 4 windows)
q() { sqlite3 "$R/gatelab.db" "$1"; }
hl=$(q "select win_first || ' ' || win_count || ' ' || printf('%.0f', tokens) || ' ' || step from metrics where run_id='a' and split='val' and name='final.loss'")
set -- $hl
check "a finished run records its headline on the whole validation split (windows [${1:-?}, ${2:-?}), ${3:-?} tokens, step ${4:-?})" \
    test -n "$hl" -a "${1:-x}" = 0 -a "${2:-0}" -gt 4 -a "${3:-0}" = "$(( ${2:-0} * 32 ))" -a "${4:-x}" = 40
check "the headline loss has a standard error" test "$(q "select se > 0 from metrics where run_id='a' and name='final.loss'")" = 1
check "periodic val rows say they rest on 4 windows (128 tokens)" \
    test "$(q "select count(*) from metrics where run_id='a' and split='val' and name='loss' and win_count = 4 and tokens = 128")" -ge 2
check "train.log states the headline and its tokens" grep -q "^headline: val loss .* over the whole val split" "$R/runs/a/train.log"
# one name per loss: "val loss" alone is the headline; the others say what they are
check "train.log names each loss for what it is (train loss (last N batches), val loss (N-token probe), objective of the last batch)" \
    bash -c "grep -qE '^step [0-9]+/40 \| train loss \(last [0-9]+ batches\) [0-9.]+ \|' '$R/runs/a/train.log' &&
             grep -qE '^step 40 \| val loss \(128-token probe\) [0-9.]+' '$R/runs/a/train.log' &&
             grep -qE '\| objective of the last batch [0-9.]+ \(0x' '$R/runs/a/train.log' &&
             ! grep -qE '\| (loss|val loss) [0-9]' '$R/runs/a/train.log'"
check "runs shows the headline with what it was measured on" bash -c "'$BIN' runs --db '$R/gatelab.db' | grep '^a ' | grep -q 'val\[0,'"

# resume with a changed configuration: refused naming the keys, or continued and recorded with --allow-config-change
sum_b=$(sha256sum "$R/runs/b/ckpt" | cut -d' ' -f1)
expect_fail "resume with a changed train.steps is refused, naming the key and both values" "train.steps: 40 -> 50" \
    "$BIN" train "$TINY" train.steps=50 --resume b --results "$R"
check "the refused resume changes nothing (checkpoint, config.ini)" \
    test "$(sha256sum "$R/runs/b/ckpt" | cut -d' ' -f1)" = "$sum_b" -a "$(grep -c '^steps = 40' "$R/runs/b/config.ini")" = 1
"$BIN" train "$TINY" train.steps=50 --resume b --allow-config-change --results "$R" --quiet > "$W/b2.out" 2>&1
check "--allow-config-change continues the run to step 50" \
    test $? -eq 0 -a "$(q "select max(step) from metrics where run_id='b' and split='train'")" = 50
check "the registry records the change (run_events, params, config text)" \
    test "$(q "select count(*) from run_events where run_id='b' and kind='config_change' and detail like '%train.steps: 40 -> 50%'")" = 1 \
    -a "$(q "select value from params where run_id='b' and key='train.steps'")" = 50 \
    -a "$(q "select config_text like '%steps = 50%' from runs where run_id='b'")" = 1
# the registry says which BLAS kernels, variables and threads made each attempt's numbers
env_b=$(q "select detail from run_events where run_id='b' and kind='environment' order by time, rowid limit 1")
check "each attempt records its environment (OpenBLAS config and kernel, OPENBLAS_CORETYPE, threads, cpu)" \
    test "$(q "select count(*) from run_events where run_id='b' and kind='environment'")" = 2
check "the environment names the kernel and says whether OPENBLAS_CORETYPE was set, as it was" \
    bash -c "case '$env_b' in *'| kernel '?*' | OPENBLAS_CORETYPE ${OPENBLAS_CORETYPE:-unset}, OPENBLAS_L2_SIZE ${OPENBLAS_L2_SIZE:-unset} | '[0-9]*' OpenMP threads | cpu '?*) exit 0;; *) exit 1;; esac"
check "config.ini holds the new values and a line saying what changed" \
    bash -c "grep -q '^; resumed at step 40 with --allow-config-change: train.steps: 40 -> 50' '$R/runs/b/config.ini' && grep -q '^steps = 50' '$R/runs/b/config.ini'"

# issue 45 item 4: a hand edit of config.ini is a change too (compared with the config the checkpoint
# stores, never config.ini with itself), and a config.ini past 64 KiB is read whole
sed -i 's/^steps = 50$/steps = 60/; s/^lr = .*/lr = 0.002/' "$R/runs/b/config.ini"
sum_b=$(sha256sum "$R/runs/b/ckpt" | cut -d' ' -f1)
expect_fail "resume after hand-editing config.ini (steps, lr) is refused, naming both keys" "train.steps: 50 -> 60" \
    "$BIN" train --resume b --results "$R"
"$BIN" train --resume b --results "$R" > "$W/b3.out" 2>&1
check "... the message names train.lr too, and the checkpoint is unchanged" \
    bash -c "grep -q 'train.lr: 0.003 -> 0.002' '$W/b3.out' && test \"\$(sha256sum '$R/runs/b/ckpt' | cut -d' ' -f1)\" = '$sum_b'"
{ for i in $(seq 1200); do echo "; padding line $i of a config.ini longer than 64 KiB ......................."; done
  cat "$R/runs/b/config.ini"; } > "$W/b.ini" && cp "$W/b.ini" "$R/runs/b/config.ini"
"$BIN" train --resume b --allow-config-change --results "$R" --quiet > "$W/b4.out" 2>&1; rc=$?
check "--allow-config-change after the hand edit trains on to step 60 (exit $rc: $(tail -c 200 "$W/b4.out"))" \
    test $rc -eq 0 -a "$(q "select max(step) from metrics where run_id='b' and split='train'")" = 60
check "the hand edit is a config_change event, and the registry's config text has the new values" \
    test "$(q "select count(*) from run_events where run_id='b' and kind='config_change' and detail like '%train.steps: 50 -> 60%' and detail like '%train.lr: 0.003 -> 0.002%'")" = 1 \
    -a "$(q "select config_text like '%steps = 60%' and config_text like '%lr = 0.002%' from runs where run_id='b'")" = 1
check "config.ini past 64 KiB: every earlier comment line kept ($(grep -c '^; padding line' "$R/runs/b/config.ini") of 1200)" \
    test "$(grep -c '^; padding line' "$R/runs/b/config.ini")" = 1200
