// planner.js draws the planner panel's plots with uPlot (report.planner of
// a run with the planner in the loop): the workers of each pool over time
// with the throughput floor and the planner's decisions, the traffic the
// throughput predictor saw against what it predicted, and the latencies
// the load planner observed and estimated against the SLA. The Go UI
// (ui/planner.go) hands the report over with the decisions it found
// (set) and calls remount() after each render: Vugu may have replaced the
// container, and the plots are put back without being redrawn.
"use strict";
(function () {
  let state = null, node = null, plots = [], figs = [];
  const prefs = { lengths: false }; // the traffic plot's "ISL / OSL" toggle, kept across redraws

  const { el, num, fmt, fmtT, axis } = window.dynosimCharts.util; // charts.js's, shared with tiers.js
  // colours dark enough on white (contrast ≥ 4.5:1), as charts.js' runColors
  const C = { active: "#1d4ed8", starting: "#15803d", draining: "#b91c1c", floor: "#57606a", decision: "#7e22ce",
    observed: "#1f2328", predicted: "#c2410c", isl: "#1d4ed8", osl: "#c2410c", ttft: "#1d4ed8", itl: "#c2410c" };
  const poolTitle = (name) => name.charAt(0).toUpperCase() + name.slice(1);

  // chartWidth: two columns from 760 px, else one; never wider than the box
  // (phones: no horizontal scroll).
  function chartWidth(box) {
    const w = box.clientWidth || 600;
    const cols = w >= 760 ? 2 : 1;
    return Math.max(200, Math.min(w, Math.floor((w - 12 * (cols - 1)) / cols)));
  }

  // pools in the order they first appear (workers series, then ticks).
  function poolsOf(p) {
    const out = [];
    for (const w of p.workers || []) if (!out.includes(w.pool)) out.push(w.pool);
    for (const t of p.ticks || []) for (const q of t.pools || []) if (!out.includes(q.pool)) out.push(q.pool);
    return out;
  }

  // endS: the run's simulated end in seconds (steps are drawn up to it).
  const endS = (rep) => { const d = num(rep.summary && rep.summary.duration_ms); return d === null ? null : d / 1000; };

  // step returns a step line's points held to the run's end.
  function step(xs, ys, end) {
    xs = xs.slice(); ys = ys.slice();
    if (xs.length && end !== null && end > xs[xs.length - 1]) { xs.push(end); ys.push(ys[ys.length - 1]); }
    return { xs, ys };
  }

  // workersSpec: one pool's active, starting and draining workers as step
  // lines, the throughput floor (dashed step) and the decisions (points at
  // the target; hover names the tick's reason).
  function workersSpec(rep, pool, several, markers) {
    const p = rep.planner, end = endS(rep);
    const steps = (p.workers || []).filter((w) => w.pool === pool);
    const xs = steps.map((w) => w.t_ms / 1000);
    const lines = [];
    for (const [key, dash, width] of [["active", null, 2.25], ["starting", [6, 4], 1.5], ["draining", [2, 3], 1.5]]) {
      lines.push({ label: key, ...step(xs, steps.map((w) => num(w[key]) || 0), end), color: C[key], dash, width, step: true, role: key });
    }
    const floors = [];
    for (const t of p.ticks || []) {
      const q = (t.pools || []).find((x) => x.pool === pool);
      if (q && num(q.floor) !== null) floors.push([t.t_ms / 1000, q.floor]);
    }
    if (floors.length) {
      lines.push({ label: "throughput floor", ...step(floors.map((f) => f[0]), floors.map((f) => f[1]), end),
        color: C.floor, dash: [3, 3], width: 1.5, step: true, role: "floor" });
    }
    const ms = markers.filter((m) => m.pool === pool && p.ticks[m.index]).map((m) => ({ ...m, tick: p.ticks[m.index] }));
    lines.push({ label: "decision", xs: ms.map((m) => m.tick.t_ms / 1000), ys: ms.map((m) => m.to), color: C.decision, marker: true, role: "decision",
      value: (u, v, si, i) => (v == null ? "—" : "→ " + v) });
    const k = several ? "-" + pool : "";
    return { id: "workers" + k, title: "Workers" + (several ? " (" + pool + " pool)" : ""), ylabel: "workers", lines, markers: ms, end,
      integer: true, aria: `Step chart of the ${pool} pool's workers over the run: active, starting, draining` +
        (floors.length ? ", the throughput floor" : "") + ` and ${ms.length} scaling decision${ms.length === 1 ? "" : "s"}. The table of decisions below lists them.` };
  }

  // perTick picks a tick field as a line (null where the tick has none).
  const perTick = (ticks, key) => ({ xs: ticks.map((t) => t.t_ms / 1000), ys: ticks.map((t) => num(t[key])) });
  const hasData = (lines) => lines.some((l) => l.ys.some((y) => y !== null));

  // loadSpec: the traffic the throughput predictor saw at each tick against
  // its prediction for the next interval: requests, or (toggle) the mean
  // ISL and OSL.
  function loadSpec(rep) {
    const ticks = rep.planner.ticks || [];
    const canLengths = hasData(["observed_isl", "predicted_isl", "observed_osl", "predicted_osl"].map((k) => perTick(ticks, k)));
    const lengths = prefs.lengths && canLengths;
    const line = (key, label, color, dash) => ({ label, ...perTick(ticks, key), color, dash, width: dash ? 1.5 : 2, points: true });
    const lines = lengths
      ? [line("observed_isl", "observed ISL", C.isl), line("predicted_isl", "predicted ISL", C.isl, [6, 4]),
        line("observed_osl", "observed OSL", C.osl), line("predicted_osl", "predicted OSL", C.osl, [6, 4])]
      : [line("observed_requests", "observed", C.observed), line("predicted_requests", "predicted", C.predicted, [6, 4])];
    return { id: "load", title: lengths ? "Request lengths: observed vs predicted" : "Load: observed vs predicted requests",
      ylabel: lengths ? "tokens per request (mean)" : "requests per interval", lines, end: endS(rep), canLengths, lengths,
      empty: "No tick of this run ran the throughput predictor (throughput-based scaling is off), so there is no predicted load to compare.",
      aria: "Line chart, one point per planner tick: the " + (lengths ? "mean input and output lengths" : "requests") +
        " the throughput predictor observed in the last interval and predicted for the next." };
  }

  // latencySpec: TTFT (left axis) and ITL (right axis) per tick, observed
  // (of the requests completed since the last tick) and estimated by the
  // load planner, with the SLA as labeled horizontal lines.
  function latencySpec(rep) {
    const ticks = rep.planner.ticks || [];
    const sla = rep.sla || {};
    const line = (key, label, color, dash, scale) => ({ label, ...perTick(ticks, key), color, dash, width: dash ? 1.5 : 2, points: true, scale });
    const lines = [line("observed_ttft_ms", "observed TTFT", C.ttft, null, "ttft"), line("est_ttft_ms", "estimated TTFT", C.ttft, [6, 4], "ttft"),
      line("observed_itl_ms", "observed ITL", C.itl, null, "itl"), line("est_itl_ms", "estimated ITL", C.itl, [6, 4], "itl")];
    const slas = [];
    if (num(sla.ttft_ms) > 0) slas.push({ id: "ttft", scale: "ttft", value: sla.ttft_ms, label: "TTFT SLA " + fmt(sla.ttft_ms) + " ms", color: C.ttft });
    if (num(sla.itl_ms) > 0) slas.push({ id: "itl", scale: "itl", value: sla.itl_ms, label: "ITL SLA " + fmt(sla.itl_ms) + " ms", color: C.itl });
    return { id: "latency", title: "TTFT and ITL against the SLA", ylabel: "TTFT (ms)", y2label: "ITL (ms)", lines, slas, end: endS(rep),
      empty: "No tick of this run observed or estimated a latency.",
      aria: "Line chart, one point per planner tick: the TTFT (left axis) and ITL (right axis) of the requests completed since the last tick" +
        " and the load planner's estimates" + (slas.length ? ", against " + slas.map((s) => s.label).join(" and ") : "") + "." };
  }

  // range keeps 0 and the SLA bounds in view.
  const yRange = (floor) => (u, lo, hi) => [0, Math.max(floor || 1, (num(hi) || 0) * 1.15)];

  function plot(fig, s, width) {
    const series = [{ label: "t (s)", value: (u, v) => (v == null ? "—" : fmtT(v)) }];
    const stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    for (const l of s.lines) {
      series.push({
        label: l.label, stroke: l.color, width: l.marker ? 0 : l.width || 1.5, dash: l.dash || undefined, scale: l.scale || "y",
        spanGaps: true, paths: l.marker ? () => null : l.step ? stepped : undefined,
        points: l.marker ? { show: true, size: 11, fill: l.color, stroke: "#ffffff", width: 1.5 }
          // per-tick values: uPlot shows the points while they are sparse;
          // a prediction is a ring, so it shows around an equal observation
          : l.points ? (l.dash ? { size: 10, width: 2, fill: "rgba(255, 255, 255, 0)", stroke: l.color } : { size: 6, fill: l.color, stroke: l.color }) : { show: false },
        value: l.value || ((u, v) => (v == null ? "—" : fmt(v))),
      });
    }
    const x = { time: false };
    if (s.end > 0) x.range = (u, lo, hi) => [0, Math.max(s.end, num(hi) || 0)];
    const slaMax = (scale) => Math.max(0, ...(s.slas || []).filter((b) => b.scale === scale).map((b) => b.value * 1.12));
    const scales = { x };
    const axes = [{ ...axis, label: "simulated time (s)" }];
    if (s.y2label) {
      scales.ttft = { range: yRange(slaMax("ttft")) };
      scales.itl = { range: yRange(slaMax("itl")) };
      axes.push({ ...axis, scale: "ttft", label: s.ylabel }, { ...axis, scale: "itl", side: 1, grid: { show: false }, label: s.y2label });
    } else {
      scales.y = { range: yRange(s.integer ? 2 : 1) };
      const a = { ...axis, label: s.ylabel };
      if (s.integer) a.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];
      axes.push(a);
    }
    const hooks = { setCursor: [], draw: [] };
    if (s.markers && s.markers.length) hooks.setCursor.push((u) => showTip(u, s));
    if (s.slas && s.slas.length) hooks.draw.push((u) => placeSlas(u, s));
    const data = window.dynosimCharts.overlay(s.lines);
    // rows without values at 0 and the end keep the x range the run's
    // (uPlot picks its own around a single value)
    if (!data[0].length || data[0][0] > 0) data.forEach((col, i) => col.unshift(i === 0 ? 0 : null));
    if (s.end > data[0][data[0].length - 1]) data.forEach((col, i) => col.push(i === 0 ? s.end : null));
    const u = new uPlot({
      title: s.title, width, height: 220, scales, series, axes, hooks,
      legend: { live: true }, cursor: { drag: { x: true, y: false } },
    }, data, fig);
    // a one-line legend may scroll sideways: keyboard users must reach it
    const legend = u.root.querySelector(".u-legend");
    if (legend) { legend.tabIndex = 0; legend.setAttribute("aria-label", "legend of " + s.title); }
    for (const b of s.slas || []) {
      const line = el("div", "sla-hline");
      line.setAttribute("data-testid", "planner-sla-" + b.id);
      line.dataset.value = String(b.value);
      line.style.borderTopColor = b.color;
      const lab = el("span", "sla-label", b.label);
      lab.style.color = b.color;
      line.appendChild(lab);
      u.over.appendChild(line);
    }
    placeSlas(u, s);
    if (s.markers && s.markers.length) {
      const tip = el("div", "planner-tip");
      tip.setAttribute("data-testid", "planner-tip");
      tip.hidden = true;
      u.over.appendChild(tip);
    }
    return u;
  }

  // placeSlas keeps each SLA line (a labeled DOM element in uPlot's overlay,
  // like charts.js' vertical ones) at its bound when the scale changes.
  function placeSlas(u, s) {
    const lines = u.over.querySelectorAll(".sla-hline");
    (s.slas || []).forEach((b, i) => {
      const line = lines[i];
      if (!line) return;
      const top = u.valToPos(b.value, b.scale);
      const inside = Number.isFinite(top) && top >= 0 && top <= u.over.clientHeight;
      line.style.display = inside ? "" : "none";
      line.style.top = top + "px";
      line.classList.toggle("sla-right", b.scale === "itl");
      line.classList.remove("sla-below");
    });
    // two labels that collide (narrow plots, bounds at similar heights):
    // the second goes under its line
    if (lines.length === 2 && lines[0].style.display !== "none" && lines[1].style.display !== "none") {
      const [a, b] = [...lines].map((l) => l.firstChild.getBoundingClientRect());
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) lines[1].classList.add("sla-below");
    }
  }

  // showTip names the decision under the cursor (within 10 px of its x):
  // its time, the change and the tick's reason. The tip stays inside the
  // plot, so it never widens the page.
  function showTip(u, s) {
    const tip = u.over.querySelector(".planner-tip");
    if (!tip) return;
    const left = u.cursor.left;
    let best = null, bestD = 10;
    if (left != null && left >= 0) {
      for (const m of s.markers) {
        const d = Math.abs(u.valToPos(m.tick.t_ms / 1000, "x") - left);
        if (d <= bestD) { best = m; bestD = d; }
      }
    }
    if (!best) { tip.hidden = true; delete tip.dataset.tick; return; }
    tip.hidden = false;
    tip.dataset.tick = String(best.tick.tick);
    tip.textContent = "";
    tip.appendChild(el("strong", "", fmtT(best.tick.t_ms / 1000) + ": " + best.pool + " " + best.from + " → " + best.to));
    tip.appendChild(el("span", "", best.tick.reason || "(no reason given)"));
    const px = u.valToPos(best.tick.t_ms / 1000, "x"), py = u.valToPos(best.to, "y");
    const w = tip.offsetWidth, h = tip.offsetHeight, W = u.over.clientWidth;
    tip.style.left = Math.max(0, Math.min(W - w, px - w / 2)) + "px";
    tip.style.top = (py - h - 10 >= 0 ? py - h - 10 : Math.min(u.over.clientHeight - h, py + 12)) + "px";
  }

  const toggle = (...a) => window.dynosimCharts.toggle(...a); // charts.js's

  function figure(grid, make, width) {
    const fig = el("figure", "chart");
    grid.appendChild(fig);
    const slot = { u: null, spec: null };
    const build = () => {
      const s = make();
      const i = plots.indexOf(slot.u);
      if (slot.u) { slot.u.destroy(); slot.u = null; }
      fig.textContent = "";
      fig.setAttribute("data-testid", "planner-plot-" + s.id);
      fig.setAttribute("aria-label", s.aria);
      fig.style.width = width + "px";
      fig.appendChild(el("div", "chart-tools"));
      if (s.canLengths) toggle(fig, "planner-lengths", "ISL / OSL", s.lengths, (v) => { prefs.lengths = v; build(); });
      slot.spec = s;
      if (!hasData(s.lines) && s.empty) {
        fig.dataset.empty = "1";
        fig.style.width = "100%";
        fig.appendChild(el("p", "planner-empty-title", s.title));
        fig.appendChild(el("p", "lifehint", s.empty));
        if (i >= 0) plots.splice(i, 1);
        return;
      }
      delete fig.dataset.empty;
      slot.u = plot(fig, s, width);
      if (i >= 0) plots[i] = slot.u; else plots.push(slot.u);
    };
    build();
    figs.push({ fig, slot });
  }

  function build(box) {
    plots.forEach((p) => p.destroy());
    plots = []; figs = [];
    const rep = state.report, p = rep.planner;
    const wrap = el("div", "plannerplots");
    const pools = poolsOf(p);
    wrap.appendChild(el("p", "lifehint", "Steps: each pool's workers (active solid, starting dashed, draining dotted) and the throughput floor; " +
      "points: the planner's scaling decisions at their target (hover one for its reason; the table below lists them). Drag to zoom, double-click to zoom out."));
    const grid = el("div", "chartgrid");
    wrap.appendChild(grid);
    const w = chartWidth(box);
    for (const pool of pools) figure(grid, () => workersSpec(rep, pool, pools.length > 1, state.markers), w);
    // a run without the throughput predictor has no load to plot: its note
    // goes last, so the plots that have data sit side by side
    const load = hasData(loadSpec(rep).lines);
    if (load) figure(grid, () => loadSpec(rep), w);
    figure(grid, () => latencySpec(rep), w);
    if (!load) figure(grid, () => loadSpec(rep), w);
    return wrap;
  }

  // place puts the plots into their container (built when missing).
  function remount() {
    const box = document.getElementById("planner-charts");
    if (!box || !state) return;
    if (!node) node = build(box);
    if (box.firstChild !== node || box.childNodes.length !== 1) box.replaceChildren(node);
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (state) { node = null; remount(); } }, 150);
  });

  window.dynosimPlanner = {
    // set(report, markersJSON) draws the report's planner section with the
    // decisions ui/planner.go found ([{index, pool, from, to}]); a report
    // without one (or null) clears the panel.
    set(report, markers) {
      let ms = [];
      try { ms = JSON.parse(markers || "[]"); } catch (e) { ms = []; }
      state = report && report.planner ? { report, markers: Array.isArray(ms) ? ms : [] } : null;
      if (!state) { plots.forEach((p) => p.destroy()); plots = []; figs = []; }
      node = null;
      requestAnimationFrame(remount); // after Vugu has patched the page
    },
    remount,
    // describe() says what is drawn (for tests): each plot's id, whether its
    // canvas is in the page, its series with their point counts (a step
    // line's also with its steps, [t s, value] as uPlot holds them, so a
    // test reads the workers going up and back down), and the decision
    // markers with their page coordinates.
    describe() {
      if (!node) return null;
      return {
        drawn: node.isConnected,
        plots: figs.map(({ fig, slot }) => {
          const s = slot.spec, u = slot.u;
          const out = { id: s.id, title: s.title, empty: !u, canvas: !!fig.querySelector("canvas"),
            series: s.lines.map((l, i) => {
              const d = { label: l.label, points: l.ys.filter((y) => y !== null).length };
              if (u && l.step) d.steps = u.data[0].map((x, j) => [x, u.data[i + 1][j]]).filter((xy) => xy[1] !== null && xy[1] !== undefined);
              return d;
            }) };
          if (u && s.markers) {
            const r = u.over.getBoundingClientRect();
            out.markers = s.markers.map((m) => ({ tick: m.tick.tick, pool: m.pool, from: m.from, to: m.to, reason: m.tick.reason,
              x: r.left + u.valToPos(m.tick.t_ms / 1000, "x"), y: r.top + u.valToPos(m.to, "y") }));
          }
          if (u && s.slas) out.slas = s.slas.map((b) => b.value);
          if (u) out.x = [u.scales.x.min, u.scales.x.max];
          return out;
        }),
      };
    },
  };
})();
