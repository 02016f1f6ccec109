// Browser tests of the results as a product (answers first, the model
// badge, compare, honest state, help, phones, the default run): each at
// 1280×800 and 390×844 (one page, resized between the two), with
// screenshots test-artifacts/<name>-1280.png and <name>-390.png. Headless
// Debian Chromium via playwright-core against
// `dynosim serve` on a free loopback port.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, bin, repo, stripWall, WALL_FIELDS, VIEWPORTS, resizeTo, atEach, ACTION_MS, openDetails } from "./helpers.mjs";

let srv, browser;
const dir = mkdtempSync(path.join(tmpdir(), "dynosim-layout-"));
const synthetic = gunzipSync(readFileSync(path.join(repo, "public/traces/synthetic_trace.jsonl.gz"))).toString();
writeFileSync(path.join(dir, "small.jsonl"), synthetic.split("\n").slice(0, 300).join("\n") + "\n");
writeFileSync(path.join(dir, "garbage.jsonl"), "this is not a trace\n");
const defaultYAML = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8");
const twoWorkers = defaultYAML.replace("replicas: 8", "replicas: 2");

const tid = (page, id) => page.locator(`[data-testid="${id}"]`);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, `${name}-${page.viewportSize().width}.png`), fullPage: true });

before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

// open loads the page at a viewport size (the laptop's unless told).
async function open(vp = VIEWPORTS[0]) {
  const page = await openPage(browser.context, srv.url);
  await resizeTo(page, vp);
  return page;
}

// runWith runs the page with a config (and the small trace unless told
// otherwise) and waits for the results of this run.
async function runWith(page, config, { trace = "small.jsonl" } = {}) {
  if (trace) await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, trace));
  if (config) {
    await tid(page, "config-editor").fill(config);
    await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });
  }
  const before = await page.evaluate(() => document.querySelectorAll('[data-testid="runs"] li').length);
  await tid(page, "run").click();
  await page.waitForFunction((n) => /^Done/.test(document.querySelector(".status").textContent) &&
    document.querySelectorAll('[data-testid="runs"] li').length !== n, before, { timeout: ACTION_MS });
  await openDetails(page); // the raw tables are under Details
}

// noSideways asserts that nothing needs sideways scrolling.
async function noSideways(page) {
  const { sw, vw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, vw: window.innerWidth }));
  assert.ok(sw <= vw, `page is ${sw}px wide at ${vw}px`);
}

// Each test below runs its simulations once on one page and makes every
// check at both sizes, resizing the page between them (atEach): a run's
// results do not depend on the viewport, only their layout does.

