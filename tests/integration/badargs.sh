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
expect 2 "a run id is 1 to 127 bytes" "train --run-id of 170 characters is refused, not cut short" "$BIN" train "$TINY" --run-id "$long" --results "$R" --quiet
check "no folder was made for the long run id" test ! -e "$R/runs/$(printf 'x%.0s' $(seq 1 127))"
expect 2 "lr.*NaN" "manifest override train.lr=nan names the key" "$BIN" train "$TINY" train.lr=nan --results "$R" --quiet
expect 2 "steps.*not an integer" "manifest override train.steps=1e3 names the key" "$BIN" train "$TINY" train.steps=1e3 --results "$R" --quiet
expect 2 "--batch '0'" "ablate --batch 0 names the flag" "$BIN" ablate a --mode zero --batch 0 --results "$R"

# a registry from a newer gatelab: runs and tables both refuse it
cp "$R/gatelab.db" "$W/future.db"
sqlite3 "$W/future.db" "UPDATE schema_version SET version = 99"
expect 1 "schema version 99 is newer" "runs refuses a registry schema from the future" "$BIN" runs --db "$W/future.db"
expect 1 "schema version 99 is newer" "tables refuses a registry schema from the future" "$BIN" tables --db "$W/future.db" --out "$W/tables"

# ---- the command line of every command (issue 17): --help, unknown flags, numbers ----
# each command's flags, as a user would look for them in its --help
declare -A FLAGS=(
    [train]="--resume --run-id --db --results --quiet --allow-config-change"
    [eval]="--split --text --windows --sparse --tau --match-alpha --match-run --batch --results --record"
    [sample]="--tokens --prompt --temperature --seed --results --json --no-cache --sparse --tau --trace"
    [export]="--out --results"
    [sweep]="--jobs --dry-run --index --emit-slurm --db --results --stale --retry-failed --launcher --nodes --ntasks-per-node --axis --time --mem --partition"
    [collect]=""
    [runs]="--experiment --status --format --db --results --stale-after --fix-stale --tag --deleted"
    [analyze]="--results --db --out --no-db --difficulty --windows --seed --batch --seeds"
    [ablate]="--mode --layers --heads --values --taus --windows --batch --threads --results --db --no-db"
    [heads]="--windows --batch --threads --results --db --no-db --out --no-figure --json --attribution"
    [tables]="--db --results --out"
    [figures]="--db --results --out"
    [report]="--html --out --block --kv-head --gate --chars --results --db --probe --only"
    [probe]="--text --prompt --out --attention --zero --threads --results"
    [patch]="--pair --clean --corrupt --gate --router --positions --metric --pairs --json --threads --results"
    [paper]="--results --out"
    [data]=""
    [tag]="--remove --db --results"
    [delete]="--db --results"
    [restore]="--db --results"
    [compare]="--format --db --results"
    [metrics]="--experiment --run --split --name --format --db --results"
)
"$BIN" --help > "$W/top" 2>&1
for cmd in "${!FLAGS[@]}"; do
    "$BIN" "$cmd" --help > "$W/help" 2> "$W/help.err"; rc=$?
    missing=""
    for f in ${FLAGS[$cmd]} --help; do grep -qe "$f\b" "$W/help" || missing="$missing $f"; done
    if [ $rc -eq 0 ] && [ -z "$missing" ] && [ ! -s "$W/help.err" ] && grep -q "^usage: gatelab $cmd" "$W/help"; then
        pass "$cmd --help exits 0 and lists its flags"
    else fail "$cmd --help (rc $rc, missing:$missing)"; fi
    # every flag the command's --help lists is on its line of `gatelab --help`
    line=$(grep -E "^  gatelab $cmd( |$)" "$W/top")
    missing=""
    for f in $(grep -oE '^ +(-[a-z], )?--[a-z-]+' "$W/help" | grep -oE -- '--[a-z-]+' | grep -v -- '--help'); do
        grep -qe "$f\b" <<< "$line" || missing="$missing $f"
    done
    check "gatelab --help: the $cmd line names every flag of $cmd --help${missing:+ (missing:$missing)}" test -z "$missing"
    expect 2 "^gatelab $cmd: unknown option '--bogus'; see gatelab $cmd --help$" \
        "$cmd --bogus: one line naming the flag and $cmd --help, exit 2" "$BIN" "$cmd" --bogus
    check "$cmd --bogus prints one line" test "$(wc -l < "$W/out")" -eq 1
