// Browser test of `timing.kernels: aic` in the page (issue 33 item 3): the
// run asks for the one kernel table its GPU and engine need, the simulator's
// Web Worker fetches it lazily from kernels/ (public/sim-worker.js,
// wasm/browser/kernels.go; the wasm carries no table), and the report is the
// CLI's on the same trace (the CLI embeds the same files), wall-clock
// fields aside. A GPU AIC did not measure is refused naming the key.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startServer, launch, openPage, runConfigured, stripWall, bin, repo, ACTION_MS } from "./helpers.mjs";

const YAML = (hardware) => `engine:
  hardware: ${hardware}
  workers:
    aggregated:
      timing: {type: default, kernels: aic}
`;

let srv, browser, tmp;
const tid = (page, id) => page.locator(`[data-testid="${id}"]`);

before(async () => {
  srv = await startServer();
  browser = await launch();
  tmp = mkdtempSync(path.join(tmpdir(), "dynosim-kernels-"));
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// cli runs `dynosim predict` on the page's default trace with yaml,
// keeping the per-request records as the page does.
function cli(yaml) {
  const file = path.join(tmp, "k.yaml");
  writeFileSync(file, yaml);
  const r = spawnSync(bin, ["predict", "-c", file, "--trace", path.join(repo, "cmd/dynosim/sample.jsonl"), "--format", "json",
    "--capture-per-request", "--output-dir", path.join(tmp, "out")],
    { encoding: "utf8", maxBuffer: 64 << 20, timeout: ACTION_MS });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test("timing.kernels: aic: the page fetches one table lazily and reports what the CLI does", async () => {
  const page = await openPage(browser.context, srv.url);
  const fetched = [];
  page.on("request", (r) => { if (r.url().includes("/kernels/")) fetched.push(new URL(r.url()).pathname); });
  assert.deepEqual(fetched, [], "no table is fetched before a run asks for one");
  await tid(page, "config-editor").fill(YAML("h100_sxm"));
  await runConfigured(page);
  const rep = await page.evaluate(() => window.dynosimCharts.runs[0].report);
  assert.deepEqual(fetched, ["/kernels/h100_sxm-vllm.json.gz"]);
  assert.equal(rep.deployment.pools[0].timing_kernels, "aic vllm 0.24.0 h100_sxm");
  const want = stripWall(cli(YAML("h100_sxm")));
  assert.deepEqual(stripWall(rep), want);
  // The timing badge names the table.
  await page.waitForFunction(() => document.body.textContent.includes("default timing (aic vllm 0.24.0 h100_sxm)"), null, { timeout: ACTION_MS });
  assert.deepEqual(page.pageErrors, []);
  await page.close();
});

test("timing.kernels: aic on a GPU AIC did not measure is refused naming the key", async () => {
  const page = await openPage(browser.context, srv.url);
  await tid(page, "config-editor").fill(YAML("rtx_4090"));
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });
  await tid(page, "run").click();
  await page.waitForFunction(() => /timing\.kernels: aic: AIConfigurator measured no kernels of rtx_4090/.test(document.body.textContent), null, { timeout: ACTION_MS });
  await page.close();
});
