#!/usr/bin/env bash
# html_escape.sh — the HTML report prints every registry string escaped
# (issue 28.5).  A registry arrives from other machines (`gatelab collect`),
# so every text field it can carry is given markup here — the experiment
# name, tag values, params values, the run's name and error, the provenance
# of a metric ("measured on") — and `report --html` of the run and of the
# experiment must hold no live markup: parsed with Python's html.parser, no
# element or attribute comes from the registry (no <svg>, <script>, on…=),
# and the markup is there as text (&lt;svg onload=…&gt;).  Run ids follow the
# run-id grammar (docs/registry.md), which admits no markup; the test uses
# the most hostile id it allows.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); if [ -n "${KEEP_TMP:-}" ]; then echo "temp folder (kept): $W"; else trap 'rm -rf "$W"' EXIT; fi
export GATELAB_DATA="$W/data" OMP_NUM_THREADS=1
make_corpus "$GATELAB_DATA/corpus.txt"
R="$W/results"; DB="$R/gatelab.db"
command -v python3 > /dev/null || { skip "HTML escaping (needs python3 for html.parser)"; exit 0; }
id='a.b-c+d=e_f'
"$BIN" train "$TINY" log.experiment=ex log.probe_windows=1 --run-id "$id" --results "$R" --quiet > /dev/null 2>&1
check "train run $id (exit $?)" test -f "$DB"
M="<svg onload=alert(1)>\"q'&amp;<script>x</script>"
q() { printf "%s" "$1" | sed "s/'/''/g"; }   # SQL quoting
MQ=$(q "$M"); NL=$(q "$M
<img src=x onerror=alert(2)>")
sqlite3 "$DB" <<EOF
UPDATE experiments SET name = 'ex$MQ';
INSERT INTO tags (run_id, key, value) VALUES ('$id', 'note', '$MQ');
UPDATE params SET value = '$NL' WHERE run_id = '$id' AND key IN ('log.name', 'data.file', 'model.value_residual');
UPDATE runs SET name = '$NL', error = '$NL';
UPDATE metrics SET data_split = '$MQ' WHERE split = 'val';
EOF
check "the registry now carries the markup" \
    test "$(sqlite3 "$DB" "select count(*) from metrics where data_split like '%<svg onload%'")" -gt 0

scan() { # page: no element or attribute from the registry; the markup present as text
    python3 - "$1" <<'EOF'
import html.parser, sys
page = open(sys.argv[1], encoding="utf-8").read()
allowed = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "code", "table", "caption",
           "tr", "th", "td", "figure", "img", "figcaption", "div", "span", "br", "details", "summary"}
bad = []
class P(html.parser.HTMLParser):
    def handle_starttag(self, tag, attrs):
        if tag not in allowed: bad.append("element <%s>" % tag)
        for k, v in attrs:
            if k.startswith("on"): bad.append("attribute %s on <%s>" % (k, tag))
            if tag == "img" and k == "src" and not (v or "").startswith("data:image/svg+xml;base64,"):
                bad.append("img src %r" % v)
P().feed(page)
if "<svg onload" in page or "<script" in page: bad.append("the raw markup is in the page")
if "&lt;svg onload=alert(1)&gt;" not in page: bad.append("the escaped markup is not in the page (was the field shown?)")
print("; ".join(bad[:5]), end="")
sys.exit(1 if bad else 0)
EOF
}
"$BIN" report "$id" --html --out "$W/run.html" --results "$R" > "$W/o1" 2>&1; rc=$?
check "report RUN --html (exit $rc) holds no live markup from the registry" bash -c "test $rc -eq 0 && $(declare -f scan); scan '$W/run.html'"
check "... the 'measured on' cell shows the provenance (cut to its 15 bytes) escaped" grep -qF '<td>&lt;svg onload=ale[0,' "$W/run.html"
"$BIN" report "ex$M" --html --out "$W/exp.html" --results "$R" > "$W/o2" 2>&1; rc=$?
check "report EXPERIMENT --html (exit $rc; a name with markup) holds no live markup" bash -c "test $rc -eq 0 && $(declare -f scan); scan '$W/exp.html'"
