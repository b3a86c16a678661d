#!/usr/bin/env bash
# fetch_data.sh — `make data`: download the data sets the experiments name into
# $GATELAB_DATA when it is set (the first folder gatelab looks in), else data/
# in the clone (or --dest DIR), from their canonical public sources, and check
# every file against its SHA-256 before it is put in place.
#
#   tinyshakespeare.txt       char-rnn's input.txt (karpathy/char-rnn, pinned commit), 1,115,394 bytes
#   enwik8                    the Hutter Prize file: enwik8.zip from mattmahoney.net, unzipped, 10^8 bytes
#   enwik8_first4000000.txt   its first 4,000,000 bytes (what the README's enwik8 example and the
#                             data tests name; the same bytes as the shared prefix, same SHA-256)
#
# A download goes to DEST/.NAME.part and resumes from there (curl -C -, or
# wget -c) when interrupted; only a file whose SHA-256 matches is renamed into
# place, and a file already there is checked, never overwritten.  When a host
# cannot be reached the script says the machine looks offline, keeps the
# partial file and exits 3; nothing else is touched.
#
#   scripts/fetch_data.sh [--dest DIR] [--check] [NAME ...]     (default: all three)
#     --check   only verify the files already in DEST; download nothing
#
# For mirrors and tests: GATELAB_FETCH_<KEY>_URL and GATELAB_FETCH_<KEY>_SHA256
# replace a source and its expected sum (KEY: TINYSHAKESPEARE, ENWIK8 — the
# zip's URL and the unzipped file's sum — and ENWIK8_PREFIX, the prefix's sum).
# Exit: 0 all present and verified, 1 a checksum or tool failure, 2 usage,
# 3 offline.  `make data` passes none of these on: make itself exits 2 when the
# script fails, after a line "make: *** [Makefile:N: data] Error 3" that holds
# the script's code (run scripts/fetch_data.sh directly to get it).
set -uo pipefail

