#!/usr/bin/env bash
# figures.sh — every figure kind `gatelab figures` draws, from a small
# registry built here by training tiny runs on the test's own corpus: two
# seeds of SATFormer and of TSA at one λ, a second λ, and early exit.  Checks
# that each figure's PNG, PDF and SVG exist and are not empty, and that no
# text is mangled by gnuplot's enhanced-text mode (an underscore in
# "early_exit" printed as a subscript): the scripts turn it off, no SVG holds
# a shifted sub/superscript, and labels with _ ^ { } @ & come out as written.
# Also: legends name what differs between runs (no "seed" in them; the seeds
# are averaged, with their spread), gate maps leave out block 0 (no gate),
# ablation bars carry readable labels, and the paper report's scripts draw.
# Figures go to <results>/figures/<experiment>/ (…/all without one), so two
# experiments never overwrite each other; every title fits its canvas; the
# palette has a colour per group up to 16.
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W=$(mktemp -d)
if [ -n "${KEEP_TMP:-}" ]; then echo "temp folder (kept): $W"; else trap 'rm -rf "$W"' EXIT; fi
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1 # tiny models: one thread is fastest and immune to a busy machine
R="$W/results"
F="$R/figures/all"   # `gatelab figures` without an experiment: every run
D="$F/data"

# ---- the scripts themselves: plain text only ----
check "style.gp opens every terminal (PNG, PDF, SVG) with noenhanced text" \
    test "$(grep -cE '^ *set terminal (pngcairo|pdfcairo|svg) noenhanced' "$ROOT/scripts/plots/style.gp")" = 3
