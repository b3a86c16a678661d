#!/usr/bin/env bash
# mech.sh — the mechanistic tools on tiny runs trained here:
#   probe: the activation cache (gates through the gate table, residual norms,
#     V1 share, logit lens, attention) read back with h5dump; the lens at the
#     last block is the model's own loss (eval --text); the V1 share of a
#     zeroed gate is exactly 0 while the other head's is unchanged bit for bit;
#     report --probe colours the text, one view per row of each array.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1
R="$W/results"
T() { "$BIN" train "$TINY" model.n_layer=3 model.n_kv_head=2 train.steps=40 train.ckpt_every=40 "$@" --results "$R" --quiet \
          > "$W/train.log" 2>&1; }
ok=1
T model.value_residual=satformer --run-id sat || ok=0
T model.value_residual=headgate --run-id hg || ok=0
T model.depth_routing=tsa --run-id tsa || ok=0
T model.depth_routing=early_exit --run-id ee || ok=0
check "train tiny SATFormer, head-gate, TSA and early-exit runs" test $ok = 1
[ $ok = 1 ] || { tail -20 "$W/train.log"; exit 1; }

# h5vals FILE DATASET [START COUNT]: the values of a dataset (or a hyperslab), one a line, 9 digits
h5vals() {
    local sel=(); [ $# -ge 4 ] && sel=(-s "$3" -c "$4")
    h5dump -y -w 0 -m '%.9g' -d "$2" "${sel[@]}" "$1" |
        awk '/DATA \{/ && !done { on = 1; next } on && /^ *\}/ { on = 0; done = 1 } on' |
        tr ',' '\n' | tr -d ' ' | grep -v '^$'
}
# 97 bytes of the corpus: three full windows of 32 and one token more, so eval --text scores the same 96 targets
head -c 97 "$GATELAB_DATA/corpus.txt" > "$W/t97.txt"
P() { "$BIN" probe "$@" --results "$R" > "$W/out" 2>&1; }

P sat --text "$W/t97.txt" --attention --out "$W/sat.h5"; rc=$?
check "probe exits 0 and writes the cache" test $rc = 0 -a -s "$W/sat.h5"
h5dump -H "$W/sat.h5" > "$W/hdr" 2>&1
has() { grep -q "DATASET \"$1\"" "$W/hdr"; }
check "the cache holds the gate at its trace path, lens, residual norm, V1 share, attention, tokens and /vocab" \
    eval 'has alpha && has kl && has top1 && has loss && has norm && has share && has probs && has tokens && has targets && has offset && has bytes'
check "/sat/alpha is (layer, token, kv_head) = (3, 97, 2) like the trace's rows" \
    eval 'h5dump -H -d /sat/alpha "$W/sat.h5" | grep -q "SIMPLE { ( 3, 97, 2 )" && h5dump -a /sat/alpha/axes "$W/sat.h5" | grep -q "layer,token,kv_head"'
check "/attn/probs is (layer, head, token, key) = (3, 2, 97, 32)" \
    eval 'h5dump -H -d /attn/probs "$W/sat.h5" | grep -q "SIMPLE { ( 3, 2, 97, 32 )"'
# each token's attention row sums to 1 over the keys of its window (float32 sums: 1e-5)
h5vals "$W/sat.h5" /attn/probs "2,1,40,0" "1,1,1,32" > "$W/row"
check "an attention row sums to 1 (block 2, head 1, token 40; |Σ − 1| <= 1e-5) and attends to no later key" \
    awk '{ s += $1; if (NR > 9 && $1 != 0) bad = 1 } END { d = s - 1; if (d < 0) d = -d; exit !(NR == 32 && d <= 1e-5 && !bad) }' "$W/row"

# the lens at the last block is the final head: its mean loss over the scored tokens is eval --text's loss.
# Not bit for bit: eval sums each token's loss in double, the cache stores it as float32 (rounding 6e-8
# relative a token), so the tolerance is 1e-6 relative; a lens that read any other stream than the final
# one (block 1's, say) is off by 0.06 nats here.
"$BIN" eval sat --text "$W/t97.txt" --results "$R" > "$W/eval" 2>&1
el=$(sed -n 's/.*"soft":{"loss":\([^,]*\).*/\1/p' "$W/eval")
h5vals "$W/sat.h5" /lens/loss "2,0" "1,97" > "$W/ll"
ll=$(awk '$1 != "nan" { s += $1; n++ } END { if (n == 96) printf "%.9g", s / n }' "$W/ll")
check "logit lens at the last block = the model's own loss (lens $ll, eval --text $el, 96 tokens; 1e-6 relative)" \
    awk -v a="$ll" -v b="$el" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1e-6 * b) }'
