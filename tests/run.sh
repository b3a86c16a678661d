#!/usr/bin/env bash
# run.sh — run every test program and integration script, then print one
# closing line "N passed, N failed, N skipped".
#
# Unit tests are cmocka programs ($BUILD/tests/test_*): their "[  PASSED  ] N",
# "[  FAILED  ] N" and "[  SKIPPED ] N" lines are counted.  Integration tests
# are shell scripts (tests/integration/*.sh) that print "PASS <what>",
# "FAIL <what>" or "SKIP <what> (<why>)" per check; a script or program that
# dies without reporting counts as one failure.  A test skips only when what
# it needs is absent (a real data set, chromium, h5py), and says so: every
# "SKIP" line is listed before the closing line.
#
# No data set is needed: tests that train on text write their own corpus
# (tests/corpus.h).  The real data sets, where a test needs one, are found
# by gatelab's own lookup ($GATELAB_DATA, data/, ../shared/data).
set -u
# a relative GATELAB_DATA is relative to where the command started
case "${GATELAB_DATA:-}" in ""|/*) ;; *) export GATELAB_DATA="$PWD/$GATELAB_DATA" ;; esac
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
export GATELAB_BIN="$PWD/$BUILD/gatelab"
export CMOCKA_MESSAGE_OUTPUT=STDOUT
# Test programs sleep at OpenMP barriers instead of spinning (what gatelab
# itself does by default): on a shared machine spinning threads lose whole time
# slices and a test can run 10x slower.  Results do not depend on the policy.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
# make asan: HDF5 (not instrumented, not ours) leaks a few bytes on the error paths of a
# corrupted file (a torn trace read by the resume tests); our own allocations stay checked
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/fuzz/lsan.supp:print_suppressions=0"
pass=0; fail=0; skipped=0; failed_names=()
log_dir="$BUILD/test-logs"; mkdir -p "$log_dir"
rm -f "$log_dir"/*.log

count() { # pattern file: sum of the numbers after pattern
    grep -oE "$1 [0-9]+" "$2" | awk '{s+=$NF} END{print s+0}'
}
report() { # name p f s log seconds
    local name=$1 p=$2 f=$3 s=$4 log=$5 secs=$6
    pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + s))
    local extra=""; [ "$s" -gt 0 ] && extra=", $s skipped"
    if [ "$f" -ne 0 ]; then
        failed_names+=("$name"); echo "FAIL $name (log: $log; ${secs} s)"; grep -E '^FAIL ' "$log"; tail -30 "$log"
    else
        echo "ok   $name ($p$extra; ${secs} s)"
    fi
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue;; esac
    name=$(basename "$t")
    t0=$SECONDS
    "$t" > "$log_dir/$name.log" 2>&1; rc=$?
    p=$(count '^\[  PASSED  \]' "$log_dir/$name.log")
    f=$(count '^\[  FAILED  \]' "$log_dir/$name.log")
    s=$(count '^\[  SKIPPED \]' "$log_dir/$name.log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    report "$name" "$p" "$f" "$s" "$log_dir/$name.log" $((SECONDS - t0))
done

for script in tests/integration/*.sh; do
    [ -f "$script" ] || continue
    name=$(basename "$script" .sh)
    [ "$name" = lib ] && continue
    t0=$SECONDS
    bash "$script" > "$log_dir/$name.log" 2>&1; rc=$?
    p=$(grep -c '^PASS ' "$log_dir/$name.log")
    f=$(grep -c '^FAIL ' "$log_dir/$name.log")
    s=$(grep -c '^SKIP ' "$log_dir/$name.log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    report "$name" "$p" "$f" "$s" "$log_dir/$name.log" $((SECONDS - t0))
done

if [ "$skipped" -gt 0 ]; then
    echo "skipped, and why:"
    for log in "$log_dir"/*.log; do
        grep -E '^SKIP ' "$log" | sed "s|^SKIP |  $(basename "$log" .log): |"
    done
fi
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "time: ${SECONDS} s in all (each test's own in its ok / FAIL line)"
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
