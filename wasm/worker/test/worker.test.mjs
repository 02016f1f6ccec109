// End-to-end tests of the DynoSim Cloudflare Worker: a real local workerd
// (Miniflare's API on 127.0.0.1, configured from build/wrangler.jsonc) serving
// build/worker/, checked against
// the native CLI (go build ./cmd/dynosim). Run with `make test-worker`
// (which builds the Worker first) or `node --test wasm/worker/test/`.
//
// Environment knobs: DYNOSIM_BIN (the CLI; else built with GO, the go
// binary: workerd.mjs cliBinary), WORKER_TEST_KEEP=1 keeps the temp dir.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { Agent, setGlobalDispatcher } from 'undici';

// One connection per request. workerd closes idle keep-alive connections on
// its own schedule, and node's fetch (unlike a browser) does not retry a
// request that meets a connection the server has just closed: under load that
// race failed requests at random ("other side closed") although the Worker
// answered every request it received. Fresh connections take the race away.
setGlobalDispatcher(new Agent({ pipelining: 0 }));
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { cliBinary, root, startWorkerd } from './workerd.mjs';
import { keys } from '../../../ui/test/reportkeys.mjs';

const testdata = path.join(root, 'wasm/worker/testdata');
const WRANGLER = path.join(root, 'node_modules/.bin/wrangler');
const MAX_BODY = 1 << 20; // the test instance's body cap (the default is 32 MiB)
const BODY_TIMEOUT_MS = 2000; // the test instance's body read deadline (the default is 30 s)
const WALL_CLOCK = keys.wall_clock; // the summary keys that depend on the machine (core/report/schema)

// The config every test runs: the CLI's embedded default (the upload / --trace
// replaces its trace path).
const CONFIG = readFileSync(path.join(root, 'internal/defaultconfig/default.yaml'), 'utf8');

const traceLines = readFileSync(path.join(testdata, 'conversation_1000.jsonl'), 'utf8').split('\n').filter(Boolean);
const slice = (n, from = 0) => traceLines.slice(from, from + n).join('\n') + '\n';

let tmp, base, mf, cli;

function env() {
  const e = { ...process.env };
  for (const k of Object.keys(e)) if (k.startsWith('CLOUDFLARE_')) delete e[k];
  return {
    ...e,
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_SEND_ERROR_REPORTS: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    NO_COLOR: '1',
  };
}


before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dynosim-worker-test-'));
  if (!existsSync(path.join(root, 'build/worker/app.wasm'))) {
    execFileSync('make', ['worker'], { cwd: root, stdio: 'inherit' });
  }
  cli = cliBinary(tmp);
  writeFileSync(path.join(tmp, 'config.yaml'), CONFIG);

  // A real local workerd (workerd.mjs) with the tests' body limits.
  ({ url: base, mf } = await startWorkerd(path.join(tmp, 'state'), { MAX_BODY_BYTES: String(MAX_BODY), BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS) }));
});

after(async () => {
  if (mf) await mf.dispose();
  if (tmp && !process.env.WORKER_TEST_KEEP) rmSync(tmp, { recursive: true, force: true });
});

// cliJSON runs `dynosim predict -c config.yaml --trace NAME --format json` on
// the same bytes the Worker gets (same file names: they appear in errors).
function cliJSON(trace, name, sets = []) {
  writeFileSync(path.join(tmp, name), trace);
  const args = ['predict', '-c', 'config.yaml', '--trace', name, '--format', 'json'];
  for (const s of sets) args.push('--set', s);
  return execFileSync(cli, args, { cwd: tmp, maxBuffer: 64 << 20 }).toString();
}

// normalize blanks the wall-clock fields, the only ones allowed to differ.
function normalize(text) {
  let out = text;
  for (const k of WALL_CLOCK) out = out.replace(new RegExp(`("${k}": )[^,\\n}]*`, 'g'), '$1<wall>');
  return out;
}

// assertSameReport compares bytes (wall-clock fields aside) and, on failure,
// names the differing summary keys.
function assertSameReport(got, want, what) {
  if (normalize(got) === normalize(want)) return;
  let detail = '';
  try {
    const g = JSON.parse(got).summary, w = JSON.parse(want).summary;
    const keys = Object.keys({ ...g, ...w }).filter((k) => !WALL_CLOCK.includes(k) && g[k] !== w[k]);
    detail = keys.slice(0, 8).map((k) => `${k}: worker ${g[k]} vs cli ${w[k]}`).join('; ');
  } catch (e) { detail = String(e); }
  assert.fail(`${what}: Worker report differs from the CLI's --format json: ${detail || 'outside summary'}`);
}

