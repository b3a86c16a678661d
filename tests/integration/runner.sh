#!/usr/bin/env bash
# runner.sh — tests/run.sh itself, on a stand-in tree of made-up tests (a copy of run.sh beside
# tests/integration/{await,die,fail,pass,quick}.sh and two cmocka-like programs): the closing counts
# are the same one at a time and two at a time; a script that dies without reporting, or a program
# that exits non-zero printing no FAILED line, counts as one failure; the pool runs two at once;
# a bad TEST_JOBS stops it naming the variable.
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
T="$W/tree"; mkdir -p "$T/tests/integration" "$T/b/tests"
cp "$ROOT/tests/run.sh" "$T/tests/run.sh"
I="$T/tests/integration"
printf 'echo "PASS one"; echo "PASS two"\n' > "$I/pass.sh"
printf 'echo "PASS a"; echo "FAIL b"\n' > "$I/fail.sh"
printf 'echo "PASS before dying"; kill -9 $$\n' > "$I/die.sh"
# await.sh starts before quick.sh and waits up to 6 s for the mark quick.sh leaves: it sees it only
# when the two run at once (one at a time it passes saying it waited alone)
printf 'for _ in $(seq 60); do [ -e "%s/mark" ] && { echo "PASS saw the mark"; exit 0; }; sleep 0.1; done; echo "PASS waited alone"\n' "$W" > "$I/await.sh"
printf 'touch "%s/mark"; echo "SKIP nothing here (made up)"\n' "$W" > "$I/quick.sh"
printf 'echo "not a test"\n' > "$I/lib.sh"
printf '#!/bin/sh\necho "[  PASSED  ] 3 test(s)."\n' > "$T/b/tests/test_ok"
printf '#!/bin/sh\necho "[  PASSED  ] 1 test(s)."\nexit 3\n' > "$T/b/tests/test_crash"
chmod +x "$T/b/tests/test_ok" "$T/b/tests/test_crash"

for j in 1 2; do
    (cd "$W" && BUILD=b TEST_JOBS=$j bash "$T/tests/run.sh") > "$W/j$j.log" 2>&1
    echo "rc $?" >> "$W/j$j.log"
    cp "$T/b/test-logs/await.log" "$W/j$j.await"
    rm -f "$W/mark"
done
# pass 2+1+1(die's PASS)+1(await)+3+1 = 9; fail 1 (fail.sh) + 1 (die) + 1 (test_crash) = 3; skip 1
check "one at a time: 9 passed, 3 failed, 1 skipped, exit 1 (log $W/j1.log)" \
    bash -c "grep -qx '9 passed, 3 failed, 1 skipped' '$W/j1.log' && grep -qx 'rc 1' '$W/j1.log'"
check "two at a time: the same counts and exit" \
    bash -c "grep -qx '9 passed, 3 failed, 1 skipped' '$W/j2.log' && grep -qx 'rc 1' '$W/j2.log'"
check "the failed ones are named: die, fail, test_crash (and lib.sh is not run)" \
    bash -c "for n in die fail test_crash; do grep -q \"^FAIL \$n \" '$W/j2.log' || exit 1; done; ! grep -q 'not a test' '$W/j2.log'"
check "the skip is listed with its reason before the closing line" grep -q '^  quick: nothing here (made up)' "$W/j2.log"
check "the closing time line says how many ran at a time" grep -q '^time: .* 2 at a time' "$W/j2.log"
check "one at a time: await.sh ran alone" grep -q '^PASS waited alone' "$W/j1.await"
check "two at a time really overlap (await.sh saw quick.sh's mark)" grep -q '^PASS saw the mark' "$W/j2.await"
check "no .done file is left behind" bash -c "! ls '$T/b/test-logs/'*.done* 2> /dev/null | grep -q ."
(cd "$W" && BUILD=b TEST_JOBS=0 bash "$T/tests/run.sh") > "$W/bad.log" 2>&1; rc=$?
check "TEST_JOBS=0: exit 2 naming TEST_JOBS" bash -c "[ $rc = 2 ] && grep -q TEST_JOBS '$W/bad.log'"
