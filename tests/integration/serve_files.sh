#!/usr/bin/env bash
# serve_files.sh — `gatelab serve` and the files it reads (issue 45, items 10 and 11):
#   - a BPE run's probe text: token ids above 255 decode through the run's merges, from the trace's
#     /vocab and, for a trace without one, from the checkpoint; the text joined is the corpus text
#     (no byte read past a 256-entry table, which UBSan reported and which killed the server);
#   - a trace.h5 or ckpt that is a FIFO (or a folder) is never opened for reading: the request
#     answers at once, saying so, later requests are answered, and SIGTERM stops the server.
# Every request has a time limit; the server is killed on exit.
set -u
source "$(dirname "$0")/lib.sh"
if ! command -v curl > /dev/null; then
    skip "gatelab serve's files (no curl: apt-get install curl)"
    exit 0
fi
PY="${GATELAB_PYTHON:-/usr/bin/python3}"
scratch
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill -9 "$SERVER_PID" 2> /dev/null; rm -rf "$W"' EXIT
ok=1
"$BIN" train "$TINY" data.tokenizer=bpe data.vocab_size=300 train.steps=20 --run-id bpe --results "$R" --quiet \
    > "$W/train.log" 2>&1 || ok=0
"$BIN" train "$TINY" train.steps=20 --run-id fifo --results "$R" --quiet > "$W/train.log" 2>&1 || ok=0
cp -r "$R/runs/bpe" "$R/runs/bpe_old" && sqlite3 "$R/gatelab.db" "
    insert into runs select 'bpe_old', experiment_id, name, config_text, config_hash, seed, git_commit, git_dirty, host,
        pid, status, created_time, start_time, end_time, heartbeat, attempts, exit_code, error, deleted_time
    from runs where run_id = 'bpe'" || ok=0
check "train a BPE run and a char run (and a copy of the BPE run as bpe_old)" test $ok = 1
[ $ok = 1 ] || { tail -20 "$W/train.log"; exit 1; }
# bpe_old: a trace written before traces carried their vocabulary (no /vocab group)
if "$PY" -c 'import h5py' 2> /dev/null; then
    "$PY" -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r+"); del f["vocab"]; f.close()' "$R/runs/bpe_old/trace.h5"
    check "bpe_old's trace has no /vocab" bash -c "! h5dump -H '$R/runs/bpe_old/trace.h5' | grep -q 'GROUP \"vocab\"'"
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$BIN" serve --port "$PORT" --results "$R" > "$W/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$PORT/api/runs" && break; sleep 0.1; done
U="http://127.0.0.1:$PORT"
get() { curl -s -m 5 -o "$W/body" -w '%{http_code}' "$U$1"; }

for run in bpe bpe_old; do
    [ "$run" = bpe_old ] && [ ! -f "$R/runs/bpe_old/trace.h5" ] && continue
    c=$(get "/api/run?run=$run")
    check "/api/run?run=$run: 200 ($c), the server alive" bash -c "[ '$c' = 200 ] && kill -0 $SERVER_PID"
    check "/api/run?run=$run: the probe text decodes through the merges (ids ≥ 256 present) into corpus text" python3 -c "
import json, sys
j = json.load(open('$W/body'))
text = ''.join(j['trace']['probe_text'])
toks = j['trace']['probe_text']
corpus = open('$GATELAB_DATA/corpus.txt', encoding='utf-8').read()
merged = sum(len(t.encode()) > 1 for t in toks)
print('   ', repr(text[:60]), len(toks), 'tokens,', merged, 'of more than one byte', file=sys.stderr)
sys.exit(not (merged > 0 and len(text) > 40 and text[:40] in corpus))"
done

# a FIFO in place of a run's trace (and ckpt): nothing may block on it
mv "$R/runs/fifo/trace.h5" "$R/runs/fifo/trace.h5.real"
mkfifo "$R/runs/fifo/trace.h5"
t0=$(date +%s.%N)
c=$(get "/api/run?run=fifo")
check "/api/run on a run whose trace.h5 is a FIFO: answered at once ($c), saying it is not a regular file" \
    bash -c "[ '$c' = 403 ] && grep -q 'not a regular file' '$W/body'"
check "/api/trace on it: 403, not a hang" test "$(get "/api/trace?run=fifo&gate=alpha")" = 403
check "…and later requests are answered (/api/runs: 200)" test "$(get /api/runs)" = 200
rm "$R/runs/fifo/trace.h5" && mkdir "$R/runs/fifo/trace.h5"
check "a folder in place of trace.h5: 403" test "$(get "/api/trace?run=fifo&gate=alpha")" = 403
rmdir "$R/runs/fifo/trace.h5" && mv "$R/runs/fifo/trace.h5.real" "$R/runs/fifo/trace.h5"
if [ -f "$R/runs/bpe_old/trace.h5" ]; then   # the checkpoint is read only for a trace without /vocab
    mv "$R/runs/bpe_old/ckpt" "$R/runs/bpe_old/ckpt.real" && mkfifo "$R/runs/bpe_old/ckpt"
    c=$(get "/api/run?run=bpe_old")
    check "/api/run when the checkpoint is a FIFO: answered at once ($c), probe text null" python3 -c "
import json, sys; sys.exit(not ('$c' == '200' and json.load(open('$W/body'))['trace']['probe_text'] is None))"
fi
check "every request above took under 5 s (they are bounded by curl -m 5)" true
kill -TERM "$SERVER_PID"
for _ in $(seq 50); do kill -0 "$SERVER_PID" 2> /dev/null || break; sleep 0.1; done
check "SIGTERM stops the server within 5 s" bash -c "! kill -0 $SERVER_PID 2> /dev/null"
wait "$SERVER_PID" 2> /dev/null
SERVER_PID=""
check "the server's log has no sanitizer or runtime error (make asan: UBSan read past the byte table here)" \
    bash -c "! grep -qE 'runtime error|AddressSanitizer|UndefinedBehaviorSanitizer' '$W/serve.log'"
