// `dynosim recommend --remote URL` fans a search out over a real local
// workerd (Miniflare's API on 127.0.0.1, configured from
// build/wrangler.jsonc as worker.test.mjs does): every trial is one
// POST /v1/predict, run concurrently, and the ledger is the one the same
// search writes locally, byte for byte (the reasons of infeasible
// candidates included: the Worker names them in X-Dynosim-Reason).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliBinary, root, startWorkerd } from './workerd.mjs';

let tmp, base, mf, cli, second;

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dynosim-worker-recommend-'));
  cli = cliBinary(tmp);
  const lines = readFileSync(path.join(root, 'wasm/worker/testdata/conversation_1000.jsonl'), 'utf8').split('\n').filter(Boolean);
  writeFileSync(path.join(tmp, 'trace.jsonl'), lines.slice(0, 150).join('\n') + '\n');
  // 12 candidates: two over the GPU budget, 70B on one GPU does not fit
  // (kv_capacity), the rest run.
  writeFileSync(path.join(tmp, 'rec.yaml'), `
traffic:
  source: {type: trace, paths: [trace.jsonl]}
  load: {speedup: 3}
engine:
  model: {choices: [llama-3.1-8b, llama-3.1-70b]}
  workers:
    aggregated: {parallelism: {replicas: {choices: [1, 2, 4]}, tensor: {choices: [1, 2]}}}
router: {policy: round_robin}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 50}}
optimization: {target: throughput_per_gpu, constraints: {max_candidate_gpus: 4}}
`);
  ({ url: base, mf } = await startWorkerd(path.join(tmp, 'state')));
});

after(async () => {
  if (mf) await mf.dispose();
  if (second) await second.mf.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function recommend(...args) {
  const r = spawnSync(cli, ['recommend', '-c', 'rec.yaml', '--quiet', ...args], { cwd: tmp, encoding: 'utf8', timeout: 300000 });
  assert.equal(r.status, 0, r.stderr);
  return r;
}

test('recommend --remote over a local workerd writes the local ledger', async () => {
  recommend('--output-dir', 'local', '--parallel', '2');
  const t0 = performance.now();
  recommend('--output-dir', 'remote', '--parallel', '4', '--remote', base);
  console.log(`12 trials over the Worker, 4 at a time: ${(performance.now() - t0).toFixed(0)} ms`);
  const local = readFileSync(path.join(tmp, 'local/recommendation.json'), 'utf8');
  const remote = readFileSync(path.join(tmp, 'remote/recommendation.json'), 'utf8');
  assert.equal(remote, local, 'the remote ledger differs from the local one');
  const l = JSON.parse(local);
  const reasons = l.candidates.map((c) => c.reason_category || c.status);
  assert.ok(reasons.includes('kv_capacity') && reasons.includes('gpu_budget') && reasons.includes('feasible'), reasons.join(' '));
  assert.equal(readFileSync(path.join(tmp, 'remote/recommendation.csv'), 'utf8'), readFileSync(path.join(tmp, 'local/recommendation.csv'), 'utf8'));
});

// Issue 34 item 4 (must show): --parallel 1 and --parallel 4, locally and
// over two Worker URLs (two workerd instances; --remote repeated, then
// comma-separated), write byte-identical recommendation.json.
test('recommend over two Worker URLs writes the local ledger at --parallel 1 and 4', async () => {
  second = await startWorkerd(path.join(tmp, 'state2'));
  const runs = [
    ['local1', '--parallel', '1'],
    ['local4', '--parallel', '4'],
    ['two1', '--parallel', '1', '--remote', base, '--remote', second.url],
    ['two4', '--parallel', '4', '--remote', `${base},${second.url}`],
  ];
  for (const [dir, ...args] of runs) {
    const t0 = performance.now();
    recommend('--output-dir', dir, ...args);
    console.log(`${dir}: ${(performance.now() - t0).toFixed(0)} ms`);
  }
  const want = readFileSync(path.join(tmp, 'local1/recommendation.json'), 'utf8');
  for (const [dir] of runs.slice(1)) {
    assert.equal(readFileSync(path.join(tmp, dir, 'recommendation.json'), 'utf8'), want, `${dir}: recommendation.json differs from local --parallel 1`);
  }
});
