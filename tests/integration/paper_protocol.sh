#!/usr/bin/env bash
# paper_protocol.sh — the TSA paper's protocol keys, driven through build/gatelab on
# real files and a real registry (docs/tasks.md "The paper's format", docs/registry.md):
#   copy/sort in the official layout (data.task_format = paper) with a fixed
#   training set read in epochs (data.train_size) and fixed val/test sets
#   (data.eval_size); val/best.* (train.record_best); a kill -9 + resume of a
#   fixed-set run ends bit for bit like an uninterrupted one.
#   An 80/10/10 text split with its test split end to end (train's test/final.*,
#   `eval RUN --split test`).
set -u
. "$(dirname "$0")/lib.sh"
scratch
q() { sqlite3 "$R/gatelab.db" "$1"; }
SMALL="model.d_model=32 model.n_layer=3 model.n_head=2 model.n_kv_head=2 model.d_ff=64 train.threads=2
       train.lr=1e-2 train.warmup=5 train.log_every=5"
PAPER="data.task=copy data.task_format=paper data.seq_items=6 data.n_symbols=10 model.seq_len=14
       data.train_size=96 data.eval_size=40 train.batch_size=32 train.eval_every=10 train.eval_windows=40
       train.ckpt_every=10 train.record_best=1 log.probe_windows=2"

# ---- 1. the official toy format, a fixed training set, val/best.* ----
"$BIN" train "$TINY" $SMALL $PAPER train.steps=35 --run-id p --results "$R" --quiet > "$W/p.out" 2>&1
check "a paper-format copy run with a fixed training set trains (exit 0)" test $? -eq 0
check "its vocabulary is the official one: 10 items + PAD, BOS, EOS, SEP = 14 ids" \
    test "$(q "select value from params where run_id='p' and key='model.vocab_size'")" = 14
check "the periodic evaluations read the 40 sequences of data.eval_size" \
    test "$(q "select win_count from metrics where run_id='p' and split='val' and name='loss' and step=10")" = 40
# official: scored = the 6 outputs and EOS of each sequence
check "each evaluation scores the 6 outputs and EOS of each of the 40 sequences (280 tokens)" \
    test "$(q "select cast(tokens as int) from metrics where run_id='p' and split='val' and name='loss' and step=10")" = 280
