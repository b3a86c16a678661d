# lib.sh — shared by the integration scripts (sourced, not run: tests/run.sh
# runs only the *.sh files that are not lib.sh).
#   BIN     the gatelab binary under test ($GATELAB_BIN, default build/gatelab)
#   pass / fail WHAT           print the line tests/run.sh counts
#   check WHAT COMMAND...      PASS if the command succeeds, else FAIL
BIN="${GATELAB_BIN:-build/gatelab}"
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
