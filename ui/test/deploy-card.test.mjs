// Issue 32 item 7, recommend on the page: a default-space search shows the
// Deploy card (the CLI's "Deploy:" label, its figures with units, the SLA
// flag) whose launch.sh and dgd.yaml are the bytes `dynosim recommend
// --output-dir` writes; the ledger sorts by rank with labels; and "Search
// deployments for this workload" starts a default-space search from a
// predict run. At 1280 px and at a 390 px phone.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, copyFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startPage, stopPage, launch, artifacts, bin, repo, ACTION_MS, VIEWPORTS, resizeTo, runConfigured } from "./helpers.mjs";

let server, browser, page;
before(async () => ({ server, browser, page } = await startPage()));
after(() => stopPage({ server, browser }));

// A default-space search kept small: 200 requests of the page's default
// sample, a 2-GPU budget (11 candidates: TP1 and TP2, aggregated and
// disaggregated).
const recYAML = `traffic:
  source: {type: trace, format: mooncake, paths: [conversation_trace.jsonl], block_size: 512}
  load: {type: trace_timestamps, speedup: 1.0}
  stop: {requests: 200}
engine: {backend: vllm, model: llama-3.1-8b, hardware: h100_sxm}
evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}
optimization: {constraints: {max_candidate_gpus: 2}}
`;

// cli runs `dynosim recommend --output-dir` on yaml beside the CLI's
// sample (the page's default trace) and returns its console, its
// recommendation.json and a reader of its output files.
function cli(yaml) {
  const dir = mkdtempSync(path.join(tmpdir(), "dynosim-deploy-"));
  copyFileSync(path.join(repo, "cmd/dynosim/sample.jsonl"), path.join(dir, "conversation_trace.jsonl"));
  writeFileSync(path.join(dir, "recommend.yaml"), yaml);
  let out;
  try {
    out = execFileSync(bin, ["recommend", "-c", path.join(dir, "recommend.yaml"), "--output-dir", path.join(dir, "out")], { stdio: "pipe" }).toString();
  } catch (e) {
    if (e.status !== 1) throw e; // 1: nothing feasible, the outputs are written
    out = e.stdout.toString();
  }
  const file = (p) => readFileSync(path.join(dir, "out", p), "utf8");
  return { out, ledger: JSON.parse(file("recommendation.json")), file, done: () => rmSync(dir, { recursive: true, force: true }) };
}

const noSidewaysScroll = async () => {
  const { sw, vw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, vw: window.innerWidth }));
  assert.ok(sw <= vw, `scrollWidth ${sw} > ${vw}`);
};

