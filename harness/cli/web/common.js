// common.js — what the runs page (runs.js) and the run page (run.js) share: DOM building with
// textContent only (no HTML is ever built from data, so a run id or tag cannot become markup),
// fetching the JSON endpoints (docs/serve.md), curves of any metric from /api/metrics rows, and their
// uPlot chart: the mean over seeds with its 95 % interval as a band, optionally smoothed (EMA) with
// the raw curve faint beneath.  No dependency besides the vendored uPlot.
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

  // A metric row's curve key: "split/name" with its parameters, "val/alpha_mean{layer=2}".
  function metricKey(r) {
    var p = r.params && typeof r.params === "object" ? r.params : {};
    var ks = Object.keys(p).sort();
    return r.split + "/" + r.name + (ks.length ? "{" + ks.map(function (k) { return k + "=" + p[k]; }).join(",") + "}" : "");
  }

  // Every metric of a run as curves: {key: {split, name, label, pts: [{step, value, time}]}}, one point
  // per step (of several rows at a step, the one on the most windows); time is seconds since the
  // run's first train or val row.
  function metricSeries(rows) {
    var by = {}, t0 = Infinity;
    rows.forEach(function (r) {
      if ((r.split === "train" || r.split === "val") && r.wall_time !== null && r.wall_time < t0) t0 = r.wall_time;
    });
    if (!isFinite(t0)) rows.forEach(function (r) { if (r.wall_time !== null && r.wall_time < t0) t0 = r.wall_time; });
    rows.forEach(function (r) {
      if (r.value === null) return;
      var k = metricKey(r), m = by[k] || (by[k] = {split: r.split, name: k.slice(r.split.length + 1), pts: {}});
      var old = m.pts[r.step];
      if (!old || (r.win_count || 0) > (old.win_count || 0)) m.pts[r.step] = r;
    });
    var out = {};
    Object.keys(by).forEach(function (k) {
      var m = by[k];
      out[k] = {split: m.split, name: m.name, pts: Object.keys(m.pts).map(Number).sort(function (a, b) { return a - b; })
        .map(function (st) {
          var r = m.pts[st];
          return {step: st, value: r.value, time: r.wall_time !== null ? r.wall_time - t0 : null};
        })};
    });
    return out;
  }

  // The loss curves (train/loss, val/loss) of a run's rows, as before: {train: [...], val: [...]}.
  function lossSeries(rows) {
    var m = metricSeries(rows);
    return {train: m["train/loss"] ? m["train/loss"].pts : [], val: m["val/loss"] ? m["val/loss"].pts : []};
  }

  function xOf(p, xkind, tokensPerStep) {
    if (xkind === "tokens") return tokensPerStep ? p.step * tokensPerStep : null;
    if (xkind === "time") return p.time;
    return p.step;
  }

  // Student's t, two-sided 95 %, for df degrees of freedom (the mean's interval over seeds).
  var T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
             2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
             2.045, 2.042];
  function t95(df) { return df < 1 ? NaN : df <= 30 ? T95[df - 1] : df <= 60 ? 2.0 : 1.98; }

  // Exponential moving average with TensorBoard's debiasing (weight a in [0, 1): 0 = raw).
  function smooth(pts, a) {
    if (!(a > 0)) return pts;
    var s = 0, n = 0;
    return pts.map(function (p) {
      s = a * s + (1 - a) * p.value;
      n++;
      return {step: p.step, time: p.time, value: s / (1 - Math.pow(a, n))};
    });
  }

  // curves: [{label, color, dash, members: [[points], ...], tokensPerStep}], one line per curve: the
  // mean over members at each step, with its 95 % interval (t over the members) as a band when there
  // are several.  opts.smooth (EMA weight) smooths each member first and draws the raw mean faint
  // beneath.
  function buildData(curves, xkind, opts) {
    opts = opts || {};
    var a = opts.smooth || 0;
    var xsSet = {}, lines = [];
    function summarise(members, tokensPerStep) {
      var bystep = {};
      members.forEach(function (pts) { pts.forEach(function (p) { (bystep[p.step] = bystep[p.step] || []).push(p); }); });
      return Object.keys(bystep).map(Number).sort(function (x, y) { return x - y; }).map(function (st) {
        var ps = bystep[st], k = ps.length, m = 0, sd = 0, tm = 0, nt = 0;
        ps.forEach(function (p) { m += p.value; if (p.time !== null) { tm += p.time; nt++; } });
        m /= k;
        if (k > 1) { ps.forEach(function (p) { sd += (p.value - m) * (p.value - m); }); sd = Math.sqrt(sd / (k - 1)); }
        var x = xOf({step: st, time: nt ? tm / nt : null}, xkind, tokensPerStep);
        return {x: x, mean: m, half: k > 1 ? t95(k - 1) * sd / Math.sqrt(k) : 0, k: k};
      }).filter(function (p) { return p.x !== null; });
    }
    curves.forEach(function (c) {
      var pts = summarise(c.members.map(function (m) { return smooth(m, a); }), c.tokensPerStep);
      var raw = a > 0 ? summarise(c.members, c.tokensPerStep) : null;
      pts.forEach(function (p) { xsSet[p.x] = 1; });
      lines.push({curve: c, pts: pts, raw: raw, band: c.members.length > 1});
    });
    var xs = Object.keys(xsSet).map(Number).sort(function (x, y) { return x - y; });
    var index = {};
    xs.forEach(function (x, i) { index[x] = i; });
    var data = [xs], series = [{label: xkind === "time" ? "time (s)" : xkind}], bands = [];
    lines.forEach(function (ln) {
      function col(pts, f) {
        var arr = new Array(xs.length).fill(null);
        pts.forEach(function (p) { if (p.x in index) arr[index[p.x]] = f(p); });
        return arr;
      }
      var c = ln.curve;
      if (ln.raw) { // the raw mean, faint, beneath the smoothed curve
        data.push(col(ln.raw, function (p) { return p.mean; }));
        series.push({label: c.label + " (raw)", stroke: c.color + "44", width: 1, dash: c.dash, spanGaps: true,
                     points: {show: false}});
      }
      data.push(col(ln.pts, function (p) { return p.mean; }));
      series.push({label: c.label, stroke: c.color, width: 1.6, dash: c.dash, spanGaps: true,
                   value: function (u, v) { return v === null ? "–" : Number(v).toPrecision(5); }});
      if (ln.band) {
        var mid = data.length - 1;
        data.push(col(ln.pts, function (p) { return p.mean + p.half; }));
        series.push({label: "+95%", stroke: "transparent", width: 0, spanGaps: true, points: {show: false}});
        data.push(col(ln.pts, function (p) { return p.mean - p.half; }));
        series.push({label: "−95%", stroke: "transparent", width: 0, spanGaps: true, points: {show: false}});
        bands.push({series: [mid + 1, mid + 2], fill: c.color + "33"});
      }
    });
    return {data: data, series: series, bands: bands, lines: lines.length};
  }

  // Draw (or redraw) a chart of curves into div; returns {chart, lines}.  opts: smooth, ylabel, height.
  function lossChart(div, old, curves, xkind, title, opts) {
    opts = opts || {};
    var b = buildData(curves, xkind, opts);
    if (old && old.chart) old.chart.destroy();
    clear(div);
    if (!b.lines) return {chart: null, lines: 0};
    var w = Math.max(400, Math.min(1180, div.clientWidth || 900));
    var o = {title: title || "", width: w, height: opts.height || 340, series: b.series, bands: b.bands,
             scales: {x: {time: false}},
             axes: [{label: b.series[0].label}, {label: opts.ylabel || "loss (nats/token)"}]};
    return {chart: new uPlot(o, b.data, div), lines: b.lines};
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
          metricSeries: metricSeries, metricKey: metricKey, smooth: smooth, t95: t95, buildData: buildData,
          lossChart: lossChart, colour: colour, poll: poll, PALETTE: PALETTE, POLL_MS: POLL_MS};
})();
