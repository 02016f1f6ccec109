// Browser tests of the web page (run by `make test-browser`): headless
// Debian Chromium via playwright-core against `dynosim serve` on a free
// loopback port. Screenshots go to test-artifacts/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync, readFileSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, bin, repo, stripWall, stripWallText, ACTION_MS, openDetails } from "./helpers.mjs";

let srv, browser;
const dir = mkdtempSync(path.join(tmpdir(), "dynosim-page-"));
const synthetic = gunzipSync(readFileSync(path.join(repo, "public/traces/synthetic_trace.jsonl.gz"))).toString();
const smallTrace = synthetic.split("\n").slice(0, 300).join("\n") + "\n";
writeFileSync(path.join(dir, "small.jsonl"), smallTrace);
writeFileSync(path.join(dir, "garbage.jsonl"), "this is not a trace\n\x00\x01\x02");
writeFileSync(path.join(dir, "bad.npz"), Buffer.from("PK\x03\x04 definitely not a numpy archive"));
const defaultYAML = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8");
const twoWorkers = defaultYAML.replace("replicas: 8", "replicas: 2");

// cli runs the native CLI in dir and returns {status, stdout, stderr}.
function cli(args) {
  const r = spawnSync(bin, args, { cwd: dir, encoding: "utf8", maxBuffer: 256 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

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

test("load, choose a trace, edit the config, run, see the summary", async () => {
  const page = await openPage(browser.context, srv.url);
  await shot(page, "01-loaded");
  for (const id of ["trace-input", "profile-input", "config-editor", "run", "cancel", "progress"]) {
    assert.equal(await page.locator(`[data-testid="${id}"]`).count(), 1, id);
  }
  assert.match(await page.locator('[data-testid="config-editor"]').inputValue(), /replicas: 8/);

  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.waitForFunction(() => document.querySelector('[data-testid="trace-label"]').textContent.includes("small.jsonl"));
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers);
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
  await page.locator('[data-testid="run"]').click();
  const summary = page.locator('[data-testid="summary"]');
  await openDetails(page);
  const s = await summary.innerText();
  assert.match(s, /completed_requests\s+300/);
  assert.match(s, /mean_ttft_ms/);
  // The AIPerf-style table: one row per distribution, avg … std columns,
  // the same numbers as the report.
  const aiperf = await page.locator('[data-testid="aiperf-table"]').innerText();
  assert.match(aiperf, /NVIDIA AIPerf \| LLM Metrics/);
  assert.match(aiperf, /Time to First Token \(ms\)/);
  assert.match(aiperf, /Inter Token Latency \(ms\)/);
  // (core/report/metrics' spec: seven distributions, the CLI's table)
  assert.equal(await page.locator('[data-testid="aiperf-table"] tbody tr').count(), 7);
  assert.match(aiperf, /Output Sequence Length \(tokens\)/);
  assert.equal(await page.locator('[data-testid="progress"]').getAttribute("aria-valuenow"), "100");
  assert.equal(await page.locator('[data-testid="error"]').count(), 0);
  await page.waitForFunction(() => window.dynosimCharts.count >= 5);
  assert.ok(await page.locator('[data-testid="requests"] tbody tr').count() <= 50, "per-request table is paged");
  await shot(page, "02-results");

  // download the report: the same JSON the page received
  const [dl] = await Promise.all([page.waitForEvent("download"), page.locator('[data-testid="download-report"]').click()]);
  const saved = JSON.parse(readFileSync(await dl.path(), "utf8"));
  assert.equal(saved.summary.completed_requests, 300);

  // a second run is compared with the first
  await page.locator('[data-testid="preset-select"]').selectOption("1-worker");
  await page.locator('[data-testid="run"]').click();
  await page.waitForFunction(() => /Previous run/.test(document.querySelector('[data-testid="summary"]')?.innerText || ""), null, { timeout: ACTION_MS });
  await shot(page, "03-compare");

  // sorting the per-request table by TTFT, descending
  const ttftHeader = page.locator('[data-testid="requests"] thead button', { hasText: "ttft_ms" });
  await ttftHeader.click();
  await ttftHeader.click();
  const col = await page.locator('[data-testid="requests"] thead th').allInnerTexts();
  const idx = col.findIndex((c) => c.startsWith("ttft_ms"));
  const vals = (await page.locator(`[data-testid="requests"] tbody tr td:nth-child(${idx + 1})`).allInnerTexts()).map(Number);
  assert.deepEqual(vals, [...vals].sort((a, b) => b - a));

  // phone-sized viewport
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(500); // charts redraw after a debounced resize
  await shot(page, "04-mobile");
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(overflow <= 391, `page is ${overflow}px wide at 390px`);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("drop zone routes files by type; keyboard runs; focus is visible", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.evaluate(({ trace, yaml }) => {
    const zone = document.querySelector("[data-dropzone]");
    const dt = new DataTransfer();
    dt.items.add(new File([trace], "dropped.jsonl"));
    dt.items.add(new File([yaml], "dropped.yaml"));
    zone.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { trace: smallTrace, yaml: twoWorkers + "# dropped\n" });
  await page.waitForFunction(() => document.querySelector('[data-testid="trace-label"]').textContent.includes("dropped.jsonl"));
  await page.waitForFunction(() => document.querySelector('[data-testid="config-editor"]').value.endsWith("# dropped\n"));

  // keyboard only: Tab reaches Run (with a visible focus ring), Enter starts it
  await page.locator('[data-testid="config-editor"]').focus();
  let focused = "";
  for (let i = 0; i < 5 && focused !== "run"; i++) {
    await page.keyboard.press("Tab");
    focused = await page.evaluate(() => document.activeElement.dataset.testid || "");
  }
  assert.equal(focused, "run");
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, "none", "focus is visible");
  await page.keyboard.press("Enter");
  await openDetails(page);
  assert.match(await text(page, "summary"), /completed_requests\s+300/);
  // every form control has a label
  const unlabeled = await page.evaluate(() => [...document.querySelectorAll("input, select, textarea")]
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label")).map((el) => el.id));
  assert.deepEqual(unlabeled, []);
  await page.close();
});

test("window.dynosim.run equals the CLI's --format json", async () => {
  writeFileSync(path.join(dir, "config.yaml"), twoWorkers);
  const trace = synthetic.split("\n").slice(0, 1000).join("\n") + "\n";
  writeFileSync(path.join(dir, "eq.jsonl"), trace);
  const native = cli(["predict", "-c", "config.yaml", "--trace", "eq.jsonl", "--format", "json"]);
  assert.equal(native.status, 0, native.stderr);
  const page = await openPage(browser.context, srv.url);
  const res = await page.evaluate(async ({ config, trace }) => {
    const raw = await window.dynosim.runRaw({ config, trace: new TextEncoder().encode(trace), traceName: "eq.jsonl" });
    const report = await window.dynosim.run({ config, trace, traceName: "eq.jsonl" });
    return { json: raw.json, report };
  }, { config: twoWorkers, trace });
  assert.equal(stripWallText(res.json), stripWallText(native.stdout), "report bytes differ (wall-clock fields aside)");
  assert.deepEqual(stripWall(res.report), stripWall(JSON.parse(native.stdout)));
  assert.equal(res.report.summary.completed_requests, 1000);

  // errors: the page rejects with the CLI's one-line error
  const bad = cli(["predict", "-c", "config.yaml", "--trace", "garbage.jsonl", "--format", "json"]);
  assert.equal(bad.status, 2);
  const cliErr = bad.stderr.split("\n")[0].replace(/^dynosim: /, "");
  const pageErr = await page.evaluate(async ({ config, trace }) => {
    try { await window.dynosim.run({ config, trace: new Uint8Array(trace), traceName: "garbage.jsonl" }); return "resolved"; }
    catch (e) { return e.message; }
  }, { config: twoWorkers, trace: [...readFileSync(path.join(dir, "garbage.jsonl"))] });
  assert.equal(pageErr, cliErr);
  await page.close();
});

test("bad inputs show the error and the page keeps working", async () => {
  const page = await openPage(browser.context, srv.url);
  const run = page.locator('[data-testid="run"]');
  const error = page.locator('[data-testid="error"]');

  // garbage trace
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "garbage.jsonl"));
  await run.click();
  await error.waitFor({ timeout: ACTION_MS });
  assert.match(await error.innerText(), /^garbage\.jsonl:1: /);
  await shot(page, "05-bad-trace");

  // bad YAML: flagged as you type (with the CLI's message), and on run
  const cliErr = (() => {
    writeFileSync(path.join(dir, "config.yaml"), "traffic: [\n");
    return cli(["predict", "-c", "config.yaml", "--trace", "small.jsonl"]).stderr.split("\n")[0].replace(/^dynosim: /, "");
  })();
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.locator('[data-testid="config-editor"]').fill("traffic: [\n");
  await page.waitForFunction((want) => document.querySelector('[data-testid="config-status"]').textContent === want, cliErr, { timeout: ACTION_MS });
  assert.equal(await error.innerText(), cliErr);
  await run.click();
  await page.waitForFunction(() => /Failed/.test(document.body.innerText), null, { timeout: ACTION_MS });
  assert.equal(await error.innerText(), cliErr);
  await shot(page, "06-bad-yaml");

  // unknown key: path named
  await page.locator('[data-testid="config-editor"]').fill("engine: {workerz: 3}\n");
  await page.waitForFunction(() => /workerz/.test(document.querySelector('[data-testid="config-status"]').textContent), null, { timeout: ACTION_MS });

  // fixed config: works again
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers);
  await run.click();
  await openDetails(page);
  assert.equal(await error.count(), 0);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

// The core may not use .npz profiles yet: then the CLI accepts any file and
// this test is a todo until it does.
const npzCLI = (() => {
  writeFileSync(path.join(dir, "config.yaml"), twoWorkers);
  return cli(["predict", "-c", "config.yaml", "--trace", "small.jsonl", "--profile", "bad.npz", "--format", "json"]);
})();
test("an oversized trace and a crashed simulator show errors and the page keeps working", async () => {
  const page = await openPage(browser.context, srv.url);
  const run = page.locator('[data-testid="run"]');
  const error = page.locator('[data-testid="error"]');

  // Over the page's 512 MiB trace limit: refused by size, before any of it
  // is read (a sparse file, so the test writes nothing).
  const huge = path.join(dir, "huge.jsonl");
  writeFileSync(huge, "");
  truncateSync(huge, 513 << 20);
  await page.locator('[data-testid="trace-input"]').setInputFiles(huge);
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers);
  await run.click();
  await error.waitFor({ timeout: ACTION_MS });
  assert.equal(await error.innerText(), "huge.jsonl: 513.0 MiB is more than the page takes (512 MiB); replay it with the CLI (dynosim predict)");
  await shot(page, "14-oversized-trace");

  // The Go program dies under a call, as when wasm runs out of memory:
  // the run fails with a clear error and the next run gets a fresh worker.
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  const sims = page.workers().filter((w) => w.url().endsWith("/sim-worker.js"));
  assert.ok(sims.length > 0, "no simulator worker");
  for (const w of sims) await w.evaluate(() => { self.dynosimPredict = () => { throw new Error("Go program has already exited"); }; });
  await run.click();
  await page.waitForFunction(() => /simulator stopped/.test(document.querySelector('[data-testid="error"]')?.textContent || ""), null, { timeout: ACTION_MS });
  assert.match(await error.innerText(), /^the simulator stopped \(Go program has already exited\); it may have run out of memory/);
  await run.click();
  await openDetails(page);
  assert.equal(await error.count(), 0);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("a wrong .npz profile shows the error and the page keeps working",
  { todo: npzCLI.status === 0 ? "the CLI accepts a wrong .npz too (profiles not wired in the core yet)" : false }, async () => {
    const cliErr = npzCLI.stderr.split("\n")[0].replace(/^dynosim: /, "");
    const page = await openPage(browser.context, srv.url);
    await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
    await page.locator('[data-testid="config-editor"]').fill(twoWorkers);
    await page.locator('[data-testid="profile-input"]').setInputFiles(path.join(dir, "bad.npz"));
    await page.locator('[data-testid="run"]').click();
    const error = page.locator('[data-testid="error"]');
    await error.waitFor({ timeout: ACTION_MS });
    await shot(page, "07-bad-npz");
    assert.equal(await error.innerText(), cliErr);
    assert.match(cliErr, /bad\.npz/);
    await page.getByRole("button", { name: "Remove profile" }).click();
    await page.locator('[data-testid="run"]').click();
    await openDetails(page);
    assert.equal(await error.count(), 0);
    await page.close();
  });

// Issue 30 item 5: a run timed by a profile says so in the badge and the
// status line (the file's name, the profile's own validation note, no
// roofline claim), and a profile change names the next run.
test("a profile run is labelled profile timing, and a profile change names the run", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers);
  await page.locator('[data-testid="run"]').click();
  await openDetails(page);
  await page.locator('[data-testid="profile-input"]').setInputFiles(path.join(repo, "timing/testdata/perf_data.npz"));
  await page.locator('[data-testid="run"]').click();
  await page.waitForFunction(() => document.querySelectorAll("input.runname").length === 2, null, { timeout: ACTION_MS });
  const badge = (await page.locator('[data-testid="timing-badge"]').innerText()).replace(/\s+/g, " ");
  assert.match(badge, /profile timing \(perf_data\.npz\) profile: interpolated from your measured table/);
  assert.doesNotMatch(badge, /roofline/);
  assert.match(await page.locator(".status").innerText(), /profile timing \(perf_data\.npz\)/);
  const names = await page.locator("input.runname").evaluateAll((els) => els.map((e) => e.value));
  assert.deepEqual(names, ["run 1", "profile=perf_data.npz"]);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("cancel stops a long run and the next run works", async () => {
  const page = await openPage(browser.context, srv.url);
  // the whole conversation sample on one worker: a long run
  await page.locator('[data-testid="sample-select"]').selectOption("conversation");
  await page.locator('[data-testid="preset-select"]').selectOption("1-worker");
  // A frame's round trip from this test while the page is idle: the yardstick
  // for one during the run, so a loaded machine is not taken for a blocked
  // main thread.
  const frame = async () => {
    const t0 = Date.now();
    const during = await page.evaluate(() => new Promise((r) => requestAnimationFrame(() =>
      r(!document.querySelector('[data-testid="summary"]') &&
        Number(document.querySelector('[data-testid="progress"]')?.getAttribute("aria-valuenow") ?? 0) < 100))));
    return { ms: Date.now() - t0, during };
  };
  const idle = (await frame()).ms;
  await page.locator('[data-testid="run"]').click();
  const progress = page.locator('[data-testid="progress"]');
  await page.waitForFunction(() => Number(document.querySelector('[data-testid="progress"]').getAttribute("aria-valuenow")) > 0, null, { timeout: ACTION_MS });
  // the page stays responsive while the worker runs: a frame is drawn while
  // the run is still going, and about as soon as when the page was idle
  const busy = await frame();
  assert.ok(busy.during, "main thread blocked: no frame until the run ended");
  assert.ok(busy.ms < Math.max(1000, 20 * idle), `main thread blocked: a frame took ${busy.ms} ms (${idle} ms idle)`);
  await shot(page, "08-running");
  await page.locator('[data-testid="cancel"]').click();
  await page.waitForFunction(() => /Canceled/.test(document.body.innerText), null, { timeout: ACTION_MS });
  const at = Number(await progress.getAttribute("aria-valuenow"));
  assert.ok(at < 100, "stopped before the end");
  assert.equal(await page.locator('[data-testid="summary"]').count(), 0);
  assert.equal(await page.locator('[data-testid="error"]').count(), 0);
  assert.equal(await page.locator('[data-testid="run"]').isEnabled(), true);
  await shot(page, "09-canceled");

  // the API: cancel rejects the pending run with "canceled", whether it is
  // running, waiting for its worker to load, or queued behind another run
  const msgs = await page.evaluate(async () => {
    const settle = (p) => Promise.race([p.then(() => "resolved", (e) => e.message),
      new Promise((r) => setTimeout(() => r("still pending after 30 s"), 30000))]);
    const trace = await window.dynosim.sample("conversation");
    const config = "engine: {workers: {aggregated: {parallelism: {replicas: 1}}}}";
    const running = window.dynosim.run({ config, trace, traceName: "c.jsonl" });
    await new Promise((r) => setTimeout(r, 500));
    window.dynosim.cancel();
    // cancel() starts loading a fresh worker: a run now waits for it
    const loading = window.dynosim.run({ config, trace, traceName: "c.jsonl" });
    await new Promise((r) => setTimeout(r, 0));
    window.dynosim.cancel();
    const first = window.dynosim.run({ config, trace, traceName: "c.jsonl" });
    const queued = window.dynosim.run({ config, trace, traceName: "c.jsonl" });
    window.dynosim.cancel();
    return Promise.all([running, loading, first, queued].map(settle));
  });
  assert.deepEqual(msgs, ["canceled", "canceled", "canceled", "canceled"]);

  // a fresh worker serves the next run
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers);
  await page.locator('[data-testid="run"]').click();
  await openDetails(page);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("share link and embed mode", async () => {
  const page = await openPage(browser.context, srv.url);
  await page.locator('[data-testid="sample-select"]').selectOption("synthetic");
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers + "# shared\n");
  await page.locator('[data-testid="run"]').click();
  await openDetails(page);
  await page.locator('[data-testid="share"]').click();
  const url = page.url();
  assert.match(url, /#config=.*sample=synthetic/);
  await page.close();

  const shared = await openPage(browser.context, url);
  assert.equal(await shared.locator('[data-testid="config-editor"]').inputValue(), twoWorkers + "# shared\n");
  assert.equal(await shared.locator('[data-testid="sample-select"]').inputValue(), "synthetic");
  await shared.close();

  // embed.js turns a div into an iframe in embed mode
  const host = await browser.context.newPage();
  const hostURL = srv.url + "embed-host-test.html"; // same origin: no private-network checks
  await host.route(hostURL, (r) => r.fulfill({
    contentType: "text/html",
    body: `<!doctype html><div data-dynosim data-config="engine: {workers: {aggregated: {parallelism: {replicas: 2}}}}" data-trace="sample:synthetic"></div><script src="${srv.url}embed.js"></script>`,
  }));
  await host.goto(hostURL);
  const frame = await (await host.waitForSelector("iframe")).contentFrame();
  await frame.waitForFunction(() => document.documentElement.dataset.interactive === "1", null, { timeout: ACTION_MS });
  assert.match(frame.url(), /\?embed=1#/);
  assert.equal(await frame.locator("header").count(), 0, "no chrome in embed mode");
  assert.match(await frame.locator('[data-testid="config-editor"]').inputValue(), /replicas: 2/);
  await frame.locator('[data-testid="run"]').click();
  await openDetails(frame);
  await host.screenshot({ path: path.join(artifacts, "10-embed.png"), fullPage: true });
  await host.close();
});

// Vugu sends its render instructions through a 16 KiB buffer; a config
// bound in the template used to panic the UI ("requested instruction does
// not fit in the buffer") and leave Run dead, on every load of a share link.
test("a 64 KB config works through the file input, the editor and a share link", async () => {
  const pad = "# " + "x".repeat(98) + "\n";
  const big = twoWorkers + pad.repeat(Math.ceil((64 << 10) / pad.length));
  assert.ok(big.length > 64 << 10);
  writeFileSync(path.join(dir, "big.yaml"), big);
  const consoleLog = [];
  const page = await openPage(browser.context, srv.url, { consoleLog });
  const editor = page.locator('[data-testid="config-editor"]');
  const status = page.locator('[data-testid="config-status"]');
  const runOnce = async (p) => {
    await p.locator('[data-testid="run"]').click();
    await p.waitForFunction(() => /^Done/.test(document.querySelector(".status").textContent), null, { timeout: ACTION_MS });
    assert.equal(await p.locator('[data-testid="error"]').count(), 0);
  };
  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));

  // the file input
  await page.locator('[data-testid="config-input"]').setInputFiles(path.join(dir, "big.yaml"));
  await page.waitForFunction((n) => document.querySelector('[data-testid="config-editor"]').value.length === n, big.length, { timeout: ACTION_MS });
  assert.equal(await editor.inputValue(), big);
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });
  await runOnce(page);

  // the editor (typing keeps working; the text is not reset)
  // (as a paste: Playwright's fill() of 64 KB takes over 10 s on this page)
  await editor.evaluate((el, v) => { el.value = v; el.dispatchEvent(new Event("input", { bubbles: true })); }, big.replace("replicas: 2", "replicas: 1"));
  await editor.press("End");
  await editor.pressSequentially("# typed");
  assert.ok((await editor.inputValue()).endsWith("# typed"));
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });
  await runOnce(page);
  await openDetails(page);
  assert.match(await text(page, "summary"), /completed_requests\s+300/);
  // the console table is put in the DOM directly too, and survives renders
  const table = () => page.evaluate(() => document.getElementById("console-table").textContent);
  assert.match(await table(), /Request Latency|TTFT|ttft/i);
  await page.locator("table.reqtable button.sort").first().click(); // a render
  await page.locator("details.texttable summary").click();
  assert.match(await table(), /Request Latency|TTFT|ttft/i);

  // a share link
  await page.locator('[data-testid="share"]').click();
  const url = page.url();
  assert.ok(url.length > 80000, "the link holds the config");
  const shared = await openPage(browser.context, url, { consoleLog });
  assert.equal(await shared.locator('[data-testid="config-editor"]').inputValue(), big.replace("replicas: 2", "replicas: 1") + "# typed");
  await shared.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await runOnce(shared);

  // a share link whose 64 KB config is one unknown key: the error is shown
  // (cut short), and the page keeps working
  const hostile = "engine: {" + "k".repeat(64 << 10) + ": 1}\n";
  const frag = "#config=" + Buffer.from(hostile).toString("base64url");
  const bad = await openPage(browser.context, srv.url + frag, { consoleLog });
  await bad.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent !== "Config is valid.", null, { timeout: ACTION_MS });
  const msg = await bad.locator('[data-testid="config-status"]').innerText();
  assert.ok(msg.length < 5000, "the message is cut: " + msg.length);
  assert.equal(await bad.locator('[data-testid="config-editor"]').inputValue(), hostile);
  await bad.locator('[data-testid="config-editor"]').fill(twoWorkers);
  await bad.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await runOnce(bad);
  await shot(bad, "14-big-config");

  for (const p of [page, shared, bad]) assert.deepEqual(p.pageErrors, []);
  assert.deepEqual(consoleLog.filter((l) => /panic|does not fit|Content Security Policy/i.test(l)), []);
  await Promise.all([page.close(), shared.close(), bad.close()]);
});

