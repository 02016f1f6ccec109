// Browser tests of the planner panel (ui/planner.go, public/planner.js): a
// run with the planner in the loop shows the Planner panel with its plots
// (workers per pool with the floor and the decisions, observed vs predicted
// load, TTFT and ITL against the SLA), its summary line and the decisions
// table; the planner section equals the CLI's; a run without the planner
// shows no panel; nothing scrolls sideways at 390 px. Screenshots go to
// test-artifacts/planner-*.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { startServer, launch, openPage, runConfigured, artifacts, bin, ACTION_MS } from "./helpers.mjs";

let srv, browser;
const tid = (page, id) => page.locator(`[data-testid="${id}"]`);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, "planner-" + name + ".png"), fullPage: true });
const describe = (page) => page.evaluate(() => window.dynosimPlanner.describe());
const report = (page) => page.evaluate(() => window.dynosimCharts.runs[0].report);

before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

// runPreset picks a preset, runs it and waits for this run's results.
async function runPreset(page, preset) {
  await tid(page, "preset-select").selectOption(preset);
  await runConfigured(page);
}

// waitPlots waits until the planner plots are drawn in the page.
async function waitPlots(page) {
  await tid(page, "planner-timeline").waitFor();
  await page.waitForFunction(() => window.dynosimPlanner.describe()?.drawn, null, { timeout: ACTION_MS });
  return describe(page);
}

// decisions: the ticks whose target differs from the pool's workers
// before (the previous tick's target; for the first tick the active and
// starting workers of the last step before it), computed here from the
// report on its own.
function decisions(p) {
  const out = [], last = new Map();
  for (const t of p.ticks) {
    for (const q of t.pools) {
      let prev = last.get(q.pool);
      if (prev === undefined) {
        const steps = p.workers.filter((w) => w.pool === q.pool);
        const before = steps.filter((w) => w.t_ms < t.t_ms);
        const w = before.length ? before[before.length - 1] : steps[0];
        prev = w ? w.active + w.starting : undefined;
      }
      last.set(q.pool, q.target);
      if (prev !== undefined && q.target !== prev) out.push({ tick: t.tick, pool: q.pool, from: prev, to: q.target, reason: t.reason });
    }
  }
  return out;
}

// format is metrics.Format: whole numbers without decimals, else two; thousands separated
const format = (v) => (Number.isInteger(v) ? v.toLocaleString("en-US") : v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }));
const find = (d, id) => { const p = d.plots.find((x) => x.id === id); assert.ok(p, "plot " + id + " in " + d.plots.map((x) => x.id)); return p; };
const pointsOf = (plot, label) => { const s = plot.series.find((x) => x.label === label); assert.ok(s, plot.id + ": series " + label); return s.points; };

// noSideways checks the page and every planner plot fit a 390 px phone.
async function noSideways(page) {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(400); // the plots redraw 150 ms after a resize
  await page.waitForFunction(() => window.dynosimPlanner.describe()?.drawn);
  const { sw, widths } = await page.evaluate(() => ({
    sw: document.documentElement.scrollWidth,
    widths: [...document.querySelectorAll('[data-testid="planner-timeline"] canvas, [data-testid="planner-timeline"] figure, [data-testid="planner-timeline"] table')]
      .map((e) => e.getBoundingClientRect().right),
  }));
  assert.ok(sw <= 391, `page is ${sw}px wide at 390px`);
  assert.ok(widths.length > 0 && widths.every((r) => r <= 390.5), `planner plots and table fit: ${widths}`);
}

