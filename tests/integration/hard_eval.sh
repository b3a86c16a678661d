#!/usr/bin/env bash
# hard_eval.sh — what the reproduction report reads about depth routing, with
# the skipping done (issue 22), on tiny TSA, early-exit and dense runs trained
# here on the test's own corpus:
#   - training records hard.* beside final.* for routed runs (none for dense);
#     hard.active_frac is the share of (token, block) pairs really computed;
#     hard.loss is the loss of `eval --sparse` (TSA) / `eval --tau 0.5` (exit);
#   - final.p_mid_share is the eval's p_mid_share, a share in [0, 1];
#   - ablate --mode posthoc-exit on the dense run: τ above 1 is the dense loss,
#     τ 0 computes no block after block 0, the contract's τ grid is recorded;
#   - ablate --mode exit records the early-exit τ frontier and exit.full.loss;
#   - analyze --difficulty: ρ inside its interval, its mean depth is
#     1 + (L − 1)·hard.active_frac, the rows carry the partner and the seed.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1
R="$W/results"
DB="$R/gatelab.db"
q() { sqlite3 "$DB" "$1"; }
# |a - b| <= tol
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }
js() { sed -n "s/.*\"$2\":{[^}]*\"$3\":\([-+0-9.eE]*\).*/\1/p" "$1" | head -1; } # FILE OBJECT KEY
sed -e 's/n_layer = 2/n_layer = 4/' -e 's/threads = 2/threads = 1/' "$TINY" > "$W/tiny.ini"

"$BIN" train "$W/tiny.ini" model.depth_routing=tsa model.tsa_lambda=0.05 model.router_init_bias=0 --run-id tsa \
    --results "$R" --quiet > "$W/t1" 2>&1
check "train a tiny TSA run (exit 0)" test $? -eq 0
"$BIN" train "$W/tiny.ini" --run-id dense --results "$R" --quiet > "$W/t2" 2>&1
check "train its dense partner (exit 0)" test $? -eq 0
"$BIN" train "$W/tiny.ini" model.depth_routing=early_exit --run-id ee --results "$R" --quiet > "$W/t3" 2>&1
check "train a tiny early-exit run (exit 0)" test $? -eq 0

hv() { q "select value from metrics where run_id='$1' and split='val' and name='$2' order by step desc limit 1"; }
n_hard=$(q "select count(*) from metrics where run_id='tsa' and split='val' and name like 'hard.%'")
check "training recorded the TSA run's hard.* headline ($n_hard rows)" test "$n_hard" -ge 8
check "the dense run has no hard.* rows" test "$(q "select count(*) from metrics where run_id='dense' and name like 'hard.%'")" -eq 0
ha=$(hv tsa hard.active_frac); hr=$(hv tsa hard.run_frac); fa=$(hv tsa final.active_frac)
check "hard.active_frac = the share of pairs really computed ($ha, $hr; soft count $fa)" near "$ha" "$hr" 1e-6
check "hard.* and final.* were measured on the same whole split" test \
    "$(q "select count(distinct win_first||'/'||win_count||'/'||tokens) from metrics where run_id='tsa' and split='val' and (name like 'hard.%' or name like 'final.%')")" -eq 1

# eval --record again (same threads as the check below), then --sparse: the same numbers
"$BIN" eval tsa --record --results "$R" > "$W/e1" 2>&1
check "eval --record on a TSA run exits 0 and prints the hard result" grep -q '"hard":{' "$W/e1"
"$BIN" eval tsa --sparse --results "$R" > "$W/e2" 2>&1
sl=$(js "$W/e2" sparse loss); hl=$(hv tsa hard.loss)
check "hard.loss = the loss of eval --sparse on the same split ($hl, $sl)" near "$hl" "$sl" 1e-9
pm=$(sed -n 's/.*"p_mid_share":\([-+0-9.eE]*\).*/\1/p' "$W/e2"); fpm=$(hv tsa final.p_mid_share)
check "final.p_mid_share = the eval's p_mid_share ($fpm, $pm)" near "$fpm" "$pm" 1e-9
check "p_mid_share is a share in [0, 1]" awk -v p="$pm" 'BEGIN { exit !(p != "" && p >= 0 && p <= 1) }'
"$BIN" eval tsa --record --sparse --results "$R" > "$W/e3" 2>&1
check "eval --record --sparse is accepted (the sparse pass is the hard one)" test $? -eq 0