done
expect 0 "^gatelab [0-9.]+ \(commit [0-9a-f]+(-dirty)?|unknown\)" "gatelab --version prints the version and the commit" "$BIN" --version
expect 2 "unknown command 'bogus'; see gatelab --help" "an unknown command points to gatelab --help" "$BIN" bogus
expect 2 "unknown option '--win' \(did you mean --windows\?\)" "an abbreviated flag is refused, not guessed" \
    "$BIN" eval a --win 2 --results "$R"
expect 2 "--windows needs a value; see gatelab eval --help" "a flag without its value says so" "$BIN" eval a --windows
expect 0 '"loss":[0-9]' "--flag=value works like --flag value" "$BIN" eval a --windows=2 --results="$R"
expect 0 "FINISHED" "runs --results DIR reads DIR/gatelab.db" "$BIN" runs --results "$R"
expect 2 "--format 'xml': expected table, csv or json" "runs --format xml lists the formats" "$BIN" runs --format xml --results "$R"
expect 2 "--tag 'note': write it as key=value" "runs --tag without =" "$BIN" runs --tag note --results "$R"
expect 2 "--format 'xml': expected table, csv or json" "compare --format xml lists the formats" \
    "$BIN" compare a a --format xml --results "$R"
expect 2 "give at least two runs; see gatelab compare --help" "compare with one run" "$BIN" compare a --results "$R"
expect 2 "--format 'table': expected csv or json" "metrics --format table lists its formats" \
    "$BIN" metrics --format table --results "$R"
expect 2 "unexpected argument 'a'" "metrics takes no positional (a run is --run RUN)" "$BIN" metrics a --results "$R"
expect 2 "'note': write a tag as key=value" "tag RUN note (no value)" "$BIN" tag a note --results "$R"
expect 2 "give at least one run; see gatelab delete --help" "delete without a run" "$BIN" delete --results "$R"
expect 2 "--time '4 hours': write minutes" "sweep --time with a space" \
    "$BIN" sweep "$TINY" --time '4 hours' --emit-slurm "$W/s.sh"
expect 2 "--axis 'seed': write key=a,b,c" "sweep --axis without =" "$BIN" sweep "$TINY" --axis seed --dry-run
# bad numbers name the flag (store/parse.c's reason), for every numeric flag
expect 2 "--batch 'x': not an integer" "eval --batch x" "$BIN" eval a --batch x --results "$R"
expect 2 "--match-alpha '2': must be between" "eval --match-alpha 2" "$BIN" eval a --match-alpha 2 --results "$R"
expect 2 "--seed '-1'" "sample --seed -1" "$BIN" sample a --seed -1 --results "$R"
expect 2 "--temperature '1e999'" "sample --temperature 1e999" "$BIN" sample a --temperature 1e999 --results "$R"
expect 2 "--windows 'many': not an integer" "ablate --windows many" "$BIN" ablate a --mode zero --windows many --results "$R"
expect 2 "--threads '-1': must be between" "heads --threads -1" "$BIN" heads a --threads -1 --results "$R"
expect 2 "--stale-after 'soon'" "runs --stale-after soon" "$BIN" runs --stale-after soon --results "$R"
expect 2 "-j '0': must be between 1 and" "sweep -j 0" "$BIN" sweep "$TINY" -j 0 --dry-run
expect 2 "--jobs 'two': not an integer" "sweep --jobs two" "$BIN" sweep "$TINY" --jobs two --dry-run
expect 2 "--index '1.5': not an integer" "sweep --index 1.5" "$BIN" sweep "$TINY" --index 1.5 --dry-run
expect 2 "--stale '0': must be between" "sweep --stale 0" "$BIN" sweep "$TINY" --stale 0 --dry-run
expect 2 "--nodes 'x': not an integer" "sweep --nodes x" "$BIN" sweep "$TINY" --nodes x --emit-slurm "$W/s.sh"
expect 2 "--chars '0': must be between" "report --chars 0" "$BIN" report a --html --chars 0 --results "$R"
expect 2 "--block 'two': not an integer" "report --block two" "$BIN" report a --html --block two --kv-head 0 --results "$R"
expect 2 "--gate 'L2': item 'L2'" "report --gate L2 names the gate flag" "$BIN" report a --html --gate L2 --results "$R"
expect 2 "--heads '2:x': item '2:x': not an integer" "ablate --heads 2:x names the item" \
    "$BIN" ablate a --mode zero --heads 2:x --results "$R"
expect 2 "--heads 'L1H0,LaH1': item 'LaH1'" "ablate --heads L1H0,LaH1 names the bad item" \
    "$BIN" ablate a --mode zero --heads L1H0,LaH1 --results "$R"
expect 2 "--layers '1,x': item 'x': not an integer" "ablate --layers 1,x names the item" \
    "$BIN" ablate a --mode zero --layers 1,x --results "$R"
