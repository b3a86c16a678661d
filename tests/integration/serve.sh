#!/usr/bin/env bash
# serve.sh — `gatelab serve` against a tiny registry of real runs (SATFormer seeds 1 and 2, TSA, a
# baseline whose run id is hostile HTML, tags holding <script>, quotes and ampersands):
#   (a) with curl: every endpoint's JSON parses (python3 json) and gives back the hostile id, tags
#       and params exactly; pages show them escaped; '..', absolute paths, a run folder that is a
#       symlink out of the results folder, other methods and a foreign Host are refused (403/404/405);
#       the registry file (mtime, sha256) and every run file are unchanged afterwards;
#   (b) in a real headless Chromium driven through the DevTools protocol (a small websocket client
#       on Python's standard library, no npm): the runs page and run pages load with no console
#       error, no exception and no dialog (an alert would be an XSS), ticking two runs draws two
#       uPlot curves, a run started during the test appears in the table and its curve grows, and
#       its run page follows it live.
# The server and the live run are killed on exit (trap); ports come from a free-port search on
# 127.0.0.1; every wait is bounded.  SERVE_SCREENSHOT=FILE.png also saves the runs page as FILE.png
# and run sat1's page as FILE_run.png; SERVE_STEPS=N trains the runs N steps instead of 40
# (docs/figures/serve.png was made that way, see docs/serve.md).
set -u
source "$(dirname "$0")/lib.sh"
W=$(mktemp -d)
R="$W/r"
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2> /dev/null && wait "$SERVER_PID" 2> /dev/null
    rm -rf "$W"
}
trap cleanup EXIT

if ! command -v curl > /dev/null || ! command -v python3 > /dev/null; then
    skip "gatelab serve (curl and python3 are needed: apt-get install curl python3)"
    exit 0