check "the probe's own loss line agrees (printed loss = eval's to 6 digits)" \
    eval 'grep -q "96 scored), loss $(printf %.6f "$el") nats/token" "$W/out"'
h5vals "$W/sat.h5" /lens/kl "2,0" "1,97" > "$W/kl2"; h5vals "$W/sat.h5" /lens/top1 "2,0" "1,97" > "$W/t12"
h5vals "$W/sat.h5" /lens/kl "0,0" "1,97" > "$W/kl0"
check "at the last block the lens KL is exactly 0 and its top-1 always the final one; at block 0 it is not" \
    eval 'awk "\$1 != 0 { exit 1 }" "$W/kl2" && awk "\$1 != 1 { exit 1 }" "$W/t12" && awk "\$1 > 0 { k = 1 } END { exit !k }" "$W/kl0"'
check "the last token has no next token: its lens loss is NaN" test "$(tail -1 "$W/ll")" = nan

# the V1 share of a zeroed gate: exactly 0; the other head of that block unchanged bit for bit
P sat --text "$W/t97.txt" --zero L1H0 --out "$W/z.h5"; rc=$?
h5vals "$W/sat.h5" /v1/share "1,0,0" "1,97,1" > "$W/s0"; h5vals "$W/z.h5" /v1/share "1,0,0" "1,97,1" > "$W/z0"
h5vals "$W/sat.h5" /v1/share "1,0,1" "1,97,1" > "$W/s1"; h5vals "$W/z.h5" /v1/share "1,0,1" "1,97,1" > "$W/z1"
nz=$(awk '$1 > 0 { n++ } END { print n + 0 }' "$W/s0")
check "probe --zero L1H0: V1 share of L1H0 is 0 on all 97 tokens (it was > 0 on $nz of them)" \
    eval '[ $rc = 0 ] && [ "$nz" -gt 0 ] && [ $(grep -c "^0$" "$W/z0") = 97 ]'
check "… while L1H1's share is unchanged bit for bit (its α and value path do not depend on L1H0)" cmp -s "$W/s1" "$W/z1"
check "… and block 0 (no gate) has NaN there" eval '[ $(h5vals "$W/z.h5" /v1/share "0,0,0" "1,97,2" | grep -c nan) = 194 ]'
P hg --prompt "the cat sat on the mat" --zero 2:1 --out "$W/hg.h5"; rc=$?
h5vals "$W/hg.h5" /v1/share "2,0,1" "1,22,1" > "$W/h1"; h5vals "$W/hg.h5" /v1/share "2,0,0" "1,22,1" > "$W/h0"
check "static head gate: --zero 2:1 gives share 0 on every token; L2H0 keeps a share > 0" \
    eval '[ $rc = 0 ] && [ $(grep -c "^0$" "$W/h1") = 22 ] && awk "\$1 <= 0 { exit 1 }" "$W/h0"'
check "the head gate (no token axis) is kept as (layer, kv_head) at /headgate/g" \
    eval 'h5dump -H -d /headgate/g "$W/hg.h5" | grep -q "SIMPLE { ( 3, 2 )"'

