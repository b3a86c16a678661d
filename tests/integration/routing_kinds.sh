#!/usr/bin/env bash
# routing_kinds.sh — the real `gatelab` with model.depth_routing = mod
# (Mixture-of-Depths) and random (docs/model.md) on the test's own corpus:
# tiny runs train, evaluate, trace, analyze, report and ablate; the numbers
# that can fail are checked: MoD's measured α is its capacity's k/T (every
# block routed: within 1/T of mod_capacity; every other block: the mixed
# count), real skipping gives the masked model's loss, random's α is within a
# binomial bound of random_alpha, its evaluation draw repeats, its training
# draw changes per step, a kill -9 + --resume ends bit for bit like never
# stopping, `sample` refuses MoD, and bad values are refused naming the key.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"
T=32 # tiny.ini's seq_len
TR=(model.n_layer=3)
MOD=(model.depth_routing=mod model.mod_capacity=0.25 model.mod_every=1)
RND=(model.depth_routing=random model.random_alpha=0.3)
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(eval(sys.argv[1]))" "$1"; }

"$BIN" train "$TINY" "${TR[@]}" "${MOD[@]}" --run-id mod --results "$R" --quiet > "$W/mod.out" 2>&1
check "mod: a tiny run finishes (exit 0)" test $? -eq 0
check "mod: config.ini records depth_routing = mod, mod_capacity, mod_every" bash -c \
    "grep -q '^depth_routing = mod\$' '$R/runs/mod/config.ini' && grep -q '^mod_capacity = 0.25\$' '$R/runs/mod/config.ini' &&
     grep -q '^mod_every = 1\$' '$R/runs/mod/config.ini'"
"$BIN" eval mod --sparse --results "$R" > "$W/mod.json" 2> "$W/mod.err"
check "mod: eval --sparse exits 0" test $? -eq 0
a=$(json 'd["soft"]["active_frac"]' < "$W/mod.json")
check "mod: measured α $a is within 1/T of mod_capacity 0.25 (k = 8 of 32: exactly 0.25)" \
    awk -v a="$a" -v T=$T 'BEGIN{exit !(a - 0.25 <= 1/T && 0.25 - a <= 1/T && a == 0.25)}'
ls=$(json 'd["soft"]["loss"]' < "$W/mod.json"); lh=$(json 'd["sparse"]["loss"]' < "$W/mod.json")
ah=$(json 'd["sparse"]["active_frac"]' < "$W/mod.json")
check "mod: real skipping (only the selected tokens enter the block) gives the masked loss ($lh vs $ls, 1e-5) at α $ah" \
    awk -v a="$ls" -v b="$lh" -v x="$a" -v y="$ah" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-5*a && x == y)}'
check "mod: eval names the equal-TLOps dense model (1 + 2·0.25 = 1.5 → n_layer = 2)" bash -c \
    "grep -q 'equal-TLOps dense: n_layer = 2' '$W/mod.err' && grep -q '\"equal_tlops_n_layer\":2' '$W/mod.json'"
check "mod: the headline α is recorded (final.active_frac 0.25)" bash -c \
    "'$BIN' metrics --run mod --split val --name final.active_frac --results '$R' | grep -q ',0.25,'"
check "mod: the trace holds /mod/weight and /route/selected (step, layer, token)" bash -c \
    "h5dump -H '$R/runs/mod/trace.h5' | grep -q 'DATASET \"weight\"' && h5dump -H '$R/runs/mod/trace.h5' | grep -q 'DATASET \"selected\"'"
"$BIN" analyze mod --results "$R" > "$W/an.out" 2>&1
check "mod: analyze exits 0 and writes mod_w.tsv and selected.tsv" bash -c \
    "test -s '$R/runs/mod/analysis/mod_w.tsv' && test -s '$R/runs/mod/analysis/selected.tsv'"
check "mod: analyze shows every routed block running exactly 0.25 of the probe tokens" bash -c \
    "awk '/ran the token/{on=1; next} on && \$1 ~ /^[12]\$/ {n++; if (\$2 != \"0.2500\") bad=1} END{exit !(n == 2 && !bad)}' '$W/an.out'"
"$BIN" report mod --html --results "$R" > "$W/rep.out" 2>&1
n=$(grep -o 'title="mean sel [0-9.]*' "$R/report/mod.html" | wc -l)
check "mod: the HTML report colours each probe character by its selection ($n = 64)" test "$n" -eq 64
"$BIN" ablate mod --mode full-depth --windows 8 --no-db --results "$R" > "$W/abl.out" 2>&1
check "mod: ablate full-depth runs every token (α 1)" bash -c "tail -1 '$W/abl.out' | grep -q '\"active_frac\":1'"
"$BIN" sample mod --tokens 5 --results "$R" > "$W/s.out" 2>&1
rc=$?
check "mod: sample refuses (exit $rc = 2) and says top-k looks at future tokens" \
    bash -c "test $rc -eq 2 && grep -q 'future tokens' '$W/s.out'"

# every other block (the paper's setting): block 1 routed at k = 4, block 2 full
"$BIN" train "$TINY" "${TR[@]}" model.depth_routing=mod model.mod_capacity=0.125 model.mod_every=2 train.steps=10 \
    --run-id mod2 --results "$R" --quiet > /dev/null 2>&1
"$BIN" eval mod2 --windows 16 --results "$R" > "$W/mod2.json" 2> /dev/null
a=$(json 'd["soft"]["active_frac"]' < "$W/mod2.json")
check "mod every 2: α $a = (4/32 + 1)/2 = 0.5625 (one routed block of two)" awk -v a="$a" 'BEGIN{exit !(a == 0.5625)}'