test("the planner preset: the Planner panel with its plots, summary and decisions; the CLI's planner section", async () => {
  const page = await openPage(browser.context, srv.url);
  await runPreset(page, "planner");
  let d = await waitPlots(page);
  const rep = await report(page);
  assert.ok(rep.planner && rep.planner.ticks.length > 0, "the report has planner ticks");

  // the same planner section as `dynosim predict` with the preset's planner
  const cli = spawnSync(bin, ["predict", "--set", "planner.policy=enabled", "--set", "planner.scaling_policy=load_180_5",
    "--set", "engine.workers.aggregated.parallelism.replicas=2", "--format", "json"],
    { encoding: "utf8", maxBuffer: 64 << 20, timeout: ACTION_MS });
  assert.equal(cli.status, 0, cli.stderr);
  const native = JSON.parse(cli.stdout);
  assert.deepEqual(rep.planner, native.planner, "the page's planner section is the CLI's");
  assert.equal(rep.summary.gpu_hours, native.summary.gpu_hours);

  // Latency over time shows the planner's active workers on the same time
  // axis as the queue (issue 32 item 5)
  await page.waitForFunction(() => window.dynosimLatency.describe()?.drawn, null, { timeout: ACTION_MS });
  const loadPlot = (await page.evaluate(() => window.dynosimLatency.describe())).plots.find((p) => p.id === "load");
  const active = loadPlot.series.find((s) => s.label === "active workers");
  assert.ok(active && active.points >= 2, "the load plot has the active workers: " + JSON.stringify(loadPlot.series));
  assert.equal(active.max, Math.max(...rep.planner.workers.map((w) => w.active)), "their peak is the planner's");

  // the summary line: ticks, GPU-hours (the report's), time-averaged GPUs,
  // the fewest and most workers
  const sum = tid(page, "planner-summary");
  assert.equal(Number(await sum.getAttribute("data-gpu-hours")), rep.planner.gpu_hours);
  assert.equal(Number(await sum.getAttribute("data-ticks")), rep.planner.ticks.length);
  const text = await sum.innerText();
  const counts = rep.planner.workers.map((w) => w.active + w.starting + w.draining);
  const range = Math.min(...counts) === Math.max(...counts) ? String(counts[0]) : Math.min(...counts) + "–" + Math.max(...counts);
  assert.ok(text.startsWith(rep.planner.ticks.length + " ticks"), text);
  assert.ok(text.includes(" · " + format(rep.planner.gpu_hours) + " GPU·h · "), text);
  assert.ok(text.includes(" · " + format(rep.planner.mean_gpus) + " GPUs on average"), text);
  assert.ok(text.endsWith("workers provisioned: " + range), text);

  // three plots: the workers (the one pool), the load, the latencies; a
  // load-based run has no throughput predictor, so its load plot says so
  const workers = find(d, "workers"), load = find(d, "load"), latency = find(d, "latency");
  assert.deepEqual(d.plots.map((p) => p.id), load.empty ? ["workers", "latency", "load"] : ["workers", "load", "latency"], "an empty plot's note goes last");
  assert.ok(workers.canvas && latency.canvas, "the workers and latency plots are drawn");
  assert.ok(pointsOf(workers, "active") >= rep.planner.workers.length, "a step per change");
  assert.ok(pointsOf(workers, "throughput floor") > 0, "the floor");
  const hasLoad = rep.planner.ticks.some((t) => t.observed_requests !== null);
  assert.equal(load.empty, !hasLoad, "the load plot has data exactly when a tick has the predictor's");
  if (!hasLoad) assert.match(await tid(page, "planner-plot-load").innerText(), /throughput-based scaling is off/);
  for (const l of ["observed TTFT", "estimated TTFT", "observed ITL", "estimated ITL"]) assert.ok(pointsOf(latency, l) > 0, l);
  assert.deepEqual(latency.slas, [rep.sla.ttft_ms, rep.sla.itl_ms]);
  for (const id of ["ttft", "itl"]) {
    const line = tid(page, "planner-sla-" + id);
    assert.equal(Number(await line.getAttribute("data-value")), rep.sla[id + "_ms"]);
    assert.ok(await line.isVisible(), id + " SLA line in view");
    assert.match(await line.innerText(), new RegExp((id === "ttft" ? "TTFT" : "ITL") + " SLA " + rep.sla[id + "_ms"] + " ms"));
  }

  // the decision markers: one per tick that scaled, at its target
  const want = decisions(rep.planner);
  assert.ok(want.length > 0, "the load planner scaled this run (2 workers cannot serve the sample within the SLA)");
  assert.deepEqual(workers.markers.map((m) => [m.tick, m.pool, m.from, m.to]), want.map((m) => [m.tick, m.pool, m.from, m.to]));
  assert.equal(Number(await sum.getAttribute("data-decisions")), want.length);
  assert.equal(pointsOf(workers, "decision"), want.length);
  // hovering a marker shows its tick's reason
  await tid(page, "planner-plot-workers").scrollIntoViewIfNeeded();
  const m = find(await describe(page), "workers").markers[0]; // (page coordinates after the scroll)
  await page.mouse.move(m.x, m.y);
  const tip = tid(page, "planner-plot-workers").locator('[data-testid="planner-tip"]');
  await tip.waitFor({ state: "visible" });
  assert.equal(await tip.getAttribute("data-tick"), String(m.tick));
  assert.ok((await tip.innerText()).includes(want[0].reason), "the tip names the reason");
  const [tipBox, plotBox] = [await tip.boundingBox(), await tid(page, "planner-plot-workers").locator(".u-over").boundingBox()];
  assert.ok(tipBox.x >= plotBox.x - 0.5 && tipBox.x + tipBox.width <= plotBox.x + plotBox.width + 0.5, "the tip stays inside the plot");
  await page.mouse.move(5, 5);
  await tip.waitFor({ state: "hidden" });
  // … and the decisions table lists them (keyboard and screen readers)
  await tid(page, "planner-timeline").locator("details.plannerdecisions summary").click();
  const rows = await tid(page, "planner-decisions").locator("tbody tr").evaluateAll((trs) => trs.map((tr) => ({
    tick: Number(tr.dataset.tick), pool: tr.children[1].textContent, change: tr.children[2].textContent, reason: tr.children[3].textContent,
    action: tr.dataset.action })));
  assert.deepEqual(rows, want.slice(0, 200).map((m) => ({ tick: m.tick, pool: m.pool, change: `${m.from} → ${m.to} (${m.to > m.from ? "+" : ""}${m.to - m.from})`, reason: m.reason,
    action: m.to > m.from ? "scale_up" : "scale_down" })));
  // every tick says what it did (issue 31 item 1): a decision's tick is a
  // scale_up or scale_down, every other tick a hold
  const scaled = new Set(want.map((m) => m.tick));
  for (const t of rep.planner.ticks) assert.ok(scaled.has(t.tick) ? ["scale_up", "scale_down"].includes(t.action) : t.action === "hold", `tick ${t.tick}: ${t.action}`);
  // the legends are keyboard-reachable, as in charts.js
  assert.ok(await page.locator('[data-testid="planner-timeline"] .u-legend[tabindex="0"]').count() >= 2);
  await shot(page, "1280");

  await noSideways(page);
  await shot(page, "390");
  await page.setViewportSize({ width: 1280, height: 800 });

  // a run without the planner: no panel, the plots cleared
  await runPreset(page, "8-workers");
  assert.equal(await tid(page, "planner-timeline").count(), 0);
  assert.equal((await report(page)).planner, undefined);
  await page.waitForFunction(() => window.dynosimPlanner.describe() === null);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("the hybrid planner preset: the load plot compares observed and predicted traffic, requests and ISL / OSL", async () => {
  const page = await openPage(browser.context, srv.url);
  await runPreset(page, "planner-hybrid");
  let d = await waitPlots(page);
  const rep = await report(page);
  const thr = rep.planner.ticks.filter((t) => t.observed_requests !== null);
  assert.ok(thr.length > 0, "a throughput tick");
  let load = find(d, "load");
  assert.ok(load.canvas && !load.empty, "the load plot is drawn");
  assert.equal(pointsOf(load, "observed"), thr.length);
  assert.equal(pointsOf(load, "predicted"), rep.planner.ticks.filter((t) => t.predicted_requests !== null).length);
  assert.ok(find(d, "workers").canvas && find(d, "latency").canvas, "all three plots drawn");
  // the toggle shows the request lengths instead
  await tid(page, "planner-lengths").check();
  d = await describe(page);
  load = find(d, "load");
  assert.deepEqual(load.series.map((s) => s.label), ["observed ISL", "predicted ISL", "observed OSL", "predicted OSL"]);
  assert.equal(pointsOf(load, "observed ISL"), rep.planner.ticks.filter((t) => t.observed_isl !== null).length);
  assert.match(await tid(page, "planner-plot-load").innerText(), /Request lengths/);
  await tid(page, "planner-lengths").uncheck();
  assert.deepEqual(find(await describe(page), "load").series.map((s) => s.label), ["observed", "predicted"]);
  await shot(page, "hybrid-1280");
  await noSideways(page);
  await shot(page, "hybrid-390");
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("a disaggregated run with the planner: a workers plot per pool, each with its own decisions", async () => {
  const page = await openPage(browser.context, srv.url);
  await tid(page, "preset-select").selectOption("disaggregated");
  const yaml = await tid(page, "config-editor").inputValue();
  assert.ok(yaml.includes("\nevaluation:"), "the preset has an SLA");
  await tid(page, "config-editor").fill(yaml.replace("\nevaluation:", "\nplanner: {policy: enabled, scaling_policy: load_180_5}\nevaluation:"));
  await runConfigured(page);
  const d = await waitPlots(page);
  const rep = await report(page);
  assert.deepEqual(d.plots.filter((p) => p.id.startsWith("workers")).map((p) => p.id), ["workers-prefill", "workers-decode"]);
  const want = decisions(rep.planner);
  for (const pool of ["prefill", "decode"]) {
    const p = find(d, "workers-" + pool);
    assert.ok(p.canvas, pool + " drawn");
    assert.match(p.title, new RegExp(pool + " pool"));
    assert.deepEqual(p.markers.map((m) => [m.tick, m.from, m.to]), want.filter((m) => m.pool === pool).map((m) => [m.tick, m.from, m.to]), pool + " decisions");
  }
  assert.ok(want.length > 0, "the planner scaled a pool");
  assert.match(await tid(page, "planner-summary").innerText(), /workers provisioned: prefill \d+(–\d+)?, decode \d+(–\d+)?$/);
  await shot(page, "disaggregated-1280");
  await noSideways(page);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("the default run has no planner panel", async () => {
  const page = await openPage(browser.context, srv.url);
  await tid(page, "run").click();
  await page.waitForFunction(() => /^Done/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  await tid(page, "kpis").waitFor();
  assert.equal(await tid(page, "planner-timeline").count(), 0);
  assert.equal(await page.evaluate(() => window.dynosimPlanner.describe()), null);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});