# routed models: their gates through the gate table
P tsa --text "$W/t97.txt" --out "$W/tsa.h5"; r1=$?
P ee --text "$W/t97.txt" --out "$W/ee.h5"; r2=$?
check "TSA: /tsa/p is (router, token) = (2, 97), no V1 share" \
    eval '[ $r1 = 0 ] && h5dump -H -d /tsa/p "$W/tsa.h5" | grep -q "SIMPLE { ( 2, 97 )" && ! h5dump -H "$W/tsa.h5" | grep -q "\"share\""'
# early exit's exit heads are the final norm and head on each block's output: the lens of block n is its
# exit head, so the confidence of block 0 is the lens' max softmax probability; top-1 of the lens at the
# last block is 1 everywhere
check "early exit: /exit/confidence is (layer, token) = (3, 97)" \
    eval '[ $r2 = 0 ] && h5dump -H -d /exit/confidence "$W/ee.h5" | grep -q "SIMPLE { ( 3, 97 )"'

# report --probe: one view per (block[, head]) of each array with one token axis; attention only when asked
"$BIN" report --probe "$W/sat.h5" --html --out "$W/sat.html" > "$W/out" 2>&1; rc=$?
views=$(sed -n 's/.*: \([0-9]*\) coloured views/\1/p' "$W/out")
# sat/alpha 3×2, resid/norm 3, v1/share and v1/dla 2×2 each (block 0 has none), lens kl/top1/loss 3 each = 26
check "report --probe --html: 26 views (α 6, |resid| 3, V1 share 4, V1 DLA 4, lens 9; got $views)" \
    eval '[ $rc = 0 ] && [ "$views" = 26 ] && [ $(grep -c "<details" "$W/sat.html") = 26 ]'
check "… each view colours all 97 tokens with the value on hover" \
    eval '[ $(grep -o "<span style=\"background:#[0-9a-f]*\" title=" "$W/sat.html" | wc -l) = $((26 * 97)) ] &&
          grep -q "title=\"block 2 = [0-9.e-]* · token 3 (id" "$W/sat.html"'
"$BIN" report --probe "$W/sat.h5" --html --only attn/ --out "$W/att.html" > "$W/out" 2>&1; rc=$?
check "report --probe --only attn/: a view per (block, head, key) = 192" \
    eval '[ $rc = 0 ] && grep -q ": 192 coloured views" "$W/out"'

# bad input: named, non-zero
P sat --text "$W/nope.txt"; rc=$?
check "probe --text of a missing file: exit 1 naming it" eval '[ $rc = 1 ] && grep -q "nope.txt" "$W/out"'
P sat --text "$W/t97.txt" --prompt x; rc=$?
check "probe with --text and --prompt: usage error (exit 2)" eval '[ $rc = 2 ] && grep -q "one of them" "$W/out"'
P tsa --prompt abc --zero L1H0; rc=$?
check "probe --zero on a run without per-head gates: refused with the reason" \
    eval '[ $rc = 1 ] && grep -q "no per-head value-residual gate" "$W/out"'
"$BIN" report --probe "$R/runs/sat/trace.h5" --html --out "$W/x.html" > "$W/out" 2>&1; rc=$?
check "report --probe on a trace (not a cache): refused, saying what it lacks" \
    eval '[ $rc = 1 ] && grep -q "probe cache" "$W/out"'

# ---- patch: paired activation patching of gates ----
#   a patch that copies a gate onto itself (clean = corrupt) changes nothing, bit for bit; a gate of
#   block n depends only on the blocks below, so patching positions before the first changed input
#   changes nothing either (exactly), while patching every position does change the metric.
js() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$1"; } # a field of the JSON line (first match)
printf 'the cat sat on the mat. the cat' > "$W/a.txt"
printf 'the dog sat on the mat. the cat' > "$W/b.txt"
PT() { "$BIN" patch "$@" --results "$R" --json > "$W/pt" 2>&1; }
PT sat --clean "$W/a.txt" --corrupt "$W/a.txt"; rc=$?
ch=$(js "$W/pt" corrupt_hex); n=$(grep -o '"patched_hex":"[^"]*"' "$W/pt" | wc -l)
same=$(grep -o '"patched_hex":"[^"]*"' "$W/pt" | grep -c "\"$ch\"")
check "self-patch (clean = corrupt): all $n sites give the corrupted metric bit for bit ($ch), delta 0, recovered null" \
    eval '[ $rc = 0 ] && [ "$n" = 4 ] && [ "$same" = 4 ] && [ $(grep -o "\"delta\":0.0," "$W/pt" | wc -l) = 4 ] &&
          [ $(grep -o "\"recovered\":null" "$W/pt" | wc -l) = 4 ]'
