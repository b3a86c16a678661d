#!/usr/bin/env bash
# tasks.sh — real training on the synthetic tasks with the routed models:
# a copy run with TSA reaches >= 99 % token accuracy; sparse inference and the
# matched-α early-exit comparison work through `gatelab eval`; sort and mqar train.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
R="$W/results"
SMALL="model.d_model=32 model.n_layer=3 model.n_head=2 model.n_kv_head=2 model.d_ff=64 model.seq_len=21
       train.batch_size=32 train.threads=2 train.lr=1e-2 train.warmup=20 train.eval_every=50 train.eval_windows=64"
jnum() { sed -n "s/.*\"$1\":{[^}]*\"$2\":\([-0-9.e]*\).*/\1/p"; }

"$BIN" train experiments/copy_tsa.ini $SMALL train.steps=150 --run-id copy --results "$R" --quiet
check "copy + TSA trains (exit 0)" test $? -eq 0
acc=$(sed -n 's/^step 150 | .*token acc \([0-9.]*\).*/\1/p' "$R/runs/copy/train.log")
check "copy + TSA reaches >= 99 % token accuracy (got $acc)" awk -v a="$acc" 'BEGIN{exit !(a >= 0.99)}'

out=$("$BIN" eval copy --results "$R" --sparse --windows 64)
echo "$out"
soft=$(echo "$out" | jnum soft loss); sparse=$(echo "$out" | jnum sparse loss); alpha=$(echo "$out" | jnum sparse active_frac)
check "eval --sparse reports soft and sparse loss ($soft, $sparse) and α ($alpha)" test -n "$soft" -a -n "$sparse" -a -n "$alpha"

"$BIN" train experiments/copy_tsa.ini $SMALL train.steps=150 model.depth_routing=early_exit --run-id exit --results "$R" --quiet
check "copy + early exit trains (exit 0)" test $? -eq 0
target=0.6
out=$("$BIN" eval exit --results "$R" --match-alpha $target --windows 64 2>&1)
echo "$out"
got=$(echo "$out" | jnum exit active_frac)
check "early exit matched to α $target (got $got, within 0.005)" awk -v a="$got" -v t="$target" 'BEGIN{d=a-t; if(d<0)d=-d; exit !(a != "" && d <= 0.005)}'

"$BIN" train experiments/copy_tsa.ini $SMALL train.steps=30 data.task=sort --run-id sort --results "$R" --quiet
check "sort task trains" test $? -eq 0
"$BIN" train experiments/copy_tsa.ini $SMALL train.steps=30 data.task=mqar model.seq_len=24 data.mqar_pairs=6 data.mqar_queries=4 --run-id mqar --results "$R" --quiet
check "mqar task trains" test $? -eq 0
check "mqar eval reports token accuracy" bash -c "'$BIN' eval mqar --results '$R' --windows 16 | grep -q token_acc"
