# lib.sh — shared by the integration scripts (sourced, not run: tests/run.sh
# runs only the *.sh files that are not lib.sh).  Source it before any cd.
#   BIN     the gatelab binary under test ($GATELAB_BIN, default build/gatelab), absolute
#   pass / fail / skip WHAT    print the line tests/run.sh counts (skip: say why)
#   check WHAT COMMAND...      PASS if the command succeeds, else FAIL
#   TINY                       tests/fixtures/tiny.ini (reads data.file = corpus.txt)
#   make_corpus FILE [BYTES]   write the tests' own text (tests/corpus.h) to FILE
#   data_path NAME             a real data set's path by gatelab's own lookup, "" if absent
#   last_hex RUN               the objective of RUN's last batch (under $R) as a hex float
#   scratch                    W (a scratch folder, removed on exit), GATELAB_DATA=$W/data holding
#                              the test corpus corpus.txt, R=$W/results, one OpenMP thread
#   stand_in_root              T=$W/root, exported as GATELAB_ROOT: a source tree whose scripts/
#                              and experiments/* are the real ones except experiments/paper
#                              (P0, empty: the test writes its own plans and claims there)
BIN="${GATELAB_BIN:-build/gatelab}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
# a relative GATELAB_DATA means "relative to where the test started", also after a cd
case "${GATELAB_DATA:-}" in ""|/*) ;; *) export GATELAB_DATA="$PWD/$GATELAB_DATA" ;; esac
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
skip() { echo "SKIP $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
TINY="$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)/tiny.ini"  # the tiny test manifest
MKCORPUS="$(dirname "$BIN")/tests/mkcorpus"
make_corpus() {
    mkdir -p "$(dirname "$1")"
    if ! "$MKCORPUS" "$1" "${2:-262144}"; then
        fail "write the test corpus $1 with $MKCORPUS (build it with make test)"
        exit 1
    fi
}
data_path() { "$BIN" data "$1" 2> /dev/null; }
last_hex() { sed -n 's/.*objective of the last batch [^ ]* (\([^)]*\)).*/\1/p' "$R/runs/$1/train.log" | tail -1; }
scratch() {
    W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
    export GATELAB_DATA="$W/data" OMP_NUM_THREADS=1
    make_corpus "$GATELAB_DATA/corpus.txt"
    R="$W/results"
}
stand_in_root() {
    local root f; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    T="$W/root"; P0="$T/experiments/paper"; mkdir -p "$P0"
    ln -s "$root/scripts" "$T/scripts"
    for f in "$root"/experiments/*; do [ "$(basename "$f")" = paper ] || ln -s "$f" "$T/experiments/"; done
    export GATELAB_ROOT="$T"
}