# kill -9 + resume, MoD and random
for v in mod rnd; do
    if [ $v = mod ]; then O=("${MOD[@]}"); else O=("${RND[@]}"); fi
    "$BIN" train "$TINY" "${TR[@]}" "${O[@]}" --run-id ${v}s --results "$R" --quiet > /dev/null 2>&1
    GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" "${TR[@]}" "${O[@]}" --run-id ${v}k --results "$R" --quiet > /dev/null 2>&1
    rc=$?
    check "$v: SIGKILL after the step-20 checkpoint (exit $rc = 137)" test $rc -eq 137
    "$BIN" train "$TINY" "${TR[@]}" "${O[@]}" --resume ${v}k --results "$R" --quiet > /dev/null 2>&1
    ha=$(last_hex ${v}s); hb=$(last_hex ${v}k)
    check "$v: kill -9 + resume ends bit for bit like never stopping ($ha = $hb)" test -n "$ha" -a "$ha" = "$hb"
done

# random: α within a binomial bound, the same draw at every evaluation, a new draw every training step
"$BIN" eval rnds --results "$R" > "$W/r1.json" 2> /dev/null
"$BIN" eval rnds --batch 5 --results "$R" > "$W/r2.json" 2> /dev/null
a=$(json 'd["soft"]["active_frac"]' < "$W/r1.json"); tok=$(json 'd["soft"]["tokens"]' < "$W/r1.json")
check "random: measured α $a within 5 sd of random_alpha 0.3 over 2 x $tok (token, block) pairs" \
    awk -v a="$a" -v n="$tok" 'BEGIN{sd=sqrt(0.3*0.7/(2*n)); d=a-0.3; if(d<0)d=-d; exit !(n > 1000 && d <= 5*sd)}'
"$BIN" eval rnds --results "$R" > "$W/r3.json" 2> /dev/null
check "random: the evaluation draw repeats (a second eval: the same JSON but for tokens/s)" bash -c \
    "test \"\$(sed 's/\"tokens_per_s\":[0-9.e+-]*//' '$W/r1.json')\" = \"\$(sed 's/\"tokens_per_s\":[0-9.e+-]*//' '$W/r3.json')\""
# another batch size puts the windows in other batch rows: the draw follows the window's tokens, so
# only the summation order of the loss and α changes (relative 1e-6)
check "random: ... whatever the batch (--batch 5: loss and α equal to 1e-6)" python3 -c "
import json, sys
a, b = (json.load(open(f))['soft'] for f in sys.argv[1:])
sys.exit(not (abs(a['loss'] - b['loss']) <= 1e-6 * a['loss'] and abs(a['active_frac'] - b['active_frac']) <= 1e-6))" \
    "$W/r1.json" "$W/r2.json"
n=$("$BIN" metrics --run rnds --split train --name active_frac --results "$R" | tail -n +2 | cut -d, -f8 | sort -u | wc -l)
check "random: the training draw changes per step ($n distinct train α among the logged steps)" test "$n" -ge 3
"$BIN" sample rnds --tokens 5 --results "$R" > /dev/null 2> "$W/rs.err"
check "random: sample generates on the uncached path (exit 0, says why)" bash -c \
    "test $? -eq 0 && grep -q 'does not support depth_routing = random' '$W/rs.err'"

# refused values name the key
for bad in "model.depth_routing=mod model.mod_capacity=0" "model.depth_routing=mod model.mod_capacity=1.5" \
           "model.depth_routing=mod model.mod_every=0" "model.depth_routing=random model.random_alpha=0" \
           "model.depth_routing=mod model.cross_layer=hyper"; do
    key=$(echo "$bad" | awk '{print $2}' | sed 's/=.*//; s/^model\.//')
    "$BIN" train "$TINY" $bad --run-id bad --results "$R" --quiet > "$W/bad.out" 2>&1
    rc=$?
    check "refused: $bad (exit $rc = 2, names $key)" bash -c "test $rc -ne 0 && grep -q '$key' '$W/bad.out'"
done

# data parallel: the training draw is keyed by the global row, so 2 ranks draw what 1 process draws
# (the loss to 1e-5, not bit for bit: the ranks sum their gradients in another order, as in mpi.sh)
MPIBIN="${GATELAB_MPI_BIN:-$BIN-mpi}"
if command -v mpirun > /dev/null 2>&1 && [ -x "$MPIBIN" ]; then
    O=("${TR[@]}" "${RND[@]}" train.steps=10 train.threads=1)
    "$BIN" train "$TINY" "${O[@]}" --run-id rnd1 --results "$R" --quiet > /dev/null 2>&1
    OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 2 "$MPIBIN" train "$TINY" "${O[@]}" --run-id rnd2 \
        --results "$R" --quiet > "$W/mpi.out" 2>&1
    h1=$(last_hex rnd1); h2=$(last_hex rnd2)
    check "random: 2 MPI ranks draw the routing 1 process draws (final loss $h2 vs $h1, relative 1e-5)" \
        awk -v a="$(printf '%.9g' "${h1:-nan}")" -v b="$(printf '%.9g' "${h2:-nan}")" \
        'BEGIN{d=a-b; if(d<0)d=-d; exit !(a > 0 && d <= 1e-5*a)}'
else
    skip "random routing over MPI ranks (no mpirun or $MPIBIN)"
fi
