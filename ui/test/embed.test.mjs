// The documentation-embedding demo (public/embed-demo.html, docs/embed.md)
// across origins under a strict host CSP: the demo's HTML is served by a tiny
// node server on http://127.0.0.1:A with
//   Content-Security-Policy: default-src 'none'; frame-src http://localhost:B; style-src 'unsafe-inline'
// (no script-src at all: the snippet needs none), its iframes pointed at the
// simulator served by `dynosim serve --addr 127.0.0.1:B` and reached as
// http://localhost:B, so host and simulator are different origins (and sites).
// Each embedded simulator must load, open with its share-link config, run
// (Run clicked inside the frame) and show results; no CSP violation, page
// error or console error may occur in the host or any frame. Screenshots:
// test-artifacts/embed-demo-1280.png and embed-demo-390.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import http from "node:http";
import { once } from "node:events";
import path from "node:path";
import { startServer, launch, artifacts, repo, ACTION_MS, openDetails } from "./helpers.mjs";

let srv, host, browser, simOrigin, hostURL;

// What each demo frame must show: a line of its config, its sample and,
// after the run, the figures the demo's text quotes (`dynosim predict` on
// the same config and trace; issue 32 item 9: every demo runs ≥ 4 workers on
// a trace where its knob matters).
const frames = {
  "kv-pressure": { config: /blocks: 512/, sample: "synthetic", replicas: 4,
    quoted: { num_preemptions: 39, rejected_requests: 114, median_ttft_ms: 7926.02, p99_ttft_ms: 34738.44 } },
  "prefix-round-robin": { config: /policy: round_robin/, sample: "default", replicas: 8,
    quoted: { prefix_cache_reused_ratio: 5.47, median_ttft_ms: 289.52, p99_ttft_ms: 5846.07 } },
  "prefix-kv-router": { config: /policy: kv_router/, sample: "default", replicas: 8,
    quoted: { prefix_cache_reused_ratio: 11.33, median_ttft_ms: 262.16, p99_ttft_ms: 4826.36 } },
  "engine-vllm": { config: /backend: vllm/, sample: "synthetic", replicas: 4,
    quoted: { median_ttft_ms: 383.42, p99_ttft_ms: 4367.08, p99_itl_ms: 240.09 } },
  "engine-sglang": { config: /backend: sglang/, sample: "synthetic", replicas: 4,
    quoted: { median_ttft_ms: 399.45, p99_ttft_ms: 4952.74, p99_itl_ms: 16.14 } },
};
// near: within 0.5% (the summary shows rounded values, ratios in %).
const near = (got, want) => Math.abs(got - want) <= Math.max(0.005 * Math.abs(want), 0.001);

// An init script (CDP-injected, so the host's CSP does not apply to it) that
// records CSP violations and uncaught errors in every frame.
const recorder = () => {
  window.__embedProblems = [];
  const push = (s) => window.__embedProblems.push(s);
  document.addEventListener("securitypolicyviolation", (e) =>
    push(`CSP ${e.violatedDirective} blocked ${e.blockedURI} (${location.origin})`));
  window.addEventListener("error", (e) => push(`error ${e.message} (${location.origin})`));
  window.addEventListener("unhandledrejection", (e) => push(`rejection ${e.reason} (${location.origin})`));
};

before(async () => {
  srv = await startServer();
  simOrigin = srv.url.replace("127.0.0.1", "localhost").replace(/\/$/, "");
  const demo = readFileSync(path.join(repo, "public/embed-demo.html"), "utf8");
  // The demo's iframes are relative (it is served beside the simulator);
  // a documentation site names the simulator's origin instead.
  const page = demo.replaceAll('src="./?embed=1', `src="${simOrigin}/?embed=1`);
  assert.equal((page.match(new RegExp(`src="${simOrigin}/\\?embed=1#config=`, "g")) || []).length, 5);
  const csp = `default-src 'none'; frame-src ${simOrigin}; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'`;
  host = http.createServer((req, res) => {
    if (req.url === "/" || req.url === "/docs.html") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": csp });
      res.end(page);
    } else {
      res.writeHead(404, { "Content-Type": "text/plain", "Content-Security-Policy": csp });
      res.end("not found");
    }
  });
  host.listen(0, "127.0.0.1");
  await once(host, "listening");
  hostURL = `http://127.0.0.1:${host.address().port}/docs.html`;
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (host) host.close();
  if (srv) await srv.stop();
});

// summaryValues reads "key value" lines of the summary into numbers.
function summaryValues(text) {
  const out = {};
  for (const m of text.matchAll(/([a-z_0-9]+)\s+(-?[\d,]+(?:\.\d+)?)/g)) out[m[1]] = parseFloat(m[2].replace(/,/g, ""));
  return out;
}

