// Soak benchmark for `dynosim live` (not part of CI):
//
//   node cmd/dynosim/live/test/soak.mjs [--minutes 2] [--clients 200] [--speedup 1] [--abort 0.05] [--sample 10]
//
// Starts `dynosim live` (DYNOSIM_BIN, default bin/dynosim) and runs N
// client loops, each sending streaming chat requests back to back through
// the official openai client: varied prompt lengths and max_tokens, half of
// them behind one shared system prompt, ~5 % aborted mid-stream with an
// AbortController. Every 10 s it samples the server's RSS (/proc/<pid>/
// status), go_memstats_heap_inuse_bytes and go_goroutines (/metrics) and
// the client-side counts. At the end it prints the table and a verdict and
// exits non-zero if any request was lost (an error other than the aborts,
// a stream short of its tokens or of [DONE], or server counts that do not
// match the client's) or if memory grew (heap or RSS: second-half mean
// more than 20 % off the first half's, or a fitted upward trend of more
// than 20 % over the run).
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import OpenAI from "openai";
import { metric, rss, scrape, sseTap, startLive, waitFor } from "./helpers.mjs";

if (isMainThread && process.env.NODE_TEST_CONTEXT) {
  // Picked up by a bare `node --test` (it runs every .mjs under test/):
  // this is a benchmark, not a test.
  console.log("soak.mjs is a benchmark; run it with `node cmd/dynosim/live/test/soak.mjs`");
  process.exit(0);
}

function flag(name, def) {
  const i = process.argv.indexOf("--" + name);
  return i > 0 && i + 1 < process.argv.length ? Number(process.argv[i + 1]) : def;
}
// Speedup 1 by default: on a 2-core machine one node thread reads ~23k
// tokens/s from 200 streams, about what the server emits at 1×. At 4× the
// client falls seconds behind the server, which then sends the last token
// of nearly every stream the client later aborts (the abort path is barely
// exercised: of ~360 client aborts only ~3 reached the server in time).
const MINUTES = flag("minutes", 2), CLIENTS = flag("clients", 200), SPEEDUP = flag("speedup", 1);
const ABORT = flag("abort", 0.05), SAMPLE_S = flag("sample", 10);
const MODEL = "llama-3.1-8b";

// A small deterministic PRNG per client loop, so a run is repeatable.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}
const WORDS = ("the of and to in is was that for on with as by at from his her an which or had are not but " +
  "river mountain engine lattice quantum harbor signal orchard copper lantern meadow circuit").split(" ");
const words = (r, n) => Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(" ");
const SYSTEM = "You are a careful assistant. " + words(rng(7), 180); // shared prefix, ~200 tokens

// The client-side counts, in shared memory: the sampler runs in a worker
// thread (its own event loop: the main one is busy with 200 streams and
// delayed a scrape by 10-20 s), and reads them from there.
const COUNTS = ["started", "completed", "aborted", "errors", "tokens"];
const shared = isMainThread ? new SharedArrayBuffer(4 * COUNTS.length) : workerData.shared;
const cells = new Int32Array(shared);
const slot = Object.fromEntries(COUNTS.map((k, i) => [k, i]));
const bump = (k) => Atomics.add(cells, slot[k], 1);
const count = (k) => Atomics.load(cells, slot[k]);
const snapshot = () => Object.fromEntries(COUNTS.map((k) => [k, count(k)]));
const errors = [];
function lost(msg) {
  bump("errors");
  if (errors.length < 20) errors.push(msg);
}

