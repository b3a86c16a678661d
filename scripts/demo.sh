#!/usr/bin/env bash
# demo.sh — the main job (`make demo`): the whole loop, from training to a
# report page, ending with the list of files it made.
#
# With Tiny Shakespeare (found by `gatelab data`: $GATELAB_DATA, data/,
# ../shared/data) it trains the plain transformer, ResFormer, SATFormer, TSA
# and early exit of experiments/demo.ini on it, shows a sample, compares TSA's
# real skipping with early exit at the same active fraction, analyses and
# ablates the gates, and draws the tables, figures and HTML report.
#
# Without it (a bare clone) the same loop runs on the built-in tasks: copy,
# sort and MQAR, each as the baseline, ResFormer and SATFormer, and TSA vs
# early exit on copy.  Nothing is downloaded.
#
# One experiment per task (demo-text; or demo-copy, demo-sort, demo-mqar), so a
# figure or table never puts two tasks' losses on one axis; each has its tables
# (results/tables/EXPERIMENT/), figures (results/figures/EXPERIMENT/) and report
# page (results/report/EXPERIMENT.html).
#
#   scripts/demo.sh [--quick] [--builtin]
#     --quick     a few steps per run (the test suite's end-to-end check)
#     --builtin   the built-in tasks even when Tiny Shakespeare is there
#   GATELAB_RESULTS   results folder (default results/); GATELAB_BIN the binary
set -euo pipefail
case "${GATELAB_DATA:-}" in ""|/*) ;; *) export GATELAB_DATA="$PWD/$GATELAB_DATA" ;; esac
case "${GATELAB_RESULTS:-}" in ""|/*) ;; *) export GATELAB_RESULTS="$PWD/$GATELAB_RESULTS" ;; esac
BIN="${GATELAB_BIN:-build/gatelab}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
cd "$(dirname "$0")/.."
RESULTS="${GATELAB_RESULTS:-results}"
quick=0; builtin=0
for a in "$@"; do
    case "$a" in
        --quick) quick=1 ;;
        --builtin) builtin=1 ;;
        *) echo "usage: scripts/demo.sh [--quick] [--builtin]" >&2; exit 2 ;;
    esac
done
stamp=$(date -u +%Y%m%d-%H%M%S)
G() { "$BIN" "$@" --results "$RESULTS"; }

ts=""
[ $builtin = 1 ] || ts=$("$BIN" data tinyshakespeare.txt 2> /dev/null) || ts=""

variants=("base:model.value_residual=none model.depth_routing=none"
          "resformer:model.value_residual=resformer model.depth_routing=none"
          "satformer:model.value_residual=satformer model.depth_routing=none"
          "tsa:model.value_residual=none model.depth_routing=tsa"
          "exit:model.value_residual=none model.depth_routing=early_exit")
ids=()      # every run, in training order
declare -A run  # run[task.variant] = id

train() { # task manifest "variant:overrides" extra-overrides...
    local task=$1 manifest=$2 v=$3; shift 3
    local name=${v%%:*} over=${v#*:}
    local id="demo-$task-$name-$stamp"
    echo "== training $task / $name ($over)"
    # shellcheck disable=SC2086
    G train "$manifest" "$@" $over log.experiment="demo-$task" --run-id "$id" --quiet
    # the last periodic evaluation (a probe: the first eval_windows windows) and the headline
    # (the whole validation split): the "val loss" every table and figure shows
    echo "   $(grep -E '^step [0-9]+ \| val loss \(' "$RESULTS/runs/$id/train.log" | tail -1)"
    echo "   $(grep -E '^headline: val loss' "$RESULTS/runs/$id/train.log" | tail -1)"
    ids+=("$id"); run[$task.$name]=$id
}

if [ -n "$ts" ]; then
    echo "demo: Tiny Shakespeare found at $ts"
    task=text
    tasks=(text)
    extra=(data.file="$ts")
    [ $quick = 1 ] && extra+=(train.steps=20 train.eval_every=10 train.eval_windows=4 train.warmup=5)
    for v in "${variants[@]}"; do train text experiments/demo.ini "$v" "${extra[@]}"; done
else
    echo "demo: no Tiny Shakespeare (\`gatelab data\` lists where it looks; \`make data\` fetches it);"
    echo "demo: the loop runs on the built-in tasks copy, sort and MQAR instead."
    task=copy
    tasks=(copy sort mqar)
    steps=300; [ $quick = 1 ] && steps=40
    small=(model.d_model=32 model.n_layer=3 model.n_head=2 model.n_kv_head=2 model.d_ff=64 train.lr=1e-2
           train.warmup=20 train.eval_every=$((steps / 2)) train.eval_windows=64 train.steps=$steps
           train.ckpt_every=$steps log.trace=1 log.probe_windows=4)
    for v in "${variants[@]}"; do train copy experiments/copy_tsa.ini "$v" "${small[@]}" model.seq_len=21; done
    for v in "${variants[@]:0:3}"; do train sort experiments/copy_tsa.ini "$v" "${small[@]}" model.seq_len=21 data.task=sort; done
    for v in "${variants[@]:0:3}"; do
        train mqar experiments/copy_tsa.ini "$v" "${small[@]}" model.seq_len=24 data.task=mqar data.mqar_pairs=6 data.mqar_queries=4
    done
fi
sat=${run[$task.satformer]} res=${run[$task.resformer]} tsa=${run[$task.tsa]} ee=${run[$task.exit]}

# One line on what the sparse loss means, from the numbers of this run: soft TSA (what training
# optimised: h += (1 − p)·(a + f) for every token) against real skipping (a token with p > 0.5
# gets no update from the block at all).  The router whose skipped tokens lost the most update
# is read from `gatelab analyze`'s per-token halting probabilities (depth_tokens.tsv).
explain_sparse() { # eval-JSON run
    local j=$1 id=$2 soft sparse sacc pacc where
    soft=$(sed -n 's/.*"soft":{"loss":\([-+0-9.eE]*\).*/\1/p' <<< "$j")
    sparse=$(sed -n 's/.*"sparse":{"loss":\([-+0-9.eE]*\).*/\1/p' <<< "$j")
    sacc=$(sed -n 's/.*"soft":{[^}]*"token_acc":\([-+0-9.eE]*\).*/\1/p' <<< "$j")
    pacc=$(sed -n 's/.*"sparse":{[^}]*"token_acc":\([-+0-9.eE]*\).*/\1/p' <<< "$j")
    [ -n "$soft" ] && [ -n "$sparse" ] || return 0
    G analyze "$id" > /dev/null 2>&1 || true
    where=$(awk -F'\t' 'NR == 1 { for (c = 1; c <= NF; c++) if ($c ~ /^p_L[0-9]+$/) { col[c] = substr($c, 4) }; next }
        { tot++; for (c in col) if ($c > 0.5) { n[c]++; s[c] += 1 - $c } }
        END { for (c in col) if (n[c] && s[c] > best) { best = s[c]; b = c }
              if (b) printf "at block %d, %d of %d probe tokens have p > 0.5 and still got %.0f %% of its update on average in training", col[b], n[b], tot, 100 * s[b] / n[b] }' \
        "$RESULTS/runs/$id/analysis/depth_tokens.tsv" 2> /dev/null)
    awk -v soft="$soft" -v sparse="$sparse" -v sacc="$sacc" -v pacc="$pacc" -v where="$where" 'BEGIN {
        acc = (sacc != "" && pacc != "") ? sprintf(", token accuracy %.2f vs %.2f", sacc, pacc) : ""
        if (sparse - soft > 0.05)
            printf "   what it means: soft %.4f vs sparse %.4f nats/token%s. Training is soft: a token with p > 0.5 still gets (1 - p) of the block'"'"'s update, while real skipping gives it none%s; the model was trained with those partial updates and %s without them.\n", soft, sparse, acc, where != "" ? " (" where ")" : "", (sacc != "" && pacc != "" && pacc < sacc - 0.1) ? "cannot do the task" : "does worse"
        else
            printf "   what it means: soft %.4f vs sparse %.4f nats/token%s: the tokens that skip had p close to 1, so their soft update (1 - p) was small already and real skipping costs little.\n", soft, sparse, acc
    }'
}

