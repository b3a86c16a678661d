#!/usr/bin/env bash
# satgate.sh — SATFormer's gate knobs (model.sat_gate, model.sat_gate_bias,
# model.sat_gate_bias_init), ResFormer's start (model.resformer_lambda1_init)
# and the official code's single AdamW group (train.weight_decay_policy = all)
# through the real `gatelab train | analyze | ablate | heads | report --html |
# export` on tiny runs trained here on the test's own corpus: the softmax gate
# averages 1 over the KV heads of every token (trace and analysis), the bias
# starts α at its initial value, ResFormer's λ1 starts where it is told, the
# knobs are refused where they mean nothing, every knob changes training, and
# a run killed after a checkpoint and resumed ends bit for bit like one never
# stopped, for each knob.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1 # tiny models: one thread is fastest and immune to a busy machine
R="$W/results"
# 3 blocks (2 gated), 2 KV heads (softmax needs two), probes of 4 x 32 tokens
X=(model.n_layer=3 model.n_kv_head=2 train.steps=30 train.eval_every=10 train.ckpt_every=10 train.threads=1
   log.probe_windows=4 log.experiment=satgate)
trn() { local id=$1; shift; "$BIN" train "$TINY" "${X[@]}" "$@" --run-id "$id" --results "$R" --quiet > "$W/$id.out" 2>&1; }
# value of a trace dataset at one index (h5dump's own reading of the file)
h5val() { h5dump -d "$2" -s "$3" -c "$4" -w 0 "$1" 2>/dev/null | sed -n 's/^ *(\([0-9,]*\)): \(.*\)$/\2/p' | tr -d ' ' | head -1; }

SAT=(model.value_residual=satformer)
trn sm "${SAT[@]}" model.sat_gate=softmax
check "train SATFormer with sat_gate = softmax (exit 0)" test $? -eq 0
trn bias "${SAT[@]}" model.sat_gate_bias=1 model.sat_gate_bias_init=1.2
check "train SATFormer with a gate bias starting at 1.2 (exit 0)" test $? -eq 0
trn relu "${SAT[@]}"
check "train plain SATFormer (exit 0)" test $? -eq 0
for g in sigmoid softmax_sigmoid tanh identity; do
    trn "g_$g" "${SAT[@]}" model.sat_gate=$g
    check "train SATFormer with sat_gate = $g (exit 0, a final loss)" test $? -eq 0 -a -n "$(last_hex "g_$g")"
done
hexes=$(for r in relu sm bias g_sigmoid g_softmax_sigmoid g_tanh g_identity; do last_hex $r; done | sort -u | wc -l)
check "every gate function and the bias train differently (7 runs, $hexes distinct final losses)" test "$hexes" -eq 7
check "the run's config records the knobs" \
    grep -qx 'sat_gate = softmax' "$R/runs/sm/config.ini" -a -n "$(grep -x 'sat_gate_bias = 1' "$R/runs/bias/config.ini")"

# ---- the trace: α as the gate function defines it ----
TS="$R/runs/sm/trace.h5"
a0=$(h5val "$TS" /sat/alpha 3,1,5,0 1,1,1,1); a1=$(h5val "$TS" /sat/alpha 3,1,5,1 1,1,1,1)
check "softmax: one token's α over its 2 KV heads sums to 2 ($a0 + $a1)" \
    awk -v a="$a0" -v b="$a1" 'BEGIN { s = a + b - 2; exit !(a != "" && b != "" && a != b && s < 1e-5 && s > -1e-5) }'
b0=$(h5val "$R/runs/bias/trace.h5" /sat/alpha 0,1,0,0 1,1,1,1)
check "the bias run's α starts near its bias, 1.2 (step 0: $b0)" awk -v a="$b0" 'BEGIN { exit !(a != "" && a > 0.9 && a < 1.5) }'
r0=$(h5val "$R/runs/relu/trace.h5" /sat/alpha 0,1,0,0 1,1,1,1)
check "without the bias α starts near 0 (step 0: $r0)" awk -v a="$r0" 'BEGIN { exit !(a != "" && a >= 0 && a < 0.5) }'

# ---- analyze ----
"$BIN" analyze sm --results "$R" > "$W/an1" 2>&1
check "analyze (softmax) exits 0" test $? -eq 0
A="$R/runs/sm/analysis"
check "alpha_heads.tsv: header + (L-1)*Hkv = 4 rows" test "$(wc -l < "$A/alpha_heads.tsv")" -eq 5
check "softmax: per block the KV heads' mean α average 1 (alpha_heads.tsv)" awk -F'\t' \
    'NR>1 { s[$1] += $4; n[$1]++ } END { if (length(s) != 2) exit 1; for (l in s) { d = s[l] / n[l] - 1; if (d > 1e-4 || d < -1e-4) exit 1 } }' \
    "$A/alpha_heads.tsv"
"$BIN" analyze g_tanh --results "$R" > "$W/an2" 2>&1
check "analyze a signed gate (tanh) exits 0 with α statistics" test $? -eq 0 -a -s "$R/runs/g_tanh/analysis/alpha_heads.tsv"
"$BIN" analyze bias --results "$R" > "$W/an3" 2>&1
ev=$(awk -F'\t' 'NR>1 && $1==0 && $2==1 && $3==-1 { print $4 }' "$R/runs/bias/analysis/alpha_evolution.tsv")
check "analyze (bias) exits 0; block 1's mean α at step 0 is near 1.2 ($ev)" \
    awk -v a="$ev" 'BEGIN { exit !(a != "" && a > 1.0 && a < 1.4) }'

