#!/usr/bin/env bash
# analysis.sh — the real `gatelab analyze | ablate | heads | tables | figures`
# on tiny SATFormer, TSA and early-exit runs trained here on the test's own
# corpus (tests/corpus.h: words, punctuation, function words, newlines):
# outputs exist and are sane, the registry holds the rows, the tables agree
# with the registry, every figure is a valid PNG and PDF, and every gnuplot
# script run on its own exits 0 with nothing on stderr.
# Registry rows are read in their stored form (schema 3): the name without
# its parameters, which are JSON in params (docs/registry.md, "Metric names").
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1 # tiny models: one thread is fastest and immune to a busy machine
R="$W/results"
DB="$R/gatelab.db"
q() { sqlite3 "$DB" "$1"; }

cat > "$W/tiny.ini" <<INI
[model]
d_model = 32
n_layer = 3
n_head = 2
n_kv_head = 2
d_ff = 64
seq_len = 32
[data]
file = corpus.txt
[train]
steps = 30
batch_size = 4
lr = 3e-3
warmup = 5
threads = 1
eval_every = 10
eval_windows = 4
ckpt_every = 30
log_every = 5
[log]
experiment = tiny
probe_windows = 4
INI

"$BIN" train "$W/tiny.ini" model.value_residual=satformer --run-id sat --results "$R" --quiet > "$W/t1" 2>&1
check "train a tiny SATFormer (exit 0)" test $? -eq 0
"$BIN" train "$W/tiny.ini" model.depth_routing=tsa model.tsa_lambda=0.01 model.router_init_bias=0 --run-id tsa \
    --results "$R" --quiet > "$W/t2" 2>&1
check "train a tiny TSA model (exit 0)" test $? -eq 0
"$BIN" train "$W/tiny.ini" model.depth_routing=early_exit train.steps=10 --run-id ee --results "$R" --quiet > "$W/t3" 2>&1
check "train a tiny early-exit model (exit 0)" test $? -eq 0

# ---- analyze ----
"$BIN" analyze sat --results "$R" > "$W/an1" 2> "$W/an1.err"
check "analyze SATFormer exits 0" test $? -eq 0
A="$R/runs/sat/analysis"
check "analyze writes the α files" test -s "$A/alpha_heads.tsv" -a -s "$A/alpha_layers.tsv" -a -s "$A/alpha_evolution.tsv" \
    -a -s "$A/alpha_categories.tsv" -a -s "$A/losses.tsv"
check "alpha_heads.tsv: header + (L-1)*Hkv = 4 rows" test "$(wc -l < "$A/alpha_heads.tsv")" -eq 5
check "alpha_evolution.tsv covers the 4 evaluations (4 x 2 blocks x 3 rows + header)" \
    test "$(wc -l < "$A/alpha_evolution.tsv")" -eq 25
check "every α statistic is a number in range (mean >= 0, shares and Gini in [0,1])" awk -F'\t' \
    'NR>1 { if ($4 < 0 || $5 < 0 || $5 > 1 || $8 > 1 || ($9 != "nan" && ($9 < 0 || $9 > 1))) bad=1 } END { exit bad }' "$A/alpha_heads.tsv"
n_an=$(q "select count(*) from metrics where run_id='sat' and split='analysis'")
check "analysis rows in the registry ($n_an)" test "$n_an" -gt 100
m_reg=$(q "select printf('%.6g', value) from metrics where run_id='sat' and split='analysis' and name='alpha_mean' and params='{\"layer\":1,\"head\":0}' order by step desc limit 1")
m_tsv=$(awk -F'\t' 'NR>1 && $1==1 && $2==0 { print $4 }' "$A/alpha_heads.tsv")
check "registry alpha_mean.L1.H0 = alpha_heads.tsv ($m_reg = $m_tsv)" test -n "$m_reg" -a "$m_reg" = "$m_tsv"
check "the summary names the blocks and the files" grep -q "alpha_heads.tsv" "$W/an1"

"$BIN" analyze tsa --results "$R" > "$W/an2" 2>&1
check "analyze TSA exits 0" test $? -eq 0
A2="$R/runs/tsa/analysis"
check "analyze writes the depth files" test -s "$A2/depth_tokens.tsv" -a -s "$A2/depth_hist.tsv" -a -s "$A2/p_routers.tsv" \
    -a -s "$A2/depth_evolution.tsv"
