// run.js — a run's page: headline (its /api/runs row), the curves of any metric it records, the α heatmap (blocks × KV heads,
// mean over the probe tokens at the last evaluation), the TSA depth profile (mean halting p per
// router), every gate's distribution over training (quantiles per block per step, computed by the
// server from the trace), the probe text coloured by a chosen gate with values on hover, the latest
// metrics and the configuration.  A RUNNING run's page polls every few seconds.
"use strict";
(function () {
  var el = G.el, fmt = G.fmt;
  var id = document.body.getAttribute("data-run");
  var st = {info: null, loss: null, dist: [], chart: null, polls: 0, lossPoints: 0};
  window.gatelab = st;

  function kv(table, rows) {
    G.clear(table);
    rows.forEach(function (r) {
      var tr = el("tr");
      tr.appendChild(el("th", null, r[0]));
      tr.appendChild(el("td", null, r[1] === null || r[1] === undefined || r[1] === "" ? "–" : r[1]));
      table.appendChild(tr);
    });
  }

  function headline(info) {
    var r = info.run, on = r.val_measured_on;
    var rows = [["experiment", r.experiment], ["variant", r.variant], ["status", r.status + (r.error ? ": " + r.error : "")],
                ["step", r.step], ["train loss (nats/token)", fmt(r.train_loss)],
                ["val loss (nats/token)" + (r.val_kind === "hard" || r.val_kind === "hard_missing" ? ", skipping done" : ""),
                 (r.val_kind === "hard_missing" ? "not recorded (gatelab eval RUN --record)"
                                                : fmt(r.val_loss) + (r.val_se !== null ? " ± " + fmt(r.val_se, 2) : "")) +
                  (on ? "  (" + (r.val_headline ? "" : "periodic, ") + on.split + " windows [" + on.first + "," +
                        (on.first + on.windows) + ") at step " + on.step + ")" : "")],
                ["soft val loss (every block run)", r.val_soft_loss === null ? null : fmt(r.val_soft_loss)],
                ["α active fraction", fmt(r.active_frac)], ["TLOps saved", fmt(r.tlops_saved)],
                ["throughput (tokens/s)", fmt(r.tokens_per_s)], ["started", r.start_iso], ["took (s)", fmt(r.duration_s)]];
    Object.keys(r.params || {}).forEach(function (k) { rows.push(["param " + k, r.params[k]]); });
    Object.keys(r.tags || {}).forEach(function (k) { rows.push(["tag " + k, r.tags[k]]); });
    kv(document.getElementById("headline"), rows);
    var tb = document.querySelector("#latest tbody");
    G.clear(tb);
    info.latest.forEach(function (m) {
      var tr = el("tr");
      [m.split, m.name, fmt(m.value), m.se === null ? "–" : fmt(m.se, 2), m.step, m.measured_on || "–"]
        .forEach(function (v) { tr.appendChild(el("td", null, v)); });
      tb.appendChild(tr);
    });
    document.getElementById("config").textContent = info.config || "(no configuration stored)";
    document.getElementById("trace-note").textContent = info.trace ? "" : (info.trace_note || "");
  }

  // Any metric the run records, one curve per split (train, val, …), smoothed with the raw curve faint beneath.
  function drawLoss() {
    if (!st.series) return;
    var sel = document.getElementById("c-metric"), names = {loss: 1};
    Object.keys(st.series).forEach(function (k) { names[st.series[k].name] = 1; });
    var list = Object.keys(names).sort(function (a, b) { return a === "loss" ? -1 : b === "loss" ? 1 : a < b ? -1 : 1; });
    if (list.join("\n") !== [].map.call(sel.options, function (o) { return o.value; }).join("\n")) {
      var cur = sel.value;
      G.clear(sel);
      list.forEach(function (n) { sel.appendChild(el("option", {value: n}, n)); });
      sel.value = names[cur] ? cur : "loss";
    }
    var metric = sel.value, xkind = document.getElementById("c-x").value, curves = [];
    Object.keys(st.series).filter(function (k) { return st.series[k].name === metric; }).sort().forEach(function (k, i) {
      var m = st.series[k];
      curves.push({label: m.split, color: G.PALETTE[i % G.PALETTE.length], members: [m.pts],
                   dash: m.split === "val" ? [6, 4] : undefined, tokensPerStep: st.info.tokens_per_step});
    });
    st.lossPoints = st.loss.train.length + st.loss.val.length;
    st.curves = curves.length;
    st.chart = G.lossChart(document.getElementById("loss"), st.chart, curves, xkind, "",
                           {smooth: Number(document.getElementById("c-smooth").value) || 0,
                            ylabel: metric === "loss" ? "loss (nats/token)" : metric});
  }

  function gate(key) {
    var t = st.info.trace;
    return t ? t.gates.filter(function (g) { return g.key === key; })[0] : null;
  }

  // Block × head heatmap of a per-head gate at the last step, mean over tokens when it has a token axis.
  function heatmap() {
    var g = gate("alpha") || gate("headgate"), sec = document.getElementById("sec-heatmap");
    sec.hidden = !g;
    if (!g) return Promise.resolve();
    return G.getJSON("/api/trace", {run: id, gate: g.path, step: -1}).then(function (t) {
      var L = g.shape[0], P = g.per_token ? g.shape[1] : 1, H = g.shape[g.shape.length - 1];
      var m = [], hi = 0;
      for (var l = 0; l < L; l++) {
        m.push([]);
        for (var h = 0; h < H; h++) {
          var s = 0, n = 0;
          for (var p = 0; p < P; p++) {
            var v = t.values[(l * P + p) * H + h];
            if (v !== null) { s += v; n++; }
          }
          m[l].push(n ? s / n : null);
          if (n && s / n > hi) hi = s / n;
        }
      }
      document.getElementById("heatmap-title").textContent = g.title + " (" + g.symbol + "), blocks × KV heads";
      document.getElementById("heatmap-note").textContent = (g.per_token ? "mean over " + P + " probe tokens, " : "") +
        "at step " + t.step + "; colour relative to the largest value (" + fmt(hi) + ")";
      var table = document.getElementById("heatmap");
      G.clear(table);
      var hr = el("tr");
      hr.appendChild(el("th"));
      for (var h2 = 0; h2 < H; h2++) hr.appendChild(el("th", null, "H" + h2));
      table.appendChild(hr);
      m.forEach(function (row, l2) {
        var tr = el("tr");
        tr.appendChild(el("th", null, "L" + l2));
        row.forEach(function (v, h3) {
          var td = el("td", {title: "block " + l2 + ", head " + h3 + ": " + fmt(v, 6)}, v === null ? "–" : v.toFixed(3));
          td.style.background = G.colour(hi > 0 && v !== null ? v / hi : 0, false);
          tr.appendChild(td);
        });
        table.appendChild(tr);
      });
    });
  }

  // TSA: mean halting probability per router at the last step, and the mean soft depth 1 + Σ (1 − p).
  function depth() {
    var g = gate("p"), sec = document.getElementById("sec-depth");
    sec.hidden = !g;
    if (!g) return Promise.resolve();
    return G.getJSON("/api/trace", {run: id, gate: g.path, step: -1}).then(function (t) {
      var R = g.shape[0], P = g.shape[1], xs = [], ys = [], dsum = 0;
      for (var r = 0; r < R; r++) {
        var s = 0;
        for (var p = 0; p < P; p++) s += t.values[r * P + p];
        xs.push(r + 1);
        ys.push(s / P);
      }
      for (var p2 = 0; p2 < P; p2++) {
        var d = 1;
        for (var r2 = 0; r2 < R; r2++) d += 1 - t.values[r2 * P + p2];
        dsum += d;
      }
      document.getElementById("depth-note").textContent = "mean p by router at step " + t.step + "; mean soft depth " +
        (dsum / P).toFixed(3) + " of " + (R + 1) + " blocks";
      var div = document.getElementById("depth");
      if (st.depthChart) st.depthChart.destroy();
      G.clear(div);
      st.depthChart = new uPlot({width: 460, height: 220, scales: {x: {time: false}},
        series: [{label: "router"}, {label: "mean p", stroke: G.PALETTE[0], width: 2}],
        axes: [{label: "router (after block)"}, {label: "p"}]}, [xs, ys], div);
    });
  }

  // Quantiles per block per step of the chosen gate: one small chart per block.
  function dist() {
    var t = st.info.trace, sec = document.getElementById("sec-dist"), sel = document.getElementById("d-gate");
    sec.hidden = !t || !t.gates.length;
    if (sec.hidden) return Promise.resolve();
    if (!sel.options.length) t.gates.forEach(function (g) { sel.appendChild(el("option", {value: g.path}, g.title)); });
    var g = t.gates.filter(function (x) { return x.path === sel.value; })[0] || t.gates[0];
    return G.getJSON("/api/trace", {run: id, gate: g.path, summary: "quantiles"}).then(function (q) {
      var div = document.getElementById("dist");
      st.dist.forEach(function (c) { c.destroy(); });
      st.dist = [];
      G.clear(div);
      var R = q.quantiles.length ? q.quantiles[0].length : 0, rowName = g.axes[0] === "router" ? "router " : "block ";
      for (var r = 0; r < R; r++) {
        var cols = [q.steps];
        for (var k = 0; k < q.q.length; k++) cols.push(q.quantiles.map(function (s) { return s[r][k]; }));
        var box = el("div");
        div.appendChild(box);
        st.dist.push(new uPlot({title: rowName + r, width: 320, height: 200, scales: {x: {time: false}},
          series: [{label: "step"},
                   {label: "5%", stroke: "transparent", points: {show: false}},
                   {label: "25%", stroke: "transparent", points: {show: false}},
                   {label: "median", stroke: G.PALETTE[0], width: 2},
                   {label: "75%", stroke: "transparent", points: {show: false}},
                   {label: "95%", stroke: "transparent", points: {show: false}}],
          bands: [{series: [5, 1], fill: "#1f77b422"}, {series: [4, 2], fill: "#1f77b444"}],
          legend: {show: false}, axes: [{}, {label: g.symbol}]}, cols, box));
      }
    });
  }

  // n options prefix0..; a fresh list starts at dflt (the probe text opens on the last block: the
  // first has no value residual to mix, so its α is 0)
  function fillSelect(sel, n, prefix, dflt) {
    if (sel.options.length === n) return;
    var cur = sel.value;
    G.clear(sel);
    for (var i = 0; i < n; i++) sel.appendChild(el("option", {value: String(i)}, prefix + i));
    sel.value = cur && Number(cur) < n ? cur : String(dflt);
  }

  // The probe text coloured by one row (and head) of a per-token gate, the value on hover.
  function probe() {
    var t = st.info.trace, sec = document.getElementById("sec-probe");
    var gates = t ? t.gates.filter(function (g) { return g.per_token; }) : [];
    sec.hidden = !gates.length;
    if (sec.hidden) return Promise.resolve();
    var gsel = document.getElementById("p-gate");
    if (!gsel.options.length) gates.forEach(function (g) { gsel.appendChild(el("option", {value: g.path}, g.title)); });
    var g = gates.filter(function (x) { return x.path === gsel.value; })[0] || gates[0];
    var R = g.shape[0], P = g.shape[1], W = g.shape.length > 2 ? g.shape[2] : 1;
    fillSelect(document.getElementById("p-row"), R, g.axes[0] === "router" ? "R" : "L", R - 1);
    fillSelect(document.getElementById("p-col"), W, "H", 0);
    document.getElementById("p-col").disabled = W === 1;
    var r = Number(document.getElementById("p-row").value || 0), h = Number(document.getElementById("p-col").value || 0);
    return G.getJSON("/api/trace", {run: id, gate: g.path, step: -1}).then(function (tr) {
      var vals = [], hi = 0, lo = Infinity;
      for (var i = 0; i < P; i++) {
        var v = tr.values[(r * P + i) * W + h];
        vals.push(v);
        if (v !== null) { if (v > hi) hi = v; if (v < lo) lo = v; }
      }
      var div = document.getElementById("probe"), text = t.probe_text;
      G.clear(div);
      var frag = document.createDocumentFragment();
      for (var j = 0; j < P; j++) {
        var ch = text ? text[j] : "·", v2 = vals[j];
        var sp = el("span", {title: (text ? JSON.stringify(ch) : "token " + t.probe_category[j]) + "  " + g.symbol + " = " +
                                    fmt(v2, 5)}, ch === "\n" ? "↵\n" : ch);
        sp.style.background = G.colour(hi > 0 && v2 !== null ? v2 / hi : 0, g.key === "p");
        frag.appendChild(sp);
      }
      div.appendChild(frag);
      document.getElementById("probe-note").textContent = P + " probe tokens at step " + tr.step + "; " + g.symbol +
        " from " + fmt(lo) + " to " + fmt(hi) + " (white 0, deepest " + fmt(hi) + ")" +
        (text ? "" : "; no checkpoint yet, so the text cannot be decoded");
    });
  }

  function refresh() {
    return Promise.all([G.getJSON("/api/run", {run: id}), G.getJSON("/api/metrics", {run: id})])
      .then(function (a) {
        st.info = a[0];
        st.series = G.metricSeries(a[1]);
        st.loss = G.lossSeries(a[1]);
        st.polls++;
        headline(st.info);
        drawLoss();
        var live = st.info.run.status === "RUNNING";
        G.setStatus(st.info.run.status + (live ? " · live, updated " + new Date().toLocaleTimeString() : ""));
        return Promise.all([heatmap(), depth(), dist(), probe()]);
      }).then(function () {
        if (st.info.run.status !== "RUNNING" && st.timer) { clearInterval(st.timer); st.timer = null; }
      }).catch(function (e) { G.setStatus(e.message); });
  }

  document.getElementById("c-x").addEventListener("change", drawLoss);
  document.getElementById("c-metric").addEventListener("change", drawLoss);
  document.getElementById("c-smooth").addEventListener("input", drawLoss);
  document.getElementById("d-gate").addEventListener("change", dist);
  ["p-gate", "p-row", "p-col"].forEach(function (x) {
    document.getElementById(x).addEventListener("change", function () {
      if (x === "p-gate") { G.clear(document.getElementById("p-row")); G.clear(document.getElementById("p-col")); }
      probe();
    });
  });
  refresh().then(function () {
    if (st.info && st.info.run.status === "RUNNING") st.timer = G.poll(refresh);
  });
})();
