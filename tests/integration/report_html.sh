#!/usr/bin/env bash
# report_html.sh — `gatelab report RUN|EXPERIMENT --html` on tiny SATFormer
# and TSA runs trained here on the test's own corpus: the page is one file
# with no script and no link to another host, holds the figures (SVG data
# URIs), the tables and one coloured span per probe character; headless
# Chromium renders it, and the screenshot (read by tests/pngcheck.py) has
# figures where the figures are (below the title) and the report's α / depth
# colours inside the probe-text box (not only in the legend above it).  Without chromium or python3 those checks are
# skipped, saying so.
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
scratch
T=(data.file=corpus.txt model.d_model=32 model.n_layer=3 model.n_head=2 model.n_kv_head=2 model.d_ff=64 model.seq_len=32
   train.steps=30 train.batch_size=4 train.threads=1 train.eval_every=10 train.eval_windows=4 train.warmup=5
   log.probe_windows=4 log.experiment=rep log.trace=1)
"$BIN" train "$TINY" "${T[@]}" model.value_residual=satformer --run-id sat --results "$R" --quiet > "$W/t1" 2>&1 &&
"$BIN" train "$TINY" "${T[@]}" model.depth_routing=tsa model.router_init_bias=0 --run-id tsa --results "$R" --quiet > "$W/t2" 2>&1 &&
"$BIN" analyze sat --results "$R" > /dev/null 2>&1
check "train and analyze tiny SATFormer and TSA runs (exit 0)" test $? -eq 0

"$BIN" report sat --html --block 2 --kv-head 1 --results "$R" > "$W/r1" 2>&1
check "report RUN --html exits 0 and names the page" bash -c "test $? -eq 0 && grep -q '$R/report/sat.html' '$W/r1'"
H="$R/report/sat.html"
P=128 # 4 probe windows x 32 characters
check "one page, no script, no link or source on another host" \
    bash -c "test -s '$H' && ! grep -qiE '<script|<link|src=\"https?:|href=\"https?:' '$H'"
check "figures inlined as SVG data URIs (>= 3)" test "$(grep -o 'data:image/svg+xml;base64,' "$H" | wc -l)" -ge 3
check "the loss table is there" grep -q '<h3>loss_by_variant</h3>' "$H"
check "every metric row says what it was measured on (no \"?\"; train rows: the training batches)" \
    bash -c "! grep -q '<td>?</td>' '$H' && grep -q '<td>train</td><td>loss</td>.*<td>training batches up to this step</td>' '$H'"
check "the chosen gate is open: block 2, KV head 1" grep -q '<details open><summary>α of block 2, KV head 1 — chosen' "$H"
n=$(grep -o '<span style="background:#[0-9a-f]\{6\}" title="α (block 2, KV head 1) = [0-9.]*' "$H" | wc -l)
check "one coloured span with its α on hover per probe character ($n = $P)" test "$n" -eq "$P"
check "every gate's view is on the page (2 blocks x 2 KV heads)" test "$(grep -c '<summary>α of block' "$H")" -eq 4
"$BIN" report tsa --html --results "$R" > /dev/null 2>&1
n=$(grep -o 'title="effective depth [0-9.]*' "$R/report/tsa.html" | wc -l)
check "TSA: one span per character coloured by effective depth ($n = $P)" test "$n" -eq "$P"
check "a SATFormer run's page shows no TSA figure (no pareto, no depth_p, no depth map); the TSA run's page has them" \
    bash -c "! grep -qE 'alt=\"(pareto|depth_p|depth_map_tsa)\"' '$H' && grep -q 'alt=\"loss_step\"' '$H' &&
             grep -q 'alt=\"pareto\"' '$R/report/tsa.html' && grep -q 'alt=\"depth_map_tsa\"' '$R/report/tsa.html'"