check "depth_tokens.tsv: 128 probe tokens, depths in [1, 3]" awk -F'\t' \
    'NR>1 { n++; if ($7 < 1 || $7 > 3 || $8 < 1 || $8 > 3) bad=1 } END { exit bad || n != 128 }' "$A2/depth_tokens.tsv"
check "depth histogram sums to the probe tokens" awk -F'\t' 'NR>1 { s += $2 } END { exit s != 128 }' "$A2/depth_hist.tsv"
ed=$(q "select value from metrics where run_id='tsa' and split='analysis' and name='expected_depth_hard' and params='{}' order by step desc limit 1")
af=$(q "select value from metrics where run_id='tsa' and split='analysis' and name='active_frac' and params='{}' order by step desc limit 1")
check "expected hard depth = 1 + (L-1)·α ($ed, α $af)" awk -v d="$ed" -v a="$af" 'BEGIN { x = d - 1 - 2*a; exit !(x < 1e-9 && x > -1e-9) }'

# ---- ablate ----
"$BIN" ablate sat --results "$R" --mode zero --windows 16 > "$W/ab1" 2>&1
check "ablate --mode zero exits 0" test $? -eq 0
check "ablate prints a JSON line with delta_loss and categories" grep -qE '^\{"run_id":"sat","run_dir":"[^"]*/runs/sat","step":[0-9]+,"mode":"zero".*"delta_loss":-?[0-9.]+(e-?[0-9]+)?,.*"delta_loss_by_category"' "$W/ab1"
check "ablate logs zero.all.* rows" test "$(q "select count(*) from metrics where run_id='sat' and split='ablation' and name like 'zero.%' and json_extract(params, '\$.gates')='all'")" -ge 5
"$BIN" ablate sat --results "$R" --mode mean --heads 2:1 --windows 16 > "$W/ab2" 2>&1
check "ablate --mode mean --heads 2:1 exits 0 and names its reference tokens" grep -q '"reference":"val\[16,32)"' "$W/ab2"
# TransformerLens's head names select the same gates: L2H1 is block 2, KV head 1
"$BIN" ablate sat --results "$R" --mode mean --heads l2h1 --windows 16 --no-db > "$W/ab2tl" 2>&1
check "ablate --heads l2h1 (TransformerLens) gives exactly what --heads 2:1 gives" \
    test -n "$(grep '"delta_loss"' "$W/ab2")" -a "$(grep -o '"gates".*' "$W/ab2")" = "$(grep -o '"gates".*' "$W/ab2tl")"
"$BIN" ablate sat --results "$R" --mode zero --heads L1H0,2:1 --windows 16 --no-db > "$W/ab2mix" 2>&1
check "ablate --heads mixes both spellings (L1H0,2:1 -> gates L1H0+L2H1)" grep -q '"gates":"L1H0+L2H1"' "$W/ab2mix"
"$BIN" ablate tsa --results "$R" --mode full-depth --windows 16 > "$W/ab3" 2>&1 &&
"$BIN" ablate tsa --results "$R" --mode random --windows 16 > "$W/ab4" 2>&1
check "ablate TSA full-depth and random exit 0" test $? -eq 0
check "full depth runs every block (active_frac 1)" grep -qE '"active_frac":1\.0[,}]' "$W/ab3"
"$BIN" ablate ee --results "$R" --mode exit --taus 0.3,0.6,0.9 --windows 16 > "$W/ab5" 2>&1
check "ablate --mode exit sweeps τ (exit 0, 3 points logged)" \
    test $? -eq 0 -a "$(q "select count(*) from metrics where run_id='ee' and split='ablation' and name='exit.tlops_saved' and json_extract(params, '\$.tau') is not null")" -eq 3
