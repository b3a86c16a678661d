#!/usr/bin/env bash
# paper_model.sh — the real `gatelab` with the TSA paper's own model (docs/model.md "The TSA paper's
# own configuration"): model.backbone = gpt2, model.dropout, model.tsa_form = paper on the test's own
# corpus.  A tiny run trains and records the keys; the export carries the gpt2 tensors; a kill -9 +
# --resume with dropout ends bit for bit like never stopping (the masks come from the seed and the
# step); dropout changes the training losses but not what evaluation computes; eval --sparse runs, and
# --sparse=paper --record writes hard_paper.*;
# sample with the KV cache writes the uncached text; a default run records the new keys at their
# defaults (late keys: left out of its identity); bad values are refused naming the key.
set -u
. "$(dirname "$0")/lib.sh"
scratch
P=(model.backbone=gpt2 model.qk_norm=0 model.norm_eps=1e-5 model.n_kv_head=2 model.depth_routing=tsa
   model.tsa_form=paper model.router_init_bias=-1 model.tsa_lambda=0.01 model.dropout=0.1)

"$BIN" train "$TINY" "${P[@]}" --run-id p --results "$R" --quiet > "$W/p.out" 2>&1
check "gpt2 + tsa paper + dropout: a tiny run finishes (exit 0)" test $? -eq 0
check "config.ini records backbone = gpt2, dropout = 0.1, tsa_form = paper" bash -c \
    "grep -q '^backbone = gpt2\$' '$R/runs/p/config.ini' && grep -q '^dropout = 0.1\$' '$R/runs/p/config.ini' &&
     grep -q '^tsa_form = paper\$' '$R/runs/p/config.ini'"
"$BIN" export p --out "$W/p.h5" --results "$R" > /dev/null 2>&1
check "export carries pos_embed, the norm biases, ffn.b1/b2 and no ffn.w3 (h5dump)" bash -c \
    "h5dump -H '$W/p.h5' > '$W/p.txt' && grep -q 'DATASET \"pos_embed\"' '$W/p.txt' &&
     grep -q 'layers.1.attn_norm_bias' '$W/p.txt' && grep -q 'layers.0.ffn.b2' '$W/p.txt' &&
     grep -q 'final_norm_bias' '$W/p.txt' && ! grep -q 'ffn.w3' '$W/p.txt'"
check "export's attributes name the backbone and the TSA form" bash -c \
    "h5dump -a backbone '$W/p.h5' | grep -q '\"gpt2\"' && h5dump -a tsa_form '$W/p.h5' | grep -q '\"paper\"'"

# kill -9 after a checkpoint + resume, with dropout on
GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" "${P[@]}" --run-id pk --results "$R" --quiet > /dev/null 2>&1
rc=$?
check "SIGKILL after the step-20 checkpoint (exit $rc = 137)" test $rc -eq 137
"$BIN" train "$TINY" "${P[@]}" --resume pk --results "$R" --quiet > /dev/null 2>&1
ha=$(last_hex p); hb=$(last_hex pk)
check "dropout: kill -9 + resume ends bit for bit like never stopping ($ha = $hb)" test -n "$ha" -a "$ha" = "$hb"

# dropout 0 differs in training; evaluation of one checkpoint runs without dropout (eval twice: same)
"$BIN" train "$TINY" "${P[@]}" model.dropout=0 --run-id p0 --results "$R" --quiet > /dev/null 2>&1
h0=$(last_hex p0)
check "dropout 0.1 trains another model than dropout 0 ($ha != $h0)" test -n "$h0" -a "$ha" != "$h0"
"$BIN" eval p --sparse --results "$R" > "$W/e1.json" 2> "$W/e1.err"
check "eval --sparse of the paper model exits 0" test $? -eq 0
"$BIN" eval p --sparse --results "$R" > "$W/e2.json" 2> /dev/null
T='s/"tokens_per_s":[0-9.e+-]*//g; s/"sparse_speedup":[0-9.e+-]*//g' # the timings
check "evaluation has no dropout: two evals give the same JSON but for the timings" bash -c \
    "test \"\$(sed '$T' '$W/e1.json')\" = \"\$(sed '$T' '$W/e2.json')\""
