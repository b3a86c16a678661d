#!/usr/bin/env bash
# trace_h5dump.sh — trace.h5 and exports from the real `gatelab` binary, read
# back with HDF5's own tools (h5dump, h5ls from hdf5-tools).
#
#   1. a tiny SATFormer + TSA run: h5dump -H shows the documented datasets and
#      shapes (and no /resformer, /exit); a ResFormer + early-exit run shows
#      /resformer/lambda and /exit/confidence;
#   2. `gatelab export` writes every tensor by name with the right shape;
#   3. while a run trains, plain h5dump opens its trace, and an h5py
#      swmr=True reader holding the file open (when a python3 with h5py is
#      installed) sees the evaluations arrive without disturbing the run;
#   4. kill -9 during training leaves a trace that plain h5dump opens (no
#      h5clear) with as many steps as completed evaluations, and `--resume`
#      continues it without duplicate or missing steps.
#
# Prints one PASS/FAIL line per check.  Uses $GATELAB_BIN; the text is the
# test's own corpus (tests/corpus.h).
set -u
. "$(dirname "$0")/lib.sh"   # BIN (absolute), make_corpus
cd "$(dirname "$0")/../.."
MF=experiments/shakespeare_baseline.ini
R=$(mktemp -d /tmp/gatelab_trace_h5dump.XXXXXX)
trap 'rm -rf "$R"' EXIT
export GATELAB_DATA="$R/data"   # the manifest's model and training, on the test's own corpus
make_corpus "$GATELAB_DATA/corpus.txt"
V=$(od -An -v -tu1 "$GATELAB_DATA/corpus.txt" | tr -s ' ' '\n' | grep . | sort -un | wc -l)  # distinct bytes

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

for tool in h5dump h5ls od; do
    if ! command -v "$tool" >/dev/null; then
        fail "$tool is installed (apt-get install hdf5-tools)"
        exit 1
    fi
done

# small and quick: d 32, 4 layers, 4 heads of 8 sharing 2 KV heads, 32-token
# windows, 2 probe windows, one thread (the suite runs on 2 busy cores)
TINY=(data.file=corpus.txt model.d_model=32 model.n_head=4 model.n_kv_head=2 model.d_ff=64 model.seq_len=32
      train.batch_size=4 train.warmup=2 train.eval_windows=2 train.threads=1 log.probe_windows=2 log.trace=1)

# dims "NAME" FILE -> "( a, b ) / ( H5S_UNLIMITED, b )" of dataset NAME in h5dump -H output
dims() { awk -v n="DATASET \"$1\"" 'index($0, n) { f = 1 } f && /DATASPACE/ { sub(/.*SIMPLE \{ /, ""); sub(/ \}$/, ""); print; exit }' "$2"; }
# values of a 1-D dataset, comma separated
values() { h5dump -y -w 0 -d "$1" "$2" | awk '/DATA \{/ { f = 1; next } f && /\}/ { exit } f' | tr -d ' \n'; }

# ---------------------------------------------------------------- 1. layout
"$BIN" train "$MF" --results "$R" --run-id sat "${TINY[@]}" model.value_residual=satformer model.depth_routing=tsa \
    train.steps=10 train.eval_every=5 train.ckpt_every=10 > "$R/sat.out" 2>&1
