// The live server's hostile-input corpus (issue 29): every case in
// cmd/dynosim/live/testdata/hostile/NAME.json runs against a real
// `dynosim live` under a 4 GiB address-space cap (and 256 open files), and
// the server must answer as the case says and still be alive afterwards:
// the process runs, GET /v1/models answers and a small completion
// completes, and its ZMQ ports still greet a new peer.
//
// A case is JSON:
//   about  what broke before (the issue item), for the reader
//   args   flags of `dynosim live` (cwd: the repository). With want.exit the
//          server must refuse to start; else the case gets its own server.
//   send   one of (json.model "*" is the served model)
//          {method, path, json, prompt_bytes, concurrency}: HTTP requests
//            (prompt_bytes pads json.prompt to that many bytes);
//          {port: "http"|"zmq"|"replay", hex|text, connections}: raw TCP
//            peers that send those bytes and stay connected while the
//            server is checked (wait_close: the server must cut them).
//   want   {status} or {statuses: [...]} (every answer one of them),
//          {error: SUBSTRING} of the JSON error, or {exit, stderr}.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { bin, repo, startLive } from "./helpers.mjs";

const dir = path.join(repo, "cmd/dynosim/live/testdata/hostile");
const cases = readdirSync(dir).filter((f) => f.endsWith(".json")).sort()
  .map((f) => ({ name: f.slice(0, -5), ...JSON.parse(readFileSync(path.join(dir, f), "utf8")) }));
const AS = 4 * 2 ** 30; // 4 GiB
const wrap = ["prlimit", `--as=${AS}`, "--nofile=256", "--"];
const WAIT_MS = 60_000; // a hang-catcher, not a latency bound

