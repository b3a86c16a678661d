#!/usr/bin/env bash
# bench_forms.sh — bench_gatelab on the TSA paper's own model (issue 40, items 3 and 8), tiny sizes,
# no timing asserted (the bench prints figures; only its rows are checked):
#   - --checkpoint on a tiny trained TSA run of the gpt2 backbone in the paper's form (dropout 0.1),
#     and on one of gatelab's own (llama, gatelab form): the run's backbone and form named, one quality
#     row per form (dense, gatelab, paper) whose loss and α are `gatelab eval`'s own on the same windows
#     (--sparse=gatelab / --sparse=paper), the two sparse forms' losses apart (the form was switched),
#     and one speed row per (batch, sparse form) at batch 1, 2, 4 with its form, batch and α, the batch-4
#     rows' loss that of their form on those windows (the timed forwards switched form too);
#   - --db records the paper form beside gatelab's (sparse_paper_*_bB) and the losses;
#   - a MoD checkpoint has no paper form (two quality rows, gatelab's speed rows only);
#   - the gpt2 training variants (gpt2, gpt2_nodrop, gpt2+tsa_paper) and tsa_paper print rows with
#     their baseline (gpt2's family: gpt2), backbone and dropout, and % of same-run sgemm;
#     gpt2+hyper is refused naming the backbone.
set -u
. "$(dirname "$0")/lib.sh"
BENCH="$(dirname "$BIN")/bench_gatelab"
if [ ! -x "$BENCH" ]; then fail "bench_gatelab not built ($BENCH: make test builds it)"; exit 1; fi
scratch
sed -e 's/n_layer = 2/n_layer = 4/' -e 's/n_kv_head = 1/n_kv_head = 2/' -e 's/threads = 2/threads = 1/' "$TINY" > "$W/tiny.ini"
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }

"$BIN" train "$W/tiny.ini" model.backbone=gpt2 model.qk_norm=0 model.norm_eps=1e-5 model.dropout=0.1 \
    model.depth_routing=tsa model.tsa_form=paper model.router_init_bias=-1 model.tsa_lambda=0.05 \
    --run-id gp --results "$R" --quiet > "$W/t1" 2>&1
check "train a tiny gpt2 TSA run in the paper's form, dropout 0.1 (exit 0)" test $? -eq 0
"$BIN" train "$W/tiny.ini" model.depth_routing=tsa model.tsa_lambda=0.05 model.router_init_bias=0 \
    --run-id gl --results "$R" --quiet > "$W/t2" 2>&1
check "train a tiny llama TSA run in gatelab's form (exit 0)" test $? -eq 0
"$BIN" train "$W/tiny.ini" model.depth_routing=mod --run-id mod --results "$R" --quiet > "$W/t3" 2>&1
check "train a tiny MoD run (exit 0)" test $? -eq 0
# the paper's official copy task (data.task_format = paper; a task, no data file): a task's quality rows carry
# token and sequence accuracy instead of bpc; the paper form's row must be its evaluation, not an empty one
"$BIN" train "$W/tiny.ini" model.backbone=gpt2 model.qk_norm=0 model.norm_eps=1e-5 model.dropout=0.1 \
    model.depth_routing=tsa model.tsa_form=paper model.router_init_bias=-1 model.tsa_lambda=0.01 \
    data.task=copy data.task_format=paper data.seq_items=6 data.n_symbols=10 model.seq_len=14 \
    data.train_size=96 data.eval_size=40 train.steps=20 --run-id cp --results "$R" --quiet > "$W/t4" 2>&1
check "train a tiny gpt2 TSA run in the paper's form on the paper's copy task (exit 0)" test $? -eq 0

