// Browser tests of the explanations (ui/explain_ui.go, ui/real.go,
// public/explain.js): the TTFT breakdown bar, a request's life on demand
// (a replay with watch set), and a real run's exports overlaid on the
// prediction. Screenshots go to test-artifacts/explain-*.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, repo, ACTION_MS } from "./helpers.mjs";

let srv, browser;
const dir = mkdtempSync(path.join(tmpdir(), "dynosim-explain-"));
const synthetic = gunzipSync(readFileSync(path.join(repo, "public/traces/synthetic_trace.jsonl.gz"))).toString();
const smallTrace = synthetic.split("\n").slice(0, 300).join("\n") + "\n";
writeFileSync(path.join(dir, "small.jsonl"), smallTrace);
writeFileSync(path.join(dir, "notes.json"), JSON.stringify({ hello: "this is no benchmark export" }));
const defaultYAML = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8");

// The real runs: core/measured's fixtures (an AIPerf export: summary and
// per-request records; a vllm bench serve --save-result JSON).
const fixtures = path.join(repo, "core/measured/testdata");
function walk(d) {
  if (!existsSync(d)) return [];
  return readdirSync(d).flatMap((n) => (statSync(path.join(d, n)).isDirectory() ? walk(path.join(d, n)) : [path.join(d, n)]));
}
const files = walk(fixtures);
const aiperf = ["profile_export_aiperf.json", "profile_export.jsonl"].map((n) => files.find((f) => path.basename(f) === n && f.includes("aiperf")));
// vllm results: the .json files under a vllm-named path holding vLLM's keys
const vllms = files.filter((f) => /vllm/i.test(path.relative(fixtures, f)) && f.endsWith(".json") &&
  /"(mean_ttft_ms|ttfts)"/.test(readFileSync(f, "utf8").slice(0, 1 << 20)));

const tid = (page, id) => page.locator(`[data-testid="${id}"]`);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, "explain-" + name + ".png"), fullPage: true });
const near = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

// run clicks Run and waits for this run's results.
async function run(page) {
  const n = await page.evaluate(() => document.querySelectorAll('[data-testid="runs"] li').length);
  await tid(page, "run").click();
  await page.waitForFunction((n) => /^Done/.test(document.querySelector(".status").textContent) &&
    document.querySelectorAll('[data-testid="runs"] li').length !== n, n, { timeout: ACTION_MS });
}

// breakdown reads the breakdown table: [{part, ms, requestMs}] and the totals.
async function breakdown(page) {
  return page.evaluate(() => {
    const box = document.querySelector('[data-testid="ttft-breakdown"]');
    const total = (id) => { const e = box.querySelector(`[data-testid="${id}"] .bdtotal`); return e ? Number(e.dataset.ms) : null; };
    return {
      parts: [...box.querySelectorAll("tr.bdpart")].map((r) => ({ part: r.dataset.part, ms: Number(r.dataset.ms), requestMs: Number(r.dataset.requestMs), text: r.innerText })),
      mean: total("ttft-bar-mean"), request: total("ttft-bar-request"),
      meanText: box.querySelector('[data-testid="ttft-bar-mean"] .bdtotal').textContent,
      requestTitle: box.querySelector('[data-testid="ttft-bar-request"] .bdtitle')?.textContent || "",
      segs: [...box.querySelectorAll('[data-testid="ttft-bar-mean"] .seg')].map((s) => ({ part: s.dataset.part, w: s.getBoundingClientRect().width })),
      barW: box.querySelector('[data-testid="ttft-bar-mean"] .bdbar').getBoundingClientRect().width,
      aria: box.querySelector('[data-testid="ttft-bar-mean"] .bdbar').getAttribute("aria-label"),
    };
  });
}

// events lists the shown timeline's rows by kind.
const events = (page) => page.evaluate(() => [...document.querySelectorAll('[data-testid="request-timeline"] .lifelist > li')].map((li) => li.dataset.event));

