// common.js — what the runs page (runs.js) and the run page (run.js) share: DOM building with
// textContent only (no HTML is ever built from data, so a run id or tag cannot become markup),
// fetching the JSON endpoints (docs/serve.md), loss curves from /api/metrics rows and their
// uPlot chart with mean ± sd bands.  No dependency besides the vendored uPlot.
"use strict";
var G = (function () {
  var POLL_MS = 3000;
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
                 "#7f7f7f", "#bcbd22"];

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) {
      if (k === "class") e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }

  function qs(params) {
    var parts = [];
    for (var k in params) {
      var v = params[k];
      if (v === undefined || v === null || v === "") continue;
      (Array.isArray(v) ? v : [v]).forEach(function (x) {
        parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(x));
      });
    }
    return parts.length ? "?" + parts.join("&") : "";
  }

  function getJSON(path, params) {
    return fetch(path + qs(params || {}), {cache: "no-store"}).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) { var e = new Error(j && j.error ? j.error : ("HTTP " + r.status)); e.status = r.status; throw e; }
        return j;
      });
    });
  }

  function setStatus(text) { var s = document.getElementById("status"); if (s) s.textContent = text; }

  function fmt(v, digits) {
    if (v === null || v === undefined) return "–";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return String(v);
    if (Math.abs(v) >= 1000) return String(Math.round(v));
    return v.toPrecision(digits || 4);
  }

  // One point per step and split: of several rows at a step the one on the most windows.
  function lossSeries(rows) {
    var by = {train: {}, val: {}};
    rows.forEach(function (r) {
      if (r.name !== "loss" || !(r.split in by) || r.value === null) return;
      var b = by[r.split], old = b[r.step];
      if (!old || (r.win_count || 0) > (old.win_count || 0)) b[r.step] = r;
    });
    var t0 = Infinity;
    rows.forEach(function (r) {
      if ((r.split === "train" || r.split === "val") && r.wall_time !== null && r.wall_time < t0) t0 = r.wall_time;
    });
    var out = {};
    ["train", "val"].forEach(function (s) {
      out[s] = Object.keys(by[s]).map(Number).sort(function (a, b) { return a - b; }).map(function (st) {
        var r = by[s][st];
        return {step: st, value: r.value, time: r.wall_time !== null ? r.wall_time - t0 : null};
      });
    });
    return out;
  }

  function xOf(p, xkind, tokensPerStep) {
    if (xkind === "tokens") return tokensPerStep ? p.step * tokensPerStep : null;
    if (xkind === "time") return p.time;
    return p.step;
  }

  // curves: [{label, color, dash, members: [[points], ...], tokensPerStep}], one line per curve
  // (the mean over members at each step, with a ± sd band when there are several).
  function buildData(curves, xkind) {
    var xsSet = {}, lines = [];
    curves.forEach(function (c) {
      var bystep = {};
      c.members.forEach(function (pts) {
        pts.forEach(function (p) {
          (bystep[p.step] = bystep[p.step] || []).push(p);
        });
      });
      var pts = Object.keys(bystep).map(Number).sort(function (a, b) { return a - b; }).map(function (st) {
        var ps = bystep[st], k = ps.length, m = 0, sd = 0, tm = 0, nt = 0;
        ps.forEach(function (p) { m += p.value; if (p.time !== null) { tm += p.time; nt++; } });
        m /= k;
        if (k > 1) { ps.forEach(function (p) { sd += (p.value - m) * (p.value - m); }); sd = Math.sqrt(sd / (k - 1)); }
        var x = xOf({step: st, time: nt ? tm / nt : null}, xkind, c.tokensPerStep);
        return {x: x, mean: m, sd: sd, k: k};
      }).filter(function (p) { return p.x !== null; });
      pts.forEach(function (p) { xsSet[p.x] = 1; });
      lines.push({curve: c, pts: pts, band: c.members.length > 1});
    });
    var xs = Object.keys(xsSet).map(Number).sort(function (a, b) { return a - b; });
    var index = {};
    xs.forEach(function (x, i) { index[x] = i; });
    var data = [xs], series = [{label: xkind === "time" ? "time (s)" : xkind}], bands = [];
    lines.forEach(function (ln) {
      function col(f) {
        var a = new Array(xs.length).fill(null);
        ln.pts.forEach(function (p) { a[index[p.x]] = f(p); });
        return a;
      }
      data.push(col(function (p) { return p.mean; }));
      var c = ln.curve;
      series.push({label: c.label, stroke: c.color, width: 1.6, dash: c.dash, spanGaps: true,
                   value: function (u, v) { return v === null ? "–" : v.toFixed(4); }});
      if (ln.band) {
        var mid = data.length - 1;
        data.push(col(function (p) { return p.mean + p.sd; }));
        series.push({label: "+sd", stroke: "transparent", width: 0, spanGaps: true, points: {show: false}});
        data.push(col(function (p) { return p.mean - p.sd; }));
        series.push({label: "−sd", stroke: "transparent", width: 0, spanGaps: true, points: {show: false}});
        bands.push({series: [mid + 1, mid + 2], fill: c.color + "33"});
      }
    });
    return {data: data, series: series, bands: bands, lines: lines.length};
  }

  // Draw (or redraw) a loss chart into div; returns {chart, lines}.
  function lossChart(div, old, curves, xkind, title) {
    var b = buildData(curves, xkind);
    if (old && old.chart) old.chart.destroy();
    clear(div);
    if (!b.lines) return {chart: null, lines: 0};
    var w = Math.max(400, Math.min(1100, div.clientWidth || 900));
    var opts = {title: title || "", width: w, height: 340, series: b.series, bands: b.bands,
                scales: {x: {time: false}},
                axes: [{label: b.series[0].label}, {label: "loss (nats/token)"}]};
    return {chart: new uPlot(opts, b.data, div), lines: b.lines};
  }

  // White to orange (or blue) for v in [0, 1].
  function colour(v, blue) {
    if (!(v >= 0)) v = 0;
    if (v > 1) v = 1;
    var to = blue ? [0x21, 0x71, 0xb5] : [0xe6, 0x55, 0x0d];
    var c = to.map(function (t) { return Math.round(255 + v * (t - 255)); });
    return "rgb(" + c.join(",") + ")";
  }

  function poll(fn) {
    var busy = false;
    return setInterval(function () {
      if (busy) return;
      busy = true;
      Promise.resolve(fn()).catch(function (e) { setStatus("update failed: " + e.message); })
        .then(function () { busy = false; });
    }, POLL_MS);
  }

  return {el: el, clear: clear, getJSON: getJSON, setStatus: setStatus, fmt: fmt, lossSeries: lossSeries,
          lossChart: lossChart, colour: colour, poll: poll, PALETTE: PALETTE, POLL_MS: POLL_MS};
})();