# eval --sparse=paper: the TSA paper's skipping (p >= 0.5 halts, FFN gathered, kept update unscaled) beside
# gatelab's; its soft pass is the same model's, so only the sparse part may differ
"$BIN" eval p --sparse=paper --results "$R" > "$W/ep.json" 2> "$W/ep.err"
check "eval --sparse=paper exits 0 and says sparse_form paper (--sparse says gatelab)" bash -c \
    "grep -q '\"sparse_form\":\"paper\"' '$W/ep.json' && grep -q '\"sparse_form\":\"gatelab\"' '$W/e1.json'"
S='s/.*"soft":{\([^}]*\)}.*/\1/; s/"tokens_per_s":[0-9.e+-]*//g'
check "--sparse=paper's soft pass equals --sparse's" bash -c "test \"\$(sed '$S' '$W/ep.json')\" = \"\$(sed '$S' '$W/e1.json')\""
"$BIN" eval p --sparse=bogus --results "$R" > /dev/null 2> "$W/eb.err"; rc=$?
check "--sparse=bogus is refused naming the choices (exit $rc = 2)" bash -c "test $rc -eq 2 && grep -q 'paper' '$W/eb.err'"
"$BIN" eval p --sparse=paper --record --results "$R" > /dev/null 2> "$W/er.err"; rc=$?
check "--sparse=paper --record writes the paper's form as hard_paper.*, hard.* stays gatelab's (exit $rc; paper_post_forms.sh)" \
    bash -c "test $rc -eq 0 && test \"\$(sqlite3 '$R/gatelab.db' \"select count(*) from metrics a join metrics b
             on a.run_id=b.run_id and a.step=b.step where a.run_id='p' and a.name='hard_paper.loss' and b.name='hard.loss'
             and a.value<>b.value\")\" -ge 1"
"$BIN" sample p --tokens 40 --temperature 0 --results "$R" > "$W/s1.txt" 2> /dev/null
rc=$?
"$BIN" sample p --tokens 40 --temperature 0 --no-cache --results "$R" > "$W/s2.txt" 2> /dev/null
check "sample with the KV cache (exit $rc) writes the uncached path's text at temperature 0" bash -c \
    "test $rc -eq 0 && test -s '$W/s1.txt' && cmp -s '$W/s1.txt' '$W/s2.txt'"

# a default run: the new keys are late, at their defaults left out of its identity (hash unchanged)
"$BIN" train "$TINY" train.steps=2 --run-id d --results "$R" --quiet > /dev/null 2>&1
check "a default run records backbone = llama, dropout = 0, tsa_form = gatelab" bash -c \
    "grep -q '^backbone = llama\$' '$R/runs/d/config.ini' && grep -q '^dropout = 0\$' '$R/runs/d/config.ini' &&
     grep -q '^tsa_form = gatelab\$' '$R/runs/d/config.ini'"

# refused values name the key
for bad in "model.backbone=gpt2" "model.backbone=gpt2 model.qk_norm=0 model.cross_layer=hyper" \
           "model.dropout=1" "model.dropout=0.1 model.depth_routing=mod" "model.tsa_form=bogus" "model.backbone=gpt3" \
           "model.tsa_form=paper"; do
    key=$(echo "$bad" | awk '{print $NF}' | sed 's/=.*//; s/^model\.//')
    [ "$bad" = "model.backbone=gpt2" ] && key=qk_norm
    [ "$bad" = "model.dropout=0.1 model.depth_routing=mod" ] && key=dropout
    "$BIN" train "$TINY" $bad --run-id bad --results "$R" --quiet > "$W/bad.out" 2>&1
    rc=$?
    check "refused: $bad (exit $rc != 0, names $key)" bash -c "test $rc -ne 0 && grep -q '$key' '$W/bad.out'"
done