// waitTimeline waits for request uuid's timeline.
async function waitTimeline(page, uuid) {
  await page.waitForFunction((u) => {
    const t = document.querySelector('[data-testid="request-timeline"] .lifehead');
    return t && t.textContent.startsWith("Request " + u + ":") && window.dynosimExplain.describe().timeline?.drawn;
  }, uuid, { timeout: ACTION_MS });
}

test("the TTFT breakdown adds up; a selected request shows its life and its own bar", async () => {
  const page = await openPage(browser.context, srv.url);
  await run(page); // the default sample: the CLI's default run
  await tid(page, "ttft-breakdown").waitFor();
  const rep = await page.evaluate(() => window.dynosimCharts.runs[0].report);
  assert.ok(rep.ttft_breakdown, "the report has ttft_breakdown");
  let bd = await breakdown(page);
  // the parts' means add up to the shown mean TTFT, which is the report's
  near(bd.parts.reduce((s, p) => s + p.ms, 0), bd.mean, "parts vs the shown mean");
  near(bd.mean, rep.ttft_breakdown.mean_ttft_ms, "shown mean vs the report");
  near(bd.mean, rep.summary.mean_ttft_ms, "shown mean vs summary.mean_ttft_ms");
  assert.match(bd.meanText, new RegExp("TTFT " + rep.summary.mean_ttft_ms.toFixed(1) + " ms"));
  assert.deepEqual(bd.parts.map((p) => p.part), rep.ttft_breakdown.parts.map((p) => p.part));
  // one segment per non-zero part, filling the bar
  assert.deepEqual(bd.segs.map((s) => s.part), rep.ttft_breakdown.parts.filter((p) => p.mean_ms > 0).map((p) => p.part));
  assert.ok(Math.abs(bd.segs.reduce((s, g) => s + g.w, 0) - bd.barW) < 2, "segments fill the bar");
  for (const p of ["Frontend", "Engine queue", "Prefill", "First-token pass"]) assert.match(bd.aria, new RegExp(p), "aria names " + p);
  assert.match(await tid(page, "ttft-breakdown").innerText(), /Engine queue/);
  // the parts are explained in the glossary
  assert.match(await tid(page, "glossary").innerText(), /TTFT: Engine queue/);
  assert.equal(await page.locator('[data-testid="ttft-bar-request"]').count(), 0);

  // select a request by clicking its row (not the uuid button)
  const cols = await page.locator('[data-testid="requests"] thead th').allInnerTexts();
  const col = (name) => cols.findIndex((c) => c.replace(/ [▲▼]$/, "") === name) + 1;
  const row = page.locator('[data-testid="requests"] tbody tr').nth(4);
  const uuid = Number(await row.locator(`td:nth-child(${col("uuid")})`).innerText());
  const ttft = Number(await row.locator(`td:nth-child(${col("ttft_ms")})`).innerText());
  await row.locator(`td:nth-child(${col("input_length")})`).click();
  await waitTimeline(page, uuid);
  const life = tid(page, "request-timeline");
  const kinds = await events(page);
  for (const k of ["arrival", "routed", "first_token", "completed"]) assert.ok(kinds.includes(k), `timeline has ${k}: ${kinds}`);
  assert.ok(kinds.includes("pass") || kinds.includes("passes"), "timeline has a pass");
  assert.ok(kinds.indexOf("arrival") < kinds.indexOf("first_token") && kinds.indexOf("first_token") < kinds.indexOf("completed"));
  assert.match(await life.innerText(), /First token\s+TTFT/);
  assert.equal(await row.getAttribute("class"), "selected");
  assert.equal(await row.locator("button.reqpick").getAttribute("aria-pressed"), "true");
  // the lane chart has every pass and the events
  const d = await page.evaluate(() => window.dynosimExplain.describe().timeline);
  assert.ok(d.passes >= 1, "passes drawn");
  assert.ok(d.markers.includes("first_token") && d.markers.includes("completed"), d.markers.join());
  // its breakdown bar: the parts add up to its TTFT
  await page.locator('[data-testid="ttft-bar-request"]').waitFor();
  bd = await breakdown(page);
  assert.equal(bd.requestTitle, "Request " + uuid);
  near(bd.parts.reduce((s, p) => s + p.requestMs, 0), bd.request, "request parts vs its total");
  assert.ok(Math.abs(bd.request - ttft) < 1e-3, `request bar ${bd.request} vs ttft_ms ${ttft}`);
  await shot(page, "request");

  // a long run of decode passes is one row that opens a page at a time
  const fold = life.locator('li[data-event="passes"]').first();
  if (await fold.count()) {
    await fold.locator("button").click();
    const n = await fold.locator("tbody tr").count();
    assert.ok(n >= 1 && n <= 50, `${n} passes shown`);
    assert.equal(await fold.locator("button").first().getAttribute("aria-expanded"), "true");
    const next = fold.getByRole("button", { name: "Next passes" });
    if (await next.isEnabled()) {
      const first = await fold.locator("tbody tr td").first().innerText();
      await next.click();
      assert.notEqual(await fold.locator("tbody tr td").first().innerText(), first);
    }
  }

  // the longest request (2,000 output tokens: thousands of passes) stays a
  // short list; every pass is on the chart and a page of the list away
  const outHead = page.locator('[data-testid="requests"] thead button', { hasText: "output_length" }).first();
  await outHead.click();
  await outHead.click(); // descending
  const longest = page.locator('[data-testid="requests"] tbody tr').first();
  const longUUID = Number(await longest.locator("button.reqpick").innerText());
  const outLen = Number(await longest.locator(`td:nth-child(${col("output_length")})`).innerText());
  assert.ok(outLen >= 1000, "a long request: " + outLen);
  await longest.locator("button.reqpick").click();
  await waitTimeline(page, longUUID);
  const long = await page.evaluate(() => window.dynosimExplain.describe().timeline);
  assert.ok(long.passes >= outLen, `${long.passes} passes drawn for ${outLen} tokens`);
  const shown = await life.locator(".lifelist > li").count();
  assert.ok(shown < 40, `${shown} rows listed for ${long.passes} passes`);
  const longFold = life.locator('li[data-event="passes"]').first();
  await longFold.locator("button").first().click();
  assert.equal(await longFold.locator("tbody tr").count(), 50);
  assert.match(await longFold.locator(".pager").innerText(), /passes 1–50 of \d/);
  const firstPass = Number(await longFold.locator("tbody tr td").first().innerText());
  await longFold.getByRole("button", { name: "Next passes" }).click();
  assert.match(await longFold.locator(".pager").innerText(), /passes 51–100 of/);
  assert.equal(Number(await longFold.locator("tbody tr td").first().innerText()), firstPass + 50);
  await shot(page, "long-request");

  // the Request id box, keyboard only: type an id, press Enter
  await tid(page, "request-id").fill("7");
  await tid(page, "request-id").press("Enter");
  await waitTimeline(page, 7);
  assert.equal((await breakdown(page)).requestTitle, "Request 7");
  // wrong ids are refused in place; the page stays usable
  for (const [bad, re] of [["abc", /whole number/], ["999999", /not in this run/]]) {
    await tid(page, "request-id").fill(bad);
    await tid(page, "request-show").click();
    await page.waitForFunction((re) => new RegExp(re).test(document.querySelector('[data-testid="request-error"]')?.textContent || ""), re.source);
  }
  await tid(page, "request-id").fill("2");
  await tid(page, "request-show").click();
  await waitTimeline(page, 2);
  assert.equal(await tid(page, "request-error").count(), 0);

  // a new run drops the selection (it was of the other run)
  await page.locator('[data-testid="preset-select"]').selectOption("1-worker");
  await run(page);
  assert.equal(await tid(page, "request-timeline").count(), 0);
  assert.equal(await page.locator('[data-testid="ttft-bar-request"]').count(), 0);
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("dynosim.run({watch}) returns the request's timeline; a disaggregated request shows its transfer", async () => {
  const page = await openPage(browser.context, srv.url);
  const res = await page.evaluate(async ({ config, trace }) => {
    const r = await window.dynosim.run({ config, trace, traceName: "small.jsonl", watch: 5 });
    const plain = await window.dynosim.run({ config, trace, traceName: "small.jsonl" });
    let bad = "";
    try { await window.dynosim.run({ config, trace, traceName: "small.jsonl", watch: -1 }); } catch (e) { bad = e.message; }
    return { tl: r.request_timeline, has: "request_timeline" in plain, same: JSON.stringify(r.summary.mean_ttft_ms) === JSON.stringify(plain.summary.mean_ttft_ms), bad };
  }, { config: defaultYAML, trace: smallTrace });
  assert.equal(res.tl.uuid, 5);
  assert.equal(res.tl.events[0].event, "arrival");
  assert.ok(res.tl.events.some((e) => e.event === "pass"));
  assert.equal(res.has, false, "no timeline without watch");
  assert.ok(res.same, "watching changes nothing else");
  assert.match(res.bad, /watch/);

  await page.locator('[data-testid="trace-input"]').setInputFiles(path.join(dir, "small.jsonl"));
  await page.locator('[data-testid="preset-select"]').selectOption("disaggregated");
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.");
  await run(page);
  await page.locator('[data-testid="requests"] tbody tr button.reqpick').first().press("Enter");
  await waitTimeline(page, 1);
  const kinds = await events(page);
  assert.ok(kinds.includes("kv_transfer"), "a disaggregated request's transfer: " + kinds);
  const bd = await breakdown(page);
  assert.ok(bd.parts.some((p) => p.part === "kv_transfer"), "the transfer is a part of the TTFT");
  near(bd.parts.reduce((s, p) => s + p.ms, 0), bd.mean, "disaggregated parts vs the mean");
  await shot(page, "disaggregated");
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("a real run: measured vs predicted table and CDFs; a wrong file is an error and the page stays usable", async (t) => {
  if (!aiperf.every(Boolean)) return t.skip("no AIPerf fixture in core/measured/testdata");
  const page = await openPage(browser.context, srv.url);
  await run(page);
  const overlay = tid(page, "real-overlay");
  await tid(page, "real-input").setInputFiles(aiperf);
  await overlay.waitFor({ timeout: ACTION_MS });
  let text = await overlay.innerText();
  assert.match(text, /aiperf/);
  assert.match(text, /mean_ttft_ms/);
  assert.ok(await overlay.locator(".realtable tbody tr").count() >= 3, "several metrics compared");
  // each error = predicted / measured − 1
  const rows = await overlay.locator(".realtable tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
  const odd = rows.filter((r) => r.length !== 4 || !/^[+-]?\d+\.\d %$|^—$/.test(r[3]));
  assert.deepEqual(odd, [], "rows: metric, measured, predicted, error");
  // the default run replays another workload than this benchmark: said so
  assert.match(await overlay.locator(".realnote").innerText(), /another workload than the real run/);
  await page.waitForFunction(() => (window.dynosimExplain.describe().real || []).length > 0);
  let real = await page.evaluate(() => window.dynosimExplain.describe().real);
  const ttft = real.find((p) => p.id === "real-cdf-ttft");
  assert.ok(ttft && ttft.drawn, "the TTFT CDF overlay");
  assert.deepEqual(ttft.series, ["measured", "predicted"]);
  assert.equal(await overlay.locator('[data-testid="real-cdf-ttft"] canvas').count(), 1);
  await shot(page, "real-aiperf");

  // a wrong file: the page's error area names it; the overlay goes, the page works
  await tid(page, "real-input").setInputFiles(path.join(dir, "notes.json"));
  await page.waitForFunction(() => /real run \(notes\.json\)/.test(document.querySelector('[data-testid="error"]')?.textContent || ""), null, { timeout: ACTION_MS });
  assert.match(await tid(page, "error").innerText(), /notes\.json/);
  assert.equal(await overlay.count(), 0);
  assert.ok(await tid(page, "run").isEnabled());
  await page.locator('[data-testid="requests"] tbody tr').first().click();
  await waitTimeline(page, await page.locator('[data-testid="requests"] tbody tr button.reqpick').first().innerText());

  // vllm bench serve results (a summary, and one saved with --save-detailed)
  for (const vllm of vllms) {
    await tid(page, "real-input").setInputFiles(vllm);
    await page.waitForFunction((name) => document.querySelector('[data-testid="real-overlay"] caption')?.textContent.includes(name), path.basename(vllm), { timeout: ACTION_MS });
    text = await overlay.innerText();
    assert.match(text, /vllm bench serve/);
    assert.equal(await tid(page, "error").count(), 0, "the error went with a good file");
    await page.waitForFunction(() => (window.dynosimExplain.describe().real || []).some((p) => p.drawn) ||
      /no per-request latencies/.test(document.getElementById("real-charts")?.textContent || ""));
    await shot(page, "real-" + path.basename(vllm, ".json"));
  }
  if (!vllms.length) t.diagnostic("no vllm bench serve fixture in core/measured/testdata: its overlay is not checked");
  await tid(page, "real-input").setInputFiles(aiperf);
  await page.waitForFunction(() => /aiperf/.test(document.querySelector('[data-testid="real-overlay"] caption')?.textContent || ""), null, { timeout: ACTION_MS });
  assert.equal(await tid(page, "error").count(), 0, "the error went with a good file");

  // the loaded files are compared again with each new run
  const before = await overlay.locator(".realtable tbody tr").first().innerText();
  await page.locator('[data-testid="preset-select"]').selectOption("1-worker");
  await run(page);
  await page.waitForFunction((b) => {
    const r = document.querySelector('[data-testid="real-overlay"] .realtable tbody tr');
    return r && r.innerText !== b;
  }, before, { timeout: ACTION_MS });

  // phones: nothing scrolls sideways
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(500);
  const sw = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(sw <= 391, `page is ${sw}px wide at 390px`);
  await shot(page, "real-390");
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

// Round trip: a real run's requests become the trace (convert-trace in the
// page), the prediction replays them, and the overlay then compares like
// with like: the same requests and tokens, no workload note.
test("a real run's requests replayed: convert, predict, compare the same workload", async (t) => {
  const runs = [aiperf.every(Boolean) && aiperf, vllms.find((f) => f.includes("llm-d"))].filter(Boolean);
  if (!runs.length) return t.skip("no real fixtures in core/measured/testdata");
  const page = await openPage(browser.context, srv.url);
  await run(page);
  const overlay = tid(page, "real-overlay");
  for (const real of runs) {
    await tid(page, "real-input").setInputFiles(real);
    await page.waitForFunction(() => document.querySelector('[data-testid="real-use-trace"]'), null, { timeout: ACTION_MS });
    await tid(page, "real-use-trace").click();
    assert.match(await tid(page, "trace-label").innerText(), /-trace\.jsonl/);
    await run(page);
    await page.waitForFunction(() => !document.querySelector('[data-testid="real-overlay"] .realnote') &&
      /completed_requests/.test(document.querySelector('[data-testid="real-overlay"]')?.textContent || ""), null, { timeout: ACTION_MS });
    await overlay.locator("details.realmore summary").click();
    const rows = await overlay.locator(".realtable tbody tr").evaluateAll((trs) =>
      Object.fromEntries(trs.map((tr) => [tr.children[0].textContent, tr.children[3].textContent])));
    for (const k of ["completed_requests", "total_input_tokens", "total_output_tokens"]) {
      assert.equal(rows[k], "+0.0 %", `${k} after replaying the real run's requests`);
    }
    assert.match(rows["mean_ttft_ms"], /^[+-]\d+\.\d %$/);
    await shot(page, "real-replayed-" + path.basename(Array.isArray(real) ? real[0] : real, ".json"));
  }
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("dynosim.compare rejects a wrong file with an error naming it", async () => {
  const page = await openPage(browser.context, srv.url);
  const msg = await page.evaluate(async () => {
    try {
      await window.dynosim.compare({ files: [{ name: "x.json", data: "[1, 2" }], report: { summary: {} } });
      return "";
    } catch (e) { return e.message; }
  });
  assert.match(msg, /x\.json/);
  await page.close();
});
