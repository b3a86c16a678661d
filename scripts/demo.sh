#!/usr/bin/env bash
# demo.sh — the main job (`make demo`): train the five variants of
# experiments/demo.ini on Tiny Shakespeare (or, without the data set, on the
# synthetic copy task), show a sample, compare TSA with early exit at the same
# active fraction, analyse and ablate the gates, draw the tables and figures,
# and print where every file is.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/gatelab
RESULTS="${GATELAB_RESULTS:-results}"
export GATELAB_DATA="${GATELAB_DATA:-data}"
stamp=$(date -u +%Y%m%d-%H%M%S)
manifest=experiments/demo.ini
extra=()
if [ ! -s "$GATELAB_DATA/tinyshakespeare.txt" ]; then
    echo "demo: $GATELAB_DATA/tinyshakespeare.txt not found (set GATELAB_DATA to the folder that holds it);"
    echo "demo: training on the built-in synthetic copy task instead."
    manifest=experiments/copy_tsa.ini
    extra=(model.d_model=32 model.n_layer=3 model.n_head=2 model.n_kv_head=2 model.d_ff=64 model.seq_len=21
           train.steps=150 train.lr=1e-2 train.eval_windows=64 log.experiment=demo)
fi
variants=("base:model.value_residual=none model.depth_routing=none"
          "resformer:model.value_residual=resformer model.depth_routing=none"
          "satformer:model.value_residual=satformer model.depth_routing=none"
          "tsa:model.value_residual=none model.depth_routing=tsa"
          "exit:model.value_residual=none model.depth_routing=early_exit")
ids=()
for v in "${variants[@]}"; do
    name=${v%%:*}; over=${v#*:}
    id="demo-$name-$stamp"
    echo "== training $name ($over)"
    # shellcheck disable=SC2086
    "$BIN" train "$manifest" "${extra[@]}" $over --run-id "$id" --results "$RESULTS"
    ids+=("$id")
done
echo
echo "== validation loss of each variant"
for id in "${ids[@]}"; do
    printf '%-34s %s\n' "$id" "$(grep -E '^step [0-9]+ \| val' "$RESULTS/runs/$id/train.log" | tail -1)"
done
if [ "$manifest" = experiments/demo.ini ]; then
    echo
    echo "== a sample from the SATFormer run (gatelab sample ${ids[2]} --tokens 300)"
    "$BIN" sample "${ids[2]}" --results "$RESULTS" --tokens 300 --prompt "ROMEO:" --temperature 0.8
    echo
    echo "== TSA at inference: soft vs real skipping (gatelab eval ${ids[3]} --sparse)"
    "$BIN" eval "${ids[3]}" --results "$RESULTS" --sparse --windows 32
    alpha=$("$BIN" eval "${ids[3]}" --results "$RESULTS" --windows 32 | sed -n 's/.*"soft":{[^}]*"active_frac":\([0-9.]*\).*/\1/p')
    echo "== early exit at the TSA run's α = $alpha (gatelab eval ${ids[4]} --match-alpha $alpha)"
    "$BIN" eval "${ids[4]}" --results "$RESULTS" --match-alpha "$alpha" --windows 32 || true
fi
echo
echo "== analysis: gate statistics, depth profiles, token categories"
for i in 2 3 4; do "$BIN" analyze "${ids[$i]}" --results "$RESULTS" | tail -n 12; done
echo
echo "== ablations: does the model need its gates?"
"$BIN" ablate "${ids[2]}" --mode zero --results "$RESULTS" | tail -n 6
"$BIN" ablate "${ids[2]}" --mode mean --results "$RESULTS" | tail -n 6
"$BIN" ablate "${ids[1]}" --mode zero --results "$RESULTS" | tail -n 6
"$BIN" ablate "${ids[3]}" --mode full-depth --results "$RESULTS" | tail -n 6
"$BIN" ablate "${ids[3]}" --mode random --results "$RESULTS" | tail -n 6
"$BIN" ablate "${ids[4]}" --mode exit --results "$RESULTS" | tail -n 6
echo
echo "== which heads read V1 (gatelab heads ${ids[2]})"
"$BIN" heads "${ids[2]}" --results "$RESULTS" | head -n 14
echo
echo "== tables and figures from the registry"
"$BIN" tables demo --results "$RESULTS"
"$BIN" figures demo --results "$RESULTS"
echo
echo "== the registry (gatelab runs --experiment demo)"
"$BIN" runs --experiment demo --db "$RESULTS/gatelab.db" | tail -n 8
echo
echo "Files:"
echo "  registry          $RESULTS/gatelab.db   (sqlite3 $RESULTS/gatelab.db 'select * from runs')"
for id in "${ids[@]}"; do echo "  run folder        $RESULTS/runs/$id/  (config.ini ckpt trace.h5 train.log)"; done
echo "  gate trace        h5dump -H $RESULTS/runs/${ids[2]}/trace.h5"
echo "  analysis          $RESULTS/runs/<id>/analysis/*.tsv"
echo "  tables            $RESULTS/tables/*.md *.tex"
echo "  figures           $RESULTS/figures/*.png *.pdf"