PT sat --clean "$W/a.txt" --corrupt "$W/b.txt" --positions 0,1,2,3; rc=$?
ch=$(js "$W/pt" corrupt_hex); same=$(grep -o '"patched_hex":"[^"]*"' "$W/pt" | grep -c "\"$ch\"")
check "patching α before the first changed input (positions 0-3; 'cat' → 'dog' at 4): metric unchanged bit for bit at all 4 gates" \
    eval '[ $rc = 0 ] && [ "$same" = 4 ]'
PT sat --clean "$W/a.txt" --corrupt "$W/b.txt"; rc=$?
ch=$(js "$W/pt" corrupt_hex); same=$(grep -o '"patched_hex":"[^"]*"' "$W/pt" | grep -c "\"$ch\"")
check "patching α at every position changes the metric at some gate ($((4 - same)) of 4)" eval '[ $rc = 0 ] && [ "$same" -lt 4 ]'
# the recovered fraction is (patched − corrupt) / (clean − corrupt), from the printed numbers (JSON: 12 digits)
check "recovered = (patched − corrupt) / (clean − corrupt) for L1H1 (1e-6 relative)" \
    awk -v c="$(js "$W/pt" clean)" -v x="$(js "$W/pt" corrupt)" \
        -v p="$(grep -o '"site":"L1H1","patched":[^,]*' "$W/pt" | sed 's/.*://')" \
        -v r="$(grep -o '"site":"L1H1".*' "$W/pt" | sed -n 's/[^}]*"recovered":\([^,}]*\).*/\1/p')" \
        'BEGIN { e = (p - x) / (c - x) - r; if (e < 0) e = -e; a = r < 0 ? -r : r; exit !(r != "" && e <= 1e-6 * (a > 1e-3 ? a : 1e-3)) }'
# TSA: the router's p through ROUTE_TOKEN (NaN keeps the router's own p)
PT tsa --clean "$W/a.txt" --corrupt "$W/b.txt" --router 1 --positions 0,1,2,3; r1=$?; cp "$W/pt" "$W/pt1"
PT tsa --clean "$W/a.txt" --corrupt "$W/b.txt" --router 1; r2=$?
check "TSA router 1 patched before the first change: bit for bit the corrupted metric; at every position: another" \
    eval '[ $r1 = 0 ] && [ $r2 = 0 ] && [ "$(js "$W/pt1" patched_hex)" = "$(js "$W/pt1" corrupt_hex)" ] &&
          [ "$(js "$W/pt" patched_hex)" != "$(js "$W/pt" corrupt_hex)" ]'
# built-in pairs: mqar (one key's value swapped) on a SATFormer trained on mqar
T model.value_residual=satformer data.task=mqar --run-id mq || fail "train an mqar SATFormer"
PT mq --pair mqar --pairs 8; rc=$?
check "patch --pair mqar: 8 pairs, 8 answers (the swapped key's query), logit difference" \
    eval '[ $rc = 0 ] && grep -q "\"pair\":\"mqar\",\"metric\":\"logit_diff\",\"pairs\":8,\"answers\":8," "$W/pt"'
