#!/usr/bin/env bash
# run.sh — `make bench`: the C core and PyTorch on the reference config, back to
# back in one run, under the machine's OpenBLAS settings and with them unset.
#
#   environments:  "as set"   OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE as the machine sets them
#                  "autodetect" both unset (OpenBLAS picks the kernel for this CPU)
#   PyTorch:       "as installed"  python3 + torch.set_num_threads(2), default allocator and BLAS
#                  "best"          + OpenMP OpenBLAS (LD_LIBRARY_PATH), tcmalloc (LD_PRELOAD),
#                                    OMP_WAIT_POLICY=active
# Decoding: scripts/bench/decode.sh (KV cache vs a PyTorch KV-cache loop, ABAB).
# Every line printed is JSON; the summary at the end gives the ratios.  Figures
# depend on the machine's load: compare ratios from one run.
#
# The cost table: every variant (baseline, ResFormer, SATFormer, TSA, DenseFormer,
# Hyper-Connections, MUDDFormer) at scales s and m, one process per variant (so
# peak RSS is the variant's own), recorded in the registry as experiment
# cost-<stamp> and printed with `gatelab tables cost-<stamp>`.
#
# usage: scripts/bench/run.sh [--steps N] [--quick] [--no-torch] [--no-cost] [--variants LIST]
set -u
cd "$(dirname "$0")/../.."
BUILD="${BUILD:-build}"
STEPS=10; TORCH=1; COST=1; VARIANTS="base,resformer,satformer,tsa,sparse"
COST_VARIANTS="base resformer satformer tsa denseformer hyper mudd"
while [ $# -gt 0 ]; do
    case "$1" in
        --steps) STEPS=$2; shift 2;;
        --quick) STEPS=3; shift;;
        --no-torch) TORCH=0; shift;;
        --no-cost) COST=0; shift;;
        --variants) VARIANTS=$2; shift 2;;
        *) echo "usage: $0 [--steps N] [--quick] [--no-torch] [--no-cost] [--variants LIST]" >&2; exit 2;;
    esac
done
OUT="${BENCH_OUT:-results/bench}"; mkdir -p "$OUT"
log="$OUT/bench-$(date -u +%Y%m%d-%H%M%S).jsonl"
PY=/usr/bin/python3
TORCH_OK=0
[ $TORCH = 1 ] && $PY -c 'import torch' 2>/dev/null && TORCH_OK=1
[ $TORCH = 1 ] && [ $TORCH_OK = 0 ] && echo "bench: python3-torch not installed (apt-get install python3-torch): PyTorch skipped" >&2
BLAS_OMP=/usr/lib/x86_64-linux-gnu/openblas-openmp
TCMALLOC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4

run() { # label, command...
    local label=$1; shift
    echo "# $label" >&2
    "$@" 2>&1 | while IFS= read -r line; do
        case "$line" in
            \{*) echo "{\"env\":\"$label\",${line#\{}" | tee -a "$log";;
            *) echo "$line" >&2;;
        esac
    done
}

for envname in "as set" "autodetect"; do
    if [ "$envname" = autodetect ]; then envcmd=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE); else envcmd=(env); fi
    run "$envname/gatelab" "${envcmd[@]}" OMP_NUM_THREADS=2 "$BUILD/bench_gatelab" --steps "$STEPS" --variants "$VARIANTS"
    if [ $TORCH_OK = 1 ]; then
        run "$envname/pytorch-installed" "${envcmd[@]}" $PY scripts/bench/torch_bench.py --threads 2 --steps "$STEPS"
        pre=""; [ -e "$TCMALLOC" ] && pre=$TCMALLOC
        run "$envname/pytorch-best" "${envcmd[@]}" LD_LIBRARY_PATH="$BLAS_OMP" LD_PRELOAD="$pre" OMP_WAIT_POLICY=active \
            $PY scripts/bench/torch_bench.py --threads 2 --steps "$STEPS"
    fi
done

# Data parallel over MPI: 2 ranks x 1 thread vs 1 process x 2 threads (scripts/bench/mpi.sh;
# skipped with a message when OpenMPI or build/gatelab-mpi is missing).
run "mpi" env BUILD="$BUILD" scripts/bench/mpi.sh --steps "$STEPS"

