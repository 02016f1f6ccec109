// The Worker under timing.kernels: aic (issue 33 item 3): the Go handler
// fetches the run's kernel table from the static-assets binding (the tables
// stay out of app.wasm's upload budget; wasm/worker/kernels_js.go) and its
// report equals the CLI's, which embeds the same files, wall clock aside.
// A GPU AIC did not measure is refused naming the key, as in the CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, setGlobalDispatcher } from 'undici';
import { cliBinary, root, startWorkerd } from './workerd.mjs';
import { keys } from '../../../ui/test/reportkeys.mjs';

setGlobalDispatcher(new Agent({ pipelining: 0 })); // fresh connections (worker.test.mjs says why)

const AIC = readFileSync(path.join(root, 'internal/defaultconfig/default.yaml'), 'utf8')
  .replace('timing: {type: default, speedup: 1.0, decode_speedup: 1.0}', 'timing: {type: default, speedup: 1.0, decode_speedup: 1.0, kernels: aic}');
const trace = readFileSync(path.join(root, 'wasm/worker/testdata/conversation_1000.jsonl'), 'utf8')
  .split('\n').filter(Boolean).slice(0, 200).join('\n') + '\n';

let tmp, base, mf, cli;

before(async () => {
  assert.match(AIC, /kernels: aic/);
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dynosim-worker-kernels-'));
  cli = cliBinary(tmp);
  ({ url: base, mf } = await startWorkerd(path.join(tmp, 'state')));
});
after(async () => {
  if (mf) await mf.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function predict(config) {
  const fd = new FormData();
  fd.append('config', new Blob([config]), 'config.yaml');
  fd.append('trace', new Blob([trace]), 'conv200.jsonl');
  const r = await fetch(`${base}/v1/predict`, { method: 'POST', body: fd, signal: AbortSignal.timeout(120_000) });
  return { r, body: await r.text() };
}

function cliJSON(config) {
  writeFileSync(path.join(tmp, 'config.yaml'), config);
  writeFileSync(path.join(tmp, 'conv200.jsonl'), trace);
  return execFileSync(cli, ['predict', '-c', 'config.yaml', '--trace', 'conv200.jsonl', '--format', 'json'], { cwd: tmp, maxBuffer: 64 << 20 }).toString();
}

// normalize blanks the wall-clock fields, the only ones allowed to differ.
function normalize(text) {
  let out = text;
  for (const k of keys.wall_clock) out = out.replace(new RegExp(`("${k}": )[^,\\n}]*`, 'g'), '$1<wall>');
  return out;
}

test('timing.kernels: aic: the Worker prices from the asset tables as the CLI does', async () => {
  const { r, body } = await predict(AIC);
  assert.equal(r.status, 200, body);
  const want = cliJSON(AIC);
  assert.equal(JSON.parse(body).deployment.pools[0].timing_kernels, 'aic vllm 0.24.0 h100_sxm');
  assert.equal(normalize(body), normalize(want));
});

test('timing.kernels: aic: a MoE model (its experts from moe_perf) as the CLI does', async () => {
  const cfg = AIC.replace('model: llama-3.1-8b', 'model: qwen3-30b-a3b');
  assert.notEqual(cfg, AIC);
  const { r, body } = await predict(cfg);
  assert.equal(r.status, 200, body);
  assert.equal(JSON.parse(body).deployment.pools[0].timing_kernels, 'aic vllm 0.24.0 h100_sxm');
  assert.equal(normalize(body), normalize(cliJSON(cfg)));
});

test('timing.kernels: aic on a GPU AIC did not measure is refused naming the key', async () => {
  const { r, body } = await predict(AIC.replace('hardware: h100_sxm', 'hardware: rtx_4090'));
  assert.equal(r.status, 400, body);
  assert.match(JSON.parse(body).error, /timing\.kernels: aic: AIConfigurator measured no kernels of rtx_4090 under vllm/);
});

// `dynosim recommend --remote` under timing.kernels: aic: each trial POSTs
// the Base config (the key included) with its sets, the Worker prices it
// from its asset table, and the ledger is the local one (which the CLI
// prices from its embedded tables), byte for byte.
test('timing.kernels: aic: recommend --remote trials to the Worker give the local ledger', async () => {
  writeFileSync(path.join(tmp, 'conv200.jsonl'), trace);
  writeFileSync(path.join(tmp, 'rec.yaml'), `traffic:
  source: {type: trace, paths: [conv200.jsonl]}
engine:
  hardware: h100_sxm
  workers:
    aggregated:
      parallelism: {replicas: {choices: [1, 2]}}
      scheduler: {max_batched_tokens: {choices: [4096, 8192]}}
      timing: {type: default, kernels: aic}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 50}}
optimization: {target: goodput_per_gpu}
`);
  const rec = (...args) => execFileSync(cli, ['recommend', '-c', 'rec.yaml', '--quiet', ...args], { cwd: tmp, timeout: 300_000, stdio: 'pipe' });
  rec('--output-dir', 'rec-local', '--parallel', '1');
  rec('--output-dir', 'rec-remote', '--parallel', '2', '--remote', base);
  const local = readFileSync(path.join(tmp, 'rec-local/recommendation.json'), 'utf8');
  assert.equal(readFileSync(path.join(tmp, 'rec-remote/recommendation.json'), 'utf8'), local, 'the remote ledger differs from the local one');
  assert.deepEqual(JSON.parse(local).candidates.map((c) => c.status), ['feasible', 'feasible', 'feasible', 'feasible'].slice(0, JSON.parse(local).candidates.length));
});
