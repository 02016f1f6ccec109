// workerd.mjs starts the DynoSim Worker in a real local workerd for tests:
// Miniflare's API on 127.0.0.1 (what `wrangler dev` runs underneath),
// configured from build/wrangler.jsonc (built first if missing). wrangler
// dev's own ProxyWorker in front of it occasionally holds a request until
// the client gives up when bursts of requests arrive (seen on this
// machine; direct requests to workerd never stalled), so tests talk to
// workerd directly.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';

process.env.CLOUDFLARE_CF_FETCH_ENABLED = 'false'; // Miniflare: no request.cf download
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// cliBinary is the native CLI the Worker's answers are checked against:
// DYNOSIM_BIN when set (make test-worker passes bin/dynosim, the one build
// every suite shares), else a fresh `go build` into dir (GO names the go
// binary). Each test file used to link its own copy: three links of the
// same CLI per run.
export function cliBinary(dir) {
  if (process.env.DYNOSIM_BIN) return path.resolve(root, process.env.DYNOSIM_BIN);
  const go = process.env.GO || (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go');
  const cli = path.join(dir, 'dynosim');
  execFileSync(go, ['build', '-o', cli, './cmd/dynosim'], { cwd: root, stdio: 'inherit' });
  return cli;
}

export async function freePort() {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// startWorkerd serves the Worker with its KV persisted under kvDir and
// vars over wrangler.jsonc's (the documented defaults when none), and
// resolves to {url (no trailing slash), mf}; mf.dispose() stops it.
export async function startWorkerd(kvDir, vars = {}) {
  if (!existsSync(path.join(root, 'build/worker/app.wasm'))) execFileSync('make', ['worker'], { cwd: root, stdio: 'inherit' });
  const wcfg = JSON.parse(readFileSync(path.join(root, 'build/wrangler.jsonc'), 'utf8')
    .replace(/^\s*\/\/.*$/gm, '').replace(/\s\/\/.*$/gm, ''));
  const mf = new Miniflare({
    rootPath: path.join(root, 'build', path.dirname(wcfg.main)),
    modules: true,
    scriptPath: path.basename(wcfg.main),
    modulesRules: [{ type: 'ESModule', include: ['**/*.mjs', '**/*.js'] }, { type: 'CompiledWasm', include: ['**/*.wasm'] }],
    compatibilityDate: wcfg.compatibility_date,
    kvNamespaces: wcfg.kv_namespaces.map((k) => k.binding),
    kvPersist: kvDir,
    // The static assets (the kernel tables of timing.kernels: aic) as
    // wrangler.jsonc declares them.
    ...(wcfg.assets ? { assets: { directory: path.join(root, 'build', wcfg.assets.directory), binding: wcfg.assets.binding, routerConfig: { has_user_worker: true } } } : {}),
    bindings: { ...wcfg.vars, ...vars },
    host: '127.0.0.1',
    port: await freePort(),
  });
  return { url: String(await mf.ready).replace(/\/$/, ''), mf };
}
