// docs/worker.md's examples run as written: every ```sh block that calls
// curl is run, in order, in one `bash -eo pipefail` against a real local
// workerd (Miniflare's API on 127.0.0.1, configured from build/wrangler.jsonc
// with its default limits, as worker.test.mjs does), from a directory whose
// internal/, wasm/, docs/ and timing/ are the repository's (so the examples'
// repo-relative paths resolve and their outputs, e.g. report.json, stay out
// of the checkout). SVC names the workerd and 127.0.0.1:8787 is replaced by
// its address; lines that run make, npx or node_modules/.bin/wrangler
// (build, dev server, deploy) are left out; curl runs with --fail-with-body,
// so any answer ≥ 400 fails the example. Run by `make test-worker`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root, startWorkerd } from './workerd.mjs';

const doc = readFileSync(path.join(root, 'docs/worker.md'), 'utf8');
let tmp, base, mf;

// The runnable examples: fenced ```sh blocks (at the start of a line) with a curl.
const blocks = [...doc.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]).filter((b) => /\bcurl\b/.test(b));

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dynosim-worker-examples-'));
  for (const d of ['internal', 'wasm', 'docs', 'timing']) symlinkSync(path.join(root, d), path.join(tmp, d));
  // the documented defaults: no limit overrides
  ({ url: base, mf } = await startWorkerd(path.join(tmp, 'state')));
});

after(async () => {
  if (mf) await mf.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// runnable turns one doc block into the script the test runs.
function runnable(block) {
  return block.split('\n')
    .filter((l) => !/^\s*(make|npx|node_modules\/\.bin\/wrangler)\b/.test(l))
    .map((l) => l.replaceAll('http://127.0.0.1:8787', base).replace(/(^|[\s@])127\.0\.0\.1:8787/g, `$1${base}`))
    .join('\n');
}

test('docs/worker.md has the examples this test runs', () => {
  assert.ok(blocks.length >= 4, `${blocks.length} curl blocks`);
  for (const f of doc.matchAll(/=@([\w./-]+)/g)) {
    assert.ok(existsSync(path.join(root, f[1])), `the examples upload ${f[1]}, which must exist in the repository`);
  }
});

test('every curl example in docs/worker.md answers 2xx against a local Worker', () => {
  const script = 'set -eo pipefail\ncurl() { command curl --fail-with-body "$@"; }\n' +
    blocks.map((b, i) => `echo "::block ${i + 1}" >&2\n${runnable(b)}`).join('\n') + '\necho "::done" >&2\n';
  writeFileSync(path.join(tmp, 'examples.sh'), script);
  const r = spawnSync('bash', ['examples.sh'], { cwd: tmp, encoding: 'utf8', env: { ...process.env, SVC: base }, timeout: 240000 });
  const failedAt = (r.stderr.match(/::block (\d+)/g) || []).pop();
  assert.equal(r.status, 0, `examples failed in ${failedAt} (exit ${r.status}):\n${r.stderr}\n${r.stdout}`);
  assert.match(r.stderr, /::done/);

  // The first example saved the report and printed the headers.
  const report = JSON.parse(readFileSync(path.join(tmp, 'report.json'), 'utf8'));
  assert.equal(report.summary.completed_requests, 1000);
  assert.match(r.stdout, /^HTTP\/1\.1 200 OK\r?$/m);
  assert.match(r.stdout, /^location: \/v1\/runs\/[0-9a-f]{32}\r?$/im);
  assert.match(r.stdout, /^x-dynosim-cache: miss\r?$/im);
  // The overrides example (jq .summary), the Azure one (1000), the stored
  // run's p99 TTFT (a number) and the health answer.
  assert.match(r.stdout, /^\{\n\s+"completed_requests": 1000,/m);
  assert.match(r.stdout, /^1000$/m);
  assert.match(r.stdout, /^\d+(\.\d+)?$/m);
  assert.match(r.stdout, /"status":"ok"/);
  // The timing example printed curl's time.
  assert.match(r.stdout, /^\d+\.\d+s$/m);
});