start_dir=$PWD
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/data"
if [ -n "${GATELAB_DATA:-}" ]; then  # relative: to where the script was started, as gatelab reads it
    dest=$GATELAB_DATA; case "$dest" in /*) ;; *) dest="$start_dir/$dest" ;; esac
fi
check_only=0
names=()
while [ $# -gt 0 ]; do
    case "$1" in
        --dest) [ $# -ge 2 ] || { echo "fetch_data: --dest needs a folder" >&2; exit 2; }
                dest=$2; case "$dest" in /*) ;; *) dest="$start_dir/$dest" ;; esac; shift 2 ;;
        --check) check_only=1; shift ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        tinyshakespeare.txt|enwik8|enwik8_first4000000.txt) names+=("$1"); shift ;;
        *) echo "fetch_data: unknown argument '$1' (names: tinyshakespeare.txt enwik8 enwik8_first4000000.txt)" >&2; exit 2 ;;
    esac
done
[ ${#names[@]} -gt 0 ] || names=(tinyshakespeare.txt enwik8 enwik8_first4000000.txt)

# Sources and sums (shared/data/README.md documents the same files and values).
TS_URL=${GATELAB_FETCH_TINYSHAKESPEARE_URL:-https://raw.githubusercontent.com/karpathy/char-rnn/6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e/data/tinyshakespeare/input.txt}
TS_SHA=${GATELAB_FETCH_TINYSHAKESPEARE_SHA256:-86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed}
E8_URL=${GATELAB_FETCH_ENWIK8_URL:-http://mattmahoney.net/dc/enwik8.zip}
E8_SHA=${GATELAB_FETCH_ENWIK8_SHA256:-2b49720ec4d78c3c9fabaee6e4179a5e997302b3a70029f30f2d582218c024a8}
E8P_SHA=${GATELAB_FETCH_ENWIK8_PREFIX_SHA256:-9f9ca3a41e2b87a0268d00380577e2c308e07959b22a94c8d7b1e8901bdefc37}
E8P_BYTES=4000000

say() { echo "fetch_data: $*"; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
host_of() { local h=${1#*://}; echo "${h%%/*}"; }

offline() { # url, tool's message
    [ "$made_dest" = 1 ] && rmdir "$dest" 2> /dev/null  # only if we made it and it is empty
    say "cannot reach $(host_of "$1") ($2): this machine looks offline."
    say "nothing was changed; a partial download stays in $dest/.*.part and resumes when you run \`make data\` again."
    say "without the network: copy the files from a machine that has them into $dest/ (or any folder, then set"
    say "GATELAB_DATA to it); \`gatelab data\` shows where gatelab looks.  \`make test\` and \`make demo\` work without them."
    exit 3
}

# download URL to PART, resuming what PART already holds
download() {
    local url=$1 part=$2 rc msg
    local have=0; [ -f "$part" ] && have=$(stat -c %s "$part")
    [ "$have" -gt 0 ] && say "resuming $(basename "$part") at byte $have"
    if command -v curl > /dev/null; then
        msg=$(curl -fL --connect-timeout 20 --retry 2 -sS -C - -o "$part" "$url" 2>&1 | tail -n 1); rc=$?
        msg=${msg#curl: }; msg=${msg#(*) }
        case $rc in
            0) return 0 ;;
            5|6|7|28|35|56) offline "$url" "curl exit $rc: $msg" ;;
            *) say "download of $url failed (curl exit $rc: $msg); the partial file $part is kept"; exit 1 ;;
        esac
    elif command -v wget > /dev/null; then
        msg=$(wget -q -c -T 20 -t 2 -O "$part" "$url" 2>&1); rc=$?
        case $rc in
            0) return 0 ;;
            4) offline "$url" "wget: network failure ${msg}" ;;
            *) say "download of $url failed (wget exit $rc ${msg}); the partial file $part is kept"; exit 1 ;;
        esac
    else
        say "neither curl nor wget is installed: apt-get install curl"; exit 1
    fi
}

# put PART in place as FILE if its sum is SHA; else delete it and fail
install_checked() {
    local part=$1 file=$2 sha=$3 got
    got=$(sha_of "$part")
    if [ "$got" != "$sha" ]; then
        rm -f "$part"
        say "$(basename "$file"): SHA-256 mismatch (got $got, expected $sha); the download was deleted — run again, or check the source"
        exit 1
    fi
    mv -f "$part" "$file"
    say "$(basename "$file"): ok, SHA-256 $sha ($(stat -c %s "$file") bytes)"
}

# 0 when FILE is there with sum SHA; exit 1 when it is there with another sum; 1 when absent
present() {
    local file=$1 sha=$2 got
    [ -f "$file" ] || return 1
    got=$(sha_of "$file")
    if [ "$got" = "$sha" ]; then say "$(basename "$file"): already there, SHA-256 ok"; return 0; fi
    say "$file has SHA-256 $got, expected $sha: it is not the file the experiments name."
    say "move it away and run \`make data\` again (it is never overwritten)."
    exit 1
}

missing_in_check() { say "$1: missing in $dest (run \`make data\` to download it)"; exit 1; }

fetch_tinyshakespeare() {
    local f="$dest/tinyshakespeare.txt"
    present "$f" "$TS_SHA" && return 0
    [ $check_only = 1 ] && missing_in_check tinyshakespeare.txt
    say "tinyshakespeare.txt: downloading $TS_URL"
    download "$TS_URL" "$dest/.tinyshakespeare.txt.part"
    install_checked "$dest/.tinyshakespeare.txt.part" "$f" "$TS_SHA"
}

unzip_to() { # zip member out
    if command -v unzip > /dev/null; then unzip -p "$1" "$2" > "$3"
    elif command -v python3 > /dev/null; then
        python3 -c 'import sys, zipfile, shutil; shutil.copyfileobj(zipfile.ZipFile(sys.argv[1]).open(sys.argv[2]), open(sys.argv[3], "wb"))' "$1" "$2" "$3"
    else say "unzip is not installed: apt-get install unzip"; return 1
    fi
}

fetch_enwik8() {
    local f="$dest/enwik8" zip="$dest/enwik8.zip"
    present "$f" "$E8_SHA" && return 0
    [ $check_only = 1 ] && missing_in_check enwik8
    if [ ! -f "$zip" ]; then
        say "enwik8: downloading $E8_URL (about 36 MB)"
        download "$E8_URL" "$dest/.enwik8.zip.part"
        mv -f "$dest/.enwik8.zip.part" "$zip"
    fi
    say "enwik8: unzipping $zip"
    if ! unzip_to "$zip" enwik8 "$dest/.enwik8.part"; then
        rm -f "$zip" "$dest/.enwik8.part"
        say "enwik8: $zip is not a readable zip holding enwik8; it was deleted — run again"
        exit 1
    fi
    install_checked "$dest/.enwik8.part" "$f" "$E8_SHA"
    rm -f "$zip"
}

fetch_enwik8_prefix() {
    local f="$dest/enwik8_first4000000.txt"
    present "$f" "$E8P_SHA" && return 0
    [ $check_only = 1 ] && missing_in_check enwik8_first4000000.txt
    [ -f "$dest/enwik8" ] || fetch_enwik8
    head -c "$E8P_BYTES" "$dest/enwik8" > "$dest/.enwik8_first4000000.txt.part"
    install_checked "$dest/.enwik8_first4000000.txt.part" "$f" "$E8P_SHA"
}

made_dest=0; [ -d "$dest" ] || made_dest=1
mkdir -p "$dest" || { say "cannot create $dest"; exit 1; }
for n in "${names[@]}"; do
    case $n in
        tinyshakespeare.txt) fetch_tinyshakespeare ;;
        enwik8) fetch_enwik8 ;;
        enwik8_first4000000.txt) fetch_enwik8_prefix ;;
    esac
done
say "done: ${names[*]} in $dest (gatelab finds them there; \`gatelab data\` lists the lookup)"
