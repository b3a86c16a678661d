#!/usr/bin/env bash
# decisive_workers.sh restore|build|g4|shk|list — how round two's decisive runs (issue 42) are trained on this
# machine, and what a session does when it finds the machine replaced (docs/report/PREREGISTRATION.md, pilot
# log of 2026-12-08).  Registries, run folders and binaries live outside the work tree, in $RUNS
# (default /work/runs), so the next session continues them.
#   restore  make the live registries $RUNS/decisive/gatelab.db and $RUNS/pilot/gatelab.db from the committed
#            snapshots (docs/report/registries/) when they are missing; an existing registry is left alone
#   build    the training binaries, each a clone of this repository at the commit its groups were trained
#            with: $RUNS/src4 at e62a922 (group 4) and $RUNS/src7 at 77c8e27 (groups 2 and 3)
#   g4       two one-thread workers on group 4 (sat_b2000), side by side (a run ≈ 22 min here)
#   shk      one two-thread worker over groups 2 and 3's runs not yet finished, one at a time (a run ≈ 2.5 h:
#            start it at the start of a session), in the order dense 1, TSA 2, dense 2, TSA 3, dense 3,
#            early exit 1-3, λ 0.05 1-3, λ 0 1-3
#   list     print the shk worker's runs and each one's status in the registry; start nothing
# Workers run detached (setsid) and append to $RUNS/r2_a.log and $RUNS/r2_b.log; `kill -- -PGID` stops them
# (each training checkpoints and marks itself KILLED; the same command resumes it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-/work/runs}"
PLAN="$ROOT/experiments/paper/decisive.plan"
G4_COMMIT=e62a922 SHK_COMMIT=77c8e27
GL="${GATELAB_BIN:-$ROOT/build/gatelab}" # the main checkout's build: collect, data lookup
say() { printf '[decisive %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { say "$*"; exit 1; }

# The plan line of group $1: "MANIFEST WORDS..." (the claims column dropped).
plan_words() {
    local line; line=$(grep -E "^$1[[:space:]]" "$PLAN") || die "no line for group $1 in $PLAN"
    awk '{ out = $2; for (i = 4; i <= NF; i++) out = out " " $i; print out }' <<< "$line"
}

# GATELAB_DATA for the clones, which have no ../shared: the folder where the main checkout's build finds
# the text (gatelab's own lookup).
data_dir() {
    [ -n "${GATELAB_DATA:-}" ] && { echo "$GATELAB_DATA"; return; }
    local f; f=$("$GL" data tinyshakespeare.txt) ||
        die "tinyshakespeare.txt not found by $GL (set GATELAB_DATA, or \`make data\`)"
    dirname "$f"
}

restore() {
    local kind db
    for kind in decisive pilot; do
        db="$RUNS/$kind/gatelab.db"
        if [ -e "$db" ]; then say "restore: $db exists; left alone"; continue; fi
        mkdir -p "$RUNS/$kind"
        (cd "$ROOT/docs/report/registries" && "$GL" collect "$db" "$kind"*.db > /dev/null) ||
            die "restore: collect into $db failed"
        say "restore: $db from $(ls "$ROOT/docs/report/registries/$kind"*.db | wc -l) snapshots"
    done
}

build_one() {
    local dir=$1 commit=$2
    if [ -d "$dir/.git" ]; then
        [ "$(git -C "$dir" rev-parse --short=7 HEAD)" = "$commit" ] || die "build: $dir is not at $commit; move it away"
    else
        git clone -q "$ROOT" "$dir" && git -C "$dir" checkout -q "$commit"
    fi
    nice make -C "$dir" -j2 build/gatelab > "$dir.build.log" 2>&1 || die "build: $dir failed; see $dir.build.log"
    say "build: $dir at $commit"
}

# One sweep of group $1 with extra words "$2" in clone $3 (-j 1; the registry claims each run once).
sweep() {
    local group=$1 extra=$2 src=$3 words
    words=$(plan_words "$group")
    # shellcheck disable=SC2086 # the plan's words are a list
    (cd "$src" && GATELAB_ROOT=$PWD build/gatelab sweep experiments/paper/$words $extra \
        log.experiment="paper-$group" -j 1 --results "$RUNS/decisive" < /dev/null)
}

# groups 2 and 3, one run at a time: "GROUP INDEX" (index 0 of shk_off_tsa trained at one thread, 2026-12-07)
SHK_RUNS="shk_off_dense 0
shk_off_tsa 1
shk_off_dense 1
shk_off_tsa 2
shk_off_dense 2
shk_off_ee 0
shk_off_ee 1
shk_off_ee 2
shk_off_l05 0
shk_off_l05 1
shk_off_l05 2
shk_off_l0 0
shk_off_l0 1
shk_off_l0 2"

shk_worker() {
    local group index
    while read -r group index; do
        say "shk: $group index $index (train.threads=2)"
        sweep "$group" "train.threads=2 --index $index" "$RUNS/src7" || { say "shk: $group $index exited $?; stopping"; return 1; }
    done <<< "$SHK_RUNS"
}

start() { # start NAME LOG FUNCTION: detached, appending to LOG
    nohup setsid bash -c "$(declare -f say die plan_words sweep shk_worker); ROOT='$ROOT' RUNS='$RUNS' \
        PLAN='$PLAN' SHK_RUNS='$SHK_RUNS' GATELAB_DATA='$GATELAB_DATA'; export GATELAB_DATA; \
        say '$1 start'; $3; say \"$1 ended: \$?\"" >> "$2" 2>&1 < /dev/null &
    say "$1 started (log $2)"
}

cmd=${1:-}
case "$cmd" in
restore) restore ;;
build) build_one "$RUNS/src4" "$G4_COMMIT" && build_one "$RUNS/src7" "$SHK_COMMIT" ;;
g4 | shk)
    [ -f "$RUNS/decisive/gatelab.db" ] || die "no $RUNS/decisive/gatelab.db: run '$0 restore' first"
    src="$RUNS/src7"; [ "$cmd" = g4 ] && src="$RUNS/src4"
    [ -x "$src/build/gatelab" ] || die "no $src/build/gatelab: run '$0 build' first"
    GATELAB_DATA=$(data_dir)
    if [ "$cmd" = g4 ]; then
        start "worker A (group 4)" "$RUNS/r2_a.log" "sweep sat_b2000 '' '$src'"
        sleep 20 # the second claims the next run
        start "worker B (group 4)" "$RUNS/r2_b.log" "sweep sat_b2000 '' '$src'"
    else
        start "worker A (groups 2-3, two threads)" "$RUNS/r2_a.log" shk_worker
    fi
    ;;
list)
    [ -x "$RUNS/src7/build/gatelab" ] || die "no $RUNS/src7/build/gatelab: run '$0 build' first"
    while read -r group index; do
        words=$(plan_words "$group")
        # shellcheck disable=SC2086
        id=$(cd "$RUNS/src7" && GATELAB_ROOT=$PWD build/gatelab sweep experiments/paper/$words train.threads=2 \
            log.experiment="paper-$group" --dry-run --index "$index" --results "$RUNS/decisive" | awk '$1 ~ /^[0-9]+$/ { print $2 }')
        st=$(sqlite3 -readonly "$RUNS/decisive/gatelab.db" "SELECT status FROM runs WHERE run_id = '$id'")
        printf '%-14s %s  %s\n' "$group" "$id" "${st:-not registered}"
    done <<< "$SHK_RUNS"
    ;;
*) echo "usage: $0 restore|build|g4|shk|list   (RUNS=${RUNS}; see the header)" >&2; exit 2 ;;
esac