check "train a SATFormer+TSA run with the trace on (exit 0)" '[ $? -eq 0 ] || { tail -5 "$R/sat.out"; false; }'
T="$R/runs/sat/trace.h5"
h5dump -H "$T" > "$R/sat.h" 2>&1
check "h5dump -H opens a finished run's trace" '[ $? -eq 0 ]'
P=64 # 2 windows x 32 tokens
check "/probe/tokens is ($P)"                  '[ "$(dims tokens "$R/sat.h")" = "( $P ) / ( $P )" ]'
check "/probe/category is ($P) uint8"          '[ "$(dims category "$R/sat.h")" = "( $P ) / ( $P )" ] && grep -q H5T_STD_U8LE "$R/sat.h"'
check "/step is (3) int64, unlimited"          '[ "$(dims step "$R/sat.h")" = "( 3 ) / ( H5S_UNLIMITED )" ] && grep -q H5T_STD_I64LE "$R/sat.h"'
check "/loss/train and /loss/val are (3)"      '[ "$(dims train "$R/sat.h")" = "( 3 ) / ( H5S_UNLIMITED )" ] && [ "$(dims val "$R/sat.h")" = "( 3 ) / ( H5S_UNLIMITED )" ]'
check "/sat/alpha is (3, 4, $P, 2) = (step, layer, token, kv_head)" '[ "$(dims alpha "$R/sat.h")" = "( 3, 4, $P, 2 ) / ( H5S_UNLIMITED, 4, $P, 2 )" ]'
check "/tsa/p is (3, 3, $P) = (step, router, token)" '[ "$(dims p "$R/sat.h")" = "( 3, 3, $P ) / ( H5S_UNLIMITED, 3, $P )" ]'
check "no /resformer or /exit in a SATFormer+TSA trace" '! grep -qE "GROUP \"(resformer|exit)\"" "$R/sat.h"'
check "root attributes schema_version, config, axes" 'grep -q "ATTRIBUTE \"schema_version\"" "$R/sat.h" && grep -q "ATTRIBUTE \"config\"" "$R/sat.h" && grep -q "ATTRIBUTE \"axes\"" "$R/sat.h"'
check "/step holds the evaluation steps 0,5,10" '[ "$(values /step "$T")" = "0,5,10" ]'
check "schema_version is 3" 'h5dump -a /schema_version "$T" | grep -q "(0): 3"'
check "/sat/alpha axes attribute names step,layer,token,kv_head" 'h5dump -a /sat/alpha/axes "$T" | grep -q "step,layer,token,kv_head"'
check "config attribute holds the resolved manifest" 'h5dump -a /config "$T" | grep -q "value_residual = satformer"'
"$BIN" train "$MF" --results "$R" --run-id rfx "${TINY[@]}" model.value_residual=resformer model.depth_routing=early_exit \
    train.steps=5 train.eval_every=5 train.ckpt_every=5 > "$R/rfx.out" 2>&1
check "train a ResFormer+early-exit run (exit 0)" '[ $? -eq 0 ] || { tail -5 "$R/rfx.out"; false; }'
h5dump -H "$R/runs/rfx/trace.h5" > "$R/rfx.h" 2>&1
check "/resformer/lambda is (2, 4, 2) = (step, layer, coef)" '[ "$(dims lambda "$R/rfx.h")" = "( 2, 4, 2 ) / ( H5S_UNLIMITED, 4, 2 )" ]'
check "/exit/confidence is (2, 4, $P) = (step, layer, token)" '[ "$(dims confidence "$R/rfx.h")" = "( 2, 4, $P ) / ( H5S_UNLIMITED, 4, $P )" ]'
check "no /sat or /tsa in a ResFormer+early-exit trace" '! grep -qE "GROUP \"(sat|tsa)\"" "$R/rfx.h"'

# ---------------------------------------------------------------- 2. export
"$BIN" export sat --results "$R" --out "$R/sat_export.h5" > "$R/export.out" 2>&1
check "gatelab export RUN --out FILE.h5 (exit 0)" '[ $? -eq 0 ] || { cat "$R/export.out"; false; }'
h5ls "$R/sat_export.h5" > "$R/export.ls" 2>&1
check "export: embed {$V, 32}"               'grep -qE "^embed +Dataset \{$V, 32\}" "$R/export.ls"'
check "export: layers.1.attn.alpha {2, 32}"  'grep -qE "^layers\.1\.attn\.alpha +Dataset \{2, 32\}" "$R/export.ls"'
check "export: layers.3.attn.wk {16, 32} (GQA, 2 KV heads of 8)" 'grep -qE "^layers\.3\.attn\.wk +Dataset \{16, 32\}" "$R/export.ls"'
check "export: routers.2.fc2_b {1}"           'grep -qE "^routers\.2\.fc2_b +Dataset \{1\}" "$R/export.ls"'
check "export: vocab {$V}"                    'grep -qE "^vocab +Dataset \{$V\}" "$R/export.ls"'
check "export: no routers.3 (L-1 routers) and no head (tied)" '! grep -qE "^(routers\.3|head) " "$R/export.ls"'
n_ds=$(grep -c " Dataset " "$R/export.ls")
n_tensors=$(sed -n 's/^exported \([0-9]*\) tensors.*/\1/p' "$R/export.out")
check "export: one dataset per tensor plus vocab ($n_ds = ${n_tensors:-?} + 1)" '[ -n "$n_tensors" ] && [ "$n_ds" -eq $((n_tensors + 1)) ]'
check "export: float32 parameters" 'h5dump -H -d layers.0.ffn.w1 "$R/sat_export.h5" | grep -q H5T_IEEE_F32LE'
check "export: root attributes d_model=32, value_residual=satformer, depth_routing=tsa" \
    'h5dump -a d_model "$R/sat_export.h5" | grep -q "(0): 32" && h5dump -a value_residual "$R/sat_export.h5" | grep -q "\"satformer\"" && h5dump -a depth_routing "$R/sat_export.h5" | grep -q "\"tsa\""'