# early exit: its headline's hard pass is τ 0.5 (recorded again at eval's batch: the sums are per batch)
"$BIN" eval ee --record --results "$R" > /dev/null 2>&1
"$BIN" eval ee --tau 0.5 --results "$R" > "$W/e4" 2>&1
el=$(js "$W/e4" exit loss); ehl=$(hv ee hard.loss)
check "early exit: hard.loss = eval --tau 0.5 ($ehl, $el)" near "$ehl" "$el" 1e-9
check "early exit: hard.active_frac = hard.run_frac" near "$(hv ee hard.active_frac)" "$(hv ee hard.run_frac)" 1e-6

# post-hoc early exit of the dense run
"$BIN" ablate dense --mode posthoc-exit --taus 0,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95,2 --windows 16 --results "$R" > "$W/p1" 2>&1
check "ablate --mode posthoc-exit exits 0" test $? -eq 0
pq() { q "select value from metrics where run_id='dense' and split='ablation' and name='posthoc.$1' and params='$2'"; }
pf=$(pq loss '{"tau":null}'); p2=$(pq loss '{"tau":2.000}')
check "post-hoc τ 2 (nobody exits) = the dense loss ($p2, $pf)" test -n "$pf" -a "$pf" = "$p2"
"$BIN" eval dense --windows 16 --results "$R" > "$W/e5" 2>&1
# ablate sums per-token losses in double, eval averages per-batch float means: 1e-6 covers the float rounding
check "posthoc.full.loss = eval's loss on the same 16 windows ($pf)" near "$pf" "$(js "$W/e5" soft loss)" 1e-6
check "post-hoc τ 0: no block after block 0 runs (α 0)" test "$(pq active_frac '{"tau":0.000}')" = "0.0"
n_grid=$(q "select count(*) from metrics where run_id='dense' and split='ablation' and name='posthoc.loss' and json_extract(params, '\$.tau') in (0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95)")
check "posthoc.tau<τ>.loss on the contract's grid (8 of 8)" test "$n_grid" -eq 8
"$BIN" ablate tsa --mode posthoc-exit --results "$R" > "$W/p2" 2>&1
check "posthoc-exit on a TSA run is refused with a reason" test $? -ne 0 -a -n "$(grep -i 'dense' "$W/p2")"

# the early-exit τ frontier (the default τ grid)
"$BIN" ablate ee --mode exit --windows 16 --results "$R" > "$W/x1" 2>&1
n_x=$(q "select count(*) from metrics where run_id='ee' and split='ablation' and name='exit.loss' and json_extract(params, '\$.tau') is not null")
check "ablate --mode exit records the 8-point τ frontier ($n_x) and exit.full.loss" \
    test "$n_x" -eq 8 -a -n "$(q "select value from metrics where run_id='ee' and name='exit.loss' and params='{\"tau\":null}'")"

# difficulty-proportional routing
"$BIN" analyze tsa --difficulty dense --results "$R" > "$W/d1" 2>&1
check "analyze --difficulty exits 0" test $? -eq 0
dq() { q "select value from metrics where run_id='tsa' and split='analysis' and name='difficulty.$1' and params='{\"partner\":\"dense\",\"seed\":22}'"; }
rho=$(dq rho); lo=$(dq rho_lo); hi=$(dq rho_hi)
check "ρ = $rho lies in its interval [$lo, $hi] within [-1, 1]" \
    awk -v r="$rho" -v l="$lo" -v h="$hi" 'BEGIN { exit !(r != "" && l <= r && r <= h && l >= -1 && h <= 1) }'
check "difficulty.windows = every validation window ($(dq windows), hard.windows $(hv tsa hard.windows))" \
    test -n "$(dq windows)" -a "$(dq windows)" = "$(hv tsa hard.windows)"
ha=$(hv tsa hard.active_frac) # as recorded by the last eval --record (its batching)
check "mean depth $(dq depth_mean) = 1 + 3·hard.active_frac ($ha)" \
    near "$(dq depth_mean)" "$(awk -v a="$ha" 'BEGIN { printf "%.12f", 1 + 3 * a }')" 1e-6
"$BIN" analyze dense --difficulty tsa --results "$R" > "$W/d2" 2>&1
check "difficulty with the runs swapped is refused naming TSA" test $? -ne 0 -a -n "$(grep 'TSA' "$W/d2")"
