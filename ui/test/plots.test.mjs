// Browser tests of the result plots (public/charts.js): per-worker series as
// a mean with a min–max band, the CDF log toggle, SLA lines, the saturation
// notice, several runs overlaid, and no horizontal scroll on a phone.
// Screenshots go to test-artifacts/plots-*.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, repo, ACTION_MS } from "./helpers.mjs";

let srv, browser;
const dir = mkdtempSync(path.join(tmpdir(), "dynosim-plots-"));
const synthetic = gunzipSync(readFileSync(path.join(repo, "public/traces/synthetic_trace.jsonl.gz"))).toString();
writeFileSync(path.join(dir, "small.jsonl"), synthetic.split("\n").slice(0, 300).join("\n") + "\n");
const defaultYAML = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8");
// One worker on the default 1,000-request trace replayed 4× faster: far over
// capacity, the queue builds up for the whole run.
const overloaded = defaultYAML.replace("replicas: 8", "replicas: 1")
  .replace("load: {type: trace_timestamps, speedup: 1.0}", "load: {type: trace_timestamps, speedup: 4.0}");
assert.notEqual(overloaded, defaultYAML);

const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + ".png"), fullPage: true });
const plot = (page, id) => page.locator(`[data-testid="plot-${id}"]`);
const describe = (page) => page.evaluate(() => window.dynosimCharts.describe());
const find = (list, id) => { const p = list.find((d) => d.id === id); assert.ok(p, "plot " + id); return p; };

before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

async function runWith(page, config) {
  if (config !== undefined) {
    await page.locator('[data-testid="config-editor"]').fill(config);
    await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
  }
  const n = await page.evaluate(() => window.dynosimCharts.runs.length);
  await page.locator('[data-testid="run"]').click();
  await page.waitForFunction((n) => window.dynosimCharts.runs.length > n || (n > 0 && window.dynosimCharts.runs.length === 2), n, { timeout: ACTION_MS });
  await page.waitForFunction(() => window.dynosimCharts.count >= 5 && document.querySelector('[data-testid="plot-ttft"]'), null, { timeout: ACTION_MS });
}

// checkPlots asserts the readable-plots properties at the current viewport.
async function checkPlots(page) {
  let d = await describe(page);
  for (const id of ["running", "waiting", "kv"]) {
    const p = find(d, id);
    assert.equal(p.bands, 1, id + ": one min–max band");
    // the current run: its mean, the band's two edges, no single workers
    // (an earlier run overlaid adds only its mean)
    assert.deepEqual(p.shown.slice(0, 3).map((l) => l.replace(/ · .*/, "")), ["mean", "max", "min"], id + ": the mean and the band, not one line per worker");
    assert.ok(p.shown.slice(3).every((l) => l.startsWith("mean · ")), id + ": " + p.shown);
    assert.equal(await plot(page, id).getAttribute("data-workers"), "hidden");
  }
  // "show workers" reveals the single workers (8 in the default config)
  await plot(page, "running").locator('[data-testid="show-workers"]').check();
  d = await describe(page);
  const workers = find(d, "running").shown.filter((l) => l.startsWith("worker "));
  assert.equal(workers.length, 8, "8 worker lines shown");
  assert.equal(await plot(page, "running").locator(".u-legend .worker-entry:visible").count(), 8);
  await plot(page, "running").locator('[data-testid="show-workers"]').uncheck();
  d = await describe(page);
  assert.equal(find(d, "running").shown.filter((l) => l.startsWith("worker ")).length, 0);
  assert.equal(await plot(page, "running").locator(".u-legend .worker-entry:visible").count(), 0);

  // the CDF log toggle switches the x scale to log and back
  for (const id of ["ttft", "itl"]) {
    assert.equal(find(await describe(page), id).log, false);
    assert.match(find(await describe(page), id).xlabel, /up to p99/);
    await plot(page, id).locator('[data-testid="log-x"]').check();
    assert.equal(find(await describe(page), id).log, true, id + " log");
    assert.match(find(await describe(page), id).xlabel, /log scale/);
    await plot(page, id).locator('[data-testid="log-x"]').uncheck();
    assert.equal(find(await describe(page), id).log, false);
  }

  // the time axis names the bucket width
  assert.match(find(await describe(page), "throughput").xlabel, /simulated time \(s\), [0-9.]+ m?s buckets/);
  // legends stay one line: never taller than the plot
  const tall = await page.evaluate(() => [...document.querySelectorAll(".chart")].map((f) => {
    const lg = f.querySelector(".u-legend"), cv = f.querySelector("canvas");
    return lg.getBoundingClientRect().height > Math.min(40, cv.getBoundingClientRect().height) ? f.dataset.testid : null;
  }).filter(Boolean));
  assert.deepEqual(tall, [], "legends taller than one line");
}

