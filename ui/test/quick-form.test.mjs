// Browser test of the quick form (issue 32 item 6): its fields write the
// YAML the editor shows, read it back when the YAML changes, and the
// result runs; at 1280×800 and 390×844. Headless Debian Chromium via
// playwright-core against `dynosim serve` on a free loopback port;
// screenshots test-artifacts/quick-form-<width>.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { startServer, launch, openPage, artifacts, VIEWPORTS, resizeTo, runConfigured, ACTION_MS } from "./helpers.mjs";

let srv, browser;
before(async () => {
  srv = await startServer();
  browser = await launch();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

const tid = (page, id) => page.locator(`[data-testid="${id}"]`);
const editor = (page) => tid(page, "config-editor").inputValue();

// waitYAML waits until the editor's YAML matches re.
async function waitYAML(page, re) {
  await page.waitForFunction((src) => new RegExp(src).test(document.querySelector('[data-testid="config-editor"]').value), re.source, { timeout: ACTION_MS });
}

// waitField waits until the field shows value.
async function waitField(page, id, value) {
  await page.waitForFunction(([id, v]) => document.querySelector(`[data-testid="${id}"]`)?.value === v, [id, value], { timeout: ACTION_MS });
}

// type enters a value in a field as a person does (then leaves it).
async function type(page, id, value) {
  const f = tid(page, id);
  await f.fill(value);
  await f.press("Tab");
}

for (const vp of VIEWPORTS) {
  test(`quick form: fields → YAML → fields, then Run (${vp.width} px)`, async () => {
    const page = await openPage(browser.context, srv.url);
    await resizeTo(page, vp);
    // the page's default config: 8 workers on the sample trace
    await waitField(page, "quick-replicas", "8");
    assert.equal(await tid(page, "quick-model").inputValue(), "llama-3.1-8b");
    assert.equal(await tid(page, "quick-gpu").inputValue(), "h100_sxm");
    assert.equal(await tid(page, "quick-router").inputValue(), "round_robin");
    assert.equal(await tid(page, "quick-isl").inputValue(), "", "a trace sets the lengths");
    assert.match(await tid(page, "quick-isl").getAttribute("title"), /trace sets/);
    assert.ok(await tid(page, "quick-rate").isDisabled(), "arrivals follow the trace's timestamps");
    assert.equal(await tid(page, "quick-sla-ttft").inputValue(), "500");
    assert.equal(await tid(page, "quick-sla-itl").inputValue(), "50");
    assert.equal(await tid(page, "quick-prefill-replicas").count(), 0);

    // form → YAML
    await tid(page, "quick-model").selectOption("qwen2.5-7b");
    await waitYAML(page, /\n  model: qwen2\.5-7b\n/);
    await tid(page, "quick-gpu").selectOption("h200_sxm");
    await waitYAML(page, /\n  hardware: h200_sxm\n/);
    await type(page, "quick-tensor", "2");
    await waitYAML(page, /parallelism: \{replicas: 8, tensor: 2, attention_data: 1\}/);
    await type(page, "quick-replicas", "2");
    await waitYAML(page, /parallelism: \{replicas: 2, tensor: 2, attention_data: 1\}/);
    await tid(page, "quick-router").selectOption("kv_router");
    await waitYAML(page, /router: \{policy: kv_router\}/);
    // a length on a trace workload makes it synthetic, with Poisson arrivals
    await type(page, "quick-isl", "512");
    await waitYAML(page, /source: \{type: synthetic, .*input_tokens: 512\}/);
    await waitYAML(page, /load: \{type: poisson, .*requests_per_second: 10\}/);
    assert.match(await tid(page, "quick-status").innerText(), /synthetic workload/);
    assert.equal(await tid(page, "sample-select").inputValue(), "", "the sample is no longer replayed");
    assert.match(await tid(page, "trace-label").innerText(), /config's own workload/);
    await waitField(page, "quick-rate", "10");
    await type(page, "quick-osl", "64");
    await waitYAML(page, /output_tokens: 64\}/);
    await type(page, "quick-rate", "20");
    await waitYAML(page, /requests_per_second: 20\}/);
    await type(page, "quick-sla-ttft", "800");
    await waitYAML(page, /sla: \{ttft_ms: 800, itl_ms: 50\}/);
    await type(page, "quick-sla-itl", "");
    await waitYAML(page, /sla: \{ttft_ms: 800\}/);
    let y = await editor(page);
    assert.match(y, /^# DynoSim config/, "the YAML keeps its comments");
    assert.match(y, /# No block_size: the backend's default page/);
    assert.match(y, /scheduler: \{max_batched_tokens: 8192, max_sequences: 256, preemption: lifo, chunked_prefill: true\}/, "and its other keys");
    await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });

    // a refused value says why and leaves the YAML alone
    await type(page, "quick-replicas", "0");
    await page.waitForFunction(() => /whole number ≥ 1/.test(document.querySelector('[data-testid="quick-status"]').textContent), null, { timeout: ACTION_MS });
    assert.equal(await editor(page), y);

    // YAML → form
    y = y.replace("replicas: 2,", "replicas: 3,").replace("input_tokens: 512", "input_tokens: {mean: 300, stddev: 30}")
      .replace("requests_per_second: 20", "requests_per_second: 25").replace("policy: kv_router", "policy: random");
    await tid(page, "config-editor").fill(y);
    await waitField(page, "quick-replicas", "3");
    assert.equal(await tid(page, "quick-status").innerText(), "", "a message about an older YAML goes");
    await waitField(page, "quick-isl", "300");
    await waitField(page, "quick-rate", "25");
    assert.equal(await tid(page, "quick-router").inputValue(), "random");
    assert.match(await tid(page, "quick-isl").getAttribute("title"), /normal distribution: this is its mean/);
    assert.equal(await tid(page, "quick-tensor").inputValue(), "2");

    await page.screenshot({ path: path.join(artifacts, `quick-form-${vp.width}.png`), fullPage: false });
    const { sw, vw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, vw: window.innerWidth }));
    assert.ok(sw <= vw, `page is ${sw}px wide at ${vw}px`);
    for (const id of ["quick-model", "quick-isl", "quick-sla-itl"]) {
      const b = await tid(page, id).boundingBox();
      assert.ok(b && b.x >= 0 && b.x + b.width <= vp.width, `${id} fits the ${vp.width} px viewport: ${JSON.stringify(b)}`);
    }

    // Run: 100 synthetic requests on 3 workers × TP2 of H200
    await runConfigured(page);
    const status = await page.locator(".status").innerText();
    assert.match(status, /100 requests/);
    assert.match(status, /6 × H200/);

    // disaggregated: the prefill and decode counts replace replicas
    await tid(page, "preset-select").selectOption("disaggregated");
    await waitField(page, "quick-prefill-replicas", "2");
    assert.equal(await tid(page, "quick-replicas").count(), 0);
    await type(page, "quick-decode-replicas", "3");
    await waitYAML(page, /decode: \{parallelism: \{replicas: 3\}\}/);
    await waitField(page, "quick-decode-replicas", "3");
    assert.deepEqual(page.pageErrors, []);
    await page.close();
  });
}
