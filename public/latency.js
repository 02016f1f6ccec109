// latency.js draws "Latency over time" (issue 32 item 5) with uPlot, above
// the details: per time window of the report's timeseries, the TTFT and the
// per-request ITL p50 and p99 of the requests that arrived in it, with the
// SLA's bounds as lines; the load on the same time axis (the waiting queue
// and the running requests summed over the workers, and on planner runs the
// active workers). The Go UI (ui/results.go) hands the report over (set)
// and calls remount() after each render: Vugu may have replaced the
// container, and the plots are put back without being redrawn. The helpers
// (el, num, fmt, fmtT, axis, overlay) are charts.js'.
"use strict";
(function () {
  let state = null, node = null, figs = [];
  const { el, num, fmt, fmtT, axis } = window.dynosimCharts.util;
  // dark enough on white (contrast ≥ 4.5:1): p99 solid, p50 dashed
  const C = { ttft: "#1d4ed8", itl: "#7e22ce", sla: "#b91c1c", waiting: "#b45309", running: "#15803d", workers: "#57606a" };

  const xsOf = (ts) => (ts.t_ms || []).map((t) => t / 1000);
  const endS = (rep) => { const d = num(rep.summary && rep.summary.duration_ms); return d === null ? null : d / 1000; };
  const windowLabel = (ts) => {
    const b = num(ts.bucket_ms);
    if (!(b > 0)) return "simulated time (s)";
    return "simulated time (s), " + (b < 1000 ? Math.round(b) + " ms" : +(b / 1000).toFixed(b < 10000 ? 1 : 0) + " s") + " windows";
  };

  // sum adds the workers' per-window means of one field (the pool's load).
  function sum(ts, field) {
    const n = (ts.t_ms || []).length, out = new Array(n).fill(0);
    for (const w of ts.workers || []) (w[field] || []).forEach((v, i) => { if (i < n && Number.isFinite(v)) out[i] += v; });
    return out;
  }

  // activeWorkers: the planner's active workers over every pool, as steps.
  function activeWorkers(rep) {
    const p = rep.planner;
    if (!p || !Array.isArray(p.workers) || !p.workers.length) return null;
    const last = new Map(), xs = [], ys = [];
    for (const w of p.workers) {
      last.set(w.pool, num(w.active) || 0);
      let s = 0;
      for (const v of last.values()) s += v;
      if (xs.length && xs[xs.length - 1] === w.t_ms / 1000) ys[ys.length - 1] = s;
      else { xs.push(w.t_ms / 1000); ys.push(s); }
    }
    const end = endS(rep);
    if (end !== null && xs.length && end > xs[xs.length - 1]) { xs.push(end); ys.push(ys[ys.length - 1]); }
    return { xs, ys };
  }

  // latencySpec: one metric's p50 and p99 per window and its SLA bound.
  function latencySpec(rep, id, name, p50, p99, bound) {
    const ts = rep.timeseries, xs = xsOf(ts);
    const lines = [
      { label: name + " p99", xs, ys: (ts[p99] || []).map(num), color: C[id], width: 2 },
      { label: name + " p50", xs, ys: (ts[p50] || []).map(num), color: C[id], dash: [6, 4], width: 1.5 },
    ];
    const sla = num(rep.sla && rep.sla[bound]);
    if (sla !== null && xs.length) lines.push({ label: name + " SLA", xs: [0, Math.max(endS(rep) || 0, xs[xs.length - 1])], ys: [sla, sla], color: C.sla, dash: [2, 3], width: 1.5, sla: true });
    return { id, title: name + " per window (ms)", ylabel: "ms", lines, xlabel: windowLabel(ts), end: endS(rep),
      aria: `Line chart of the ${name} p50 and p99, in milliseconds, of the requests that arrived in each window` +
        (sla !== null ? `, with the SLA's ${fmt(sla)} ms bound` : "") + "." };
  }

  function loadSpec(rep) {
    const ts = rep.timeseries, xs = xsOf(ts);
    const lines = [
      { label: "waiting (queue)", xs, ys: sum(ts, "waiting"), color: C.waiting, width: 2 },
      { label: "running", xs, ys: sum(ts, "running"), color: C.running, width: 1.5, dash: [6, 4] },
    ];
    const w = activeWorkers(rep);
    if (w) lines.push({ label: "active workers", xs: w.xs, ys: w.ys, color: C.workers, width: 2, scale: "workers", step: true });
    return { id: "load", title: "Queue depth and running requests" + (w ? ", workers" : ""), ylabel: "requests", lines, xlabel: windowLabel(ts), end: endS(rep),
      aria: "Line chart of the waiting and running requests summed over the workers per window" + (w ? ", and the planner's active workers on the right axis" : "") + "." };
  }

  function plot(fig, s, width) {
    const series = [{ label: "t (s)", value: (u, v) => (v == null ? "—" : fmtT(v)) }];
    const stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    for (const l of s.lines) {
      series.push({ label: l.label, stroke: l.color, width: l.width, dash: l.dash || undefined, scale: l.scale || "y", spanGaps: true,
        paths: l.step ? stepped : undefined, points: { show: false }, value: (u, v) => (v == null ? "—" : fmt(v)) });
    }
    const x = { time: false };
    if (s.end > 0) x.range = (u, lo, hi) => [0, Math.max(s.end, num(hi) || 0)];
    const scales = { x, y: { range: (u, lo, hi) => [0, Math.max(1, (num(hi) || 0) * 1.1)] } };
    const axes = [{ ...axis, label: s.xlabel }, { ...axis, label: s.ylabel }];
    if (s.lines.some((l) => l.scale === "workers")) {
      scales.workers = { range: (u, lo, hi) => [0, Math.max(2, (num(hi) || 0) + 1)] };
      axes.push({ ...axis, scale: "workers", label: "workers", side: 1, grid: { show: false } });
    }
    const data = window.dynosimCharts.overlay(s.lines);
    const u = new uPlot({ title: s.title, width, height: 200, scales, series, axes, legend: { live: true }, cursor: { drag: { x: true, y: false } } }, data, fig);
    // a one-line legend may scroll sideways: keyboard users must reach it
    const legend = u.root.querySelector(".u-legend");
    if (legend) { legend.tabIndex = 0; legend.setAttribute("aria-label", "legend of " + s.title); }
    return u;
  }

  function build(box) {
    const rep = state, wrap = el("div", "latencyplots");
    wrap.appendChild(el("p", "lifehint", "Each window's requests by arrival time: solid p99, dashed p50, the SLA's bound dotted red. " +
      "ITL is each request's mean inter-token latency, the quantity goodput's ITL bound checks. Drag to zoom, double-click to zoom out."));
    const grid = el("div", "chartgrid");
    wrap.appendChild(grid);
    const w = box.clientWidth || 600, cols = w >= 760 ? 2 : 1;
    const width = Math.max(200, Math.min(w, Math.floor((w - 12 * (cols - 1)) / cols)));
    for (const s of [latencySpec(rep, "ttft", "TTFT", "ttft_p50_ms", "ttft_p99_ms", "ttft_ms"),
      latencySpec(rep, "itl", "ITL", "itl_p50_ms", "itl_p99_ms", "itl_ms"), loadSpec(rep)]) {
      const fig = el("figure", "chart");
      fig.setAttribute("data-testid", "latency-" + s.id);
      fig.setAttribute("aria-label", s.aria);
      fig.style.width = width + "px";
      grid.appendChild(fig);
      figs.push({ fig, spec: s, u: plot(fig, s, width) });
    }
    return wrap;
  }

  function clear() {
    figs.forEach((f) => f.u.destroy());
    figs = []; node = null;
  }

  // remount puts the plots into their container (built when missing).
  function remount() {
    const box = document.querySelector("[data-latency-charts]");
    if (!state || !box) return;
    if (!node) node = build(box);
    if (box.firstChild !== node || box.childNodes.length !== 1) box.replaceChildren(node);
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (state) { clear(); remount(); } }, 150);
  });

  window.dynosimLatency = {
    // set(report) draws the report's latency windows; null clears them.
    set(report) {
      clear();
      state = report && report.timeseries && Array.isArray(report.timeseries.ttft_p99_ms) ? report : null;
      requestAnimationFrame(remount); // after Vugu has patched the page
    },
    remount,
    // describe() says what is drawn (for tests): per plot its id, whether
    // its canvas is in the page, and its series with their point counts
    // and values' maximum; null when nothing is drawn.
    describe() {
      if (!state || !figs.length) return null;
      return {
        drawn: figs.every((f) => f.fig.isConnected),
        plots: figs.map((f) => ({ id: f.spec.id, title: f.spec.title, canvas: !!f.fig.querySelector("canvas"),
          series: f.spec.lines.map((l) => ({ label: l.label, sla: !!l.sla, points: l.ys.filter((y) => y !== null).length,
            max: Math.max(0, ...l.ys.filter((y) => y !== null)) })) })),
      };
    },
  };
})();
