// Issue 32 item 9 on a real local workerd: a stored run's share URL is the
// rendered page, PAGE_URL?run=<id> (X-Dynosim-Share-URL); the run's inputs
// are kept beside it (GET /v1/runs/{id}/inputs, what the page puts in its
// editor); GET /v1/runs/{id} stays JSON for API clients and sends a
// browser's navigation (Accept: text/html first) to the page with a 303.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startWorkerd, root } from './workerd.mjs';

const page = 'https://sim.example.org/';
let tmp, base, mf;

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dynosim-worker-share-'));
  ({ url: base, mf } = await startWorkerd(path.join(tmp, 'state'), { PAGE_URL: page }));
});

after(async () => {
  if (mf) await mf.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('a stored run is shared as <page>/?run=<id>; the JSON route stays for API clients', async () => {
  const config = 'engine: {workers: {aggregated: {parallelism: {replicas: 4}}}}\n';
  const trace = readFileSync(path.join(root, 'wasm/worker/testdata/conversation_1000.jsonl'), 'utf8')
    .split('\n').slice(0, 50).join('\n') + '\n';
  const fd = new FormData();
  fd.append('config', new Blob([config]), 'team.yaml');
  fd.append('trace', new Blob([trace]), 'conv50.jsonl');
  const r = await fetch(`${base}/v1/predict`, { method: 'POST', body: fd, signal: AbortSignal.timeout(120_000) });
  const report = await r.text();
  assert.equal(r.status, 200, report);
  const id = r.headers.get('x-dynosim-run-id');
  assert.match(id, /^[0-9a-f]{32}$/);
  assert.equal(r.headers.get('location'), `/v1/runs/${id}`);
  assert.equal(r.headers.get('x-dynosim-share-url'), `${page}?run=${id}`);
  assert.match(r.headers.get('access-control-expose-headers'), /X-Dynosim-Share-URL/);

  // API clients (fetch's */*, curl, application/json) get the report
  for (const accept of [undefined, '*/*', 'application/json']) {
    const g = await fetch(`${base}/v1/runs/${id}`, { headers: accept ? { accept } : {} });
    assert.equal(g.status, 200, String(accept));
    assert.equal(await g.text(), report, String(accept));
    assert.equal(g.headers.get('x-dynosim-share-url'), `${page}?run=${id}`);
  }
  // a browser opening the old link lands on the page
  const nav = await fetch(`${base}/v1/runs/${id}`, {
    redirect: 'manual', headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
  });
  assert.equal(nav.status, 303);
  assert.equal(nav.headers.get('location'), `${page}?run=${id}`);

  const inputs = await fetch(`${base}/v1/runs/${id}/inputs`);
  assert.equal(inputs.status, 200);
  assert.deepEqual(await inputs.json(), { config, config_name: 'team.yaml', trace_name: 'conv50.jsonl' });
  const none = await fetch(`${base}/v1/runs/${'0'.repeat(32)}/inputs`);
  assert.equal(none.status, 404);
  assert.match((await none.json()).error, /no inputs stored for run id 0{32}/);
});