PT mq --pair mqar --pairs 8 --positions 0; rc=$?
ch=$(js "$W/pt" corrupt_hex); same=$(grep -o '"patched_hex":"[^"]*"' "$W/pt" | grep -c "\"$ch\"")
check "mqar: position 0 (a key, never changed) patched: unchanged at every gate" eval '[ $rc = 0 ] && [ "$same" = 4 ]'
T model.value_residual=satformer data.task=copy --run-id cp || fail "train a copy SATFormer"
T model.value_residual=satformer data.task=sort --run-id so || fail "train a sort SATFormer"
PT cp --pair copy --pairs 8; r1=$?; a1=$(js "$W/pt" answers)
PT so --pair sort --pairs 8; r2=$?; a2=$(js "$W/pt" answers)
check "patch --pair copy: one answer a pair (the changed item's copy: $a1); sort: at least one ($a2)" \
    eval '[ $r1 = 0 ] && [ $r2 = 0 ] && [ "$a1" = 8 ] && [ "$a2" -ge 8 ]'
# issue 45 item 14: more items than the old fixed buffer (256) held; the manifest allows 4096
T model.value_residual=satformer data.task=copy data.seq_items=300 model.seq_len=608 train.steps=2 train.ckpt_every=2 \
    train.eval_every=2 --run-id cp300 || fail "train a copy SATFormer over 300 items"
PT cp300 --pair copy --pairs 2; r1=$?; a1=$(js "$W/pt" answers)
check "patch --pair copy with data.seq_items = 300: no abort (exit $r1), one answer a pair ($a1)" eval '[ $r1 = 0 ] && [ "$a1" = 2 ]'
PT sat --pair text --pairs 4; rc=$?
check "patch --pair text: 4 pairs scored on the continuation with the loss" \
    eval '[ $rc = 0 ] && grep -q "\"pair\":\"text\",\"metric\":\"loss\",\"pairs\":4," "$W/pt"'
# refusals
PT sat --pair mqar; rc=$?
check "--pair mqar on a text run: refused naming the task" eval '[ $rc = 1 ] && grep -q "data.task = mqar; this run.s task is text" "$W/pt"'
printf 'the mouse sat on the mat. the cat' > "$W/c.txt"
PT sat --clean "$W/a.txt" --corrupt "$W/c.txt"; rc=$?
check "files of different token counts: refused with both counts" eval '[ $rc = 1 ] && grep -q "has 31 tokens and --corrupt .* 33" "$W/pt"'
PT sat --clean "$W/a.txt" --corrupt "$W/b.txt" --router 0; rc=$?
check "--router on a run without routers: refused" eval '[ $rc = 1 ] && grep -q "no routers" "$W/pt"'
PT sat --clean "$W/a.txt" --corrupt "$W/b.txt" --gate L0H0; rc=$?
check "--gate L0H0 (block 0 has no gate): refused naming the gates" eval '[ $rc = 1 ] && grep -q "not a gate of this run" "$W/pt"'
PT hg --clean "$W/a.txt" --corrupt "$W/b.txt"; rc=$?
check "a static head gate (same for every input): nothing to patch, said so" eval '[ $rc = 1 ] && grep -q "nothing to patch" "$W/pt"'

# ---- heads --attribution: first-order estimate of zeroing each gate beside the exact ΔL ----
# Where the linear approximation should hold: a SATFormer trained 60 steps has small gates (mean α about
# 0.05, the V1 share of its value paths a few percent: see probe above), so zeroing one moves the loss
# by a step over which it is nearly linear — the second-order term is about α² times the curvature, two
# orders below the first.  12 gates (4 blocks × 4 KV heads, blocks 1-3 gated); the ranks must agree to ρ ≥ 0.8.
T model.n_layer=4 model.n_head=4 model.n_kv_head=4 model.value_residual=satformer train.steps=60 train.ckpt_every=60 \
    --run-id sat4 || fail "train a 4-block, 4-head SATFormer"
"$BIN" heads sat4 --attribution --windows 16 --batch 4 --json --results "$R" > "$W/at" 2>&1; rc=$?
rho=$(tail -1 "$W/at" | sed -n 's/.*"spearman":\([^,}]*\).*/\1/p')
check "heads --attribution prints ρ and the table (3 gated blocks × 4 KV heads = 12 sites; ρ = $rho)" \
    eval '[ $rc = 0 ] && grep -q "Spearman rank correlation .*: [0-9.-]* over 12 sites" "$W/at" && [ -n "$rho" ]'
