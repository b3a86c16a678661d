#!/usr/bin/env bash
# decode.sh — decoding throughput with the KV cache (build/bench_decode,
# scripts/bench/decode.c) against the PyTorch anchor (scripts/bench/torch_decode.py:
# the same weights and tokens, a KV cache, a plain eager loop), interleaved
# A B A B: each round runs bench_decode then torch_decode.py, each in its own
# process with one untimed warm-up generation, so both see the same machine
# state over the run.  Cases: dense and TSA (sparse inference, α ≈ 0.73:
# halted tokens skip their block), batch 1 and 16, prompt 64, 256 new tokens.
#
# Every line printed on stdout is JSON (one per process and round, then one
# summary per case); a readable summary goes to stderr: per case the median
# tokens/s of each side with its spread (min–max over the rounds), the median
# of the per-round ratios gatelab / PyTorch with its spread, the same ratio in
# process CPU time (steadier on a loaded machine), α, the arg-max agreement of
# the two sides, and the TSA / dense speed-up beside its FLOP ideal.  Target
# (issue 14): ≥ 3x PyTorch at batch 1.  The figures depend on the machine's
# load; a loaded machine gives indicative numbers only.
#
# Threads: OMP_NUM_THREADS for gatelab and torch.set_num_threads for PyTorch,
# both --threads (default 2).  PyTorch runs with the OpenMP OpenBLAS and
# tcmalloc where the machine has them (run.sh's "best" PyTorch).
#
# usage: scripts/bench/decode.sh [--rounds R] [--threads N] [--prompt P] [--new N] [--batches "1 16"] [--variants "dense tsa"]
set -u
cd "$(dirname "$0")/../.."
BUILD="${BUILD:-build}"
ROUNDS=5; THREADS=2; PROMPT=64; NEW=256; BATCHES="1 16"; VARIANTS="dense tsa"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2;;
        --threads) THREADS=$2; shift 2;;
        --prompt) PROMPT=$2; shift 2;;
        --new) NEW=$2; shift 2;;
        --batches) BATCHES=$2; shift 2;;
        --variants) VARIANTS=$2; shift 2;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        *) echo "usage: $0 [--rounds R] [--threads N] [--prompt P] [--new N] [--batches \"1 16\"] [--variants \"dense tsa\"]" >&2; exit 2;;
    esac
done
BIN="$BUILD/bench_decode"
[ -x "$BIN" ] || { echo "decode.sh: $BIN is missing: run make $BIN" >&2; exit 1; }
PY=/usr/bin/python3
TORCH=1
$PY -c 'import torch' 2>/dev/null || { TORCH=0; echo "decode.sh: python3-torch not installed (apt-get install python3-torch): PyTorch anchor skipped" >&2; }
BLAS_OMP=/usr/lib/x86_64-linux-gnu/openblas-openmp
TCMALLOC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
tenv=(env); [ -d "$BLAS_OMP" ] && tenv+=(LD_LIBRARY_PATH="$BLAS_OMP"); [ -e "$TCMALLOC" ] && tenv+=(LD_PRELOAD="$TCMALLOC")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
log="$W/rows.jsonl"

for v in $VARIANTS; do
    for b in $BATCHES; do
        dir="$W/$v-$b"; mkdir -p "$dir"
        args=(--variant "$v" --batch "$b" --prompt "$PROMPT" --new "$NEW")
        # the weights, tokens and arg maxes the anchor reads (this run's figures are not kept)
        OMP_NUM_THREADS=$THREADS "$BIN" "${args[@]}" --warmup 0 --dump "$dir" > /dev/null || exit 1
        for r in $(seq 1 "$ROUNDS"); do
            OMP_NUM_THREADS=$THREADS "$BIN" "${args[@]}" --warmup 1 --reps 1 | sed "s/^{/{\"round\":$r,/" | tee -a "$log"
            if [ $TORCH = 1 ]; then
                "${tenv[@]}" $PY scripts/bench/torch_decode.py "$dir" --threads "$THREADS" --warmup 1 --reps 1 |
                    sed "s/^{/{\"round\": $r, /" | tee -a "$log"
            fi
        done
    done
done

$PY - "$log" "$THREADS" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
threads = int(sys.argv[2])
D, L, F = 256, 6, 1024  # the bench config (scripts/bench/decode.c)

def med_spread(xs):
    return statistics.median(xs), min(xs), max(xs)

def fmt(xs):
    m, lo, hi = med_spread(xs)
    return f"{m:8.1f} ({lo:.1f}–{hi:.1f})"

cases = sorted({(r["variant"], r["batch"]) for r in rows}, key=lambda c: (c[0] != "dense", c[1]))
med = {}
for v, b in cases:
    g = {i: sorted((r for r in rows if r["variant"] == v and r["batch"] == b and r["impl"] == i), key=lambda r: r["round"])
         for i in ("gatelab", "pytorch")}
    c, t = g["gatelab"], g["pytorch"]
    out = {"summary": "decode", "variant": v, "batch": b, "rounds": len(c), "threads": threads,
           "gatelab_tokens_per_s": med_spread([r["decode_tokens_per_s"] for r in c]),
           "alpha": c[0]["alpha"] if c else None}
    line = f"decode {v:<5} batch {b:>2}: gatelab {fmt([r['decode_tokens_per_s'] for r in c])} tok/s"
    med[(v, b)] = out["gatelab_tokens_per_s"][0]
    if t:
        pairs = [(x["decode_tokens_per_s"] / y["decode_tokens_per_s"], x["decode_cpu_tokens_per_s"] / y["decode_cpu_tokens_per_s"])
                 for x, y in zip(c, t)]
        out.update(pytorch_tokens_per_s=med_spread([r["decode_tokens_per_s"] for r in t]),
                   ratio=med_spread([p[0] for p in pairs]), ratio_cpu=med_spread([p[1] for p in pairs]),
                   pytorch_alpha=t[0]["alpha"], argmax_agree=min(r["argmax_agree"] for r in t))
        rm, rlo, rhi = out["ratio"]
        line += (f", PyTorch {fmt([r['decode_tokens_per_s'] for r in t])} tok/s; gatelab/PyTorch {rm:.2f}x "
                 f"({rlo:.2f}–{rhi:.2f}), in CPU time {out['ratio_cpu'][0]:.2f}x; arg max agree {out['argmax_agree']:.3f}")
        if b == 1 and v == "dense":
            line += f"  [target >= 3x: {'met' if rm >= 3 else 'NOT met'}]"
    if v == "tsa":
        line += f"; α {out['alpha']:.3f}"
    print(json.dumps(out))
    print(line, file=sys.stderr)
for b in sorted({c[1] for c in cases}):
    if ("dense", b) in med and ("tsa", b) in med:
        a = next(r["alpha"] for r in rows if r["variant"] == "tsa" and r["batch"] == b)
        # per token and block: attention projections 4d², FFN 3·d·F; a halted (token, block >= 1) pair makes only K and V (2d²)
        full = L * (4 * D * D + 3 * D * F)
        tsa = full - (L - 1) * (1 - a) * (2 * D * D + 3 * D * F)
        s = med[("tsa", b)] / med[("dense", b)]
        print(json.dumps({"summary": "decode_tsa_speedup", "batch": b, "alpha": a, "speedup": s, "ideal": full / tsa}))
        print(f"decode TSA/dense batch {b:>2}: {s:.2f}x at α {a:.3f} (FLOP ideal {full / tsa:.2f}x: halted pairs make only K, V)",
              file=sys.stderr)
PYEOF
