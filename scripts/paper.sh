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
# off sweep runs that shared the machine, in parts, each recorded in the same
# registry and skipped when its experiment is already there:
#   cost-paper        one bench_gatelab process times every variant in
#                     interleaved rounds (scale s, 6 blocks), and TSA's sparse
#                     inference with routers forced to α 0.73 (scale m);
#   cost-paper-mem    one process per variant: its peak RSS;
#   cost-paper-L12, cost-paper-L24, cost-paper-mem-L24   the same for plain,
#                     SATFormer, Hyper-Connections and MUDDFormer at 12 and 24
#                     blocks (the dense methods' costs grow with depth);
#   cost-paper-ckpt   sparse inference of a TRAINED TSA checkpoint on its own
#                     validation windows, batch 1 ... 64: $PAPER_SPARSE_RUN (a
#                     run folder), else the run of the plan's claim-8 TSA line
#                     whose α (skipping done where measured) is nearest the
#                     paper's 0.726 (skipped, said, when its folder has no
#                     checkpoint);
#   cost-paper-enwik8 the same for claim 4 (enwik8: sparse inference breaks
#                     even): $PAPER_SPARSE_RUN_ENWIK8, else the run of the
#                     plan's claim-4 TSA line nearest the paper's α 0.833.
stage_bench() {
    local bench="${GATELAB_BENCH:-$(dirname "$BIN")/bench_gatelab}" db="$RES/gatelab.db"
    [ -x "$bench" ] || { say "bench: $bench not built (make bench builds it); claims 8 and 14 stay \"not run\""; return 0; }
    export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
    has_exp() { "$BIN" runs --db "$db" --experiment "$1" --format csv 2>/dev/null | cut -d, -f2 | grep -qx "$1"; }
    # --quick: no break-even sweep (make bench has it); the rounds are set here
    local size=(--quick --steps 20 --warmup 2 --infer-batch 64) mem=(--quick --steps 2 --warmup 1) v L
    local infer=(--quick --steps 20 --infer-batch 64)
    [ "$preset" = smoke ] && size=(--quick --steps 2 --warmup 1 --batch 2 --infer-batch 4) mem+=(--batch 2) \
        infer=(--quick --steps 2 --infer-batch 4)
    if has_exp cost-paper; then say "bench: already measured (experiment cost-paper)"; else
        say "bench: training step of every variant, interleaved (${size[*]})"
        "$bench" --scale s "${size[@]}" --no-sgemm \
            --variants base,resformer,satformer,tsa,hyper,mudd,sparse --db "$db" --tag paper > "$RES/bench.jsonl"
    fi
    if has_exp cost-paper-mem; then say "bench: already measured (experiment cost-paper-mem)"; else
        for v in base satformer hyper mudd; do
            "$bench" --scale s "${mem[@]}" --no-sgemm --variants "$v" --db "$db" --tag paper-mem >> "$RES/bench.jsonl"
        done
    fi
    for L in 12 24; do
        if has_exp "cost-paper-L$L"; then say "bench: already measured (experiment cost-paper-L$L)"; continue; fi
        say "bench: plain, SATFormer, Hyper-Connections, MUDDFormer at $L blocks"
        "$bench" --scale s --n-layer "$L" "${size[@]}" --no-sgemm --variants base,satformer,hyper,mudd \
            --db "$db" --tag "paper-L$L" >> "$RES/bench.jsonl"
    done
    if has_exp cost-paper-mem-L24; then say "bench: already measured (experiment cost-paper-mem-L24)"; else
        for v in satformer hyper mudd; do
            "$bench" --scale s --n-layer 24 "${mem[@]}" --no-sgemm --variants "$v" --db "$db" --tag paper-mem-L24 \
                >> "$RES/bench.jsonl"
        done
    fi
    bench_trained paper-ckpt 8 0.726 "${PAPER_SPARSE_RUN:-}" "PAPER_SPARSE_RUN"
    bench_trained paper-enwik8 4 0.833 "${PAPER_SPARSE_RUN_ENWIK8:-}" "PAPER_SPARSE_RUN_ENWIK8"
}

# bench_trained TAG CLAIM ALPHA RUN ENVNAME: sparse inference of a trained TSA checkpoint on its own
# validation windows, recorded as run cost-TAG-trained-sparse: RUN (a run folder, from ENVNAME),
# else the finished run of the plan line that trains TSA for CLAIM whose α (skipping done where
# measured) is nearest the paper's ALPHA for that claim.
bench_trained() {
    local tag=$1 claim=$2 alpha=$3 run=$4 envname=$5 group
    if has_exp "cost-$tag"; then say "bench: already measured (experiment cost-$tag)"; return 0; fi
    if [ -z "$run" ]; then
        group=$(plan_lines | awk -v c="$claim" '/depth_routing=tsa/ { n = split($3, a, ",")
            for (i = 1; i <= n; i++) { m = split(a[i], r, "-"); if ((m == 1 && a[i] == c) || (m == 2 && c >= r[1] && c <= r[2])) { print $1; exit } } }')
        if [ -n "$group" ]; then
            # α with the skipping done (val hard.active_frac) where measured, else the headline's
            run=$("$BIN" metrics --db "$db" --experiment "paper-$group" --split val --name '*.active_frac' 2>/dev/null | awk -F, -v t="$alpha" '
                NR == 1 { next }
                $5 == "hard.active_frac" { hard[$1] = $8 } $5 == "final.active_frac" { soft[$1] = $8 }
                END { for (r in soft) { a = (r in hard) ? hard[r] : soft[r]; d = a - t; if (d < 0) d = -d
                                        if (best == "" || d < bd || (d == bd && r < best)) { best = r; bd = d } }
                      print best }' || true)  # no runs yet: no rows, not an error
            [ -n "$run" ] && run="$RES/runs/$run"
        fi
    fi
    if [ -z "$run" ]; then
        say "bench: no finished TSA run of a claim-$claim plan line (or $envname): trained sparse inference (claim $claim) not measured"
    elif [ ! -e "$run/ckpt" ]; then
        say "bench: $run has no checkpoint (its folder was lost or never written): trained sparse inference (claim $claim) not measured; set $envname to a run folder of the same settings"
    else
        say "bench: sparse inference of the trained $run (its validation windows; claim $claim)"
        "$bench" "${infer[@]}" --no-sgemm --variants '' --checkpoint "$run" \
            --db "$db" --tag "$tag" >> "$RES/bench.jsonl"
    fi
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