"$BIN" train "$TINY" "${T[@]}" model.value_residual=headgate log.experiment=hg --run-id hg --results "$R" --quiet > "$W/t3" 2>&1 &&
"$BIN" analyze hg --results "$R" > /dev/null 2>&1 && "$BIN" report hg --html --results "$R" > /dev/null 2>&1
check "headgate (a gate with no token axis): its per-head and per-category tables from the gate table, no probe view" \
    bash -c "grep -q '<h4>g per block and KV head (gatelab analyze)</h4>' '$R/report/hg.html' &&
             grep -q '<h4>g per token category</h4>' '$R/report/hg.html' && ! grep -q '<summary>g of block' '$R/report/hg.html'"
"$BIN" report rep --html --out "$W/rep.html" --results "$R" > "$W/r3" 2>&1
check "report EXPERIMENT --html: both runs' sections" bash -c "test $? -eq 0 && grep -q 'id=\"run-sat\"' '$W/rep.html' && grep -q 'id=\"run-tsa\"' '$W/rep.html'"
"$BIN" report nosuch --html --results "$R" > "$W/r4" 2>&1
check "an unknown target: exit 1 saying it is neither a run nor an experiment" \
    bash -c "test $? -eq 1 && grep -q 'neither a run nor an experiment' '$W/r4'"
"$BIN" report sat --results "$R" --out "$W/plain.html" > "$W/r5" 2>&1
check "without --html: HTML, the one format, is the default (exit 0, the page written)" \
    bash -c "test $? -eq 0 && grep -q 'id=\"run-sat\"' '$W/plain.html'"
"$BIN" report --results "$R" > "$W/r5b" 2>&1
check "no target: usage error (exit 2)" test $? -eq 2
"$BIN" report sat --html --block 7 --kv-head 0 --results "$R" --out "$W/bad.html" > "$W/r6" 2>&1
check "a block the run does not have: exit 1 naming the gates it has, no page (issue 21: not an empty view)" \
    bash -c "test $? -eq 1 && grep -q -- '--gate L7H0: run sat has gates L' '$W/r6' && test ! -e '$W/bad.html'"

# render it
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
    skip "render the page in headless Chromium (chromium is not installed: scripts/setup.sh installs it)"
elif ! command -v python3 > /dev/null; then
    skip "look at the screenshot (python3 is not installed: apt-get install python3)"
else
    shot() { # html png
        timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
            --user-data-dir="$W/chromium" --window-size=1200,6000 --screenshot="$2" "file://$1" > "$W/chromium.log" 2>&1
    }
    "$BIN" report sat --html --out "$W/sat.html" --results "$R" > /dev/null 2>&1  # default: the gate with the largest mean α
    shot "$W/sat.html" "$W/sat.png"
    check "Chromium renders the SATFormer page to a PNG" test -s "$W/sat.png"
    python3 "$ROOT/tests/pngcheck.py" regions "$W/sat.png" > "$W/sat.txt" 2>&1
    v() { sed -n "s/^$1 //p" "$2"; }
    check "screenshot: figures below the title (ink share $(v top_ink "$W/sat.txt") >= 0.05)" \
        awk -v x="$(v top_ink "$W/sat.txt")" 'BEGIN { exit !(x >= 0.05) }'
    check "screenshot: α-coloured characters inside the probe-text box ($(v orange_probe "$W/sat.txt") orange pixels >= 500)" \
        awk -v x="$(v orange_probe "$W/sat.txt")" 'BEGIN { exit !(x >= 500) }'
    shot "$R/report/tsa.html" "$W/tsa.png"
    python3 "$ROOT/tests/pngcheck.py" regions "$W/tsa.png" > "$W/tsa.txt" 2>&1
    check "screenshot: depth-coloured characters inside the TSA page's probe-text box ($(v blue_probe "$W/tsa.txt") blue pixels >= 500)" \
        awk -v x="$(v blue_probe "$W/tsa.txt")" 'BEGIN { exit !(x >= 500) }'
    if [ -n "${KEEP_SHOTS:-}" ]; then cp "$W"/*.png "$KEEP_SHOTS"/; fi
fi
