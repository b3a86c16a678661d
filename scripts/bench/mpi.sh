#!/usr/bin/env bash
# mpi.sh — `make bench`, data-parallel part: the reference config (V 65, d 256,
# L 6, H 8, Hkv 8, d_ff 1024, T 256, B 32) trained by the real `gatelab train`
# as 1 process x 2 threads and as `mpirun -np 2` x 1 thread (build/gatelab-mpi),
# back to back.  A benchmark, not a test: it prints figures, never asserts.
#
# Printed per configuration, as one JSON line each:
#   tokens_per_s     median over the timed steps of the per-step throughput
#                    (train.log_every = 1; the first 2 steps are warm-up)
#   step_s           1 / that median × tokens per step
#   comm_s_per_step  rank 0's seconds in collectives per step (waiting for
#                    the other rank included), from its train.log
#   compute_s_per_step = step_s − comm_s_per_step
#   grad_mib         gradient volume of one step (what dist_sum_floats sums)
# and a summary line: efficiency = tokens/s (2 ranks x 1 thread) / tokens/s
# (1 process x 2 threads).  docs/mpi.md turns compute time per step and
# gradient bytes per step into the expected scaling over N nodes.
#
# Data: tinyshakespeare.txt by gatelab's own lookup ($GATELAB_DATA, data/, ../shared/data).
# usage: scripts/bench/mpi.sh [--steps N]        (default 12; needs build/gatelab-mpi)
set -u
cd "$(dirname "$0")/../.."
BUILD="${BUILD:-build}"
STEPS=12
[ "${1:-}" = --steps ] && STEPS=$2
if ! command -v mpirun > /dev/null 2>&1 || [ ! -x "$BUILD/gatelab-mpi" ]; then
    echo "bench: MPI skipped: needs mpirun and $BUILD/gatelab-mpi (apt-get install openmpi-bin libopenmpi-dev; make)" >&2
    exit 0
fi
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
REF=(data.file=tinyshakespeare.txt model.d_model=256 model.n_layer=6 model.n_head=8 model.n_kv_head=8 model.d_ff=1024 model.seq_len=256
     train.batch_size=32 train.steps=$((STEPS + 2)) train.log_every=1 train.eval_every=1000000 train.ckpt_every=1000000
     train.eval_windows=1 log.probe_windows=1 log.trace=false)

# label, threads, command prefix...
measure() {
    local label=$1 threads=$2; shift 2
    "$@" train tests/fixtures/tiny.ini "${REF[@]}" train.threads="$threads" --run-id "$label" --results "$W" --quiet \
        > "$W/$label.out" 2>&1 || { echo "bench: $label failed: $(tail -3 "$W/$label.out")" >&2; return; }
    local tps params comm
    tps=$(sqlite3 "$W/gatelab.db" "select value from metrics where run_id='$label' and split='train' and
          name='tokens_per_s' and step > 2 order by value" | awk '{v[NR]=$1} END{print NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
    params=$(sed -n 's/.*run [^ ]* | \([0-9]*\) parameters.*/\1/p' "$W/runs/$label/train.log" | head -1)
    comm=$(sed -n 's/.*communication \([0-9.]*\) s in.*/\1/p' "$W/runs/$label/train.log" | tail -1)
    awk -v l="$label" -v t="$tps" -v p="$params" -v c="${comm:-0}" -v s="$((STEPS + 2))" -v th="$threads" 'BEGIN{
        tok = 32 * 256; step = tok / t; cs = c / s;
        printf "{\"config\":\"%s\",\"threads_per_rank\":%d,\"tokens_per_s\":%.0f,\"step_s\":%.4f,\"comm_s_per_step\":%.4f,", l, th, t, step, cs;
        printf "\"compute_s_per_step\":%.4f,\"grad_mib\":%.3f,\"params\":%d}\n", step - cs, p * 4 / 1048576, p }' | tee -a "$W/rows"
}

echo "# data parallel: reference config, $STEPS timed steps (figures depend on the machine's load)" >&2
measure 1proc-x2threads 2 "$BUILD/gatelab"
measure 2ranks-x1thread 1 timeout 900 mpirun --oversubscribe --bind-to none -np 2 "$BUILD/gatelab-mpi"
touch "$W/rows"; awk -F'[:,]' '{for (i = 1; i < NF; i++) if ($i == "\"tokens_per_s\"") t[NR] = $(i + 1)}
    END { if (t[1] > 0 && t[2] > 0) printf "{\"summary\":\"mpi\",\"efficiency_2ranks_vs_2threads\":%.3f}\n", t[2] / t[1] }' "$W/rows"