fi
make_corpus "$W/data/corpus.txt"
export GATELAB_DATA="$W/data"
HOSTILE="x\"'<img src=x onerror=alert(1)>"
T() { "$BIN" train "$TINY" train.steps="${SERVE_STEPS:-40}" "$@" --results "$R" --quiet > "$W/train.log" 2>&1; }
ok=1
T model.value_residual=satformer --run-id sat1 || ok=0
T model.value_residual=satformer train.seed=2 --run-id sat2 || ok=0
T model.depth_routing=tsa --run-id tsa1 || ok=0
T --run-id "$HOSTILE" || ok=0
T --run-id esc || ok=0
"$BIN" tag sat1 'note=<script>alert(1)</script>' --results "$R" > /dev/null || ok=0
"$BIN" tag sat2 "q=it's \"quoted\" & <b>bold</b>" 'group=pair' --results "$R" > /dev/null || ok=0
"$BIN" tag tsa1 'group=pair' --results "$R" > /dev/null || ok=0
# a run folder that is a symlink out of the results folder: its files must not be served
mv "$R/runs/esc" "$W/outside" && ln -s "$W/outside" "$R/runs/esc" || ok=0
check "train the tiny registry (5 runs, tags)" [ "$ok" = 1 ]
[ "$ok" = 1 ] || { tail -20 "$W/train.log"; exit 0; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
# what the server must leave alone: the registry's bytes and mtime, every file of every run
snapshot() {
    # (SQLite's WAL readers, the sqlite3 shell too, keep its index gatelab.db-shm and may leave an empty
    # gatelab.db-wal: the registry's data are the .db and a non-empty -wal)
    { stat -c '%Y %s' "$R/gatelab.db"; sha256sum "$R/gatelab.db"; [ -s "$R/gatelab.db-wal" ] && sha256sum "$R/gatelab.db-wal"
      find "$R/runs/" "$W/outside" -type f -print0 | sort -z | xargs -0 sha256sum; } 2> /dev/null
}
snapshot > "$W/before"
for try in 1 2 3; do # a port found free can be taken before the server binds it: try another
    PORT=$(free_port)
    "$BIN" serve --port "$PORT" --results "$R" > "$W/serve.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 50); do
        curl -s -o /dev/null "http://127.0.0.1:$PORT/api/runs" && break
        kill -0 "$SERVER_PID" 2> /dev/null || break
        sleep 0.1
    done
    kill -0 "$SERVER_PID" 2> /dev/null && break
    wait "$SERVER_PID" 2> /dev/null
    SERVER_PID=""
done
if [ -z "$SERVER_PID" ]; then
    fail "gatelab serve starts ($(cat "$W/serve.log"))"
    exit 0
fi
U="http://127.0.0.1:$PORT"
check "serve says where it listens, bound to 127.0.0.1" grep -q "http://127.0.0.1:$PORT/" "$W/serve.log"
check "serve listens on 127.0.0.1 only (not on this host's other addresses)" python3 -c "
import socket, sys
try: ips = [a for a in socket.gethostbyname_ex(socket.gethostname())[2] if not a.startswith('127.')]
except OSError: ips = []
s = socket.socket(); s.settimeout(1)
sys.exit(0 if not ips or s.connect_ex((ips[0], $PORT)) != 0 else 1)"

check "serve --port 99999: exit 2 naming the flag" bash -c "'$BIN' serve --port 99999 --results '$R' 2>&1 | grep -q -- --port; [ \${PIPESTATUS[0]} = 2 ]"
check "serve --bind nope: exit 2" bash -c "'$BIN' serve --bind nope --results '$R' 2> /dev/null; [ \$? = 2 ]"
check "serve --results with no registry: exit 1 naming it" bash -c "'$BIN' serve --results '$W/data' 2>&1 | grep -q '$W/data/gatelab.db'; [ \${PIPESTATUS[0]} = 1 ]"
check "serve on a port in use: exit 1 saying so" bash -c "timeout 10 '$BIN' serve --port $PORT --results '$R' 2>&1 | grep -q 'cannot listen'; [ \${PIPESTATUS[0]} = 1 ]"

enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
code() { curl -s --path-as-is -o "$W/body" -w '%{http_code}' "$@"; }
# json URL PYTHON-EXPR: the body parses and EXPR (on j) holds
json() {
    local url=$1 expr=$2
    [ "$(code "$U$url")" = 200 ] && HOSTILE="$HOSTILE" python3 -c "
import json, os, sys
j = json.load(open(sys.argv[1]))
H = os.environ['HOSTILE']
sys.exit(0 if ($expr) else 1)" "$W/body"
}
check "/api/runs: JSON, 5 runs, the hostile id exact" json /api/runs \
    "len(j) == 5 and H in [r['run_id'] for r in j]"
check "/api/runs: the <script> tag and the quoted tag exact" json /api/runs \
    "{r['run_id']: r['tags'] for r in j}['sat1'] == {'note': '<script>alert(1)</script>'} and
     {r['run_id']: r['tags'] for r in j}['sat2']['q'] == 'it\'s \"quoted\" & <b>bold</b>'"
check "/api/runs: the params read from the hostile id exact" json /api/runs \
    "[r for r in j if r['run_id'] == H][0]['params'] == {'src': 'x', 'onerror': 'alert(1)>'}"
check "/api/runs is what runs --format json prints" bash -c "
    '$BIN' runs --results '$R' --format json > '$W/cli.json' && curl -s '$U/api/runs' > '$W/api.json' &&
    python3 -c 'import json,sys; sys.exit(json.load(open(\"$W/cli.json\")) != json.load(open(\"$W/api.json\")))'"
check "/api/runs?tag=group=pair: sat2 and tsa1" json "/api/runs?tag=$(enc group=pair)" \
    "sorted(r['run_id'] for r in j) == ['sat2', 'tsa1']"
check "/api/runs?tag=<script> tag: sat1" json "/api/runs?tag=$(enc 'note=<script>alert(1)</script>')" \
    "[r['run_id'] for r in j] == ['sat1']"
check "/api/runs?status=finished&experiment=tiny: all 5" json "/api/runs?status=finished&experiment=tiny" "len(j) == 5"
check "/api/runs?status=nonsense: 400" [ "$(code "$U/api/runs?status=nonsense")" = 400 ]
check "/api/runs?experiment=nope: 404 JSON" bash -c "[ \"\$(curl -s -o '$W/e' -w '%{http_code}' '$U/api/runs?experiment=nope')\" = 404 ] &&
    python3 -c 'import json; json.load(open(\"$W/e\"))[\"error\"]'"
check "/api/metrics?run=sat1&split=val&name=loss: the eval rows" json "/api/metrics?run=sat1&split=val&name=loss" \
    "len(j) >= 2 and all(r['split'] == 'val' and r['name'] == 'loss' for r in j)"
check "/api/metrics?run=sat1&name=val/*: the val rows (the split/name form compare prints)" \
    json "/api/metrics?run=sat1&name=$(enc 'val/*')" "len(j) >= 2 and all(r['split'] == 'val' for r in j)"
check "/api/metrics is what metrics --format json prints" bash -c "
    '$BIN' metrics --run sat1 --results '$R' --format json > '$W/cli.json' && curl -s '$U/api/metrics?run=sat1' > '$W/api.json' &&
    python3 -c 'import json,sys; sys.exit(json.load(open(\"$W/cli.json\")) != json.load(open(\"$W/api.json\")))'"
check "/api/metrics?run=<hostile id>: JSON, its rows" json "/api/metrics?run=$(enc "$HOSTILE")" \
    "len(j) > 0 and all(r['run_id'] == H for r in j)"
check "/api/run?run=sat1: config, latest metrics, the trace's α and the probe text" json "/api/run?run=sat1" \
    "'value_residual = satformer' in j['config'] and j['trace']['gates'][0]['path'] == '/sat/alpha' and
     len(j['trace']['probe_text']) == j['trace']['n_probe'] and j['tokens_per_step'] == 4 * 32 and
     any(m['name'] == 'final.loss' for m in j['latest'])"
check "/api/run: seeds 1 and 2 are one group, TSA another" python3 -c "
import json, urllib.request as u
g = {r: json.load(u.urlopen('$U/api/run?run=' + r))['group'] for r in ('sat1', 'sat2', 'tsa1')}
raise SystemExit(not (g['sat1'] == g['sat2'] != g['tsa1']))"
check "/api/trace alpha at the last step: shape (L, P, Hkv) and as many values" json \
    "/api/trace?run=sat1&gate=$(enc /sat/alpha)&step=-1" \
    "j['gate']['axes'] == ['layer', 'token', 'kv_head'] and j['step'] == j['steps'][-1] and
     len(j['values']) == j['gate']['shape'][0] * j['gate']['shape'][1] * j['gate']['shape'][2]"
# a value the API gives equals h5dump's (HDF5's own reader) at the same place: the first non-zero
# α of block 1 at the second-to-last evaluation (h5dump prints floats with up to 9 digits: 1e-6)
check "/api/trace at an earlier step equals h5dump's element" python3 -c "
import json, subprocess, urllib.request as u
steps = json.load(u.urlopen('$U/api/run?run=sat1'))['trace']['steps']
j = json.load(u.urlopen('$U/api/trace?run=sat1&gate=alpha&step=%d' % steps[-2]))
L, P, H = j['gate']['shape']
i = next(k for k in range(P * H, 2 * P * H) if j['values'][k])
out = subprocess.run(['h5dump', '-d', '/sat/alpha', '-s', '%d,1,%d,%d' % (len(steps) - 2, (i - P * H) // H, i % H),
                      '-c', '1,1,1,1', '-y', '-w', '0', '$R/runs/sat1/trace.h5'], capture_output=True, text=True).stdout
v = float(out.split('DATA {')[1].split()[0].strip(','))
raise SystemExit(j['step'] != steps[-2] or abs(j['values'][i] - v) > 1e-6 * abs(v))"
check "/api/trace summary=quantiles for TSA p: per step, per router, 5 quantiles in order" json \
    "/api/trace?run=tsa1&gate=/tsa/p&summary=quantiles" \
    "len(j['quantiles']) == len(j['steps']) and all(len(s) == 1 and s[0] == sorted(s[0]) for s in j['quantiles'])"
check "/api/trace of a gate the run lacks: 404" [ "$(code "$U/api/trace?run=sat1&gate=/tsa/p")" = 404 ]
check "/api/trace?step=7 (no such evaluation): 404" [ "$(code "$U/api/trace?run=sat1&gate=alpha&step=7")" = 404 ]
check "/api/run?run=unknown: 404" [ "$(code "$U/api/run?run=nope")" = 404 ]

# escaping in HTML: the run page of the hostile id and the <script> tag never come back as markup
check "/run/<hostile id>: 200, the id escaped, never raw" bash -c "
    [ \"\$(curl -s -o '$W/p.html' -w '%{http_code}' '$U/run/$(enc "$HOSTILE")')\" = 200 ] &&
    grep -qF 'x&quot;&#39;&lt;img src=x onerror=alert(1)&gt;' '$W/p.html' && ! grep -qF '<img' '$W/p.html'"
check "/run/<unknown hostile id>: 404 page with the name escaped" bash -c "
    [ \"\$(curl -s -o '$W/p.html' -w '%{http_code}' '$U/run/$(enc '<b onmouseover="alert(1)">x')')\" = 404 ] &&
    grep -qF '&lt;b onmouseover=&quot;alert(1)&quot;&gt;x' '$W/p.html' && ! grep -qF '<b ' '$W/p.html'"
check "/run/<script>...</script> (a '/' in it): 403, nothing echoed" bash -c "
    [ \"\$(curl -s -o '$W/p.html' -w '%{http_code}' '$U/run/$(enc '<script>alert(1)</script>')')\" = 403 ] &&
    ! grep -qF '<script>alert' '$W/p.html'"
check "pages carry a Content-Security-Policy without inline scripts" bash -c "
    curl -s -D - -o /dev/null '$U/' | grep -i '^content-security-policy:' | grep -q \"script-src 'self';\""
check "the embedded uPlot is served" bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$U/static/vendor/uplot/uPlot.iife.min.js')\" = 200 ]"

# paths out of the results folder
for p in "/../gatelab.db" "/static/../../../etc/passwd" "/static/%2e%2e/%2e%2e/etc/passwd" "/run/.." "/run/%2e%2e" \
         "/api/trace?run=..&gate=alpha" "/api/trace?run=../sat1&gate=alpha" "/api/run?run=%2Fetc%2Fpasswd" \
         "/api/metrics?run=..%2F..%2Fgatelab" "/api/run?run=esc" "/api/trace?run=esc&gate=alpha"; do
    c=$(code "$U$p")
    check "refused: $p ($c)" [ "$c" = 403 ] || [ "$c" = 404 ]
done
for p in "/etc/passwd" "//etc/passwd" "/static/gatelab.db" "/gatelab.db" "/runs/sat1/trace.h5"; do
    c=$(code "$U$p")
    check "not served: $p ($c)" [ "$c" = 404 ]
done
check "the symlinked-out run's trace is refused with 403" [ "$(code "$U/api/trace?run=esc&gate=alpha")" = 403 ]
check "POST: 405" [ "$(code -X POST -d x=1 "$U/api/runs")" = 405 ]
check "a foreign Host (DNS rebinding): 403" [ "$(code -H 'Host: evil.example' "$U/api/runs")" = 403 ]

check "the server wrote nothing: registry mtime, size, sha256 and every run file unchanged" diff "$W/before" <(snapshot)

# figures --runs / --tag: the static counterpart, one gnuplot figure of the chosen runs
F="$W/figs"
if "$BIN" figures --runs sat1,sat2,tsa1 --results "$R" --out "$F" > "$W/fig.log" 2>&1; then
    check "figures --runs sat1,sat2,tsa1: loss_runs_step/_time as PNG, PDF and SVG" bash -c "
        for b in loss_runs_step loss_runs_time; do for e in png pdf svg; do [ -s '$F/'\$b.\$e ] || exit 1; done; done
        head -c 8 '$F/loss_runs_step.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
    check "figures --runs: seeds 1 and 2 are one curve (n=2), TSA another: 2 groups x (train, val)" bash -c "
        [ \$(grep -c 'wall_s' '$F/data/loss_runs.tsv') = 4 ] && awk -F'\t' '\$5 == 2' '$F/data/loss_runs.tsv' | grep -q ."
else
    fail "figures --runs sat1,sat2,tsa1 ($(tail -2 "$W/fig.log"))"
fi
check "figures --tag group=pair: the two tagged runs, two curves" bash -c "
    '$BIN' figures --tag group=pair --results '$R' --out '$W/figs2' > /dev/null && [ \$(grep -c 'wall_s' '$W/figs2/data/loss_runs.tsv') = 4 ]"
check "figures --runs nope: exit 1 naming the run" bash -c "
    out=\$('$BIN' figures --runs nope --results '$R' --out '$W/figs3' 2>&1 > /dev/null); rc=\$?
    [ \$rc = 1 ] && echo \"\$out\" | grep -q 'run nope'"
check "figures EXPERIMENT --runs ID: usage error (exit 2)" bash -c "'$BIN' figures tiny --runs sat1 --results '$R' 2> /dev/null; [ \$? = 2 ]"

# (b) a real browser
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
    skip "serve in a browser (no chromium: apt-get install chromium)"
else
    cat > "$W/cdp.py" << 'EOF'
# A DevTools-protocol client on the standard library: one websocket to one page.
import base64, json, os, signal, socket, struct, subprocess, sys, time, urllib.parse, urllib.request

signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL the browser checks were stopped by their time limit"))

U, CHROME, W, LIVE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
SHOT = os.environ.get("SERVE_SCREENSHOT")
fails = 0


def report(ok, what):
    global fails
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    fails += not ok


class Page:
    def __init__(self, ws_url):
        host, path = ws_url[len("ws://"):].split("/", 1)
        h, p = host.split(":")
        self.s = socket.create_connection((h, int(p)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, host, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.s.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.id, self.events = 0, []

    def _recv_exact(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise EOFError("devtools closed the websocket")
            b += c
        return b

    def _frame(self):
        msg = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            data = self._recv_exact(n)
            if b0 & 0x0F == 9:  # ping
                self._send(data, 0xA)
                continue
            msg += data
            if b0 & 0x80:
                return json.loads(msg)

    def _send(self, payload, op=1):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else
                                     bytes([0xFE]) + struct.pack(">H", n) if n < 65536 else
                                     bytes([0xFF]) + struct.pack(">Q", n))
        self.s.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))

    def call(self, method, **params):
        self.id += 1
        self._send(json.dumps({"id": self.id, "method": method, "params": params}).encode())
        while True:
            m = self._frame()
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def wait(self, expr, timeout=60):  # every wait returns as soon as expr holds: long limits cost nothing
                                       # when it passes, and a loaded machine (CI beside a sweep) is slow
        t = time.time() + timeout
        while time.time() < t:
            if self.js(expr):
                return True
            time.sleep(0.25)
        return False

    def click(self, selector):
        box = self.js("(function(){var e=document.querySelector(%s); if(!e) return null; e.scrollIntoView();"
                      "var r=e.getBoundingClientRect(); return [r.x+r.width/2, r.y+r.height/2];})()" % json.dumps(selector))
        if not box:
            return False
        for t in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=t, x=box[0], y=box[1], button="left", clickCount=1)
        return True

    def problems(self):
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p["exceptionDetails"])[:300])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + json.dumps(p.get("args"))[:300])
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append("log: " + p["entry"].get("text", "")[:300])
            elif m == "Page.javascriptDialogOpening":
                out.append("dialog: " + p.get("message", ""))
        self.events = []
        return out

    def goto(self, url):
        self.events = []
        self.call("Page.navigate", url=url)
        return self.wait("document.readyState === 'complete' && window.gatelab && window.gatelab.polls > 0", 120)


prof = os.path.join(W, "chrome")
chrome = subprocess.Popen([CHROME, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-extensions", "--window-size=1280,1000", "--remote-debugging-address=127.0.0.1",
                           "--remote-debugging-port=0", "--user-data-dir=" + prof, "about:blank"],
                          stdout=subprocess.DEVNULL, stderr=open(os.path.join(W, "chrome.log"), "w"))
live = None
try:
    port_file, t = os.path.join(prof, "DevToolsActivePort"), time.time() + 60
    while not (os.path.exists(port_file) and open(port_file).read().strip()):
        if time.time() > t or chrome.poll() is not None:
            raise SystemExit("FAIL chromium starts with remote debugging (see chrome.log)")
        time.sleep(0.2)
    dport = open(port_file).read().split()[0]
    targets = json.load(urllib.request.urlopen("http://127.0.0.1:%s/json/list" % dport, timeout=10))
    page = Page([x for x in targets if x["type"] == "page"][0]["webSocketDebuggerUrl"])
    for d in ("Runtime.enable", "Log.enable", "Page.enable"):
        page.call(d)

    report(page.goto(U + "/") and page.wait("document.querySelectorAll('#runs tbody tr').length === 5", 90),
           "browser: the runs page loads and lists the 5 runs")
    hostile = [r for r in json.load(urllib.request.urlopen(U + "/api/runs")) if r["run_id"].startswith("x\"")][0]["run_id"]
    report(page.js("Array.from(document.querySelectorAll('#runs tbody a')).some(a => a.textContent === %s)"
                   % json.dumps(hostile)) and page.js("document.querySelectorAll('img, script:not([src])').length === 0"),
           "browser: the hostile id shows as text, no <img> or inline <script> made of it")
    page.js("(function(){var s=document.getElementById('c-split'); s.value='train';"
            "s.dispatchEvent(new Event('change'));})()")
    ok = page.click('input.select[data-run="sat1"]') and page.click('input.select[data-run="tsa1"]')
    ok = ok and page.wait("window.gatelab.curves === 2 && window.gatelab.chart && window.gatelab.chart.series.length === 3", 90)
    report(ok, "browser: ticking two runs draws two uPlot curves (%s)" %
           page.js("window.gatelab.curves + ' curves, ' + (window.gatelab.chart ? window.gatelab.chart.series.length - 1 : 0) + ' series'"))
    ok = page.click('input.select[data-run="sat2"]') and page.wait(
        "window.gatelab.curves === 2 && window.gatelab.chart.series.length === 5", 90)
    report(ok, "browser: a second seed of sat1 joins its curve as a mean with its 95 % band (2 curves, 4 series)")

    def choose(sel_id, value, event="change"):
        page.js("(function(){var s=document.getElementById(%s); s.value=%s; s.dispatchEvent(new Event(%s));})()"
                % (json.dumps(sel_id), json.dumps(value), json.dumps(event)))

    # any metric: the grad norm of the three runs, train split
    choose("c-split", "both")
    ok = page.wait("Array.from(document.getElementById('c-metric').options).some(o => o.value === 'grad_norm')", 60)
    choose("c-metric", "grad_norm")
    ok = ok and page.wait("window.gatelab.curves === 2 && window.gatelab.chart && "
                          "window.gatelab.chart.series.some(s => /sat1.*train/.test(s.label || ''))", 60)
    report(ok, "browser: any metric as curves: grad_norm of the selected runs (%s curves)" % page.js("window.gatelab.curves"))
    # smoothing: the raw curve stays, faint, beneath each smoothed one
    choose("c-smooth", "0.6", "input")
    ok = page.wait("window.gatelab.chart.series.filter(s => / \\(raw\\)$/.test(s.label || '')).length === 2", 30)
    report(ok, "browser: smoothing draws each curve smoothed with its raw curve faint beneath (2 raw series)")
    # group by a config key: value_residual → satformer (sat1, sat2) and none (tsa1)
    ok = page.wait("document.querySelector('#c-by input[data-key=\"model.value_residual\"]') !== null", 30)
    page.js("document.getElementById('c-by-box').open = true; "
            "document.querySelector('#c-by input[data-key=\"model.value_residual\"]').click()")
    ok = ok and page.wait("window.gatelab.curves === 2 && window.gatelab.chart.series.some(s => "
                          "/^satformer \\(n=2\\)/.test(s.label || ''))", 30)
    report(ok, "browser: grouping by model.value_residual gives 2 curves, the SATFormer seeds as one (n=2)")
    # α across runs
    choose("g-gate", "/sat/alpha")
    ok = page.wait("window.gatelab.gateCurves === 1 && document.querySelectorAll('#gates canvas').length > 0", 60)
    report(ok, "browser: the SATFormer gate α overlaid across the selected runs (%s curve)" % page.js("window.gatelab.gateCurves"))
    # the view is in the address, and a fresh load of it brings it back
    view = page.js("location.href")
    q = urllib.parse.parse_qs(urllib.parse.urlparse(view).query)
    report(q.get("runs") == ["sat1,sat2,tsa1"] and q.get("metric") == ["grad_norm"] and q.get("smooth") == ["0.6"]
           and q.get("by") == ["model.value_residual"] and q.get("gate") == ["/sat/alpha"],
           "browser: selection and settings are kept in the address (%s)" % urllib.parse.urlparse(view).query)
    ok = page.goto(view) and page.wait(
        "window.gatelab.curves === 2 && document.getElementById('c-metric').value === 'grad_norm' && "
        "document.querySelectorAll('input.select:checked').length === 3 && window.gatelab.gateCurves === 1 && "
        "document.getElementById('c-smooth').value === '0.6'", 90)
    report(ok, "browser: opening that address restores the view (3 runs, grad_norm, smoothing 0.6, grouping, α)")
    # the runs table fits a 1280 px window
    w = page.js("[document.querySelector('.tablewrap').scrollWidth, document.documentElement.clientWidth]")
    report(w and w[0] <= w[1] <= 1280, "browser: the runs table fits the 1280 px window (%s px wide in %s)" % (w[0], w[1]))
    probs = page.problems()
    report(not probs, "browser: no console error, exception or dialog on the runs page %s" % probs[:3])
    if SHOT:
        page.js("window.scrollTo(0, 0)")
        with open(SHOT, "wb") as f:
            f.write(base64.b64decode(page.call("Page.captureScreenshot", format="png",
                                               captureBeyondViewport=True)["data"]))

    for rid in ("sat1", "tsa1", hostile):
        ok = page.goto(U + "/run/" + urllib.parse.quote(rid, safe="")) and page.wait(
            "document.querySelectorAll('#loss canvas').length > 0 && document.querySelectorAll('#headline tr').length > 5", 90)
        extra = ""
        if rid != hostile:  # a baseline records no gate
            ok = ok and page.wait("!document.getElementById('sec-dist').hidden && "
                                  "document.querySelectorAll('#dist canvas').length > 0", 90)
            extra = ", gate distributions"
        if rid == "sat1":
            ok = ok and page.wait("document.querySelectorAll('#heatmap td').length === 2 && "
                                "document.querySelectorAll('#probe span').length === 64", 60)
            extra += ", α heatmap 2×1, 64 probe characters"
        if rid == "tsa1":
            ok = ok and page.wait("!document.getElementById('sec-depth').hidden", 60)
            extra += ", depth profile"
        ok = ok and page.js("document.getElementById('run-id').textContent === %s" % json.dumps(rid))
        if SHOT and rid == "sat1":
            with open(SHOT.replace(".png", "_run.png"), "wb") as f:
                f.write(base64.b64decode(page.call("Page.captureScreenshot", format="png",
                                                   captureBeyondViewport=True)["data"]))
        if rid == "sat1":  # any metric on the run page too
            page.js("(function(){var s=document.getElementById('c-metric'); s.value='grad_norm';"
                    "s.dispatchEvent(new Event('change'));})()")
            ok = ok and page.wait("window.gatelab.curves === 1 && document.getElementById('c-metric').value === "
                                  "'grad_norm' && document.querySelectorAll('#loss canvas').length > 0", 30)
            extra += ", grad_norm as a curve"
        probs = page.problems()
        report(ok and not probs, "browser: run page %s loads with its gates%s, no console error %s"
               % (json.dumps(rid), extra, probs[:3]))

    # live: a run started now appears in the table and its curve grows
    page.goto(U + "/")
    live = subprocess.Popen(LIVE, stdout=subprocess.DEVNULL, stderr=open(os.path.join(W, "live.log"), "w"))
    ok = page.wait("document.querySelector('input.select[data-run=\"live\"]') !== null", 90)
    report(ok, "browser: a run started during the test appears in the table")
    n0 = n1 = 0
    if ok:
        page.click('input.select[data-run="live"]')
        TL = "(window.gatelab.metrics.live && window.gatelab.metrics.live['train/loss'] ? " \
             "window.gatelab.metrics.live['train/loss'].pts.length : 0)"
        ok = page.wait(TL + " > 0", 60)
        n0 = page.js(TL)
        ok = ok and page.wait(TL + " > %d" % n0, 90)
        n1 = page.js(TL)
    report(ok, "browser: its curve grows while it trains (%s -> %s points)" % (n0, n1))
    ok = page.goto(U + "/run/live") and page.wait("window.gatelab.lossPoints > 0", 90)
    p0 = page.js("window.gatelab.lossPoints")
    ok = ok and page.wait("window.gatelab.lossPoints > %d || window.gatelab.info.run.status !== 'RUNNING'" % p0, 90)
    p1 = page.js("window.gatelab.lossPoints")
    report(ok and p1 > p0, "browser: the live run's page follows it (%s -> %s loss points)" % (p0, p1))
    probs = page.problems()
    report(not probs, "browser: no console error while following the live run %s" % probs[:3])
finally:
    if live:  # SIGTERM, which timeout(1) passes on to the training
        live.terminate()
        try:
            live.wait(timeout=30)
        except subprocess.TimeoutExpired:
            live.kill()
            live.wait()
    chrome.kill()
    chrome.wait()
sys.exit(1 if fails else 0)
EOF
    # the live run: long enough to be watched (killed when the browser checks end)
    timeout 600 python3 "$W/cdp.py" "$U" "$CHROME" "$W" timeout 580 "$BIN" train "$TINY" train.steps=100000 train.eval_every=50 \
        train.log_every=10 train.ckpt_every=500 --run-id live --results "$R" --quiet ||
        echo "FAIL the browser checks ran to their end (exit $?; chromium log: $(tail -3 "$W/chrome.log" 2> /dev/null))"
    # the live run wrote its own rows; the other runs' files are still untouched
    check "after the browser checks, every other run's files are unchanged" \
        diff <(grep '/runs/\|/outside' "$W/before") <(snapshot | grep '/runs/\|/outside' | grep -v '/runs/live/')
fi

# the server stops on SIGTERM, cleanly (under make asan: no sanitizer report, no leak)
kill -TERM "$SERVER_PID" 2> /dev/null
wait "$SERVER_PID"
rc=$?
SERVER_PID=""
check "serve stops on SIGTERM with exit 0 and says so" bash -c "[ $rc = 0 ] && grep -q 'stopped (signal 15)' '$W/serve.log'"
check "serve's log has no sanitizer or runtime error" bash -c "! grep -qE 'Sanitizer|runtime error' '$W/serve.log'"
