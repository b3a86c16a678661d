#!/usr/bin/env bash
# run.sh — `make bench`: the C core and PyTorch on the reference config, back to
# back in one run, under the machine's OpenBLAS settings and with them unset.
#
#   environments:  "as set"   OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE as the machine sets them
#                  "autodetect" both unset (OpenBLAS picks the kernel for this CPU)
#   PyTorch:       "as installed"  python3 + torch.set_num_threads(2), default allocator and BLAS
#                                  (only with --torch-installed)
#                  "best"          + OpenMP OpenBLAS (LD_LIBRARY_PATH), tcmalloc (LD_PRELOAD),
#                                    OMP_WAIT_POLICY=active
# Method (scripts/bench/bench.c): every variant gets the same warm-up, then timed
# rounds of one step per variant in a shuffled order; medians, spreads and paired
# ratios to the baseline; a variant faster than the baseline beyond the spread is
# printed as "measurement problem".  TSA sparse and early-exit inference (batch 64,
# α 0.73 and 0.50, against their FLOP ideal, and the break-even batch) and the
# memory check (peak RSS of a training step vs the analytic size, one process per
# model) run in the "as set" environment only.
# The TSA paper's GPT-2 backbone (issue 40): its own process per environment, its own same-run
# sgemm: gpt2 (dropout 0.1, the paper's training) as its family's baseline and "% of sgemm", with
# gpt2_nodrop, gpt2+tsa_paper (the paper's router and gates) and gpt2+tsa paired to it per round.
# Trained checkpoints (--checkpoint RUN, repeatable; make bench CHECKPOINTS="RUN ..."), "as set"
# only: each form's loss (gatelab eval's numbers), then the dense pass and both sparse forms
# (gatelab's full skip; the paper's p >= 0.5 halting with dense attention and the FFN gathered) in
# the same shuffled rounds at batch 1, 2, 4 ... 64, each row with its form, batch and α.
# Decoding: scripts/bench/decode.sh (KV cache vs a PyTorch KV-cache loop, ABAB).
# Every line printed is JSON; the summary at the end gives the ratios.
#
# The cost table: every variant (baseline, ResFormer, SATFormer — also with the softmax gate,
# the gate bias and the all-parameter weight decay —, TSA, Mixture-of-Depths, random routing, DenseFormer,
# Hyper-Connections, MUDDFormer) at scales s and m, one process per variant in a
# random order (so peak RSS is the variant's own), recorded in the registry as
# experiment cost-<stamp> and printed with `gatelab tables cost-<stamp>`.
#
# usage: scripts/bench/run.sh [--steps N] [--quick] [--no-torch] [--torch-installed] [--no-cost] [--variants LIST]
#                             [--gpt2-variants LIST] [--checkpoint RUN]... [--only-checkpoints] [--summary LOG]
#   --summary LOG: print the summary of an earlier bench log (results/bench/bench-*.jsonl) and nothing else
#   --gpt2-variants "": leave the gpt2 backbone out; --only-checkpoints: the trained checkpoints alone
#   --quick: 3 rounds, 1 warm-up, no break-even sweep, no cost table, no MPI (a few minutes)
#   --torch-installed: also PyTorch as Debian installs it (slow: about 4 more minutes); the
#   comparison the figures quote is against PyTorch at its best
set -u
cd "$(dirname "$0")/../.."
BUILD="${BUILD:-build}"
STEPS=10; QUICK=""; MPI=1; TORCH=1; TORCH_INSTALLED=0; COST=1; VARIANTS="base,resformer,satformer,tsa,tsa_paper"
GPT2_VARIANTS="gpt2,gpt2_nodrop,gpt2+tsa_paper,gpt2+tsa"; CHECKPOINTS=(); ONLY_CKPT=0; SUMMARY=""
COST_VARIANTS="base resformer satformer satformer_softmax satformer_bias satformer_decay_all tsa mod random denseformer hyper mudd"
MEMORY_VARIANTS="base satformer tsa"
while [ $# -gt 0 ]; do
    case "$1" in
        --steps) STEPS=$2; shift 2;;
        --quick) STEPS=3; QUICK=--quick; COST=0; MPI=0; shift;;
        --no-torch) TORCH=0; shift;;
        --torch-installed) TORCH_INSTALLED=1; shift;;
        --no-cost) COST=0; shift;;
        --variants) VARIANTS=$2; shift 2;;
        --gpt2-variants) GPT2_VARIANTS=$2; shift 2;;
        --checkpoint) CHECKPOINTS+=("$2"); shift 2;;
        --only-checkpoints) ONLY_CKPT=1; shift;;
        --summary) SUMMARY=$2; shift 2;;
        *) echo "usage: $0 [--steps N] [--quick] [--no-torch] [--torch-installed] [--no-cost] [--variants LIST]" \
                "[--gpt2-variants LIST] [--checkpoint RUN]... [--only-checkpoints] [--summary LOG]" >&2; exit 2;;
    esac
