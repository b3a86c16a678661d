#!/usr/bin/env bash
# exit_paper.sh — early exit in the TSA paper's official form (model.exit_form = paper; docs/model.md
# "Early exit"), driven through build/gatelab on real files and a real registry: the key's
# refusals name what to set; a paper-form run has an exit norm per block but the last (the
# export's datasets); eval at τ reports α in both conventions, every pair really run;
# `eval --tau-protocol paper` chooses one of the 13 official thresholds and records
# matched_paper.*; the same on the gpt2 backbone (LayerNorm exit norms with biases); a
# gatelab-form run (the default) has no exit norm.
set -u
. "$(dirname "$0")/lib.sh"
scratch
q() { sqlite3 "$R/gatelab.db" "$1"; }
SMALL="model.d_model=32 model.n_layer=4 model.n_head=2 model.n_kv_head=2 model.d_ff=64 model.seq_len=32
       train.steps=12 train.batch_size=4 train.threads=1 train.eval_every=6 train.eval_windows=4
       train.ckpt_every=12 train.log_every=6 log.probe_windows=2"
EE="model.depth_routing=early_exit"

out=$("$BIN" train "$TINY" $SMALL $EE model.exit_form=paper --run-id bad --results "$R" --quiet 2>&1)
check "exit_form = paper with linear weights is refused, naming exit_weighting" \
    grep -q "model.exit_weighting = uniform" <<< "$out"
out=$("$BIN" train "$TINY" $SMALL model.exit_form=paper model.exit_weighting=uniform --run-id bad2 --results "$R" \
      --quiet 2>&1)
check "exit_form = paper without early exit is refused, naming depth_routing" \
    grep -q "model.depth_routing = early_exit" <<< "$out"

"$BIN" train "$TINY" $SMALL $EE model.exit_form=paper model.exit_weighting=uniform --run-id ep --results "$R" \
    --quiet > "$W/ep.out" 2>&1
check "a paper-form early-exit run trains (exit 0)" test $? -eq 0
check "its headline's hard.* (τ 0.5) holds both α, hard.active_frac_paper = (1 + 3·hard.active_frac)/4, and run_frac 1" \
    test "$(q "select count(*) from metrics a join metrics b on a.run_id=b.run_id and a.split=b.split
              where a.run_id='ep' and a.split='val' and a.name='hard.active_frac_paper' and b.name='hard.active_frac'
              and abs(a.value - (1 + 3*b.value)/4) < 1e-6")" = 1 \
      -a "$(q "select value from metrics where run_id='ep' and split='val' and name='hard.run_frac'")" = 1.0
"$BIN" export ep --results "$R" --out "$W/ep.h5" > /dev/null 2>&1
names=$(h5ls "$W/ep.h5" 2> /dev/null | awk '{print $1}')
check "its export has layers.{0,1,2}.exit_norm and no layers.3.exit_norm (the final norm is the last block's)" \
    test "$(grep -c '^layers\.[0-2]\.exit_norm$' <<< "$names")" = 3 -a "$(grep -c '^layers\.3\.exit_norm$' <<< "$names")" = 0
check "the export's exit_form attribute is paper" \
    grep -q '"paper"' <(h5dump -A "$W/ep.h5" 2> /dev/null | grep -A12 'ATTRIBUTE "exit_form"')

j=$("$BIN" eval ep --results "$R" --tau 0.3 2> /dev/null)
check "eval --tau reports both α: active_frac and active_frac_paper = (1 + 3·α)/4" \
    python3 -c 'import json,sys; e=json.loads(sys.argv[1])["exit"]; a=e["active_frac"]; p=e["active_frac_paper"]
assert abs(p - (1 + 3 * a) / 4) < 1e-6 and a >= 1 / 3 - 1e-9, (a, p)' "$j"
check "every (token, block >= 1) pair really ran (run_frac 1)" \
    python3 -c 'import json,sys; assert json.loads(sys.argv[1])["exit"]["run_frac"] == 1.0' "$j"

"$BIN" sample ep --results "$R" --tau 0.3 --tokens 20 --prompt "the " > "$W/s.out" 2> "$W/s.err"
check "sample --tau generates on the uncached path and says why (the KV cache freezes exited states)" \
    test $? -eq 0 -a "$(wc -c < "$W/s.out")" -ge 20 -a -n "$(grep -l 'exit_form = paper' "$W/s.err")"
j=$("$BIN" eval ep --results "$R" --match-alpha 0.8 --tau-protocol paper --record 2> "$W/pp.err")
check "eval --tau-protocol paper --record succeeds" test $? -eq 0
check "its JSON line lists the 13 thresholds of the official sweep, 30 batches of 4 windows each" \
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); s=d["paper_sweep"]
assert d["tau_protocol"] == "paper" and [r["tau"] for r in s] == [0.99,0.95,0.9,0.85,0.8,0.75,0.7,0.65,0.6,0.55,0.5,0.4,0.3]
assert all(r["windows"] == 120 for r in s)' "$j"
check "matched_paper.tau is one of them and matched_paper.alpha_target is 0.8" \
    test "$(q "select count(*) from metrics where run_id='ep' and name='matched_paper.tau'
              and value in (0.99,0.95,0.9,0.85,0.8,0.75,0.7,0.65,0.6,0.55,0.5,0.4,0.3)")" = 1 \
      -a "$(q "select value from metrics where run_id='ep' and name='matched_paper.alpha_target'")" = 0.8
check "the protocol's rows are apart from gatelab's (no matched.*)" \
    test "$(q "select count(*) from metrics where run_id='ep' and name like 'matched.%'")" = 0
"$BIN" train "$TINY" $SMALL $EE --run-id eg --results "$R" --quiet > /dev/null 2>&1
check "compare shows val/matched_paper.tau beside the other run" \
    grep -q "val/matched_paper.tau" <("$BIN" compare ep eg --results "$R" --format csv 2> /dev/null)

"$BIN" train "$TINY" $SMALL $EE model.exit_form=paper model.exit_weighting=uniform model.backbone=gpt2 \
    model.qk_norm=0 --run-id eg2 --results "$R" --quiet > /dev/null 2>&1
check "on the gpt2 backbone it trains, with LayerNorm exit norms: layers.{0,1,2}.exit_norm_bias in the export" \
    test "$("$BIN" export eg2 --results "$R" --out "$W/eg2.h5" > /dev/null 2>&1;
            h5ls "$W/eg2.h5" 2> /dev/null | awk '{print $1}' | grep -c '^layers\.[0-2]\.exit_norm_bias$')" = 3
j=$("$BIN" eval eg2 --results "$R" --tau 0.3 2> /dev/null)
check "and eval --tau on it reports both α" \
    python3 -c 'import json,sys; e=json.loads(sys.argv[1])["exit"]
assert abs(e["active_frac_paper"] - (1 + 3 * e["active_frac"]) / 4) < 1e-6' "$j"
"$BIN" export eg --results "$R" --out "$W/eg.h5" > /dev/null 2>&1
check "a gatelab-form run (the default) has no exit norm" \
    test -s "$W/eg.h5" -a "$(h5ls "$W/eg.h5" 2> /dev/null | grep -c exit_norm)" = 0