if [ "$task" = text ]; then
    echo
    echo "== a sample from the SATFormer run (gatelab sample $sat --tokens 300)"
    G sample "$sat" --tokens 300 --prompt "ROMEO:" --temperature 0.8
fi
echo
echo "== TSA at inference: soft vs real skipping (gatelab eval $tsa --sparse)"
sp=$(G eval "$tsa" --sparse --windows 32)
echo "$sp"
explain_sparse "$sp" "$tsa"
echo "== early exit at the TSA run's headline α, both on the whole validation split (gatelab eval $ee --match-run $tsa --record)"
G eval "$ee" --match-run "$tsa" --record ||
    echo "   (no τ reaches the TSA run's α on this run: the τ sweep of \`gatelab ablate $ee --mode exit\` below shows why)"
echo
echo "== analysis: gate statistics, depth profiles, token categories"
for id in "$sat" "$tsa" "$ee"; do G analyze "$id"; echo; done
echo "== ablations: does the model need its gates? (each also prints a JSON line; left out here)"
nojson() { grep -v '^{"run_id"' || true; }
G ablate "$sat" --mode zero | nojson
G ablate "$sat" --mode mean | nojson
G ablate "$sat" --mode resample | nojson
G ablate "$res" --mode zero | nojson
G ablate "$tsa" --mode full-depth | nojson
G ablate "$tsa" --mode random | nojson
G ablate "$ee" --mode exit | nojson
echo
echo "== which heads read V1 (gatelab heads $sat)"
G heads "$sat" | head -n 14
echo
# the built-in tasks' vocabulary is their symbols (0-9a-z…) and the separator '|'; text runs read any text
if [ "$task" = text ]; then prompt="ROMEO: But soft, what light through yonder window breaks?"; else prompt="0123456789|0123456789"; fi
echo "== the gates on your own text, and the logit lens per block (gatelab probe $sat --prompt \"$prompt\")"
G probe "$sat" --prompt "$prompt"
echo "   (every gate, the V1 share and the lens per token are in that HDF5 cache: gatelab report --probe CACHE --html colours the text by any of them)"
echo
echo "== tables, figures and the report page from the registry, one experiment per task"
for t in "${tasks[@]}"; do
    G tables "demo-$t" --out "$RESULTS/tables/demo-$t"
    G figures "demo-$t"
    G report "demo-$t" --html --out "$RESULTS/report/demo-$t.html"
