// recommend-sweep.mjs: the 320-trial sweep of docs/recommend.md (issue 34
// item 4) — `dynosim recommend` over N local workerd instances (default 4;
// Miniflare's API on 127.0.0.1 as the tests use it) against the same search
// run locally; prints the wall times and checks the ledgers are equal.
//
//   [DYNOSIM_BIN=bin/dynosim] node wasm/worker/test/recommend-sweep.mjs [WORKERS] [REQUESTS]
//
// (`make worker` first; wrangler and Miniflare reach nothing beyond
// loopback, see the Makefile's WRANGLER_ENV.)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root, startWorkerd } from './workerd.mjs';

const n = Number(process.argv[2] || 4);
const requests = Number(process.argv[3] || 200);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'dynosim-sweep-'));
const cli = process.env.DYNOSIM_BIN ? path.resolve(process.env.DYNOSIM_BIN) : path.join(tmp, 'dynosim');
if (!process.env.DYNOSIM_BIN) execFileSync(process.env.GO || 'go', ['build', '-o', cli, './cmd/dynosim'], { cwd: root, stdio: 'inherit' });
const lines = readFileSync(path.join(root, 'wasm/worker/testdata/conversation_1000.jsonl'), 'utf8').split('\n').filter(Boolean);
writeFileSync(path.join(tmp, 'trace.jsonl'), lines.slice(0, requests).join('\n') + '\n');
// 8 × 2 × 2 × 10 = 320 candidates, searched exhaustively.
writeFileSync(path.join(tmp, 'rec.yaml'), `
traffic:
  source: {type: trace, paths: [trace.jsonl]}
  load: {speedup: 3}
engine:
  workers:
    aggregated:
      parallelism: {replicas: {range: {min: 1, max: 8}}, tensor: {choices: [1, 2]}}
      scheduler: {max_batched_tokens: {choices: [512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]}}
router: {policy: {choices: [round_robin, kv_router]}}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 50}}
optimization: {target: throughput_per_gpu, constraints: {max_candidate_gpus: 16}}
optimizer: {algorithm: exhaustive}
`);

// workerdCPU is the CPU seconds (user + system) of the running workerd
// processes (Linux /proc; 0 elsewhere).
function workerdCPU() {
  if (!existsSync('/proc/self/stat')) return 0;
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!st.includes('(workerd)')) continue;
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]); // utime, stime
    } catch { /* gone */ }
  }
  return ticks / 100; // USER_HZ
}

function recommend(dir, ...args) {
  const t0 = performance.now(), w0 = workerdCPU();
  const time = existsSync('/usr/bin/time') ? ['/usr/bin/time', '-f', '%U %S', '-o', path.join(tmp, dir + '.cpu')] : [];
  const argv = [...time, cli, 'recommend', '-c', 'rec.yaml', '--quiet', '--output-dir', dir, ...args];
  const r = spawnSync(argv[0], argv.slice(1), { cwd: tmp, encoding: 'utf8', timeout: 1800000 });
  if (r.status !== 0) throw new Error(`recommend ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  const ms = performance.now() - t0;
  const cpu = time.length ? readFileSync(path.join(tmp, dir + '.cpu'), 'utf8').trim().split(/\s+/).reduce((a, x) => a + Number(x), 0) : NaN;
  const l = JSON.parse(readFileSync(path.join(tmp, dir, 'recommendation.json'), 'utf8'));
  console.log(`${dir}: ${l.candidates.length} trials (${l.counts.feasible} feasible), ${(ms / 1000).toFixed(1)} s wall, CPU: CLI ${cpu.toFixed(1)} s, workerd ${(workerdCPU() - w0).toFixed(1)} s; ` +
    `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  return readFileSync(path.join(tmp, dir, 'recommendation.json'), 'utf8');
}

const servers = [];
try {
  for (let i = 0; i < n; i++) servers.push(await startWorkerd(path.join(tmp, `state${i}`)));
  const urls = servers.map((s) => s.url);
  console.log(`${os.cpus().length} cores; ${n} workerd at ${urls.join(' ')}; ${requests} requests per trial`);
  const local = recommend('local', '--parallel', String(os.cpus().length));
  const remote = recommend('remote', '--parallel', String(2 * n), '--remote', urls.join(','));
  if (remote !== local) throw new Error('the ledger over the Workers differs from the local one');
  console.log('recommendation.json: identical');
} finally {
  for (const s of servers) await s.mf.dispose();
  rmSync(tmp, { recursive: true, force: true });
}