# Decoding with the KV cache against the PyTorch anchor, interleaved ABAB, median and spread
# (scripts/bench/decode.sh: dense and TSA, batch 1 and 16, prompt 64, 256 new tokens).
run "decode" env BUILD="$BUILD" scripts/bench/decode.sh --rounds 5 --threads 2

if [ $COST = 1 ]; then
    stamp=$(date -u +%Y%m%d-%H%M%S)
    db="${GATELAB_RESULTS:-results}/gatelab.db"
    for scale in s m; do
        for v in $COST_VARIANTS; do
            run "cost/$scale" env OMP_NUM_THREADS=2 "$BUILD/bench_gatelab" --scale $scale --steps "$STEPS" --no-sgemm \
                --variants "$v" --db "$db" --tag "$stamp"
        done
    done
    "$BUILD/gatelab" tables "cost-$stamp" --db "$db" --out "$OUT/cost-$stamp" >&2 && cat "$OUT/cost-$stamp/cost.md"
fi

echo
echo "summary ($log):"
$PY - "$log" <<'PYEOF' 2>/dev/null || awk 1 "$log"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for env in ("as set", "autodetect"):
    g = {r.get("variant"): r for r in rows if r["env"] == env + "/gatelab" and "variant" in r}
    info = next((r for r in rows if r["env"] == env + "/gatelab" and "openblas_core" in r), {})
    tb = [r for r in rows if r["env"].startswith(env + "/pytorch") and "train_tokens_per_s" in r]
    best = max(tb, key=lambda r: r["train_tokens_per_s"]) if tb else None
    base = g.get("base")
    if not base: continue
    print(f"[{env}] OpenBLAS core {info.get('openblas_core')}, sgemm {info.get('sgemm_gflops')} GFLOP/s")
    print(f"  gatelab train {base['train_tokens_per_s']:.0f} tok/s, forward {base['fwd_tokens_per_s']:.0f} tok/s, "
          f"{base['model_gflops']:.1f} GFLOP/s = {100*base['ratio_to_sgemm']:.0f}% of sgemm, peak RSS {base['peak_rss_mib']:.0f} MiB")
    for r in tb:
        print(f"  {r['env'].split('/')[1]:<18} train {r['train_tokens_per_s']:.0f} tok/s, forward {r['fwd_tokens_per_s']:.0f} tok/s")
    if best:
        print(f"  gatelab / PyTorch at its best (train): {base['train_tokens_per_s']/best['train_tokens_per_s']:.2f}x")
    for v in ("resformer", "satformer", "tsa", "early_exit", "denseformer", "hyper", "mudd"):
        if v in g: print(f"  {v:<12} step time {g[v]['step_ratio']:.3f}x baseline")
    for r in rows:
        if r["env"] == env + "/gatelab" and r.get("variant") == "tsa_sparse_inference":
            print(f"  TSA sparse inference α {r['alpha']:.2f}: {r['speedup']:.2f}x dense (ideal {r['ideal_speedup']:.2f}x, {100*r['share_of_ideal']:.0f}% of ideal)")
for r in rows:
    if r["env"] == "mpi" and "config" in r:
        print(f"[mpi] {r['config']:<16} {r['tokens_per_s']:.0f} tok/s, step {r['step_s']:.3f} s = compute {r['compute_s_per_step']:.3f} s"
              f" + communication {r['comm_s_per_step']:.3f} s, gradient {r['grad_mib']:.1f} MiB per step")
    if r["env"] == "mpi" and "efficiency_2ranks_vs_2threads" in r:
        print(f"[mpi] 2-rank efficiency (2 ranks x 1 thread / 1 process x 2 threads): {r['efficiency_2ranks_vs_2threads']:.3f}")
    if r["env"] == "decode" and r.get("summary") == "decode":
        t = f", PyTorch {r['pytorch_tokens_per_s'][0]:.0f} tok/s, ratio {r['ratio'][0]:.2f}x ({r['ratio'][1]:.2f}-{r['ratio'][2]:.2f})" if "ratio" in r else ""
        print(f"[decode] {r['variant']:<5} batch {r['batch']:>2}: gatelab {r['gatelab_tokens_per_s'][0]:.0f} tok/s{t}")
PYEOF
