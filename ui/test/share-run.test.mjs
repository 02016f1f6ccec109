// Issue 32 item 9: a run on the shared service is shared as the rendered
// page, <page>/?run=<id>, not raw JSON. A real local workerd (as
// service.test.mjs starts it) serves the Worker, `dynosim serve
// --service-url` the page. A service run's share link is the page with
// ?run=<id>; opening it in a fresh page shows the stored run as a local
// run's results (KPIs, plots, tables) with "Run <id> on <host>" and the
// config it ran with in the editor; an unknown id and a service that is
// down are errors in the error box, and the page still runs locally.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { freePort, startWorkerd } from "../../wasm/worker/test/workerd.mjs";
import { startServer, launch, openPage, artifacts, repo, ACTION_MS } from "./helpers.mjs";

const dir = mkdtempSync(path.join(tmpdir(), "dynosim-share-run-"));
const synthetic = gunzipSync(readFileSync(path.join(repo, "public/traces/synthetic_trace.jsonl.gz"))).toString();
writeFileSync(path.join(dir, "small.jsonl"), synthetic.split("\n").slice(0, 200).join("\n") + "\n");
const config = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8").replace("replicas: 8", "replicas: 4");

let mf, service, site, down, browser;

const tid = (page, id) => page.locator(`[data-testid="${id}"]`);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + ".png"), fullPage: true });
const kpiText = async (page) => (await tid(page, "kpis").innerText()).replace(/\s+/g, " ");

before(async () => {
  ({ url: service, mf } = await startWorkerd(path.join(dir, "kv")));
  site = await startServer(["--service-url", service]);
  down = await startServer(["--service-url", `http://127.0.0.1:${await freePort()}`]);
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (down) await down.stop();
  if (site) await site.stop();
  if (mf) await mf.dispose();
  rmSync(dir, { recursive: true, force: true });
});

test("a service run's share link opens the rendered run", async () => {
  const page = await openPage(browser.context, site.url);
  await tid(page, "trace-input").setInputFiles(path.join(dir, "small.jsonl"));
  await tid(page, "config-editor").fill(config);
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });
  await tid(page, "run-on-service").check();
  await tid(page, "run").click();
  const link = tid(page, "run-page-link");
  await link.waitFor({ timeout: ACTION_MS });
  const href = await link.getAttribute("href");
  const id = (await tid(page, "run-link").getAttribute("href")).split("/").pop();
  assert.match(id, /^[0-9a-f]{32}$/);
  assert.equal(href, `${site.url}?run=${id}`, "the share link is the page with ?run=<id>");
  const kpis = await kpiText(page);
  assert.match(kpis, /\d/);
  await page.close();

  // a fresh page (another reader) opens the link
  const reader = await openPage(browser.context, href);
  await reader.waitForFunction(() => /^Loaded from the shared service/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  assert.equal(await tid(reader, "error").count(), 0);
  assert.equal(await kpiText(reader), kpis, "the KPIs of the run it shares");
  const host = new URL(service).host;
  assert.equal(await tid(reader, "shared-run-note").innerText(), `Run ${id} on ${host}: config.yaml (in the editor) on small.jsonl.`);
  assert.equal(await tid(reader, "config-editor").inputValue(), config);
  assert.equal(await tid(reader, "stale").count(), 0, "the loaded run answers the editor's config");
  await reader.waitForFunction(() => window.dynosimCharts.count >= 5, null, { timeout: ACTION_MS });
  assert.ok(await tid(reader, "verdict").count() + await tid(reader, "summary").count() > 0, "the result tables");
  assert.equal(await tid(reader, "run-page-link").getAttribute("href"), href);
  await shot(reader, "share-run-1280");
  assert.deepEqual(reader.pageErrors, []);
  // the page stays a page: a local run replaces the loaded one
  await reader.locator('[data-testid="sample-select"]').selectOption("synthetic");
  await tid(reader, "run").click();
  await reader.waitForFunction(() => /^Done/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  assert.equal(await tid(reader, "shared-run-note").count(), 0);
  await reader.close();
});

test("an unknown run id or a service that is down is an error; the page stays usable", async () => {
  const unknown = "0".repeat(32);
  for (const [base, want] of [[site.url, new RegExp(`unknown run id ${unknown}`)], [down.url, /could not reach the shared service at 127\.0\.0\.1:\d+/]]) {
    const page = await openPage(browser.context, `${base}?run=${unknown}`);
    await tid(page, "error").waitFor({ timeout: ACTION_MS });
    assert.match(await tid(page, "error").innerText(), want);
    assert.match(await page.locator(".status").innerText(), /Could not load run/);
    assert.equal(await tid(page, "kpis").count(), 0);
    // a local run still works
    await tid(page, "run").click();
    await page.waitForFunction(() => /^Done/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
    assert.equal(await tid(page, "error").count(), 0);
    await tid(page, "kpis").waitFor();
    assert.deepEqual(page.pageErrors, []);
    await page.close();
  }
});
