#!/usr/bin/env bash
# sample_nul.sh — `gatelab sample --json` emits the whole generated text
# (issue 28.7): a run trained on text in which every third byte is NUL
# generates NUL bytes, and the JSON's "text" holds all "tokens" characters
# (NUL written \u0000), not the text cut at the first NUL.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data" OMP_NUM_THREADS=1
make_corpus "$W/plain.txt"
mkdir -p "$GATELAB_DATA"
python3 -c '
import sys
b = open(sys.argv[1], "rb").read()  # a NUL after every second byte: one byte in three
open(sys.argv[2], "wb").write(bytes(x for i, c in enumerate(b) for x in ((c, 0) if i % 2 else (c,))))
' "$W/plain.txt" "$GATELAB_DATA/corpus.txt"
"$BIN" train "$TINY" --run-id nul --results "$W/r" --quiet > /dev/null 2>&1
check "train on text with NUL bytes (exit $?)" test -f "$W/r/runs/nul/ckpt"
"$BIN" sample nul --tokens 400 --json --seed 3 --results "$W/r" > "$W/s.json" 2> "$W/s.err"; rc=$?
check "sample --json (exit $rc)" test $rc -eq 0
check "the text holds all 400 generated characters, NUL bytes included" python3 - "$W/s.json" <<'PY'
import json, sys
o = json.loads(open(sys.argv[1]).readline())
t = o["text"]
print(o["tokens"], len(t), t.count("\0"), end=" ")
sys.exit(0 if o["tokens"] == 400 and len(t) == 400 and t.count("\0") > 0 else 1)
PY
check "NUL is written as \\u0000 in the JSON line" grep -q '\\u0000' "$W/s.json"