check "attribution vs exact ablation: Spearman ρ = $rho >= 0.8 on small gates" awk -v r="$rho" 'BEGIN { exit !(r != "" && r >= 0.8) }'
check "attribution.tsv has a row per site, attribution_tokens.tsv one per evaluation position (16 × 32)" \
    eval '[ $(wc -l < "$R/runs/sat4/analysis/attribution.tsv") = 13 ] && [ $(wc -l < "$R/runs/sat4/analysis/attribution_tokens.tsv") = 513 ]'
# the per-token estimates sum to the per-site ones (both are sums of the same a(t, site))
st=$(awk 'NR > 1 { s += $7 } END { printf "%.9g", s }' "$R/runs/sat4/analysis/attribution.tsv")
tt=$(awk 'NR > 1 { s += $4 } END { printf "%.9g", s }' "$R/runs/sat4/analysis/attribution_tokens.tsv")
check "Σ over tokens = Σ over sites of the estimate ($tt vs $st; the token file's 6 digits: 1e-5 relative + 1e-9)" \
    awk -v a="$st" -v b="$tt" 'BEGIN { d = a - b; if (d < 0) d = -d; s = a < 0 ? -a : a; exit !(d <= 1e-5 * s + 1e-9) }'
"$BIN" heads tsa --attribution --windows 8 --json --results "$R" > "$W/at" 2>&1; rc=$?
check "TSA: routers are sites too (p → 0 exactly through ROUTE_TOKEN beside −p·∂L/∂p)" \
    eval '[ $rc = 0 ] && grep -q "\"site\":\"router 0\"" "$W/at" && grep -q "\"site\":\"router 1\"" "$W/at"'
"$BIN" heads ee --attribution --results "$R" > "$W/at" 2>&1; rc=$?
check "early exit: --attribution refused with the reason" eval '[ $rc = 1 ] && grep -q "early-exit model" "$W/at"'
"$BIN" heads hg --attribution --windows 8 --json --results "$R" > "$W/at" 2>&1; rc=$?
check "static head gate: the same estimate (−g·Σ_t ∂L/∂g_t) for its 4 gates" \
    eval '[ $rc = 0 ] && grep -q "over 4 sites" "$W/at"'

# ---- analyze: the logit lens where tokens halt (settled_at_halt, halted_share, halt_block_mean) ----
q() { sqlite3 "$R/gatelab.db" "select printf('%.17g', value) from metrics where run_id = '$1' and split = 'analysis' and name = '$2'"; }
# early exit on copy (confident enough to exit at τ 0.5 within 150 steps): the exit decisions are the
# ones eval --tau 0.5 takes, so its active fraction follows from the halting rows exactly:
#   α = (h·(b − 1) + (1 − h)·(L − 1)) / (L − 1), h = halted_share, b = halt_block_mean (first block not run)
T model.depth_routing=early_exit data.task=copy train.steps=150 train.ckpt_every=150 --run-id eec || fail "train an early-exit copy run"
"$BIN" analyze eec --results "$R" > "$W/an" 2>&1; rc=$?
h=$(q eec halted_share); b=$(q eec halt_block_mean); s=$(q eec settled_at_halt)
a=$("$BIN" eval eec --tau 0.5 --windows 64 --results "$R" | sed -n 's/.*"exit":{[^}]*"active_frac":\([^,}]*\).*/\1/p')
check "analyze (early exit): halted $h at block $b, settled $s; eval --tau 0.5 active fraction $a follows (1e-9)" \
    awk -v rc=$rc -v h="$h" -v b="$b" -v a="$a" 'BEGIN { e = (h * (b - 1) + (1 - h) * 2) / 2 - a; if (e < 0) e = -e
        exit !(rc == 0 && h > 0 && a != "" && e <= 1e-9) }'
