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

# The tests run TEST_JOBS at a time (default: the machine's cores; TEST_JOBS=1 runs them one after
# another): each writes only its own scratch folder (mktemp) and log, so the results do not depend on
# the order or on what runs beside it.  The longest ones start first so the pool does not end on one
# lone long test; each test's ok / FAIL line is printed as it ends.
njobs="${TEST_JOBS:-$(nproc 2> /dev/null || echo 1)}"
case "$njobs" in ''|*[!0-9]*|0) echo "run.sh: TEST_JOBS must be a positive whole number (got '$njobs')" >&2; exit 2 ;; esac
first=(paper test_grad mech sweep claims_q1 paper_post_forms figures demo serve sample registry_snapshots python)
declare -A kind=() path=()
order=()
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue;; esac
    name=$(basename "$t"); kind[$name]=unit; path[$name]=$t; order+=("$name")
done
for script in tests/integration/*.sh; do
    [ -f "$script" ] || continue
    name=$(basename "$script" .sh)
    [ "$name" = lib ] && continue
    [ -z "${kind[$name]:-}" ] || { echo "run.sh: two tests named $name (a program and a script)" >&2; exit 2; }
    kind[$name]=integration; path[$name]=$script; order+=("$name")
done
queue=()
for name in "${first[@]}"; do [ -n "${kind[$name]:-}" ] && queue+=("$name"); done
for name in "${order[@]}"; do
    case " ${first[*]} " in *" $name "*) ;; *) queue+=("$name") ;; esac
done

start() { # name: run it in the background; its exit status and seconds go to $log_dir/NAME.done
    local name=$1
    ( t0=$SECONDS
      if [ "${kind[$name]}" = unit ]; then "${path[$name]}"; else bash "${path[$name]}"; fi > "$log_dir/$name.log" 2>&1; rc=$?
      echo "$rc $((SECONDS - t0))" > "$log_dir/$name.done.tmp" && mv "$log_dir/$name.done.tmp" "$log_dir/$name.done" ) &
}
collect() { # report every test whose .done file has appeared and was not reported yet
    local name rc secs log p f s
    for name in "${!running[@]}"; do
        [ -f "$log_dir/$name.done" ] || continue
        read -r rc secs < "$log_dir/$name.done"; rm -f "$log_dir/$name.done"; unset "running[$name]"
        log="$log_dir/$name.log"
        if [ "${kind[$name]}" = unit ]; then
            p=$(count '^\[  PASSED  \]' "$log")
            f=$(count '^\[  FAILED  \]' "$log")
            s=$(count '^\[  SKIPPED \]' "$log")
        else
            p=$(grep -c '^PASS ' "$log")
            f=$(grep -c '^FAIL ' "$log")
            s=$(grep -c '^SKIP ' "$log")
        fi
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
        report "$name" "$p" "$f" "$s" "$log" "$secs"
    done
}
rm -f "$log_dir"/*.done "$log_dir"/*.done.tmp
reap() { # wait for one test to end and report it; a test whose runner died without its .done counts as failed
    local n=${#running[@]} name
    wait -n 2> /dev/null
    collect
    if [ "${#running[@]}" -eq "$n" ] && [ -z "$(jobs -rp)" ]; then
        for name in "${!running[@]}"; do echo "1 0" > "$log_dir/$name.done"; done
        collect
    fi
}
declare -A running=()
for name in "${queue[@]}"; do
    while [ "${#running[@]}" -ge "$njobs" ]; do reap; done
    running[$name]=1; start "$name"
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

if [ "$skipped" -gt 0 ]; then
    echo "skipped, and why:"
    for log in "$log_dir"/*.log; do
        grep -E '^SKIP ' "$log" | sed "s|^SKIP |  $(basename "$log" .log): |"
    done
fi
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "time: ${SECONDS} s in all, $njobs at a time (each test's own in its ok / FAIL line)"
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
