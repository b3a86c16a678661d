#!/usr/bin/env bash
# fetch_data.sh — `make data` (scripts/fetch_data.sh) without touching the
# network: sources are local file:// URLs and an unreachable local port
# (127.0.0.1:9), through the script's GATELAB_FETCH_* overrides.
#   - offline: a clear message, exit 3, nothing written
#   - a partial download resumes where it stopped; the SHA-256 is checked
#     before the file is put in place; a wrong sum deletes the download
#   - a file already there is verified and never overwritten
#   - GATELAB_DATA, when set, is where the files go (no --dest needed)
#   - enwik8: zip -> enwik8 -> its 4,000,000-byte prefix, each checked
#   - where the real files are (gatelab data), their committed sums match
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FETCH="$ROOT/scripts/fetch_data.sh"
REAL_TS=$(data_path tinyshakespeare.txt)
REAL_E8P=$(data_path enwik8_first4000000.txt)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
make_corpus "$W/src.txt" 300000
SRC_SHA=$(sha256sum "$W/src.txt" | cut -d' ' -f1)
unset GATELAB_FETCH_TINYSHAKESPEARE_URL GATELAB_FETCH_TINYSHAKESPEARE_SHA256 GATELAB_FETCH_ENWIK8_URL \
      GATELAB_FETCH_ENWIK8_SHA256 GATELAB_FETCH_ENWIK8_PREFIX_SHA256

# offline
GATELAB_FETCH_TINYSHAKESPEARE_URL=http://127.0.0.1:9/input.txt "$FETCH" --dest "$W/off" tinyshakespeare.txt > "$W/off.out" 2>&1
rc=$?
check "offline: exit 3 (got $rc)" test $rc -eq 3
check "offline: says the machine looks offline, names the host and what to do" \
    bash -c "grep -q 'cannot reach 127.0.0.1:9' '$W/off.out' && grep -q 'looks offline' '$W/off.out' && grep -q 'GATELAB_DATA' '$W/off.out'"
check "offline: no data file written" test ! -e "$W/off/tinyshakespeare.txt"
mkdir -p "$W/mine"
GATELAB_DATA="$W/mine" GATELAB_FETCH_TINYSHAKESPEARE_URL=http://127.0.0.1:9/input.txt "$FETCH" tinyshakespeare.txt > /dev/null 2>&1
check "offline: an (empty) GATELAB_DATA folder that was already there is kept (exit $?)" test -d "$W/mine"

# resume a partial download, verify, put in place
mkdir -p "$W/d1"; head -c 100000 "$W/src.txt" > "$W/d1/.tinyshakespeare.txt.part"
export GATELAB_FETCH_TINYSHAKESPEARE_URL="file://$W/src.txt"
GATELAB_FETCH_TINYSHAKESPEARE_SHA256=$SRC_SHA "$FETCH" --dest "$W/d1" tinyshakespeare.txt > "$W/d1.out" 2>&1
check "resume: exit 0" test $? -eq 0
check "resume: continues at byte 100000" grep -q "resuming .tinyshakespeare.txt.part at byte 100000" "$W/d1.out"
check "resume: the file is whole and identical to the source, no .part left" \
    bash -c "cmp -s '$W/src.txt' '$W/d1/tinyshakespeare.txt' && test ! -e '$W/d1/.tinyshakespeare.txt.part'"
GATELAB_FETCH_TINYSHAKESPEARE_SHA256=$SRC_SHA "$FETCH" --dest "$W/d1" --check tinyshakespeare.txt > "$W/d1c.out" 2>&1
check "--check: a verified file is reported ok (exit 0)" bash -c "test $? -eq 0 && grep -q 'already there, SHA-256 ok' '$W/d1c.out'"

# GATELAB_DATA set and no --dest: the files go there (gatelab looks there first), not into data/ of the clone
ts_in_clone_before=$(stat -c %Y "$ROOT/data/tinyshakespeare.txt" 2> /dev/null || echo none)
(cd "$W" && GATELAB_DATA=envdata GATELAB_FETCH_TINYSHAKESPEARE_SHA256=$SRC_SHA "$FETCH" tinyshakespeare.txt) > "$W/env.out" 2>&1
rc=$?
check "GATELAB_DATA (relative, to where it was started): the file goes into it (exit $rc)" \
    bash -c "test $rc -eq 0 && cmp -s '$W/src.txt' '$W/envdata/tinyshakespeare.txt' && grep -q 'in $W/envdata' '$W/env.out'"
