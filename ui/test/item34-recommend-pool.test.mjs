// Issue 34 item 3 (must show): the page's recommend on the 16-candidate
// search of docs/recommend.md (the CLI's sample, 1,000 conversation
// requests; replicas 2/4/6/8 × max_batched_tokens 4096/8192 × round_robin
// / kv_router), timed in Chromium on 1 trial Web Worker and on all of them
// (dynosim.poolSize(): navigator.hardwareConcurrency, 2–8), interleaved;
// every run's recommendation.json is the CLI's, byte for byte.
//
//   RUNS=8 DYNOSIM_BIN=bin/dynosim CHROMIUM=/usr/bin/chromium node --test ui/test/item34-recommend-pool.test.mjs
//
// SEARCH=default runs issue 34 item 5's search instead: the default space
// (no domains) for Llama-3.1-8B on H100 within 8 GPUs, 36 candidates, on
// the same 1,000 requests.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, copyFileSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { startPage, stopPage, artifacts, bin, repo, ACTION_MS } from "./helpers.mjs";

const SEARCH16 = `traffic:
  source: {type: trace, paths: [conversation_trace.jsonl]}
engine:
  workers:
    aggregated:
      parallelism: {replicas: {choices: [2, 4, 6, 8]}}
      scheduler: {max_batched_tokens: {choices: [4096, 8192]}}
      timing: {type: polynomial}
router: {policy: {choices: [round_robin, kv_router]}}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 50}}
optimization: {target: goodput_per_gpu}
`;

// DEFAULT_SPACE is "Search deployments" on the default config: no domain,
// so recommend searches its default space (core/recommend/default_space.go).
const DEFAULT_SPACE = `traffic:
  source: {type: trace, format: mooncake, paths: [conversation_trace.jsonl], block_size: 512}
  load: {type: trace_timestamps, speedup: 1.0}
engine:
  backend: vllm
  model: llama-3.1-8b
  hardware: h100_sxm
evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}
execution: {seed: 42}
optimization: {constraints: {max_candidate_gpus: 8}}
`;
const DEFAULT = process.env.SEARCH === "default";
const SEARCH = DEFAULT ? DEFAULT_SPACE : SEARCH16;
const LABEL = DEFAULT ? "default space (36 candidates)" : "16 candidates";

// RUNS interleaved pairs (1 worker, all workers) after the warm-up. In
// `make test` one pair: the warm-up's ledger is checked too, so the
// all-workers search, the one whose trials race, is checked twice, as with
// two pairs before; only the 1-worker search (its trials one after another)
// runs once fewer. The timing ratio is a measurement (RUNS=8 for the docs).
const RUNS = Number(process.env.RUNS || 1);
let server, browser, page;
before(async () => ({ server, browser, page } = await startPage()));
after(() => stopPage({ server, browser }));

const median = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

test(`issue 34 items 3 and 5: the page's recommend (${LABEL}) on 1 and on all Web Workers, the CLI's ledger`, { timeout: 3600_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "dynosim-rec16-"));
  let want;
  try {
    copyFileSync(path.join(repo, "cmd/dynosim/sample.jsonl"), path.join(dir, "conversation_trace.jsonl"));
    writeFileSync(path.join(dir, "recommend.yaml"), SEARCH);
    execFileSync(bin, ["recommend", "-c", path.join(dir, "recommend.yaml"), "--output-dir", path.join(dir, "out"), "--quiet", "--parallel", "1"], { stdio: "pipe" });
    want = readFileSync(path.join(dir, "out", "recommendation.json"), "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const trace = readFileSync(path.join(repo, "cmd/dynosim/sample.jsonl"), "utf8");
  page.setDefaultTimeout(ACTION_MS);
  const out = await page.evaluate(async ({ config, trace, runs }) => {
    const opts = (n) => ({ config, configName: "recommend.yaml", trace: new Blob([trace]), traceName: "conversation_trace.jsonl", workers: n });
    const n = window.dynosim.poolSize();
    const warm = await window.dynosim.recommend(opts(n)); // warm every worker (its wasm tiers up)
    const t = { n, hw: navigator.hardwareConcurrency, one: [], all: [], json: new Set([warm.json]), inflight: [warm.maxInFlight] };
    for (let i = 0; i < runs; i++) {
      for (const k of i % 2 ? [n, 1] : [1, n]) {
        const r = await window.dynosim.recommend(opts(k));
        (k === 1 ? t.one : t.all).push(r.wallMs);
        t.json.add(r.json);
        if (k === n) t.inflight.push(r.maxInFlight);
      }
    }
    return { ...t, json: [...t.json] };
  }, { config: SEARCH, trace, runs: RUNS });
  const line = `page recommend, ${LABEL}: 1 worker median ${median(out.one).toFixed(0)} ms, ${out.n} workers (hardwareConcurrency ${out.hw}) median ${median(out.all).toFixed(0)} ms ` +
    `(ratio ${(median(out.all) / median(out.one)).toFixed(2)}), ${RUNS} interleaved pairs, load ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`;
  console.log(line);
  writeFileSync(path.join(artifacts, DEFAULT ? "item34-recommend-default.json" : "item34-recommend-pool.json"), JSON.stringify({ ...out, json: undefined, line }, null, 2));
  assert.equal(out.json.length, 1, "the ledger depends on the number of Web Workers");
  assert.equal(out.json[0], want, "the page's recommendation.json differs from the CLI's");
  assert.ok(out.n >= 2 && Math.max(...out.inflight) >= 2, "the trials did not overlap");
});
