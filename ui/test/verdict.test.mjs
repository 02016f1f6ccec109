// Browser tests of the verdict and the latency-over-time plot (issue 32
// items 4 and 5): after a run the verdict sits above every table and says
// whether the SLA was met, by how much, whether the deployment is saturated
// and what dominates TTFT; the KPI cards are coloured against the SLA; the
// raw tables collapse under "Details"; the latency plot shows TTFT and ITL
// p50/p99 per window with the SLA's bounds and the load on the same axis.
// At desktop and 390 px phone widths. Screenshots: test-artifacts/verdict-*.png
// (docs/web.md shows two of them).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startServer, launch, openPage, runConfigured, artifacts, repo, ACTION_MS, VIEWPORTS, atEach } from "./helpers.mjs";

let srv, browser;
const defaultYAML = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8");
// The default deployment (8 replicas) against the default SLA (TTFT 500 ms,
// ITL 50 ms): p99 TTFT is about 6 s, so the SLA is missed, not saturated.
// With a long-context SLA (TTFT 8 s) the same run meets it. One worker on
// the trace replayed 4× faster is far over capacity: saturated.
const slaLine = defaultYAML.match(/evaluation: \{sla: \{[^}]*\}\}/);
assert.ok(slaLine, "the default config sets evaluation.sla on one line");
const met = defaultYAML.replace(slaLine[0], "evaluation: {sla: {ttft_ms: 8000, itl_ms: 50}}");
const overloaded = defaultYAML.replace("replicas: 8", "replicas: 1")
  .replace("load: {type: trace_timestamps, speedup: 1.0}", "load: {type: trace_timestamps, speedup: 4.0}");
assert.notEqual(met, defaultYAML);
assert.notEqual(overloaded, defaultYAML);

const tid = (page, id) => page.locator(`[data-testid="${id}"]`);

before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

async function runWith(page, config) {
  await tid(page, "config-editor").fill(config);
  await runConfigured(page);
  await page.waitForFunction(() => { const d = window.dynosimLatency.describe(); return d && d.drawn; }, null, { timeout: ACTION_MS });
}

// above asserts the verdict's top is above every table's and plot's.
async function verdictFirst(page) {
  const order = await page.evaluate(() => {
    const v = document.querySelector('[data-testid="verdict"]').getBoundingClientRect().top;
    const k = document.querySelector('[data-testid="kpis"]').getBoundingClientRect().top;
    const below = [...document.querySelectorAll(".results table, .results figure, [data-testid='plot-latency-over-time']")]
      .map((e) => e.getBoundingClientRect()).filter((r) => r.height > 0).map((r) => r.top);
    return { v, k, minBelow: Math.min(...below), n: below.length };
  });
  assert.ok(order.n > 0, "there are tables and plots");
  assert.ok(order.v < order.k, "the verdict sits above the KPI cards");
  assert.ok(order.v < order.minBelow, `the verdict (${order.v}) sits above every table and plot (${order.minBelow})`);
}

// colours reads a KPI card's state and its value's colour.
const kpi = (page, id) => page.evaluate((id) => {
  const k = document.querySelector(`[data-testid="${id}"]`);
  return { state: k.getAttribute("data-sla"), color: getComputedStyle(k.querySelector(".kpivalue")).color };
}, id);
const RED = "rgb(180, 35, 24)", GREEN = "rgb(26, 127, 55)";

