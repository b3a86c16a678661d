#!/usr/bin/env bash
# bpe.sh — data.tokenizer = bpe end to end with the real binary on the tests'
# own corpus (tests/corpus.h): a tiny SATFormer run trains with a byte-level
# BPE, repeats bit for bit, and a run killed after a checkpoint resumes bit for
# bit with the stored merges (never retrained); `sample` decodes its tokens to
# text, `eval --text` reads a file through the run's tokenizer, `analyze` and
# `ablate` print per-category rows, and the trace's /vocab (read with h5dump
# alone) decodes the probe tokens to the validation text.  A char run's trace
# carries /vocab too.  Bad settings name the key.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"
BPE=(data.tokenizer=bpe data.vocab_size=384 model.value_residual=satformer model.n_kv_head=2)

"$BIN" train "$TINY" "${BPE[@]}" --run-id b --results "$R" --quiet > "$W/b.out" 2>&1
check "a tiny BPE run finishes (exit $?)" test -s "$R/runs/b/ckpt"
check "train.log says the merges were trained on the train split" grep -q "128 merges (vocabulary 384) trained on the train split" "$R/runs/b/train.log"
first=$(sed -n 's/^step 0 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/b/train.log" | head -1)
final=$(sed -n 's/^step 40 | val loss ([0-9]*-token probe) \([0-9.]*\).*/\1/p' "$R/runs/b/train.log" | tail -1)
check "BPE validation loss falls ($first -> $final nats/token)" awk -v a="$first" -v b="$final" 'BEGIN{exit !(b + 0.3 < a)}'
"$BIN" train "$TINY" "${BPE[@]}" --run-id b2 --results "$R" --quiet > /dev/null 2>&1
hb=$(last_hex b); hb2=$(last_hex b2)
check "two identical BPE runs agree bit for bit ($hb = $hb2)" test -n "$hb" -a "$hb" = "$hb2"

GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" "${BPE[@]}" --run-id k --results "$R" --quiet > /dev/null 2>&1
check "the BPE run died of SIGKILL after its step-20 checkpoint" test -s "$R/runs/k/ckpt"
"$BIN" train "$TINY" "${BPE[@]}" --resume k --results "$R" --quiet > "$W/k.out" 2>&1
check "the resume exits 0" test $? -eq 0
hk=$(last_hex k)
check "kill -9 + resume of a BPE run ends bit for bit like never stopping ($hk = $hb)" test -n "$hk" -a "$hk" = "$hb"
check "the resume took the merges from the checkpoint (not retrained)" grep -q "from the checkpoint (not retrained)" "$R/runs/k/train.log"
check "the checkpoint is format version 3 (with the tokenizer section)" \
    test "$(od -An -tu4 -j8 -N4 "$R/runs/b/ckpt" | tr -d ' ')" = 3

# sample: tokens decoded to text through the stored merges
"$BIN" sample b --results "$R" --prompt "ROMEO:" --tokens 40 --temperature 1 --seed 7 > "$W/s.txt" 2> "$W/s.err"
check "sample exits 0" test $? -eq 0
nb=$(wc -c < "$W/s.txt")
check "sample prints the prompt, then text: 40 tokens decode to more than 40 bytes ($nb with the prompt)" \
    bash -c "head -c 6 '$W/s.txt' | grep -q '^ROMEO:' && test $nb -gt 47"
"$BIN" sample b --results "$R" --prompt "ROMEO:" --tokens 40 --temperature 1 --seed 7 --json > "$W/s.json"
# (after 40 steps a byte the corpus lacks may still be drawn at temperature 1; JSON shows such a byte as
# jsonl.c does, so the texts are compared when the sample is valid UTF-8)
check "sample --json: 40 tokens, the same text" python3 -c "
import json,sys
j=json.load(open('$W/s.json')); b=open('$W/s.txt','rb').read()
try: same = b.decode() == 'ROMEO:'+j['text']+'\n'
except UnicodeDecodeError: same = len(j['text']) > 0
sys.exit(0 if same and j['tokens']==40 else 1)"
# issue 45 item 7: the JSON text holds every byte of the 40 tokens, not the first 40 (jsonl.c writes a byte
# that is not UTF-8 as one U+FFFD, so count those as one byte each)
check "sample --json on a BPE run: the text is whole ($(python3 -c "import json; print(len(json.load(open('$W/s.json'))['text']))" 2>&1) characters, $(( $(wc -c < "$W/s.txt") - 7 )) bytes printed)" python3 -c "
import json,sys
t=json.load(open('$W/s.json'))['text']; b=open('$W/s.txt','rb').read()
n=len(t.encode()) - 2*t.count('\ufffd')
sys.exit(0 if n == len(b) - 7 and n > 40 else 1)"

# eval --text through the run's tokenizer; bits per byte, not per token
head -c 20000 "$GATELAB_DATA/corpus.txt" > "$W/t.txt"
"$BIN" eval b --results "$R" --text "$W/t.txt" > "$W/e.json" 2> "$W/e.err"
check "eval --text exits 0 on a BPE run" test $? -eq 0
check "eval --text: bpc is per byte (below loss / ln 2 since a token holds several bytes)" python3 -c "
import json,math,sys
s=json.load(open('$W/e.json'))['soft']
sys.exit(0 if 0 < s['bpc'] < s['loss']/math.log(2)*0.7 else 1)"

# analyze and ablate: per-category rows through the category table
"$BIN" analyze b --results "$R" > "$W/an.out" 2> "$W/an.err"
check "analyze exits 0 on a BPE run" test $? -eq 0
check "analyze prints α per category (struct, funct, semant columns)" grep -qE "struct +funct +semant" "$W/an.out"
check "analyze counts the probe tokens of every category" \
    grep -qE "probe tokens: [1-9][0-9]* structural, [1-9][0-9]* functional, [1-9][0-9]* semantic" "$W/an.out"
check "analyze writes alpha_categories.tsv" test -s "$R/runs/b/analysis/alpha_categories.tsv"
"$BIN" ablate b --results "$R" --mode zero > "$W/ab.out" 2> "$W/ab.err"
check "ablate --mode zero exits 0 on a BPE run" test $? -eq 0

# the trace alone decodes the probe tokens: /vocab with h5dump, no gatelab
T5="$R/runs/b/trace.h5"
check "h5dump shows /vocab (tokenizer bpe, 384 tokens)" \
    bash -c "h5dump -g /vocab '$T5' | grep -q '\"bpe\"' && h5dump -a /vocab/n_vocab '$T5' | grep -q '(0): 384'"
for d in offset bytes; do h5dump -d /vocab/$d -b LE -o "$W/$d.bin" "$T5" > /dev/null 2>&1; done
h5dump -d /probe/tokens -b LE -o "$W/tokens.bin" "$T5" > /dev/null 2>&1
check "the probe tokens decode, with /vocab alone, to the start of the validation text" python3 -c "
import struct,sys
off=open('$W/offset.bin','rb').read(); off=struct.unpack('<%di'%(len(off)//4),off)
by=open('$W/bytes.bin','rb').read()
tk=open('$W/tokens.bin','rb').read(); tk=struct.unpack('<%di'%(len(tk)//4),tk)
text=b''.join(by[off[t]:off[t+1]] for t in tk[:32])
corpus=open('$GATELAB_DATA/corpus.txt','rb').read()
val=corpus[int(len(corpus)*0.9):]
sys.exit(0 if len(off)==385 and len(text)>32 and val.startswith(text) else 1)"

# a char run carries /vocab too
"$BIN" train "$TINY" --run-id c --results "$R" --quiet > /dev/null 2>&1
nv=$(LC_ALL=C od -An -v -tu1 "$GATELAB_DATA/corpus.txt" | tr -s ' ' '\n' | grep -v '^$' | sort -u | wc -l)
check "a char run's trace has /vocab (tokenizer char, $nv tokens: the file's distinct bytes)" \
    bash -c "h5dump -g /vocab '$R/runs/c/trace.h5' | grep -q '\"char\"' && h5dump -a /vocab/n_vocab '$R/runs/c/trace.h5' | grep -q '(0): $nv\$'"
check "a char checkpoint stays format version 2" test "$(od -An -tu4 -j8 -N4 "$R/runs/c/ckpt" | tr -d ' ')" = 2
# a run started before data.tokenizer existed (its config.ini lacks the two keys) resumes, bit for bit
GATELAB_KILL_AFTER_CKPT=20 "$BIN" train "$TINY" --run-id o --results "$R" --quiet > /dev/null 2>&1
sed -i '/^tokenizer = /d; /^vocab_size = 0$/d' "$R/runs/o/config.ini"
"$BIN" train "$TINY" --resume o --results "$R" --quiet > "$W/o.out" 2>&1
check "a run whose config.ini predates data.tokenizer resumes (exit $?) without a config change" \
    bash -c "! grep -q 'differs' '$W/o.out'"
ho=$(last_hex o); hc=$(last_hex c)
check "... and ends bit for bit like the char run never stopped ($ho = $hc)" test -n "$ho" -a "$ho" = "$hc"

# bad settings name the key
expect_fail() { # what, pattern, command...
    local what=$1 pat=$2; shift 2
    "$@" > "$W/err.out" 2>&1; local rc=$?
    if [ $rc -ne 0 ] && grep -qiE "$pat" "$W/err.out"; then pass "$what"; else fail "$what (rc $rc: $(head -c 300 "$W/err.out"))"; fi
}
expect_fail "tokenizer = bpe without data.vocab_size" "data.vocab_size = 0 with data.tokenizer = bpe" \
    "$BIN" train "$TINY" data.tokenizer=bpe --results "$R"
expect_fail "data.vocab_size with the char tokenizer" "data.vocab_size = 300 applies to data.tokenizer = bpe" \
    "$BIN" train "$TINY" data.vocab_size=300 --results "$R"
expect_fail "data.vocab_size out of range" "vocab_size.*between 0 and 8192" \
    "$BIN" train "$TINY" data.tokenizer=bpe data.vocab_size=9000 --results "$R"
expect_fail "a vocabulary the training split cannot reach" "data.vocab_size = 8000: the training split" \
    "$BIN" train "$TINY" data.tokenizer=bpe data.vocab_size=8000 --results "$R"
expect_fail "an unknown tokenizer lists the choices" "tokenizer.*char, bpe" \
    "$BIN" train "$TINY" data.tokenizer=wordpiece --results "$R"
