#!/usr/bin/env bash
# paper_post_forms.sh — what `gatelab paper post` records for the TSA paper's own forms (issue 42),
# driven through build/gatelab on real files and a real registry, on tiny runs of the paper's model
# (model.backbone = gpt2) trained here on the test's own corpus:
#   - a TSA run (model.tsa_form = paper), text and copy in the official format: post records
#     hard_paper.* (the paper's sparse form, SPARSE_PAPER) on the windows of hard.*, equal to what
#     `eval --sparse=paper` prints; hard.* (gatelab's form) is left as it was and differs from it;
#     the copy run's hard_paper.* holds the task accuracies (token_acc over the outputs and EOS);
#   - an early-exit run in the paper's form (model.exit_form = paper) is matched to its TSA partner
#     by the paper's τ protocol (matched_paper.*, target the TSA run's train/alpha_paper.mean_evals)
#     beside gatelab's matched.*;
#   - a second post measures and records nothing;
#   - `eval --sparse=paper --record` records hard_paper.* beside final.* and hard.* on a TSA run and is
#     refused, saying why, on a dense or early-exit run; `compare` shows hard_paper.* as its own rows;
#   - the report reads them: a claims row with sparse = paper reads hard_paper.* (its α from
#     hard_paper.active_frac), one with alpha_def = soft the paper's α (train/alpha_paper.mean_evals),
#     and rows that would read one form under the other's label are refused, naming the row.
set -u
. "$(dirname "$0")/lib.sh"
scratch
stand_in_root
q() { sqlite3 "$R/gatelab.db" "$1"; }
hv() { q "select value from metrics where run_id='$1' and split='val' and name='$2' order by step desc, win_count desc limit 1"; }
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }
js() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]][sys.argv[3]])' "$1" "$2" "$3" 2> /dev/null; }

# the claims file post reads the operating point from: one TSA row at lambda=@alpha for the test's data
cat > "$P0/claims.ini" <<'EOF'
[t1]
claim = 1
paper = a TSA row at the operating point, for paper post's early-exit matching
quantity = value
runs = experiment=paper-pf data=corpus depth_routing=tsa lambda=@alpha
alpha = 0.5
alpha_within = 1
metric = val/hard_paper.loss|val/final.loss
sparse = paper
expect = none
digits = 6
[t2]
claim = 2
paper = the same operating point read by the paper's soft α
quantity = value
runs = experiment=paper-pf data=corpus depth_routing=tsa lambda=@alpha
alpha = 0.5
alpha_within = 1
alpha_def = soft
alpha_metric = train/alpha_paper.mean_evals
metric = val/final.loss
expect = none
digits = 6
[t3]
claim = 3
paper = TSA in the paper's sparse form against the paper-form early exit at the τ of the paper's protocol, paired
quantity = diff
runs = experiment=paper-pf data=corpus depth_routing=tsa lambda=@alpha
alpha = 0.5
alpha_within = 1
metric = val/hard_paper.loss
metric_b = val/matched_paper.loss
versus = depth_routing=early_exit
sparse = paper
expect = none
digits = 6
EOF

M=(model.backbone=gpt2 model.qk_norm=0 model.norm_eps=1e-5 model.n_layer=4 model.n_kv_head=2 train.threads=1
   log.experiment=paper-pf)
TSA=(model.depth_routing=tsa model.tsa_form=paper model.router_init_bias=-1 model.tsa_lambda=0.01)
EE=(model.depth_routing=early_exit model.exit_form=paper model.exit_weighting=uniform)
COPY=(data.task=copy data.task_format=paper data.seq_items=6 data.n_symbols=10 model.seq_len=14 data.train_size=96
      data.eval_size=40 train.batch_size=8)
