// runs.js — the runs page: the table of /api/runs (sort by any column, filter by experiment, status
// and tag through the endpoint's own filters, choose columns), and the loss curves of the selected
// runs overlaid (/api/metrics), runs that are the same but for the seed (/api/run's "group") drawn
// as one mean curve with a ± sd band.  Polls every few seconds: new runs appear, curves grow.
"use strict";
(function () {
  var el = G.el, fmt = G.fmt;
  var state = {runs: [], sortKey: "start_time", sortDir: -1, selected: {}, experiments: {},
               info: {}, metrics: {}, chart: null, curves: 0, polls: 0};
  window.gatelab = state; // read by tests/integration/serve.sh (the browser test)

  var BASE = [
    {key: "run_id", label: "run"},
    {key: "experiment", label: "experiment"},
    {key: "variant", label: "variant"},
    {key: "status", label: "status"},
    {key: "step", label: "step", num: true},
    {key: "train_loss", label: "train loss", num: true},
    {key: "val_loss", label: "val loss", num: true},
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
  var HIDDEN_BY_DEFAULT = {val_on: 1, tlops_saved: 1};

  function columns() {
    var keys = {};
    state.runs.forEach(function (r) { Object.keys(r.params || {}).forEach(function (k) { keys[k] = 1; }); });
    var cols = BASE.slice();
    Object.keys(keys).sort().forEach(function (k) {
      cols.splice(3, 0, {key: "param:" + k, label: k, get: function (r) { return (r.params || {})[k]; }});
    });
    return cols;
  }
  function value(c, r) { return c.get ? c.get(r) : r[c.key]; }

  function shown() {
    try { return JSON.parse(localStorage.getItem("gatelab.hidden") || "null") || HIDDEN_BY_DEFAULT; }
    catch (e) { return HIDDEN_BY_DEFAULT; }
  }
  function setHidden(h) { try { localStorage.setItem("gatelab.hidden", JSON.stringify(h)); } catch (e) { /* none */ } }

  function renderColumnChooser(cols) {
    var list = document.getElementById("column-list"), hidden = shown();
    G.clear(list);
    cols.forEach(function (c) {
      var cb = el("input", {type: "checkbox"});
      cb.checked = !hidden[c.key];
      cb.addEventListener("change", function () {
        var h = shown();
        if (cb.checked) delete h[c.key]; else h[c.key] = 1;
        setHidden(h);
        renderTable();
      });
      var lab = el("label");
      lab.appendChild(cb);
      lab.appendChild(document.createTextNode(" " + c.label));
      list.appendChild(lab);
    });
  }

  function sorted(cols) {
    var c = cols.filter(function (x) { return x.key === state.sortKey; })[0] ||
            {key: state.sortKey};
    return state.runs.slice().sort(function (a, b) {
      var x = value(c, a), y = value(c, b);
      if (x === y) return a.run_id < b.run_id ? -1 : 1;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * state.sortDir;
    });
  }

  function renderTable() {
    var cols = columns(), hidden = shown(), vis = cols.filter(function (c) { return !hidden[c.key]; });
    var table = document.getElementById("runs"), thead = table.tHead, tbody = table.tBodies[0];
    G.clear(thead);
    G.clear(tbody);
    var hr = el("tr");
    hr.appendChild(el("th", {title: "select to overlay the loss curves"}, "✓"));
    vis.forEach(function (c) {
      var th = el("th", {"data-key": c.key}, c.label);
      if (c.key === state.sortKey) th.className = state.sortDir > 0 ? "sorted-asc" : "sorted-desc";
      th.addEventListener("click", function () {
        if (state.sortKey === c.key) state.sortDir = -state.sortDir;
        else { state.sortKey = c.key; state.sortDir = 1; }
        renderTable();
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
        updateChart();
      });
      td.appendChild(cb);
      tr.appendChild(td);
      vis.forEach(function (c) {
        var v = value(c, r), cell = el("td", c.num ? {"class": "num"} : null);
        if (c.key === "run_id") {
          cell.appendChild(el("a", {href: "/run/" + encodeURIComponent(r.run_id)}, r.run_id));
        } else {
          cell.textContent = v === null || v === undefined || v === "" ? "–" : (c.num ? fmt(v) : String(v));
          if (c.key === "status") cell.className = "status-" + String(v).replace(/[^A-Z]/g, "");
          if (c.key === "status" && r.error) cell.title = r.error;
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
      return updateChart();
    }).catch(function (e) { G.setStatus(e.message); });
  }

  // /api/run (group, tokens per step) and /api/metrics for a run; a finished run's are kept.
  function load(id) {
    var r = state.runs.filter(function (x) { return x.run_id === id; })[0];
    var live = !r || r.status === "RUNNING" || r.status === "STALE" || r.status === "SCHEDULED";
    var have = state.info[id] && state.metrics[id];
    if (have && !live) return Promise.resolve();
    return Promise.all([
      state.info[id] ? Promise.resolve(state.info[id]) : G.getJSON("/api/run", {run: id}),
      G.getJSON("/api/metrics", {run: id, name: "loss"}),
    ]).then(function (a) {
      state.info[id] = {group: a[0].group, tokens_per_step: a[0].tokens_per_step};
      state.metrics[id] = G.lossSeries(a[1]);
    });
  }

  function updateChart() {
    var ids = Object.keys(state.selected).sort();
    var note = document.getElementById("chart-note");
    return Promise.all(ids.map(load)).then(function () {
      var xkind = document.getElementById("c-x").value, split = document.getElementById("c-split").value;
      var group = document.getElementById("c-group").checked;
      var groups = [], byKey = {};
      ids.forEach(function (id) {
        if (!state.info[id]) return;
        var key = group ? state.info[id].group : id;
        if (!(key in byKey)) { byKey[key] = groups.length; groups.push({ids: [], key: key}); }
        groups[byKey[key]].ids.push(id);
      });
      var curves = [];
      groups.forEach(function (g, gi) {
        var color = G.PALETTE[gi % G.PALETTE.length];
        var name = g.ids.length > 3 ? g.ids[0] + " and " + (g.ids.length - 1) + " other seeds (mean ± sd)"
                 : g.ids.length > 1 ? g.ids.join(", ") + " (mean ± sd)" : g.ids[0];
        ["train", "val"].forEach(function (s) {
          if (split !== "both" && split !== s) return;
          var members = g.ids.map(function (id) { return state.metrics[id][s]; })
                             .filter(function (p) { return p.length; });
          if (!members.length) return;
          curves.push({label: name + " " + s, color: color, dash: s === "val" ? [6, 4] : undefined,
                       members: members, tokensPerStep: state.info[g.ids[0]].tokens_per_step});
        });
      });
      var res = G.lossChart(document.getElementById("chart"), state.chart, curves, xkind,
                            ids.length ? "loss of " + ids.length + " selected run" + (ids.length === 1 ? "" : "s") : "");
      state.chart = res.chart;
      state.curves = res.lines;
      note.textContent = ids.length ? (res.lines ? "" : "the selected runs have no loss rows yet")
                                    : "select runs in the table to overlay their loss curves";
    });
  }

  ["f-experiment", "f-status"].forEach(function (id) {
    document.getElementById(id).addEventListener("change", refresh);
  });
  document.getElementById("f-tag").addEventListener("change", refresh);
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); refresh(); });
  ["c-x", "c-split", "c-group"].forEach(function (id) {
    document.getElementById(id).addEventListener("change", updateChart);
  });
  refresh();
  G.poll(refresh);
})();