test("the embed demo runs every simulator cross-origin under a strict host CSP", async () => {
  const page = await browser.context.newPage();
  await page.addInitScript(recorder);
  const consoleErrors = [], pageErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  const res = await page.goto(hostURL);
  assert.match(res.headers()["content-security-policy"], /^default-src 'none'; frame-src http:\/\/localhost:\d+;/);
  assert.notEqual(new URL(hostURL).origin, simOrigin);

  const results = {}, headline = {};
  for (const [id, want] of Object.entries(frames)) {
    const el = page.locator(`iframe[data-demo="${id}"]`);
    await el.scrollIntoViewIfNeeded(); // loading="lazy"
    const frame = await (await el.elementHandle()).contentFrame();
    assert.ok(frame, `${id}: the iframe has a frame`);
    await frame.waitForFunction(() => document.documentElement.dataset.interactive === "1", null, { timeout: ACTION_MS });
    assert.equal(new URL(frame.url()).origin, simOrigin, `${id}: served by the simulator's origin`);
    assert.ok(await frame.evaluate(() => document.documentElement.classList.contains("embed")), `${id}: embed mode`);
    const fl = page.frameLocator(`iframe[data-demo="${id}"]`);
    assert.match(await fl.locator('[data-testid="config-editor"]').inputValue(), want.config, `${id}: share-link config`);
    assert.equal(await fl.locator('[data-testid="sample-select"]').inputValue(), want.sample, `${id}: sample`);
    assert.match(await fl.locator('[data-testid="config-editor"]').inputValue(), new RegExp(`replicas: ${want.replicas},`), `${id}: workers`);
    await frame.waitForFunction(() => document.querySelector('[data-testid="config-status"]')?.textContent === "Config is valid.", null, { timeout: ACTION_MS });
    await fl.locator('[data-testid="run"]').click();
    await openDetails(fl);
    assert.equal(await fl.locator('[data-testid="error"]').count(), 0, `${id}: no error`);
    const s = summaryValues(await fl.locator('[data-testid="summary"]').innerText());
    assert.ok(s.completed_requests > 0, `${id}: completed_requests in ${JSON.stringify(s)}`);
    for (const [k, v] of Object.entries(want.quoted)) assert.ok(near(s[k], v), `${id}: ${k} ${s[k]}, the demo quotes ${v}`);
    results[id] = s;
    headline[id] = await fl.locator('[data-testid="kpi-ttft"]').innerText();
    await fl.locator('[data-testid="charts"]').waitFor({ timeout: ACTION_MS });
  }
  // The concepts the captions claim: the knob each pair shows changes its
  // headline TTFT card.
  for (const [a, b] of [["prefix-round-robin", "prefix-kv-router"], ["engine-vllm", "engine-sglang"]]) {
    assert.notEqual(headline[a], headline[b], `${a} and ${b} show the same TTFT card: ${headline[a]}`);
  }
  assert.ok(results["prefix-kv-router"].prefix_cache_reused_ratio > 1.5 * results["prefix-round-robin"].prefix_cache_reused_ratio,
    "kv_router reuses more of the prefixes than round robin");
  assert.ok(results["prefix-kv-router"].p99_ttft_ms < 0.9 * results["prefix-round-robin"].p99_ttft_ms, "and lowers TTFT p99 by more than 10%");
  // Both engines reuse the trace's whole 512-token blocks, so their headline
  // reuse agrees; they differ in scheduling: SGLang runs a new prefill batch
  // alone (short decode steps, a lower ITL p99), vLLM mixes prefill chunks
  // into decode passes; and only SGLang reports its own every-chunk cache hit ratio.
  assert.ok(results["engine-sglang"].p99_itl_ms < 0.5 * results["engine-vllm"].p99_itl_ms, "SGLang's ITL p99 is under half vLLM's");
  assert.notEqual(results["engine-sglang"].p99_ttft_ms, results["engine-vllm"].p99_ttft_ms, "the engines' TTFT p99 differs");
  assert.ok(results["engine-sglang"].sglang_cache_hit_ratio > 0, "SGLang reports sglang_cache_hit_ratio");
  assert.equal(results["engine-vllm"].sglang_cache_hit_ratio, undefined, "vLLM does not");

  // Screenshots: laid out at 1280×800 and 390×844, then captured with the
  // viewport as tall as the document (same width, so the same layout):
  // Chromium paints out-of-process iframes only inside the viewport, so a
  // fullPage capture would show the frames below the fold blank. Each frame
  // is scrolled to its summary first.
  const capture = async (width, height, name) => {
    await page.setViewportSize({ width, height });
    for (const f of page.frames().slice(1)) {
      await f.evaluate(() => { document.scrollingElement.scrollTop = document.querySelector('[data-testid="summary"]').offsetTop - 8; });
    }
    const tall = await page.evaluate(() => document.documentElement.scrollHeight);
    await page.setViewportSize({ width, height: tall });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(700);
    await page.screenshot({ path: path.join(artifacts, name) });
    await page.setViewportSize({ width, height });
  };
  await capture(1280, 800, "embed-demo-1280.png");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  // at 390 px the pairs stack: every frame is as wide as the column
  const widths = await page.locator("iframe").evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width));
  assert.ok(widths.every((w) => w <= 390 && w > 300), `frame widths ${widths}`);
  const left = await page.locator("iframe").evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().left)));
  assert.equal(new Set(left).size, 1, `stacked, not side by side: ${left}`);
  await capture(390, 844, "embed-demo-390.png");

  const problems = [];
  for (const f of page.frames()) problems.push(...await f.evaluate(() => window.__embedProblems || ["no recorder"]));
  assert.equal(page.frames().length, 6, "the host and five simulators");
  assert.deepEqual(problems, [], "no CSP violation or error in any frame");
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(consoleErrors, []);
  await page.close();
});

// The demo is also served by `dynosim serve` itself (same origin, under the
// simulator's own CSP): /embed-demo.html answers and its frames load.
test("dynosim serve serves the demo page", async () => {
  const page = await browser.context.newPage();
  await page.addInitScript(recorder);
  const res = await page.goto(srv.url + "embed-demo.html");
  assert.equal(res.status(), 200);
  assert.equal(await page.locator("iframe").count(), 5);
  const fl = page.frameLocator('iframe[data-demo="kv-pressure"]');
  await fl.locator('[data-testid="run"]').waitFor({ timeout: ACTION_MS });
  assert.match(await fl.locator('[data-testid="config-editor"]').inputValue(), /blocks: 512/);
  const problems = await page.evaluate(() => window.__embedProblems);
  assert.deepEqual(problems, []);
  await page.close();
});