async function freePort() {
  const srv = net.createServer().listen(0, "127.0.0.1");
  await new Promise((r) => srv.once("listening", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// start serves the case's args plus ZMQ publisher and replay endpoints.
async function start(args = []) {
  const zmq = await freePort(), replay = await freePort();
  const srv = await startLive(["--kv-events-endpoint", `tcp://127.0.0.1:${zmq}`,
    "--kv-events-replay-endpoint", `tcp://127.0.0.1:${replay}`, ...args], { wrap, cwd: repo });
  srv.ports = { http: Number(new URL(srv.url).port), zmq, replay };
  srv.model = (await (await fetch(srv.base + "/models")).json()).data[0].id;
  return srv;
}

async function request(srv, send) {
  const body = structuredClone(send.json ?? {});
  if (send.prompt_bytes) body.prompt = "a ".repeat(send.prompt_bytes / 2);
  if (body.model === "*") body.model = srv.model; // "*": the served model
  const r = await fetch(srv.url + send.path, { method: send.method ?? "POST", body: JSON.stringify(body),
    headers: { "content-type": "application/json" }, signal: AbortSignal.timeout(WAIT_MS) });
  const text = await r.text();
  return { status: r.status, text };
}

// peers opens send.connections raw TCP connections that send the case's
// bytes; close() ends them.
async function peers(srv, send) {
  const bytes = send.hex ? Buffer.from(send.hex, "hex") : Buffer.from(send.text ?? "");
  const socks = [];
  for (let i = 0; i < (send.connections ?? 1); i++) {
    const s = net.connect(srv.ports[send.port ?? "http"], "127.0.0.1");
    s.on("error", () => {}); // the server may cut a hostile peer
    await new Promise((r) => { s.once("connect", r); s.once("error", r); });
    if (bytes.length) s.write(bytes);
    // wait_close: the server must cut this peer (a refused frame)
    s.resume(); // read (and drop) what the server sends, so its close is seen
    // (The hang-catcher is cleared once the peer is cut: left pending, it
    // kept this file's process alive for WAIT_MS after its last test.)
    if (send.wait_close) {
      let timer;
      await new Promise((r, j) => {
        s.once("close", r);
        timer = setTimeout(() => j(new Error("the server kept a hostile peer")), WAIT_MS);
      }).finally(() => clearTimeout(timer));
    }
    socks.push(s);
  }
  return { close: () => socks.forEach((s) => s.destroy()) };
}

// alive checks the server still serves: process, HTTP, a completion, ZMQ.
async function alive(srv, what) {
  assert.equal(srv.proc.exitCode, null, `${what}: the server exited: ${srv.stderr()}`);
  const models = await fetch(srv.base + "/models", { signal: AbortSignal.timeout(WAIT_MS) });
  assert.equal(models.status, 200, `${what}: GET /v1/models`);
  const r = await fetch(srv.base + "/completions", { method: "POST", signal: AbortSignal.timeout(WAIT_MS),
    headers: { "content-type": "application/json" }, body: JSON.stringify({ model: srv.model, prompt: "hello", max_tokens: 2 }) });
  const text = await r.text();
  assert.equal(r.status, 200, `${what}: a small completion: ${text}`);
  assert.equal(JSON.parse(text).usage.completion_tokens, 2, `${what}: ${text}`);
  for (const port of ["zmq", "replay"]) {
    const s = net.connect(srv.ports[port], "127.0.0.1");
    const first = await new Promise((resolve, reject) => {
      s.once("data", resolve);
      s.once("error", reject);
      s.setTimeout(WAIT_MS, () => reject(new Error("no greeting")));
      // a ZMTP 3.0 greeting: signature, version, NULL mechanism
      s.write(Buffer.concat([Buffer.from("ff00000000000000017f03", "hex"), Buffer.from("NULL"), Buffer.alloc(49)]));
    }).finally(() => s.destroy());
    assert.equal(first[0], 0xff, `${what}: the ${port} port does not greet`);
  }
}

function check(c, got) {
  const w = c.want;
  if (w.statuses) assert.ok(w.statuses.includes(got.status), `${c.name}: status ${got.status} not in ${w.statuses}: ${got.text.slice(0, 300)}`);
  if (w.status) assert.equal(got.status, w.status, `${c.name}: ${got.text.slice(0, 300)}`);
  if (w.error) assert.ok(JSON.parse(got.text).error.message.includes(w.error), `${c.name}: ${got.text.slice(0, 300)}, want ${w.error}`);
}

test("the hostile corpus has cases", () => assert.ok(cases.length >= 10, `${cases.length} cases`));

test("live hostile cases: refused flags exit 2 with the reason", () => {
  for (const c of cases.filter((c) => c.want.exit !== undefined)) {
    const r = spawnSync(wrap[0], [...wrap.slice(1), bin, "live", "--addr", "127.0.0.1:0", ...c.args],
      { cwd: repo, encoding: "utf8", timeout: WAIT_MS });
    assert.equal(r.status, c.want.exit, `${c.name}: exit ${r.status} (${r.signal}): ${r.stderr}`);
    assert.ok(r.stderr.includes(c.want.stderr), `${c.name}: stderr ${r.stderr}, want ${c.want.stderr}`);
  }
});

test("live hostile cases: answered, and the server is alive afterwards", async (t) => {
  const shared = await start();
  try {
    for (const c of cases.filter((c) => c.send)) {
      await t.test(c.name, async () => {
        const srv = c.args ? await start(c.args) : shared;
        try {
          if (c.send.port || c.send.hex || c.send.text !== undefined) {
            const p = await peers(srv, c.send);
            try {
              await alive(srv, `${c.name}, peers connected`);
            } finally {
              p.close();
            }
          } else {
            const n = c.send.concurrency ?? 1;
            const answers = await Promise.all(Array.from({ length: n }, () => request(srv, c.send)));
            for (const got of answers) check(c, got);
          }
          await alive(srv, c.name);
        } finally {
          if (srv !== shared) await srv.stop();
        }
      });
    }
  } finally {
    assert.equal(await shared.stop(), 0, `the shared server's exit: ${shared.stderr()}`);
  }
});