# /probe/category against the bytes of /probe/tokens (through the exported
# vocab): letters are functional or semantic, whitespace, digits and
# punctuation other than the apostrophe structural
vocab=$(values vocab "$R/sat_export.h5")
toks=$(values /probe/tokens "$T")
cats=$(values /probe/category "$T")
bad=$(awk -v v="$vocab" -v t="$toks" -v c="$cats" 'BEGIN {
    nv = split(v, V, ","); nt = split(t, TK, ","); nc = split(c, C, ",");
    if (nt != nc || nt == 0) { print "length"; exit }
    for (i = 1; i <= nt; i++) {
        b = V[TK[i] + 1]; k = C[i];
        letter = (b >= 65 && b <= 90) || (b >= 97 && b <= 122);
        if (letter && k != 1 && k != 2) bad++;
        if (!letter && b != 39 && k != 0) bad++;
        n[k]++;
    }
    printf "%d wrong (structural %d, functional %d, semantic %d)", bad, n[0], n[1], n[2] }')
check "/probe/category agrees with the probe bytes: $bad" '[ "${bad%% *}" = 0 ]'

"$BIN" export nosuchrun --results "$R" --out "$R/x.h5" > "$R/export_bad.out" 2>&1
check "export of an unknown run fails with exit 1 and names it" '[ $? -eq 1 ] && grep -q nosuchrun "$R/export_bad.out" && [ ! -e "$R/x.h5" ]'

# ---------------------------------------------------------------- 3. live readers
# a run long enough to outlast the readers; it is killed once they are done
"$BIN" train "$MF" --results "$R" --run-id live "${TINY[@]}" model.value_residual=satformer train.steps=100000 \
    train.eval_every=5 train.ckpt_every=100000 train.batch_size=2 > "$R/live.out" 2>&1 &
pid=$!
LOG="$R/runs/live/train.log"
TR="$R/runs/live/trace.h5"
evals() { local n; n=$(grep -cE '^step [0-9]+ \| val loss' "$LOG" 2>/dev/null); echo "${n:-0}"; }
wait_evals() { # wait_evals N: until N evaluations are logged; 1 if the run ended or 30 s passed
    for _ in $(seq 1500); do
        [ "$(evals)" -ge "$1" ] && return 0
        kill -0 $pid 2>/dev/null || return 1
        sleep 0.02
    done
    return 1
}
wait_evals 1

# plain h5dump on the live trace: it opens the file whenever no append is in
# progress (an append takes milliseconds), so allow a few retries
live_ok=1
for _ in $(seq 20); do
    if h5dump -H "$TR" > "$R/live.h" 2>&1; then live_ok=0; break; fi
    sleep 0.05
done
check "plain h5dump -H opens the trace of a run still training" '[ $live_ok -eq 0 ] && grep -q "DATASET \"alpha\"" "$R/live.h"'

# an h5py reader holding the live file open with swmr=True and refreshing,
# as docs/files.md shows; it prints the row count after each refresh
PY=
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import h5py' 2>/dev/null; then PY=$py; break; fi
done
if [ -n "$PY" ]; then
    "$PY" - "$TR" > "$R/h5py.out" 2>&1 <<'PYEOF' &
import sys, time, h5py
# an open that coincides with an append may fail ("truncated file": the file
# grew between HDF5's size check and its superblock read): try again
for i in range(20):
    try:
        f = h5py.File(sys.argv[1], "r", libver="latest", swmr=True)
        break
    except OSError:
        if i == 19:
            raise
        time.sleep(0.05)
step, alpha = f["step"], f["sat/alpha"]
end = time.time() + 60
while time.time() < end:
    step.refresh(); alpha.refresh()
    s = step[:]
    n = min(len(s), alpha.shape[0])
    while n and s[n - 1] < 0:
        n -= 1
    assert list(s[:n]) == list(range(0, 5 * n, 5)), s
    a = alpha[n - 1] if n else None
    print(n, flush=True)
    time.sleep(0.01)