// The CSP of `dynosim serve` must not block anything the page does.
test("the page runs under its Content-Security-Policy", async () => {
  const res = await fetch(srv.url);
  assert.match(res.headers.get("content-security-policy") || "", /script-src 'self' 'wasm-unsafe-eval'/);
  assert.equal(res.headers.get("referrer-policy"), "no-referrer");
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  const consoleLog = [];
  const page = await openPage(browser.context, srv.url, { consoleLog });
  await page.locator('[data-testid="sample-select"]').selectOption("synthetic");
  await page.locator('[data-testid="config-editor"]').fill(twoWorkers);
  await page.locator('[data-testid="run"]').click();
  await openDetails(page);
  await page.waitForFunction(() => document.querySelectorAll("#charts canvas").length > 0, null, { timeout: ACTION_MS });
  assert.deepEqual(page.pageErrors, []);
  assert.deepEqual(consoleLog.filter((l) => /Content Security Policy|Refused to/i.test(l)), []);
  await page.close();
});

// Cross-target check: each case of core/sim/testdata/hostile (NAME.yaml and
// the files NAME.* beside it: .jsonl/.csv a trace, .npz a profile, given to
// .json a model config, given to window.dynosim.runRaw under the same names,
// as wasm/worker/test does; three small ones of our own if the directory is
// empty) ends the same in the page as in `dynosim predict -c NAME.yaml
// --format json`: the same one-line rejection, or a report equal to the
// CLI's (wall-clock fields aside).
test("hostile cases: the page agrees with the CLI", async () => {
  const hostileDir = path.join(repo, "core/sim/testdata/hostile");
  const files = existsSync(hostileDir) ? readdirSync(hostileDir).sort() : [];
  let cases = files.filter((f) => f.endsWith(".yaml")).map((f) => ({ name: f.slice(0, -5), dir: hostileDir }));
  if (cases.length === 0) {
    const own = path.join(dir, "hostile");
    mkdirSync(own, { recursive: true });
    for (const [name, yaml] of Object.entries({
      "negative-stop": "traffic: {stop: {requests: -1}}\n",
      "unknown-key": "engine: {wrokers: 2}\n",
      "unknown-hardware": "engine: {hardware: nope}\n",
    })) {
      writeFileSync(path.join(own, name + ".yaml"), yaml);
      cases.push({ name, dir: own });
    }
  }
  const page = await openPage(browser.context, srv.url);
  const failures = [];
  for (const c of cases) {
    const opts = { config: readFileSync(path.join(c.dir, c.name + ".yaml"), "utf8"), configName: c.name + ".yaml" };
    for (const f of files.filter((f) => f.startsWith(c.name + ".") && f !== c.name + ".yaml")) {
      const field = { ".jsonl": "trace", ".csv": "trace", ".npz": "profile", ".json": "model" }[path.extname(f)];
      if (field) {
        opts[field] = readFileSync(path.join(c.dir, f)).toString("base64");
        opts[field + "Name"] = f;
      }
    }
    // a case may replay another case's trace: the one its traffic.source.paths names
    const named = /paths:\s*\[\s*([^\],\s]+)\s*\]/.exec(opts.config);
    if (!opts.trace && named && files.includes(named[1]) && /\.(jsonl|csv)$/.test(named[1])) {
      opts.trace = readFileSync(path.join(c.dir, named[1])).toString("base64");
      opts.traceName = named[1];
    }
    const r = spawnSync(bin, ["predict", "-c", c.name + ".yaml", "--format", "json"], { cwd: c.dir, encoding: "utf8", maxBuffer: 256 << 20, timeout: ACTION_MS });
    const got = await page.evaluate(async (o) => {
      const bytes = (b64) => Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
      if (o.trace) o.trace = bytes(o.trace);
      if (o.profile) o.profile = bytes(o.profile);
      if (o.model) o.model = bytes(o.model);
      try {
        return { report: (await window.dynosim.runRaw(o)).json };
      } catch (e) {
        return { error: e.message };
      }
    }, opts);
    if (r.status === 0) {
      if (got.error !== undefined) failures.push(`${c.name}: the CLI ran it, the page said: ${got.error}`);
      else if (stripWallText(got.report) !== stripWallText(r.stdout)) failures.push(`${c.name}: the reports differ`);
    } else {
      const line = (r.stderr || "").split("\n").find((l) => l.startsWith("dynosim: "));
      const want = line ? line.slice("dynosim: ".length) : `(no error line: ${r.error || r.status})`;
      if (got.error !== want) failures.push(`${c.name}:\n  CLI:  ${want}\n  page: ${got.error === undefined ? "(a report)" : got.error}`);
    }
  }
  assert.deepEqual(failures, []);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});
