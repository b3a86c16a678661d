#!/usr/bin/env bash
# serve_screenshot.sh — the dashboard's picture for docs/figures/serve.png: serve a results folder
# (as `make demo` leaves it), open a view of it in headless Chromium by its address (the view lives in
# the URL: docs/serve.md) and save the page as a PNG.
#
#   scripts/serve_screenshot.sh RESULTS OUT.png [QUERY | /run/ID] [HEIGHT]
#     QUERY  the runs page's view, as the page writes it into the address (default: the demo's copy
#            runs, their train and val loss by variant smoothed 0.6, SATFormer's α across them);
#            /run/ID a run's page instead.  HEIGHT: the window's height in px (default 1250)
#   GATELAB_BIN  the binary (default build/gatelab)
# docs/figures/serve.png was made from `make demo` on a bare clone (the built-in tasks, 300 steps):
#   GATELAB_RESULTS=/tmp/demo scripts/demo.sh --builtin && scripts/serve_screenshot.sh /tmp/demo docs/figures/serve.png
# and docs/figures/serve_run.png from the same runs:
#   scripts/serve_screenshot.sh /tmp/demo docs/figures/serve_run.png /run/<the demo-copy-satformer run> 2100
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/serve_screenshot.sh RESULTS OUT.png [QUERY]" >&2; exit 2; }
R=$1 OUT=$2
BIN="${GATELAB_BIN:-$(dirname "$0")/../build/gatelab}"
CHROME=$(command -v chromium || command -v chromium-browser) || { echo "serve_screenshot.sh: no chromium" >&2; exit 1; }
ids=$(sqlite3 "$R/gatelab.db" "select group_concat(run_id, ',') from (select run_id from runs r join experiments e
      on e.id = r.experiment_id where e.name = 'demo-copy' and r.status = 'FINISHED' and r.deleted_time is null order by run_id)")
Q=${3:-"runs=$ids&experiment=demo-copy&smooth=0.6&by=model.depth_routing,model.value_residual&gate=/sat/alpha"}
case "$Q" in /*) PAGE=$Q ;; *) PAGE="/?$Q" ;; esac
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
W=$(mktemp -d)
"$BIN" serve --port "$PORT" --results "$R" > "$W/serve.log" 2>&1 &
SP=$!
trap 'kill "$SP" 2> /dev/null; rm -rf "$W"' EXIT
for _ in $(seq 100); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$PORT/api/runs" && break; sleep 0.1; done
# --virtual-time-budget lets the page's scripts fetch and draw before the picture is taken
"$CHROME" --headless=new --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --user-data-dir="$W/profile" \
    --window-size=1280,"${4:-1250}" --virtual-time-budget=20000 --screenshot="$OUT" "http://127.0.0.1:$PORT$PAGE" \
    > "$W/chrome.log" 2>&1
test -s "$OUT" || { echo "serve_screenshot.sh: no picture (chromium: $(tail -3 "$W/chrome.log"))" >&2; exit 1; }
echo "$OUT: the view http://127.0.0.1:PORT$PAGE of $R"