function form(fields) {
  const fd = new FormData();
  for (const [k, v] of fields) {
    if (v && typeof v === 'object' && 'name' in v) fd.append(k, new Blob([v.data]), v.name);
    else fd.append(k, v);
  }
  return fd;
}

async function predict(fields) {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/predict`, { method: 'POST', body: form(fields), signal: AbortSignal.timeout(120_000) });
  const body = await r.text();
  return { r, body, ms: performance.now() - t0 };
}

async function expectError(res, status, pattern) {
  const { r, body } = res;
  assert.equal(r.status, status, `status for ${body}`);
  assert.match(r.headers.get('content-type') || '', /application\/json/);
  assert.equal(body.trim().split('\n').length, 1, `one line: ${body}`);
  const j = JSON.parse(body);
  assert.deepEqual(Object.keys(j), ['error']);
  assert.equal(typeof j.error, 'string');
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  assert.ok(!j.error.includes('\n'));
  if (pattern) assert.match(j.error, pattern);
  return j.error;
}

test('health', async () => {
  const r = await fetch(`${base}/v1/health`);
  assert.equal(r.status, 200);
  const j = await r.json();
  assert.equal(j.status, 'ok');
  assert.equal(j.storage, true);
  assert.equal(j.max_body_bytes, MAX_BODY);
  assert.ok(j.max_requests > 0 && j.max_passes > 0, 'limits derived from the CPU budget');
});

test('predict equals the CLI, is stored, and is served from storage the second time', async () => {
  const trace = slice(200);
  const want = cliJSON(trace, 'conv200.jsonl');
  const fields = [['config', { name: 'config.yaml', data: CONFIG }], ['trace', { name: 'conv200.jsonl', data: trace }]];

  const first = await predict(fields);
  assert.equal(first.r.status, 200, first.body);
  assert.match(first.r.headers.get('content-type'), /application\/json/);
  assert.equal(first.r.headers.get('x-content-type-options'), 'nosniff');
  assert.doesNotMatch(first.r.headers.get('cache-control') || '', /immutable/, 'a POST answer is not immutable');
  assert.equal(first.r.headers.get('x-dynosim-cache'), 'miss');
  const loc = first.r.headers.get('location');
  assert.match(loc, /^\/v1\/runs\/[0-9a-f]{32}$/);
  assertSameReport(first.body, want, '200-request slice');
  for (const k of WALL_CLOCK) assert.equal(JSON.parse(first.body).summary[k], 0, `${k} is 0 in the Worker`);

  const got = await fetch(base + loc);
  assert.equal(got.status, 200);
  assert.match(got.headers.get('cache-control'), /immutable/, 'GET /v1/runs/{id} is');
  assert.equal(got.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(await got.text(), first.body, 'GET /v1/runs/{id} returns the same bytes');

  const second = await predict(fields);
  assert.equal(second.r.status, 200);
  assert.equal(second.r.headers.get('x-dynosim-cache'), 'hit', 'identical resubmission answered from KV');
  assert.equal(second.r.headers.get('location'), loc, 'same inputs, same run id');
  assert.equal(second.body, first.body);

  // Any change of input names another run.
  const other = await predict([...fields, ['set', 'execution.seed=7']]);
  assert.equal(other.r.status, 200, other.body);
  assert.notEqual(other.r.headers.get('location'), loc);
  assert.equal(other.r.headers.get('x-dynosim-cache'), 'miss');
  assertSameReport(other.body, cliJSON(trace, 'conv200.jsonl', ['execution.seed=7']), '--set execution.seed=7');
});

test('bad input gives a 4xx with a one-line JSON error', async () => {
  const trace = { name: 'conv50.jsonl', data: slice(50) };
  await expectError(await predict([['config', 'traffic: [\n  oops'], ['trace', trace]]), 400, /config/);
  await expectError(await predict([['config', { name: 'my.yaml', data: 'no_such_section: 1\n' }], ['trace', trace]]), 400, /my\.yaml.*no_such_section/);
  await expectError(await predict([['config', 'execution: {seed: -1x}\n'], ['trace', trace]]), 400);
  await expectError(await predict([['config', CONFIG], ['trace', { name: 'junk.jsonl', data: '{"timestamp": 0, "input_length": 5\n\u0000\u0001garbage\n' }]]), 400, /junk\.jsonl:1/);
  await expectError(await predict([['config', CONFIG], ['trace', { name: 'neg.jsonl', data: '{"timestamp": 0, "input_length": 10, "output_length": -3, "hash_ids": [1]}\n' }]]), 400, /neg\.jsonl:1/);
  await expectError(await predict([['config', CONFIG], ['trace', { name: 'empty.jsonl', data: '' }]]), 400, /empty\.jsonl/);
  await expectError(await predict([['config', CONFIG]]), 400, /upload the trace/);
  await expectError(await predict([['trace', trace]]), 400, /missing form field config/);
  await expectError(await predict([['config', CONFIG], ['bogus', 'x']]), 400, /unknown form field "bogus"/);

  // Not multipart, or a broken multipart body.
  let r = await fetch(`${base}/v1/predict`, { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: 'x: 1' });
  await expectError({ r, body: await r.text() }, 400, /multipart\/form-data/);
  r = await fetch(`${base}/v1/predict`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=XYZ' }, body: '--XYZ\r\nbroken' });
  await expectError({ r, body: await r.text() }, 400, /multipart/);

  // Runs that exceed the CPU-budget caps: 413 pointing at the CLI / page.
  await expectError(await predict([['config', 'traffic: {source: {type: synthetic}, stop: {requests: 1000000}}\n']]), 413, /CLI or the page/);

  // Unknown run ids, unknown routes, wrong methods.
  r = await fetch(`${base}/v1/runs/0123456789abcdef0123456789abcdef`);
  await expectError({ r, body: await r.text() }, 404, /unknown run id/);
  r = await fetch(`${base}/v1/runs/not-an-id`);
  await expectError({ r, body: await r.text() }, 404, /unknown run id/);
  r = await fetch(`${base}/v1/nothing`);
  await expectError({ r, body: await r.text() }, 404);
  r = await fetch(`${base}/v1/predict`);
  await expectError({ r, body: await r.text() }, 405);
});

test('a garbage profile is a 400 naming it', async () => {
  const trace = { name: 'conv50.jsonl', data: slice(50) };
  await expectError(await predict([['config', CONFIG], ['profile', { name: 'p.npz', data: 'not a zip' }], ['trace', trace]]), 400, /p\.npz/);
});

test('oversized bodies get 413, with or without Content-Length', async () => {
  const boundary = 'dynosimBoundary';
  // A declared (Content-Length) body over the cap, all of it sent. The Worker
  // answers 413 at once, reading none of it, and workerd then closes the
  // connection with the body unread: a reset. fetch, still writing the body,
  // failed at random under load (ECONNRESET / EPIPE) instead of returning the
  // 413 that had come; rawRequest reads it (see there).
  const big = 'x'.repeat(MAX_BODY + 1024);
  const declared = `--${boundary}\r\nContent-Disposition: form-data; name="config"\r\n\r\n${CONFIG}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="trace"; filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n${big}\r\n--${boundary}--\r\n`;
  const len = Buffer.byteLength(declared);
  const res = await rawRequest(`POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${len}\r\n\r\n`, declared, 60_000);
  const err = await rawError(res, 413, new RegExp(`^the request body \\(${len} bytes\\) exceeds this service's limit of 1048576 bytes`));
  assert.match(err, /CLI/);
  console.log(`Content-Length ${len}: 413; ${res.queued} request bytes queued after the first write`);

  // A streamed (chunked) body: the cap is enforced while reading.
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="config"\r\n\r\n{}\r\n--${boundary}\r\nContent-Disposition: form-data; name="trace"; filename="big.jsonl"\r\n\r\n`;
  const chunk = new TextEncoder().encode('y'.repeat(64 << 10));
  let sent = 0;
  const stream = new ReadableStream({
    start(c) { c.enqueue(new TextEncoder().encode(head)); },
    pull(c) {
      if (sent > 2 * MAX_BODY) { c.enqueue(new TextEncoder().encode(`\r\n--${boundary}--\r\n`)); c.close(); return; }
      c.enqueue(chunk); sent += chunk.length;
    },
  });
  const r = await fetch(`${base}/v1/predict`, {
    method: 'POST', body: stream, duplex: 'half',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    signal: AbortSignal.timeout(60_000),
  });
  await expectError({ r, body: await r.text() }, 413, /exceeds this service's limit/);
});

// rawRequest writes head and body on a raw socket (to declare lengths fetch
// would not) and returns the answer's status, head and body, and the request
// bytes node still held after the first write syscall (queued: 0 when the
// kernel took the whole request at once), or throws after ms. The socket
// stays open until then: a stalled client.
//
// Head and body go out in one write. Its first syscall carries the head, so
// no answer can precede it, and on loopback it takes the whole of the ~1 MiB
// requests here (queued 0): no later write is left to fail. (What it leaves,
// libuv writes as the socket drains, reading first on a wakeup that brings
// both.) A server that answers early and closes with the body unread resets
// the connection, and node destroys a socket on a failed write, dropping what
// it had not read yet: writing the body chunk after chunk (as fetch does, or
// from here) lost the 413 that way under load. Any socket error, a reset
// included, still fails the request unless the whole answer was read first.
async function rawRequest(head, body, ms) {
  const { hostname, port } = new URL(base);
  const sock = net.connect(Number(port), hostname);
  await once(sock, 'connect');
  let data = '', settled = false, t, queued;
  sock.setEncoding('utf8');
  try {
    return await new Promise((resolve, reject) => {
      const fail = (msg) => {
        if (settled) return;
        settled = true;
        clearTimeout(t);
        reject(new Error(`${msg}; ${queued} request bytes queued after the first write, ${sock.writableLength} now; got ${JSON.stringify(data)}`));
      };
      t = setTimeout(() => fail(`no answer within ${ms} ms`), ms);
      const done = () => {
        if (settled) return true;
        const i = data.indexOf('\r\n\r\n');
        if (i < 0) return false;
        const headers = data.slice(0, i);
        const len = /content-length: *(\d+)/i.exec(headers);
        let rest = data.slice(i + 4);
        if (/transfer-encoding: *chunked/i.test(headers)) {
          if (!rest.includes('\r\n0\r\n')) return false;
          rest = rest.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n[\s\S]*$/, '');
        } else if (!len || Buffer.byteLength(rest) < Number(len[1])) return false;
        settled = true;
        clearTimeout(t);
        resolve({ status: Number(headers.split(' ')[1]), headers, body: rest, queued });
        return true;
      };
      sock.on('data', (d) => { data += d; done(); });
      sock.on('error', (e) => { if (!done()) fail(`socket error ${e.code || e.message} (${e.syscall || 'socket'}) before a whole answer`); });
      sock.on('end', () => { if (!done()) fail('closed without a whole answer'); });
      sock.write(Buffer.concat([Buffer.from(head), Buffer.from(body)]));
      queued = sock.writableLength;
    });
  } finally {
    sock.destroy();
  }
}

function rawError(res, status, pattern) {
  const r = { status: res.status, headers: new Headers(res.headers.split('\r\n').slice(1).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()])) };
  return expectError({ r, body: res.body }, status, pattern);
}

test('hostile bodies: a declared huge body is refused at once, a stalled one times out', async () => {
  const part = 'Content-Disposition: form-data; name="config"\r\n\r\n{}\r\n';
  const t0 = performance.now();
  const huge = await rawRequest('POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\n' +
    'Content-Length: 99999999999\r\n\r\n', `--B\r\n${part}`, 10_000);
  await rawError(huge, 413, /99999999999 bytes/);
  console.log(`Content-Length 99999999999 with a small body: 413 in ${(performance.now() - t0).toFixed(0)} ms`);

  const head = 'POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 5000\r\n\r\n';
  const t1 = performance.now();
  const slow = await rawRequest(head, `--B\r\n${part}--B\r\nContent-Disposition: form-data; name="trace"; filename="t.jsonl"\r\n\r\n{"timestamp"`, BODY_TIMEOUT_MS + 10_000);
  await rawError(slow, 408, /read deadline/);
  const ms = performance.now() - t1;
  console.log(`stalled body: 408 after ${ms.toFixed(0)} ms (deadline ${BODY_TIMEOUT_MS} ms)`);
  assert.ok(ms >= BODY_TIMEOUT_MS - 100, `answered before the deadline: ${ms} ms`);

  // Issue 29 item 15: a stall inside a part header is a 408 too, not a
  // malformed header (the parser saw a line cut short).
  const inHeader = await rawRequest(head, `--B\r\n${part}--B\r\nContent-Dispo`, BODY_TIMEOUT_MS + 10_000);
  await rawError(inHeader, 408, /read deadline/);

  // The Worker still answers afterwards.
  const r = await fetch(`${base}/v1/health`);
  assert.equal(r.status, 200);
});

test('hostile work: token and config caps answer 413 before any work', async () => {
  // The yardstick: a small run's round trip on this machine as loaded now.
  // The refused run would take minutes; the refusal must come in the time
  // of a small run, not a fixed time a busy machine could miss.
  const y0 = performance.now();
  const small = await predict([['config', CONFIG], ['trace', { name: 'yardstick.jsonl', data: slice(40) }]]);
  assert.equal(small.r.status, 200, small.body);
  const yard = performance.now() - y0;
  const t0 = performance.now();
  await expectError(await predict([['config', { name: 'wide.yaml', data: 'traffic:\n  source: {type: synthetic, input_tokens: 100, output_tokens: 3000}\n  load: {type: concurrency, concurrency: 15000}\n  stop: {requests: 15000}\n' }]]), 413, /output tokens per run.*CLI/);
  const ms = performance.now() - t0;
  assert.ok(ms < Math.max(5000, 10 * yard), `15,000 × 3,000 output tokens refused in ${ms} ms (a 40-request run: ${yard} ms)`);
  const rates = 'engine: {speculation: {kind: mtp, acceptance_rates: [' + Array(80_000).fill('0.5').join(', ') + ']}}\n';
  await expectError(await predict([['config', { name: 'rates.yaml', data: rates }]]), 413, /^rates\.yaml: over this service's limit of 262144 bytes of config/);
});

// Each case of core/sim/testdata/hostile (NAME.yaml and the files it names,
// which the Worker gets as uploads under the same names) answers what
// `dynosim predict -c NAME.yaml --format json` prints: the same error message
// (the CLI's "dynosim: <message>" against {"error": "<message>"}), or the same
// report. Only the service's own limits (413) may refuse what the CLI runs.
test('hostile cases: the Worker agrees with the CLI', async () => {
  const dir = path.join(root, 'core/sim/testdata/hostile');
  const files = readdirSync(dir).sort();
  const cases = files.filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -'.yaml'.length));
  assert.ok(cases.length >= 3, `only ${cases.length} hostile cases`);
  const failures = [];
  for (const name of cases) {
    const config = readFileSync(path.join(dir, `${name}.yaml`));
    const fields = [['config', { name: `${name}.yaml`, data: config }]];
    for (const f of files.filter((f) => f.startsWith(`${name}.`) && f !== `${name}.yaml`)) {
      const field = { '.jsonl': 'trace', '.csv': 'trace', '.npz': 'profile', '.json': 'model' }[path.extname(f)];
      if (field) fields.push([field, { name: f, data: readFileSync(path.join(dir, f)) }]);
    }
    let want;
    try {
      want = { report: execFileSync(cli, ['predict', '-c', `${name}.yaml`, '--format', 'json'], { cwd: dir, maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 }).toString() };
    } catch (e) {
      const line = String(e.stderr || '').split('\n').find((l) => l.startsWith('dynosim: '));
      want = { error: line ? line.slice('dynosim: '.length) : `(no error line: ${e.message})` };
    }
    const { r, body } = await predict(fields);
    let got;
    try { got = JSON.parse(body); } catch { failures.push(`${name}: not JSON (${r.status}): ${body.slice(0, 200)}`); continue; }
    if (want.error !== undefined) {
      if (r.status < 400 || r.status >= 500) failures.push(`${name}: status ${r.status}, want a 4xx (CLI: ${want.error})`);
      else if (got.error !== want.error) failures.push(`${name}: Worker ${JSON.stringify(got.error)} vs CLI ${JSON.stringify(want.error)}`);
      if (r.status >= 400) try { await expectError({ r, body }, r.status); } catch (e) { failures.push(`${name}: ${e.message}`); }
    } else if (r.status === 413) {
      if (!/CLI/.test(got.error || '')) failures.push(`${name}: 413 without pointing at the CLI: ${body}`);
    } else if (r.status !== 200) {
      failures.push(`${name}: status ${r.status} (${body.trim()}), the CLI ran it`);
    } else if (normalize(body) !== normalize(want.report)) {
      failures.push(`${name}: the report differs from the CLI's`);
    }
  }
  console.log(`hostile cases: ${cases.length} compared with the CLI, ${failures.length} disagree`);
  assert.deepEqual(failures, []);
});

