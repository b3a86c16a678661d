#!/usr/bin/env bash
# sample.sh — `gatelab sample` with its KV cache (the default) against the
# uncached path (--no-cache) on real trained runs of every kind of variant:
# at temperature 0, and at temperature 1 with a fixed seed, the text of both
# paths is the same byte for byte, over more tokens than the window (seq_len
# 32: from then on the cached path re-prefills the shifted window, as
# docs/model.md "Decoding with a KV cache" says).  Trains on the tests' own
# corpus (tests/corpus.h); each run is a few seconds.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"

# name and the overrides of tests/fixtures/tiny.ini (2 blocks there; 3 here so every variant has a middle block)
variants=(
    "base|"
    "resformer|model.value_residual=resformer"
    "satformer|model.value_residual=satformer model.n_kv_head=2"
    "tsa|model.depth_routing=tsa model.value_residual=satformer"
    "early_exit|model.depth_routing=early_exit"
    "denseformer_tsa|model.cross_layer=denseformer model.depth_routing=tsa"
    "hyper|model.cross_layer=hyper model.hc_expansion=2"
    "mudd|model.cross_layer=mudd"
)
for row in "${variants[@]}"; do
    name=${row%%|*}; over=${row#*|}
    # shellcheck disable=SC2086  # $over is a list of key=value words
    if ! "$BIN" train "$TINY" model.n_layer=3 train.steps=60 $over --run-id "$name" --results "$R" --quiet > "$W/$name.out" 2>&1; then
        fail "$name: the tiny run trains (see below)"; tail -5 "$W/$name.out"; continue
    fi
    for t in 0 1; do
        args=(sample "$name" --results "$R" --tokens 120 --prompt "ROMEO:" --temperature $t --seed 7)
        "$BIN" "${args[@]}" > "$W/$name-$t.cached" 2> "$W/$name-$t.cached.err"; rc1=$?
        "$BIN" "${args[@]}" --no-cache > "$W/$name-$t.plain" 2> "$W/$name-$t.plain.err"; rc2=$?
        len=$(wc -c < "$W/$name-$t.cached")
        check "$name: sample at temperature $t exits 0 on both paths ($rc1, $rc2)" test $rc1 -eq 0 -a $rc2 -eq 0
        check "$name: temperature $t, cached = uncached text, $len bytes past the 32-token window" \
            bash -c "cmp -s '$W/$name-$t.cached' '$W/$name-$t.plain' && test $len -ge 126"
        check "$name: temperature $t, the cached path says nothing on stderr" test ! -s "$W/$name-$t.cached.err"
    done
done
# real skipping while sampling: TSA with --sparse, early exit with --tau, cached = uncached
for row in "tsa|--sparse" "early_exit|--tau 0.6"; do
    name=${row%%|*}; flag=${row#*|}
    [ -f "$R/runs/$name/ckpt" ] || continue
    args=(sample "$name" --results "$R" --tokens 120 --prompt "ROMEO:" --temperature 0 --seed 7)
    # shellcheck disable=SC2086  # $flag is a flag and its value
    "$BIN" "${args[@]}" $flag > "$W/$name-skip.cached" 2>&1; rc1=$?
    # shellcheck disable=SC2086
    "$BIN" "${args[@]}" $flag --no-cache > "$W/$name-skip.plain" 2>&1; rc2=$?
    check "$name $flag: exits 0 on both paths ($rc1, $rc2), cached = uncached text" \
        bash -c "test $rc1 -eq 0 -a $rc2 -eq 0 && cmp -s '$W/$name-skip.cached' '$W/$name-skip.plain'"
done
"$BIN" sample base --results "$R" --tokens 5 --sparse > "$W/wrong.out" 2>&1; rc=$?
check "--sparse on a run without TSA: exit 2 naming the flag and the run's routing ($rc)" \
    bash -c "test $rc -eq 2 && grep -q -- '--sparse needs a TSA model.*depth_routing = none' '$W/wrong.out'"
"$BIN" sample early_exit --results "$R" --tokens 5 --tau 0 > "$W/tau0.out" 2>&1; rc=$?
check "--tau 0: exit 2, says it must be above 0 ($rc)" bash -c "test $rc -eq 2 && grep -q 'above 0' '$W/tau0.out'"
# a generated text is not a constant: the two temperatures of the base run differ
check "base: temperature 0 and 1 give different texts" bash -c "! cmp -s '$W/base-0.cached' '$W/base-1.cached'"