test("plots: band + mean, toggles, SLA lines, several runs, 1280 and 390 px", async (t) => {
  const page = await openPage(browser.context, srv.url);
  assert.match(await page.locator('[data-testid="config-editor"]').inputValue(), /sla: \{ttft_ms: 500, itl_ms: 50\}/);
  await runWith(page);
  assert.equal(await page.locator('[data-testid="saturation"]').count(), 0, "the default config is not saturated");
  await checkPlots(page);

  // SLA lines from report.sla (someone else adds the field to the report)
  const sla = await page.evaluate(() => window.dynosimCharts.runs[0].report.sla);
  await t.test("SLA lines from the report's sla field", (st) => {
    if (!sla) return st.skip("report.sla is absent in this build: the SLA bounds cannot be drawn from a real report yet");
    return (async () => {
      assert.equal(await page.locator('[data-testid="sla-ttft"]').count(), 1);
      assert.equal(await page.locator('[data-testid="sla-itl"]').count(), 1);
      assert.match(await page.locator('[data-testid="sla-ttft"]').innerText(), /SLA 500 ms/);
      assert.match(await page.locator('[data-testid="sla-itl"]').innerText(), /SLA 50 ms/);
    })();
  });

  // setRuns: the current report and two modified copies overlay 3 runs; a
  // copy with report.sla checks the SLA drawing whatever the build reports.
  await page.evaluate(() => {
    const cur = window.dynosimCharts.runs[0].report;
    const copy = (f, sla) => {
      const r = structuredClone(cur);
      for (const k of Object.keys(r.distributions)) r.distributions[k] = r.distributions[k].map((v) => v * f);
      r.timeseries.output_tokens_per_s = r.timeseries.output_tokens_per_s.map((v) => v / f);
      for (const w of r.timeseries.workers) w.waiting = w.waiting.map((v) => v * f);
      if (sla) r.sla = sla;
      return r;
    };
    window.dynosimCharts.setRuns([
      { name: "run 3: engine.workers.aggregated.parallelism.replicas=4", report: copy(1, { ttft_ms: 500, itl_ms: 50, e2e_ms: null }) },
      { name: "run 2: replicas=6", report: copy(1.5) },
      { name: "run 1: default", report: copy(2) },
    ]);
  });
  await page.waitForFunction(() => window.dynosimCharts.describe().length >= 5 && window.dynosimCharts.describe().every((p) => p.runs === 3));
  for (const id of ["ttft", "itl", "throughput", "running", "waiting", "kv", "reuse"]) {
    const legend = await plot(page, id).locator(".u-legend").textContent();
    for (const name of ["run 3: engine.workers", "run 2: replicas=6", "run 1: default"]) assert.ok(legend.includes(name), `${id} legend names ${name}`);
  }
  assert.match(await page.locator("#charts h2", { hasText: "Plots" }).innerText(), /dashed: 2 earlier runs/);
  assert.equal(await page.locator('[data-testid="sla-ttft"]').count(), 1);
  assert.equal(await page.locator('[data-testid="sla-itl"]').count(), 1);
  assert.match(await page.locator('[data-testid="sla-ttft"]').innerText(), /SLA 500 ms/);
  assert.ok(await page.locator('[data-testid="sla-ttft"]').isVisible(), "the TTFT SLA line is inside the plot");
  assert.ok(await page.locator('[data-testid="sla-itl"]').isVisible(), "the ITL SLA line is inside the plot");
  // the toggles survive a redraw and still work with 3 runs
  await plot(page, "ttft").locator('[data-testid="log-x"]').check();
  assert.equal(find(await describe(page), "ttft").log, true);
  assert.ok(await page.locator('[data-testid="sla-ttft"]').isVisible(), "the SLA line on the log scale");
  await plot(page, "ttft").locator('[data-testid="log-x"]').uncheck();
  // more than 6 runs are capped
  const capped = await page.evaluate(async () => {
    const r = window.dynosimCharts.runs[0].report;
    window.dynosimCharts.setRuns(Array.from({ length: 9 }, (_, i) => ({ name: "run " + i, report: r })));
    await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
    return window.dynosimCharts.runs.length;
  });
  assert.equal(capped, 6);
  await page.evaluate(() => {
    const r = window.dynosimCharts.runs[0].report;
    window.dynosimCharts.setRuns([{ name: "this run", report: { ...r, sla: { ttft_ms: 500, itl_ms: 50, e2e_ms: null } } },
      { name: "run 2 (slower)", report: { ...r, distributions: Object.fromEntries(Object.entries(r.distributions).map(([k, q]) => [k, q.map((v) => v * 1.5)])) } }]);
  });
  await page.waitForFunction(() => window.dynosimCharts.describe().every((p) => p.runs === 2));
  await shot(page, "plots-1280");

  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(600); // charts redraw after a debounced resize
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 391, `page is ${width}px wide at 390px`);
  const wide = await page.evaluate(() => [...document.querySelectorAll(".chart")]
    .filter((f) => f.getBoundingClientRect().right > 390).map((f) => f.dataset.testid));
  assert.deepEqual(wide, [], "plots wider than the phone");
  await checkPlots(page);
  await shot(page, "plots-390");
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("saturation notice: shown for an overloaded deployment, not for a light one", async () => {
  const page = await openPage(browser.context, srv.url);
  await runWith(page, overloaded);
  const note = page.locator('[data-testid="saturation"]');
  await note.waitFor({ timeout: ACTION_MS });
  assert.match(await note.innerText(), /The deployment is saturated: the waiting queue grows without bound — results depend on the run length\./);
  await shot(page, "plots-saturated");
  // a light run: 300 requests on the default 8 workers
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.waitForFunction(() => document.querySelector('[data-testid="trace-label"]').textContent.includes("small.jsonl"));
  await runWith(page, defaultYAML);
  await page.waitForFunction(() => window.dynosimCharts.runs[0].report.summary.completed_requests === 300);
  await page.waitForTimeout(100);
  assert.equal(await note.count(), 0);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("disaggregated: each pool's per-worker plots are a band + mean", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.waitForFunction(() => document.querySelector('[data-testid="trace-label"]').textContent.includes("small.jsonl"));
  await page.locator('[data-testid="preset-select"]').selectOption("disaggregated");
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
  await runWith(page);
  await page.waitForFunction(() => window.dynosimCharts.count >= 10);
  const d = await describe(page);
  for (const pool of ["prefill", "decode"]) {
    const group = page.locator(`[data-testid="plots-pool-${pool}"]`);
    assert.equal(await group.count(), 1, pool);
    for (const id of ["running", "waiting", "kv"]) {
      assert.equal(await group.locator(`[data-testid="plot-${id}-${pool}"]`).count(), 1);
      const p = find(d, id + "-" + pool);
      assert.equal(p.bands, 1);
      assert.deepEqual(p.shown, ["mean", "max", "min"]);
    }
    await group.locator('[data-testid="plot-running-' + pool + '"] [data-testid="show-workers"]').check();
    const shown = find(await describe(page), "running-" + pool).shown.filter((l) => l.startsWith("worker "));
    assert.deepEqual(shown, pool === "prefill" ? ["worker 0", "worker 1"] : ["worker 2", "worker 3"]);
  }
  assert.equal(await page.locator('[data-testid="topology-link"]').count(), 1);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});