test("deploy card: the best deployment, its figures, and the CLI's deploy files", async () => {
  const ref = cli(recYAML);
  try {
    const cliLabel = ref.out.match(/^Deploy: (.+?) — /m)[1];
    const best = ref.ledger.best;
    const dir = `deploy/${String(ref.ledger.views.top_n.indexOf(best.candidate_id) + 1).padStart(4, "0")}`;
    assert.ok(ref.ledger.views.top_n.includes(best.candidate_id), "the best is among the CLI's deploy/NNNN");

    for (const vp of VIEWPORTS) {
      await resizeTo(page, vp);
      const t0 = Date.now();
      await page.getByTestId("recommend-view").scrollIntoViewIfNeeded();
      await page.getByTestId("rec-editor").fill(recYAML);
      await page.evaluate(() => { window.__oldResult = window.dynosimRecommendView.result; });
      await page.getByTestId("rec-run").click();
      await page.waitForFunction(() => window.dynosimRecommendView.result && window.dynosimRecommendView.result !== window.__oldResult &&
        /^Done/.test(document.querySelector('[data-testid="rec-status"]').textContent), null, { timeout: ACTION_MS });
      const card = page.getByTestId("deploy-card");
      await card.waitFor();
      console.log(`# ${vp.width} px: search of ${ref.ledger.candidates.length} candidates in ${Date.now() - t0} ms`);

      // the CLI's Deploy line, its SLA flag and figures with units
      assert.equal(await page.getByTestId("deploy-label").textContent(), cliLabel);
      assert.equal(await card.getAttribute("data-candidate"), best.candidate_id);
      assert.equal(await card.getAttribute("data-meets-sla"), String(best.meets_sla));
      assert.match(await page.getByTestId("deploy-flag").textContent(), best.meets_sla ? /^Meets the SLA/ : /^Does NOT meet the SLA.*closest/);
      assert.match(await page.getByTestId("deploy-ttft").textContent(), /^p99 TTFT[\d,.]+ ms/);
      assert.match(await page.getByTestId("deploy-itl").textContent(), /^p99 ITL[\d,.]+ ms/);
      assert.match(await page.getByTestId("deploy-within").textContent(), /^Within SLA[\d.]+ % of requests$/);
      assert.equal(await page.getByTestId("deploy-gpus").textContent(), "GPUs" + best.headline.gpus);
      // the page's recommendation is the CLI's
      assert.deepEqual(await page.evaluate(() => window.dynosimRecommendView.result.ledger.best), best);

      // the ledger: sorted by rank, labels not YAML, meets_sla marked
      const rows = await page.$$eval('[data-testid="ledger"] tbody tr', (trs) => trs.map((tr) => ({
        id: tr.dataset.candidate, rank: tr.querySelector('td[data-label="rank"]').textContent,
        label: tr.querySelector("td.deployment span.label").textContent,
        sla: tr.querySelector('td[data-label="SLA"]').textContent, meets: tr.classList.contains("meets-sla"),
      })));
      assert.deepEqual(rows.map((r) => r.id), ref.ledger.candidates.map((e) => e.candidate_id), "rank order, as the CLI's ledger");
      rows.forEach((r, i) => {
        const e = ref.ledger.candidates[i];
        assert.equal(r.rank, e.rank ? String(e.rank) : "");
        assert.equal(r.label, e.label);
        assert.doesNotMatch(r.label, /[{}:]/);
        assert.equal(r.sla, e.status === "feasible" ? (e.meets_sla ? "yes" : "no") : "");
        assert.equal(r.meets, e.status === "feasible" && e.meets_sla);
      });

      // the deploy files: the CLI's deploy/NNNN bytes, naming the parallelism
      const [dl] = await Promise.all([page.waitForEvent("download"), page.getByTestId("deploy-launch").click()]);
      assert.equal(dl.suggestedFilename(), "launch.sh");
      const launch = readFileSync(await dl.path(), "utf8");
      const tp = cliLabel.match(/TP(\d+)/)[1];
      assert.match(launch, new RegExp(`--tensor-parallel-size ${tp}\\b`));
      assert.match(launch, cliLabel.startsWith("aggregated") ? /vllm serve/ : /dynamo\.vllm/);
      assert.equal(launch, ref.file(`${dir}/launch.sh`));
      const [dg] = await Promise.all([page.waitForEvent("download"), page.getByTestId("deploy-dgd").click()]);
      assert.equal(dg.suggestedFilename(), "dgd.yaml");
      assert.equal(readFileSync(await dg.path(), "utf8"), ref.file(`${dir}/dgd.yaml`));
      assert.match(await page.getByTestId("deploy-files-note").textContent(), new RegExp(dir));

      await card.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(artifacts, `deploy-card-${vp.width}.png`) });
      await page.getByTestId("ledger").screenshot({ path: path.join(artifacts, `deploy-ledger-${vp.width}.png`) });
      const box = await page.getByTestId("deploy-dgd").boundingBox();
      assert.ok(box.x + box.width <= vp.width, "the download buttons fit the width");
      await noSidewaysScroll();
    }
  } finally {
    ref.done();
  }
  assert.deepEqual(page.pageErrors, []);
});

test("search deployments for this workload: a default-space search from the predict view", async () => {
  await resizeTo(page, VIEWPORTS[0]);
  const editor = page.getByTestId("config-editor");
  const predict = (await editor.inputValue()).replace("  load: {type: trace_timestamps, speedup: 1.0}\n",
    "  load: {type: trace_timestamps, speedup: 1.0}\n  stop: {requests: 200}\n");
  assert.match(predict, /stop: \{requests: 200\}/);
  await editor.fill(predict);
  await runConfigured(page);

  for (const vp of VIEWPORTS) {
    await resizeTo(page, vp);
    const button = page.getByTestId("search-deployments");
    await button.scrollIntoViewIfNeeded();
    await page.evaluate(() => { window.__oldEntries = window.dynosimRecommendView.entries; });
    await button.click();
    await page.waitForFunction(() => /^Searching deployments for this workload within 8 GPUs/.test(document.querySelector('[data-testid="rec-status"]').textContent), null, { timeout: ACTION_MS });
    const y = await page.getByTestId("rec-editor").inputValue();
    assert.match(y, /max_candidate_gpus: 8/);
    assert.match(y, /model: llama-3\.1-8b/);
    assert.match(y, /hardware: h100_sxm/);
    assert.match(y, /sla: \{ttft_ms: 500, itl_ms: 50\}/);
    assert.match(y, /stop: \{requests: 200\}/);
    assert.doesNotMatch(y, /choices|range:|replicas|policy|mode:/);
    // the view is in sight, the search running (an exhaustive search
    // places its ledger entries when its one batch ends)
    const top = await page.getByTestId("recommend-view").evaluate((el) => el.getBoundingClientRect().top);
    assert.ok(top > -5 && top < vp.height / 2, `the recommend view's top at ${top}`);
    assert.equal(await page.getByTestId("rec-cancel").isEnabled(), true);
    assert.equal(await page.getByTestId("rec-run").isEnabled(), false);
    assert.equal(await page.evaluate(() => window.dynosimRecommendView.entries !== window.__oldEntries && window.dynosimRecommendView.result === null), true);
    await page.screenshot({ path: path.join(artifacts, `search-deployments-${vp.width}.png`) });
    await noSidewaysScroll();
    await page.getByTestId("rec-cancel").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="rec-status"]').textContent === "Canceled.", null, { timeout: ACTION_MS });
  }
  assert.deepEqual(page.pageErrors, []);
});