done
echo
echo "== TSA against early exit at the same α ($RESULTS/tables/demo-$task/tsa_vs_exit.md)"
grep '^|' "$RESULTS/tables/demo-$task/tsa_vs_exit.md"
echo
for t in "${tasks[@]}"; do
    echo "== the registry (gatelab runs --experiment demo-$t: this demo's $t runs; train = train loss, val = val loss)"
    "$BIN" runs --experiment "demo-$t" --db "$RESULTS/gatelab.db" | awk -v s="-$stamp" 'NR == 1 || index($1, s)'
    echo
done
echo
echo "Files:"
echo "  registry          $RESULTS/gatelab.db   (sqlite3 $RESULTS/gatelab.db 'select * from runs')"
for id in "${ids[@]}"; do echo "  run folder        $RESULTS/runs/$id/  (config.ini ckpt trace.h5 train.log)"; done
echo "  gate trace        h5dump -H $RESULTS/runs/$sat/trace.h5"
echo "  analysis          $RESULTS/runs/<id>/analysis/*.tsv"
echo "  tables            $(ls "$RESULTS"/tables/demo-*/*.md | wc -l) tables: $RESULTS/tables/demo-*/*.md *.tex"
for t in "${tasks[@]}"; do
    echo "  figures           $(ls "$RESULTS"/figures/demo-$t/*.png | wc -l) figures: $RESULTS/figures/demo-$t/*.png *.pdf *.svg"
done
for t in "${tasks[@]}"; do
    echo "  report            $RESULTS/report/demo-$t.html   (open it in a browser; one file, no network)"
done
