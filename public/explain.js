// explain.js draws the page's explanation plots with uPlot: a watched
// request's life as a lane chart (every engine pass it was in, its phases
// and its events) and a real run's CDFs overlaid on the predicted ones.
// The Go UI hands the data over (setTimeline, setReal) and calls remount()
// after each render: Vugu may have replaced the containers (see
// recommend.js), and the plots are put back without being redrawn.
"use strict";
(function () {
  let timeline = null, lifeNode = null, lifePlot = null;
  let real = null, realNode = null, realPlots = [];

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const width = (box) => Math.max(240, Math.min(box.clientWidth || 600, 1240));
  const fmt = (v) => (Math.abs(v) < 10 ? v.toFixed(2) : Math.abs(v) < 1000 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US"));
  const axis = { stroke: "#1f2328", grid: { stroke: "#e5e7eb", width: 1 }, ticks: { stroke: "#d0d7de", width: 1 }, space: 40 };

  // --- a request's life ------------------------------------------------

  // phases of a request: [label, from event, to event, fill]; the times
  // are the first matching events (a preempted request's re-admission
  // shows as its own marker).
  // A disaggregated request's prefill ends at prefill_done and the handoff
  // (transfer wait, transfer, decode queue) runs to the first token.
  const PHASES = [
    ["waiting", "arrival", "admitted", "rgba(245, 158, 11, 0.16)"],
    ["prefill", "admitted", ["prefill_done", "first_token"], "rgba(37, 99, 235, 0.12)"],
    ["handoff", "prefill_done", "first_token", "rgba(126, 34, 206, 0.08)"],
    ["decode", "first_token", ["completed", "rejected"], "rgba(22, 163, 74, 0.10)"],
  ];
  // markers: event → [short label, colour]
  const MARKS = {
    routed: ["routed", "#57606a"], admitted: ["admitted", "#a16207"], first_token: ["first token", "#15803d"],
    preempted: ["preempted", "#b42318"], completed: ["completed", "#1f2328"], rejected: ["rejected", "#b42318"],
  };

  function lifeData(tl) {
    const evs = Array.isArray(tl && tl.events) ? tl.events : [];
    const arrival = evs.find((e) => e.event === "arrival");
    const t0 = arrival ? arrival.t_ms : evs.length ? evs[0].t_ms : 0;
    const passes = evs.filter((e) => e.event === "pass");
    // first: the time of the first event of that name (of the first name
    // that occurs, for a list)
    const first = (names) => {
      for (const name of [].concat(names)) { const e = evs.find((x) => x.event === name); if (e) return e.t_ms - t0; }
      return null;
    };
    const end = evs.length ? Math.max(...evs.map((e) => Math.max(e.t_ms, Number.isFinite(e.end_ms) ? e.end_ms : e.t_ms))) - t0 : 0;
    return {
      passes, t0, end,
      xs: passes.map((p) => p.t_ms - t0),
      batch: passes.map((p) => (Number.isFinite(p.batch_requests) ? p.batch_requests : null)),
      passMs: passes.map((p) => (Number.isFinite(p.pass_ms) ? p.pass_ms : null)),
      marks: evs.filter((e) => MARKS[e.event]).map((e) => ({ event: e.event, t: e.t_ms - t0 })),
      transfers: evs.filter((e) => e.event === "kv_transfer").map((e) => ({ t: e.t_ms - t0, end: (Number.isFinite(e.end_ms) ? e.end_ms : e.t_ms) - t0 })),
      phases: PHASES.map(([label, a, b, fill]) => ({ label, from: first(a), to: first(b), fill }))
        .filter((p) => p.from !== null && p.to !== null && p.to > p.from),
    };
  }

  // drawLife draws the phases (under the series), the KV transfers and the
  // event markers (over them) on uPlot's canvas.
  function drawLife(u, d, under) {
    const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height, dpr = devicePixelRatio || 1;
    const x = (t) => u.valToPos(t, "x", true);
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, top, u.bbox.width, h);
    ctx.clip();
    if (under) {
      ctx.font = `${11 * dpr}px system-ui, sans-serif`;
      for (const p of d.phases) {
        const a = x(p.from), b = x(p.to);
        ctx.fillStyle = p.fill;
        ctx.fillRect(a, top, b - a, h);
        ctx.fillStyle = "#57606a";
        if (b - a > 60 * dpr) ctx.fillText(p.label, a + 4 * dpr, top + h - 6 * dpr);
      }
      ctx.fillStyle = "rgba(126, 34, 206, 0.22)";
      for (const t of d.transfers) ctx.fillRect(x(t.t), top, Math.max(2 * dpr, x(t.end) - x(t.t)), h);
    } else {
      ctx.font = `600 ${11 * dpr}px system-ui, sans-serif`;
      let row = 0;
      for (const m of d.marks) {
        const [label, color] = MARKS[m.event];
        const px = x(m.t);
        ctx.strokeStyle = color;
        ctx.lineWidth = 1.5 * dpr;
        ctx.setLineDash([4 * dpr, 3 * dpr]);
        ctx.beginPath();
        ctx.moveTo(px, top);
        ctx.lineTo(px, top + h);
        ctx.stroke();
        ctx.fillStyle = color;
        const w = ctx.measureText(label).width;
        const lx = px + 3 * dpr + w > u.bbox.left + u.bbox.width ? px - 3 * dpr - w : px + 3 * dpr;
        ctx.fillText(label, lx, top + (12 + 12 * (row++ % 3)) * dpr);
      }
    }
    ctx.restore();
  }

  function buildLife(box) {
    const d = lifeData(timeline);
    const fig = el("div", "lifeplot");
    fig.dataset.passes = String(d.passes.length);
    fig.dataset.markers = d.marks.map((m) => m.event).join(",");
    fig.setAttribute("role", "img");
    fig.setAttribute("aria-label", `Lane chart of request ${timeline.uuid}: ${d.passes.length} engine passes over ${fmt(d.end)} ms; ` +
      d.marks.map((m) => MARKS[m.event][0] + " at +" + fmt(m.t) + " ms").join(", ") + ". The list below has every event.");
    const hint = el("p", "lifehint", "Each point is one engine pass (at its start): the batch size and the pass time. Hover for a pass's numbers, drag to zoom, double-click to zoom out.");
    fig.appendChild(hint);
    const xs = d.xs.length ? d.xs : [0, d.end || 1];
    const data = d.xs.length ? [xs, d.batch, d.passMs] : [xs, [null, null], [null, null]];
    const stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    const opts = {
      title: "Request " + timeline.uuid + ": passes and events", width: width(box), height: 240,
      scales: { x: { time: false, range: (u, lo, hi) => [Math.min(0, lo), Math.max(hi, d.end * 1.02 || 1)] }, batch: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.15)] }, ms: { range: (u, lo, hi) => [0, Math.max(1e-3, hi * 1.15)] } },
      series: [
        { label: "t since arrival (ms)", value: (u, v) => (v == null ? "—" : "+" + fmt(v)) },
        { label: "batch (requests)", scale: "batch", stroke: "#1d4ed8", width: 1.5, paths: stepped, points: { show: true, size: 4, fill: "#1d4ed8" } },
        { label: "pass time (ms)", scale: "ms", stroke: "#c2410c", width: 0, paths: () => null, points: { show: true, size: 5, fill: "#c2410c", stroke: "#c2410c" }, value: (u, v) => (v == null ? "—" : fmt(v)) },
      ],
      axes: [{ ...axis, label: "ms since arrival" }, { ...axis, scale: "batch", label: "requests in the batch" },
        { ...axis, scale: "ms", side: 1, grid: { show: false }, label: "pass time (ms)" }],
      legend: { live: true }, cursor: { drag: { x: true, y: false }, points: { size: 7 } },
      hooks: { drawClear: [(u) => drawLife(u, d, true)], draw: [(u) => drawLife(u, d, false)] },
    };
    if (lifePlot) lifePlot.destroy();
    lifePlot = new uPlot(opts, data, fig);
    const legend = lifePlot.root.querySelector(".u-legend");
    if (legend) { legend.tabIndex = 0; legend.setAttribute("aria-label", "values of the hovered pass"); }
    return fig;
  }

  // --- a real run beside the prediction ------------------------------

  const METRICS = [["ttft_ms", "TTFT (ms)"], ["itl_ms", "ITL (ms)"], ["e2e_latency_ms", "Request latency (ms)"]];
  const quantile = (q, p) => q[Math.min(q.length - 1, Math.round(p * (q.length - 1)))];

  // realSpecs: one plot per metric with measured data: the measured CDF
  // (qs are fractions; percentages are scaled) and the predicted one (the
  // report's distributions: values at 0, 1, …, 100 %).
  function realSpecs() {
    const out = [];
    for (const [key, label] of METRICS) {
      const m = real.cdf && real.cdf[key];
      if (!m || !Array.isArray(m.qs) || !Array.isArray(m.values) || m.values.length < 2) continue;
      const scale = Math.max(...m.qs) > 1.5 ? 100 : 1;
      const mq = m.qs.map((q) => q / scale);
      const lines = [{ label: "measured", xs: m.values, ys: mq, color: "#1f2328", width: 2 }];
      const p = real.report && real.report.distributions && real.report.distributions[key];
      if (Array.isArray(p) && p.length > 1) lines.push({ label: "predicted", xs: p, ys: p.map((_, i) => i / (p.length - 1)), color: "#1d4ed8", width: 2, dash: [6, 4] });
      // clip at the larger p99 (a long tail squeezes the curves), like charts.js
      const sorted = m.values.slice().sort((a, b) => a - b);
      const clip = Math.max(quantile(sorted, 0.99), p && p.length > 1 ? quantile(p, 0.99) : -Infinity);
      out.push({ key, label, lines, clip });
    }
    return out;
  }

  function buildReal(box) {
    realPlots.forEach((p) => p.destroy());
    realPlots = [];
    const wrap = el("div", "chartgrid realgrid");
    const specs = realSpecs();
    if (!specs.length) {
      wrap.appendChild(el("p", "lifehint", "The files have no per-request latencies, so there are no distributions to overlay (AIPerf's profile_export.jsonl has them)."));
      return wrap;
    }
    const cols = box.clientWidth >= 760 ? 2 : 1;
    const w = Math.max(220, Math.floor(((box.clientWidth || 600) - 12 * (cols - 1)) / cols));
    for (const s of specs) {
      const fig = el("figure", "chart");
      fig.setAttribute("data-testid", "real-cdf-" + s.key.replace(/_ms$/, "").replace(/_latency$/, ""));
      fig.dataset.series = s.lines.map((l) => l.label).join(",");
      fig.style.width = w + "px";
      wrap.appendChild(fig);
      const x = { time: false };
      const lo = Math.min(...s.lines.map((l) => l.xs[0]));
      if (Number.isFinite(s.clip) && s.clip > lo) x.range = [Math.min(0, lo), s.clip];
      const u = new uPlot({
        title: s.label.replace(/ \(ms\)$/, "") + " CDF: measured vs predicted", width: w, height: 220,
        scales: { x, y: { range: [0, 1] } },
        series: [{ label: s.label.replace(/ \(.*/, "") }, ...s.lines.map((l) => ({ label: l.label, stroke: l.color, width: l.width, dash: l.dash, spanGaps: true, points: { show: false } }))],
        axes: [{ ...axis, label: s.label + ", up to p99" }, { ...axis, label: "fraction of requests" }],
        legend: { live: true }, cursor: { drag: { x: true, y: false } },
      }, window.dynosimCharts.overlay(s.lines), fig);
      const legend = u.root.querySelector(".u-legend");
      if (legend) { legend.tabIndex = 0; legend.setAttribute("aria-label", "legend of " + s.label + " CDF"); }
      realPlots.push(u);
    }
    return wrap;
  }

  // --- mounting ------------------------------------------------------

  // place puts node (built by build when missing) into the container id.
  function place(id, data, node, build) {
    const box = document.getElementById(id);
    if (!box || !data) return node;
    if (!node) node = build(box);
    if (box.firstChild !== node || box.childNodes.length !== 1) box.replaceChildren(node);
    return node;
  }

  function remount() {
    lifeNode = place("timeline-chart", timeline, lifeNode, buildLife);
    realNode = place("real-charts", real, realNode, buildReal);
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { lifeNode = null; realNode = null; remount(); }, 150);
  });

  window.dynosimExplain = {
    // setTimeline(report.request_timeline) draws a request's life (null: none).
    setTimeline(tl) {
      timeline = tl && Array.isArray(tl.events) ? tl : null;
      if (lifePlot && !timeline) { lifePlot.destroy(); lifePlot = null; }
      lifeNode = null;
      requestAnimationFrame(remount); // after Vugu has patched the page
    },
    // setReal(cdf, report) overlays dynosim.compare's measured CDFs on the
    // report's distributions (nulls: none).
    setReal(cdf, report) {
      real = cdf && report ? { cdf, report } : null;
      if (!real) { realPlots.forEach((p) => p.destroy()); realPlots = []; }
      realNode = null;
      requestAnimationFrame(remount); // after Vugu has patched the page
    },
    remount,
    // describe() says what is drawn (for tests).
    describe() {
      return {
        timeline: lifeNode ? { passes: Number(lifeNode.dataset.passes), markers: lifeNode.dataset.markers.split(",").filter(Boolean), drawn: !!lifeNode.isConnected } : null,
        real: realNode ? [...realNode.querySelectorAll("figure")].map((f) => ({ id: f.dataset.testid, series: f.dataset.series.split(","), drawn: f.isConnected })) : null,
      };
    },
  };
})();
