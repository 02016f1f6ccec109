// Browser tests of "Run on the shared service" (run by `make test-browser`,
// which builds the Worker first): a real local workerd serving build/worker/
// through Miniflare's API (as wasm/worker/test/worker.test.mjs does), the
// page served by `dynosim serve --service-url <workerd>`, headless Debian
// Chromium. The report the page shows must equal the CLI's --format json.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { freePort, startWorkerd } from "../../wasm/worker/test/workerd.mjs";
import { startServer, launch, openPage, artifacts, bin, repo, stripWallText, ACTION_MS, openDetails } from "./helpers.mjs";


const dir = mkdtempSync(path.join(tmpdir(), "dynosim-service-"));
const synthetic = gunzipSync(readFileSync(path.join(repo, "public/traces/synthetic_trace.jsonl.gz"))).toString();
const smallTrace = synthetic.split("\n").slice(0, 300).join("\n") + "\n";
writeFileSync(path.join(dir, "small.jsonl"), smallTrace);
writeFileSync(path.join(dir, "garbage.jsonl"), "this is not a trace\n\x00\x01\x02");
const defaultYAML = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8");
const twoWorkers = defaultYAML.replace("replicas: 8", "replicas: 2");
writeFileSync(path.join(dir, "config.yaml"), twoWorkers);

let mf, service, plain, withService, browser;


function cli(args) {
  const r = spawnSync(bin, args, { cwd: dir, encoding: "utf8", maxBuffer: 256 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const cliError = (r) => r.stderr.split("\n")[0].replace(/^dynosim: /, "");

// servicePOST sends inputs straight to the Worker (what the page should do).
async function servicePOST(config, traceName) {
  const form = new FormData();
  form.append("config", config);
  form.append("trace", new Blob([readFileSync(path.join(dir, traceName))]), traceName);
  const r = await fetch(service + "/v1/predict", { method: "POST", body: form });
  return { status: r.status, body: await r.text() };
}

const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + ".png"), fullPage: true });
const tid = (page, id) => page.locator(`[data-testid="${id}"]`);

before(async () => {
  ({ url: service, mf } = await startWorkerd(path.join(dir, "kv")));
  plain = await startServer();
  withService = await startServer(["--service-url", service + "/"]);
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (withService) await withService.stop();
  if (plain) await plain.stop();
  if (mf) await mf.dispose();
  rmSync(dir, { recursive: true, force: true });
});

