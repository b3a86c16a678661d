#!/usr/bin/env bash
# headline.sh — the headline rule (docs/registry.md "The headline") in every view: a TSA run is judged
# with the skipping done (val/hard.loss), its soft loss (val/final.loss) shown beside it and named;
# a plain run by val/final.loss; a TSA run without hard rows has no headline and the views say so.
# The tiny runs' hard and soft losses are equal (no token reaches p > 0.5 in 20 steps), so a copy of
# the registry gets a hard.loss 0.25 nats above its soft one: each view must show that number.
set -u
source "$(dirname "$0")/lib.sh"
scratch
PY="${GATELAB_PYTHON:-/usr/bin/python3}"
PKG="$(cd "$(dirname "$0")/../../scripts/python" && pwd)"
ok=1
"$BIN" train "$TINY" model.depth_routing=tsa train.steps=20 --run-id tsa --results "$R" --quiet > "$W/t.log" 2>&1 || ok=0
"$BIN" train "$TINY" train.steps=20 --run-id base --results "$R" --quiet > "$W/t.log" 2>&1 || ok=0
"$BIN" train "$TINY" model.depth_routing=tsa train.steps=20 --run-id tsa_nohard --results "$R" --quiet > "$W/t.log" 2>&1 || ok=0
check "train two TSA runs and a baseline" test $ok = 1
[ $ok = 1 ] || { tail -20 "$W/t.log"; exit 1; }
q() { sqlite3 "$R/gatelab.db" "$1"; }
q "update metrics set value = value + 0.25 where run_id = 'tsa' and split = 'val' and name = 'hard.loss';
   delete from metrics where run_id = 'tsa_nohard' and name like 'hard.%'"
soft=$(q "select printf('%.4f', value) from metrics where run_id='tsa' and split='val' and name='final.loss'")
hard=$(q "select printf('%.4f', value) from metrics where run_id='tsa' and split='val' and name='hard.loss'")
base=$(q "select printf('%.4f', value) from metrics where run_id='base' and split='val' and name='final.loss'")
check "the registry holds a TSA hard loss ($hard) apart from its soft one ($soft)" test "$hard" != "$soft"

"$BIN" runs --results "$R" > "$W/runs" 2>&1
check "runs: the TSA run's val is its hard loss ($hard), its soft loss in the soft column" \
    awk -v h="$hard" -v s="$soft" '$1 == "tsa" { for (i = 1; i < NF; i++) if ($i == h && $(i + 1) == s) f = 1 } END { exit !f }' "$W/runs"
check "runs: the baseline's val is its final loss, no soft value" \
    awk -v b="$base" '$1 == "base" { for (i = 1; i < NF; i++) if ($i == b && $(i + 1) == "-") f = 1 } END { exit !f }' "$W/runs"
check "runs: a TSA run without hard rows shows n/r, and a line says how to record them" \
    bash -c "grep -E '^tsa_nohard ' '$W/runs' | grep -q 'n/r+' && grep -q 'eval RUN --record' '$W/runs'"
check "runs: a line names val (skipping done) and soft" grep -q '^TSA and early exit: val is the loss with the skipping done' "$W/runs"
check "runs --format json: val_kind hard, val_loss the hard loss, val_soft_loss the soft" python3 -c "
import json, subprocess, sys
j = {r['run_id']: r for r in json.loads(subprocess.run(['$BIN', 'runs', '--results', '$R', '--format', 'json'], capture_output=True, text=True).stdout)}
t, b, n = j['tsa'], j['base'], j['tsa_nohard']
sys.exit(not (t['val_kind'] == 'hard' and '%.4f' % t['val_loss'] == '$hard' and '%.4f' % t['val_soft_loss'] == '$soft'
              and b['val_kind'] == 'final' and b['val_soft_loss'] is None and n['val_kind'] == 'hard_missing' and n['val_loss'] is None))"
"$BIN" compare tsa base --results "$R" > "$W/cmp" 2>&1
check "compare: the headline row is the TSA run's hard loss, its soft loss named beside it" python3 -c "
import re, sys
t = open('$W/cmp').read()
kind = re.search(r'^val headline is +hard \(skipping done\) +final.loss', t, re.M)
hl = re.search(r'^val headline loss +(\S+) +(\S+)', t, re.M)
so = re.search(r'^val soft loss \(every block run\) +(\S+) +-', t, re.M)
sys.exit(not (kind and hl and so and abs(float(hl[1]) - $hard) < 1e-4 and abs(float(hl[2]) - $base) < 1e-4
              and abs(float(so[1]) - $soft) < 1e-4))"
"$BIN" tables tiny --results "$R" --out "$W/tab" > /dev/null 2>&1
check "tables: the loss table's TSA row is the hard loss of the run that has one (1 seed: $hard)" \
    grep -q "| baseline+tsa | 1 | $hard ± " "$W/tab/loss_by_variant.md"
check "tables: a note names the TSA soft loss ($soft)" grep -q "their soft loss.*baseline+tsa $soft" "$W/tab/loss_by_variant.md"
check "tables: the TSA run without hard rows is left out, and a note names it and says why" \
    grep -q '^Not shown: TSA and early-exit runs whose loss with the skipping done is not recorded.*: tsa_nohard\.' "$W/tab/loss_by_variant.md"
if "$PY" -c 'import pandas' 2> /dev/null; then
    check "Python runs(): val.headline.loss is the hard loss, kind hard, the soft loss beside it; the baseline final" \
        env PYTHONPATH="$PKG" "$PY" -c "
import sys, gatelab
d = gatelab.runs(results='$R').set_index('run_id')
t, b, n = d.loc['tsa'], d.loc['base'], d.loc['tsa_nohard']
sys.exit(not ('%.4f' % t['val.headline.loss'] == '$hard' and t['val.headline.kind'] == 'hard' and '%.4f' % t['val.soft.loss'] == '$soft'
              and b['val.headline.kind'] == 'final' and '%.4f' % b['val.headline.loss'] == '$base'
              and n['val.headline.kind'] == 'hard_missing' and n['val.headline.loss'] != n['val.headline.loss']))"
else
    skip "Python runs() headline (no pandas for $PY)"
fi