done
# The summary of a bench log (JSON lines): the ratios, each form's quality, the speed rows beside their ideals.
summary() {
/usr/bin/python3 - "$1" <<'PYEOF' 2>/dev/null || awk 1 "$1"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def sp(d, f="{:.3f}"):
    return f"{f.format(d['median'])} [IQR {f.format(d['q1'])}–{f.format(d['q3'])}]"
for env in ("as set", "autodetect"):
    g = {r.get("variant"): r for r in rows if r["env"] == env + "/gatelab" and "variant" in r}
    info = next((r for r in rows if r["env"] == env + "/gatelab" and "openblas_core" in r), {})
    tb = [r for r in rows if r["env"].startswith(env + "/pytorch") and "train_tokens_per_s" in r]
    best = max(tb, key=lambda r: r["train_tokens_per_s"]) if tb else None
    base = g.get("base")
    if not base: continue
    print(f"[{env}] OpenBLAS core {info.get('openblas_core')}, sgemm {info.get('sgemm_gflops')} GFLOP/s "
          f"(min {info.get('sgemm_gflops_min')}, max {info.get('sgemm_gflops_max')}); {info.get('rounds')} rounds after "
          f"{info.get('warmup')} warm-up steps per variant")
    st = base["step_ms"]
    print(f"  gatelab train {base['train_tokens_per_s']:.0f} tok/s (step {st['median']:.0f} ms, min {st['min']:.0f}, "
          f"max {st['max']:.0f}), forward {base['fwd_tokens_per_s']:.0f} tok/s, {base['model_gflops']:.1f} GFLOP/s = "
          f"{100*base['ratio_to_sgemm']:.0f}% of sgemm")
    for r in tb:
        print(f"  {r['env'].split('/')[1]:<18} train {r['train_tokens_per_s']:.0f} tok/s, forward {r['fwd_tokens_per_s']:.0f} tok/s")
    if best:
        print(f"  gatelab / PyTorch at its best (train): {base['train_tokens_per_s']/best['train_tokens_per_s']:.2f}x")
    for v in ("resformer", "satformer", "tsa", "tsa_paper", "early_exit", "denseformer", "hyper", "mudd"):
        if v in g:
            print(f"  {v:<12} step time {sp(g[v]['step_ratio'])}x baseline (paired per round): {g[v]['verdict']}")
    # the gpt2 backbone: its own process, its own same-run sgemm, ratios to gpt2 (dropout 0.1)
    g2 = {r.get("variant"): r for r in rows if r["env"] == env + "/gpt2" and "variant" in r}
    info2 = next((r for r in rows if r["env"] == env + "/gpt2" and "openblas_core" in r), {})
    b2 = g2.get("gpt2")
    if b2:
        st = b2["step_ms"]
        print(f"  gpt2 backbone (dropout {b2['dropout']:g}) train {b2['train_tokens_per_s']:.0f} tok/s (step {st['median']:.0f} ms, "
              f"min {st['min']:.0f}, max {st['max']:.0f}), {b2['model_gflops']:.1f} GFLOP/s = {100*b2['ratio_to_sgemm']:.0f}% of "
              f"same-run sgemm ({info2.get('sgemm_gflops')} GFLOP/s)")
        for v, r in g2.items():
            if v != "gpt2":
                # gpt2_nodrop does less work than gpt2: its ratio's inverse is what dropout costs
                cost = f" (dropout's cost {1/r['step_ratio']['median']:.3f}x)" if v == "gpt2_nodrop" else ""
                print(f"  {v:<16} step time {sp(r['step_ratio'])}x gpt2 (paired per round){cost}: {r['verdict']}")
    for r in rows:
        if r["env"] != env + "/gatelab": continue
        if r.get("variant") in ("tsa_sparse_inference", "early_exit_inference"):
            name = "TSA sparse" if r["variant"].startswith("tsa") else "early exit"
            print(f"  {name:<10} inference α {r['alpha']:.2f}, batch {r['batch']}: {sp(r['speedup'])}x "
                  f"(ideal {r['ideal_speedup']:.3f}x, {100*r['share_of_ideal']:.0f}% of it; FFN-only ideal {r['ideal_ffn_only']:.3f}x)")
        if r.get("variant") == "tsa_sparse_break_even":
            print(f"  TSA sparse break-even batch at α {r['alpha']:.2f}: {r['break_even_batch']}")
    for r in rows:
        if r["env"] == env + "/memory" and r.get("variant") == "memory":
            print(f"  memory {r['model']:<10} peak RSS {r['peak_rss_mib']:.0f} MiB vs analytic {r['analytic_mib']:.0f} MiB "
                  f"(params+grads+AdamW {r['params_grads_adamw_mib']:.0f}, activations {r['saved_activations_mib']:.0f}, "
                  f"workspace {r['workspace_mib']:.0f}): {r['ratio']:.3f}x")
ck = None
for r in rows:  # trained checkpoints: each form's loss, then the forms side by side per batch
    if r["env"] != "as set/checkpoint": continue
    v = r.get("variant")
    if v == "trained_checkpoint":
        ck = r
        print(f"[checkpoint] {r['run']} (step {r['step']}, backbone {r['backbone']}, tsa_form {r['tsa_form']}, "
              f"{r['depth_routing']}; {r['rounds']} shuffled rounds of {r['forms']})")
    elif v == "trained_sparse_quality":
        q = f", bpc {r['bpc']:.4f}" if "bpc" in r else f", token acc {r['token_acc']:.4f}"
        print(f"  {r['form']:<8} loss {r['loss']:.5f}{q}, α {r['active_frac']:.4f} on {r['windows']} val windows")
    elif v == "trained_sparse_inference":
        med, ideal = r["speedup"]["median"], r["ideal_speedup"]
        line = (f"  batch {r['batch']:>2} {r['form']:<8} α {r['alpha']:.3f}: dense {r['dense_tokens_per_s']:.0f} tok/s, "
                f"sparse {r['sparse_tokens_per_s']:.0f} tok/s, {sp(r['speedup'])}x (FLOP ideal {ideal:.3f}x"
                + (f", {100*r['share_of_ideal']:.0f}% of it" if r['share_of_ideal'] is not None else ""))
        timed = r.get("ideal_timed")
        if timed is not None:
            line += (f"; timed ideal {timed:.3f}x" + (f", {100*r['share_of_timed_ideal']:.0f}% of it"
                                                       if r.get('share_of_timed_ideal') is not None else ""))
        line += ")"
        if med > ideal:  # never a saving: skipping cannot save more than the work it removes
            line += "\n      above the FLOP ideal: "
            if "ffn_time_share" not in r:
                line += ("its cause is not measured in this log (an older bench: no ffn_time_share); "
                         "do not read it as a saving")
            elif r["ffn_time_share"] > r["ffn_flop_share"]:
                line += (f"the baseline does work the model of FLOPs does not count: the FFN is "
                         f"{100*r['ffn_time_share']:.0f}% of the dense pass's time against {100*r['ffn_flop_share']:.0f}% "
                         "of its FLOPs (its elementwise GELU and bias work; docs/benchmarks.md), so skipping it saves "
                         "more time than FLOPs; read the timed ideal")
            else:
                line += (f"not the FFN's doing (it is {100*r['ffn_time_share']:.0f}% of the dense pass's time, "
                         f"{100*r['ffn_flop_share']:.0f}% of its FLOPs): timing noise or a cache effect, not a saving")
            if timed is not None and med > timed:
                line += f"; above the timed ideal {timed:.3f}x too: timing noise or a cache effect, not a saving"
        elif timed is not None and med > timed:
            line += f"\n      above the timed ideal {timed:.3f}x: timing noise or a cache effect, not a saving"
        print(line)
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
}
if [ -n "$SUMMARY" ]; then summary "$SUMMARY"; exit; fi
TSTEPS=$(( STEPS < 10 ? 10 : STEPS ))  # torch_bench.py wants at least 10
if [ $ONLY_CKPT = 1 ]; then
    [ ${#CHECKPOINTS[@]} -gt 0 ] || { echo "$0: --only-checkpoints needs --checkpoint RUN" >&2; exit 2; }
    TORCH=0; COST=0; MPI=0; DECODE=0
else
    DECODE=1
fi
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

# trained checkpoints first (a RUN that cannot be read says why at once, not after the long part)
for ck in "${CHECKPOINTS[@]}"; do
    run "as set/checkpoint" env OMP_NUM_THREADS=2 "$BUILD/bench_gatelab" --steps "$STEPS" $QUICK --no-sgemm \
        --variants '' --infer-batch 64 --checkpoint "$ck"
done
[ ${#CHECKPOINTS[@]} -eq 0 ] &&
    echo "bench: no trained checkpoint given: sparse forms on trained runs not measured (--checkpoint RUN, make bench CHECKPOINTS=\"RUN ...\"; docs/benchmarks.md)" >&2

for envname in "as set" "autodetect"; do
    [ $ONLY_CKPT = 1 ] && break
    if [ "$envname" = autodetect ]; then envcmd=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE); else envcmd=(env); fi
    list=$VARIANTS; [ "$envname" = "as set" ] && list="$VARIANTS,sparse,exit"
    run "$envname/gatelab" "${envcmd[@]}" OMP_NUM_THREADS=2 "$BUILD/bench_gatelab" --steps "$STEPS" $QUICK --variants "$list"
    [ -n "$GPT2_VARIANTS" ] &&
        run "$envname/gpt2" "${envcmd[@]}" OMP_NUM_THREADS=2 "$BUILD/bench_gatelab" --steps "$STEPS" $QUICK --variants "$GPT2_VARIANTS"
    if [ "$envname" = "as set" ]; then
        for v in $MEMORY_VARIANTS; do
            run "$envname/memory" "${envcmd[@]}" OMP_NUM_THREADS=2 "$BUILD/bench_gatelab" --memory --variants "$v" --warmup 1
        done
    fi
    if [ $TORCH_OK = 1 ]; then
        [ $TORCH_INSTALLED = 1 ] &&
            run "$envname/pytorch-installed" "${envcmd[@]}" $PY scripts/bench/torch_bench.py --threads 2 --steps "$TSTEPS"
        pre=""; [ -e "$TCMALLOC" ] && pre=$TCMALLOC
        run "$envname/pytorch-best" "${envcmd[@]}" LD_LIBRARY_PATH="$BLAS_OMP" LD_PRELOAD="$pre" OMP_WAIT_POLICY=active \
            $PY scripts/bench/torch_bench.py --threads 2 --steps "$TSTEPS"
    fi
done

# Data parallel over MPI: 2 ranks x 1 thread vs 1 process x 2 threads (scripts/bench/mpi.sh;
# skipped with a message when OpenMPI or build/gatelab-mpi is missing).
[ $MPI = 1 ] && run "mpi" env BUILD="$BUILD" scripts/bench/mpi.sh --steps "$STEPS"

# Decoding with the KV cache against the PyTorch anchor, interleaved ABAB, median and spread
# (scripts/bench/decode.sh: dense and TSA, batch 1 and 16, prompt 64, 256 new tokens).
[ $DECODE = 1 ] && run "decode" env BUILD="$BUILD" scripts/bench/decode.sh --rounds 5 --threads 2

if [ $COST = 1 ]; then
    stamp=$(date -u +%Y%m%d-%H%M%S)
    db="${GATELAB_RESULTS:-results}/gatelab.db"
    # one process per (scale, variant), in a random order; 3 rounds after 1 warm-up step each (the
    # cost table's ratios are between processes: see the in-process ratios above for small differences)
    for job in $(for sc in s m; do for v in $COST_VARIANTS; do echo "$sc:$v"; done; done | shuf); do
        run "cost/${job%%:*}" env OMP_NUM_THREADS=2 "$BUILD/bench_gatelab" --scale "${job%%:*}" --steps 3 --warmup 1 \
            --no-sgemm --variants "${job#*:}" --db "$db" --tag "$stamp"
    done
    "$BUILD/gatelab" tables "cost-$stamp" --db "$db" --out "$OUT/cost-$stamp" >&2 && cat "$OUT/cost-$stamp/cost.md"
fi

echo
echo "summary ($log):"
summary "$log"
