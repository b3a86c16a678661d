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
#   - every plan group a [question] of claims.ini names (groups =) is a line of
#     the decisive plan (the report says "not in this plan" of any other)
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
# the budget left (issue 26): each line's grid expanded as `gatelab sweep` expands it, less its
# finished runs, at the median core-seconds per step (training seconds × threads) of the finished runs of
# the same shape (tests/fixtures/tiny.ini trains with two threads)
ln -s "$TINY" "$P/tiny.ini"
printf '%s\n' 'g1 tiny.ini 1 train.steps=40 log.probe_windows=2' 'g2 tiny.ini 1 --axis seed=1,2 train.steps=80' \
    'g3 tiny.ini 1 model.d_model=64 train.steps=40' 'g4 tiny.ini 1 model.no_such_key=1' > "$P/cost.plan"
report cost; rc=$?
check "a plan with groups left: exit $rc" test $rc -eq 0
# g1run's training seconds by the report's rule (gaps between its train/loss rows, none over 20x the median)
want=$(python3 - "$R/gatelab.db" <<'PY'
import sqlite3, sys
t = [r[0] for r in sqlite3.connect(sys.argv[1]).execute(
    "select wall_time from metrics where run_id='g1run' and split='train' and name='loss' order by step")]
g = [b - a for a, b in zip(t, t[1:])]; med = sorted(g)[(len(g) - 1) // 2]
w = 0.0
for x in g:
    if x <= 20 * med: w += x
# × its threads (its train.threads param): the budget is in core-seconds
th = int(sqlite3.connect(sys.argv[1]).execute(
    "select value from params where run_id='g1run' and key='train.threads'").fetchone()[0]) or 1
s = w * th / 40; secs = 0.0
for _ in range(2): secs += s * 80  # the report's own order of operations (pp_left), so the rounding is its
print("%.1f" % secs)
PY
)
got=$(sed -n 's/^| g2 | 1 | not started | 2 runs, ≈ \([0-9.]*\) s |$/\1/p' "$W/out/REPORT.md")
check "g2 (two seeds of 80 steps, g1's shape): '2 runs, ≈ $got s' = 2 × 80 × g1's core-seconds per step ($want s)" \
    test -n "$got" -a "$got" = "$want"
check "g1 (finished under another id, train --run-id): nothing left" grep -q '^| g1 | 1 | 1 / 1 | — |$' "$W/out/REPORT.md"
check "g3 (d_model 64, a shape no run has): untimed, said so" \
    grep -q '^| g3 | 1 | not started | 1 run (1 of a shape no finished run has timed) |$' "$W/out/REPORT.md"
check "g4 (a key gatelab does not know): 'not known here', naming the key" \
    grep -q '^| g4 | 1 | not started | not known here: .*no_such_key' "$W/out/REPORT.md"
check "the total: 3 runs left, the untimed ones said" grep -q '^Left in all: 3 runs, ≈ [0-9.]* s of one thread for those of a timed shape\.$' "$W/out/REPORT.md"
missing=$(awk '/^\[question/ {q = $0} /^groups *=/ {sub(/^groups *= */, ""); n = split($0, g, /[ ,\t]+/);
                for (i = 1; i <= n; i++) if (g[i] != "") print q "|" g[i]}' "$ROOT/experiments/paper/claims.ini" |
          while IFS='|' read -r sec grp; do grep -qE "^$grp[[:space:]]" "$ROOT/experiments/paper/decisive.plan" || echo "$sec $grp"; done)
nq=$(grep -c '^groups *=' "$ROOT/experiments/paper/claims.ini")
check "claims.ini's questions name groups ($nq lines), each a line of decisive.plan${missing:+ (not: $missing)}" \
    test "$nq" -gt 0 -a -z "$missing"