best=$(q "select step from metrics where run_id='p' and split='val' and name='loss' and step>0 and step%10=0
          order by value, step limit 1")
check "val/best.step is the periodic evaluation with the lowest loss at a multiple of eval_every ($best)" \
    test -n "$best" -a "$(q "select cast(value as int) from metrics where run_id='p' and name='best.step'")" = "$best"
check "val/best.loss and val/best.token_acc are that evaluation's values" \
    test "$(q "select count(*) from metrics a join metrics b on a.run_id=b.run_id where a.run_id='p'
              and a.name='best.loss' and b.name='loss' and b.split='val' and b.step=$best and a.value=b.value")" = 1 \
      -a "$(q "select count(*) from metrics a join metrics b on a.run_id=b.run_id where a.run_id='p'
              and a.name='best.token_acc' and b.name='token_acc' and b.split='val' and b.step=$best and a.value=b.value")" = 1
check "the step-35 evaluation (off the eval_every schedule) is not a candidate" \
    test "$(q "select count(*) from metrics where run_id='p' and name='best.step' and value=35")" = 0
check "train.log names the best evaluation" grep -q "best periodic evaluation: step $best" "$R/runs/p/train.log"
"$BIN" train "$TINY" $SMALL ${PAPER/train.record_best=1/} train.steps=10 --run-id nb --results "$R" --quiet > /dev/null 2>&1
check "without train.record_best no val/best.* row is written" \
    test "$(q "select count(*) from metrics where run_id='nb'")" -gt 0 -a \
         "$(q "select count(*) from metrics where run_id='nb' and name like 'best.%'")" = 0

# resume of a fixed-set run: the batch is a function of (seed, step)
"$BIN" train "$TINY" $SMALL $PAPER train.steps=35 --run-id p2 --results "$R" --quiet > /dev/null 2>&1
GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" $SMALL $PAPER train.steps=35 --run-id k --results "$R" --quiet > /dev/null 2>&1
check "the fixed-set run died of SIGKILL after its step-20 checkpoint" test -s "$R/runs/k/ckpt"
"$BIN" train "$TINY" $SMALL $PAPER train.steps=35 --resume k --results "$R" --quiet > /dev/null 2>&1
hp=$(last_hex p); hp2=$(last_hex p2); hk=$(last_hex k)
check "two identical fixed-set runs agree bit for bit ($hp = $hp2)" test -n "$hp" -a "$hp" = "$hp2"
check "kill -9 + resume of a fixed-set run (3 batches an epoch, 11 epochs) ends bit for bit ($hk = $hp)" \
    test -n "$hk" -a "$hk" = "$hp"
"$BIN" train "$TINY" $SMALL $PAPER train.steps=35 data.train_size=960 --run-id big --results "$R" --quiet > /dev/null 2>&1
check "another data.train_size is another training stream" test "$(last_hex big)" != "$hp"

# refusals that name the key
out=$("$BIN" train "$TINY" $SMALL $PAPER data.train_size=16 --run-id bad --results "$R" --quiet 2>&1)
check "data.train_size below train.batch_size is refused naming both keys" \
    bash -c "echo \"\$1\" | grep -q 'data.train_size (16) is smaller than train.batch_size (32)'" _ "$out"
out=$("$BIN" train "$TINY" $SMALL $PAPER model.seq_len=13 --run-id bad --results "$R" --quiet 2>&1)
check "model.seq_len below 2n+2 is refused for the paper format" \
    bash -c "echo \"\$1\" | grep -q 'model.seq_len (13) is too short.*data.task_format = paper'" _ "$out"
out=$("$BIN" train "$TINY" $SMALL data.task_format=paper --run-id bad --results "$R" --quiet 2>&1)
check "data.task_format = paper on a text run is refused" \
    bash -c "echo \"\$1\" | grep -q 'data.task_format = paper applies to data.task = copy or sort, not text'" _ "$out"

# ---- 2. an 80/10/10 text split: the test split end to end ----
# corpus.txt has 262,144 bytes: train [0, 209715), val [209715, 235929), test [235929, 262144)
"$BIN" train "$TINY" data.train_frac=0.8 data.val_frac=0.1 --run-id s --results "$R" --quiet > /dev/null 2>&1
check "an 80/10/10 text run trains (exit 0)" test $? -eq 0
check "training records the test split's headline (test/final.loss on its 819 windows of 32)" \
    test "$(q "select win_count from metrics where run_id='s' and split='test' and name='final.loss'")" = 819
check "... and the val split's, another number" \
    test "$(q "select count(*) from metrics a join metrics b on a.run_id=b.run_id where a.run_id='s'
              and a.split='val' and b.split='test' and a.name='final.loss' and b.name='final.loss' and a.value<>b.value")" = 1
out=$("$BIN" eval s --results "$R" --split test)
ev=$(echo "$out" | sed -n 's/.*"source":"test","soft":{"loss":\([0-9.e-]*\).*/\1/p')
rec=$(q "select value from metrics where run_id='s' and split='test' and name='final.loss'")
check "eval --split test gives the test headline training recorded ($ev ~ $rec)" \
    awk -v a="$ev" -v b="$rec" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a != "" && d < 1e-6)}'
"$BIN" eval s --results "$R" --split test --record > /dev/null 2>&1
check "eval --split test --record writes the test headline (exit 0)" test $? -eq 0

