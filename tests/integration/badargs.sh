#!/usr/bin/env bash
# badargs.sh — hostile and mistyped arguments to the real binary (issue 13):
# every one gives a clear message naming the flag and a non-zero exit, never
# an abort, garbage, silence or a hang.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"
"$BIN" train "$TINY" steps=10 eval_every=10 --run-id a --results "$R" --quiet > /dev/null 2>&1
check "a tiny run to poke at" test -s "$R/runs/a/ckpt"

# expect RC PATTERN WHAT COMMAND...: exit code RC and PATTERN in the output; 20 s at most (a hang fails)
expect() {
    local want=$1 pat=$2 what=$3; shift 3
    timeout 20 "$@" > "$W/out" 2>&1; local rc=$?
    if [ $rc -eq "$want" ] && grep -qiE -- "$pat" "$W/out"; then pass "$what"
    else fail "$what (rc $rc, want $want: $(head -c 300 "$W/out"))"; fi
}
expect 2 "--prompt is empty" "sample --prompt '' is refused, not an assertion" "$BIN" sample a --prompt "" --results "$R"
expect 2 "--temperature 'nan'.*NaN" "sample --temperature nan is refused" "$BIN" sample a --temperature nan --results "$R"
expect 2 "--tokens 'abc'.*not an integer" "sample --tokens abc is refused" "$BIN" sample a --tokens abc --results "$R"
expect 2 "--tokens '1e14'.*not an integer" "sample --tokens 1e14 is refused with a message" "$BIN" sample a --tokens 1e14 --results "$R"
expect 2 "--tokens '100000000000000'.*between 0 and" "sample --tokens 10^14 is refused with the range" "$BIN" sample a --tokens 100000000000000 --results "$R"
expect 0 "." "sample --tokens 5 still works" "$BIN" sample a --tokens 5 --results "$R"
expect 2 "--windows '-5'.*between 1 and" "eval --windows -5 is refused, not 'all'" "$BIN" eval a --windows -5 --results "$R"
expect 2 "--windows 'abc'.*not an integer" "eval --windows abc is refused, not 'all'" "$BIN" eval a --windows abc --results "$R"
expect 2 "--split 'bogus'.*val, test or train" "eval --split bogus names the split" "$BIN" eval a --split bogus --results "$R"
expect 2 "--tau 'inf'" "eval --tau inf is refused" "$BIN" eval a --tau inf --results "$R"
expect 0 '"loss":[0-9]' "eval --windows 2 still works (JSON loss)" "$BIN" eval a --windows 2 --results "$R"
mkfifo "$W/fifo"
expect 1 "FIFO" "eval --text FIFO: refused at once, no hang" "$BIN" eval a --text "$W/fifo" --results "$R"
expect 1 "directory" "eval --text DIR: says it is a directory" "$BIN" eval a --text "$W" --results "$R"
expect 1 "data.file.*FIFO" "train data.file=FIFO: refused at once, no hang" "$BIN" train "$TINY" data.file="$W/fifo" --results "$R" --quiet
expect 1 "data.file.*directory" "train data.file=DIR: says it is a directory" "$BIN" train "$TINY" data.file="$W" --results "$R" --quiet
expect 2 "manifest.*FIFO" "train FIFO as the manifest: refused at once" "$BIN" train "$W/fifo" --results "$R" --quiet
long=$(printf 'x%.0s' $(seq 1 170))
expect 2 "run id is 1 to 159 characters" "train --run-id of 170 characters is refused, not cut short" "$BIN" train "$TINY" --run-id "$long" --results "$R" --quiet
check "no folder was made for the long run id" test ! -e "$R/runs/$(printf 'x%.0s' $(seq 1 159))"
expect 2 "lr.*NaN" "manifest override train.lr=nan names the key" "$BIN" train "$TINY" train.lr=nan --results "$R" --quiet
expect 2 "steps.*not an integer" "manifest override train.steps=1e3 names the key" "$BIN" train "$TINY" train.steps=1e3 --results "$R" --quiet
expect 2 "--batch '0'" "ablate --batch 0 names the flag" "$BIN" ablate a --mode zero --batch 0 --results "$R"

# a registry from a newer gatelab: runs and tables both refuse it
cp "$R/gatelab.db" "$W/future.db"
sqlite3 "$W/future.db" "UPDATE schema_version SET version = 99"
expect 1 "schema version 99 is newer" "runs refuses a registry schema from the future" "$BIN" runs --db "$W/future.db"
expect 1 "schema version 99 is newer" "tables refuses a registry schema from the future" "$BIN" tables --db "$W/future.db" --out "$W/tables"
