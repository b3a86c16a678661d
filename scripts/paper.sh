#!/usr/bin/env bash
# paper.sh PRESET [STAGE] — reproduce the published claims of the SATFormer and
# TSA papers: `make paper PRESET=smoke|local|full`.
#
# Stages, in order (STAGE = all runs them all; each is resumable: rerunning the
# same command never retrains a finished run nor repeats a finished measurement):
#   train   one `gatelab sweep` per line of experiments/paper/PRESET.plan, into
#           the registry $PAPER_RESULTS/gatelab.db (default results/paper/PRESET);
#   post    the measurements the claims need, each recorded in the registry
#           (gatelab paper post: full-split evaluation, matched-α early exit,
#           sparse inference, gate ablations, head ranking, trace analysis);
#   bench   the costs of claims 8 and 14 (training step of each variant, timed
#           in interleaved rounds in one process; peak memory; sparse inference)
#           by bench_gatelab, recorded in the same registry (cost-paper);
#   report  `gatelab paper report PRESET` writes $PAPER_RESULTS/REPORT.md and
#           its figures from the registry and traces alone.
#
# Environment: PAPER_RESULTS (registry + run folders), PAPER_JOBS (parallel
# training runs, default 2), GATELAB_BIN (default build/gatelab), GATELAB_DATA.
set -euo pipefail
case "${GATELAB_DATA:-}" in ""|/*) ;; *) export GATELAB_DATA="$PWD/$GATELAB_DATA" ;; esac  # relative to where it started
cd "$(dirname "$0")/.."
preset="${1:-local}"; stage="${2:-all}"
plan="experiments/paper/$preset.plan"
[ -f "$plan" ] || { echo "paper: no plan $plan (presets: $(ls experiments/paper/*.plan | xargs -n1 basename | sed 's/\.plan$//' | tr '\n' ' '))" >&2; exit 2; }
BIN="${GATELAB_BIN:-build/gatelab}"
RES="${PAPER_RESULTS:-results/paper/$preset}"
JOBS="${PAPER_JOBS:-2}"
export GATELAB_ROOT="$PWD"
mkdir -p "$RES"
t0=$(date +%s)
say() { printf '[paper %s %s] %s\n' "$preset" "$(date +%H:%M:%S)" "$*" >&2; }

# Lines of the plan: GROUP MANIFEST CLAIMS ARGS...
plan_lines() { grep -vE '^\s*(#|$)' "$plan"; }

# The text file a manifest trains on ("" for synthetic tasks), and whether it
# is where gatelab looks ($GATELAB_DATA, then data/, then ../shared/data: the
# binary's own lookup, `gatelab data FILE`).
data_file() { sed -n 's/^file *= *\([^ ;]*\).*/\1/p' "experiments/paper/$1" | head -1; }
have_data() {
    [ -z "$1" ] && return 0
    "$BIN" data "$1" > /dev/null 2>&1
}

stage_train() {
    local n=0 total; total=$(plan_lines | wc -l)
    while read -r group manifest claims args; do
        n=$((n + 1))
        local file; file=$(data_file "$manifest")
        if ! have_data "$file"; then
            say "train $n/$total: paper-$group SKIPPED: $file not found (GATELAB_DATA, data/, ../shared/data; \`make data\` fetches it); claims $claims stay \"not run\""
            continue
        fi
        say "train $n/$total: paper-$group (claims $claims): $args"
        # shellcheck disable=SC2086 # args is a list of key=value words
        "$BIN" sweep "experiments/paper/$manifest" $args log.experiment="paper-$group" \
            -j "$JOBS" --results "$RES" </dev/null
    done < <(plan_lines)
}

stage_post() {
    say "post: measurements for the claims"
    "$BIN" paper post --results "$RES"
}

# The costs claims 8 and 14 are about, measured side by side rather than read
# off sweep runs that shared the machine: one bench_gatelab process times
# every variant in interleaved rounds (experiment cost-paper), one process per
# variant measures its peak RSS (cost-paper-mem), and TSA's sparse inference
# at α 0.73 (cost-paper-s-sparse).  Skipped when cost-paper is already there.
stage_bench() {
    local bench="${GATELAB_BENCH:-$(dirname "$BIN")/bench_gatelab}" db="$RES/gatelab.db"
    [ -x "$bench" ] || { say "bench: $bench not built (make bench builds it); claims 8 and 14 stay \"not run\""; return 0; }
    if "$BIN" runs --db "$db" --experiment cost-paper --format csv 2>/dev/null | grep -q "^cost-paper-"; then
        say "bench: already measured (experiment cost-paper)"; return 0
    fi
    # --quick: no break-even sweep (make bench has it); the rounds are set here
    local size=(--quick --steps 20 --warmup 2 --infer-batch 64) mem=(--quick --steps 2 --warmup 1)
    [ "$preset" = smoke ] && size=(--quick --steps 2 --warmup 1 --batch 2 --infer-batch 4) mem+=(--batch 2)
    say "bench: training step of every variant, interleaved (${size[*]})"
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" "$bench" --scale s "${size[@]}" --no-sgemm \
        --variants base,resformer,satformer,tsa,hyper,mudd,sparse --db "$db" --tag paper > "$RES/bench.jsonl"
    local v
    for v in base satformer hyper mudd; do
        OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" "$bench" --scale s "${mem[@]}" --no-sgemm \
            --variants "$v" --db "$db" --tag paper-mem >> "$RES/bench.jsonl"
    done
}

stage_report() {
    say "report: figures"
    local group rest
    while read -r group rest; do
        "$BIN" figures "paper-$group" --results "$RES" --out "$RES/figures" >/dev/null ||
            say "figures of paper-$group: some could not be drawn (see above); the report links those that were"
    done < <(plan_lines)
    say "report"
    "$BIN" paper report "$preset" --results "$RES"
}

case "$stage" in
train) stage_train ;;
post) stage_post ;;
bench) stage_bench ;;
report) stage_report ;;
all) stage_train; stage_post; stage_bench; stage_report ;;
*) echo "paper: unknown stage '$stage' (train, post, bench, report, all)" >&2; exit 2 ;;
esac
say "done in $(( $(date +%s) - t0 )) s"