# ---- 3. the paper's validation estimate: random windows (train.eval_mode = random) ----
RND="data.train_frac=0.8 data.val_frac=0.1 train.eval_mode=random train.eval_batches=3 train.record_best=1"
"$BIN" train "$TINY" $RND --run-id rw --results "$R" --quiet > /dev/null 2>&1
check "a run with random validation windows trains (exit 0)" test $? -eq 0
check "each pass is logged as val/random.loss on 3 batches x 4 windows x 32 tokens (384), at steps 0, 20, 40" \
    test "$(q "select group_concat(step || ':' || cast(tokens as int)) from (select step, tokens from metrics
              where run_id='rw' and split='val' and name='random.loss' order by step)")" = "0:384,20:384,40:384"
check "... with val/random.bpc beside it, and no periodic val/loss (which would read as the first windows)" \
    test "$(q "select count(*) from metrics where run_id='rw' and split='val' and name='random.bpc'")" = 3 \
      -a "$(q "select count(*) from metrics where run_id='rw' and split='val' and name='loss'")" = 0
check "the whole split is still the headline (val/final.loss on all 819 windows)" \
    test "$(q "select win_count from metrics where run_id='rw' and split='val' and name='final.loss'")" = 819
check "train.log says the pass read random windows" grep -q "^step 20 | val loss (12 random windows, 384 tokens)" "$R/runs/rw/train.log"
check "val/best.* is taken from val/random.loss" \
    test "$(q "select count(*) from metrics a join metrics b on a.run_id=b.run_id where a.run_id='rw'
              and a.name='best.loss' and b.name='random.loss' and b.step=(select value from metrics
              where run_id='rw' and name='best.step') and a.value=b.value")" = 1
"$BIN" train "$TINY" $RND --run-id rw2 --results "$R" --quiet > /dev/null 2>&1
check "the random windows are a function of the seed: a second run logs the same val/random.loss" \
    test "$(q "select group_concat(value) from metrics where run_id='rw' and name='random.loss'")" = \
         "$(q "select group_concat(value) from metrics where run_id='rw2' and name='random.loss'")"
"$BIN" train "$TINY" $RND train.seed=2 --run-id rw3 --results "$R" --quiet > /dev/null 2>&1
"$BIN" train "$TINY" $RND train.eval_batches=6 --run-id rw6 --results "$R" --quiet > /dev/null 2>&1
check "... and another seed draws other windows at step 0 (another init too)" \
    test "$(q "select value from metrics where run_id='rw' and name='random.loss' and step=0")" != \
         "$(q "select value from metrics where run_id='rw3' and name='random.loss' and step=0")"
check "training is untouched by the evaluation: eval_batches 3 and 6 end on the same objective" \
    test "$(last_hex rw)" = "$(last_hex rw6)" -a -n "$(last_hex rw)"
check "train.eval_batches = 6 reads 6 batches (768 tokens at step 0)" \
    test "$(q "select cast(tokens as int) from metrics where run_id='rw6' and name='random.loss' and step=0")" = 768
GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" $RND --run-id rwk --results "$R" --quiet > /dev/null 2>&1
"$BIN" train "$TINY" $RND --resume rwk --results "$R" --quiet > /dev/null 2>&1
check "kill -9 + resume draws the same random windows after the resume (step-40 val/random.loss as uninterrupted)" \
    test "$(q "select value from metrics where run_id='rwk' and name='random.loss' and step=40")" = \
         "$(q "select value from metrics where run_id='rw' and name='random.loss' and step=40")"

# ---- 4. the paper's α: soft, on training batches, in its three conventions ----
TSA="model.depth_routing=tsa model.tsa_lambda=0.05"
"$BIN" train "$TINY" $SMALL $PAPER $TSA train.steps=35 --run-id a --results "$R" --quiet > /dev/null 2>&1
check "a TSA run in the paper's toy protocol trains (exit 0)" test $? -eq 0
check "train/alpha_paper is logged at each evaluation after step 0 (10, 20, 30 and the last step 35)" \
    test "$(q "select group_concat(step) from (select step from metrics where run_id='a' and split='train'
              and name='alpha_paper' order by step)")" = "10,20,30,35"