test("answers first: headline figures, then the AIPerf table, then the grouped summary; the default run is the CLI's (1280 and 390)", async () => {
  const page = await open();
  // 7. the page's default (sample and config) is the CLI's bare default
  await atEach(page, async () => {
    assert.equal(await tid(page, "sample-select").inputValue(), "default");
    assert.match(await tid(page, "default-note").innerText(), /same run as a bare dynosim predict/);
  });
  await runWith(page, null, { trace: null });
  const native = spawnSync(bin, ["predict", "--format", "json"], { cwd: dir, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(native.status, 0, native.stderr);
  const report = JSON.parse(native.stdout);
  const [dl] = await Promise.all([page.waitForEvent("download"), tid(page, "download-report").click()]);
  // the same report, wall clock aside (the page captures per-request records, which only its coverage section says)
  const pageReport = stripWall(JSON.parse(readFileSync(await dl.path(), "utf8")));
  const cliReport = stripWall(JSON.parse(native.stdout));
  delete pageReport.coverage; delete cliReport.coverage;
  assert.deepEqual(pageReport, cliReport, "the page's default run is `dynosim predict`'s");
  const s = report.summary;

  await atEach(page, async () => {
    // the status line says what ran
    assert.match(await page.locator(".status").innerText(), /^Done: 1,000 requests, 8 × H100 SXM, default timing — \d+\.\d s$/);

    // KPI cards
    const kpi = async (id) => (await tid(page, id).innerText()).replace(/\s+/g, " ");
    const fmt = (v) => v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    assert.match(await kpi("kpi-throughput"), new RegExp(`${fmt(s.output_throughput_tok_s)} tok/s ${fmt(s.output_throughput_tok_s / s.total_gpus).replace(/\.\d+$/, "")}\\.\\d\\d tok/s per GPU`));
    const share = (s.goodput_completed_requests / s.num_requests * 100).toFixed(1);
    assert.match(await kpi("kpi-goodput"), new RegExp(`${fmt(s.goodput_request_throughput_rps)} req/s ${share} % of requests met the SLA \\(TTFT ≤ 500 ms, ITL ≤ 50 ms\\)`));
    assert.match(await kpi("kpi-ttft"), new RegExp(`${fmt(Math.round(s.median_ttft_ms * 10) / 10)} ms / ${(s.p99_ttft_ms / 1000).toFixed(1)} s`));
    assert.match(await kpi("kpi-itl"), new RegExp(`${fmt(Math.round(s.median_itl_ms * 10) / 10)} ms / ${fmt(Math.round(s.p99_itl_ms * 10) / 10)} ms`));
    assert.match(await kpi("kpi-gpus"), /GPUs 8 H100 SXM/);
    assert.match(await kpi("kpi-duration"), /Simulated duration \d+ min \d+ s/);
    assert.match(await kpi("kpi-e2e"), /Request latency p50 \d/);

    // order: the verdict, the KPIs, then (under Details) the AIPerf table, then the summary groups
    const order = await page.evaluate(() => ["verdict", "kpis", "aiperf-table", "summary", "simulator-speed"].map((id) => {
      const el = document.querySelector(`[data-testid="${id}"]`);
      return el ? el.getBoundingClientRect().top + window.scrollY : -1;
    }));
    assert.ok(order.every((y, i) => y >= 0 && (i === 0 || y > order[i - 1])), `order ${order}`);

    // the AIPerf table is the shared spec: 7 rows, avg … std, lines with goodput
    const aiperf = await tid(page, "aiperf-table").innerText();
    assert.match(aiperf, /NVIDIA AIPerf \| LLM Metrics/);
    assert.equal(await page.locator('[data-testid="aiperf-table"] tbody tr').count(), 7);
    assert.deepEqual(await page.locator('[data-testid="aiperf-table"] thead th').allInnerTexts(), ["Metric", "avg", "min", "max", "p99", "p90", "p50", "p75", "std"]);
    assert.match(await tid(page, "aiperf-lines").innerText(), /Goodput \(requests\/sec\)\s+1\.\d\d/);

    // grouped summary with units and human durations; wall clock apart
    const captions = await page.locator('[data-testid="summary"] caption').allInnerTexts();
    assert.deepEqual(captions, ["Latency", "Throughput", "Cache", "Scheduling", "SLA (goodput)", "Other"]);
    const sum = await tid(page, "summary").innerText();
    assert.match(sum, /duration_ms\s+[\d,]+\.\d\d ms \(\d+ min \d+ s\)/);
    assert.match(sum, /prefix_cache_reused_ratio\s+\d+\.\d\d %/);
    assert.match(sum, /output_throughput_tok_s\s+[\d,.]+ tok\/s/);
    for (const k of WALL_FIELDS) assert.doesNotMatch(sum, new RegExp(k));
    const speed = await tid(page, "simulator-speed").innerText();
    assert.match(speed, /Simulator speed on this machine \(wall clock: not a prediction, never compared\)/);
    for (const k of WALL_FIELDS) assert.match(speed, new RegExp(k));
    await noSideways(page);
    await shot(page, "answers-first");
  });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("what model is this: timing badge, memory fit per pool, warnings (1280 and 390)", async () => {
  const page = await open();
  await runWith(page, twoWorkers);
  await atEach(page, async () => {
    const badge = (await tid(page, "timing-badge").innerText()).replace(/\s+/g, " ");
    assert.match(badge, /Model llama-3\.1-8b, aggregated/);
    // The badge states the error of the source closest to the run: same GPU
    // family and engine, the protocol of its load (a trace replay: open loop).
    assert.match(badge, /default timing \(aic vllm 0\.24\.0 h100_sxm\) roofline: median error [\d.]+ % TPOT, [\d.]+ % TTFT on \d+ public Hopper open-loop runs with vllm \(BLIS H100 runs; held out: [\d.]+ % TPOT, [\d.]+ % TTFT on \d+; docs\/validation\.md\)/);
    assert.match(badge, /GPU H100 SXM 2 replicas × tensor 1 × attention-data 1 \(1 GPU per worker\)/);
    const mem = await tid(page, "memory-fit").innerText();
    assert.match(mem, /^aggregated, per H100 SXM \(79\.6 GiB\): weights 15\.0 GiB, KV cache [\d.]+ GiB \([\d,]+ blocks of 64 tokens, capacity default\), reserve 2\.0 GiB, free [\d.]+ GiB$/);
    assert.equal(await tid(page, "warnings").count(), 0);
    await shot(page, "badge");
  });

  // A GPU with no public serving measurement says so.
  await runWith(page, twoWorkers.replace("hardware: h100_sxm", "hardware: l40s"));
  await atEach(page, async () => {
    assert.match((await tid(page, "timing-badge").innerText()).replace(/\s+/g, " "), /roofline: not validated end to end on l40s with vllm \(no public serving measurement\)/);
  });

  // disaggregated: a line per pool
  await tid(page, "preset-select").selectOption("disaggregated");
  await runWith(page, null);
  await atEach(page, async () => {
    assert.equal(await page.locator('[data-testid="memory-fit"] .memline').count(), 2);
    assert.match(await tid(page, "memory-fit").innerText(), /^prefill, per H100 SXM[^\n]*\ndecode, per H100 SXM/);
    assert.match((await tid(page, "timing-badge").innerText()).replace(/\s+/g, " "), /prefill: default timing .* decode: default timing/);
    assert.match(await page.locator(".status").innerText(), /^Done: 300 requests, 2 × H100 SXM prefill \+ 2 × H100 SXM decode, default timing — /);
    assert.match((await page.locator('[data-testid="summary"] caption').allInnerTexts()).join("|"), /Disaggregation/);
  });

  // a KV pool that does not fit the GPU (timing ignores the hardware): marked, and the warning shown
  await runWith(page, "engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: 2}\n      kv_cache: {capacity: {type: fixed, blocks: 200000}}\n      timing: {type: polynomial}\n");
  await atEach(page, async () => {
    assert.equal(await page.locator('[data-testid="memory-fit"] .memline.nofit').count(), 1);
    assert.match(await tid(page, "memory-fit").innerText(), /does not fit: [\d.]+ GiB over the GPU's memory/);
    assert.match(await tid(page, "warnings").innerText(), /^Warning: engine\.workers\.aggregated\.kv_cache\.capacity: 200000 blocks/);
    assert.match((await tid(page, "timing-badge").innerText()).replace(/\s+/g, " "), /polynomial timing/);
    await noSideways(page);
    await shot(page, "memory-nofit");
  });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("compare: named runs, editable and removable, deltas against a chosen baseline, never for wall clock (1280 and 390)", async () => {
  const page = await open();
  await runWith(page, twoWorkers);
  await runWith(page, twoWorkers.replace("replicas: 2", "replicas: 4"));
  await runWith(page, twoWorkers.replace("replicas: 2", "replicas: 4").replace("policy: round_robin", "policy: kv_router"));
  const names = () => page.locator('[data-testid="runs"] input.runname').evaluateAll((els) => els.map((e) => e.value));
  await atEach(page, async () => {
    assert.deepEqual(await names(), ["run 1", "replicas=4", "router.policy=kv_router"]);

    // default baseline: the previous run
    const heads = await page.locator('[data-testid="summary"] table').first().locator("thead th").allInnerTexts();
    assert.deepEqual(heads, ["Metric", "This run", "Previous run", "Change"]);
    const sum = await tid(page, "summary").innerText();
    assert.match(sum, /Summary \(compared with the previous run\)/);
    assert.match(sum, /mean_ttft_ms\s+[\d,.]+ ms[^\n]*\s+[\d,.]+ ms[^\n]*\s+[+-]\d+\.\d%/);
    for (const k of WALL_FIELDS) assert.doesNotMatch(sum, new RegExp(k), `${k} is never compared`);
    assert.equal(await page.locator('[data-testid="simulator-speed"] thead th').count(), 2, "the speed table has no compare columns");
  });

  // choose the first run as baseline
  await tid(page, "baseline-select").selectOption({ label: "run 1" });
  await page.waitForFunction(() => /compared with run 1/.test(document.querySelector('[data-testid="summary"]').innerText));
  await atEach(page, async () => {
    assert.equal(await page.locator('[data-testid="summary"] table').first().locator("thead th").nth(2).innerText(), "Baseline: run 1");
  });

  // rename: the plots get the new name
  const input = page.locator('[data-testid="runs"] input.runname').nth(1);
  await input.fill("four workers");
  await input.press("Enter");
  await input.blur();
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="runs"] input.runname')].some((e) => e.value === "four workers"));
  const chartNames = await page.evaluate(() => (window.dynosimCharts.runs || []).map((r) => r.name));
  if (await page.evaluate(() => typeof window.dynosimCharts.setRuns === "function")) {
    assert.deepEqual(chartNames, ["router.policy=kv_router", "four workers", "run 1"], "setRuns gets every run, the current first");
  }

  // remove the baseline: the previous run is the baseline again
  await page.locator('[data-testid="runs"] li').first().locator("button", { hasText: "Remove" }).click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="runs"] li').length === 2);
  await atEach(page, async () => {
    assert.deepEqual(await names(), ["four workers", "router.policy=kv_router"]);
    assert.equal(await page.locator('[data-testid="summary"] table').first().locator("thead th").nth(2).innerText(), "Previous run");
  });
  // remove the current run: the one before it is shown, with nothing to compare
  await page.locator('[data-testid="runs"] li').nth(1).locator("button", { hasText: "Remove" }).click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="runs"] li').length === 1);
  await atEach(page, async () => {
    assert.equal(await page.locator('[data-testid="summary"] table').first().locator("thead th").count(), 2);
    await noSideways(page);
    await shot(page, "compare");
  });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("honest state: edited inputs and failed runs mark the results stale until the next success (1280 and 390)", async () => {
  const page = await open();
  await runWith(page, twoWorkers);
  const opacity = () => page.evaluate(() => Number(getComputedStyle(document.querySelector('[data-testid="aiperf-table"]').closest(".tablewrap")).opacity));
  await atEach(page, async () => {
    assert.equal(await tid(page, "stale").count(), 0);
    assert.equal(await opacity(), 1);
  });

  // an edited config
  await tid(page, "config-editor").fill(twoWorkers.replace("replicas: 2", "replicas: 3"));
  await tid(page, "stale").waitFor();
  await atEach(page, async () => {
    assert.match(await tid(page, "stale").innerText(), /^These results are from an earlier run \(run 1\): the config, trace or profile has changed since\. Run again/);
    assert.ok(await opacity() < 1, "stale tables are dimmed");
    await shot(page, "stale-edited");
  });
  // back to the config that ran: not stale
  await tid(page, "config-editor").fill(twoWorkers);
  await page.waitForFunction(() => !document.querySelector('[data-testid="stale"]'));

  // a failed run
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "garbage.jsonl"));
  await tid(page, "run").click();
  await tid(page, "error").waitFor({ timeout: ACTION_MS });
  await tid(page, "stale").waitFor();
  await atEach(page, async () => {
    assert.match(await tid(page, "stale").innerText(), /the last run failed/);
    assert.ok(await opacity() < 1);
    assert.equal(await page.locator(".status").innerText().then((t) => t.startsWith("Failed.")), true);
    await noSideways(page);
    await shot(page, "stale-failed");
  });

  // the next success clears it
  await runWith(page, null);
  await atEach(page, async () => {
    assert.equal(await tid(page, "stale").count(), 0);
    assert.equal(await opacity(), 1);
    assert.match(await page.locator(".status").innerText(), /^Done: 300 requests, 2 × H100 SXM, default timing — \d+\.\d s$/);
  });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("help: every metric has a keyboard-reachable tooltip; the glossary explains the confusing fields (1280 and 390)", async () => {
  const page = await open();
  await runWith(page, twoWorkers);
  await atEach(page, async (vp) => {
    // every KPI card and table row has a help button whose tooltip has text
    const missing = await page.evaluate(() => {
      const bad = [];
      const scopes = [...document.querySelectorAll('[data-testid^="kpi-"]'),
        ...document.querySelectorAll('[data-testid="aiperf-table"] tbody tr, [data-testid="aiperf-lines"] tbody tr, [data-testid="summary"] tbody tr, [data-testid="simulator-speed"] tbody tr')];
      for (const el of scopes) {
        const b = el.querySelector("button.help");
        const tip = b && document.getElementById(b.getAttribute("aria-describedby"));
        if (!b || !tip || tip.getAttribute("role") !== "tooltip" || tip.textContent.trim().length < 10) bad.push(el.innerText.slice(0, 40));
      }
      return { bad, n: scopes.length };
    });
    assert.deepEqual(missing.bad, []);
    assert.ok(missing.n > 80, `${missing.n} metrics`);

    // keyboard: Tab from the Download button reaches a help button; its tooltip shows
    await tid(page, "download-report").focus();
    let id = "";
    for (let i = 0; i < 10 && !id; i++) {
      await page.keyboard.press("Tab");
      id = await page.evaluate(() => document.activeElement.classList.contains("help") ? document.activeElement.getAttribute("aria-describedby") : "");
    }
    assert.ok(id, "Tab reaches a metric's help");
    const tip = page.locator(`#${id}`);
    assert.equal(await tip.isVisible(), true, "the tooltip shows on focus");
    assert.ok((await tip.innerText()).length > 10);
    const box = await tip.boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= vp.width + 0.5, `tooltip inside the viewport: ${JSON.stringify(box)}`);
    await noSideways(page);
    await shot(page, "tooltip");
    await page.keyboard.press("Tab");
    assert.equal(await tip.isVisible(), false, "and hides when focus moves on");

    // the glossary, linked from the results
    assert.equal(await page.locator('.results a[href="#glossary"]').count(), 1);
    const glossary = await tid(page, "glossary").innerText();
    for (const term of ["TTFT", "TTST", "ITL", "Goodput", "Trace block_size", "KV block_size", "Capacity", "Chunked prefill", "First-admission reuse", "Simulated vs wall time"]) {
      assert.match(glossary, new RegExp(`(^|\\n)${term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s`), term);
    }
    await page.locator('.results a[href="#glossary"]').click();
    await page.waitForFunction(() => location.hash === "#glossary");
    await shot(page, "glossary");
  });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("phones: at 390 px every table reflows into cards, values beside their names, plots fit, no sideways scroll", async () => {
  const page = await open({ width: 390, height: 844 });
  await runWith(page, twoWorkers);
  await runWith(page, twoWorkers.replace("replicas: 2", "replicas: 4"));
  await page.waitForTimeout(500); // charts redraw after a debounced resize
  await noSideways(page);
  // every cell of every results table lies inside the viewport, below or beside its row's name
  const bad = await page.evaluate(() => {
    const out = [];
    for (const tr of document.querySelectorAll(".results table:not(.u-legend) tbody tr, table.reqtable tbody tr")) { // (a plot's legend scrolls on its own)
      const th = tr.querySelector("th") || tr.querySelector("td");
      const top = th.getBoundingClientRect().top;
      for (const td of tr.querySelectorAll("td")) {
        const r = td.getBoundingClientRect();
        if (r.right > window.innerWidth + 0.5 || r.left < 0 || r.top < top - 0.5) out.push(tr.innerText.slice(0, 60));
        // each value is labeled (the column name beside it)
        if (!td.dataset.label) out.push("unlabeled " + tr.innerText.slice(0, 40));
      }
    }
    return out;
  });
  assert.deepEqual(bad, []);
  const canvases = await page.evaluate(() => [...document.querySelectorAll("#charts canvas")].map((c) => c.getBoundingClientRect().right));
  assert.ok(canvases.length > 0 && canvases.every((r) => r <= 390.5), `plots fit: ${canvases}`);
  await shot(page, "phone-results");
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});