PYEOF
    pypid=$!
    # until the reader has refreshed through 3 new evaluations (at most 30 s)
    for _ in $(seq 1500); do
        [ "$(sort -un "$R/h5py.out" 2>/dev/null | grep -cE '^[0-9]+$')" -ge 4 ] && break
        kill -0 $pypid 2>/dev/null || break
        kill -0 $pid 2>/dev/null || break
        sleep 0.02
    done
    kill -0 $pypid 2>/dev/null; reader_alive=$?
    kill -0 $pid 2>/dev/null; run_alive=$?
    kill $pypid 2>/dev/null
    wait $pypid 2>/dev/null
    seen=$(sort -un "$R/h5py.out" 2>/dev/null | grep -cE '^[0-9]+$')
    check "h5py swmr=True reader holding the live trace saw it grow ($seen row counts), steps 0,5,10,..." \
        '[ $reader_alive -eq 0 ] && [ "$seen" -ge 4 ] || { tail -5 "$R/h5py.out"; false; }'
    check "the run kept training while the h5py reader held the file" '[ $run_alive -eq 0 ] || { tail -3 "$R/live.out"; false; }'
else
    echo "SKIP h5py swmr reader on a live run (no python3 with h5py)"
fi
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null

# ---------------------------------------------------------------- 4. kill -9
# long enough that the kill always comes mid-run, short enough to resume quickly
KILL=(train.steps=400 train.eval_every=5 train.ckpt_every=10 train.batch_size=2)
"$BIN" train "$MF" --results "$R" --run-id killed "${TINY[@]}" model.value_residual=satformer "${KILL[@]}" \
    > "$R/killed.out" 2>&1 &
pid=$!
LOG="$R/runs/killed/train.log"
TR="$R/runs/killed/trace.h5"
wait_evals 4

# kill -9 between appends, the moment a kill almost always hits (an append
# takes milliseconds per evaluation): freeze the run, and kill it if byte 11
# of the file (the superblock's consistency flags, set only while an append
# has the file open) is 0, else let it run on a moment.  A kill inside an
# append is tested in tests/test_trace.c (test_killed_anywhere).
flags=
for _ in $(seq 200); do
    kill -STOP $pid 2>/dev/null || break
    flags=$(od -An -tu1 -j11 -N1 "$TR" | tr -d ' ')
    [ "$flags" = 0 ] && break
    kill -CONT $pid
    sleep 0.003
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
st=$?
check "training was killed by SIGKILL mid-run (status $st), outside an append (flags byte $flags)" \
    '[ $st -eq 137 ] && [ "$flags" = 0 ]'
logged=$(grep -oE '^step [0-9]+ \| val loss' "$LOG" | awk '{printf "%s%s", s, $2; s=","}')
h5dump -H "$TR" > "$R/killed.h" 2>&1
check "plain h5dump -H opens the killed run's trace (no h5clear)" '[ $? -eq 0 ] || { head -5 "$R/killed.h"; false; }'
traced=$(values /step "$TR")
# the training loop appends the trace row before it logs the "val loss"
# line, so the kill may have come between the two: one more step traced
with_next="$logged,$((${logged##*,} + 5))"
check "killed trace holds every completed evaluation (log: $logged; trace: $traced)" \
    '[ -n "$logged" ] && { [ "$traced" = "$logged" ] || [ "$traced" = "$with_next" ]; }'
n=$(echo "$traced" | tr , '\n' | grep -c .)
rows=$(awk '/DATASET "alpha"/ { f = 1 } f && /DATASPACE/ { sub(/.*SIMPLE \{ \( /, ""); sub(/,.*/, ""); print; exit }' "$R/killed.h")
check "killed trace: /sat/alpha has a row for each of the $n steps (rows: $rows)" '[ "$rows" = "$n" ]'

"$BIN" train "$MF" --results "$R" --resume killed "${TINY[@]}" model.value_residual=satformer "${KILL[@]}" \
    > "$R/resumed.out" 2>&1
check "--resume finishes the killed run (exit 0)" '[ $? -eq 0 ] || { tail -5 "$R/resumed.out"; false; }'
want=$(seq 0 5 400 | paste -sd,)
got=$(values /step "$R/runs/killed/trace.h5")
check "resumed trace: steps 0,5,...,400 once each, h5dump opens it directly" '[ "$got" = "$want" ] || { echo "got $got"; false; }'
check "resumed trace: /sat/alpha has 81 rows" \
    'h5dump -H "$R/runs/killed/trace.h5" | grep -q "( 81, 4, $P, 2 ) / ( H5S_UNLIMITED, 4, $P, 2 )"'
check "no .tmp files left in the run folder" '! ls "$R/runs/killed/" | grep -q "\.tmp$"'
