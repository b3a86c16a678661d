#!/usr/bin/env bash
# inert_knobs.sh — a knob the run's variant does not read is refused (issue 45
# item 9): set by the command line, a plan's arguments or a sweep axis, it
# would change no weight and no step, only the run's id (a sweep over it
# trains one model under several ids).  One line names the key and the variant
# it needs; nothing is created.  A value the manifest file itself sets stays
# accepted with the run id it always had (the paper's base manifests set
# tsa_lambda for every run); a knob set to its default, or under its variant,
# is accepted.  And a BPE run resumed with another data.vocab_size is refused,
# even with --allow-config-change (its merges are its vocabulary).
set -u
. "$(dirname "$0")/lib.sh"
scratch
refused() { # what, key, needs, args...
    local what=$1 key=$2 needs=$3; shift 3
    "$BIN" train "$TINY" "$@" --run-id inert --results "$R" --quiet > "$W/o" 2>&1; local rc=$?
    check "$what: refused (exit $rc), naming $key and $needs ($(head -c 240 "$W/o"))" \
        bash -c "[ $rc -ne 0 ] && grep -q '$key = .* has no effect without $needs' '$W/o' && [ \$(wc -l < '$W/o') -eq 1 ] && [ ! -e '$R/runs/inert' ]"
}
refused "sat_gate without SATFormer" model.sat_gate "model.value_residual = satformer" model.sat_gate=softmax
refused "sat_gate_bias on ResFormer" model.sat_gate_bias "model.value_residual = satformer" model.value_residual=resformer model.sat_gate_bias=1
refused "sat_gate_bias_init without the bias" model.sat_gate_bias_init "model.value_residual = satformer with model.sat_gate_bias = 1" \
    model.value_residual=satformer model.sat_gate_bias_init=1.2
refused "resformer_lambda1_init on SATFormer" model.resformer_lambda1_init "model.value_residual = resformer" \
    model.value_residual=satformer model.resformer_lambda1_init=0.09
refused "mod_capacity without MoD" model.mod_capacity "model.depth_routing = mod" model.mod_capacity=0.5
refused "mod_every on TSA" model.mod_every "model.depth_routing = mod" model.depth_routing=tsa model.mod_every=1
refused "tsa_lambda (lambda=) without TSA" model.tsa_lambda "model.depth_routing = tsa" lambda=0.1
refused "router_init_bias on early exit" model.router_init_bias "model.depth_routing = tsa" model.depth_routing=early_exit model.router_init_bias=0
refused "exit_weighting without early exit" model.exit_weighting "model.depth_routing = early_exit" model.exit_weighting=uniform
refused "random_alpha without random routing" model.random_alpha "model.depth_routing = random" model.random_alpha=0.3
refused "hc_expansion without hyper-connections" model.hc_expansion "model.cross_layer = hyper" model.hc_expansion=2
refused "value_residual_last_k on the baseline" model.value_residual_last_k "a model.value_residual other than none" model.value_residual_last_k=1

# a sweep over an inert knob: refused before anything is registered
"$BIN" sweep "$TINY" --axis model.mod_capacity=0.25,0.5 --dry-run --results "$R" > "$W/sw" 2>&1; rc=$?
check "sweep --axis model.mod_capacity on a model without MoD: refused (exit $rc: $(head -c 200 "$W/sw"))" \
    bash -c "[ $rc -ne 0 ] && grep -q 'model.mod_capacity = 0.25 has no effect without model.depth_routing = mod' '$W/sw'"
"$BIN" sweep "$TINY" model.depth_routing=mod --axis model.mod_capacity=0.25,0.5 --dry-run --results "$R" > "$W/sw" 2>&1; rc=$?
check "the same axis under MoD: 2 runs (exit $rc)" bash -c "[ $rc -eq 0 ] && grep -q ': 2 runs' '$W/sw'"

# accepted: under the variant, at the default, or as the manifest file itself sets it (ids as before)
"$BIN" train "$TINY" model.value_residual=satformer model.sat_gate=softmax model.n_kv_head=2 train.steps=2 \
    --run-id sm --results "$R" --quiet > "$W/o" 2>&1
check "sat_gate = softmax under SATFormer trains (exit $?)" test -s "$R/runs/sm/ckpt"
"$BIN" train "$TINY" model.tsa_lambda=0 model.mod_capacity=0.125 train.steps=2 --run-id dflt --results "$R" --quiet > "$W/o" 2>&1
check "inert knobs at their defaults are accepted (exit $?)" test -s "$R/runs/dflt/ckpt"
sed 's/^\[model\]$/[model]\ntsa_lambda = 0.01\nrouter_init_bias = -2.0/' "$TINY" > "$W/base.ini"
"$BIN" sweep "$W/base.ini" --axis value_residual=none,satformer --dry-run --results "$R" > "$W/sw" 2>&1; rc=$?
check "a base manifest that sets tsa_lambda for every run (as the paper's do) still expands (exit $rc)" \
    bash -c "[ $rc -eq 0 ] && grep -q ': 2 runs' '$W/sw'"
"$BIN" train "$W/base.ini" train.steps=2 --run-id base --results "$R" --quiet > "$W/o" 2>&1
check "... and trains a baseline from it (exit $?)" test -s "$R/runs/base/ckpt"

# a BPE run resumed with another data.vocab_size: refused, even with --allow-config-change
BPE=(data.tokenizer=bpe data.vocab_size=320 train.steps=20 train.ckpt_every=10)
"$BIN" train "$TINY" "${BPE[@]}" --run-id b --results "$R" --quiet > "$W/o" 2>&1
check "a BPE run trains (exit $?)" test -s "$R/runs/b/ckpt"
ck=$(sha256sum "$R/runs/b/ckpt" | cut -c1-64); ini=$(sha256sum "$R/runs/b/config.ini" | cut -c1-64)
"$BIN" train --resume b data.vocab_size=300 train.steps=30 --allow-config-change --results "$R" --quiet > "$W/o" 2>&1; rc=$?
check "resume with data.vocab_size 320 -> 300 under --allow-config-change: refused (exit $rc: $(head -c 240 "$W/o"))" \
    bash -c "[ $rc -ne 0 ] && grep -q 'data.vocab_size = 300, but the run.s BPE tokenizer (its 64 merges' '$W/o'"
check "... the checkpoint and config.ini are as they were" \
    test "$(sha256sum "$R/runs/b/ckpt" | cut -c1-64)" = "$ck" -a "$(sha256sum "$R/runs/b/config.ini" | cut -c1-64)" = "$ini"
"$BIN" train --resume b train.steps=30 --allow-config-change --results "$R" --quiet > "$W/o" 2>&1; rc=$?
check "resume with the same vocabulary trains on (exit $rc)" test $rc -eq 0