check "… and the summary line says so" grep -q "had their final top-1 prediction settled there" "$W/an"
# TSA with one router (2 blocks): a token that halts at block 1 skips the only routed block, so its final
# stream is the one the lens read: every halted token must be settled (exactly 1)
T model.n_layer=2 model.depth_routing=tsa model.router_init_bias=0 --run-id tsa2 || fail "train a 2-block TSA run"
"$BIN" analyze tsa2 --results "$R" > "$W/an" 2>&1; rc=$?
h=$(q tsa2 halted_share); s=$(q tsa2 settled_at_halt); b=$(q tsa2 halt_block_mean)
check "analyze (TSA, one router): halted $h > 0 at block $b = 1, settled_at_halt $s = 1 exactly" \
    eval '[ $rc = 0 ] && awk -v h="$h" "BEGIN { exit !(h > 0) }" && [ "$s" = 1 ] && [ "$b" = 1 ]'
"$BIN" analyze sat --results "$R" > "$W/an" 2>&1; rc=$?
check "analyze of a dense run writes its rows but no halting rows" eval '[ $rc = 0 ] && [ -n "$(q sat alpha_mean)" ] && [ -z "$(q sat halted_share)" ]'

# ---- sample --trace: each token's gates (and halting block) as sampling read its context ----
"$BIN" sample sat --tokens 20 --prompt "the " --temperature 0 --trace "$W/st.h5" --results "$R" > "$W/gen" 2>&1; rc=$?
head -c -1 "$W/gen" > "$W/gen.txt"   # the prompt and the 20 generated bytes (sample ends with a newline)
P sat --text "$W/gen.txt" --out "$W/gp.h5"
check "sample --trace within one window (24 tokens): α bit for bit probe's on the same text" \
    eval '[ $rc = 0 ] && [ "$(h5vals "$W/st.h5" /sat/alpha)" = "$(h5vals "$W/gp.h5" /sat/alpha)" ] && [ -n "$(h5vals "$W/gp.h5" /sat/alpha)" ]'
check "… /sample/generated marks the 20 generated tokens, not the 4 of the prompt" \
    eval '[ "$(h5vals "$W/st.h5" /sample/generated | tr "\n" " ")" = "0 0 0 0 $(printf "1 %.0s" $(seq 20))" ]'
"$BIN" sample sat --tokens 40 --prompt "the " --temperature 0 --trace "$W/st.h5" --results "$R" > "$W/gen" 2>&1; rc=$?
head -c -1 "$W/gen" | tail -c 32 > "$W/last.txt" # the sliding window the last token was predicted in
P sat --text "$W/last.txt" --out "$W/lp.h5"
check "sample --trace past seq_len (44 tokens): the last token's α is that of the window ending at it, bit for bit" \
    eval '[ $rc = 0 ] && [ "$(h5vals "$W/st.h5" /sat/alpha "1,43,0" "1,1,2")" = "$(h5vals "$W/lp.h5" /sat/alpha "1,31,0" "1,1,2")" ]'
"$BIN" sample tsa2 --tokens 20 --prompt "the " --sparse --trace "$W/tt.h5" --results "$R" > /dev/null 2>&1; rc=$?
paste <(h5vals "$W/tt.h5" /sample/halt_block) <(h5vals "$W/tt.h5" /tsa/p) > "$W/hb"
check "sample --sparse --trace (TSA, one router): halt_block is 1 exactly where p > 0.5, else 2" \
    eval '[ $rc = 0 ] && [ $(wc -l < "$W/hb") = 24 ] && awk "{ if ((\$2 > 0.5) != (\$1 == 1) || (\$1 != 1 && \$1 != 2)) exit 1 }" "$W/hb"'
"$BIN" report --probe "$W/tt.h5" --html --only sample/ --out "$W/tt.html" > "$W/out" 2>&1
check "report --probe colours the generated text by halt_block and generated (2 views)" grep -q ": 2 coloured views" "$W/out"

# ---- analyze --seeds: head profiles (sorted within blocks) and halted sets across seeds ----
for s in 2 3; do
    T model.depth_routing=tsa model.router_init_bias=0 model.value_residual=satformer train.seed=$s --run-id ts$s ||
        fail "train TSA+SATFormer seed $s"