"$BIN" ablate sat --results "$R" --mode full-depth > "$W/ab6" 2>&1
check "full-depth on a SATFormer run is refused with a reason" test $? -ne 0 -a -n "$(grep -i 'TSA' "$W/ab6")"
"$BIN" ablate sat --results "$R" --mode zero --layers 0 > "$W/ab7" 2>&1
check "--layers 0 (no gate) is refused naming the block" test $? -ne 0 -a -n "$(grep -i 'block 0' "$W/ab7")"
# --mode file: all-zero values from a file must reproduce --mode zero exactly
printf 'block kv_head value\n1 0 0\n1 1 0\n2 0 0\n2 1 0\n' > "$W/zeros.tsv"
"$BIN" ablate sat --results "$R" --mode file --values "$W/zeros.tsv" --windows 16 --no-db > "$W/ab8" 2>&1
z1=$(sed -n 's/.*"delta_loss":\([-+0-9.eE]*\).*/\1/p' "$W/ab1" | head -1)
z8=$(sed -n 's/.*"delta_loss":\([-+0-9.eE]*\).*/\1/p' "$W/ab8" | head -1)
check "--mode file with every gate at 0 equals --mode zero (ΔL $z8 = $z1)" test -n "$z1" -a "$z1" = "$z8"
printf '1 0 0.5\n1 0 0.25\n' > "$W/dup.tsv"
"$BIN" ablate sat --results "$R" --mode file --values "$W/dup.tsv" --no-db > "$W/ab9" 2>&1
check "--values with a pair listed twice is refused naming file and line" test $? -ne 0 -a -n "$(grep 'dup.tsv:2' "$W/ab9")"

# ---- heads ----
"$BIN" heads sat --results "$R" --windows 16 > "$W/hd" 2>&1
check "heads exits 0" test $? -eq 0
check "heads.md ranks the 4 gates" test "$(grep -cE '^\| [0-9]+ \| [12] \| [01] \|' "$R/runs/sat/analysis/heads.md")" -eq 4
check "heads draws its map" test -s "$R/figures/tiny/heads_sat.png" -a -s "$R/figures/tiny/heads_sat.pdf"
# one gate again on other windows: a different measurement, kept beside the one heads made
h16=$(q "select value from metrics where run_id='sat' and split='ablation' and name='zero.delta_loss' and params='{\"gates\":\"L2H0\"}' and win_count=16")
"$BIN" ablate sat --results "$R" --mode zero --heads 2:0 --windows 8 --batch 2 > "$W/ab10" 2>&1
check "ablate --heads 2:0 --windows 8 exits 0" test $? -eq 0
check "heads (16 windows) and ablate (8 windows) both kept for zero.L2H0.delta_loss" \
    test "$(q "select group_concat(win_count) from (select win_count from metrics where run_id='sat' and split='ablation' and name='zero.delta_loss' and params='{\"gates\":\"L2H0\"}' order by win_count)")" = "8,16"
check "the heads value is untouched ($h16)" \
    test -n "$h16" -a "$(q "select value from metrics where run_id='sat' and split='ablation' and name='zero.delta_loss' and params='{\"gates\":\"L2H0\"}' and win_count=16")" = "$h16"
check "ablation rows carry their windows, tokens and (4 batches of 2 windows) a loss standard error" \
    test "$(q "select count(*) from metrics where run_id='sat' and split='ablation' and name in ('zero.delta_loss', 'zero.base_loss') and params='{\"gates\":\"L2H0\"}' and win_count = 8 and tokens = 8*32")" = 2 \
    -a "$(q "select se > 0 from metrics where run_id='sat' and split='ablation' and name='zero.base_loss' and params='{\"gates\":\"L2H0\"}' and win_count = 8")" = 1

# ---- early exit matched to the TSA run's α on the whole split (the pair tsa_vs_exit shows) ----
"$BIN" eval ee --match-run tsa --record --results "$R" > "$W/ev1" 2>&1
check "eval --match-run records the matched pair" \
    test $? -eq 0 -a "$(q "select count(*) from metrics where run_id='ee' and split='val' and name in ('matched.tau','matched.alpha_target','matched.loss','matched.partner_loss')")" = 4
# the hard α (the skipping done) when the TSA run has one recorded, else the soft final.active_frac
want_a=$(q "select coalesce((select 'hard.active_frac' from metrics where run_id='tsa' and split='val' and name='hard.active_frac' limit 1), 'final.active_frac')")
check "the pair's α target is the TSA run's headline $want_a, on the same tokens" \
    test "$(q "select count(*) from metrics a join metrics b on a.value = b.value and a.win_count = b.win_count where a.run_id='ee' and a.name='matched.alpha_target' and b.run_id='tsa' and b.split='val' and b.name='$want_a'")" = 1
check "the TSA run's headline has its hard α (so the match above is to it)" \
    test "$want_a" = hard.active_frac

