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
      pick(ts, rep).forEach((s) => out.push({ label: s.label + name, xs, ys: s.ys, dash, color: s.color }));
    };
    add(last, "", null);
    add(prev, " (previous)", [6, 4]);
    return { title, xlabel: "simulated time (s)", ylabel, lines: out };
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

  // perWorker picks one series per worker of one pool; time series are
  // indexed by the global worker index.
  const perWorker = (field, pool) => (ts, rep) => {
    const ws = ts.workers || [];
    const r = poolRange(rep, pool, ws.length);
    if (!r) return [];
    const out = [];
    for (let i = r[0]; i < r[1]; i++) out.push({ label: "worker " + i, ys: ws[i][field] || [], color: palette[i % palette.length] });
    return out;
  };

  function workerSpecs(pool, suffix) {
    return [
      timeLines("Running requests per worker" + suffix, "requests", perWorker("running", pool)),
      timeLines("Waiting requests per worker" + suffix, "requests", perWorker("waiting", pool)),
      timeLines("KV cache usage per worker" + suffix, "fraction of blocks", perWorker("kv_usage", pool)),
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
    const reuse = last && last.summary ? last.summary.prefix_cache_reused_ratio : undefined;
    const cdfs = [cdfLines("ttft_ms", "TTFT (ms)"), cdfLines("itl_ms", "ITL (ms)"),
      timeLines("Output throughput", "tokens/s", (ts) => [{ label: "output tokens/s", ys: ts.output_tokens_per_s || [], color: palette[0] }])];
    const reuseSpec = timeLines("Prefix reuse" + (reuse !== undefined ? " (overall " + (reuse * 100).toFixed(1) + "%)" : ""), "reused / input tokens",
      (ts) => [{ label: "prefix reuse", ys: ts.prefix_reuse_ratio || [], color: palette[2] }]);
    const pools = disaggregated(last);
    if (!pools) {
      const one = last && Array.isArray(last.pools) && last.pools.length === 1 ? last.pools[0].name : null;
      return [{ title: "", pool: null, specs: [...cdfs, ...workerSpecs(one, ""), reuseSpec] }];
    }
    return [{ title: "", pool: null, specs: [...cdfs, reuseSpec] },
      ...pools.map((p) => ({ title: poolTitle(p.name), pool: p.name, specs: workerSpecs(p.name, " (" + p.name + ")") }))];
  }

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
    const topo = topology(last);
    if (topo) {
      root.appendChild(el("h2", "", "Serving topology"));
      root.appendChild(topo);
    }
    const h = document.createElement("h2");
    h.textContent = prev ? "Plots (dashed: previous run)" : "Plots";
    root.appendChild(h);
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
      const grid = document.createElement("div");
      grid.className = "chartgrid";
      parent.appendChild(grid);
      drawGrid(grid, specs);
    }
  }

  function drawGrid(grid, specs) {
    for (const s of specs) {
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