"$BIN" train "$TINY" "${M[@]}" "${TSA[@]}" --run-id tsa --results "$R" --quiet > "$W/t1" 2>&1
check "train a tiny TSA run of the paper's model and form (exit 0)" test $? -eq 0
"$BIN" train "$TINY" "${M[@]}" "${EE[@]}" --run-id ee --results "$R" --quiet > "$W/t2" 2>&1
check "train its early-exit partner in the paper's form (exit 0)" test $? -eq 0
"$BIN" train "$TINY" "${M[@]}" "${TSA[@]}" "${COPY[@]}" --run-id cp --results "$R" --quiet > "$W/t3" 2>&1
check "train a tiny TSA copy run in the official format (exit 0)" test $? -eq 0
"$BIN" train "$TINY" "${M[@]}" "${TSA[@]}" train.seed=2 --run-id t3 --results "$R" --quiet > "$W/t6" 2>&1
check "train a TSA run of seed 2 (exit 0); its hard.* rows removed, as a run recorded before hard.* existed" test $? -eq 0
q "delete from metrics where run_id='t3' and split='val' and name like 'hard.%'"
"$BIN" train "$TINY" "${M[@]}" log.experiment=other --run-id dense --results "$R" --quiet > "$W/t4" 2>&1
check "train a dense run outside the paper's experiments (exit 0)" test $? -eq 0
check "training records no hard_paper.* (post adds it)" test "$(q "select count(*) from metrics where name like 'hard\_paper.%' escape '\'")" = 0

"$BIN" eval tsa --sparse=paper --results "$R" > "$W/e_tsa.json" 2> /dev/null
"$BIN" eval cp --sparse=paper --results "$R" > "$W/e_cp.json" 2> /dev/null
check "eval --sparse=paper prints the paper's form (sparse_form paper)" \
    test "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sparse_form"])' "$W/e_tsa.json")" = paper