bad=$(grep -nE '(^|[^o])enhanced' "$ROOT"/scripts/plots/*.gp | grep -v '^[^:]*:[0-9]*:#' || true)
check "no gnuplot script turns enhanced text on (${bad:-none})" test -z "$bad"

# ---- a small registry: tiny runs, 2 seeds where a figure averages them ----
T() { "$BIN" train "$TINY" train.steps=30 train.eval_every=10 train.log_every=5 train.ckpt_every=30 "$@" \
          --results "$R" --quiet > "$W/train.log" 2>&1; }
ok=1
for s in 1 2; do
    T model.value_residual=satformer model.n_kv_head=2 train.seed=$s --run-id sat$s || ok=0
    T model.depth_routing=tsa model.tsa_lambda=0.01 model.router_init_bias=0 train.seed=$s --run-id tsa$s || ok=0
done
T model.depth_routing=tsa model.tsa_lambda=0.1 model.router_init_bias=0 train.seed=1 --run-id tsaB || ok=0
T model.depth_routing=early_exit train.steps=10 train.ckpt_every=10 --run-id ee || ok=0
check "train 7 tiny runs of 2 blocks (SATFormer with 2 KV heads x2, TSA λ 0.01 x2, TSA λ 0.1, early exit)" test $ok = 1
[ $ok = 1 ] || { tail -20 "$W/train.log"; exit 1; }
ok=1
for r in sat1 sat2 tsa1 tsa2 tsaB; do "$BIN" analyze $r --results "$R" > "$W/an.$r" 2>&1 || ok=0; done
"$BIN" ablate sat1 --results "$R" --mode zero --windows 8 > "$W/ab1" 2>&1 || ok=0
"$BIN" ablate sat1 --results "$R" --mode mean --windows 8 > "$W/ab2" 2>&1 || ok=0
"$BIN" ablate sat2 --results "$R" --mode zero --windows 8 > "$W/ab3" 2>&1 || ok=0
"$BIN" heads sat1 --results "$R" --windows 8 > "$W/hd" 2>&1 || ok=0
"$BIN" eval ee --match-run tsa1 --record --results "$R" > "$W/ev" 2>&1 || ok=0
check "analyze, ablate, heads and eval --match-run exit 0" test $ok = 1

# ---- every figure kind ----
"$BIN" figures --results "$R" > "$W/fg" 2> "$W/fg.err"
check "figures exits 0 with nothing on stderr" test $? -eq 0 -a ! -s "$W/fg.err"
check "figures without an experiment go to <results>/figures/all/" eval 'grep -q "in $F, data in $F/data" "$W/fg"'
valid_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] && [ "$(stat -c %s "$1")" -gt 4000 ]; }
for f in loss_step loss_time pareto depth_alpha depth_p alpha_heatmap_sat1 heads_sat1 category_alpha_sat1 \
         category_p_tsa1 ablation_sat1 ablation_seeds depth_map_tsa1; do
    check "figure $f: PNG, PDF and SVG exist and are not empty" \
        eval 'valid_png "$F/$f.png" && [ "$(head -c 4 "$F/$f.pdf")" = "%PDF" ] && grep -q "<svg" "$F/$f.svg"'
done
shifted=$(grep -l 'dy="' "$F"/*.svg 2> /dev/null | xargs -r -n1 basename | tr '\n' ' ')
check "no SVG holds enhanced-text sub/superscripts (${shifted:-none})" test -z "$shifted"
check "'early_exit' is printed as written in the loss legend" grep -q 'baseline+early_exit' "$F/loss_step.svg"

# ---- legends and titles: by what differs, seeds averaged ----
heads=$(awk -F'\t' 'FNR == 1 || prev == "" { if ($2 == "wall_s") print $1 } { prev = $0 }' "$D/loss.tsv" | sort -u)
check "loss legends name no seed (the seeds are averaged): $(echo $heads | tr '\n' ',')" \
    eval '[ -n "$heads" ] && ! echo "$heads" | grep -q seed'
check "loss legends tell the λ apart and name the variants" \
    eval 'echo "$heads" | grep -q "λ=0.01" && echo "$heads" | grep -q "λ=0.1" && echo "$heads" | grep -q satformer'
check "loss data: the SATFormer group averages 2 seeds with an sd column" \
    awk -F'\t' '$1 ~ /satformer/ { on = 1; next } /^$/ { on = 0 } on && $5 == 2 && $4 >= 0 { n++ } END { exit !(n > 0) }' "$D/loss.tsv"
check "the loss figure's title says what every run shares and how seeds are shown" \
    grep -q 'Loss during training: corpus d32L2, mean ± sd over 1–2 seeds' "$F/loss_step.svg"
check "the depth profile of p has one curve per λ with its sd over seeds" \
    test "$(grep -c $'\tmean\tsd\tn$' "$D/depth_p.tsv")" = 2
check "pareto points carry sd on both axes and a label column" \
    awk -F'\t' 'NR > 1 && NF == 6 && $1 != "nan" { n++ } END { exit !(n >= 2) }' "$D/pareto_tsa.tsv"
untitled=""
for f in loss_step loss_time pareto depth_alpha depth_p alpha_heatmap_sat1 heads_sat1 category_alpha_sat1 category_p_tsa1 \
         ablation_sat1 ablation_seeds depth_map_tsa1; do
    # a title is centred text in the top 12 % (or 30 px) of gnuplot's SVG (tick labels sit at the bottom or the side)
    awk 'match($0, /height="[0-9.]+"/) && !h { h = substr($0, RSTART + 8, RLENGTH - 9) }
         /<g transform="translate\([0-9.]+,[0-9.]+\)".*text-anchor="middle"/ { split($0, a, /[(),]/); if (a[3] + 0 < 0.12 * h || a[3] + 0 < 30) top = 1 }
         END { exit !top }' "$F/$f.svg" || untitled="$untitled $f"
done
check "every figure has a title (${untitled:-all titled})" test -z "$untitled"
# The title's first line in the PNG: inside the canvas with room to spare, since the PDF's
# 8-point text runs ≈ 1.16x wider against its canvas than the PNG's (and the SVG's 0.85x):
# centred where it is, a title 1.2x as wide must still end inside both edges.
if command -v python3 > /dev/null; then
    wide=""
    for f in loss_step pareto depth_alpha depth_p alpha_heatmap_sat1 heads_sat1 category_alpha_sat1 category_p_tsa1 \
             ablation_sat1 ablation_seeds depth_map_tsa1; do
        python3 "$ROOT/tests/pngcheck.py" title "$F/$f.png" > "$W/title.txt" 2>&1 &&
            awk '{ v[$1] = $2 } END { c = (v["title_left"] + v["title_right"]) / 2; h = 1.2 * (v["title_right"] - v["title_left"]) / 2
                   exit !(v["title_ink"] > 0 && c - h > 2 && c + h < v["width"] - 3) }' "$W/title.txt" ||
            wide="$wide $f($(tr '\n' ' ' < "$W/title.txt"))"
    done
    check "every title fits its canvas with room for the PDF's wider text (${wide:-all fit})" test -z "$wide"
else
    skip "title widths in the PNGs (python3 is not installed: apt-get install python3)"
fi
colours=$(grep -oE "^set linetype [0-9]+ lc rgb '#[0-9a-f]{6}'" "$ROOT/scripts/plots/style.gp" | awk '{ print $NF }' | sort -u | wc -l)
check "style.gp gives 16 line types 16 distinct colours ($colours), so 11 loss curves never share one" test "$colours" -ge 16

# ---- one folder per experiment ----
"$BIN" train "$TINY" train.steps=10 train.eval_every=10 train.log_every=5 train.ckpt_every=10 log.experiment=other \
    --results "$R" --quiet --run-id oth > "$W/train.log" 2>&1 &&
    "$BIN" figures tiny --results "$R" > "$W/fg.tiny" 2> "$W/fg.err" && [ ! -s "$W/fg.err" ] &&
    "$BIN" figures other --results "$R" > "$W/fg.other" 2> "$W/fg.err" && [ ! -s "$W/fg.err" ]
check "figures of two experiments exit 0" test $? -eq 0
check "each experiment's figures go to <results>/figures/<experiment>/, neither overwritten" \
    eval 'valid_png "$R/figures/tiny/loss_step.png" && valid_png "$R/figures/other/loss_step.png" &&
          ! cmp -s "$R/figures/tiny/loss_step.png" "$R/figures/other/loss_step.png" && [ ! -e "$R/figures/loss_step.png" ]'
groups() { grep -c $'\twall_s\t' "$1"; }
check "the second experiment's loss figure holds its one run (train + val: $(groups "$R/figures/other/data/loss.tsv") curves), the first its own ($(groups "$R/figures/tiny/data/loss.tsv"))" \
    eval '[ "$(groups "$R/figures/other/data/loss.tsv")" = 2 ] && [ "$(groups "$R/figures/tiny/data/loss.tsv")" -gt 2 ]'

# a loss near 0 (a copy task learnt): the Pareto plot of its one TSA point must not pad the loss
# axis below 0 (it used to: ±1e-3 around 0.0003)
"$BIN" train "$ROOT/experiments/copy_tsa.ini" model.depth_routing=tsa model.d_model=32 model.n_layer=3 model.n_head=2 \
    model.n_kv_head=2 model.d_ff=64 model.seq_len=21 train.lr=1e-2 train.warmup=20 train.steps=300 train.eval_every=300 \
    train.eval_windows=16 train.ckpt_every=300 train.threads=1 log.experiment=copyp --run-id cp --results "$R" --quiet \
    > "$W/train.log" 2>&1 && "$BIN" figures copyp --results "$R" > "$W/fg.cp" 2> "$W/fg.err"
rc=$?
cpl=$(sqlite3 "$R/gatelab.db" "select value from metrics where run_id='cp' and name='final.loss'" 2> /dev/null | head -1)
check "a copy-task TSA run near 0 loss ($cpl): its Pareto plot's axes show no negative value" \
    eval '[ $rc -eq 0 ] && [ ! -s "$W/fg.err" ] && grep -q "<text>" "$R/figures/copyp/pareto.svg" &&
          ! grep -qE "<text> *-[0-9]" "$R/figures/copyp/pareto.svg"'

# a fresh Debian (or a container) sets no locale: gnuplot's `set encoding utf8` would warn there
env -u LC_ALL -u LC_CTYPE -u LANG "$BIN" figures tiny --results "$R" --out "$W/c-locale" > "$W/fg.c" 2> "$W/fg.err"
rc=$?
check "figures under the C locale (no LANG, as on a fresh install): exit 0, nothing on stderr" \
    eval '[ $rc -eq 0 ] && [ ! -s "$W/fg.err" ] && valid_png "$W/c-locale/loss_step.png"'

# ---- gate maps and bars ----
check "the α map leaves out block 0 (no gate there)" awk -F'\t' 'NR > 1 && $1 == 0 { bad = 1 } END { exit bad || NR < 2 }' \
    "$D/alpha_heatmap_sat1.tsv"
check "the heads ΔL map leaves out block 0 too" awk -F'\t' 'NR > 1 && $1 == 0 { bad = 1 } END { exit bad || NR < 2 }' \
    "$D/heads_sat1.tsv"
check "ablation bars are labelled for a reader, not by internal codes" \
    eval 'grep -q "α := 0 (every gate)" "$D/ablation_sat1.tsv" && grep -q "α := its mean (every gate)" "$D/ablation_sat1.tsv" && ! grep -q ":all" "$D/ablation_sat1.tsv"'

check "ablation bars over seeds: α := 0 pooled over 2 seeds with its sd, the mean ablation of one seed without" \
    eval 'grep -qP "^α := 0 \(every gate\)\t[-0-9.e]+\t[0-9.e-]+\t2$" "$D/ablation_seeds.tsv" &&
          grep -qP "^α := its mean \(every gate\)\t[-0-9.e]+\tnan\t1$" "$D/ablation_seeds.tsv"'

# ---- each script on its own, with hazardous labels: printed as written ----
HZ='x_1 a^2 {b} c@d e&f'
printf 'block\t%s\tsd\tstructural\tsd\tfunctional\tsd\n1\t0.2\t0.01\t0.3\t0.02\t0.1\t0.01\n2\t0.4\t0.02\t0.2\t0.01\t0.3\t0.02\n' "$HZ" > "$W/cat.tsv"
printf 'intervention\tdelta_loss\tsd\n%s\t0.1\t0.02\nearly_exit\t0.05\t0.01\n' "$HZ" > "$W/bars.tsv"
printf '%s\tloss\tsd\tseeds\n0\t4\t0.1\t2\n10\t3\t0.1\t2\n\n\nearly_exit\tloss\tsd\tseeds\n0\t4.1\t0\t1\n12\t3.2\t0\t1\n' "$HZ" > "$W/lt.tsv"
printf '%s\tsaved\tsaved_sd\tloss\tloss_sd\nλ=0\t10\t1\t1.8\t0.01\nλ=0.1\t40\t2\t1.9\t0.02\n\n\nearly_exit\tsaved\tsaved_sd\tloss\tloss_sd\nτ=0.5\t20\t1\t1.85\t0.01\n' "$HZ" > "$W/pp.tsv"
printf 'layer\tkv_head\tdelta_loss\n1\t0\t-0.2\n1\t1\t0.1\n2\t0\t0.3\n2\t1\t0\n' > "$W/hm.tsv"
# gnuplot as gatelab runs it (analysis/render/figures.c): LC_CTYPE=C.UTF-8 whatever the locale (under
# LC_ALL=C gnuplot itself warns "iconv failed to convert degree sign")
gnuplot() { env -u LC_ALL LC_CTYPE=C.UTF-8 gnuplot "$@"; }
gp() { # script data vars
    gnuplot -e "data='$2'; out='$W/solo.svg'; $3" "$ROOT/scripts/plots/$1" > /dev/null 2> "$W/gp.err" && [ ! -s "$W/gp.err" ] &&
        gnuplot -e "data='$2'; out='$W/solo.png'; $3" "$ROOT/scripts/plots/$1" > /dev/null 2>> "$W/gp.err" &&
        [ ! -s "$W/gp.err" ] && valid_png "$W/solo.png" && ! grep -q 'dy="' "$W/solo.svg"
}
lit() { grep -qF "$1" "$W/solo.svg"; } # the label as written (& escaped as &amp; by SVG)
check "paper_category.gp alone: exit 0, plain labels" eval 'gp paper_category.gp "$W/cat.tsv" "title='"'"'t_1'"'"'" && lit "t_1"'
printf 'intervention\tall tokens\nα := 0 (every gate)\t0.5\nfull depth (p := 0)\t0.04\n' > "$W/abl1.tsv"
check "ablation_bars.gp alone with the all-token bars only (a task without categories): exit 0, drawn" \
    eval 'gp ablation_bars.gp "$W/abl1.tsv" "ncol=2; title='"'"'all tokens only'"'"'" && lit "all tokens only"'
printf 'block\tstructural\n1\t0.2\n2\t0.4\n' > "$W/cat1.tsv"
check "category_bars.gp alone with one category: exit 0" eval 'gp category_bars.gp "$W/cat1.tsv" "ncol=2"'
tv='ncol=2; title='"'first line:'"'."\n".'"'second line'"
check "a title wrapped by figures_title_var (lines joined with \"\\n\") draws both lines" \
    eval 'gp category_bars.gp "$W/cat1.tsv" "$tv" && lit "first line:" && lit "second line"'
check "paper_bars.gp alone: exit 0, plain labels" eval 'gp paper_bars.gp "$W/bars.tsv" "" && lit "early_exit" && lit "x_1 a^2 {b} c@d e&amp;f"'
check "paper_loss_time.gp alone: exit 0, plain labels, bands" eval 'gp paper_loss_time.gp "$W/lt.tsv" "" && lit "early_exit"'
printf 'p\tcopy λ=0.05 (n=3)\tsd\t%s\tsd\n0.05\t0.6\t0.1\t0.2\tnan\n0.55\t0.1\t0.02\t0.3\tnan\n0.95\t0.3\t0.1\t0.5\tnan\n' "$HZ" > "$W/ph.tsv"
check "paper_p_hist.gp alone, two series (one with one seed): exit 0, plain labels" \
    eval 'gp paper_p_hist.gp "$W/ph.tsv" "nser=2; binw=0.1" && lit "copy λ=0.05 (n=3)" && lit "x_1 a^2"'
check "paper_pareto.gp alone: exit 0, plain labels" eval 'gp paper_pareto.gp "$W/pp.tsv" "" && lit "early_exit" && lit "x_1 a^2"'
check "heatmap.gp alone, diverging: exit 0, a title as written" \
    eval 'gp heatmap.gp "$W/hm.tsv" "diverging=1; cbmin=-0.3; cbmax=0.3; title='"'"'heads_sat1 ΔL'"'"'" && lit "heads_sat1 ΔL"'
check "loss.gp alone on figures' data: exit 0" eval 'gp loss.gp "$D/loss.tsv" "x='"'"'time'"'"'"'
check "pareto.gp alone on figures' data: exit 0" eval 'gp pareto.gp "$D/pareto_tsa.tsv" "exitdata='"'"'$D/pareto_exit.tsv'"'"'"'
check "depth_profile.gp alone on figures' data: exit 0" eval 'gp depth_profile.gp "$D/depth_p.tsv" ""'
env -u LC_ALL -u LC_CTYPE -u LANG gnuplot -e "data='$D/loss.tsv'; out='$W/solo_c.png'" "$ROOT/scripts/plots/loss.gp" \
    > /dev/null 2> "$W/gp.err"
check "a script alone under the C locale (no LANG): exit 0, nothing on stderr ($(head -c 120 "$W/gp.err"))" \
    eval '[ ! -s "$W/gp.err" ] && valid_png "$W/solo_c.png"'
