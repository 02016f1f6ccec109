// Browser test of `timing.kernels: aic` in the page's recommend (issue 33
// item 3): the trials the page farms out to its pool of Web Workers
// (public/dynosim.js recommend, one sim-worker.js per core) each ask for
// the kernel table their GPU and engine need, fetch it lazily from
// kernels/ (the bytes the CLI embeds) and run again (wasm/browser/
// recommend.go predictTrial, kernels.go); the page's recommendation.json is
// then `dynosim recommend`'s, byte for byte.
//
//   DYNOSIM_BIN=bin/dynosim CHROMIUM=/usr/bin/chromium node --test ui/test/kernels-recommend.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, copyFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startPage, stopPage, bin, repo, ACTION_MS } from "./helpers.mjs";

// Four candidates on 300 of the sample's conversation requests, every one
// priced from the H100 vLLM table.
const SEARCH = `traffic:
  source: {type: trace, paths: [conversation_trace.jsonl]}
  stop: {requests: 300}
engine:
  hardware: h100_sxm
  workers:
    aggregated:
      parallelism: {replicas: {choices: [2, 4]}}
      scheduler: {max_batched_tokens: {choices: [4096, 8192]}}
      timing: {type: default, kernels: aic}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 50}}
optimization: {target: goodput_per_gpu}
`;

let server, browser, page;
before(async () => ({ server, browser, page } = await startPage()));
after(() => stopPage({ server, browser }));

test("timing.kernels: aic: the page's recommend trials load the table on every trial worker and give the CLI's recommendation", { timeout: 900_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "dynosim-kernels-rec-"));
  let want, curves;
  try {
    copyFileSync(path.join(repo, "cmd/dynosim/sample.jsonl"), path.join(dir, "conversation_trace.jsonl"));
    writeFileSync(path.join(dir, "recommend.yaml"), SEARCH);
    execFileSync(bin, ["recommend", "-c", path.join(dir, "recommend.yaml"), "--output-dir", path.join(dir, "out"), "--quiet", "--parallel", "1"], { stdio: "pipe" });
    want = readFileSync(path.join(dir, "out", "recommendation.json"), "utf8");
    // The same search on the curves ranks other figures: the tables priced it.
    writeFileSync(path.join(dir, "curves.yaml"), SEARCH.replace("kernels: aic", "kernels: curves"));
    execFileSync(bin, ["recommend", "-c", path.join(dir, "curves.yaml"), "--output-dir", path.join(dir, "curves"), "--quiet", "--parallel", "1"], { stdio: "pipe" });
    curves = readFileSync(path.join(dir, "curves", "recommendation.json"), "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const fetched = [];
  page.on("request", (r) => { if (r.url().includes("/kernels/")) fetched.push(new URL(r.url()).pathname); });
  const trace = readFileSync(path.join(repo, "cmd/dynosim/sample.jsonl"), "utf8");
  page.setDefaultTimeout(ACTION_MS);
  const out = await page.evaluate(async ({ config, trace }) => {
    const n = window.dynosim.poolSize();
    const r = await window.dynosim.recommend({ config, configName: "recommend.yaml", trace: new Blob([trace]), traceName: "conversation_trace.jsonl", workers: n });
    return { n, json: r.json, maxInFlight: r.maxInFlight, errors: r.entries.filter((e) => e.error).map((e) => e.error) };
  }, { config: SEARCH, trace });
  assert.deepEqual(out.errors, [], "a trial failed");
  assert.notEqual(want, curves, "the CLI's search priced the same on the curves");
  assert.equal(out.json, want, "the page's recommendation.json differs from the CLI's");
  // Only the one table the search needs, at most once per trial worker
  // that ran a trial (a worker keeps it for the search's later trials).
  assert.ok(fetched.length >= 1 && fetched.length <= out.n, `fetched ${fetched.join(", ")} on ${out.n} workers`);
  assert.deepEqual([...new Set(fetched)], ["/kernels/h100_sxm-vllm.json.gz"]);
  assert.ok(out.maxInFlight >= 2, "the trials did not overlap");
  assert.deepEqual(page.pageErrors, []);
});