test("verdict: SLA missed, by how much, not saturated, the bottleneck; cards coloured; tables under Details", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.setViewportSize(VIEWPORTS[0]);
  await runWith(page, defaultYAML);
  const v = tid(page, "verdict");
  assert.equal(await v.getAttribute("data-state"), "missed");
  assert.equal(await tid(page, "verdict-headline").innerText(), "SLA missed");
  const checks = await tid(page, "verdict-check").allInnerTexts();
  assert.equal(checks.length, 2);
  assert.match(checks[0], /^p99 TTFT [\d.,]+ s, over the 500 ms target by \d+\.\d×$/);
  assert.match(checks[1], /^p99 ITL [\d.]+ ms, within the 50 ms target \(\d+ % of it\)$/);
  assert.match(await tid(page, "verdict-within").innerText(), /^\d+\.\d % of requests within the SLA$/);
  assert.match(await tid(page, "verdict-saturation").innerText(), /^Not saturated/);
  assert.match(await tid(page, "verdict-bottleneck").innerText(), /^TTFT is mostly [a-z ]+ \(\d+ % of the mean, [\d.]+ m?s\), in the aggregated pool\.$/);
  // the report's own verdict says the same
  const rep = await page.evaluate(() => window.dynosimCharts.runs[0].report.verdict);
  assert.equal(rep.sla_met, false);
  assert.equal(rep.checks[0].met, false);
  assert.equal(rep.checks[1].met, true);
  assert.deepEqual(await kpi(page, "kpi-ttft"), { state: "missed", color: RED });
  assert.deepEqual(await kpi(page, "kpi-itl"), { state: "met", color: GREEN });
  assert.equal((await kpi(page, "kpi-goodput")).state, "missed");
  assert.equal((await kpi(page, "kpi-throughput")).state, "");

  await atEach(page, async (vp) => {
    await verdictFirst(page);
    await page.evaluate(() => document.querySelector('[data-testid="verdict"]').scrollIntoView());
    await page.screenshot({ path: path.join(artifacts, `verdict-missed-${vp.width}.png`) });
    // the raw tables are collapsed: the AIPerf table is not shown until Details opens
    assert.equal(await tid(page, "aiperf-table").isVisible(), false, "the AIPerf table is under Details");
    const noScroll = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    assert.ok(noScroll, "no horizontal scroll at " + vp.width);
  });
  await tid(page, "details-toggle").click();
  await tid(page, "aiperf-table").waitFor({ timeout: ACTION_MS });
  assert.ok(await tid(page, "summary").isVisible());
  // a render (another run) keeps Details open
  await runWith(page, met);
  assert.ok(await tid(page, "aiperf-table").isVisible(), "Details stays open across runs");
  assert.equal(await tid(page, "verdict").getAttribute("data-state"), "met");
  assert.equal(await tid(page, "verdict-headline").innerText(), "SLA met");
  assert.deepEqual(await kpi(page, "kpi-ttft"), { state: "met", color: GREEN });
  await page.evaluate(() => { document.querySelector('[data-testid="details"]').open = false; });
  await atEach(page, async (vp) => {
    await verdictFirst(page);
    await page.evaluate(() => document.querySelector('[data-testid="verdict"]').scrollIntoView());
    await page.screenshot({ path: path.join(artifacts, `verdict-met-${vp.width}.png`) });
  });
  await page.close();
});

test("verdict: an overloaded deployment is saturated; no SLA says so", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.setViewportSize(VIEWPORTS[1]);
  await runWith(page, overloaded);
  assert.equal(await tid(page, "verdict").getAttribute("data-state"), "missed");
  assert.match(await tid(page, "verdict-saturation").innerText(), /^Saturated: the waiting queue grows without bound/);
  assert.equal(await tid(page, "verdict-saturation").getAttribute("class"), "bad");
  // the plots' saturation notice reads the same verdict
  await tid(page, "saturation").waitFor({ timeout: ACTION_MS });
  await runWith(page, defaultYAML.replace(slaLine[0], ""));
  assert.equal(await tid(page, "verdict").getAttribute("data-state"), "nosla");
  assert.equal(await tid(page, "verdict-headline").innerText(), "No SLA set");
  assert.equal(await tid(page, "verdict-check").count(), 0);
  assert.equal((await kpi(page, "kpi-ttft")).state, "");
  await page.close();
});

test("latency over time: TTFT and ITL p50/p99 per window with the SLA lines, queue and running on the same axis", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.setViewportSize(VIEWPORTS[0]);
  await runWith(page, defaultYAML);
  await atEach(page, async (vp) => {
    const d = await page.evaluate(() => window.dynosimLatency.describe());
    assert.ok(d.drawn, "drawn at " + vp.width);
    assert.deepEqual(d.plots.map((p) => p.id), ["ttft", "itl", "load"]);
    for (const p of d.plots) assert.ok(p.canvas, p.id + " has a canvas");
    const [ttft, itl, load] = d.plots;
    assert.deepEqual(ttft.series.map((s) => s.label), ["TTFT p99", "TTFT p50", "TTFT SLA"]);
    assert.ok(ttft.series[0].points > 10, "TTFT p99 has a point per window with arrivals");
    assert.ok(ttft.series[0].max >= ttft.series[1].max, "p99 ≥ p50");
    assert.equal(ttft.series[2].max, 500, "the TTFT SLA line at 500 ms");
    assert.equal(itl.series[2].max, 50, "the ITL SLA line at 50 ms");
    assert.deepEqual(load.series.map((s) => s.label), ["waiting (queue)", "running"]);
    assert.ok(load.series[1].max > 0, "requests ran");
    // the plot sits above the details
    const above = await page.evaluate(() => document.querySelector('[data-testid="plot-latency-over-time"]').getBoundingClientRect().top <
      document.querySelector('[data-testid="details"]').getBoundingClientRect().top);
    assert.ok(above, "the latency plot is above the details");
    const box = await tid(page, "plot-latency-over-time").boundingBox();
    assert.ok(box.width <= vp.width, "fits the viewport");
  });
  await page.close();
});