before=$(q "select group_concat(run_id||' '||name||' '||step||' '||value||' '||win_count, ';') from
            (select * from metrics where split='val' and (name like 'hard.%' or name like 'final.%') order by run_id, name, step, win_count)")

GATELAB_RESULTS="$R" "$BIN" paper post > "$W/post1.out" 2> "$W/post1.log"
check "paper post exits 0" test $? -eq 0 || tail -20 "$W/post1.log"
check "post says it measured the paper's sparse form of the TSA runs" \
    test "$(grep -c "the paper's sparse form on the headline's windows (hard_paper.\*)" "$W/post1.log")" = 2
check "... and for the run without hard.*, the whole headline in both sparse forms" \
    grep -q "t3: whole-split evaluation, soft and with the skipping done (gatelab's sparse form and the paper's)" "$W/post1.log"
check "t3 now has final.*, hard.* and hard_paper.* on one token set" \
    test "$(q "select count(distinct name) from metrics where run_id='t3' and split='val'
              and name in ('final.loss', 'hard.loss', 'hard_paper.loss')")" = 3 \
      -a "$(q "select count(distinct win_first||'/'||win_count||'/'||tokens||'/'||step) from metrics where run_id='t3'
              and split='val' and (name like 'final.%' or name like 'hard%')")" = 1

# ---- hard_paper.*: the paper's sparse form, on hard.*'s windows, as eval --sparse=paper prints it ----
for run in tsa cp; do
    n=$(q "select count(*) from metrics where run_id='$run' and split='val' and name like 'hard\_paper.%' escape '\'")
    nh=$(q "select count(*) from metrics where run_id='$run' and split='val' and name like 'hard.%'")
    check "$run: hard_paper.* mirrors hard.*: the same quantities ($n rows, hard.* $nh)" \
        test "$n" -gt 0 -a "$(q "select group_concat(substr(name, 12), ',') from (select name from metrics where run_id='$run'
                                  and split='val' and name like 'hard\_paper.%' escape '\' order by name)")" = \
                              "$(q "select group_concat(substr(name, 6), ',') from (select distinct name from metrics
                                  where run_id='$run' and split='val' and name like 'hard.%' order by name)")"
    check "$run: hard_paper.* was measured on hard.*'s split, windows and tokens, at its step" \
        test "$(q "select count(*) from metrics a join metrics b on a.run_id=b.run_id and a.split=b.split
                   where a.run_id='$run' and a.split='val' and a.name='hard_paper.loss' and b.name='hard.loss'
                   and a.data_split=b.data_split and a.win_first=b.win_first and a.win_count=b.win_count
                   and a.tokens=b.tokens and a.step=b.step")" -ge 1
    for k in loss active_frac tokens; do
        e=$(js "$(cat "$W/e_$run.json")" sparse "$k")
        check "$run: hard_paper.$k = eval --sparse=paper's sparse.$k ($(hv "$run" "hard_paper.$k"), $e)" \
            near "$(hv "$run" "hard_paper.$k")" "$e" 1e-9
    done
    check "$run: hard.loss (gatelab's form) differs from hard_paper.loss ($(hv "$run" hard.loss), $(hv "$run" hard_paper.loss))" \
        test -n "$(hv "$run" hard.loss)" -a "$(hv "$run" hard.loss)" != "$(hv "$run" hard_paper.loss)"
done
check "text run: hard_paper.bpc = hard_paper.loss / ln 2 (no accuracies)" \
    test "$(q "select count(*) from metrics a join metrics b on a.run_id=b.run_id where a.run_id='tsa'
               and a.name='hard_paper.bpc' and b.name='hard_paper.loss' and abs(a.value - b.value/0.6931471805599453) < 1e-9")" = 1 \
      -a "$(q "select count(*) from metrics where run_id='tsa' and name='hard_paper.token_acc'")" = 0
e=$(js "$(cat "$W/e_cp.json")" sparse token_acc)
check "copy run: hard_paper.token_acc (outputs and EOS) = eval --sparse=paper's token_acc ($(hv cp hard_paper.token_acc), $e)" \
    near "$(hv cp hard_paper.token_acc)" "$e" 1e-9
check "copy run: hard_paper.seq_acc is recorded, no hard_paper.bpc" \
    test -n "$(hv cp hard_paper.seq_acc)" -a "$(q "select count(*) from metrics where run_id='cp' and name='hard_paper.bpc'")" = 0
check "copy run: hard_paper.tokens = the 6 outputs and EOS of each of the 40 sequences (280)" \
    test "$(q "select cast(value as int) from metrics where run_id='cp' and name='hard_paper.tokens'")" = 280
after=$(q "select group_concat(run_id||' '||name||' '||step||' '||value||' '||win_count, ';') from
           (select * from metrics where split='val' and run_id not in ('ee', 't3') and (name like 'hard.%' or name like 'final.%')
            order by run_id, name, step, win_count)")
before_nonexit=$(echo "$before" | tr ';' '\n' | grep -v -e '^ee ' -e '^t3 ' | paste -sd ';')
check "the TSA runs' hard.* and final.* are as training recorded them (post wrote only hard_paper.*)" \
    test -n "$after" -a "$after" = "$before_nonexit"
check "the early-exit run has no hard_paper.* (the paper's sparse form is TSA's)" \
    test "$(q "select count(*) from metrics where run_id='ee' and name like 'hard\_paper.%' escape '\'")" = 0
check "the headline of a TSA run is still hard.* (gatelab runs shows hard.loss, $(hv tsa hard.loss))" \
    grep -q "$(printf '%.4f' "$(hv tsa hard.loss)")" <("$BIN" runs --results "$R" 2> /dev/null | grep -w tsa)

# ---- the early-exit rows of the official protocol ----
check "post ran the paper's τ protocol for the paper-form exit run against tsa" \
    grep -q "ee: the paper's τ protocol matched to the paper's α of tsa" "$W/post1.log"
check "matched_paper.tau is one of the 13 official thresholds" \
    test "$(q "select count(*) from metrics where run_id='ee' and name='matched_paper.tau'
              and value in (0.99,0.95,0.9,0.85,0.8,0.75,0.7,0.65,0.6,0.55,0.5,0.4,0.3)")" = 1
check "matched_paper.alpha_target is tsa's train/alpha_paper.mean_evals" \
    test "$(q "select count(*) from metrics a join metrics b where a.run_id='ee' and a.name='matched_paper.alpha_target'
              and b.run_id='tsa' and b.split='train' and b.name='alpha_paper.mean_evals' and a.value=b.value")" = 1
n=$(q "select count(distinct name) from metrics where run_id='ee' and name like 'matched\_paper.%' escape '\'")
check "matched_paper.* holds its 15 quantities ($n), beside gatelab's matched.* (matched.loss $(hv ee matched.loss))" \
    test "$n" = 15 -a -n "$(hv ee matched.loss)"
check "matched_paper.loss is on tsa's hard_paper.* tokens (the whole split: a like-for-like pair)" \
    test "$(q "select count(*) from metrics a join metrics b where a.run_id='ee' and a.name='matched_paper.loss'
              and b.run_id='tsa' and b.name='hard_paper.loss' and a.split=b.split and a.data_split=b.data_split
              and a.win_first=b.win_first and a.win_count=b.win_count and a.tokens=b.tokens")" = 1
check "... and matched_paper.protocol_loss on the protocol's random batches (30 of 4 windows)" \
    test "$(q "select win_count from metrics where run_id='ee' and name='matched_paper.protocol_loss'")" = 120
"$BIN" eval ee --match-run tsa --tau-protocol paper --results "$R" > "$W/e_ee.json" 2> /dev/null
check "matched_paper.loss = eval --match-run tsa --tau-protocol paper's exit loss ($(hv ee matched_paper.loss))" \
    near "$(hv ee matched_paper.loss)" "$(js "$(cat "$W/e_ee.json")" exit loss)" 1e-9
check "matched_paper.protocol_loss = its exit_protocol loss ($(hv ee matched_paper.protocol_loss))" \
    near "$(hv ee matched_paper.protocol_loss)" "$(js "$(cat "$W/e_ee.json")" exit_protocol loss)" 1e-9

# ---- a second post: nothing measured, nothing recorded ----
rows=$(q "select count(*) from metrics")
GATELAB_RESULTS="$R" "$BIN" paper post > /dev/null 2> "$W/post2.log"
check "a second post exits 0" test $? -eq 0
check "a second post records nothing new ($rows rows, now $(q "select count(*) from metrics"))" \
    test "$(q "select count(*) from metrics")" = "$rows"
check "... and measures nothing (no measurement line)" \
    test "$(grep -cE '^\[paper post\] [a-z]+: ' "$W/post2.log")" = 0

# a run measured before hard_paper.* existed whose folder is gone (a registry restored from a snapshot)
q "delete from metrics where run_id='cp' and name like 'hard\_paper.%' escape '\'"
mv "$R/runs/cp/ckpt" "$W/cp.ckpt"
GATELAB_RESULTS="$R" "$BIN" paper post > /dev/null 2> "$W/post3.log"
check "post on a TSA run without its checkpoint says so and is not a failure (exit $?)" \
    test $? -eq 0 -a -n "$(grep "cp: no checkpoint (.*): the paper's sparse form (hard_paper.\*) cannot be measured" "$W/post3.log")"
check "... and records nothing for it" test "$(q "select count(*) from metrics")" = "$(( rows - 9 ))"
mv "$W/cp.ckpt" "$R/runs/cp/ckpt"
GATELAB_RESULTS="$R" "$BIN" paper post > /dev/null 2> /dev/null
rows=$(q "select count(*) from metrics")

# ---- eval --sparse=paper --record ----
out=$("$BIN" eval dense --sparse=paper --record --results "$R" 2>&1)
check "eval --sparse=paper --record on a dense run is refused (exit 1), saying it is TSA's" \
    test $? -eq 1 -a -n "$(grep "sparse=paper is the TSA paper's skipping, for a TSA model only; run dense has depth_routing = none" <<< "$out")"
out=$("$BIN" eval ee --sparse=paper --record --results "$R" 2>&1)
check "... and on an early-exit run" test $? -eq 1 -a -n "$(grep "run ee has depth_routing = early_exit" <<< "$out")"
check "nothing was recorded for them" test "$(q "select count(*) from metrics")" = "$rows"
# a TSA run post never saw (another experiment): eval records all three
"$BIN" train "$TINY" "${M[@]}" "${TSA[@]}" log.experiment=other --run-id t2 --results "$R" --quiet > "$W/t5" 2>&1
q "delete from metrics where run_id='t2' and split='val' and (name like 'final.%' or name like 'hard.%')"
"$BIN" eval t2 --sparse=paper --record --results "$R" > "$W/e_rec.json" 2> "$W/e_rec.err"
check "eval --sparse=paper --record on a TSA run exits 0, printing sparse (the paper's) and hard (gatelab's)" \
    test $? -eq 0 -a -n "$(js "$(cat "$W/e_rec.json")" sparse loss)" -a -n "$(js "$(cat "$W/e_rec.json")" hard loss)"
check "it records final.*, hard.* and hard_paper.*, each once, on one token set" \
    test "$(q "select group_concat(n) from (select count(*) n from metrics where run_id='t2' and split='val'
              and name in ('final.loss', 'hard.loss', 'hard_paper.loss') group by name)")" = "1,1,1" \
      -a "$(q "select count(distinct win_first||'/'||win_count||'/'||tokens||'/'||step) from metrics where run_id='t2'
              and split='val' and (name like 'final.%' or name like 'hard%')")" = 1
"$BIN" eval t2 --sparse --results "$R" > "$W/e_g.json" 2> /dev/null
check "the hard.* it records is gatelab's form (= eval --sparse's loss), hard_paper.* the paper's (= sparse of its line)" \
    bash -c "awk -v a='$(hv t2 hard.loss)' -v b='$(js "$(cat "$W/e_g.json")" sparse loss)' 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a != \"\" && d <= 1e-9)}' &&
             awk -v a='$(hv t2 hard_paper.loss)' -v b='$(js "$(cat "$W/e_rec.json")" sparse loss)' 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a != \"\" && d <= 1e-9)}' &&
             test '$(hv t2 hard.loss)' != '$(hv t2 hard_paper.loss)'"
check "compare shows val/hard_paper.loss as its own row, beside val/hard.loss" \
    bash -c "'$BIN' compare tsa cp --results '$R' --format csv 2> /dev/null > '$W/cmp.csv' &&
             grep -q 'val/hard_paper.loss' '$W/cmp.csv' && grep -q 'val/hard.loss' '$W/cmp.csv'"

# ---- the report reads them: a row saying sparse = paper reads hard_paper.* (its α too); alpha_def = soft the
#      paper's α from train/alpha_paper.* ----
ln -s "$TINY" "$P0/tiny.ini"
printf 'pf tiny.ini 1,2\n' > "$P0/pf.plan"
"$BIN" paper report pf --results "$R" --out "$W/out" > "$W/report.log" 2>&1
check "paper report pf exits 0" test $? -eq 0 -a -s "$W/out/REPORT.md"
t1=$(grep -E '^\| t1 \|' "$W/out/REPORT.md"); t2=$(grep -E '^\| t2 \|' "$W/out/REPORT.md")
# the mean over the two seeds (tsa, t3) of a val headline row, and of train/alpha_paper.mean_evals
mean() { q "select printf('%.$2f', avg(value)) from metrics m where run_id in ('tsa', 't3') and split='$3' and name='$1'
            and step=(select max(step) from metrics x where x.run_id=m.run_id and x.split=m.split and x.name=m.name)"; }
check "row t1 (sparse = paper) shows the mean hard_paper.loss of its two seeds ($(mean hard_paper.loss 6 val))" \
    grep -qF "+$(mean hard_paper.loss 6 val) [" <<< "$t1"
check "... its form column says the paper's sparse form" grep -q "sparse paper" <<< "$t1"
check "... and its operating point was read from val/hard_paper.active_frac (the form it names), not hard.*" \
    grep -q "mean α (val/hard_paper.active_frac) over seeds, $(mean hard_paper.active_frac 3 val)" <<< "$t1"
t3=$(grep -E '^\| t3 \|' "$W/out/REPORT.md")
check "row t3 (TSA against the paper-form exit) pairs like for like: both sides on the whole split" \
    test -n "$t3" -a -z "$(grep -F "not like for like" <<< "$t3")" -a -z "$(grep -F "different tokens" <<< "$t3")"
a=$(mean alpha_paper.mean_evals 3 train)
check "row t2 (alpha_def = soft) reads the paper's α, train/alpha_paper.mean_evals ($a)" \
    grep -q "mean α (train/alpha_paper.mean_evals) over seeds, $a" <<< "$t2"
check "... and shows the mean final.loss, its form column α soft" \
    test -n "$(grep -F "+$(mean final.loss 6 val) [" <<< "$t2" | grep "α soft")"

# ---- claims rows that would read one form under the other's label are refused, naming the row ----
cp "$P0/claims.ini" "$W/claims.ok"
bad_claims() { # WHAT SED-EXPRESSION GREP-PATTERN
    sed "$2" "$W/claims.ok" > "$P0/claims.ini"
    out=$(GATELAB_RESULTS="$R" "$BIN" paper post 2>&1); rc=$?
    check "refused: $1 (exit $rc)" test $rc -eq 1 -a -n "$(grep -F -- "$3" <<< "$out")"
}
bad_claims "sparse = paper reading hard.*" 's#^metric = val/hard_paper.loss|val/final.loss#metric = val/hard.loss#' \
    "row [t1]: sparse = paper reads the paper's sparse form, hard_paper.*, but metric = val/hard.loss names hard.*"
bad_claims "hard_paper.* without sparse = paper" '/^sparse = paper/d' \
    "row [t1]: metric = val/hard_paper.loss|val/final.loss reads the TSA paper's sparse form (hard_paper.*): say sparse = paper"
bad_claims "alpha_def = soft without the paper's α" '/^alpha_metric = train/d' \
    "row [t2]: alpha_def = soft reads the paper's α: alpha_metric = train/alpha_paper.mean_evals"
bad_claims "the paper's α under alpha_def = hard" 's/^alpha_def = soft/alpha_def = hard/' \
    "row [t2]: alpha_metric = train/alpha_paper.mean_evals is the paper's soft α: say alpha_def = soft"
# a hard row of the paper's model may judge its operating point on the paper's α (form = paper), and says so
sed 's/^alpha_def = soft/alpha_def = hard\nform = paper/' "$W/claims.ok" > "$P0/claims.ini"
"$BIN" paper report pf --results "$R" --out "$W/out2" > "$W/report2.log" 2>&1
check "a hard row with form = paper may read its operating point on train/alpha_paper.* (report exits 0)" test $? -eq 0
check "... and its form column says the operating point is on the paper's α" \
    grep -qE "^\| t2 \|.*α hard \(operating point on the paper's α\)" "$W/out2/REPORT.md"
cp "$W/claims.ok" "$P0/claims.ini"

# ---- a paper-form exit's partner stays in the operating row's experiment (PREREGISTRATION, groups 2 and 3: "TSA =
#      the shk_off_tsa run of its seed"): a TSA run of another λ and experiment in the same registry, whose α is
#      the operating point exactly, is not its partner, whenever post runs ----
"$BIN" train "$TINY" "${M[@]}" "${TSA[@]}" model.tsa_lambda=0 log.experiment=paper-pf3 --run-id tl0 --results "$R" \
    --quiet > "$W/t7" 2>&1
check "train a TSA run at λ 0 in another paper experiment (exit 0)" test $? -eq 0
q "update metrics set value = 0.5 where run_id='tl0' and split='val' and name in ('hard.active_frac', 'final.active_frac')"
q "delete from metrics where run_id='ee' and name like 'matched%'"
GATELAB_RESULTS="$R" "$BIN" paper post > /dev/null 2> "$W/post4.log"
check "post after the λ-0 run exits 0" test $? -eq 0
check "the paper-form exit is matched again, by both protocols, to tsa (the operating row's experiment, paper-pf)" \
    test "$(grep -c "ee: .* of tsa " "$W/post4.log")" = 2
check "... never to tl0, whose α (0.5) is the operating point exactly" test "$(grep -c "ee: .*tl0" "$W/post4.log")" = 0
check "matched_paper.alpha_target is tsa's train/alpha_paper.mean_evals again" \
    test "$(q "select count(*) from metrics a join metrics b where a.run_id='ee' and a.name='matched_paper.alpha_target'
              and b.run_id='tsa' and b.split='train' and b.name='alpha_paper.mean_evals' and a.value=b.value")" = 1