done
"$BIN" analyze --seeds ts2,ts2 --windows 8 --results "$R" > "$W/sd" 2>&1; rc=$?
check "--seeds of a run with itself: profile ρ 1, halted Jaccard 1, flagged as the same seed" \
    eval '[ $rc = 0 ] && grep -q "ts2 *ts2 *1.0000 *1.0000   (same train.seed" "$W/sd" && grep -q "(256 positions each)" "$W/sd"'
"$BIN" analyze --seeds ts2,ts3 --windows 8 --out "$W/sdo" --results "$R" > "$W/sd" 2>&1; rc=$?
j=$(awk -F'\t' 'NR == 2 { print $6 }' "$W/sdo/seeds.tsv"); r=$(awk -F'\t' 'NR == 2 { print $5 }' "$W/sdo/seeds.tsv")
check "--seeds of two seeds: seeds.tsv has the pair (ρ $r, Jaccard $j in [0, 1), seeds 2 and 3)" \
    eval '[ $rc = 0 ] && awk -F"\t" "NR == 2 { exit !(\$3 == 2 && \$4 == 3) }" "$W/sdo/seeds.tsv" &&
          awk -v j="$j" -v r="$r" "BEGIN { exit !(j >= 0 && j < 1 && r >= -1 && r <= 1) }"'
"$BIN" analyze --seeds ts2,sat --results "$R" > "$W/sd" 2>&1; rc=$?
check "--seeds of different configurations: refused" eval '[ $rc = 1 ] && grep -q "but for the seed" "$W/sd"'
"$BIN" analyze --seeds ts2 --results "$R" > "$W/sd" 2>&1; rc=$?
check "--seeds of one run: refused" eval '[ $rc = 1 ] && grep -q "at least two runs" "$W/sd"'

# ---- analyze: each gate's quantile bands over training (gate_bands_<gate>.tsv and its figure) ----
"$BIN" analyze sat4 --results "$R" > "$W/an" 2>&1; rc=$?
G="$R/runs/sat4/analysis/gate_bands_alpha.tsv"
steps=$(sqlite3 "$R/gatelab.db" "select count(distinct step) from metrics where run_id = 'sat4' and split = 'analysis' and name = 'alpha_mean'")
check "gate_bands_alpha.tsv: one block per gated block (3), a row per trace step ($steps), quantiles in order" \
    eval '[ $rc = 0 ] && [ $(grep -c "^block " "$G") = 3 ] && [ $(awk "NF == 7 && \$1 ~ /^[0-9]+$/" "$G" | wc -l) = $((3 * steps)) ] &&
          awk "NF == 7 && \$1 ~ /^[0-9]+$/ { if (!(\$2 <= \$3 && \$3 <= \$4 && \$4 <= \$5 && \$5 <= \$6)) exit 1 }" "$G"'
# the band file's mean of block 2 at the last step is analyze's alpha_mean.L2 there (6 digits: 1e-5 relative)
bm=$(awk '/^block 2/ { on = 1; next } /^block/ { on = 0 } on && NF == 7 { m = $7 } END { print m }' "$G")
am=$(sqlite3 "$R/gatelab.db" "select printf('%.9g', value) from metrics where run_id = 'sat4' and split = 'analysis' and name = 'alpha_mean' and params = '{\"layer\":2}' order by step desc limit 1")
check "… its mean of block 2 at the last step = alpha_mean.L2 ($bm vs $am; 1e-5 relative)" \
    awk -v a="$bm" -v b="$am" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1e-5 * (b < 0 ? -b : b) + 1e-9) }'
if command -v gnuplot > /dev/null; then
    check "… and the figure gate_bands_sat4_alpha.png is a PNG" \
        eval '[ "$(head -c 8 "$R/figures/tiny/gate_bands_sat4_alpha.png" | od -An -tx1 | tr -d " ")" = 89504e470d0a1a0a ]'
else
    skip "gate-band figure (gnuplot is not installed)"
fi
