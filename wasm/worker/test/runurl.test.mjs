// Issue 29 item 11 on a real local workerd: the Worker hands out a run URL
// only for a run it stored. An instance whose MAX_STORED_BYTES is below any
// report answers the report with no Location and no run id, and says why in
// X-Dynosim-Cache (before, a report too large for KV came with a URL that
// answered 404); a planner interval under the floor is a 400 naming the
// key, before any work (a 1 ms interval cost 52 s of Worker CPU).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startWorkerd } from './workerd.mjs';

let tmp, base, mf;

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dynosim-worker-runurl-'));
  ({ url: base, mf } = await startWorkerd(path.join(tmp, 'state'), { MAX_STORED_BYTES: '1000' }));
});

after(async () => {
  if (mf) await mf.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function predict(config) {
  const fd = new FormData();
  fd.append('config', new Blob([config]), 'config.yaml');
  const r = await fetch(`${base}/v1/predict`, { method: 'POST', body: fd, signal: AbortSignal.timeout(120_000) });
  return { r, body: await r.text() };
}

test('a report over MAX_STORED_BYTES is answered without a run URL', async () => {
  const health = await (await fetch(`${base}/v1/health`)).json();
  assert.equal(health.max_stored_bytes, 1000);
  const config = 'traffic: {source: {type: synthetic, input_tokens: 64, output_tokens: 4}, stop: {requests: 5}}\n';
  for (const round of ['first', 'again']) {
    const { r, body } = await predict(config);
    assert.equal(r.status, 200, body);
    assert.equal(JSON.parse(body).summary.completed_requests, 5);
    assert.equal(r.headers.get('location'), null, `${round}: no run URL for a run that was not stored`);
    assert.equal(r.headers.get('x-dynosim-run-id'), null, round);
    assert.match(r.headers.get('x-dynosim-cache'), /^miss; not stored: the report's \d+ bytes are over the run store's limit of 1000$/, round);
  }
});

test('a planner interval under the floor is a 400 naming the key', async () => {
  const { r, body } = await predict('planner: {policy: enabled, enable_load_scaling: true, load_adjustment_interval_seconds: 0.001}\n' +
    'evaluation: {sla: {ttft_ms: 300, itl_ms: 30}}\n');
  assert.equal(r.status, 400, body);
  assert.match(JSON.parse(body).error, /^config\.yaml:1: planner\.load_adjustment_interval_seconds: must be in \[1, 1e\+07\] seconds/);
});
