# lib.sh — shared by the integration scripts (sourced, not run: tests/run.sh
# runs only the *.sh files that are not lib.sh).
#   BIN     the gatelab binary under test ($GATELAB_BIN, default build/gatelab)
#   pass / fail WHAT           print the line tests/run.sh counts
#   check WHAT COMMAND...      PASS if the command succeeds, else FAIL
#   TINY                       tests/fixtures/tiny.ini;  last_hex RUN  (needs $R)
BIN="${GATELAB_BIN:-build/gatelab}"
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
TINY="$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)/tiny.ini"  # the tiny test manifest
# last_hex RUN: the final train loss of RUN (under $R) as a hex float, for bit-for-bit checks
last_hex() { sed -n 's/.*last train loss [^ ]* (\([^)]*\)).*/\1/p' "$R/runs/$1/train.log" | tail -1; }
