// The page's pool views: the kv_router balance and overlap card, and the
// disaggregated topology with per-pool plots (split from page.test.mjs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, repo, openDetails, ACTION_MS } from "./helpers.mjs";

let srv, browser;
const dir = mkdtempSync(path.join(tmpdir(), "dynosim-pools-"));
const synthetic = gunzipSync(readFileSync(path.join(repo, "public/traces/synthetic_trace.jsonl.gz"))).toString();
writeFileSync(path.join(dir, "small.jsonl"), synthetic.split("\n").slice(0, 300).join("\n") + "\n");
const defaultYAML = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8");
const twoWorkers = defaultYAML.replace("replicas: 8", "replicas: 2");
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + ".png"), fullPage: true });
const text = (page, id) => page.locator(`[data-testid="${id}"]`).innerText();

before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

test("kv_router: the page shows the router's balance and its estimated overlap", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.waitForFunction(() => document.querySelector('[data-testid="trace-label"]').textContent.includes("small.jsonl"));
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers.replace("policy: round_robin", "policy: kv_router"));
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
  await page.locator('[data-testid="run"]').click();
  const balance = page.locator('[data-testid="router-balance"]');
  await openDetails(page);
  await balance.waitFor({ timeout: ACTION_MS });
  const shares = (await page.locator('[data-testid="router-balance"] tbody td:nth-child(3)').allInnerTexts()).map(parseFloat);
  assert.equal(shares.length, 2);
  assert.ok(Math.abs(shares[0] + shares[1] - 100) < 0.2, `shares ${shares}`);
  assert.match(await page.locator('[data-testid="router-overlap"]').innerText(), /estimated overlap [0-9.]+ % of prompt tokens, reuse obtained [0-9.]+ %/);
  await shot(page, "kv-router");
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("disaggregated preset: topology of router, prefill and decode pools, per-pool plots", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.waitForFunction(() => document.querySelector('[data-testid="trace-label"]').textContent.includes("small.jsonl"));
  await page.locator('[data-testid="preset-select"]').selectOption("disaggregated");
  const yaml = await page.locator('[data-testid="config-editor"]').inputValue();
  assert.match(yaml, /mode: disaggregated/);
  assert.doesNotMatch(yaml, /aggregated:/);
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
  await page.locator('[data-testid="run"]').click();
  await openDetails(page);
  assert.match(await text(page, "summary"), /completed_requests\s+300/);
  const topo = page.locator('[data-testid="topology"]');
  await topo.waitFor({ timeout: ACTION_MS });
  for (const id of ["topology-router", "topology-pool-prefill", "topology-link", "topology-pool-decode"]) {
    assert.equal(await page.locator(`[data-testid="topology"] [data-testid="${id}"]`).count(), 1, id);
  }
  assert.equal(await page.locator('[data-testid="topology-pool-aggregated"]').count(), 0);
  // drawn in order: router → prefill → link → decode
  const order = await topo.evaluate((t) => [...t.querySelectorAll("[data-testid]")].map((e) => e.dataset.testid));
  assert.deepEqual(order, ["topology-router", "topology-pool-prefill", "topology-link", "topology-pool-decode"]);
  const prefill = await text(page, "topology-pool-prefill"), decode = await text(page, "topology-pool-decode");
  assert.match(prefill, /Prefill pool/);
  assert.match(prefill, /2 workers × 1 GPU = 2 GPUs/);
  assert.match(prefill, /utilization [0-9.]+ %/);
  assert.match(prefill, /300 requests/);
  assert.match(decode, /Decode pool/);
  assert.match(decode, /2 workers × 1 GPU = 2 GPUs/);
  assert.match(decode, /300 requests/);
  const link = await text(page, "topology-link");
  assert.match(link, /handoff bootstrap, source first/);
  assert.match(link, /50 GB\/s/);
  assert.match(link, /mean [0-9.]+ ms/);
  assert.match(link, /[0-9.]+ GB in 300 handoffs/);
  // the per-worker plots are grouped by pool: workers 0-1 prefill, 2-3 decode
  await page.waitForFunction(() => window.dynosimCharts.count >= 10);
  for (const [pool, heading, workers] of [["prefill", "Prefill pool", ["worker 0", "worker 1"]], ["decode", "Decode pool", ["worker 2", "worker 3"]]]) {
    const group = page.locator(`[data-testid="plots-pool-${pool}"]`);
    assert.equal(await group.count(), 1, pool);
    assert.equal(await group.locator("h3").innerText(), heading);
    assert.equal(await group.locator("canvas").count(), 3, pool + " plots");
    const labels = await group.evaluate((g) => [...new Set([...g.querySelectorAll(".u-legend .u-label")].map((e) => e.textContent))]
      .filter((l) => l.startsWith("worker")).sort());
    assert.deepEqual(labels, workers, pool + " legend");
  }
  await shot(page, "disaggregated");
  // the aggregated default again: one pool box, no link, no pool groups
  await page.locator('[data-testid="preset-select"]').selectOption("8-workers");
  await page.locator('[data-testid="run"]').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="topology-pool-aggregated"]'), null, { timeout: ACTION_MS });
  assert.match(await text(page, "topology-pool-aggregated"), /8 workers × 1 GPU = 8 GPUs/);
  assert.equal(await page.locator('[data-testid="topology-link"]').count(), 0);
  assert.equal(await page.locator('[data-testid="plots-pool-prefill"]').count(), 0);
  // phone-sized viewport: the drawing stacks and the page does not overflow
  await page.locator('[data-testid="preset-select"]').selectOption("disaggregated");
  await page.locator('[data-testid="run"]').click();
  await page.locator('[data-testid="topology-link"]').waitFor({ timeout: ACTION_MS });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(500);
  await shot(page, "disaggregated-mobile");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 391, `page is ${width}px wide at 390px`);
  const boxes = await page.locator('[data-testid="topology"] > [data-testid]').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
  assert.ok(boxes.every((t, i) => i === 0 || t > boxes[i - 1]), `boxes stack: ${boxes}`);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});
