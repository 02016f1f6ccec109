// whole-trace.test.mjs (issue 32 item 8, "Big runs stay fast in the page"):
// the whole Mooncake conversation trace (the "conversation" sample, 12,031
// requests) run in the page and, on the same machine, with the CLI
// (`dynosim predict --trace conversation_trace.jsonl`, the same default
// config; twice before the page's run and once after, median). The wall
// times are recorded in test-artifacts/whole-trace.json (page load, Run →
// headline figures, Run → per-request table, CLI) for docs/web.md's "Big
// traces" table, not asserted: a deadline is a test a busy machine fails.
// What is asserted is the page's order of work, which makes the figures
// come first: the status names the replay's progress, then "Building the
// report…"; the headline figures are in the page before the per-request
// table (built after the results are painted, ui/runs.go deferRequests).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { startServer, launch, openPage, artifacts, bin, repo, ACTION_MS } from "./helpers.mjs";

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

test("the whole conversation trace: progress, then the report phase, then the headline figures before the per-request table; wall times recorded", { timeout: 15 * 60_000 }, async () => {
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
    // and when the headline figures and the per-request table first appear
    await page.evaluate(() => {
      window.statuses = [];
      window.firstSeen = {};
      const s = document.querySelector(".status > span:first-child");
      new MutationObserver(() => window.statuses.push([performance.now() - window.clicked, s.textContent]))
        .observe(s, { subtree: true, childList: true, characterData: true });
      new MutationObserver(() => {
        for (const id of ["kpis", "requests"]) {
          if (!(id in window.firstSeen) && document.querySelector(`[data-testid="${id}"]`)) window.firstSeen[id] = performance.now() - window.clicked;
        }
      }).observe(document.body, { subtree: true, childList: true });
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
    const firstSeen = await page.evaluate(() => window.firstSeen);
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
      requests: 12031, ratio_target: 3,
      cli_wall_ms: native.map((r) => Math.round(r.wallMs)), cli_sim_ms: native.map((r) => Math.round(r.simMs)), cli_median_ms: Math.round(cliMs),
      page_load_ms: Math.round(loadMs), page_run_to_kpis_ms: Math.round(runMs), page_run_to_request_table_ms: Math.round(tableMs),
      page_replay_done_ms: reportPhase ? Math.round(reportPhase[0]) : null,
      page_ms: Math.round(pageMs), ratio: +(pageMs / cliMs).toFixed(2), ratio_run_only: +(runMs / cliMs).toFixed(2),
    };
    writeFileSync(path.join(artifacts, "whole-trace.json"), JSON.stringify(out, null, 2) + "\n");
    console.log(JSON.stringify(out));
    assert.ok(reportPhase, "the status says the report is being built: " + JSON.stringify(statuses.slice(-3)));
    const replayAt = statuses.findIndex(([, t]) => /^Simulating… \d+ % \(/.test(t));
    assert.ok(replayAt < statuses.indexOf(reportPhase), "the replay's progress comes before the report phase");
    assert.ok(firstSeen.kpis >= reportPhase[0], "the headline figures come after the replay has ended");
    assert.ok(firstSeen.requests > firstSeen.kpis, `the headline figures (${Math.round(firstSeen.kpis)} ms) are in the page before the per-request table (${Math.round(firstSeen.requests)} ms)`);
  } finally {
    await browser.close();
    await srv.stop();
  }
});