# penalty = λ·Σ(1 − p)/((L − 1)·tokens) on the same batch: α_paper is exactly the penalty's mean of 1 − p
check "train/alpha_paper is the mean of 1 − p the λ penalty charges (penalty = λ·α_paper at every logged step)" \
    test "$(q "select count(*) from metrics a join metrics p on a.run_id=p.run_id and a.step=p.step
              where a.run_id='a' and a.name='alpha_paper' and p.name='penalty' and p.split='train'
              and abs(p.value - 0.05*a.value) <= 1e-6*p.value")" = 4
check "... and not gatelab's hard α (train/active_frac counts p <= 0.5)" \
    test "$(q "select count(*) from metrics a join metrics h on a.run_id=h.run_id and a.step=h.step
              where a.run_id='a' and a.name='alpha_paper' and h.name='active_frac' and h.split='train'
              and a.value <> h.value")" -ge 1
mean=$(q "select avg(value) from metrics where run_id='a' and name='alpha_paper' and step in (10,20,30)")
check "alpha_paper.mean_evals is the mean over the evaluations at k·eval_every (10, 20, 30; not 35)" \
    test "$(q "select abs(value - $mean) < 1e-12 from metrics where run_id='a' and name='alpha_paper.mean_evals'")" = 1 \
      -a "$(q "select cast(value as int) from metrics where run_id='a' and name='alpha_paper.n_evals'")" = 3
check "alpha_paper.last_eval is step 30's, alpha_paper.last_batch step 35's" \
    test "$(q "select value from metrics where run_id='a' and name='alpha_paper.last_eval'")" = \
         "$(q "select value from metrics where run_id='a' and name='alpha_paper' and step=30")" \
      -a "$(q "select value from metrics where run_id='a' and name='alpha_paper.last_batch'")" = \
         "$(q "select value from metrics where run_id='a' and name='alpha_paper' and step=35")"
check "tlops_saved_paper.* = (1 − α)(L − 1)/L of each (L = 3)" \
    test "$(q "select count(*) from metrics a join metrics t on a.run_id=t.run_id
              and t.name = replace(a.name, 'alpha_paper.', 'tlops_saved_paper.')
              where a.run_id='a' and a.name like 'alpha_paper.%' and a.name <> 'alpha_paper.n_evals'
              and abs(t.value - (1 - a.value)*2.0/3.0) < 1e-12")" = 3
check "the hard α on the whole validation split is still the headline's (val/hard.active_frac)" \
    test "$(q "select count(*) from metrics where run_id='a' and split='val' and name='hard.active_frac'")" = 1
check "train.log gives the three conventions" grep -q "the paper's α (soft, training batches): mean of 3 evaluations" "$R/runs/a/train.log"
check "a dense run logs no train/alpha_paper" \
    test "$(q "select count(*) from metrics where run_id='p' and name like 'alpha_paper%'")" = 0

# ---- 5. UTF-8 characters as tokens (data.tokenizer = utf8) on a small corpus written here ----
for i in $(seq 1 400); do printf 'caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac %d \xf0\x9f\x98\x80\n' "$i"; done > "$GATELAB_DATA/u.txt"
printf 'broken \xe6\x97 and \xff here\n' >> "$GATELAB_DATA/u.txt"
want_v=$(python3 -c "import sys; print(len(set(open(sys.argv[1],'rb').read().decode('utf-8','replace'))))" "$GATELAB_DATA/u.txt" 2>/dev/null)
U8="data.file=u.txt data.tokenizer=utf8 data.train_frac=0.8 data.val_frac=0.1"
"$BIN" train "$TINY" $U8 --run-id u --results "$R" --quiet > /dev/null 2>&1
check "a utf8 run trains (exit 0)" test $? -eq 0
V=$(q "select value from params where run_id='u' and key='model.vocab_size'")
check "its vocabulary is the file's distinct characters (V = $V; CPython's decode with errors=replace: ${want_v:-not run})" \
    test -n "$V" -a "$V" -lt 40 -a "${want_v:-$V}" = "$V"
