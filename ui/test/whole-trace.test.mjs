// whole-trace.test.mjs (issue 32 item 8, "Big runs stay fast in the page"):
// the whole Mooncake conversation trace (the "conversation" sample, 12,031
// requests) must reach its results in the page within 3× the CLI's wall
// time on the same machine, plus a fixed allowance for loading the page's
// WebAssembly.
//
// The CLI (`dynosim predict --trace conversation_trace.jsonl`, the same
// default config the page starts with) runs twice right before the page's
// run and once right after it, so all see the machine under the same load;
// its median is the reference. The page's time is what a user waits: from
// navigation (fetching and compiling ui.wasm and dynosim.wasm, starting the
// worker) to interactive, plus from the Run click to the headline figures
// (data-testid="kpis") of this run. ALLOWANCE_MS (10 s) stands for loading
// the two wasm modules (1–2.7 s on this 2-core VM) and V8 compiling the
// simulator's hot functions during the first run (~1.3 s), and it absorbs
// what 3× cannot: the simulation in wasm itself runs about 4× slower than
// native Go (docs/web.md, "Big traces"). The issue measured 26 s in the page
// against the CLI's 2 s (13×): 26 s > 3 × 2 s + 10 s, so the assertion
// fails there. A second bound needs no CLI: from the end of the replay
// (the status "Building the report…") to the headline figures, the page
// takes at most POST_MS (it took 3–5 s on a busy machine when it parsed
// the 7 MB of per-request records first; 0.4–1 s now).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, bin, repo, ACTION_MS } from "./helpers.mjs";

const RATIO = 3;
const ALLOWANCE_MS = 10_000;
const POST_MS = 2_500;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// cli runs the native CLI on the trace and returns its wall time (ms) and
// the simulator's own wall_time_ms.
function cli(dir, trace) {
  const t0 = performance.now();
  const r = spawnSync(bin, ["predict", "--trace", trace, "--format", "json"], { cwd: dir, encoding: "utf8", maxBuffer: 64 << 20 });
  const wallMs = performance.now() - t0;
  assert.equal(r.status, 0, "dynosim predict failed: " + r.stderr);
  const rep = JSON.parse(r.stdout);
  assert.equal(rep.summary.num_requests, 12031);
  return { wallMs, simMs: rep.summary.wall_time_ms };
}

test("the whole conversation trace reaches its results within 3× the CLI's wall time (plus the wasm load)", { timeout: 15 * 60_000 }, async () => {
  // The page's "conversation" sample is public/traces/conversation_trace.jsonl.gz,
  // decompressed in the page; the CLI reads the same bytes from a file.
  const dir = mkdtempSync(path.join(tmpdir(), "dynosim-whole-"));
  const trace = path.join(dir, "conversation_trace.jsonl");
  writeFileSync(trace, gunzipSync(readFileSync(path.join(repo, "public/traces/conversation_trace.jsonl.gz"))));

  const srv = await startServer();
  const browser = await launch();
  try {
    const native = [cli(dir, trace), cli(dir, trace)];
    const t0 = performance.now();
    const page = await openPage(browser.context, srv.url);
    const loadMs = performance.now() - t0;

    await page.selectOption('[data-testid="sample-select"]', "conversation");
    await page.waitForFunction(() => /sample: conversation$/.test(document.querySelector('[data-testid="trace-label"]').textContent) &&
      document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });
    // every status the run shows, with its time since the click
    await page.evaluate(() => {
      window.statuses = [];
      const s = document.querySelector(".status > span:first-child");
      new MutationObserver(() => window.statuses.push([performance.now() - window.clicked, s.textContent]))
        .observe(s, { subtree: true, childList: true, characterData: true });
    });
    const t1 = performance.now();
    await page.evaluate(() => { window.clicked = performance.now(); document.querySelector('[data-testid="run"]').click(); });
    await page.waitForFunction(() => /^Done/.test(document.querySelector(".status").textContent) &&
      document.querySelector('[data-testid="kpis"]')?.offsetParent !== null, null, { timeout: ACTION_MS, polling: 50 });
    const runMs = performance.now() - t1;
    // the per-request table comes after the headline figures
    await page.locator('[data-testid="requests"]').waitFor({ state: "attached", timeout: ACTION_MS });
    const tableMs = performance.now() - t1;
    const statuses = await page.evaluate(() => window.statuses);
    native.push(cli(dir, trace));

    const kpis = await page.locator('[data-testid="kpis"]').textContent();
    const status = await page.locator(".status").textContent();
    assert.match(status, /^Done: 12,031 requests/);
    assert.ok(kpis.length > 0);
    assert.ok(statuses.some(([, s]) => /^Simulating… \d+ % \(/.test(s)), "the status says the replay runs and how far: " + JSON.stringify(statuses.slice(0, 3)));
    assert.deepEqual(page.pageErrors, []);

    const cliMs = median(native.map((r) => r.wallMs));
    const pageMs = loadMs + runMs;
    const reportPhase = statuses.find(([, s]) => s === "Building the report…");
    const out = {
      requests: 12031, ratio_target: RATIO, allowance_ms: ALLOWANCE_MS,
      cli_wall_ms: native.map((r) => Math.round(r.wallMs)), cli_sim_ms: native.map((r) => Math.round(r.simMs)), cli_median_ms: Math.round(cliMs),
      page_load_ms: Math.round(loadMs), page_run_to_kpis_ms: Math.round(runMs), page_run_to_request_table_ms: Math.round(tableMs),
      page_replay_done_ms: reportPhase ? Math.round(reportPhase[0]) : null, post_ms_limit: POST_MS,
      page_ms: Math.round(pageMs), ratio: +(pageMs / cliMs).toFixed(2), ratio_run_only: +(runMs / cliMs).toFixed(2),
      limit_ms: Math.round(RATIO * cliMs + ALLOWANCE_MS),
    };
    writeFileSync(path.join(artifacts, "whole-trace.json"), JSON.stringify(out, null, 2) + "\n");
    console.log(JSON.stringify(out));
    assert.ok(reportPhase, "the status says the report is being built: " + JSON.stringify(statuses.slice(-3)));
    assert.ok(runMs - reportPhase[0] <= POST_MS, `${Math.round(runMs - reportPhase[0])} ms from the replay's end to the headline figures`);
    assert.ok(pageMs <= RATIO * cliMs + ALLOWANCE_MS,
      `page ${(pageMs / 1000).toFixed(1)} s (load ${(loadMs / 1000).toFixed(1)} s + run ${(runMs / 1000).toFixed(1)} s) > ${RATIO} × CLI ${(cliMs / 1000).toFixed(1)} s + ${ALLOWANCE_MS / 1000} s`);
  } finally {
    await browser.close();
    await srv.stop();
  }
});