check "GATELAB_DATA: data/ of the clone is left alone" \
    test "$(stat -c %Y "$ROOT/data/tinyshakespeare.txt" 2> /dev/null || echo none)" = "$ts_in_clone_before"
GATELAB_DATA="$W/envdata" "$BIN" data tinyshakespeare.txt > "$W/env_found.out" 2>&1
check "gatelab data finds the file make data put into GATELAB_DATA" grep -q "$W/envdata/tinyshakespeare.txt" "$W/env_found.out"

# a wrong sum: the download is deleted, nothing put in place
GATELAB_FETCH_TINYSHAKESPEARE_SHA256=0000000000000000000000000000000000000000000000000000000000000000 \
    "$FETCH" --dest "$W/d2" tinyshakespeare.txt > "$W/d2.out" 2>&1
rc=$?
check "wrong SHA-256: exit 1 with 'SHA-256 mismatch' (got $rc)" bash -c "test $rc -eq 1 && grep -q 'SHA-256 mismatch' '$W/d2.out'"
check "wrong SHA-256: no file and no partial file left" \
    bash -c "test ! -e '$W/d2/tinyshakespeare.txt' -a ! -e '$W/d2/.tinyshakespeare.txt.part'"

# a file already there with other bytes is not overwritten
mkdir -p "$W/d3"; echo "mine" > "$W/d3/tinyshakespeare.txt"
GATELAB_FETCH_TINYSHAKESPEARE_SHA256=$SRC_SHA "$FETCH" --dest "$W/d3" tinyshakespeare.txt > "$W/d3.out" 2>&1
rc=$?
check "a different file already there: exit 1, left as it was" \
    bash -c "test $rc -eq 1 && test \"\$(cat '$W/d3/tinyshakespeare.txt')\" = mine && grep -q 'never overwritten' '$W/d3.out'"
"$FETCH" --dest "$W/d4" --check enwik8 > "$W/d4.out" 2>&1
check "--check on a missing file: exit 1 naming make data" bash -c "test $? -eq 1 && grep -q 'make data' '$W/d4.out'"

# enwik8: zip -> enwik8 -> prefix
make_corpus "$W/e8/enwik8" 4000100
if command -v zip > /dev/null; then (cd "$W/e8" && zip -q enwik8.zip enwik8); zipped=$?
elif command -v python3 > /dev/null; then (cd "$W/e8" && python3 -m zipfile -c enwik8.zip enwik8); zipped=$?
else zipped=1; fi
if [ "$zipped" -eq 0 ]; then
    E8_SHA=$(sha256sum "$W/e8/enwik8" | cut -d' ' -f1)
    P_SHA=$(head -c 4000000 "$W/e8/enwik8" | sha256sum | cut -d' ' -f1)
    GATELAB_FETCH_ENWIK8_URL="file://$W/e8/enwik8.zip" GATELAB_FETCH_ENWIK8_SHA256=$E8_SHA GATELAB_FETCH_ENWIK8_PREFIX_SHA256=$P_SHA \
        "$FETCH" --dest "$W/d5" enwik8_first4000000.txt > "$W/d5.out" 2>&1
    check "enwik8: zip fetched, unzipped and both files verified (exit $?)" \
        bash -c "cmp -s '$W/e8/enwik8' '$W/d5/enwik8' && test \$(stat -c %s '$W/d5/enwik8_first4000000.txt') -eq 4000000 && test ! -e '$W/d5/enwik8.zip'"
else
    skip "enwik8: zip -> enwik8 -> prefix (neither zip nor python3 here to make a test zip)"
fi

# the committed sums against the real files, where they are
if [ -n "$REAL_TS" ]; then
    GATELAB_FETCH_TINYSHAKESPEARE_URL="file://$REAL_TS" "$FETCH" --dest "$W/real" tinyshakespeare.txt > "$W/real.out" 2>&1
    check "Tiny Shakespeare from $REAL_TS matches the script's SHA-256 (exit $?)" cmp -s "$REAL_TS" "$W/real/tinyshakespeare.txt"
else
    skip "Tiny Shakespeare: the script's SHA-256 against the real file (tinyshakespeare.txt not found; \`make data\` fetches it)"
fi
if [ -n "$REAL_E8P" ]; then
    want=$(sed -n 's/^E8P_SHA=.*:-\([0-9a-f]*\)}$/\1/p' "$FETCH")
    check "enwik8 prefix: the script's SHA-256 is that of $REAL_E8P" test "$(sha256sum "$REAL_E8P" | cut -d' ' -f1)" = "$want"
else
    skip "enwik8 prefix: the script's SHA-256 against the real file (enwik8_first4000000.txt not found; \`make data\` makes it)"
fi