test("without a configured service URL there is no service option", async () => {
  const page = await openPage(browser.context, plain.url);
  assert.equal(await tid(page, "run-on-service").count(), 0);
  assert.equal(await page.evaluate(() => window.dynosim.serviceURL), "");
  assert.match(await page.locator("header").innerText(), /your files never leave this page/);
  // config.js sets nothing
  const js = await (await fetch(plain.url + "config.js")).text();
  assert.doesNotMatch(js, /^\s*window\.DYNOSIM_SERVICE_URL/m);
  // ?service=<not http(s)> is ignored
  await page.goto(plain.url + "?service=" + encodeURIComponent("javascript:alert(1)"));
  await page.waitForFunction(() => document.documentElement.dataset.interactive === "1", null, { timeout: ACTION_MS });
  assert.equal(await tid(page, "run-on-service").count(), 0);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("run on the shared service: same report as the CLI, a working run link", async () => {
  const native = cli(["predict", "-c", "config.yaml", "--trace", "small.jsonl", "--format", "json"]);
  assert.equal(native.status, 0, native.stderr);

  const page = await openPage(browser.context, withService.url);
  const toService = [];
  page.on("request", (r) => { if (r.url().startsWith(service)) toService.push(r.method() + " " + r.url()); });
  assert.equal(await page.evaluate(() => window.dynosim.serviceURL), service);
  const toggle = tid(page, "run-on-service");
  assert.equal(await toggle.count(), 1);
  assert.equal(await toggle.isChecked(), false, "off until the user ticks it");
  assert.equal(await page.locator('label[for="run-on-service"]').innerText(), "Run on the shared service");
  const note = await tid(page, "service-note").innerText();
  assert.match(note, new RegExp(new URL(service).host.replace(/\./g, "\\.")));
  assert.match(note, /uploaded/);

  await tid(page, "trace-input").setInputFiles(path.join(dir, "small.jsonl"));
  await tid(page, "config-editor").fill(twoWorkers);
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");

  // unticked: a local run, nothing goes to the service
  await tid(page, "run").click();
  await openDetails(page);
  assert.deepEqual(toService, [], "an unticked run sent something to the service");
  assert.equal(await tid(page, "run-link").count(), 0);

  // keyboard: Tab from Run reaches the toggle (Cancel is disabled), Space ticks it
  await tid(page, "run").focus();
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), "run-on-service");
  await page.keyboard.press("Space");
  assert.equal(await toggle.isChecked(), true);

  await tid(page, "run").click();
  const link = tid(page, "run-link");
  await link.waitFor({ timeout: ACTION_MS });
  assert.equal(toService.filter((r) => r.startsWith("POST " + service + "/v1/predict")).length, 1);
  const s = await tid(page, "summary").innerText();
  assert.match(s, /completed_requests\s+300/);
  assert.equal(await tid(page, "error").count(), 0);
  assert.equal(await tid(page, "progress").getAttribute("aria-valuenow"), "100");
  await page.waitForFunction(() => window.dynosimCharts.count >= 5);
  await shot(page, "11-service-run");

  // the report the page holds (its download) is the CLI's, wall-clock fields aside
  const [dl] = await Promise.all([page.waitForEvent("download"), tid(page, "download-report").click()]);
  const shown = readFileSync(await dl.path(), "utf8");
  assert.equal(stripWallText(shown), stripWallText(native.stdout), "service report differs from the CLI's");

  // the run link: GET /v1/runs/{id} on the service answers the same report
  const href = await link.getAttribute("href");
  assert.match(href, new RegExp("^" + service.replace(/[.]/g, "\\.") + "/v1/runs/[0-9a-f]{32}$"));
  assert.equal(await link.innerText(), href);
  const got = await fetch(href);
  assert.equal(got.status, 200);
  assert.equal(await got.text(), shown);

  // a bad config: the service's 400 error text is shown
  await tid(page, "config-editor").fill("engine: {workerz: 3}\n");
  const direct = await servicePOST("engine: {workerz: 3}\n", "small.jsonl");
  assert.equal(direct.status, 400);
  const svcErr = JSON.parse(direct.body).error;
  await tid(page, "run").click();
  await page.waitForFunction(() => /Failed/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  assert.equal(await tid(page, "error").innerText(), svcErr);
  assert.match(svcErr, /workerz/);

  // a garbage trace (the local validator cannot see it): the service's error, equal to the CLI's
  await tid(page, "config-editor").fill(twoWorkers);
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
  await tid(page, "trace-input").setInputFiles(path.join(dir, "garbage.jsonl"));
  await tid(page, "run").click();
  await page.waitForFunction(() => document.querySelector('[data-testid="error"]'), null, { timeout: ACTION_MS });
  const garbage = await servicePOST(twoWorkers, "garbage.jsonl");
  assert.equal(garbage.status, 400);
  assert.equal(await tid(page, "error").innerText(), JSON.parse(garbage.body).error);
  assert.equal(await tid(page, "error").innerText(), cliError(cli(["predict", "-c", "config.yaml", "--trace", "garbage.jsonl", "--format", "json"])));
  await shot(page, "12-service-error");

  // and the page keeps working
  await tid(page, "trace-input").setInputFiles(path.join(dir, "small.jsonl"));
  await tid(page, "run").click();
  await page.waitForFunction(() => !document.querySelector('[data-testid="error"]') && /Done/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("cancel aborts the service request; an unreachable service is a clear error", async () => {
  const page = await openPage(browser.context, withService.url);
  await tid(page, "trace-input").setInputFiles(path.join(dir, "small.jsonl"));
  await tid(page, "config-editor").fill(twoWorkers);
  // hold the POST so the run is still pending when Cancel is pressed
  let held;
  const gotIt = new Promise((r) => (held = r));
  await page.route(service + "/v1/predict", (route) => held(route));
  await tid(page, "run-on-service").check();
  await tid(page, "run").click();
  const route = await gotIt;
  assert.match(await page.locator(".status").innerText(), /shared service/);
  await tid(page, "cancel").click();
  await page.waitForFunction(() => /Canceled/.test(document.querySelector(".status").textContent));
  assert.equal(await tid(page, "error").count(), 0);
  assert.equal(await tid(page, "run").isEnabled(), true);
  await route.abort().catch(() => {}); // already aborted by the page
  await page.unroute(service + "/v1/predict");
  // the API: cancel() rejects a pending runRemote with "canceled"
  await page.route(service + "/v1/predict", () => {});
  const msg = await page.evaluate(async () => {
    const p = window.dynosim.runRemote({ config: "{}", trace: "x", traceName: "x.jsonl" });
    await new Promise((r) => setTimeout(r, 300));
    window.dynosim.cancel();
    try { await p; return "resolved"; } catch (e) { return e.message; }
  });
  assert.equal(msg, "canceled");
  await page.unroute(service + "/v1/predict");
  await page.close();

  // a service nobody answers at (given with ?service=)
  const dead = "http://127.0.0.1:" + await freePort();
  const p2 = await openPage(browser.context, plain.url + "?service=" + encodeURIComponent(dead));
  await tid(p2, "trace-input").setInputFiles(path.join(dir, "small.jsonl"));
  await tid(p2, "config-editor").fill(twoWorkers);
  await tid(p2, "run-on-service").check();
  await tid(p2, "run").click();
  await tid(p2, "error").waitFor({ timeout: ACTION_MS });
  assert.match(await tid(p2, "error").innerText(), new RegExp("^could not reach the shared service at " + new URL(dead).host.replace(/\./g, "\\.")));
  await shot(p2, "13-service-unreachable");
  // untick: the local run works
  await tid(p2, "run-on-service").uncheck();
  await tid(p2, "run").click();
  await p2.waitForFunction(() => !document.querySelector('[data-testid="error"]') && /Done/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  await openDetails(p2);
  assert.match(await tid(p2, "summary").innerText(), /completed_requests\s+300/);
  assert.deepEqual(p2.pageErrors, []);
  await p2.close();
});

test("embed.js passes data-service on to the embedded page", async () => {
  const host = await browser.context.newPage();
  const hostURL = plain.url + "embed-service-test.html"; // same origin: no private-network checks
  await host.route(hostURL, (r) => r.fulfill({
    contentType: "text/html",
    body: `<!doctype html><div data-dynosim data-trace="sample:synthetic" data-service="${service}"></div>` +
      `<div data-dynosim data-trace="sample:synthetic"></div><script src="${plain.url}embed.js"></script>`,
  }));
  await host.goto(hostURL);
  await host.waitForFunction(() => document.querySelectorAll("iframe").length === 2);
  const [withSvc, without] = await Promise.all((await host.$$("iframe")).map((f) => f.contentFrame()));
  for (const f of [withSvc, without]) {
    await f.waitForFunction(() => document.documentElement.dataset.interactive === "1", null, { timeout: ACTION_MS });
  }
  assert.equal(await withSvc.locator('[data-testid="run-on-service"]').count(), 1);
  assert.equal(await withSvc.locator('[data-testid="run-on-service"]').isChecked(), false);
  assert.equal(await without.locator('[data-testid="run-on-service"]').count(), 0);
  await host.close();
});

// The run link comes from the service's Location header: a hostile service
// must not get a javascript: (or off-origin) URL turned into a link.
test("a Location that is not an http(s) URL on the service's origin gives no run link", async () => {
  const page = await openPage(browser.context, withService.url);
  let location = "javascript:alert(1)";
  // a fake service: the real Worker's report (Playwright cannot forward the
  // page's multipart body) with a hostile Location
  const real = await servicePOST(twoWorkers, "small.jsonl");
  assert.equal(real.status, 200, real.body);
  await page.route(service + "/v1/predict", async (route) => {
    await route.fulfill({
      status: 200, body: real.body,
      headers: {
        "content-type": "application/json", location, "access-control-allow-origin": "*",
        "access-control-expose-headers": "Location, X-Dynosim-Run-Id, X-Dynosim-Cache",
      },
    });
  });
  await tid(page, "trace-input").setInputFiles(path.join(dir, "small.jsonl"));
  await tid(page, "config-editor").fill(twoWorkers);
  await tid(page, "run-on-service").check();
  await tid(page, "run").click();
  await page.waitForFunction(() => /Done|Failed/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
  assert.equal(await tid(page, "error").count(), 0, await page.locator("body").innerText());
  await openDetails(page);
  assert.equal(await tid(page, "run-link").count(), 0);
  assert.equal(await page.locator('a[href^="javascript:" i]').count(), 0);
  // the API: runURL is "" for each hostile Location, the link for a good one
  const got = {};
  for (const loc of ["javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,x", "https://evil.example/v1/runs/x",
    "//evil.example/v1/runs/x", "/v1/runs/ok"]) {
    location = loc;
    got[loc] = await page.evaluate(async ([config, trace]) => (await window.dynosim.runRemote({ config, trace, traceName: "small.jsonl" })
      .catch((e) => ({ runURL: "rejected: " + e.message }))).runURL, [twoWorkers, smallTrace]);
  }
  assert.deepEqual(got, {
    "javascript:alert(1)": "", "JAVASCRIPT:alert(1)": "", "data:text/html,x": "", "https://evil.example/v1/runs/x": "",
    "//evil.example/v1/runs/x": "", "/v1/runs/ok": service + "/v1/runs/ok",
  });
  assert.deepEqual(page.pageErrors, []);
  await page.unroute(service + "/v1/predict");
  await page.close();
});

// With "Run on the shared service" ticked, a recommend search sends every
// trial to the Worker's /v1/predict (the search itself stays on the page)
// and writes the ledger the page's own worker pool writes.
test("recommend on the shared service: every trial a POST, the local ledger", async () => {
  const page = await openPage(browser.context, withService.url);
  const ledger = async () => {
    await page.getByTestId("rec-preset-select").selectOption("replicas-router");
    await page.getByTestId("rec-run").click();
    await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid="rec-status"]').textContent), null, { timeout: ACTION_MS });
    return page.evaluate(() => window.dynosimRecommendView.result.json);
  };
  const local = await ledger();
  let posts = 0;
  page.on("request", (r) => { if (r.method() === "POST" && r.url().startsWith(service + "/v1/predict")) posts++; });
  await tid(page, "run-on-service").check();
  const remote = await ledger();
  assert.equal(posts, JSON.parse(remote).counts.evaluated - 2, "one POST per trial that runs (the two over the GPU budget never run)");
  assert.equal(remote, local, "the shared service's ledger differs from the local one");
  await page.close();
});
