// Browser tests of the KV tiers section (ui/tiers.go, public/tiers.js): a
// run whose pool has KVBM lower tiers (G2 host, G3 disk) on the page's
// default trace shows the "KV tiers" section with its summary line, its
// table (every tier's and link's numbers the report's), an occupancy and a
// utilisation plot; its kv_tiers equal the CLI's on the same trace; axe
// finds nothing serious in it; nothing scrolls sideways at 390 px; a run
// without tiers (the default) has no section. Screenshots go to
// test-artifacts/tiers-*.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { startServer, launch, openPage, patient, runConfigured, artifacts, bin, repo, ACTION_MS } from "./helpers.mjs";

// Two workers with a small G1 (3,000 blocks of 64 tokens), a G2 of 600
// blocks per worker and a shared G3: the 1,000-request sample offloads
// through both tiers and onboards from both (about 0.3 s natively).
const TIERS_YAML = `engine:
  workers:
    aggregated:
      parallelism: {replicas: 2}
      kv_cache: {g1_backend: kvbm, block_size: 64, capacity: {blocks: 3000}, tiers: {g2: {blocks: 600}, g3: {blocks: 20000}}}
`;

let srv, browser, tmp;
const tid = (page, id) => page.locator(`[data-testid="${id}"]`);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, "tiers-" + name + ".png"), fullPage: true });
const describe = (page) => page.evaluate(() => window.dynosimTiers.describe());
const report = (page) => page.evaluate(() => window.dynosimCharts.runs[0].report);

