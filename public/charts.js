// charts.js draws the result plots with uPlot (copied from node_modules at
// build time). Go's UI calls dynosimCharts.render(report) after each run;
// the previous run is kept and drawn beside the new one ("compare").
"use strict";
(function () {
  let last = null, prev = null, plots = [];
  const palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
    "#4f46e5", "#65a30d", "#0d9488", "#b91c1c", "#7c3aed", "#c2410c", "#0369a1", "#a16207"];

  // overlay aligns several (xs, ys) lines on one sorted x axis (uPlot needs a
  // shared x); a line is null where it has no point, and gaps are spanned.
  function overlay(lines) {
    const pts = [];
    lines.forEach((l, i) => l.xs.forEach((x, j) => { if (Number.isFinite(x) && Number.isFinite(l.ys[j])) pts.push([x, i, l.ys[j]]); }));
    pts.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const xs = pts.map((p) => p[0]);
    const data = [xs];
    lines.forEach((_, i) => data.push(pts.map((p) => (p[1] === i ? p[2] : null))));
    return data;
  }

  function cdfLines(key, label) {
    const out = [];
    const add = (rep, name, dash) => {
      const q = rep && rep.distributions && rep.distributions[key];
      if (!q || !q.length) return;
      out.push({ label: name, xs: q, ys: q.map((_, i) => i / (q.length - 1)), dash });
    };
    add(last, "this run", null);
    add(prev, "previous run", [6, 4]);
    return { title: label + " CDF", xlabel: label, ylabel: "fraction of requests", lines: out, xtime: false };
  }

  function timeLines(title, ylabel, pick) {
    const out = [];
    const add = (rep, name, dash) => {
      const ts = rep && rep.timeseries;
      if (!ts || !ts.t_ms) return;
      const xs = ts.t_ms.map((t) => t / 1000);
      pick(ts).forEach((s, i) => out.push({ label: s.label + name, xs, ys: s.ys, dash, color: s.color }));
    };
    add(last, "", null);
    add(prev, " (previous)", [6, 4]);
    return { title, xlabel: "simulated time (s)", ylabel, lines: out };
  }

  const perWorker = (field) => (ts) => (ts.workers || []).map((w, i) => ({ label: "worker " + i, ys: w[field] || [], color: palette[i % palette.length] }));

  function specs() {
    const reuse = last && last.summary ? last.summary.prefix_cache_reused_ratio : undefined;
    return [
      cdfLines("ttft_ms", "TTFT (ms)"),
      cdfLines("itl_ms", "ITL (ms)"),
      timeLines("Output throughput", "tokens/s", (ts) => [{ label: "output tokens/s", ys: ts.output_tokens_per_s || [], color: palette[0] }]),
      timeLines("Running requests per worker", "requests", perWorker("running")),
      timeLines("Waiting requests per worker", "requests", perWorker("waiting")),
      timeLines("KV cache usage per worker", "fraction of blocks", perWorker("kv_usage")),
      timeLines("Prefix reuse" + (reuse !== undefined ? " (overall " + (reuse * 100).toFixed(1) + "%)" : ""), "reused / input tokens",
        (ts) => [{ label: "prefix reuse", ys: ts.prefix_reuse_ratio || [], color: palette[2] }]),
    ];
  }

  function chartWidth(grid) {
    const w = grid.clientWidth || 600;
    const cols = w >= 760 ? 2 : 1;
    return Math.max(240, Math.floor(w / cols) - 24);
  }

  function draw() {
    const root = document.getElementById("charts");
    if (!root || !last || typeof uPlot === "undefined") return;
    plots.forEach((p) => p.destroy());
    plots = [];
    root.textContent = "";
    const h = document.createElement("h2");
    h.textContent = prev ? "Plots (dashed: previous run)" : "Plots";
    root.appendChild(h);
    const grid = document.createElement("div");
    grid.className = "chartgrid";
    root.appendChild(grid);
    for (const s of specs()) {
      if (!s.lines.length) continue;
      const fig = document.createElement("figure");
      fig.className = "chart";
      grid.appendChild(fig);
      const series = [{ label: s.xlabel }];
      s.lines.forEach((l, i) => series.push({
        label: l.label, stroke: l.color || (i === 0 ? palette[0] : palette[1]), width: 1.5,
        dash: l.dash || undefined, spanGaps: true, points: { show: false },
      }));
      const opts = {
        title: s.title, width: chartWidth(grid), height: 220,
        scales: { x: { time: false } }, series,
        axes: [{ label: s.xlabel }, { label: s.ylabel }],
        legend: { live: true }, cursor: { drag: { x: true, y: false } },
      };
      plots.push(new uPlot(opts, overlay(s.lines), fig));
    }
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(draw, 150); });

  window.dynosimCharts = {
    render(report) {
      if (last) prev = last;
      last = report;
      // let Vugu finish patching the DOM first
      requestAnimationFrame(draw);
    },
    get count() { return plots.length; },
    overlay,
  };
})();
