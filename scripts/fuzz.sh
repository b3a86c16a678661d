#!/usr/bin/env bash
# fuzz.sh BUILD — run every libFuzzer target BUILD/fuzz_* for $FUZZ_SECONDS
# (default 60) on its seed corpus tests/fuzz/<name>/ (new inputs go to
# BUILD/corpus/<name>/, crash reproducers to tests/fuzz/crashes/), one at a
# time, and print one line per target: executions, crashes.  Exits non-zero
# when any target crashed.  `make fuzz` calls it.
set -u
cd "$(dirname "$0")/.."
B="${1:-build/fuzz}"
secs="${FUZZ_SECONDS:-60}"
mkdir -p tests/fuzz/crashes
bad=0
for bin in "$B"/fuzz_*; do
    [ -x "$bin" ] || continue
    case "$bin" in *.o|*.d) continue;; esac
    name=$(basename "$bin"); short=${name#fuzz_}
    mkdir -p "$B/corpus/$short" "tests/fuzz/$short"
    log="$B/$name.log"
    # -rss_limit_mb: HDF5 and the model allocate; ASan's shadow counts too
    "$bin" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=4096 -timeout=20 \
        -artifact_prefix="tests/fuzz/crashes/$short-" "$B/corpus/$short" "tests/fuzz/$short" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(grep -cE '^==[0-9]+==ERROR|^SUMMARY: (Address|UndefinedBehavior)Sanitizer|deadly signal|^==[0-9]+== ERROR: libFuzzer' "$log")
    echo "fuzz $short: ${execs:-?} executions in ${secs} s, $crashes crashes (rc $rc, log $log)"
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then bad=1; tail -30 "$log"; fi
done
exit $bad
