// Shared helpers for the `dynosim live` client tests and the soak script:
// start `dynosim live` on a free loopback port, scrape its /metrics and
// sum a metric's samples. This file holds no tests (it is safe to load
// under `node --test`: importing it only defines functions).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const bin = path.resolve(repo, process.env.DYNOSIM_BIN || "bin/dynosim");

// Servers still running when the process exits (a failed test) are killed.
const running = new Set();
process.on("exit", () => { for (const p of running) p.kill("SIGKILL"); });

// startLive runs `dynosim live --addr 127.0.0.1:0 [args…]` and resolves to
// {url, base, proc, stderr(), stop()} once it prints the address it serves
// on: url is http://127.0.0.1:PORT, base is url + "/v1". stop() sends
// SIGTERM and resolves with the exit code (a signal name if it was killed).
// It rejects, with the server's stderr, if the server exits first or does
// not start within timeoutMs.
// wrap is a command the server runs under (["prlimit", "--as=…", "--"]).
export function startLive(args = [], { timeoutMs = 15000, wrap = [], cwd } = {}) {
  return new Promise((resolve, reject) => {
    const argv = [...wrap.slice(1), bin, "live", "--addr", "127.0.0.1:0", ...args];
    const proc = spawn(wrap[0] || argv.shift(), argv, { stdio: ["ignore", "pipe", "pipe"], cwd });
    running.add(proc);
    let err = "", started = false;
    const exited = new Promise((r) => proc.once("exit", (code, signal) => { running.delete(proc); r(code ?? signal); }));
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`dynosim live did not start within ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (d) => {
      err += d;
      const m = !started && err.match(/dynosim: live: serving .* on (http:\/\/127\.0\.0\.1:\d+)\/v1\n/);
      if (m) {
        started = true;
        clearTimeout(timer);
        const url = m[1];
        resolve({
          url,
          base: url + "/v1",
          proc,
          stderr: () => err,
          exited,
          stop: () => {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
            return exited;
          },
        });
      }
    });
    proc.on("error", (e) => { clearTimeout(timer); reject(e); });
    exited.then((code) => {
      if (!started) {
        clearTimeout(timer);
        reject(new Error(`dynosim live exited with ${code} before serving: ${err}`));
      }
    });
  });
}

// scrape answers the server's /metrics text (url without /v1).
export async function scrape(url) {
  const r = await fetch(url + "/metrics");
  if (!r.ok) throw new Error(`GET ${url}/metrics: ${r.status}`);
  return r.text();
}

// samples parses Prometheus text into [{name, labels, value}].
export function samples(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#") continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    if (m[2]) for (const l of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

// metric sums the samples of the metric called name (exactly: not its
// _bucket/_sum/_count series unless named so) whose labels include every
// label of labelFilter ({finished_reason: "length"}). NaN if there is none.
export function metric(text, name, labelFilter = {}) {
  let sum = 0, n = 0;
  for (const s of samples(text)) {
    if (s.name !== name) continue;
    if (!Object.entries(labelFilter).every(([k, v]) => s.labels[k] === String(v))) continue;
    sum += s.value;
    n++;
  }
  return n ? sum : NaN;
}

// waitFor polls fn (async, answers truthy when done) every intervalMs for
// up to timeoutMs and answers its last value; it throws on timeout with
// describe()'s text.
export async function waitFor(fn, { timeoutMs = 10000, intervalMs = 50, describe = () => "" } = {}) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms: ${await describe()}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

// rss is a process's resident set size in bytes (Linux: /proc/<pid>/status).
export function rss(pid) {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+)\s+kB/m);
  return m ? Number(m[1]) * 1024 : NaN;
}

// sseTap is a fetch for the OpenAI client that records, per streamed
// response, whether its raw body ended with the `data: [DONE]` event (the
// client's iterator ends quietly on a body cut short, so only the bytes
// tell). taps[i] = {status, done: null while open, then true/false}.
export function sseTap() {
  const taps = [];
  const tapFetch = async (url, init) => {
    const r = await fetch(url, init);
    if (!(r.headers.get("content-type") || "").startsWith("text/event-stream") || !r.body) return r;
    const tap = { status: r.status, done: false, ended: false, bytes: 0 };
    taps.push(tap);
    const dec = new TextDecoder();
    let tail = "";
    const ts = new TransformStream({
      transform(chunk, c) {
        tap.bytes += chunk.byteLength;
        tail = (tail + dec.decode(chunk, { stream: true })).slice(-64);
        tap.done = tail.endsWith("data: [DONE]\n\n");
        c.enqueue(chunk);
      },
      flush() { tap.ended = true; },
    });
    return new Response(r.body.pipeThrough(ts), { status: r.status, statusText: r.statusText, headers: r.headers });
  };
  return { taps, fetch: tapFetch };
}
