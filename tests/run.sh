#!/usr/bin/env bash
# run.sh — run every test program and integration script, then print one
# closing line "N passed, N failed".
#
# Unit tests are cmocka programs ($BUILD/tests/test_*): their "[  PASSED  ] N"
# and "[  FAILED  ] N" lines are counted.  Integration tests are shell scripts
# (tests/integration/*.sh) that print "PASS <what>" or "FAIL <what>" per check;
# a script or program that dies without reporting counts as one failure.
set -u
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
export GATELAB_BIN="$PWD/$BUILD/gatelab"
export GATELAB_DATA="${GATELAB_DATA:-$PWD/../shared/data}"
export CMOCKA_MESSAGE_OUTPUT=STDOUT
pass=0; fail=0; failed_names=()
log_dir="$BUILD/test-logs"; mkdir -p "$log_dir"

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue;; esac
    name=$(basename "$t")
    "$t" > "$log_dir/$name.log" 2>&1; rc=$?
    p=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log_dir/$name.log" | awk '{s+=$NF} END{print s+0}')
    f=$(grep -oE '^\[  FAILED  \] [0-9]+' "$log_dir/$name.log" | awk '{s+=$NF} END{print s+0}')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$f" -ne 0 ]; then failed_names+=("$name"); echo "FAIL $name (log: $log_dir/$name.log)"; tail -30 "$log_dir/$name.log"; else echo "ok   $name ($p)"; fi
done

for s in tests/integration/*.sh; do
    [ -f "$s" ] || continue
    name=$(basename "$s" .sh)
    [ "$name" = lib ] && continue
    bash "$s" > "$log_dir/$name.log" 2>&1; rc=$?
    p=$(grep -c '^PASS ' "$log_dir/$name.log")
    f=$(grep -c '^FAIL ' "$log_dir/$name.log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$f" -ne 0 ]; then failed_names+=("$name"); echo "FAIL $name (log: $log_dir/$name.log)"; grep -E '^FAIL ' "$log_dir/$name.log"; tail -20 "$log_dir/$name.log"; else echo "ok   $name ($p)"; fi
done

[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