test('20 concurrent requests all get correct answers', async () => {
  const jobs = Array.from({ length: 20 }, (_, i) => {
    const name = `conc${i}.jsonl`;
    const trace = slice(40 + 3 * i, 10 * i);
    return { name, trace, want: cliJSON(trace, name) };
  });
  const t0 = performance.now();
  const results = await Promise.all(jobs.map((j) => predict([['config', CONFIG], ['trace', { name: j.name, data: j.trace }]])));
  const ms = performance.now() - t0;
  console.log(`20 concurrent POSTs (40-97 requests each): all answered in ${ms.toFixed(0)} ms`);
  const ids = new Set();
  results.forEach((res, i) => {
    assert.equal(res.r.status, 200, `request ${i}: ${res.body}`);
    assertSameReport(res.body, jobs[i].want, `concurrent request ${i}`);
    ids.add(res.r.headers.get('location'));
  });
  assert.equal(ids.size, 20, 'distinct inputs, distinct run ids');
  // And every one of them was stored.
  const stored = await Promise.all([...ids].map(async (loc) => {
    const r = await fetch(base + loc, { signal: AbortSignal.timeout(60_000) });
    await r.arrayBuffer();
    return r.status;
  }));
  assert.deepEqual(stored, Array(20).fill(200));
});

