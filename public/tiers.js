// tiers.js draws the KV tiers section's plots with uPlot (report.kv_tiers
// of a run whose pools have KVBM lower tiers): per pool the occupancy of
// each tier (G2/G3 as a share of their capacity, G4, which is unbounded,
// in blocks on a second axis; a toggle shows every tier in blocks) and the
// utilisation of each link. The Go UI (ui/tiers.go) draws the table and
// hands the report over (set) and calls remount() after each render: Vugu
// may have replaced the containers, and the plots are put back without
// being redrawn. The helpers (overlay, toggle) are charts.js'.
"use strict";
(function () {
  let state = null, nodes = new Map(), plots = [], figs = [];
  const prefs = { blocks: false }; // the occupancy plot's "blocks" toggle, kept across redraws

  const { el, num, fmt, fmtT, axis } = window.dynosimCharts.util; // charts.js's, shared with planner.js
  // colours dark enough on white (contrast ≥ 4.5:1), as charts.js' runColors;
  // a link is its lower tier's colour, solid for offloads, dashed for onboards
  const C = { g1: "#57606a", g2: "#1d4ed8", g3: "#15803d", g4: "#7e22ce" };
  const NAMES = { g2: "G2 host", g3: "G3 disk", g4: "G4 object" };
  const linkLabel = (l) => l.toUpperCase().replace("_TO_", "→");
  const linkStyle = (l) => {
    const [a, b] = l.split("_to_");
    const down = a < b; // g1_to_g2, g2_to_g3: offload
    return { color: C[down ? b : a] || C.g1, dash: down ? null : [6, 4] };
  };
  const toggle = (...a) => window.dynosimCharts.toggle(...a); // charts.js's

  // chartWidth: two columns from 760 px, else one; never wider than the box
  // (phones: no horizontal scroll).
  function chartWidth(box) {
    const w = box.clientWidth || 600;
    const cols = w >= 760 ? 2 : 1;
    return Math.max(200, Math.min(w, Math.floor((w - 12 * (cols - 1)) / cols)));
  }

  // the x axis: seconds, the bucket width in the label (every point is a bucket)
  function timeLabel(s) {
    const b = num(s.bucket_ms);
    if (!(b > 0)) return "simulated time (s)";
    return "simulated time (s), " + (b < 1000 ? Math.round(b) + " ms" : +(b / 1000).toFixed(b < 10000 ? 1 : 0) + " s") + " buckets";
  }
  const xsOf = (s) => (s.t_ms || []).map((t) => t / 1000);
  const endS = (rep) => { const d = num(rep.summary && rep.summary.duration_ms); return d === null ? null : d / 1000; };

  // occupancySpec: per tier the most blocks held in each bucket, as a share
  // of the tier's capacity (G2: of every worker's), or in blocks.
  function occupancySpec(rep, t) {
    const s = t.series || {}, xs = xsOf(s), blocks = prefs.blocks;
    const lines = (s.occupancy || []).map((o) => {
      const pct = !blocks && Array.isArray(o.fraction);
      return { label: (NAMES[o.tier] || o.tier) + (pct ? " (%)" : " (blocks)"), tier: o.tier, xs,
        ys: pct ? o.fraction.map((f) => (num(f) === null ? null : 100 * f)) : (o.blocks || []).map(num),
        color: C[o.tier] || C.g1, width: 2, scale: pct ? "pct" : "blocks" };
    });
    const unbounded = lines.filter((l) => l.scale === "blocks").map((l) => NAMES[l.tier] || l.tier);
    return { id: "occupancy", title: "Tier occupancy", lines, xlabel: timeLabel(s), end: endS(rep), blocks,
      aria: `Line chart of the ${t.pool} pool's KV tiers over the run: the most blocks each tier held per time bucket` +
        (blocks ? ", in blocks" : ", as a percentage of its capacity" + (unbounded.length ? " (" + unbounded.join(", ") + ", which is unbounded, in blocks on the right axis)" : "")) +
        ". The table above lists each tier's peak, hits, onboarded, offloaded and evicted blocks." };
  }

  // utilizationSpec: per link the busy share of each bucket (over its instances).
  function utilizationSpec(rep, t) {
    const s = t.series || {}, xs = xsOf(s);
    const lines = (s.utilization || []).map((u) => ({ label: linkLabel(u.name), link: u.name, xs,
      ys: (u.values || []).map((v) => (num(v) === null ? null : 100 * v)), ...linkStyle(u.name), width: 2, scale: "pct" }));
    return { id: "utilization", title: "Link utilisation", lines, xlabel: timeLabel(s), end: endS(rep),
      aria: `Line chart of the ${t.pool} pool's links between KV tiers over the run: the share of each bucket each link was busy, in percent` +
        " (offloads solid, onboards dashed). The table above lists each link's transfers, bytes, busy time and utilisation." };
  }

  function plot(fig, s, width) {
    const series = [{ label: "t (s)", value: (u, v) => (v == null ? "—" : fmtT(v)) }];
    const stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    for (const l of s.lines) {
      series.push({ label: l.label, stroke: l.color, width: l.width, dash: l.dash || undefined, scale: l.scale, spanGaps: true,
        paths: stepped, points: { show: false },
        value: (u, v) => (v == null ? "—" : l.scale === "pct" ? fmt(v) + " %" : fmt(v)) });
    }
    const x = { time: false };
    if (s.end > 0) x.range = (u, lo, hi) => [0, Math.max(s.end, num(hi) || 0)];
    const scales = { x };
    const axes = [{ ...axis, label: s.xlabel }];
    const has = (k) => s.lines.some((l) => l.scale === k);
    if (has("pct")) {
      scales.pct = { range: (u, lo, hi) => [0, Math.min(100, Math.max(1, (num(hi) || 0) * 1.15))] };
      axes.push({ ...axis, scale: "pct", label: s.id === "utilization" ? "busy (%)" : "% of capacity" });
    }
    if (has("blocks")) {
      scales.blocks = { range: (u, lo, hi) => [0, Math.max(2, (num(hi) || 0) * 1.15)] };
      axes.push({ ...axis, scale: "blocks", label: "blocks", ...(has("pct") ? { side: 1, grid: { show: false } } : {}) });
    }
    const data = window.dynosimCharts.overlay(s.lines);
    // the run's end keeps the last bucket's step in view
    if (s.end > (data[0][data[0].length - 1] ?? -1)) data.forEach((col, i) => col.push(i === 0 ? s.end : null));
    const u = new uPlot({
      title: s.title, width, height: 220, scales, series, axes,
      legend: { live: true }, cursor: { drag: { x: true, y: false } },
    }, data, fig);
    // a one-line legend may scroll sideways: keyboard users must reach it
    const legend = u.root.querySelector(".u-legend");
    if (legend) { legend.tabIndex = 0; legend.setAttribute("aria-label", "legend of " + s.title); }
    return u;
  }

  function figure(grid, pool, make, width) {
    const fig = el("figure", "chart");
    grid.appendChild(fig);
    const slot = { u: null, spec: null, pool };
    const build = () => {
      const s = make();
      const i = plots.indexOf(slot.u);
      if (slot.u) { slot.u.destroy(); slot.u = null; }
      fig.textContent = "";
      fig.setAttribute("data-testid", "kv-tiers-" + s.id);
      fig.dataset.pool = pool;
      fig.setAttribute("aria-label", s.aria);
      fig.style.width = width + "px";
      fig.appendChild(el("div", "chart-tools"));
      if (s.id === "occupancy") toggle(fig, "kv-tiers-blocks", "blocks", s.blocks, (v) => { prefs.blocks = v; rebuildOccupancy(); });
      slot.spec = s;
      slot.u = plot(fig, s, width);
      if (i >= 0) plots[i] = slot.u; else plots.push(slot.u);
    };
    slot.build = build;
    build();
    figs.push({ fig, slot });
  }

  // the blocks toggle applies to every pool's occupancy plot
  const rebuildOccupancy = () => figs.filter((f) => f.slot.spec && f.slot.spec.id === "occupancy").forEach((f) => f.slot.build());

  function build(box, t) {
    const wrap = el("div", "kvtierplots");
    wrap.appendChild(el("p", "lifehint", "Occupancy: the most blocks each tier held per bucket; utilisation: the share of each bucket a link was busy " +
      "(offloads solid, onboards dashed). Drag to zoom, double-click to zoom out."));
    const grid = el("div", "chartgrid");
    wrap.appendChild(grid);
    const w = chartWidth(box);
    figure(grid, t.pool, () => occupancySpec(state, t), w);
    figure(grid, t.pool, () => utilizationSpec(state, t), w);
    return wrap;
  }

  const boxes = () => [...document.querySelectorAll("[data-kv-tiers-charts]")];

  // remount puts each pool's plots into its container (built when missing).
  function remount() {
    if (!state) return;
    for (const box of boxes()) {
      const pool = box.getAttribute("data-kv-tiers-charts");
      const t = state.kv_tiers.find((x) => x.pool === pool);
      if (!t) continue;
      let node = nodes.get(pool);
      if (!node) { node = build(box, t); nodes.set(pool, node); }
      if (box.firstChild !== node || box.childNodes.length !== 1) box.replaceChildren(node);
    }
  }

  function clear() {
    plots.forEach((p) => p.destroy());
    plots = []; figs = []; nodes = new Map();
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (state) { clear(); remount(); } }, 150);
  });

  window.dynosimTiers = {
    // set(report) draws the report's kv_tiers; a report without them (or
    // null) clears the plots.
    set(report) {
      clear();
      state = report && Array.isArray(report.kv_tiers) && report.kv_tiers.length ? report : null;
      requestAnimationFrame(remount); // after Vugu has patched the page
    },
    remount,
    // describe() says what is drawn (for tests): per plot its pool, id,
    // whether its canvas is in the page, and its series with their scale
    // and point counts; null when nothing is drawn.
    describe() {
      if (!state || !figs.length) return null;
      return {
        drawn: figs.every(({ fig }) => fig.isConnected),
        plots: figs.map(({ fig, slot }) => {
          const s = slot.spec, u = slot.u;
          return { pool: slot.pool, id: s.id, title: s.title, canvas: !!fig.querySelector("canvas"), blocks: !!s.blocks,
            series: s.lines.map((l) => ({ label: l.label, scale: l.scale, points: l.ys.filter((y) => y !== null).length,
              max: Math.max(0, ...l.ys.filter((y) => y !== null)) })),
            x: u ? [u.scales.x.min, u.scales.x.max] : null };
        }),
      };
    },
  };
})();
