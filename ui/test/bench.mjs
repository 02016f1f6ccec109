// bench.mjs (`make bench-browser`): replays the whole Mooncake conversation
// trace on 8 round-robin workers with the native CLI and in the page
// (headless Chromium, the simulator in a Web Worker), on this machine in the
// same run, and reports both times, their ratio, the wasm sizes (raw and
// gzip) and the page's load time to interactive. A benchmark, not a test:
// it never fails on speed. Results also go to test-artifacts/bench-browser.json.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync, gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, bin, repo, stripWallText } from "./helpers.mjs";

const RUNS = Number(process.env.BENCH_RUNS || 3);
const dir = mkdtempSync(path.join(tmpdir(), "dynosim-bench-"));
let tracePath = [path.join(repo, "../shared/traces/mooncake/conversation_trace.jsonl"), "/work/shared/traces/mooncake/conversation_trace.jsonl"].find(existsSync);
if (!tracePath) {
  tracePath = path.join(dir, "conversation_trace.jsonl");
  writeFileSync(tracePath, gunzipSync(readFileSync(path.join(repo, "public/traces/conversation_trace.jsonl.gz"))));
}
const config = readFileSync(path.join(repo, "internal/defaultconfig/default.yaml"), "utf8"); // 8 round-robin vLLM workers
if (!/replicas: 8/.test(config) || !/policy: round_robin/.test(config)) throw new Error("default.yaml is no longer 8 round-robin workers");
writeFileSync(path.join(dir, "config.yaml"), config);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => (ms / 1000).toFixed(2) + " s";

// native
const native = [];
let nativeJSON = "";
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const r = spawnSync(bin, ["predict", "-c", "config.yaml", "--trace", tracePath, "--format", "json"], { cwd: dir, encoding: "utf8", maxBuffer: 256 << 20 });
  const wall = performance.now() - t0;
  if (r.status !== 0) throw new Error("dynosim predict failed: " + r.stderr);
  nativeJSON = r.stdout;
  native.push({ processMs: wall, simMs: JSON.parse(r.stdout).summary.wall_time_ms });
  console.log(`native run ${i + 1}: process ${fmt(wall)}, simulator ${fmt(native.at(-1).simMs)}`);
}

// page
const srv = await startServer();
const browser = await launch();
const page_ = [];
let load, revisit, pageJSON = "";
try {
  const t0 = performance.now();
  const page = await openPage(browser.context, srv.url);
  const outside = performance.now() - t0;
  load = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const l = window.dynosimLoad;
    return { interactiveMs: l.start + l.interactiveMs, uiRenderedMs: l.start + l.uiMs, domContentLoadedMs: nav ? nav.domContentLoadedEventEnd : null };
  });
  load.fromDriverMs = outside;
  console.log(`page load: interactive ${fmt(load.interactiveMs)} after navigation start (UI rendered ${fmt(load.uiRenderedMs)}; ${fmt(outside)} seen from the driver)`);
  for (let i = 0; i < RUNS; i++) {
    const r = await page.evaluate(async (config) => {
      const trace = await window.dynosim.sample("conversation");
      const res = await window.dynosim.runRaw({ config, trace, traceName: "conversation_trace.jsonl" }, () => {});
      return { wallMs: res.wallMs, simMs: res.report.summary.wall_time_ms, json: res.json };
    }, config);
    pageJSON = r.json;
    page_.push({ runMs: r.wallMs, simMs: r.simMs });
    console.log(`page run ${i + 1}: run ${fmt(r.wallMs)} (postMessage, read, simulate, JSON), simulator ${fmt(r.simMs)}`);
  }
  // A returning visitor: the browser revalidates the site (ETags) and may
  // reuse the machine code it cached for dynosim.wasm, so the first run
  // need not start on baseline code.
  await page.close();
  const t1 = performance.now();
  const again = await openPage(browser.context, srv.url);
  revisit = { loadFromDriverMs: performance.now() - t1 };
  const r = await again.evaluate(async (config) => {
    const trace = await window.dynosim.sample("conversation");
    const res = await window.dynosim.runRaw({ config, trace, traceName: "conversation_trace.jsonl" }, () => {});
    return { wallMs: res.wallMs };
  }, config);
  revisit.firstRunMs = r.wallMs;
  console.log(`revisit: page ready ${fmt(revisit.loadFromDriverMs)} seen from the driver, first run ${fmt(r.wallMs)}`);
} finally {
  await browser.close();
  await srv.stop();
}

const same = stripWallText(pageJSON) === stripWallText(nativeJSON);
const wasm = {};
for (const f of ["dynosim.wasm", "ui.wasm"]) {
  const b = readFileSync(path.join(repo, "public", f));
  wasm[f] = { raw: b.length, gzip: gzipSync(b, { level: 9 }).length };
}
const nat = median(native.map((r) => r.processMs));
const pg = median(page_.map((r) => r.runMs));
const out = {
  trace: path.basename(tracePath), requests: JSON.parse(nativeJSON).summary.num_requests, runs: RUNS,
  native_ms_median: nat, native_sim_ms_median: median(native.map((r) => r.simMs)),
  page_ms_median: pg, page_sim_ms_median: median(page_.map((r) => r.simMs)),
  page_first_run_ms: page_[0].runMs, revisit,
  ratio_page_over_native: pg / nat,
  ratio_sim_only: median(page_.map((r) => r.simMs)) / median(native.map((r) => r.simMs)),
  reports_identical: same, wasm, load, native, page: page_,
};
writeFileSync(path.join(artifacts, "bench-browser.json"), JSON.stringify(out, null, 2) + "\n");
const kb = (n) => (n / 1024 / 1024).toFixed(2) + " MiB";
console.log(`
conversation trace (${out.requests} requests), 8 round-robin workers, median of ${RUNS}:
  native CLI (whole process)      ${fmt(nat)}   (simulator alone ${fmt(out.native_sim_ms_median)})
  page, headless Chromium (run)   ${fmt(pg)}   (simulator alone ${fmt(out.page_sim_ms_median)}; first run ${fmt(out.page_first_run_ms)})
  ratio page / native             ${out.ratio_page_over_native.toFixed(2)}×   (simulator alone ${out.ratio_sim_only.toFixed(2)}×; target ≤ 2×)
  reports identical (wall-clock fields aside): ${same}
  dynosim.wasm ${kb(wasm["dynosim.wasm"].raw)} raw, ${kb(wasm["dynosim.wasm"].gzip)} gzip (limit 2 MB); ui.wasm ${kb(wasm["ui.wasm"].raw)} raw, ${kb(wasm["ui.wasm"].gzip)} gzip
  page load to interactive        ${fmt(load.interactiveMs)}
  revisit (cached site)           first run ${fmt(revisit.firstRunMs)}, page ready ${fmt(revisit.loadFromDriverMs)}`);
