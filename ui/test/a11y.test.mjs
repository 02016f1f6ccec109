// Accessibility check of the page after a run (and after a compared second
// run) with axe-core, at 1280×800 and 390×844: no violation of impact
// serious or critical. Screenshots test-artifacts/a11y-<width>.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { startServer, openPage, patient, artifacts, repo, ACTION_MS } from "./helpers.mjs";

let srv, browser;
const axePath = path.join(repo, "node_modules/axe-core/axe.min.js");

// The page's CSP allows no inline script, which is how addScriptTag injects
// axe: this context bypasses the CSP (page.test.mjs checks the page under it).
before(async () => {
  srv = await startServer();
  const userDataDir = mkdtempSync(path.join(tmpdir(), "dynosim-a11y-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, bypassCSP: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 800 },
  });
  patient(context);
  browser = { context, close: async () => { await context.close(); rmSync(userDataDir, { recursive: true, force: true }); } };
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

// serious lists the serious and critical axe violations on the page.
async function serious(page) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.addScriptTag({ path: axePath });
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => n.target.join(" ") + ": " + n.failureSummary.split("\n").slice(0, 2).join(" ")) }));
  });
  return res.filter((v) => v.impact === "serious" || v.impact === "critical");
}

async function run(page) {
  const n = await page.evaluate(() => document.querySelectorAll('[data-testid="runs"] li').length);
  await page.locator('[data-testid="run"]').click();
  await page.waitForFunction((n) => /^Done/.test(document.querySelector(".status").textContent) &&
    document.querySelectorAll('[data-testid="runs"] li').length !== n, n, { timeout: ACTION_MS });
  await page.waitForFunction(() => document.querySelectorAll("#charts canvas").length > 0, null, { timeout: ACTION_MS });
}

for (const vp of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
  test(`axe-core: no serious or critical violations after a run (${vp.width})`, async () => {
    const page = await openPage(browser.context, srv.url);
    await page.setViewportSize(vp);
    assert.deepEqual(await serious(page), [], "before a run");
    await run(page);
    assert.deepEqual(await serious(page), [], "after a run");
    // a second run: the compare view (runs list, baseline select, change columns)
    await page.locator('[data-testid="preset-select"]').selectOption("1-worker");
    await run(page);
    // with a tooltip open
    await page.locator('[data-testid="kpi-ttft"] button.help').focus();
    assert.deepEqual(await serious(page), [], "compare view");
    await page.screenshot({ path: path.join(artifacts, `a11y-${vp.width}.png`), fullPage: true });
    assert.deepEqual(page.pageErrors, []);
    await page.close();
  });
}

// The explanations: a request's life (its list, lane chart and opened
// passes), its TTFT bar and a real run's overlay.
test("axe-core: no serious or critical violations with a request explained and a real run loaded", async () => {
  const page = await openPage(browser.context, srv.url);
  await run(page);
  await page.locator('[data-testid="requests"] tbody tr').nth(1).click();
  await page.waitForFunction(() => window.dynosimExplain.describe().timeline?.drawn, null, { timeout: ACTION_MS });
  const fold = page.locator('[data-testid="request-timeline"] li[data-event="passes"] button').first();
  if (await fold.count()) await fold.click();
  const fixtures = path.join(repo, "core/measured/testdata/aiperf-run1");
  if (existsSync(fixtures)) {
    await page.locator('[data-testid="real-input"]').setInputFiles(["profile_export_aiperf.json", "profile_export.jsonl"].map((n) => path.join(fixtures, n)));
    await page.locator('[data-testid="real-overlay"]').waitFor({ timeout: ACTION_MS });
    await page.locator(".realmore summary").click();
  }
  assert.deepEqual(await serious(page), [], "explained");
  await page.screenshot({ path: path.join(artifacts, "a11y-explain.png"), fullPage: true });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

// The planner panel: its plots (one with a decision's tip shown), the
// summary line and the opened decisions table, at both sizes.
for (const vp of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
  test(`axe-core: no serious or critical violations with the planner panel (${vp.width})`, async () => {
    const page = await openPage(browser.context, srv.url);
    await page.setViewportSize(vp);
    await page.locator('[data-testid="preset-select"]').selectOption("planner-hybrid");
    await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
    await run(page);
    await page.waitForFunction(() => window.dynosimPlanner.describe()?.drawn, null, { timeout: ACTION_MS });
    const fold = page.locator('[data-testid="planner-timeline"] details.plannerdecisions summary');
    if (await fold.count()) await fold.click();
    await page.locator('[data-testid="planner-plot-workers"]').scrollIntoViewIfNeeded();
    const m = await page.evaluate(() => window.dynosimPlanner.describe().plots[0].markers[0]);
    if (m) {
      await page.mouse.move(m.x, m.y);
      await page.locator('[data-testid="planner-tip"]').waitFor({ state: "visible" });
    }
    assert.deepEqual(await serious(page), [], "planner panel");
    assert.deepEqual(page.pageErrors, []);
    await page.close();
  });
}