async function clientLoop(i, base, deadline) {
  const r = rng(1000 + i);
  const tap = sseTap();
  const c = new OpenAI({ baseURL: base, apiKey: "unused", maxRetries: 0, fetch: tap.fetch, timeout: 120000 });
  while (Date.now() < deadline) {
    // An aborted request stops well before its end (at most 32 of at least
    // 128 tokens), so the abort reaches the server before it finishes.
    const abortAt = r() < ABORT ? 1 + Math.floor(r() * 32) : 0;
    const maxTokens = abortAt ? 128 + Math.floor(r() * 128) : 16 + Math.floor(r() * 240);
    const messages = [{ role: "user", content: `Request ${i}-${count("started")}: ` + words(r, 10 + Math.floor(r() * 400)) }];
    if (r() < 0.5) messages.unshift({ role: "system", content: SYSTEM });
    const ac = new AbortController();
    bump("started");
    let n = 0, finish = null, usage = null;
    try {
      const s = await c.chat.completions.create({ model: MODEL, messages, max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } },
        { signal: ac.signal });
      for await (const ch of s) {
        if (ch.usage) usage = ch.usage;
        const d = ch.choices[0];
        if (d?.delta?.content) {
          n++;
          bump("tokens");
          if (n === abortAt) ac.abort();
        }
        if (d?.finish_reason) finish = d.finish_reason;
      }
      const t = tap.taps.pop();
      if (abortAt) {
        if (n !== abortAt) lost(`client ${i}: aborted after ${abortAt} tokens but read ${n}`);
        else bump("aborted");
      } else if (n !== maxTokens || finish !== "length" || usage?.completion_tokens !== maxTokens || !t?.done) {
        lost(`client ${i}: ${n}/${maxTokens} tokens, finish ${finish}, usage ${JSON.stringify(usage)}, [DONE] ${t?.done}`);
      } else bump("completed");
    } catch (e) {
      tap.taps.pop();
      if (abortAt && ac.signal.aborted && e instanceof OpenAI.APIUserAbortError) bump("aborted");
      else lost(`client ${i}: ${e?.constructor?.name}: ${e?.message}`);
    }
  }
}

function trend(xs, ys) {
  // Least-squares slope of ys over xs.
  const n = xs.length, mx = xs.reduce((a, b) => a + b, 0) / n, my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0, den = 0;
  for (let k = 0; k < n; k++) { num += (xs[k] - mx) * (ys[k] - my); den += (xs[k] - mx) ** 2; }
  return den ? num / den : 0;
}
const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
const MiB = (b) => (b / 2 ** 20).toFixed(1);