before(async () => {
  srv = await startServer();
  browser = await launch();
  tmp = mkdtempSync(path.join(tmpdir(), "dynosim-tiers-"));
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// runYAML puts yaml in the editor, runs it and waits for this run's results.
async function runYAML(page, yaml) {
  await tid(page, "config-editor").fill(yaml);
  await runConfigured(page);
}

// waitPlots waits until the tier plots are drawn in the page.
async function waitPlots(page) {
  await tid(page, "kv-tiers").waitFor();
  await page.waitForFunction(() => window.dynosimTiers.describe()?.drawn, null, { timeout: ACTION_MS });
  return describe(page);
}

// cli runs `dynosim predict` on the CLI's embedded sample (the page's
// default trace, byte for byte) with the config in yaml.
function cli(yaml) {
  const file = path.join(tmp, "tiers.yaml");
  writeFileSync(file, yaml);
  const r = spawnSync(bin, ["predict", "-c", file, "--trace", path.join(repo, "cmd/dynosim/sample.jsonl"), "--format", "json"],
    { encoding: "utf8", maxBuffer: 64 << 20, timeout: ACTION_MS });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

// format is metrics.Format: whole numbers without decimals, else two; thousands separated
const format = (v) => (Number.isInteger(v) ? v.toLocaleString("en-US") : v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2, useGrouping: true }));
const pct = (u) => (100 * u > 0 && 100 * u < 0.1 ? "<0.1 %" : (100 * u).toFixed(1) + " %");
const find = (d, id) => { const p = d.plots.find((x) => x.id === id); assert.ok(p, "plot " + id + " in " + d.plots.map((x) => x.id)); return p; };

// rowCells reads a table row's cells: {key: {text, value}}.
const rowCells = (row) => row.evaluate((tr) => Object.fromEntries([...tr.querySelectorAll("td")].map((td) =>
  [td.dataset.key, { text: td.textContent, value: td.dataset.value, label: td.dataset.label, headers: td.getAttribute("headers") }])));

// noSideways checks the page and the section's plots and table fit a 390 px phone.
async function noSideways(page) {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(400); // the plots redraw 150 ms after a resize
  await page.waitForFunction(() => window.dynosimTiers.describe()?.drawn);
  const { sw, widths } = await page.evaluate(() => ({
    sw: document.documentElement.scrollWidth,
    widths: [...document.querySelectorAll('[data-testid="kv-tiers"] canvas, [data-testid="kv-tiers"] figure, [data-testid="kv-tiers"] table')]
      .map((e) => e.getBoundingClientRect().right),
  }));
  assert.ok(sw <= 391, `page is ${sw}px wide at 390px`);
  assert.ok(widths.length > 0 && widths.every((r) => r <= 390.5), `tier plots and table fit: ${widths}`);
}

test("a config with G2 and G3: the KV tiers section, its table the report's, both plots; the CLI's kv_tiers", async () => {
  const page = await openPage(browser.context, srv.url);
  assert.equal(await tid(page, "trace-label").innerText(), "Trace: sample: conversation, first 1,000 requests");
  await runYAML(page, TIERS_YAML);
  let d = await waitPlots(page);
  const rep = await report(page);
  assert.equal(rep.summary.num_requests, 1000, "the default sample ran");
  assert.equal(rep.kv_tiers.length, 1);
  const t = rep.kv_tiers[0];

  // the page's kv_tiers are the CLI's on the same trace
  const native = cli(TIERS_YAML);
  assert.deepEqual(rep.kv_tiers, native.kv_tiers, "the page's kv_tiers are the CLI's");

  // the run really used both tiers, both ways
  const tier = Object.fromEntries(t.tiers.map((x) => [x.tier, x]));
  const link = Object.fromEntries(t.links.map((x) => [x.link, x]));
  assert.deepEqual(Object.keys(tier), ["g2", "g3"]);
  assert.deepEqual(Object.keys(link), ["g1_to_g2", "g2_to_g1", "g2_to_g3", "g3_to_g2"]);
  assert.ok(tier.g2.offloaded_blocks > 0 && tier.g3.offloaded_blocks > 0, "offloads into G2 and G3");
  assert.ok(tier.g2.hit_blocks > 0 && tier.g3.hit_blocks > 0 && tier.g3.onboarded_blocks > 0, "onboards from G2 and G3");
  assert.ok(link.g2_to_g1.transfers > 0 && link.g3_to_g2.transfers > 0, "transfers towards G1");

  // the section: its heading, one pool (no pool heading), its summary line
  const sec = tid(page, "kv-tiers");
  assert.equal(await sec.locator("h3").innerText(), "KV tiers");
  assert.equal(await sec.getAttribute("aria-labelledby"), "kv-tiers-title");
  assert.equal(await sec.locator("h4").count(), 0);
  const sum = await tid(page, "kv-tiers-summary").innerText();
  assert.ok(sum.startsWith(`G2 served ${format(tier.g2.hit_blocks)} blocks of prefix, G3 ${format(tier.g3.hit_blocks)}; `), sum);
  assert.ok(sum.includes(`the G1→G2 links were busy ${pct(link.g1_to_g2.utilization)} of the run on average`), sum);

  // the table: a row per tier and per link, each number the report's
  const table = tid(page, "kv-tiers-table");
  assert.equal(await table.locator("caption").count(), 1);
  assert.deepEqual(await table.locator("thead th").allInnerTexts(),
    ["Tier", "Scope", "Capacity (blocks)", "Peak (blocks)", "Hits (blocks)", "Onboarded (blocks)", "Offloaded (blocks)", "Evicted (blocks)"]);
  assert.deepEqual(await table.locator("tr.kvlinkhead th").allInnerTexts(),
    ["Link", "Instances", "Bandwidth", "Transfers", "Blocks", "Bytes", "Busy", "Utilisation"]);
  assert.deepEqual(await table.locator('tr[data-kind="tier"]').evaluateAll((trs) => trs.map((tr) => tr.dataset.tier)), ["g2", "g3"]);
  assert.deepEqual(await table.locator('tr[data-kind="link"] th[scope="row"]').allInnerTexts(), Object.keys(link));
  for (const x of t.tiers) {
    const c = await rowCells(table.locator(`tr[data-tier="${x.tier}"]`));
    for (const k of ["peak_blocks", "hit_blocks", "onboarded_blocks", "offloaded_blocks", "evicted_blocks"]) {
      assert.equal(c[k].text, format(x[k]), `${x.tier} ${k}`);
      assert.equal(Number(c[k].text.replace(/,/g, "")), x[k], `${x.tier} ${k} reads as the report's`);
      assert.equal(Number(c[k].value), x[k], `${x.tier} ${k} data-value`);
    }
    assert.equal(c.capacity_blocks.text, format(x.capacity_blocks) + (x.tier === "g2" ? " per worker" : ""));
    assert.equal(c.scope.text, x.scope === "worker" ? "per worker" : "shared");
    assert.equal(c.hit_blocks.label, "Hits (blocks)", "phone cards name the column");
    assert.match(c.hit_blocks.headers, /^kvt-0-g\d kvt-0-t4$/, "the cell names its row and column headers");
  }
  for (const x of t.links) {
    const c = await rowCells(table.locator(`tr[data-link="${x.link}"]`));
    for (const k of ["transfers", "blocks"]) assert.equal(c[k].text, format(x[k]), `${x.link} ${k}`);
    assert.equal(c.instances.text, `${x.instances} (${x.scope === "worker" ? "per worker" : "shared"})`);
    assert.equal(c.bandwidth_gb_per_second.text, x.bandwidth_gb_per_second > 0 ? format(x.bandwidth_gb_per_second) + " GB/s" : "instant");
    assert.equal(c.utilization.text, pct(x.utilization), `${x.link} utilisation`);
    assert.equal(Number(c.utilization.value), x.utilization);
    assert.equal(Number(c.bytes.value), x.bytes);
    assert.equal(Number(c.busy_ms.value), x.busy_ms);
    assert.match(c.bytes.text, /^[\d.]+ (TB|GB|MB|kB|B)$/, "bytes in decimal units");
    assert.match(c.busy_ms.text, / ms/);
  }

  // two plots, both drawn, one line per tier and per link over the series
  assert.deepEqual(d.plots.map((p) => p.id), ["occupancy", "utilization"]);
  const occ = find(d, "occupancy"), util = find(d, "utilization");
  assert.ok(occ.canvas && util.canvas, "both plots have a canvas");
  const n = t.series.t_ms.length;
  assert.ok(n > 1, "buckets");
  assert.deepEqual(occ.series.map((s) => [s.label, s.scale, s.points]), [["G2 host (%)", "pct", n], ["G3 disk (%)", "pct", n]]);
  for (const [i, o] of t.series.occupancy.entries()) {
    assert.ok(Math.abs(occ.series[i].max - 100 * Math.max(...o.fraction)) < 1e-9, o.tier + " peak share");
  }
  assert.deepEqual(util.series.map((s) => s.label), ["G1→G2", "G2→G1", "G2→G3", "G3→G2"]);
  for (const [i, u] of t.series.utilization.entries()) {
    assert.equal(util.series[i].points, n);
    assert.ok(Math.abs(util.series[i].max - 100 * Math.max(...u.values)) < 1e-9, u.name + " peak");
  }
  assert.ok(util.series[0].max > 0, "the G1→G2 link was busy");
  assert.ok(occ.x[1] >= rep.summary.duration_ms / 1000 - 1e-9, "the x axis covers the run");
  for (const id of ["kv-tiers-occupancy", "kv-tiers-utilization"]) {
    const fig = sec.locator(`[data-testid="${id}"]`);
    assert.equal(await fig.count(), 1, id + " inside the section");
    assert.match(await fig.getAttribute("aria-label"), /^Line chart of the aggregated pool's/);
    assert.ok(await fig.locator("canvas").first().isVisible(), id + " visible");
  }
  // the legends are keyboard-reachable, as in charts.js
  assert.equal(await sec.locator('.u-legend[tabindex="0"]').count(), 2);

  // charts.js' toggle: the occupancy in blocks
  await tid(page, "kv-tiers-blocks").check();
  d = await describe(page);
  const blocks = find(d, "occupancy");
  assert.ok(blocks.blocks && blocks.canvas);
  assert.deepEqual(blocks.series.map((s) => [s.label, s.scale]), [["G2 host (blocks)", "blocks"], ["G3 disk (blocks)", "blocks"]]);
  t.series.occupancy.forEach((o, i) => assert.equal(blocks.series[i].max, Math.max(...o.blocks), o.tier + " peak blocks"));
  assert.equal(Math.max(...t.series.occupancy[0].blocks), tier.g2.peak_blocks, "the plot's G2 peak is the table's");
  await tid(page, "kv-tiers-blocks").uncheck();
  assert.equal(find(await describe(page), "occupancy").series[0].scale, "pct");
  await tid(page, "kv-tiers").scrollIntoViewIfNeeded();
  await shot(page, "1280");

  await noSideways(page);
  await shot(page, "390");
  await page.setViewportSize({ width: 1280, height: 800 });

  // the page stays usable: the default config's run has no section, the plots are cleared
  await tid(page, "preset-select").selectOption("8-workers"); // the default config
  await runConfigured(page);
  await tid(page, "kpis").waitFor();
  assert.equal(await tid(page, "kv-tiers").count(), 0);
  assert.equal((await report(page)).kv_tiers, undefined);
  await page.waitForFunction(() => window.dynosimTiers.describe() === null);
  // … and removing that run shows the tiered one again, section and plots
  await page.locator('[data-testid="runs"] li.current button', { hasText: "Remove" }).click();
  d = await waitPlots(page);
  assert.deepEqual(d.plots.map((p) => [p.id, p.canvas]), [["occupancy", true], ["utilization", true]]);
  assert.equal(await tid(page, "kv-tiers-table").locator('tr[data-kind="link"]').count(), t.links.length);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("the default run has no KV tiers section", async () => {
  const page = await openPage(browser.context, srv.url);
  await tid(page, "run").click();
  await page.waitForFunction(() => /^Done/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  await tid(page, "kpis").waitFor();
  assert.equal(await tid(page, "kv-tiers").count(), 0);
  assert.equal((await report(page)).kv_tiers, undefined);
  assert.equal(await page.evaluate(() => window.dynosimTiers.describe()), null);
  assert.equal(await page.locator("[data-kv-tiers-charts]").count(), 0);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

// axe-core over the section at both widths (the page's CSP allows no
// inline script, which is how addScriptTag injects axe: this context
// bypasses it, as in a11y.test.mjs).
test("axe-core: no serious or critical violations in the KV tiers section", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "dynosim-tiers-a11y-"));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, bypassCSP: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 800 },
  });
  patient(context);
  try {
    const page = await openPage(context, srv.url);
    await runYAML(page, TIERS_YAML);
    await waitPlots(page);
    await page.addScriptTag({ path: path.join(repo, "node_modules/axe-core/axe.min.js") });
    for (const vp of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
      await page.setViewportSize(vp);
      await page.waitForTimeout(400);
      await page.waitForFunction(() => window.dynosimTiers.describe()?.drawn);
      const bad = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ["violations"] });
        return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
          .map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(" ")) }));
      });
      assert.deepEqual(bad, [], `at ${vp.width} px`);
    }
    assert.deepEqual(page.pageErrors, []);
    await page.close();
  } finally {
    await context.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