# ---- ablate, heads, report ----
for r in sm bias; do
    "$BIN" ablate $r --results "$R" --mode zero --windows 8 > "$W/ab_$r" 2>&1
    check "ablate $r --mode zero exits 0 with a delta_loss" \
        grep -qE "^\{\"run_id\":\"$r\".*\"mode\":\"zero\".*\"delta_loss\":-?[0-9.]+" "$W/ab_$r"
    "$BIN" heads $r --results "$R" --windows 8 > "$W/hd_$r" 2>&1
    check "heads $r exits 0 and ranks the 4 gates" \
        test "$(grep -cE '^\| [0-9]+ \| [12] \| [01] \|' "$R/runs/$r/analysis/heads.md")" -eq 4
    "$BIN" report $r --html --results "$R" > "$W/rp_$r" 2>&1
    check "report $r --html shows every gate (2 blocks x 2 KV heads)" \
        test -s "$R/report/$r.html" -a "$(grep -c '<summary>α of block' "$R/report/$r.html" 2> /dev/null)" -eq 4
done
"$BIN" export bias --out "$W/bias.h5" --results "$R" > /dev/null 2>&1
check "export holds the gate bias and names the gate function" \
    bash -c "h5dump -H '$W/bias.h5' | grep -q 'DATASET \"layers.2.attn.alpha_bias\"' && h5dump -a /sat_gate_bias '$W/bias.h5' | grep -q '(0): 1'"

# ---- matched starts and the decay policy ----
trn rfl "model.value_residual=resformer" model.resformer_lambda1_init=0.09
l1=$(h5val "$R/runs/rfl/trace.h5" /resformer/lambda 0,1,0 1,1,1)
check "ResFormer from λ1 = 0.09: the trace's step-0 λ1 of block 1 is 0.09 ($l1)" \
    awk -v a="$l1" 'BEGIN { exit !(a != "" && a > 0.0899 && a < 0.0901) }'
trn rfa "model.value_residual=resformer"
l1a=$(h5val "$R/runs/rfa/trace.h5" /resformer/lambda 0,1,0 1,1,1)
check "ResFormer plus by default starts at λ1 = L/M = 3/2 ($l1a)" awk -v a="$l1a" 'BEGIN { exit !(a == 1.5) }'
trn wd "${SAT[@]}" train.weight_decay_policy=all
check "weight_decay_policy = all trains and differs from matrices ($(last_hex wd) vs $(last_hex relu))" \
    test -n "$(last_hex wd)" -a "$(last_hex wd)" != "$(last_hex relu)"

# ---- refused where they mean nothing ----
expect_fail() { # what, pattern, overrides...
    local what=$1 pat=$2; shift 2
    "$BIN" train "$TINY" "$@" --results "$R" > "$W/err.out" 2>&1; local rc=$?
    if [ $rc -ne 0 ] && grep -qE "$pat" "$W/err.out"; then pass "$what"; else fail "$what (rc $rc: $(head -c 300 "$W/err.out"))"; fi
}
expect_fail "softmax over one KV head is refused naming both keys" "model.sat_gate = softmax needs model.n_kv_head" \
    model.value_residual=satformer model.sat_gate=softmax model.n_kv_head=1
expect_fail "an unknown gate function lists the known ones" "sat_gate.*must be one of relu, sigmoid, softmax, softmax_sigmoid, tanh, identity" \
    model.sat_gate=gelu
expect_fail "resformer_lambda1_init with identity is refused" "resformer_lambda1_init.*identity" \
    model.value_residual=resformer model.resformer_variant=identity model.resformer_lambda1_init=1
expect_fail "resformer_lambda1_init takes auto or a number" "resformer_lambda1_init.*not a number, nor auto" model.resformer_lambda1_init=big
expect_fail "an unknown weight_decay_policy lists matrices and all" "weight_decay_policy.*must be one of matrices, all" \
    train.weight_decay_policy=some

# ---- kill -9 after a checkpoint + resume = never stopping, for each knob ----
# (resumed with the run's own manifest and overrides: the checkpoint's model hash must match)
resume_check() { # name, reference run, overrides...
    local name=$1 ref=$2; shift 2
    GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" "${X[@]}" "$@" --run-id "k_$name" --results "$R" --quiet > "$W/k0.out" 2>&1
    local rc=$?
    "$BIN" train "$TINY" "${X[@]}" "$@" --resume "k_$name" --results "$R" --quiet > "$W/k1.out" 2>&1
    local rc2=$? h=$(last_hex "k_$name") hr=$(last_hex "$ref")
    check "$name: killed after step 20 (exit $rc), resumed (exit $rc2), ends bit for bit ($h = $hr)" \
        test $rc -eq 137 -a $rc2 -eq 0 -a -n "$h" -a "$h" = "$hr"
}
resume_check softmax sm "${SAT[@]}" model.sat_gate=softmax
resume_check bias bias "${SAT[@]}" model.sat_gate_bias=1 model.sat_gate_bias_init=1.2
resume_check tanh g_tanh "${SAT[@]}" model.sat_gate=tanh
resume_check lambda1_init rfl model.value_residual=resformer model.resformer_lambda1_init=0.09
resume_check decay_all wd "${SAT[@]}" train.weight_decay_policy=all
