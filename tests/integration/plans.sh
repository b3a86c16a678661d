#!/usr/bin/env bash
# plans.sh — `gatelab paper report PRESET` reads its plan whole and says what
# registry it reports on (issue 28.6):
#   - an empty plan (comments only), a plan that is a folder, a malformed line:
#     an error naming the plan (and line), exit 1, no REPORT.md
#   - a line of 1,500 bytes is one line (it was cut at 1,023 bytes, the rest
#     read as a plan line of its own)
#   - a registry whose runs were trained with other settings than the plan's
#     (another preset's registry), or holding none of its groups: the title says
#     so; the preset's own registry keeps the plain title
# The presets are plans in a stand-in source tree ($GATELAB_ROOT) whose
# scripts/ and experiments/ are the real ones.
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
scratch
stand_in_root
ln -s "$ROOT/experiments/paper/claims.ini" "$P0/claims.ini" 2> /dev/null || true  # the report's claims, beside the plans
"$BIN" train "$TINY" log.experiment=paper-g1 --run-id g1run --results "$R" --quiet > /dev/null 2>&1
check "train a run of experiment paper-g1 (steps 40; exit $?)" test -f "$R/gatelab.db"
P="$T/experiments/paper"
report() { rm -rf "$W/out"; "$BIN" paper report "$1" --results "$R" --out "$W/out" > "$W/$1.out" 2>&1; }

printf '# only a comment\n\n   \n' > "$P/empty.plan"
report empty; rc=$?
check "an empty plan: exit $rc, 'lists no group', no REPORT.md" \
    bash -c "test $rc -eq 1 && grep -q 'lists no group' '$W/empty.out' && test ! -e '$W/out/REPORT.md'"
mkdir "$P/dir.plan"
report dir; rc=$?
check "a plan that is a folder: exit $rc, named as a directory" \
    bash -c "test $rc -eq 1 && grep -q 'dir.plan is a directory' '$W/dir.out'"
printf 'g1 tiny.ini 1 steps=40\ng2 tiny.ini x-y\n' > "$P/bad.plan"
report bad; rc=$?
check "a malformed claims field: exit $rc, naming line 2" \
    bash -c "test $rc -eq 1 && grep -q 'bad.plan, line 2: claims' '$W/bad.out'"

pad=$(head -c 1500 /dev/zero | tr '\0' ' ')
printf 'g1 tiny.ini 1 steps=40%sg9 phantom.ini 2\n' "$pad" > "$P/long.plan"
report long; rc=$?
check "a 1,500-byte line: exit $rc, one group (g1), no phantom group from its tail" \
    bash -c "test $rc -eq 0 && grep -q '^| g1 | 1 | 1 / 1 |' '$W/out/REPORT.md' && ! grep -q '^| g9 ' '$W/out/REPORT.md'"

printf 'g1 tiny.ini 1 train.steps=40 log.probe_windows=2\n' > "$P/mine.plan"
report mine; rc=$?
check "the preset's own registry: exit $rc, the plain title" \
    bash -c "test $rc -eq 0 && head -1 '$W/out/REPORT.md' | grep -q '(preset \`mine\`)$'"
printf 'g1 tiny.ini 1 --axis seed=1,2 steps=60\n' > "$P/other.plan"
report other; rc=$?
check "another preset's registry (steps 40, the plan says 60): the title says it is not the preset's" \
    bash -c "test $rc -eq 0 && head -1 '$W/out/REPORT.md' | grep -q 'is not preset \`other\`' &&
             grep -q 'run g1run of group g1 has train.steps = 40 where the plan.s line 1 says steps=60' '$W/out/REPORT.md'"
printf 'zz tiny.ini 1\n' > "$P/none.plan"
report none; rc=$?
check "a registry with none of the plan's groups: the title says so" \
    bash -c "test $rc -eq 0 && head -1 '$W/out/REPORT.md' | grep -q 'is not preset \`none\`' &&
             grep -q 'no run of the plan.s groups' '$W/out/REPORT.md'"