check "train.log gives the characters and the split in characters" grep -q "data.tokenizer = utf8: $V characters" "$R/runs/u/train.log"
check "the checkpoint is format version 4 (with the code points)" test "$(od -An -tu4 -j8 -N4 "$R/runs/u/ckpt" | tr -d ' ')" = 4
out=$("$BIN" eval u --results "$R" --split test)
check "eval --split test of the utf8 run gives the test headline" \
    awk -v a="$(echo "$out" | sed -n 's/.*"soft":{"loss":\([0-9.e-]*\).*/\1/p')" \
        -v b="$(q "select value from metrics where run_id='u' and split='test' and name='final.loss'")" \
        'BEGIN{d=a-b; if(d<0)d=-d; exit !(a != "" && d < 1e-6)}'
"$BIN" sample u --results "$R" --prompt "$(printf 'caf\xc3\xa9 ')" --tokens 40 --temperature 1 --seed 7 > "$W/us.txt" 2> "$W/us.err"
check "sample with a multi-byte prompt exits 0" test $? -eq 0
check "the sample starts with the prompt" bash -c "head -c 6 '$W/us.txt' | cmp -s - <(printf 'caf\xc3\xa9 ')"
if command -v iconv > /dev/null; then
    check "the sample is valid UTF-8 (whole characters only)" iconv -f UTF-8 -t UTF-8 "$W/us.txt" -o /dev/null
else
    skip "the sample's UTF-8 validity (iconv is not installed)"
fi
"$BIN" sample u --results "$R" --prompt "$(printf '\xce\xa9')" --tokens 4 > /dev/null 2> "$W/us2.err"
check "a prompt character the run never saw is refused, named (U+03A9)" grep -q "U+03A9" "$W/us2.err"
GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" $U8 --run-id uk --results "$R" --quiet > /dev/null 2>&1
"$BIN" train "$TINY" $U8 --resume uk --results "$R" --quiet > /dev/null 2>&1
check "kill -9 + resume of a utf8 run ends bit for bit ($(last_hex uk) = $(last_hex u))" test -n "$(last_hex u)" -a "$(last_hex uk)" = "$(last_hex u)"
cp "$GATELAB_DATA/u.txt" "$W/u.keep"; printf '\xce\xa9\n' >> "$GATELAB_DATA/u.txt"
out=$("$BIN" eval u --results "$R" 2>&1)
check "eval refuses a utf8 run whose file now has other characters" \
    bash -c "echo \"\$1\" | grep -q 'was trained on the $V characters'" _ "$out"
cp "$W/u.keep" "$GATELAB_DATA/u.txt"
out=$("$BIN" train "$TINY" data.task=copy data.tokenizer=utf8 model.seq_len=20 --run-id bad --results "$R" --quiet 2>&1)
check "data.tokenizer = utf8 on a synthetic task is refused" \
    bash -c "echo \"\$1\" | grep -q 'data.tokenizer = utf8 applies to data.task = text, not copy'" _ "$out"
"$BIN" export u --results "$R" --out "$W/u.h5" > /dev/null 2>&1
if command -v h5dump > /dev/null; then
    check "export writes the utf8 run's code points (code_points, $V uint32)" \
        bash -c "h5dump -H -d code_points '$W/u.h5' | grep -q 'SIMPLE { ( $V ) / ( $V ) }'"
else
    skip "export's code_points (h5dump is not installed)"
fi
out=$("$BIN" train "$TINY" $U8 data.train_len=100 --run-id bad --results "$R" --quiet 2>&1)
check "data.train_len without data.val_len is refused" \
    bash -c "echo \"\$1\" | grep -q 'data.train_len (100) and data.val_len (0) go together'" _ "$out"
out=$("$BIN" train "$TINY" data.tokenizer=bpe data.vocab_size=300 data.train_len=100 data.val_len=100 --run-id bad --results "$R" --quiet 2>&1)
check "data.train_len with the BPE tokenizer is refused" \
    bash -c "echo \"\$1\" | grep -q 'data.train_len and data.val_len apply to data.task = text with data.tokenizer = char or utf8'" _ "$out"