test('latency of a 1,000-request slice', async () => {
  const trace = slice(1000);
  const fields = [['config', CONFIG], ['trace', { name: 'conv1000.jsonl', data: trace }]];
  const miss = await predict(fields);
  assert.equal(miss.r.status, 200, miss.body);
  assert.equal(miss.r.headers.get('x-dynosim-cache'), 'miss');
  const hit = await predict(fields);
  assert.equal(hit.r.headers.get('x-dynosim-cache'), 'hit');
  const t0 = performance.now();
  const get = await fetch(base + miss.r.headers.get('location'));
  assert.equal(await get.text(), miss.body);
  const getMs = performance.now() - t0;
  const t1 = performance.now();
  await (await fetch(`${base}/v1/health`)).text();
  const healthMs = performance.now() - t1;
  const passes = JSON.parse(miss.body).workers.reduce((s, w) => s + w.passes, 0);
  const c0 = performance.now();
  const want = cliJSON(trace, 'conv1000.jsonl');
  const cliMs = performance.now() - c0;
  console.log(`1,000-request slice (${passes} engine passes, ${(miss.body.length / 1024).toFixed(0)} KiB report): ` +
    `POST run ${miss.ms.toFixed(0)} ms, POST from KV ${hit.ms.toFixed(0)} ms, GET run ${getMs.toFixed(0)} ms, ` +
    `GET health ${healthMs.toFixed(0)} ms; native CLI process ${cliMs.toFixed(0)} ms`);
  assertSameReport(miss.body, want, '1,000-request slice');
});

test('wrangler deploy --dry-run: gzip upload ≤ 3 MiB', () => {
  const out = execFileSync(WRANGLER, ['deploy', '--dry-run', '--outdir', path.join(tmp, 'dist'), '-c', path.join(root, 'build/wrangler.jsonc')],
    { cwd: root, env: env(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const m = out.match(/Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/);
  assert.ok(m, `no size line in:\n${out}`);
  const gzipKiB = Number(m[2]);
  console.log(`wrangler deploy --dry-run: total ${m[1]} KiB, gzip ${m[2]} KiB (limit 3072 KiB)`);
  assert.ok(gzipKiB <= 3 * 1024, `gzip upload ${gzipKiB} KiB > 3 MiB`);
});
