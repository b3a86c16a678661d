// runs.js — the runs page: the table of /api/runs (sort by any column, filter by experiment, status
// and tag through the endpoint's own filters, choose columns), the curves of any metric of the
// selected runs (/api/metrics: train and val, x = step, tokens or time, smoothed with the raw curve
// faint beneath), grouped by seed (/api/run's "group") or by any set of config keys into a mean with
// its 95 % interval, and one gate (α, p, …) of every selected run overlaid (/api/trace quantiles).
// The view lives in the address (history.replaceState), so a link brings it back.  Polls every few
// seconds: new runs appear, curves grow.
"use strict";
(function () {
  var el = G.el, fmt = G.fmt;
  var state = {runs: [], sortKey: "start_time", sortDir: -1, selected: {}, experiments: {},
               info: {}, metrics: {}, quant: {}, chart: null, gchart: null, curves: 0, gateCurves: 0, polls: 0,
               by: {}};
  window.gatelab = state; // read by tests/integration/serve.sh (the browser test)

  var BASE = [
    {key: "run_id", label: "run"},
    {key: "experiment", label: "experiment"},
    {key: "variant", label: "variant"},
    {key: "status", label: "status"},
    {key: "step", label: "step", num: true},
    {key: "train_loss", label: "train loss", num: true},
    {key: "val_loss", label: "val loss", num: true, title: "the headline: TSA and early exit with the skipping done",
     get: function (r) { return r.val_kind === "hard_missing" ? "n/r" : r.val_loss; }},
    {key: "val_soft_loss", label: "soft", num: true, title: "TSA and early exit: the loss with every block run"},
    {key: "val_on", label: "val measured on", get: function (r) {
      var o = r.val_measured_on;
      if (!o) return null;
      return (r.val_headline ? "" : "periodic ") + o.split + "[" + o.first + "," + (o.first + o.windows) + ") @" + o.step;
    }},
    {key: "active_frac", label: "α active", num: true},
    {key: "tlops_saved", label: "TLOps saved", num: true},
    {key: "tokens_per_s", label: "tok/s", num: true},
    {key: "start_iso", label: "started (UTC)", get: function (r) {
      return r.start_iso ? r.start_iso.replace("T", " ").replace("Z", "") : null;
    }},
    {key: "duration_s", label: "took (s)", num: true},
    {key: "tags", label: "tags", get: function (r) {
      return Object.keys(r.tags || {}).map(function (k) { return k + "=" + r.tags[k]; }).join("; ");
    }},
  ];
  // shown unless chosen: what fits a 1280 px window beside the varying parameters
  var HIDDEN_BY_DEFAULT = {val_on: 1, tlops_saved: 1, start_iso: 1, duration_s: 1, active_frac: 1, experiment: 1};

  // ---- the view in the address ----
  var url = new URLSearchParams(location.search);
  function fromURL() {
    (url.get("runs") || "").split(",").forEach(function (id) { if (id) state.selected[id] = 1; });
    (url.get("by") || "").split(",").forEach(function (k) { if (k) state.by[k] = 1; });
    [["experiment", "f-experiment"], ["status", "f-status"], ["tag", "f-tag"], ["x", "c-x"], ["split", "c-split"],
     ["smooth", "c-smooth"]].forEach(function (p) {
      var v = url.get(p[0]), e = document.getElementById(p[1]);
      if (v === null) return;
      if (e.tagName === "SELECT" && ![].some.call(e.options, function (o) { return o.value === v; }))
        e.appendChild(el("option", {value: v}, v));
      e.value = v;
    });
    if (url.get("seeds") === "0") document.getElementById("c-group").checked = false;
    if (url.get("sort")) { state.sortKey = url.get("sort"); state.sortDir = url.get("dir") === "1" ? 1 : -1; }
    state.wantMetric = url.get("metric");
    state.wantGate = url.get("gate");
    state.wantRow = url.get("block");
    document.getElementById("c-smooth-v").textContent = document.getElementById("c-smooth").value;
  }
  function toURL() {
    var p = new URLSearchParams();
    function put(k, v, dflt) { if (v !== undefined && v !== null && v !== "" && v !== dflt) p.set(k, v); }
    put("runs", Object.keys(state.selected).sort().join(","));
    put("metric", document.getElementById("c-metric").value, "loss");
    put("split", document.getElementById("c-split").value, "both");
    put("x", document.getElementById("c-x").value, "step");
    put("smooth", document.getElementById("c-smooth").value, "0");
    put("seeds", document.getElementById("c-group").checked ? "" : "0");
    put("by", Object.keys(state.by).sort().join(","));
    put("gate", document.getElementById("g-gate").value);
    put("block", document.getElementById("g-row").value, "mean");
    put("experiment", document.getElementById("f-experiment").value);
    put("status", document.getElementById("f-status").value);
    put("tag", document.getElementById("f-tag").value.trim());
    if (state.sortKey !== "start_time" || state.sortDir !== -1) { p.set("sort", state.sortKey); p.set("dir", String(state.sortDir)); }
    var q = p.toString();
    history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
  }

  // ---- the table ----
  function varying(k) {
    var seen = {}, n = 0;
    state.runs.forEach(function (r) {
      var v = String((r.params || {})[k]);
      if (!seen[v]) { seen[v] = 1; n++; }
    });
    return n > 1;
  }
  function columns() {
    var keys = {};
    state.runs.forEach(function (r) { Object.keys(r.params || {}).forEach(function (k) { keys[k] = 1; }); });
    var cols = BASE.slice();
    Object.keys(keys).sort().forEach(function (k) {
      cols.splice(3, 0, {key: "param:" + k, label: k, param: true, get: function (r) { return (r.params || {})[k]; }});
    });
    return cols;
  }
  function value(c, r) { return c.get ? c.get(r) : r[c.key]; }

  function hiddenSet() {
    try { return JSON.parse(localStorage.getItem("gatelab.hidden") || "null"); }
    catch (e) { return null; }
  }
  function isHidden(c) {
    var h = hiddenSet();
    if (h && c.key in h) return !!h[c.key];
    return c.param ? !varying(c.label) : !!HIDDEN_BY_DEFAULT[c.key];
  }
  function setHidden(key, hide) {
    var h = hiddenSet() || {};
    h[key] = hide ? 1 : 0;
    try { localStorage.setItem("gatelab.hidden", JSON.stringify(h)); } catch (e) { /* none */ }
  }

  function renderColumnChooser(cols) {
    var list = document.getElementById("column-list");
    G.clear(list);
    cols.forEach(function (c) {
      var cb = el("input", {type: "checkbox"});
      cb.checked = !isHidden(c);
      cb.addEventListener("change", function () { setHidden(c.key, !cb.checked); renderTable(); });
      var lab = el("label");
      lab.appendChild(cb);
      lab.appendChild(document.createTextNode(" " + c.label));
      list.appendChild(lab);
    });
  }

  function sorted(cols) {
    var c = cols.filter(function (x) { return x.key === state.sortKey; })[0] || {key: state.sortKey};
    return state.runs.slice().sort(function (a, b) {
      var x = value(c, a), y = value(c, b);
      if (x === y) return a.run_id < b.run_id ? -1 : 1;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * state.sortDir;
    });
  }

  function renderTable() {
    var cols = columns(), vis = cols.filter(function (c) { return !isHidden(c); });
    var table = document.getElementById("runs"), thead = table.tHead, tbody = table.tBodies[0];
    G.clear(thead);
    G.clear(tbody);
    var hr = el("tr");
    hr.appendChild(el("th", {title: "select to overlay the curves"}, "✓"));
    vis.forEach(function (c) {
      var th = el("th", {"data-key": c.key}, c.label);
      if (c.title) th.title = c.title;
      if (c.key === state.sortKey) th.className = state.sortDir > 0 ? "sorted-asc" : "sorted-desc";
      th.addEventListener("click", function () {
        if (state.sortKey === c.key) state.sortDir = -state.sortDir;
        else { state.sortKey = c.key; state.sortDir = 1; }
        renderTable();
        toURL();
      });
      hr.appendChild(th);
    });
    thead.appendChild(hr);
    sorted(cols).forEach(function (r) {
      var tr = el("tr", {"data-run": r.run_id});
      if (state.selected[r.run_id]) tr.className = "selected";
      var td = el("td"), cb = el("input", {type: "checkbox", "class": "select", "data-run": r.run_id});
      cb.checked = !!state.selected[r.run_id];
      cb.addEventListener("change", function () {
        if (cb.checked) state.selected[r.run_id] = 1; else delete state.selected[r.run_id];
        tr.className = cb.checked ? "selected" : "";
        toURL();
        updateCharts();
      });
      td.appendChild(cb);
      tr.appendChild(td);
      vis.forEach(function (c) {
        var v = value(c, r), cell = el("td", c.num ? {"class": "num"} : null);
        if (c.key === "run_id") {
          cell.className = "id";
          cell.title = r.run_id;
          cell.appendChild(el("a", {href: "/run/" + encodeURIComponent(r.run_id)}, r.run_id));
        } else {
          cell.textContent = v === null || v === undefined || v === "" ? "–" : (c.num ? fmt(v) : String(v));
          if (c.key === "status") cell.className = "status-" + String(v).replace(/[^A-Z]/g, "");
          if (c.key === "status" && r.error) cell.title = r.error;
          if (c.key === "val_loss" && r.val_kind === "hard_missing")
            cell.title = "the loss with the skipping done is not recorded: gatelab eval RUN --record";
        }
        tr.appendChild(cell);
      });
      tbody.appendChild(tr);
    });
    renderColumnChooser(cols);
  }

  function renderExperiments() {
    var sel = document.getElementById("f-experiment"), cur = sel.value;
    Object.keys(state.experiments).sort().forEach(function (e) {
      for (var i = 0; i < sel.options.length; i++) if (sel.options[i].value === e) return;
      sel.appendChild(el("option", {value: e}, e));
    });
    sel.value = cur;
  }

  function refresh() {
    var tag = document.getElementById("f-tag").value.trim();
    var params = {experiment: document.getElementById("f-experiment").value,
                  status: document.getElementById("f-status").value, tag: tag};
    if (tag && tag.indexOf("=") < 1) { G.setStatus("tag: write it as key=value"); return Promise.resolve(); }
    return G.getJSON("/api/runs", params).then(function (runs) {
      state.runs = runs;
      state.polls++;
      runs.forEach(function (r) { state.experiments[r.experiment] = 1; });
      renderExperiments();
      renderTable();
      var running = runs.filter(function (r) { return r.status === "RUNNING"; }).length;
      G.setStatus(runs.length + " run" + (runs.length === 1 ? "" : "s") + (running ? ", " + running + " running" : "") +
                  " · updated " + new Date().toLocaleTimeString());
      return updateCharts();
    }).catch(function (e) { G.setStatus(e.message); });
  }

  // ---- data of the selected runs ----
  function live(id) {
    var r = state.runs.filter(function (x) { return x.run_id === id; })[0];
    return !r || r.status === "RUNNING" || r.status === "STALE" || r.status === "SCHEDULED";
  }
  // /api/run (group, tokens per step, params, gates) and every metric row; a finished run's are kept.
  function load(id) {
    if (state.info[id] && state.metrics[id] && !live(id)) return Promise.resolve();
    return Promise.all([
      state.info[id] && !live(id) ? Promise.resolve(state.info[id]) : G.getJSON("/api/run", {run: id}),
      G.getJSON("/api/metrics", {run: id}),
    ]).then(function (a) {
      var t = a[0].trace;
      state.info[id] = {group: a[0].group, tokens_per_step: a[0].tokens_per_step, params: parseIni(a[0].config),
                        gates: t ? t.gates : [], run: a[0].run, trace: t};
      state.metrics[id] = G.metricSeries(a[1]);
    });
  }

  // The run's configuration (INI text) as {"section.key": "value"}.
  function parseIni(text) {
    var out = {}, sec = "";
    String(text || "").split("\n").forEach(function (line) {
      line = line.replace(/[;#].*$/, "").trim();
      var m = /^\[(.+)\]$/.exec(line);
      if (m) { sec = m[1].trim(); return; }
      var eq = line.indexOf("=");
      if (eq > 0) out[(sec ? sec + "." : "") + line.slice(0, eq).trim()] = line.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
    });
    return out;
  }

  // The groups of the selected runs: by the chosen config keys, else by seed (the server's group), else one each.
  function groups(ids) {
    var keys = Object.keys(state.by).sort(), seeds = document.getElementById("c-group").checked;
    var out = [], byKey = {};
    ids.forEach(function (id) {
      var info = state.info[id];
      if (!info) return;
      var key, label;
      if (keys.length) {
        label = keys.map(function (k) { return info.params[k]; }).join(" · "); // the keys are in the title
        key = label;
      } else if (seeds) { key = info.group; label = null; }
      else { key = id; label = id; }
      if (!(key in byKey)) { byKey[key] = out.length; out.push({ids: [], key: key, label: label}); }
      out[byKey[key]].ids.push(id);
    });
    out.forEach(function (g) {
      if (!g.label)
        g.label = g.ids.length > 3 ? g.ids[0] + " and " + (g.ids.length - 1) + " other seeds"
                : g.ids.length > 1 ? g.ids.join(", ") : g.ids[0];
      if (g.ids.length > 1) g.label += " (n=" + g.ids.length + ")";
    });
    return out;
  }

  // The metric choice: every split/name the selected runs hold, by name; "loss" first.
  function renderMetricChoice(ids) {
    var sel = document.getElementById("c-metric"), cur = state.wantMetric || sel.value || "loss", names = {};
    ids.forEach(function (id) {
      Object.keys(state.metrics[id] || {}).forEach(function (k) { names[state.metrics[id][k].name] = 1; });
    });
    names.loss = 1;
    var list = Object.keys(names).sort(function (a, b) { return a === "loss" ? -1 : b === "loss" ? 1 : a < b ? -1 : 1; });
    if (list.join("\n") !== [].map.call(sel.options, function (o) { return o.value; }).join("\n")) {
      G.clear(sel);
      list.forEach(function (n) { sel.appendChild(el("option", {value: n}, n)); });
    }
    if (names[cur]) { sel.value = cur; state.wantMetric = null; } else sel.value = "loss";
  }

  // The config keys the selected runs differ in (and those chosen): what grouping can use.
  function renderKeyChoice(ids) {
    var box = document.getElementById("c-by"), keys = {}, vals = {};
    ids.forEach(function (id) {
      var p = (state.info[id] || {}).params || {};
      Object.keys(p).forEach(function (k) { (vals[k] = vals[k] || {})[p[k]] = 1; });
    });
    Object.keys(vals).forEach(function (k) {
      var n = Object.keys(vals[k]).length, all = ids.every(function (id) { return k in ((state.info[id] || {}).params || {}); });
      if (n > 1 || !all) keys[k] = 1;
    });
    Object.keys(state.by).forEach(function (k) { keys[k] = 1; });
    var list = Object.keys(keys).sort();
    if (box.getAttribute("data-keys") === list.join(",")) return;
    box.setAttribute("data-keys", list.join(","));
    G.clear(box);
    list.forEach(function (k) {
      var cb = el("input", {type: "checkbox", "data-key": k});
      cb.checked = !!state.by[k];
      cb.addEventListener("change", function () {
        if (cb.checked) state.by[k] = 1; else delete state.by[k];
        toURL();
        draw();
      });
      var lab = el("label");
      lab.appendChild(cb);
      lab.appendChild(document.createTextNode(" " + k));
      box.appendChild(lab);
    });
  }

  // ---- the metric chart ----
  function draw() {
    var ids = Object.keys(state.selected).sort().filter(function (id) { return state.info[id]; });
    var metric = document.getElementById("c-metric").value || "loss", split = document.getElementById("c-split").value;
    var xkind = document.getElementById("c-x").value, a = Number(document.getElementById("c-smooth").value) || 0;
    var curves = [], splits = {};
    ids.forEach(function (id) {
      Object.keys(state.metrics[id] || {}).forEach(function (k) {
        var m = state.metrics[id][k];
        if (m.name === metric && (split === "both" || m.split === split)) splits[m.split] = 1;
      });
    });
    var splitList = Object.keys(splits).sort(function (x, y) {
      var o = {train: 0, val: 1};
      return ((x in o ? o[x] : 2) - (y in o ? o[y] : 2)) || (x < y ? -1 : 1);
    });
    groups(ids).forEach(function (g, gi) {
      var color = G.PALETTE[gi % G.PALETTE.length];
      splitList.forEach(function (s, si) {
        var members = g.ids.map(function (id) {
          var m = state.metrics[id][s + "/" + metric];
          return m ? m.pts : [];
        }).filter(function (p) { return p.length; });
        if (!members.length) return;
        curves.push({label: g.label + " " + s, color: color, dash: si === 0 ? undefined : si === 1 ? [6, 4] : [2, 3],
                     members: members, tokensPerStep: state.info[g.ids[0]].tokens_per_step});
      });
    });
    var res = G.lossChart(document.getElementById("chart"), state.chart, curves, xkind,
                          ids.length ? metric + " of " + ids.length + " selected run" + (ids.length === 1 ? "" : "s") +
                            (Object.keys(state.by).length ? ", by " + Object.keys(state.by).sort().map(function (k) {
                              return k.replace(/^[a-z]+\./, ""); }).join(" · ") : "") : "",
                          {smooth: a, ylabel: metric === "loss" ? "loss (nats/token)" : metric});
    state.chart = res.chart;
    state.curves = res.lines;
    document.getElementById("chart-note").textContent = ids.length
      ? (res.lines ? "" : "the selected runs have no " + metric + " rows" + (split === "both" ? "" : " in " + split) + " yet")
      : "select runs in the table to overlay their curves";
  }

  // ---- one gate across the selected runs ----
  function renderGateChoice(ids) {
    var sel = document.getElementById("g-gate"), cur = state.wantGate || sel.value, have = {};
    ids.forEach(function (id) { (state.info[id].gates || []).forEach(function (g) { have[g.path] = g; }); });
    var list = Object.keys(have).sort();
    if (list.join(",") !== [].slice.call(sel.options, 1).map(function (o) { return o.value; }).join(",")) {
      while (sel.options.length > 1) sel.remove(1);
      list.forEach(function (p) { sel.appendChild(el("option", {value: p}, have[p].title + " (" + have[p].symbol + ")")); });
    }
    if (cur && have[cur]) { sel.value = cur; state.wantGate = null; }
    var g = have[sel.value], rs = document.getElementById("g-row"), R = g ? g.shape[0] : 0;
    if (rs.options.length !== R + 1) {
      var rc = state.wantRow || rs.value;
      while (rs.options.length > 1) rs.remove(1);
      for (var r = 0; r < R; r++) rs.appendChild(el("option", {value: String(r)}, (g.axes[0] === "router" ? "router " : "block ") + r));
      if (rc && Number(rc) < R) { rs.value = rc; state.wantRow = null; }
    }
    return g;
  }

  function drawGates() {
    var ids = Object.keys(state.selected).sort().filter(function (id) { return state.info[id]; });
    var div = document.getElementById("gates");
    var g = renderGateChoice(ids), row = document.getElementById("g-row").value;
    if (!g) {
      if (state.gchart && state.gchart.chart) state.gchart.chart.destroy();
      G.clear(div);
      state.gchart = null;
      state.gateCurves = 0;
      return Promise.resolve();
    }
    var with_ = ids.filter(function (id) { return (state.info[id].gates || []).some(function (x) { return x.path === g.path; }); });
    return Promise.all(with_.map(function (id) {
      var k = id + " " + g.path;
      if (state.quant[k] && !live(id)) return Promise.resolve();
      return G.getJSON("/api/trace", {run: id, gate: g.path, summary: "quantiles"}).then(function (q) { state.quant[k] = q; });
    })).then(function () {
      var curves = [];
      groups(with_).forEach(function (gr, gi) {
        var members = gr.ids.map(function (id) {
          var q = state.quant[id + " " + g.path], med = q.q.indexOf(0.5);
          return q.steps.map(function (st, si) {
            var rows = q.quantiles[si], v = 0, n = 0;
            rows.forEach(function (qq, r) {
              if ((row === "mean" || Number(row) === r) && qq[med] !== null) { v += qq[med]; n++; }
            });
            return {step: st, value: n ? v / n : null, time: null};
          }).filter(function (p) { return p.value !== null; });
        });
        curves.push({label: gr.label, color: G.PALETTE[gi % G.PALETTE.length], members: members,
                     tokensPerStep: state.info[gr.ids[0]].tokens_per_step});
      });
      var xkind = document.getElementById("c-x").value === "tokens" ? "tokens" : "step";
      state.gchart = G.lossChart(div, state.gchart, curves, xkind,
                                 g.title + " (" + g.symbol + "), " + (row === "mean" ? "mean over blocks" : "block " + row),
                                 {ylabel: g.symbol + " (median over probe tokens)", height: 260});
      state.gateCurves = state.gchart.lines;
      document.getElementById("gates-note").textContent = with_.length < ids.length
        ? (ids.length - with_.length) + " selected run(s) record no " + g.symbol + "; x is the step (or tokens)"
        : "the median over probe tokens and heads at every evaluation of the trace; x is the step (or tokens)";
    });
  }

  function updateCharts() {
    var ids = Object.keys(state.selected).sort().filter(function (id) {
      return state.runs.some(function (r) { return r.run_id === id; });
    });
    return Promise.all(ids.map(load)).then(function () {
      renderMetricChoice(ids);
      renderKeyChoice(ids);
      draw();
      return drawGates();
    }).then(toURL);
  }

  fromURL();
  ["f-experiment", "f-status"].forEach(function (id) {
    document.getElementById(id).addEventListener("change", function () { toURL(); refresh(); });
  });
  document.getElementById("f-tag").addEventListener("change", function () { toURL(); refresh(); });
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); refresh(); });
  ["c-metric", "c-split", "c-x", "c-group"].forEach(function (id) {
    document.getElementById(id).addEventListener("change", function () { toURL(); draw(); drawGates(); });
  });
  document.getElementById("c-smooth").addEventListener("input", function () {
    document.getElementById("c-smooth-v").textContent = this.value;
    toURL();
    draw();
  });
  ["g-gate", "g-row"].forEach(function (id) {
    document.getElementById(id).addEventListener("change", function () {
      if (id === "g-gate") { var rs = document.getElementById("g-row"); while (rs.options.length > 1) rs.remove(1); }
      toURL();
      drawGates();
    });
  });
  refresh();
  G.poll(refresh);
})();
