// recommend.js: the page's Recommend view (the live ledger, the Pareto
// chart, best-so-far against trials, exports). The Go UI (ui/recommend.go)
// owns the editor and the Run/Cancel buttons and calls
//
//   await dynosimRecommendView.run(opts)  opts as dynosim.recommend's; draws
//                                        each ledger entry as it arrives and
//                                        resolves to the search's result
//   dynosimRecommendView.exportAs(kind)   "json" | "csv" | "yaml": downloads
//                                        recommendation.json, .csv, or the
//                                        recommended candidates' YAMLs
//   dynosimRecommendView.result           the last finished search
//
// Clicking a point (or a ledger row's Open button) calls
// window.dynosimOpenCandidate(yaml, id), which the Go UI registers: it puts
// the candidate's predict config into the editor and runs it.
"use strict";
(function () {
  let space = null, entries = [], result = null, sortKey = "rank", sortDir = 1, hover = "";
  let pareto = null, best = null, ledgerNode = null;
  const AGG = "#1d4ed8", DIS = "#c2410c";

  const el = (id) => document.getElementById(id);
  const num = (v, d) => (typeof v === "number" && Number.isFinite(v) ? v.toLocaleString("en-US", { maximumFractionDigits: d }) : "–");

  // modeOf is a candidate's engine.mode: searched, or inside a searched
  // engine / engine.workers value, else the base config's.
  function modeOf(e) {
    // the label names it (also for the default space's one "deployment" dimension)
    if (e.label) return /^disaggregated /.test(e.label) ? "disaggregated" : "aggregated";
    const c = e.config || {};
    if (c["engine.mode"]) return c["engine.mode"];
    for (const [k, v] of Object.entries(c)) {
      if (k === "engine" && /mode:\s*disaggregated/.test(v)) return "disaggregated";
      if (k === "engine" && /mode:\s*aggregated/.test(v)) return "aggregated";
    }
    return (space && space.mode) || "aggregated";
  }

  // The ledger's columns (issue 32 item 7): by rank, each deployment as
  // its label in words (recommend.Label; the searched values behind a
  // details toggle), whether it meets the SLA at p99, then the figures.
  const columns = () => [
    { key: "rank", label: "rank", get: (e) => e.rank },
    { key: "label", label: "deployment", get: (e) => e.label || "", render: deployment },
    { key: "sla", label: "SLA", get: (e) => (e.status === "feasible" ? (e.meets_sla ? "yes" : "no") : undefined) },
    { key: "status", label: "status", get: (e) => e.status },
    { key: "gpus", label: "GPUs", get: (e) => e.used_gpus },
    { key: "score", label: "score", get: (e) => e.score, fmt: (v) => num(v, 4) },
    { key: "gpu", label: "tok/s/GPU", get: (e) => e.metrics.output_throughput_per_gpu_tok_s, fmt: (v) => num(v, 1) },
    { key: "user", label: "tok/s/user", get: (e) => e.metrics.mean_output_token_throughput_per_user, fmt: (v) => num(v, 1) },
    { key: "ttft", label: "TTFT p99 ms", get: (e) => e.metrics.p99_ttft_ms, fmt: (v) => num(v, 0) },
    { key: "reason", label: "reason", get: (e) => (e.reason_category ? e.reason_category + ": " + e.reason : e.cache_hit ? "cache hit" : "") },
  ];

  // deployment fills a ledger row's deployment cell: the label, the
  // searched values that are words or numbers (the default space's one
  // value names every knob it sets: the label alone does not tell two
  // kv_router candidates apart), a candidate equal to a better-ranked one
  // (same_as), and every searched value (YAML too) behind a toggle.
  function deployment(td, e) {
    td.className = "deployment";
    td.append(Object.assign(document.createElement("span"), { className: "label", textContent: e.label || e.candidate_id }));
    const knobs = Object.entries(e.config || {}).filter(([, v]) => !/[{}\[\]\n]/.test(v))
      .map(([k, v]) => (k === "deployment" ? v : `${k.slice(k.lastIndexOf(".") + 1)}=${v}`));
    if (knobs.length) td.append(Object.assign(document.createElement("div"), { className: "knobs", textContent: knobs.join(" · ") }));
    if (e.same_as) {
      const rank = (entries.find((x) => x.candidate_id === e.same_as) || {}).rank;
      td.append(Object.assign(document.createElement("div"), { className: "same", textContent: `same run as ${rank ? "rank " + rank : e.same_as}` }));
    }
    const d = document.createElement("details");
    d.append(Object.assign(document.createElement("summary"), { textContent: e.candidate_id }));
    d.append(Object.assign(document.createElement("pre"), {
      textContent: Object.entries(e.config || {}).map(([k, v]) => `${k}: ${v}`).join("\n") || "(the base config)",
    }));
    td.append(d);
  }
  function sorted() {
    const col = columns().find((c) => c.key === sortKey) || columns()[0];
    return entries.slice().sort((a, b) => {
      const x = col.get(a), y = col.get(b);
      const nx = x === null || x === undefined, ny = y === null || y === undefined;
      if (nx || ny) return nx === ny ? a.trial - b.trial : nx ? 1 : -1;
      if (x < y) return -sortDir;
      if (x > y) return sortDir;
      return a.trial - b.trial;
    });
  }

  function renderLedger() {
    const box = el("rec-ledger");
    if (!box) return;
    const cols = columns();
    const table = document.createElement("table");
    table.className = "summary ledgertable";
    const cap = table.createCaption();
    cap.textContent = entries.length ? `Ledger: ${entries.length} candidate${entries.length === 1 ? "" : "s"}` +
      (space ? ` of ${space.size}` : "") : "Ledger";
    const head = table.createTHead().insertRow();
    for (const c of cols) {
      const th = document.createElement("th");
      th.scope = "col";
      th.setAttribute("aria-sort", c.key === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none");
      const b = document.createElement("button");
      b.type = "button";
      b.className = "sort";
      b.textContent = c.label + (c.key === sortKey ? (sortDir > 0 ? " ▲" : " ▼") : "");
      b.addEventListener("click", () => { if (sortKey === c.key) sortDir = -sortDir; else { sortKey = c.key; sortDir = 1; } renderLedger(); });
      th.appendChild(b);
      head.appendChild(th);
    }
    head.appendChild(Object.assign(document.createElement("th"), { scope: "col", textContent: "open" }));
    const body = table.createTBody();
    const top = new Set(result ? (result.ledger.views.top_n || result.ledger.views.pareto_front || []) : []);
    for (const e of sorted()) {
      const tr = body.insertRow();
      tr.dataset.candidate = e.candidate_id;
      tr.className = "entry " + e.status + (top.has(e.candidate_id) ? " recommended" : "") + (e.meets_sla && e.status === "feasible" ? " meets-sla" : "") +
        (result && result.ledger.best && result.ledger.best.candidate_id === e.candidate_id ? " best" : "") + (hover === e.candidate_id ? " hl" : "");
      if (e.status !== "feasible") tr.title = e.reason || e.status;
      for (const c of cols) {
        const td = tr.insertCell();
        td.dataset.label = c.label;
        const v = c.get(e);
        if (c.render) { c.render(td, e); continue; }
        td.textContent = c.fmt ? c.fmt(v) : v === undefined || v === null ? "" : String(v);
        if (c.key === "reason") td.className = "reason";
        if (c.key === "sla" && v) td.className = "sla " + v;
      }
      const td = tr.insertCell();
      td.dataset.label = "";
      if (e.status === "feasible") {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "small";
        b.textContent = "Open";
        b.setAttribute("aria-label", "Open " + e.candidate_id + " as a prediction");
        b.addEventListener("click", () => open(e.candidate_id));
        td.appendChild(b);
      }
      tr.addEventListener("mouseenter", () => setHover(e.candidate_id, false));
      tr.addEventListener("mouseleave", () => setHover("", false));
    }
    box.replaceChildren(table);
    ledgerNode = table;
  }

  // remount puts the drawn ledger and plots back into their containers: the
  // Go UI calls it after each render, because Vugu patches the page's
  // elements by position and may have reused a container for another
  // element (and dropped what it did not render itself) when a section
  // above appeared or went.
  function remount() {
    for (const [id, node] of [["rec-ledger", ledgerNode], ["pareto-chart", pareto && pareto.root], ["best-chart", best && best.root]]) {
      const box = el(id);
      if (box && node && (box.firstChild !== node || box.childNodes.length !== 1)) box.replaceChildren(node);
    }
  }

  function setHover(id, fromChart) {
    if (hover === id) return;
    hover = id;
    const box = el("rec-ledger");
    if (box) for (const tr of box.querySelectorAll("tr[data-candidate]")) {
      tr.classList.toggle("hl", tr.dataset.candidate === id);
      if (fromChart && tr.dataset.candidate === id && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
    }
    if (pareto) pareto.redraw(false, false);
  }

  // points: the feasible candidates with both objectives.
  function points() {
    return entries.filter((e) => e.status === "feasible" && !e.cache_hit &&
      Number.isFinite(e.metrics.output_throughput_per_gpu_tok_s) && Number.isFinite(e.metrics.mean_output_token_throughput_per_user));
  }

  function width(box) { return Math.max(260, Math.min(box.clientWidth || 600, 900) - 4); }

  function drawPareto() {
    const box = el("pareto-chart");
    if (!box || typeof uPlot === "undefined") return;
    const pts = points();
    const groups = { aggregated: [], disaggregated: [] };
    for (const e of pts) groups[modeOf(e) === "disaggregated" ? "disaggregated" : "aggregated"].push(e);
    // one shared, sorted x (tok/s/user); each series null where it has no point
    const rows = pts.map((e) => ({ x: e.metrics.mean_output_token_throughput_per_user, e })).sort((a, b) => a.x - b.x || a.e.trial - b.e.trial);
    const xs = rows.map((r) => r.x);
    const ya = rows.map((r) => (modeOf(r.e) === "disaggregated" ? null : r.e.metrics.output_throughput_per_gpu_tok_s));
    const yd = rows.map((r) => (modeOf(r.e) === "disaggregated" ? r.e.metrics.output_throughput_per_gpu_tok_s : null));
    const itl = space && space.itlMs > 0 ? space.itlMs : 0;
    const bound = itl ? 1000 / itl : 0;
    const front = new Set(result && result.ledger.views.pareto_front || []);
    const dot = (color) => ({ show: true, size: 9, stroke: color, fill: color });
    const opts = {
      title: "Pareto: tok/s/GPU against tok/s/user",
      width: width(box), height: 300,
      scales: { x: { time: false, range: (u, lo, hi) => [0, Math.max(hi, bound) * 1.1 || 1] }, y: { range: (u, lo, hi) => [0, (hi || 1) * 1.1] } },
      axes: [{ label: "tok/s/user (mean output rate per request)" }, { label: "tok/s/GPU", size: 60 }],
      cursor: { points: { show: false }, drag: { x: false, y: false } },
      legend: { show: true },
      series: [{ label: "tok/s/user" },
        { label: "aggregated", stroke: AGG, paths: () => null, points: dot(AGG), spanGaps: false },
        { label: "disaggregated", stroke: DIS, paths: () => null, points: dot(DIS), spanGaps: false }],
      hooks: {
        drawClear: [(u) => {
          if (!bound) return;
          const ctx = u.ctx, l = u.valToPos(bound, "x", true), r = u.bbox.left + u.bbox.width;
          if (l >= r) return;
          ctx.save();
          ctx.fillStyle = "rgba(22,163,74,0.10)";
          ctx.fillRect(Math.max(l, u.bbox.left), u.bbox.top, r - Math.max(l, u.bbox.left), u.bbox.height);
          ctx.strokeStyle = "rgba(22,163,74,0.8)";
          ctx.setLineDash([5, 4]);
          ctx.beginPath(); ctx.moveTo(l, u.bbox.top); ctx.lineTo(l, u.bbox.top + u.bbox.height); ctx.stroke();
          ctx.fillStyle = "#166534";
          ctx.font = `${12 * devicePixelRatio}px sans-serif`;
          ctx.fillText(`ITL ≤ ${itl} ms (≥ ${num(bound, 1)} tok/s/user)`, l + 4 * devicePixelRatio, u.bbox.top + 14 * devicePixelRatio);
          ctx.restore();
        }],
        draw: [(u) => {
          const ctx = u.ctx;
          ctx.save();
          for (const r of rows) {
            const isH = r.e.candidate_id === hover, isF = front.has(r.e.candidate_id);
            if (!isH && !isF) continue;
            const x = u.valToPos(r.x, "x", true), y = u.valToPos(r.e.metrics.output_throughput_per_gpu_tok_s, "y", true);
            ctx.beginPath();
            ctx.lineWidth = (isH ? 3 : 1.5) * devicePixelRatio;
            ctx.strokeStyle = isH ? "#111827" : "#15803d";
            ctx.arc(x, y, (isH ? 9 : 7) * devicePixelRatio, 0, 2 * Math.PI);
            ctx.stroke();
          }
          ctx.restore();
        }],
      },
    };
    if (pareto) { pareto.destroy(); pareto = null; }
    box.replaceChildren();
    pareto = new uPlot(opts, [xs, ya, yd], box);
    pareto.rows = rows;
    const nearest = (ev) => {
      const rect = pareto.over.getBoundingClientRect();
      const px = ev.clientX - rect.left, py = ev.clientY - rect.top;
      let bestD = 400, id = "";
      for (const r of pareto.rows) {
        const dx = pareto.valToPos(r.x, "x") - px, dy = pareto.valToPos(r.e.metrics.output_throughput_per_gpu_tok_s, "y") - py;
        const d = dx * dx + dy * dy;
        if (d < bestD) { bestD = d; id = r.e.candidate_id; }
      }
      return id;
    };
    pareto.over.addEventListener("mousemove", (ev) => setHover(nearest(ev), true));
    pareto.over.addEventListener("mouseleave", () => setHover("", false));
    pareto.over.addEventListener("click", (ev) => { const id = nearest(ev); if (id) open(id); });
    pareto.over.style.cursor = "pointer";
    box.dataset.points = String(rows.length);
  }

  function drawBest() {
    const box = el("best-chart");
    if (!box || typeof uPlot === "undefined") return;
    const xs = [], ys = [];
    let b = null;
    // In trial order: the finished ledger is sorted by rank (issue 32).
    for (const e of entries.slice().sort((x, y) => x.trial - y.trial)) {
      if (e.status === "feasible" && typeof e.score === "number" && (b === null || e.score > b)) b = e.score;
      xs.push(e.trial);
      ys.push(b);
    }
    if (best) { best.destroy(); best = null; }
    box.replaceChildren();
    best = new uPlot({
      title: "Best score so far", width: width(box), height: 200,
      scales: { x: { time: false } },
      axes: [{ label: "trial" }, { label: "score", size: 60 }],
      series: [{ label: "trial" }, { label: "best so far", stroke: "#15803d", width: 2, points: { show: true, size: 5 } }],
    }, [xs, ys], box);
  }

  let pending = 0;
  function redraw() {
    if (pending) return;
    pending = requestAnimationFrame(() => { pending = 0; renderLedger(); drawPareto(); drawBest(); });
  }

  function open(id) {
    if (!result) return; // the candidate's YAML comes with the search's end
    const e = entries.find((x) => x.candidate_id === id);
    if (!e || typeof window.dynosimOpenCandidate !== "function") return;
    // the YAML of a candidate: base + its sets (dynosim.candidateYAML)
    window.dynosim.candidateYAML(result.base, e.prediction_sets).then((y) => window.dynosimOpenCandidate(y, id));
  }

  function reset() {
    space = null; entries = []; result = null; hover = "";
    redraw();
  }

  async function run(opts) {
    reset();
    const res = await window.dynosim.recommend(opts, (e, sp) => { space = sp; entries.push(e); redraw(); });
    space = res.space;
    entries = res.ledger.candidates;
    result = res;
    redraw();
    return res;
  }

  function exportAs(kind) {
    if (!result) return;
    if (kind === "json") window.dynosim.download("recommendation.json", result.json, "application/json");
    else if (kind === "csv") window.dynosim.download("recommendation.csv", result.csv, "text/csv");
    else window.dynosim.download("recommendations.yaml", result.yamls.map((y) => y.yaml).join("---\n"), "application/yaml");
  }

  // pointAt(id): the page coordinates of a candidate's point on the Pareto
  // chart (tests click it), null if it has none.
  function pointAt(id) {
    if (!pareto) return null;
    const r = pareto.rows.find((x) => x.e.candidate_id === id);
    if (!r) return null;
    const rect = pareto.over.getBoundingClientRect();
    return { x: rect.left + pareto.valToPos(r.x, "x"), y: rect.top + pareto.valToPos(r.e.metrics.output_throughput_per_gpu_tok_s, "y") };
  }

  window.addEventListener("resize", () => { if (entries.length) redraw(); });
  window.dynosimRecommendView = { run, reset, exportAs, get result() { return result; }, get entries() { return entries; }, open, pointAt, remount };
})();