# RUN BACKBONE TSA_FORM: bench --checkpoint beside gatelab eval --sparse=gatelab|paper on the same 4 windows
# (the windows of the batch-4 speed rows too)
forms() {
    local run=$1 bb=$2 tf=$3 out="$W/bench-$1.jsonl"
    "$BENCH" --quick --no-sgemm --variants '' --infer-batch 4 --eval-windows 4 --checkpoint "$R/runs/$run" \
        --db "$W/cost.db" --tag "$run" > "$out" 2> "$W/bench-$run.err"
    check "$run: bench --checkpoint exits 0" test $? -eq 0
    "$BIN" eval "$run" --sparse=gatelab --windows 4 --results "$R" > "$W/eg-$run" 2> /dev/null &&
        "$BIN" eval "$run" --sparse=paper --windows 4 --results "$R" > "$W/ep-$run" 2> /dev/null
    check "$run: gatelab eval --sparse=gatelab and --sparse=paper exit 0" test $? -eq 0
    python3 - "$out" "$W/eg-$run" "$W/ep-$run" "$bb" "$tf" <<'PY'
import json, sys
def strict(line):
    return json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
rows = [strict(l) for l in open(sys.argv[1]) if l.startswith("{")]
eg, ep = (strict(open(p).read()) for p in sys.argv[2:4])
bb, tf = sys.argv[4:6]
is_text = "bpc" in eg["soft"]
def check(what, ok):
    print(("PASS " if ok else "FAIL ") + what)
head = [r for r in rows if r.get("variant") == "trained_checkpoint"]
check(f"the checkpoint row names backbone {bb}, tsa_form {tf}, the three forms and 4 quality windows",
      len(head) == 1 and head[0]["backbone"] == bb and head[0]["tsa_form"] == tf
      and head[0]["forms"] == "dense,gatelab,paper" and head[0]["eval_windows"] == 4)
q = {r["form"]: r for r in rows if r.get("variant") == "trained_sparse_quality"}
check(f"one quality row per form ({sorted(q)}), each on 4 validation windows "
      f"({[(f, r['windows'], r['tokens']) for f, r in sorted(q.items())]}), the tokens eval's",
      sorted(q) == ["dense", "gatelab", "paper"] and all(r["windows"] == 4 and r["split"] == "val"
                                                        and r["tokens"] == eg["soft"]["tokens"] > 0 for r in q.values()))
if sorted(q) != ["dense", "gatelab", "paper"]:
    sys.exit(0)
tol = 1e-10  # eval prints 12 significant digits; bench 17: the same evaluation, so equal to eval's precision
for form, ev in (("gatelab", eg), ("paper", ep)):
    check(f"eval --sparse={form} says sparse_form {ev.get('sparse_form')}", ev.get("sparse_form") == form)
    for key in ("loss", "bpc", "active_frac") if is_text else ("loss", "token_acc", "seq_acc", "active_frac"):
        check(f"bench's {form} {key} = eval --sparse={form}'s ({q[form][key]!r}, {ev['sparse'][key]!r})",
              abs(q[form][key] - ev["sparse"][key]) <= tol)
check(f"bench's dense loss = eval's soft loss ({q['dense']['loss']!r}, {eg['soft']['loss']!r})",
      abs(q["dense"]["loss"] - eg["soft"]["loss"]) <= tol and abs(q["dense"]["loss"] - ep["soft"]["loss"]) <= tol)
check(f"the paper form's loss is not gatelab's: the form was switched ({q['paper']['loss']!r}, {q['gatelab']['loss']!r})",
      abs(q["paper"]["loss"] - q["gatelab"]["loss"]) > 1e-6)
check("the sparse forms' α are the share of pairs really run (run_frac), in [0, 1]",
      all(abs(q[f]["active_frac"] - q[f]["run_frac"]) < 1e-6 and 0 <= q[f]["active_frac"] <= 1 for f in ("gatelab", "paper")))
sp = [r for r in rows if r.get("variant") == "trained_sparse_inference"]
got = sorted((r["batch"], r["form"]) for r in sp)
want = sorted((b, f) for b in (1, 2, 4) for f in ("gatelab", "paper"))
check(f"one speed row per batch and sparse form ({got})", got == want)
check("each speed row: its form, batch, α in [0, 1], backbone, tsa_form, dense and sparse tokens/s, the speed-up's "
      "median within its extremes, an ideal >= 1",
      all(r["backbone"] == bb and r["tsa_form"] == tf and 0 <= r["alpha"] <= 1 and r["dense_tokens_per_s"] > 0
          and r["sparse_tokens_per_s"] > 0 and r["speedup"]["min"] <= r["speedup"]["median"] <= r["speedup"]["max"]
          and r["ideal_speedup"] >= 1 for r in sp))
b4 = {r["form"]: r for r in sp if r["batch"] == 4}
for form in ("gatelab", "paper"):
    # the same 4 windows in one forward; the row prints the model's float loss to 9 digits
    check(f"the batch-4 {form} speed row ran that form: its loss is the {form} quality row's "
          f"({b4.get(form, {}).get('loss')!r}, {q[form]['loss']!r})",
          form in b4 and abs(b4[form]["loss"] - q[form]["loss"]) <= 1e-5 and abs(b4[form]["alpha"] - q[form]["active_frac"]) <= 1e-4)
check("the paper form's ideal is the FFN-only one (its attention runs for every token)",
      all(abs(r["ideal_speedup"] - r["ideal_ffn_only"]) < 1e-9 for r in sp if r["form"] == "paper"))
# the timed ideal: the FFN at its replayed share of the dense time (docs/benchmarks.md)
check("each speed row says whether its median is above the FLOP ideal (above_flop_ideal)",
      all(r.get("above_flop_ideal") is (r["speedup"]["median"] > r["ideal_speedup"]) for r in sp))
check("each speed row: the FFN's share of the dense time (> 0) and of its FLOPs (in (0, 1))",
      all(r.get("ffn_time_share", 0) > 0 and 0 < r.get("ffn_flop_share", 0) < 1 for r in sp))
L = head[0]["n_layer"]
def paper_timed(r):  # the paper form skips only FFNs: t_dense / (t_dense − skipped pairs' share of the FFN time)
    return 1 / (1 - (1 - r["alpha"]) * (L - 1) / L * r["ffn_time_share"])
check("the paper form's timed ideal is 1 / (1 − (1 − α)(L − 1)/L · ffn_time_share) (null only when the FFN took "
      f"the whole dense time) ({[(r['batch'], r.get('ideal_timed')) for r in sp if r['form'] == 'paper']})",
      all((r.get("ideal_timed") is None and r["ffn_time_share"] >= 1) or
          (r.get("ideal_timed") is not None and abs(r["ideal_timed"] - paper_timed(r)) <= 2e-3 * paper_timed(r))
          for r in sp if r["form"] == "paper"))
check("gatelab's timed ideal (it also skips query, attention row and Wo) is above the FFN-only one at its α",
      all(r.get("ideal_timed") is None or r["ideal_timed"] >= 1 / (1 - (1 - r["alpha"]) * (L - 1) / L * r["ffn_time_share"]) - 1e-3
          for r in sp if r["form"] == "gatelab"))
PY
    local n
    n=$(sqlite3 "$W/cost.db" "select count(*) from metrics where run_id = 'cost-$run-trained-sparse' and name in
        ('sparse_paper_speedup_b4','sparse_paper_alpha_b4','sparse_speedup_b4','sparse_alpha_b4','dense_tokens_per_s_b4',
         'loss_dense','loss_gatelab','loss_paper','dense_ffn_time_share_b4')")
    check "$run: --db records both forms, the losses and the FFN's time share (9 of 9 checked names, got $n)" test "$n" = 9
    check "$run: the recorded paper loss is bench's" test "$(sqlite3 "$W/cost.db" "select printf('%.9f', value) from metrics
        where run_id = 'cost-$run-trained-sparse' and name = 'loss_paper'")" = \
        "$(sed -n '/"trained_sparse_quality","form":"paper"/s/.*"loss":\([-+0-9.eE]*\).*/\1/p' "$out" | xargs printf '%.9f')"
}
forms gp gpt2 paper
forms gl llama gatelab
forms cp gpt2 paper

"$BENCH" --quick --no-sgemm --variants '' --infer-batch 2 --eval-windows 4 --checkpoint "$R/runs/mod" > "$W/bench-mod.jsonl" 2>&1
check "MoD checkpoint: bench exits 0" test $? -eq 0
check "... with the dense and gatelab quality rows and no paper form" test \
    "$(grep -c '"variant":"trained_sparse_quality"' "$W/bench-mod.jsonl")/$(grep -c '"form":"paper"' "$W/bench-mod.jsonl")" = 2/0

# the training variants: tiny sizes (2 blocks, batch 1, 2 rounds), figures printed, none asserted
"$BENCH" --scale s --n-layer 2 --batch 1 --steps 2 --warmup 1 \
    --variants base,tsa_paper,gpt2,gpt2_nodrop,gpt2+tsa_paper > "$W/train.jsonl" 2> "$W/train.err"
check "training variants gpt2, gpt2_nodrop, gpt2+tsa_paper, tsa_paper: bench exits 0" test $? -eq 0
python3 - "$W/train.jsonl" <<'PY'
import json, sys
rows = {r["variant"]: r for r in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")) if "variant" in r}
head = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"openblas_core"')]
def check(what, ok):
    print(("PASS " if ok else "FAIL ") + what)
want = {"base": ("base", "llama", 0), "tsa_paper": ("base", "llama", 0), "gpt2": ("gpt2", "gpt2", 0.1),
        "gpt2_nodrop": ("gpt2", "gpt2", 0), "gpt2+tsa_paper": ("gpt2", "gpt2", 0.1)}
check(f"one row per training variant ({sorted(rows)})", sorted(rows) == sorted(want))
for v, (base, bb, drop) in want.items():
    r = rows.get(v, {})
    check(f"{v}: baseline {base}, backbone {bb}, dropout {drop}",
          r.get("baseline") == base and r.get("backbone") == bb and abs(r.get("dropout", -1) - drop) < 1e-6)
check("gpt2 is its family's baseline; the others carry a paired step ratio and a verdict",
      rows.get("gpt2", {}).get("verdict") == "baseline" and
      all(rows[v]["verdict"] in ("result", "measurement problem") and rows[v]["step_ratio"]["median"] > 0
          for v in ("tsa_paper", "gpt2_nodrop", "gpt2+tsa_paper") if v in rows))
check("same-run sgemm measured and gpt2's share of it printed",
      len(head) == 1 and head[0]["sgemm_gflops"] > 0 and rows.get("gpt2", {}).get("ratio_to_sgemm", 0) > 0)
PY
"$BENCH" --quick --no-sgemm --variants gpt2+hyper > "$W/out" 2>&1
check "gpt2+hyper is refused (exit 2) naming the backbone" bash -c "[ $? -eq 2 ] && grep -q 'backbone = gpt2' '$W/out'"

# the summary (scripts/bench/run.sh --summary LOG) says per row when a speed-up is above the FLOP ideal, with
# the FFN's time and FLOP shares, beside the timed ideal; a row within its ideal gets no such line
RUNSH="$(cd "$(dirname "$0")/../.." && pwd)/scripts/bench/run.sh"
row() { # FORM MEDIAN FLOP_IDEAL TIMED_IDEAL
    echo '{"env":"as set/checkpoint","variant":"trained_sparse_inference","batch":8,"alpha":0.2345,"dense_tokens_per_s":100,'\
'"sparse_tokens_per_s":200,"speedup":{"median":'"$2"',"q1":1.9,"q3":2.1,"min":1.8,"max":2.2},"ideal_speedup":'"$3"','\
'"share_of_ideal":1.31,"ideal_ffn_only":1.7,"form":"'"$1"'","loss":0.04,"backbone":"gpt2","tsa_form":"paper","rounds":10,'\
'"above_flop_ideal":true,"ffn_time_share":0.8206,"ffn_flop_share":0.6463,"ideal_timed":'"$4"',"share_of_timed_ideal":0.9}'
}
{ row paper 1.92 1.7015 2.2517; row gatelab 1.5 1.9203 2.1716; row dense_like 2.4 1.7 2.2; row timed_only 1.6 1.7 1.5; } \
    > "$W/sum.jsonl"
bash "$RUNSH" --summary "$W/sum.jsonl" > "$W/sum.out" 2>&1
check "run.sh --summary LOG prints a log's summary (exit 0)" test $? -eq 0
check "... the row above its FLOP ideal says so, with the FFN's 82% of the time against 65% of the FLOPs, and the timed ideal" \
    bash -c "grep -A1 'batch  8 paper .*FLOP ideal 1.702x.*timed ideal 2.252x' '$W/sum.out' |
             grep -q 'above the FLOP ideal: the baseline does work the model of FLOPs does not count: the FFN is 82% of the dense pass.s time against 65% of its FLOPs'"
check "... a row within its FLOP ideal has no such line" \
    bash -c "! grep -A1 'batch  8 gatelab' '$W/sum.out' | grep -q 'above the FLOP ideal'"
check "... a row above the timed ideal too is called noise or a cache effect, not a saving" \
    bash -c "grep -A1 'batch  8 dense_like' '$W/sum.out' | grep -q 'above the timed ideal 2.200x too: timing noise or a cache effect, not a saving'"
check "... a row above the timed ideal alone (not the FLOP one) is called noise or a cache effect too" \
    bash -c "grep -A1 'batch  8 timed_only' '$W/sum.out' | grep -q 'above the timed ideal 1.500x: timing noise or a cache effect, not a saving'"
