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
    G train "$manifest" "$@" $over --run-id "$id" --quiet
    echo "   $(grep -E '^step [0-9]+ \| val' "$RESULTS/runs/$id/train.log" | tail -1)"
    ids+=("$id"); run[$task.$name]=$id
}

if [ -n "$ts" ]; then
    echo "demo: Tiny Shakespeare found at $ts"
    task=text
    extra=(data.file="$ts")
    [ $quick = 1 ] && extra+=(train.steps=20 train.eval_every=10 train.eval_windows=4 train.warmup=5)
    for v in "${variants[@]}"; do train text experiments/demo.ini "$v" "${extra[@]}"; done
else
    echo "demo: no Tiny Shakespeare (\`gatelab data\` lists where it looks; \`make data\` fetches it);"
    echo "demo: the loop runs on the built-in tasks copy, sort and MQAR instead."
    task=copy
    steps=300; [ $quick = 1 ] && steps=40
    small=(model.d_model=32 model.n_layer=3 model.n_head=2 model.n_kv_head=2 model.d_ff=64 train.lr=1e-2
           train.warmup=20 train.eval_every=$((steps / 2)) train.eval_windows=64 train.steps=$steps
           train.ckpt_every=$steps log.experiment=demo log.trace=1 log.probe_windows=4)
    for v in "${variants[@]}"; do train copy experiments/copy_tsa.ini "$v" "${small[@]}" model.seq_len=21; done
    for v in "${variants[@]:0:3}"; do train sort experiments/copy_tsa.ini "$v" "${small[@]}" model.seq_len=21 data.task=sort; done
    for v in "${variants[@]:0:3}"; do
        train mqar experiments/copy_tsa.ini "$v" "${small[@]}" model.seq_len=24 data.task=mqar data.mqar_pairs=6 data.mqar_queries=4
    done
fi
sat=${run[$task.satformer]} res=${run[$task.resformer]} tsa=${run[$task.tsa]} ee=${run[$task.exit]}

if [ "$task" = text ]; then
    echo
    echo "== a sample from the SATFormer run (gatelab sample $sat --tokens 300)"
    G sample "$sat" --tokens 300 --prompt "ROMEO:" --temperature 0.8
fi
echo
echo "== TSA at inference: soft vs real skipping (gatelab eval $tsa --sparse)"
G eval "$tsa" --sparse --windows 32
alpha=$(G eval "$tsa" --windows 32 | sed -n 's/.*"soft":{[^}]*"active_frac":\([-+0-9.eE]*\).*/\1/p')
echo "== early exit at the TSA run's α = $alpha (gatelab eval $ee --match-alpha $alpha)"
G eval "$ee" --match-alpha "$alpha" --windows 32 || echo "   (no τ reaches α = $alpha on this run: see the τ sweep below)"
echo
echo "== analysis: gate statistics, depth profiles, token categories"
for id in "$sat" "$tsa" "$ee"; do G analyze "$id" | tail -n 12; done
echo
echo "== ablations: does the model need its gates?"
G ablate "$sat" --mode zero | tail -n 6
G ablate "$sat" --mode mean | tail -n 6
G ablate "$sat" --mode resample | tail -n 6
G ablate "$res" --mode zero | tail -n 6
G ablate "$tsa" --mode full-depth | tail -n 6
G ablate "$tsa" --mode random | tail -n 6
G ablate "$ee" --mode exit | tail -n 6
echo
echo "== which heads read V1 (gatelab heads $sat)"
G heads "$sat" | head -n 14
echo
echo "== tables, figures and the report page from the registry"
G tables demo
G figures demo
G report demo --html --out "$RESULTS/report/demo.html"
echo
echo "== the registry (gatelab runs --experiment demo)"
"$BIN" runs --experiment demo --db "$RESULTS/gatelab.db" | tail -n $((${#ids[@]} + 1))
echo
echo "Files:"
echo "  registry          $RESULTS/gatelab.db   (sqlite3 $RESULTS/gatelab.db 'select * from runs')"
for id in "${ids[@]}"; do echo "  run folder        $RESULTS/runs/$id/  (config.ini ckpt trace.h5 train.log)"; done
echo "  gate trace        h5dump -H $RESULTS/runs/$sat/trace.h5"
echo "  analysis          $RESULTS/runs/<id>/analysis/*.tsv"
echo "  tables            $(ls "$RESULTS"/tables/*.md | wc -l) tables: $RESULTS/tables/*.md *.tex"
echo "  figures           $(ls "$RESULTS"/figures/*.png | wc -l) figures: $RESULTS/figures/*.png *.pdf *.svg"
echo "  report            $RESULTS/report/demo.html   (open it in a browser; one file, no network)"