async function main() {
  const srv = await startLive(["--speedup", String(SPEEDUP), "--max-waiting", String(Math.max(1000, CLIENTS * 2))]);
  const pid = srv.proc.pid;
  console.log(`soak: ${CLIENTS} clients for ${MINUTES} min against ${srv.base} (pid ${pid}, speedup ${SPEEDUP}, ~${(ABORT * 100).toFixed(0)} % aborted)`);
  const samples = [];
  const t0 = Date.now();
  const sampler = new Worker(new URL(import.meta.url), { workerData: { shared, url: srv.url, pid, t0, every: SAMPLE_S * 1000 } });
  const pending = [];
  sampler.on("message", (s) => {
    samples.push(s);
    console.log(`  t=${s.t.toFixed(0).padStart(4)}s rss ${MiB(s.rss).padStart(6)} MiB heap ${MiB(s.heap).padStart(6)} MiB goroutines ${String(s.goroutines).padStart(5)} running ${String(s.running).padStart(4)} ` +
      `completed ${s.completed} aborted ${s.aborted} errors ${s.errors}` + (s.error ? ` (scrape failed: ${s.error})` : ""));
    if (s.label !== "load") pending.shift()?.(s);
  });
  const sample = (label) => new Promise((r) => { pending.push(r); sampler.postMessage({ label }); });
  await sample("idle");
  const deadline = t0 + MINUTES * 60000;
  sampler.postMessage({ start: deadline - 1000 });
  const loops = Array.from({ length: CLIENTS }, (_, i) => clientLoop(i, srv.base, deadline));
  await Promise.all(loops);
  const drained = (Date.now() - deadline) / 1000;
  // Idle again: every request done, and the server says so.
  let final;
  try {
    final = await waitFor(async () => {
      const m = await scrape(srv.url);
      return metric(m, "vllm:num_requests_running") === 0 && metric(m, "vllm:num_requests_waiting") === 0 ? m : null;
    }, { timeoutMs: 10000, intervalMs: 100 });
  } catch (e) {
    final = await scrape(srv.url);
    lost(`server not idle after the clients finished: ${e.message}`);
  }
  await new Promise((r) => setTimeout(r, 2000));
  await sample("after");
  await sampler.terminate();
  const served = metric(final, "vllm:request_success_total", { finished_reason: "length" });
  const abortedServer = metric(final, "vllm:request_success_total", { finished_reason: "abort" });
  const errServer = metric(final, "vllm:request_success_total", { finished_reason: "error" });
  const code = await srv.stop();
  const c = snapshot();

  // The table.
  console.log("\n     t   phase    RSS MiB  heap_inuse MiB  goroutines  running  started  completed  aborted  errors");
  for (const s of samples)
    console.log(`${s.t.toFixed(0).padStart(6)}s  ${s.label.padEnd(6)} ${MiB(s.rss).padStart(9)} ${MiB(s.heap).padStart(15)} ${String(s.goroutines).padStart(11)} ${String(s.running).padStart(8)}` +
      ` ${String(s.started).padStart(8)} ${String(s.completed).padStart(10)} ${String(s.aborted).padStart(8)} ${String(s.errors).padStart(7)}`);

  // The verdict: memory under load (the "load" samples) must stay flat.
  const load = samples.filter((s) => s.label === "load");
  const verdicts = [];
  let grew = false;
  if (load.length < 4) {
    verdicts.push(`only ${load.length} samples under load: too short to judge memory`);
    grew = true;
  } else {
    const half = Math.floor(load.length / 2);
    for (const [key, name] of [["heap", "heap_inuse"], ["rss", "RSS"], ["goroutines", "goroutines"]]) {
      const ys = load.map((s) => s[key]), xs = load.map((s) => s.t);
      const first = mean(ys.slice(0, half)), second = mean(ys.slice(load.length - half));
      const ratio = second / first;
      const rise = trend(xs, ys) * (xs.at(-1) - xs[0]) / mean(ys); // fitted change over the run, relative
      const ok = ratio >= 0.8 && ratio <= 1.2 && rise <= 0.2;
      if (!ok) grew = true;
      const v = key === "goroutines" ? (x) => x.toFixed(0) : (x) => MiB(x) + " MiB";
      verdicts.push(`${ok ? "flat" : "GREW"}: ${name} first half ${v(first)}, second half ${v(second)} (${((ratio - 1) * 100).toFixed(1)} %), fitted trend ${(rise * 100).toFixed(1)} % over the run`);
    }
  }
  // Every request the clients sent is accounted for by the server. A
  // request the client aborted may still have finished by length on the
  // server: when the client reads behind the stream (200 streams can keep
  // this node process busy), the server has sent the last token before the
  // abort reaches it.
  const mismatch = [];
  if (served + abortedServer !== c.completed + c.aborted)
    mismatch.push(`server finished ${served} by length + ${abortedServer} by abort, the clients completed ${c.completed} + aborted ${c.aborted}`);
  if (abortedServer > c.aborted) mismatch.push(`server aborted ${abortedServer}, more than the clients' ${c.aborted}`);
  if (served < c.completed) mismatch.push(`server finished ${served} by length, fewer than the clients completed (${c.completed})`);
  if (errServer) mismatch.push(`server finished ${errServer} with error`);
  if (code !== 0) mismatch.push(`server exited with ${code}`);
  const elapsed = MINUTES * 60 + drained;
  console.log(`\n${c.started} requests in ${(MINUTES * 60).toFixed(0)} s (+${drained.toFixed(1)} s to drain): ${c.completed} completed, ${c.aborted} aborted, ${c.errors} lost; ` +
    `${c.tokens} tokens streamed (${(c.tokens / elapsed).toFixed(0)}/s wall, ${(c.completed / elapsed).toFixed(1)} completed requests/s)`);
  console.log(`server: ${served} finished by length, ${abortedServer} by abort (${c.aborted - abortedServer} client aborts came after the server's last token), ${errServer} by error; exit ${code}`);
  for (const v of verdicts) console.log(v);
  for (const m of mismatch) console.log("MISMATCH: " + m);
  for (const e of errors) console.log("LOST: " + e);
  const failed = c.errors > 0 || mismatch.length > 0 || grew;
  console.log(failed ? "verdict: FAIL" : "verdict: OK (no request lost, memory flat)");
  process.exit(failed ? 1 : 0);
}

// The sampler thread: every `every` ms from {start} until {start}'s
// deadline, and once per {label} message, it posts a sample.
async function samplerThread() {
  const { url, pid, t0, every } = workerData;
  const take = async (label) => {
    const s = { t: (Date.now() - t0) / 1000, label, ...snapshot() };
    try {
      s.rss = rss(pid);
      const m = await scrape(url);
      const or0 = (x) => (Number.isNaN(x) ? 0 : x);
      Object.assign(s, { heap: metric(m, "go_memstats_heap_inuse_bytes"), goroutines: metric(m, "go_goroutines"),
        running: or0(metric(m, "vllm:num_requests_running")), waiting: or0(metric(m, "vllm:num_requests_waiting")) });
    } catch (e) {
      s.error = e.message;
    }
    parentPort.postMessage(s);
  };
  parentPort.on("message", (msg) => {
    if (msg.label) take(msg.label);
    if (msg.start) {
      const timer = setInterval(() => {
        if (Date.now() >= msg.start) clearInterval(timer);
        else take("load");
      }, every);
    }
  });
}

if (isMainThread) main().catch((e) => { console.error(e); process.exit(2); });
else samplerThread();
