// charts.js draws the result plots with uPlot (copied from node_modules at
// build time). Go's UI calls dynosimCharts.render(report) after each run, or
// dynosimCharts.setRuns(runs) with the current run first and earlier runs
// after it; earlier runs are overlaid dashed and faded ("compare").
"use strict";
(function () {
  // runs[0] is the current run (solid); the rest are overlaid (dashed).
  // At most MAX_RUNS are drawn: more lines than that are unreadable.
  const MAX_RUNS = 6;
  let runs = [], plots = [], figures = [];
  // prefs keeps each plot's toggles (log x, show workers) across redraws, by
  // plot key, so a resize or a new run does not reset what the user chose.
  const prefs = new Map();
  const palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
    "#4f46e5", "#65a30d", "#0d9488", "#b91c1c", "#7c3aed", "#c2410c", "#0369a1", "#a16207"];
  // runColors: one colour per run, dark enough on white (contrast ≥ 4.5:1).
  const runColors = ["#1d4ed8", "#b91c1c", "#15803d", "#7e22ce", "#c2410c", "#0e7490"];
  const runDash = (i) => (i === 0 ? null : [[6, 4], [2, 3], [10, 3, 2, 3], [4, 4], [1, 2]][(i - 1) % 5]);

  function alpha(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
  }

  // overlay aligns several (xs, ys) lines on one sorted x axis (uPlot needs a
  // shared x); a line is null where it has no point, and gaps are spanned.
  // Lines sharing x values share rows (so a mean and its min–max band line
  // up); a repeated x within one line (a CDF step) keeps its own row.
  function overlay(lines) {
    const rows = new Map();
    lines.forEach((l, i) => {
      const seen = new Map();
      l.xs.forEach((x, j) => {
        const y = l.ys[j];
        if (!Number.isFinite(x) || !Number.isFinite(y)) return;
        const k = seen.get(x) || 0;
        seen.set(x, k + 1);
        const key = x + "#" + k;
        let r = rows.get(key);
        if (!r) rows.set(key, (r = { x, k, ys: new Array(lines.length).fill(null) }));
        r.ys[i] = y;
      });
    });
    const sorted = [...rows.values()].sort((a, b) => a.x - b.x || a.k - b.k);
    const data = [sorted.map((r) => r.x)];
    lines.forEach((_, i) => data.push(sorted.map((r) => r.ys[i])));
    return data;
  }

  const current = () => (runs.length ? runs[0].report : null);
  // runLabel names a run in a legend: plain "this run" when it is alone.
  const runLabel = (i) => (runs.length === 1 ? "this run" : runs[i].name || (i === 0 ? "this run" : "run " + i));

  function quantile(q, p) {
    return q[Math.min(q.length - 1, Math.round(p * (q.length - 1)))];
  }

  // cdfSpec: one line per run. distributions hold evenly spaced quantiles
  // (min … max), so the CDF is (q[i], i/(n-1)). Linear x is clipped at the
  // largest p99 of the runs: the ITL tail (a max 50× the p99) would otherwise
  // squeeze the whole curve into the first few percent of the width. The log
  // toggle shows the full range. The SLA bound (report.sla) of the current
  // run is drawn as a labeled vertical dashed line.
  function cdfSpec(key, slaKey, label, id) {
    const lines = [];
    let clip = -Infinity;
    runs.forEach((r, i) => {
      const q = r.report && r.report.distributions && r.report.distributions[key];
      if (!Array.isArray(q) || q.length < 2) return;
      clip = Math.max(clip, quantile(q, 0.99));
      lines.push({ label: runLabel(i), xs: q, ys: q.map((_, j) => j / (q.length - 1)), color: runColors[i], dash: runDash(i), width: i === 0 ? 2 : 1.5, run: i });
    });
    const sla = current() && current().sla && current().sla[slaKey];
    return { id, kind: "cdf", title: label + " CDF", xlabel: label, ylabel: "fraction of requests", lines,
      clip: Number.isFinite(clip) ? clip : null, sla: typeof sla === "number" && sla > 0 ? sla : null, slaLabel: "SLA " + sla + " ms" };
  }

  // bucketLabel gives the time axis label with the bucket width of the
  // current run, since every point is a bucket mean.
  function timeLabel() {
    const b = current() && current().timeseries && current().timeseries.bucket_ms;
    if (!(b > 0)) return "simulated time (s)";
    const w = b < 1000 ? Math.round(b) + " ms" : +(b / 1000).toFixed(b < 10000 ? 1 : 0) + " s";
    return "simulated time (s), " + w + " buckets";
  }

  // timeSpec: run-wide series (throughput, prefix reuse), one line per run.
  function timeSpec(id, title, ylabel, pick) {
    const lines = [];
    runs.forEach((r, i) => {
      const ts = r.report && r.report.timeseries;
      if (!ts || !ts.t_ms) return;
      lines.push({ label: runLabel(i), xs: ts.t_ms.map((t) => t / 1000), ys: pick(ts) || [], color: runColors[i], dash: runDash(i), width: i === 0 ? 2 : 1.5, run: i });
    });
    return { id, kind: "time", title, xlabel: timeLabel(), ylabel, lines };
  }

  // poolRange is the [first, end) global worker indices of the named pool in
  // rep (every worker when name is null or the report predates pools), or
  // null when rep has no such pool (a previous run with another topology).
  function poolRange(rep, name, n) {
    const pools = rep && rep.pools;
    if (name === null || !Array.isArray(pools) || !pools.length) return [0, n];
    const p = pools.find((q) => q.name === name);
    if (!p) return null;
    const first = p.first_worker || 0;
    return [first, Math.min(n, first + (p.workers || 0))];
  }

  // workerStats returns the per-bucket mean, min and max across the workers
  // of one pool, plus the single workers' series, or null without workers.
  function workerStats(rep, field, pool) {
    const ts = rep && rep.timeseries;
    if (!ts || !ts.t_ms) return null;
    const ws = ts.workers || [];
    const r = poolRange(rep, pool, ws.length);
    if (!r || r[1] <= r[0]) return null;
    const each = [];
    for (let w = r[0]; w < r[1]; w++) each.push({ index: w, ys: ws[w][field] || [] });
    const mean = [], min = [], max = [];
    ts.t_ms.forEach((_, b) => {
      let s = 0, n = 0, lo = Infinity, hi = -Infinity;
      for (const e of each) {
        const v = e.ys[b];
        if (!Number.isFinite(v)) continue;
        s += v; n++; lo = Math.min(lo, v); hi = Math.max(hi, v);
      }
      mean.push(n ? s / n : null); min.push(n ? lo : null); max.push(n ? hi : null);
    });
    return { xs: ts.t_ms.map((t) => t / 1000), mean, min, max, each };
  }

  // workerSpec: 8–16 overlapping worker lines are unreadable, so a per-worker
  // series is drawn as the mean across the workers with a min–max band for
  // the current run (earlier runs: their mean only, dashed). The single
  // workers are still added, hidden, and "show workers" reveals them.
  function workerSpec(id, title, ylabel, field, pool) {
    const lines = [], bands = [];
    runs.forEach((r, i) => {
      const st = workerStats(r.report, field, pool);
      if (!st) return;
      const c = runColors[i];
      const name = runs.length === 1 ? "" : " · " + runLabel(i);
      lines.push({ label: "mean" + name, xs: st.xs, ys: st.mean, color: c, dash: runDash(i), width: i === 0 ? 2 : 1.5, run: i, role: "mean" });
      if (i !== 0) return;
      const hi = lines.push({ label: "max", xs: st.xs, ys: st.max, color: alpha(c, 0.45), width: 1, run: i, role: "band" });
      const lo = lines.push({ label: "min", xs: st.xs, ys: st.min, color: alpha(c, 0.45), width: 1, run: i, role: "band" });
      bands.push({ series: [hi, lo], fill: alpha(c, 0.16) });
      for (const e of st.each) lines.push({ label: "worker " + e.index, xs: st.xs, ys: e.ys, color: alpha(palette[e.index % palette.length], 0.75), width: 1, run: i, role: "worker" });
    });
    return { id, kind: "workers", title, xlabel: timeLabel(), ylabel, lines, bands };
  }

  // workerSpecs: the plot ids carry the pool only when there are several
  // (an aggregated run's one pool keeps the plain ids).
  function workerSpecs(pool, suffix, several) {
    const k = several ? "-" + pool : "";
    return [
      workerSpec("running" + k, "Running requests per worker" + suffix, "requests", "running", pool),
      workerSpec("waiting" + k, "Waiting requests per worker" + suffix, "requests", "waiting", pool),
      workerSpec("kv" + k, "KV cache usage per worker" + suffix, "fraction of blocks", "kv_usage", pool),
    ];
  }

  // disaggregated reports the pools of a run with more than one pool (prefill
  // and decode), or null for an aggregated run.
  function disaggregated(rep) {
    const pools = rep && rep.pools;
    return Array.isArray(pools) && pools.length > 1 ? pools : null;
  }

  const poolTitle = (name) => name.charAt(0).toUpperCase() + name.slice(1) + " pool";

  // groups returns the plot groups: {title, pool, specs}. An aggregated run
  // has one untitled group (the plots it always had); a disaggregated run has
  // the run-wide plots, then one group per pool so prefill and decode workers
  // are never mixed in one plot.
  function groups() {
    const last = current();
    const reuse = last && last.summary ? last.summary.prefix_cache_reused_ratio : undefined;
    const cdfs = [cdfSpec("ttft_ms", "ttft_ms", "TTFT (ms)", "ttft"), cdfSpec("itl_ms", "itl_ms", "ITL (ms)", "itl"),
      timeSpec("throughput", "Output throughput", "tokens/s", (ts) => ts.output_tokens_per_s)];
    const reuseSpec = timeSpec("reuse", "Prefix reuse" + (typeof reuse === "number" ? " (overall " + (reuse * 100).toFixed(1) + "%)" : ""), "reused / input tokens",
      (ts) => ts.prefix_reuse_ratio);
    const pools = disaggregated(last);
    if (!pools) {
      const one = last && Array.isArray(last.pools) && last.pools.length === 1 ? last.pools[0].name : null;
      return [{ title: "", pool: null, specs: [...cdfs, ...workerSpecs(one, "", false), reuseSpec] }];
    }
    return [{ title: "", pool: null, specs: [...cdfs, reuseSpec] },
      ...pools.map((p) => ({ title: poolTitle(p.name), pool: p.name, specs: workerSpecs(p.name, " (" + p.name + ")", true) }))];
  }

  // saturation returns why the current run looks saturated, or "". The
  // report's verdict decides it (core/report/verdict.go: the waiting queue
  // grows without bound, or the mean TTFT is above 10× the median), so the
  // page, the CLI and the Worker say the same.
  function saturation(rep) {
    const v = rep && rep.verdict;
    return v && v.saturated ? v.saturation_reason || "saturated" : "";
  }

  const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
  const fmtNum = (v, digits) => (typeof v === "number" && Number.isFinite(v) ? v.toFixed(digits) : "—");
  const fmtPct = (v) => (typeof v === "number" && Number.isFinite(v) ? (v * 100).toFixed(1) + " %" : "—");
  const fmtInt = (v) => (typeof v === "number" && Number.isFinite(v) ? Math.round(v).toLocaleString("en-US") : "—");

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function box(cls, testid, title, lines) {
    const b = el("div", "topo-box " + cls);
    b.setAttribute("data-testid", testid);
    b.appendChild(el("div", "topo-title", title));
    for (const l of lines) b.appendChild(el("div", "topo-line", l));
    return b;
  }

  function poolBox(p) {
    const gpw = p.gpus_per_worker || 1;
    const b = box("topo-pool topo-pool-" + p.name, "topology-pool-" + p.name, poolTitle(p.name), [
      p.workers + (p.workers === 1 ? " worker" : " workers") + " × " + gpw + (gpw === 1 ? " GPU" : " GPUs") + " = " + p.gpus + (p.gpus === 1 ? " GPU" : " GPUs"),
      "utilization " + fmtPct(p.utilization),
      fmtInt(p.requests) + " requests",
    ]);
    b.dataset.workers = String(p.workers);
    b.dataset.gpus = String(p.gpus);
    return b;
  }

  function arrow(label) {
    const a = el("div", "topo-arrow");
    a.setAttribute("aria-hidden", "true");
    a.appendChild(el("span", "topo-arrowhead", "→"));
    if (label) a.appendChild(el("span", "topo-arrowlabel", label));
    return a;
  }

  // topology draws router → pool(s): for a disaggregated run router → prefill
  // pool ⇒ KV transfer ⇒ decode pool; for an aggregated one router → its pool.
  function topology(rep) {
    const pools = rep && Array.isArray(rep.pools) ? rep.pools : null;
    if (!pools || !pools.length) return null;
    const wrap = el("div", "topology");
    wrap.setAttribute("data-testid", "topology");
    wrap.setAttribute("role", "figure");
    wrap.appendChild(box("topo-router", "topology-router", "Router", ["places " + fmtInt(pools[0].requests) + " requests"]));
    const pre = pools.find((p) => p.name === "prefill"), dec = pools.find((p) => p.name === "decode");
    if (pre && dec) {
      const kv = rep.kv_transfer || {};
      wrap.appendChild(arrow("prompts"));
      wrap.appendChild(poolBox(pre));
      wrap.appendChild(arrow(""));
      const bw = kv.bandwidth_gb_per_second;
      const link = box("topo-link", "topology-link", "KV transfer", [
        "handoff " + (kv.handoff || "—") + (kv.order ? ", " + kv.order.replace(/_/g, " ") : ""),
        typeof bw === "number" && Number.isFinite(bw) ? "bandwidth " + bw + " GB/s" : "no delay",
        "mean " + (typeof kv.mean_ms === "number" ? fmtNum(kv.mean_ms, 2) + " ms" : "—") + (typeof kv.p99_ms === "number" ? ", p99 " + fmtNum(kv.p99_ms, 1) + " ms" : ""),
        fmtNum((kv.transferred_bytes || 0) / 1e9, 1) + " GB in " + fmtInt(kv.handoffs || 0) + " handoffs",
      ]);
      wrap.appendChild(link);
      wrap.appendChild(arrow(""));
      wrap.appendChild(poolBox(dec));
      for (const p of pools) if (p !== pre && p !== dec) { wrap.appendChild(arrow("")); wrap.appendChild(poolBox(p)); }
    } else {
      for (const p of pools) { wrap.appendChild(arrow("")); wrap.appendChild(poolBox(p)); }
    }
    return wrap;
  }

  // chartWidth: two columns from 760 px, else one; never wider than the grid
  // (phones: no horizontal scroll).
  function chartWidth(grid) {
    const w = grid.clientWidth || 600;
    const cols = w >= 760 ? 2 : 1;
    return Math.max(200, Math.min(w, Math.floor((w - 12 * (cols - 1)) / cols)));
  }

  let drawnInto = null; // the #charts element the plots were drawn into
  function draw() {
    const root = document.getElementById("charts");
    const last = current();
    if (!root || !last || typeof uPlot === "undefined") return;
    drawnInto = root;
    plots.forEach((p) => p.destroy());
    plots = [];
    figures = [];
    root.textContent = "";
    const topo = topology(last);
    if (topo) {
      root.appendChild(el("h2", "", "Serving topology"));
      root.appendChild(topo);
    }
    const why = saturation(last);
    if (why) {
      const n = el("p", "saturation", "The deployment is saturated: " + why + " — results depend on the run length.");
      n.setAttribute("data-testid", "saturation");
      n.setAttribute("role", "status");
      root.appendChild(n);
    }
    root.appendChild(el("h2", "", runs.length > 1 ? "Plots (solid: this run; dashed: " + (runs.length - 1) + (runs.length === 2 ? " earlier run)" : " earlier runs)") : "Plots"));
    for (const g of groups()) {
      const specs = g.specs.filter((s) => s.lines.length);
      if (!specs.length) continue;
      let parent = root;
      if (g.pool !== null) {
        parent = el("section", "chartgroup");
        parent.setAttribute("data-testid", "plots-pool-" + g.pool);
        parent.setAttribute("aria-label", g.title + " plots");
        parent.appendChild(el("h3", "", g.title));
        root.appendChild(parent);
      }
      const grid = el("div", "chartgrid");
      parent.appendChild(grid);
      for (const s of specs) figure(grid, s);
    }
  }

  function toggle(fig, testid, label, on, onChange) {
    const l = el("label", "chart-toggle");
    const cb = document.createElement("input");
    cb.type = "checkbox";
    cb.checked = on;
    cb.setAttribute("data-testid", testid);
    cb.addEventListener("change", () => onChange(cb.checked));
    l.appendChild(cb);
    l.appendChild(document.createTextNode(" " + label));
    fig.querySelector(".chart-tools").appendChild(l);
  }

  // figure draws one plot with its toggles; a toggle redraws only this plot.
  function figure(grid, s) {
    const fig = el("figure", "chart");
    fig.setAttribute("data-testid", "plot-" + s.id);
    fig.appendChild(el("div", "chart-tools"));
    grid.appendChild(fig);
    const pref = prefs.get(s.id) || { log: false, workers: false };
    prefs.set(s.id, pref);
    const slot = { u: null };
    const build = () => {
      const i = plots.indexOf(slot.u);
      if (slot.u) slot.u.destroy();
      slot.u = plot(fig, s, pref, chartWidth(grid));
      if (i >= 0) plots[i] = slot.u; else plots.push(slot.u);
    };
    if (s.kind === "cdf") toggle(fig, "log-x", "log x", pref.log, (v) => { pref.log = v; build(); });
    if (s.kind === "workers" && s.lines.some((l) => l.role === "worker")) {
      toggle(fig, "show-workers", "show workers", pref.workers, (v) => {
        pref.workers = v;
        showWorkers(slot.u, fig, s, v);
      });
    }
    build();
    figures.push({ fig, spec: s, pref, get u() { return slot.u; } });
  }

  function showWorkers(u, fig, s, on) {
    fig.classList.toggle("workers-hidden", !on);
    fig.dataset.workers = on ? "shown" : "hidden";
    u.batch(() => s.lines.forEach((l, i) => { if (l.role === "worker") u.setSeries(i + 1, { show: on }); }));
  }

  function plot(fig, s, pref, width) {
    const log = s.kind === "cdf" && pref.log;
    // log x needs positive values; a CDF quantile of 0 ms is dropped there.
    const lines = log ? s.lines.map((l) => ({ ...l, ys: l.ys.map((y, j) => (l.xs[j] > 0 ? y : null)) })) : s.lines;
    // the x entry of the legend shows the hovered x: a short name keeps the
    // legend on one line (the axis carries the full label)
    const series = [{ label: s.kind === "cdf" ? s.xlabel.replace(/ \(.*/, "") : "t (s)" }];
    lines.forEach((l) => series.push({
      label: l.label, stroke: l.color, width: l.width || 1.5, dash: l.dash || undefined,
      spanGaps: true, points: { show: false },
      show: l.role === "worker" ? pref.workers : true,
    }));
    const x = { time: false };
    if (log) { x.distr = 3; x.log = 10; }
    else if (s.kind === "cdf" && s.clip !== null) {
      // clip at p99 (but keep the SLA bound in view)
      const lo = Math.min(...s.lines.map((l) => l.xs[0]));
      const hi = Math.max(s.clip, s.sla ? s.sla * 1.08 : -Infinity);
      if (hi > lo) x.range = [Math.min(0, lo), hi];
    }
    const scales = { x };
    if (s.kind === "cdf") scales.y = { range: [0, 1] };
    // compact tick labels (8M, not 8,000,000) so ticks never run together
    const ticks = (u, splits) => splits.map((v) => (v == null ? "" : Math.abs(v) >= 10000 ? compact.format(v) : +v.toPrecision(6) + ""));
    const axis = { stroke: "#1f2328", grid: { stroke: "#e5e7eb", width: 1 }, ticks: { stroke: "#d0d7de", width: 1 }, values: ticks, space: 40 };
    const xlabel = s.kind === "cdf" ? s.xlabel + (log ? ", log scale" : s.clip !== null ? ", up to p99" : "") : s.xlabel;
    const opts = {
      title: s.title, width, height: 220, scales, series, bands: s.bands || [],
      axes: [{ ...axis, label: xlabel }, { ...axis, label: s.ylabel }],
      legend: { live: true }, cursor: { drag: { x: true, y: false } },
      hooks: s.sla ? { draw: [(u) => placeSla(u, s)] } : {},
    };
    fig.dataset.log = log ? "1" : "0";
    fig.dataset.xlabel = xlabel; // axis labels are canvas pixels: keep them readable for tests
    fig.dataset.runs = String(new Set(s.lines.map((l) => l.run)).size);
    // the figure is exactly as wide as the plot, so a long legend scrolls
    // inside it instead of widening the grid column
    fig.style.width = width + "px";
    const u = new uPlot(opts, overlay(lines), fig);
    // A one-line legend may scroll sideways: keyboard users must reach it.
    const legend = u.root.querySelector(".u-legend");
    if (legend) {
      legend.tabIndex = 0;
      legend.setAttribute("aria-label", "legend of " + s.title);
    }
    if (s.kind === "workers") {
      // mark worker legend entries so CSS can fold them away while hidden
      const rows = u.root.querySelectorAll(".u-legend .u-series");
      lines.forEach((l, i) => { if (l.role === "worker" && rows[i + 1]) rows[i + 1].classList.add("worker-entry"); });
      fig.classList.toggle("workers-hidden", !pref.workers);
      fig.dataset.workers = pref.workers ? "shown" : "hidden";
    }
    if (s.sla) {
      const line = el("div", "sla-line");
      line.setAttribute("data-testid", "sla-" + s.id);
      line.dataset.value = String(s.sla);
      line.appendChild(el("span", "sla-label", s.slaLabel));
      u.over.appendChild(line);
      placeSla(u, s);
    }
    return u;
  }

  // placeSla keeps the SLA line (a DOM element in uPlot's overlay, so it is
  // labeled text, not pixels) at the bound whenever the scale changes.
  function placeSla(u, s) {
    const line = u.over.querySelector(".sla-line");
    if (!line) return;
    const left = u.valToPos(s.sla, "x");
    const inside = Number.isFinite(left) && left >= 0 && left <= u.over.clientWidth;
    line.style.display = inside ? "" : "none";
    line.style.left = left + "px";
    line.classList.toggle("sla-flip", left > u.over.clientWidth * 0.7);
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(draw, 150); });

  // Helpers the panels' scripts (planner.js, tiers.js) share: an element
  // builder, number formats, and the axis conventions above.
  const util = (() => {
    const el = (tag, cls, text) => {
      const e = document.createElement(tag);
      if (cls) e.className = cls;
      if (text !== undefined) e.textContent = text;
      return e;
    };
    const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
    const fmt = (v) => (v == null ? "—" : Math.abs(v) < 10 ? +v.toFixed(2) + "" : Math.abs(v) < 1000 ? +v.toFixed(1) + "" : Math.round(v).toLocaleString("en-US"));
    const fmtT = (s) => (s < 60 ? fmt(s) + " s" : Math.floor(s / 60) + " min " + Math.round(s % 60) + " s");
    const values = (u, splits) => splits.map((v) => (v == null ? "" : Math.abs(v) >= 10000 ? compact.format(v) : +v.toPrecision(6) + ""));
    const axis = { stroke: "#1f2328", grid: { stroke: "#e5e7eb", width: 1 }, ticks: { stroke: "#d0d7de", width: 1 }, values, space: 40 };
    return { el, num, fmt, fmtT, axis };
  })();

  const api = window.dynosimCharts = {
    // render(report) draws a new run; the run before it stays, overlaid.
    render(report) {
      const prev = runs.length ? { name: "previous run", report: runs[0].report } : null;
      api.setRuns(prev ? [{ name: "this run", report }, prev] : [{ name: "this run", report }]);
    },
    // setRuns([{name, report}, …]) draws the first run solid and the others
    // (at most MAX_RUNS in all) dashed, named in the legends.
    setRuns(list) {
      runs = (Array.isArray(list) ? list : []).filter((r) => r && r.report).slice(0, MAX_RUNS)
        .map((r, i) => ({ name: String(r.name || (i === 0 ? "this run" : "run " + i)), report: r.report }));
      // let Vugu finish patching the DOM first
      requestAnimationFrame(draw);
    },
    // remount() runs after each render of the Go UI: it draws the runs again
    // when their container is new (the render created or replaced it after
    // setRuns' frame, which may come first: renders are batched).
    remount() {
      const root = document.getElementById("charts");
      if (root && root !== drawnInto && runs.length) draw();
    },
    get count() { return plots.length; },
    // runs: the drawn runs, [{name, report}], current first.
    get runs() { return runs.slice(); },
    // describe() lists the drawn plots (for tests): id, visible series, bands.
    describe() {
      return figures.map((f) => ({
        id: f.spec.id, title: f.spec.title, kind: f.spec.kind, log: f.fig.dataset.log === "1", xlabel: f.fig.dataset.xlabel,
        runs: Number(f.fig.dataset.runs), bands: (f.spec.bands || []).length,
        shown: f.u ? f.u.series.slice(1).filter((x) => x.show).map((x) => x.label) : [],
      }));
    },
    overlay,
    // toggle(fig, testid, label, on, onChange) adds a checkbox to a
    // figure's tools (the planner panel's plots use it too).
    toggle,
    util,
  };
})();