# ---- tables ----
"$BIN" tables --results "$R" > "$W/tb" 2>&1
check "tables exits 0" test $? -eq 0
for t in loss_by_variant tsa_lambda throughput ablations tsa_vs_exit; do
    check "tables writes $t.md and $t.tex" test -s "$R/tables/$t.md" -a -s "$R/tables/$t.tex"
done
v_reg=$(q "select printf('%.4f ± %.4f', value, se) from metrics where run_id='sat' and split='val' and name='final.loss'")
check "the loss table shows the registry's headline val loss ± SE of the SATFormer run ($v_reg)" \
    grep -q "| corpus | d32L3 | satformer | 1 | $v_reg |" "$R/tables/loss_by_variant.md"
v_on=$(q "select data_split || '[' || win_first || ',' || (win_first + win_count) || ') ' || printf('%.0f', tokens) || ' tok @' || step from metrics where run_id='sat' and split='val' and name='final.loss'")
check "the loss table says what it was measured on: the whole split ($v_on)" \
    grep -qF "| $v_on |" "$R/tables/loss_by_variant.md"
check "the LaTeX table is booktabs" grep -q '\\midrule' "$R/tables/loss_by_variant.tex"
check "tsa_vs_exit pairs ee with tsa on the whole split, or says why not" \
    grep -qE "\| tsa \| 0.01 \| .* \| ee \| .*(\| [+-][0-9.]+ \||not matched: α)" "$R/tables/tsa_vs_exit.md"
check "the ablations table keeps both measurements of zero.L2H0 apart" \
    test "$(grep -c '| zero | L2H0 |' "$R/tables/ablations.md")" = 2

# ---- figures ----
"$BIN" figures --results "$R" > "$W/fg" 2> "$W/fg.err"
check "figures exits 0 with nothing on stderr" test $? -eq 0 -a ! -s "$W/fg.err"
check "the heads map draws one measurement and says the other was left out" \
    grep -q "left out of heads_sat: rows measured on val\[0,8)" "$W/fg"
check "the pareto figure leaves out the τ sweep measured on other tokens than the TSA headline" \
    grep -q "left out of pareto: the τ sweep of ee on val\[0,16)" "$W/fg"
valid_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] && [ "$(stat -c %s "$1")" -gt 4000 ]; }
valid_pdf() { [ "$(head -c 4 "$1")" = "%PDF" ] && [ "$(stat -c %s "$1")" -gt 4000 ]; }
for f in loss_step loss_time pareto depth_alpha depth_p alpha_heatmap_sat category_alpha_sat category_p_tsa ablation_sat \
         ablation_tsa heads_sat depth_map_tsa; do
    check "figure $f: valid PNG and PDF of non-trivial size" eval 'valid_png "$R/figures/all/$f.png" && valid_pdf "$R/figures/all/$f.pdf"'
done

# every script on its own (style found next to it), headless, on the data `figures` wrote
# (`figures` without an experiment: <results>/figures/all/)
D="$R/figures/all/data"
ncol() { head -1 "$1" | awk -F'\t' '{ print NF }'; }
run_gp() { # script data extra-vars
    local s=$1 d=$2 v=$3 ok=1
    for ext in png pdf; do
        gnuplot -e "data='$d'; out='$W/solo.$ext'; $v" "$ROOT/scripts/plots/$s" > /dev/null 2> "$W/gp.err" || ok=0
        [ -s "$W/gp.err" ] && ok=0
    done
    if [ $ok = 1 ] && valid_png "$W/solo.png" && valid_pdf "$W/solo.pdf"; then pass "scripts/plots/$s alone: exit 0, no stderr, PNG + PDF"
    else fail "scripts/plots/$s alone: $(head -c 300 "$W/gp.err")"; fi
}
run_gp loss.gp "$D/loss.tsv" "x='time'"
run_gp pareto.gp "$D/pareto_tsa.tsv" "exitdata='$D/pareto_exit.tsv'"
run_gp heatmap.gp "$D/alpha_heatmap_sat.tsv" "cblabel='mean α'"
run_gp depth_profile.gp "$D/depth_p.tsv" "ylab='mean p'"
run_gp category_bars.gp "$D/category_alpha_sat.tsv" "ncol=$(ncol "$D/category_alpha_sat.tsv")"
run_gp ablation_bars.gp "$D/ablation_sat.tsv" "ncol=$(ncol "$D/ablation_sat.tsv")"
run_gp depth_map.gp "$D/depth_map_tsa.tsv" "maxdepth=3"
