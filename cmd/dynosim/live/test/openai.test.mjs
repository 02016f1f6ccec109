// `dynosim live` seen through the official OpenAI client (npm `openai`):
// chunk shapes, usage and cached tokens, client-measured TTFT/ITL against
// the offline prediction of the same config, 200 concurrent streams,
// client disconnects, 429 with Retry-After, and graceful SIGTERM.
//
// Run: go build -o bin/dynosim ./cmd/dynosim &&
//   DYNOSIM_BIN=bin/dynosim node --test --test-concurrency=1 cmd/dynosim/live/test/*.test.mjs
//
// Knobs: LIVE_TTFT_OVERHEAD_MS (fixed TTFT allowance, see the latency test),
// LIVE_TEST_KEEP=1 keeps the latency test's temp dir.
import { test } from "node:test";
import assert from "node:assert/strict";
import dc from "node:diagnostics_channel";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { bin, metric, scrape, sseTap, startLive, waitFor } from "./helpers.mjs";

const MODEL = "llama-3.1-8b";
const BLOCK = 64; // the embedded default's KV block size (tokens)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const client = (base, opts = {}) => new OpenAI({ baseURL: base, apiKey: "unused", maxRetries: 0, ...opts });
const ids = (n, from) => Array.from({ length: n }, (_, j) => from + j);

// tokenize asks the server how many tokens a request body's prompt is.
async function tokenize(url, body) {
  const r = await fetch(url + "/tokenize", { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  assert.equal(r.status, 200);
  return (await r.json()).count;
}

// collect reads a chat or completion stream into its parts.
async function collect(stream, chat) {
  const out = { chunks: [], texts: [], finish: [], usage: null, roleFirst: false };
  for await (const ch of stream) {
    out.chunks.push(ch);
    if (ch.usage) out.usage = ch.usage;
    const c = ch.choices[0];
    if (!c) continue;
    if (chat && out.chunks.length === 1) out.roleFirst = c.delta?.role === "assistant";
    const text = chat ? c.delta?.content : c.text;
    if (text) out.texts.push(text);
    if (c.finish_reason) out.finish.push(c.finish_reason);
  }
  return out;
}

test("chat and text completions through the openai client", async (t) => {
  const srv = await startLive();
  const c = client(srv.base);
  try {
    await t.test("chat, streaming with usage", async () => {
      const messages = [{ role: "system", content: "You are terse." }, { role: "user", content: "Say eight words about the sea." }];
      const s = await c.chat.completions.create({ model: MODEL, messages, max_tokens: 8, stream: true, stream_options: { include_usage: true } });
      const r = await collect(s, true);
      assert.ok(r.roleFirst, "the first chunk carries delta.role = assistant");
      assert.equal(r.texts.length, 8, "8 content deltas");
      for (const x of r.texts) assert.match(x, /^ [a-z]+$/);
      assert.deepEqual(r.finish, ["length"]);
      for (const ch of r.chunks) {
        assert.equal(ch.object, "chat.completion.chunk");
        assert.equal(ch.model, MODEL);
        assert.equal(ch.id, r.chunks[0].id);
        assert.match(ch.id, /^chatcmpl-/);
      }
      const last = r.chunks.at(-1);
      assert.deepEqual(last.choices, [], "the usage chunk has no choices");
      assert.equal(r.usage.prompt_tokens, await tokenize(srv.url, { messages }));
      assert.equal(r.usage.completion_tokens, 8);
      assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 8);
      assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, "number");
    });

    await t.test("chat, non-streaming", async () => {
      const messages = [{ role: "user", content: "Hello there, how are you today?" }];
      const r = await c.chat.completions.create({ model: MODEL, messages, max_tokens: 5 });
      assert.equal(r.object, "chat.completion");
      assert.equal(r.model, MODEL);
      assert.equal(r.choices.length, 1);
      assert.equal(r.choices[0].message.role, "assistant");
      assert.equal(r.choices[0].message.content.split(" ").filter(Boolean).length, 5);
      assert.equal(r.choices[0].finish_reason, "length");
      assert.equal(r.usage.prompt_tokens, await tokenize(srv.url, { messages }));
      assert.equal(r.usage.completion_tokens, 5);
      assert.equal(r.usage.prompt_tokens_details.cached_tokens, 0);
    });

    await t.test("completions, streaming with a text prompt", async () => {
      const prompt = "The quick brown fox jumps over the lazy dog.";
      const s = await c.completions.create({ model: MODEL, prompt, max_tokens: 6, stream: true, stream_options: { include_usage: true } });
      const r = await collect(s, false);
      assert.equal(r.texts.length, 6);
      assert.deepEqual(r.finish, ["length"]);
      for (const ch of r.chunks) assert.equal(ch.object, "text_completion");
      assert.match(r.chunks[0].id, /^cmpl-/);
      assert.equal(r.usage.prompt_tokens, await tokenize(srv.url, { prompt }));
      assert.equal(r.usage.completion_tokens, 6);
    });

    await t.test("completions, non-streaming with token-id prompts", async () => {
      const r = await c.completions.create({ model: MODEL, prompt: ids(50, 1000), max_tokens: 4 });
      assert.equal(r.object, "text_completion");
      assert.equal(r.choices[0].text.split(" ").filter(Boolean).length, 4);
      assert.equal(r.choices[0].finish_reason, "length");
      assert.equal(r.usage.prompt_tokens, 50);
      assert.equal(r.usage.completion_tokens, 4);
      const b = await c.completions.create({ model: MODEL, prompt: [ids(70, 5000)], max_tokens: 3 });
      assert.equal(b.usage.prompt_tokens, 70, "a batch of one token-id prompt");
      const d = await c.completions.create({ model: MODEL, prompt: "default length" });
      assert.equal(d.usage.completion_tokens, 16, "max_tokens defaults to 16 for completions");
    });

    await t.test("models.list and an unknown model", async () => {
      const models = [];
      for await (const m of c.models.list()) models.push(m);
      assert.deepEqual(models.map((m) => m.id), [MODEL]);
      assert.equal(models[0].object, "model");
      await assert.rejects(c.completions.create({ model: "no-such-model", prompt: "x", max_tokens: 1 }),
        (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
    });
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test("prefix caching: a repeated long prompt reports cached tokens", async (t) => {
  // Round robin over the default 8 workers would send the repeat elsewhere;
  // the KV-aware router sends it to the worker that holds its prefix.
  const srv = await startLive(["--set", "router.policy=kv_router"]);
  try {
    const c = client(srv.base);
    const messages = [{ role: "user", content: "The tide comes in and the tide goes out again. ".repeat(40) }];
    const n = await tokenize(srv.url, { messages });
    assert.ok(n >= 300, `the prompt is ${n} tokens`);
    const first = await c.chat.completions.create({ model: MODEL, messages, max_tokens: 4 });
    assert.equal(first.usage.prompt_tokens, n);
    assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
    const s = await c.chat.completions.create({ model: MODEL, messages, max_tokens: 4, stream: true, stream_options: { include_usage: true } });
    const second = (await collect(s, true)).usage;
    const cached = second.prompt_tokens_details.cached_tokens;
    assert.equal(second.prompt_tokens, n);
    assert.ok(cached > 0, "the repeat hits the prefix cache");
    assert.equal(cached % BLOCK, 0, `cached_tokens ${cached} is whole blocks of ${BLOCK}`);
    assert.ok(cached <= n - 1, "at least one prompt token is computed");
    assert.ok(cached >= Math.floor((n - 1) / BLOCK) * BLOCK - BLOCK, `cached ${cached} of ${n}: all full blocks but the last`);
    t.diagnostic(`prompt ${n} tokens: first request cached 0, the repeat cached ${cached}`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// The config the latency test serves and predicts: one vLLM worker of the
// embedded default (llama-3.1-8b on h100_sxm, roofline timing).
const LATENCY_CONFIG = `traffic:
  source: {type: trace, format: mooncake, paths: [trace.jsonl], block_size: ${BLOCK}}
  load: {type: trace_timestamps, speedup: 1.0}
engine:
  mode: aggregated
  backend: vllm
  model: llama-3.1-8b
  hardware: h100_sxm
  workers:
    aggregated:
      parallelism: {replicas: 1, tensor: 1, attention_data: 1}
      scheduler: {max_batched_tokens: 8192, max_sequences: 256, preemption: lifo, chunked_prefill: true}
      kv_cache: {block_size: ${BLOCK}, prefix_caching: true, g1_backend: native, capacity: {type: default, memory_fraction: 0.9}}
      timing: {type: default, speedup: 1.0, decode_speedup: 1.0}
router: {policy: round_robin}
execution: {seed: 42}
`;

// The fixed TTFT allowance on top of 5 % of the prediction: what this
// client stack (node's fetch + the openai client) and the server's wall
// clock add before the first token. Measured on a 2-core VM (node 20,
// openai 6.49), the client's TTFT is 4–8 ms above the prediction, of which
// 2–5 ms is the client building and sending the request (create() to
// undici's bodySent) and ~1 ms the client turning the first response bytes
// into a chunk; the server and the wire take 1–2.3 ms (decoding the
// request, the driver's wake-up, Go's timer lateness on the wake-up that
// emits the first token). The test's diagnostics show each run's split.
const TTFT_OVERHEAD_MS = Number(process.env.LIVE_TTFT_OVERHEAD_MS || 12);
// The server's own share (from the request's last byte sent to the first
// response bytes, as node's fetch reports them), held tighter.
const SERVER_OVERHEAD_MS = Number(process.env.LIVE_SERVER_OVERHEAD_MS || 4);
// ITL is a mean over 39 gaps, so the fixed costs cancel but for the first
// token's own extra delivery cost spread over them (the client's ITL comes
// out 0.2–2 % below the prediction).
const ITL_OVERHEAD_MS = 0.25;

test("TTFT and ITL measured by the client at low load match the offline prediction", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "dynosim-live-latency-"));
  const cfg = path.join(dir, "config.yaml");
  writeFileSync(cfg, LATENCY_CONFIG);
  const lengths = [200, 3000, 450, 1200, 2500, 800, 300, 1800, 600, 2200, 1000, 1500];
  const OUT = 40;
  // Request k's prompt: ids k*100000+j, none shared, so nothing is cached.
  const promptOf = (k) => ids(lengths[k], (k + 1) * 100000);

  // The same requests, offline: a trace with their lengths, 5 s apart.
  const trace = path.join(dir, "trace.jsonl");
  writeFileSync(trace, lengths.map((n, k) => JSON.stringify({
    timestamp: k * 5000, input_length: n, output_length: OUT,
    hash_ids: ids(Math.ceil(n / BLOCK), (k + 1) * 100000),
  })).join("\n") + "\n");
  const out = path.join(dir, "out");
  execFileSync(bin, ["predict", "-c", cfg, "--trace", trace, "--format", "json", "--output-dir", out, "--capture-per-request"],
    { stdio: ["ignore", "ignore", "pipe"] });
  const predicted = readFileSync(path.join(out, "requests.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
    .sort((a, b) => a.arrival_time_ms - b.arrival_time_ms);
  assert.equal(predicted.length, lengths.length);
  for (const [k, p] of predicted.entries()) {
    assert.equal(p.input_length, lengths[k]);
    assert.equal(p.output_length, OUT);
    assert.equal(p.reused_input_tokens, 0);
  }

  // Where the client's time goes, from node's fetch (undici) events.
  let ev = {};
  const subs = ["undici:request:create", "undici:request:bodySent", "undici:request:headers"].map((name) => {
    const fn = () => { ev[name.split(":")[2]] = performance.now(); };
    dc.subscribe(name, fn);
    return () => dc.unsubscribe(name, fn);
  });

  // One request's measurement and how far it is from its prediction.
  const f = (x, w = 7, d = 2) => x.toFixed(d).padStart(w);
  const check = (k, m) => {
    const p = predicted[k];
    const ttft = m.times[0] - m.t0;
    const itl = (m.times.at(-1) - m.times[0]) / (OUT - 1);
    const dTTFT = ttft - p.ttft_ms, dITL = itl - p.itl_ms;
    const dServer = m.headers - m.bodySent - p.ttft_ms; // NaN without undici's events
    const fails = [];
    if (!(Math.abs(dTTFT) <= 0.05 * p.ttft_ms + TTFT_OVERHEAD_MS)) fails.push(`request ${k} (${lengths[k]} tokens): TTFT ${ttft.toFixed(2)} ms vs predicted ${p.ttft_ms.toFixed(2)} ms`);
    if (Math.abs(dServer) > 0.05 * p.ttft_ms + SERVER_OVERHEAD_MS) fails.push(`request ${k} (${lengths[k]} tokens): request sent → first response bytes ${(m.headers - m.bodySent).toFixed(2)} ms vs predicted TTFT ${p.ttft_ms.toFixed(2)} ms`);
    if (!(Math.abs(dITL) <= 0.05 * p.itl_ms + ITL_OVERHEAD_MS)) fails.push(`request ${k} (${lengths[k]} tokens): ITL ${itl.toFixed(3)} ms vs predicted ${p.itl_ms.toFixed(3)} ms`);
    const row = `${String(lengths[k]).padStart(5)} ${f(p.ttft_ms)} ${f(ttft)} ${f(dTTFT, 6)} (${f(m.bodySent - m.t0, 5)} ${f(dServer, 5)} ${f(m.times[0] - m.headers, 5)})` +
      ` | ${f(p.itl_ms, 6, 3)} ${f(itl, 6, 3)} ${f(dITL, 6, 3)} ${f(100 * dITL / p.itl_ms, 5, 1)}%`;
    return { fails, row };
  };

  // A request outside its allowance is measured again (a fresh prompt of
  // the same length, so still nothing cached), up to RETRIES more times,
  // and passes if one measurement is within it. On a loaded machine another
  // process sometimes holds the CPU for a few ms while a request is in
  // flight; a server whose pace is wrong misses on every attempt.
  const RETRIES = 2;
  const srv = await startLive(["-c", cfg]);
  const measured = [], rows = [], failures = [], remeasured = [];
  try {
    const c = client(srv.base);
    const one = async (prompt) => {
      ev = {};
      const t0 = performance.now();
      const s = await c.completions.create({ model: MODEL, prompt, max_tokens: OUT, stream: true });
      const times = [];
      for await (const ch of s) if (ch.choices[0]?.text) times.push(performance.now());
      return { t0, times, ...ev };
    };
    // Warm-up (not compared): the first requests of a process pay for the
    // connection and for JIT-compiling the client's code paths.
    for (let w = 0; w < 3; w++) await one(ids(100, 90_000_000 + w * 1000));
    for (let k = 0; k < lengths.length; k++) {
      for (let attempt = 0; ; attempt++) {
        const prompt = attempt === 0 ? promptOf(k) : ids(lengths[k], 50_000_000 + (k * (RETRIES + 1) + attempt) * 10_000);
        const m = await one(prompt);
        await sleep(50);
        assert.equal(m.times.length, OUT, `request ${k}: ${OUT} text chunks`);
        const { fails, row } = check(k, m);
        if (fails.length === 0 || attempt === RETRIES) {
          measured.push(m);
          rows.push(row + (attempt ? ` (attempt ${attempt + 1})` : ""));
          failures.push(...fails);
          break;
        }
        remeasured.push(`${fails.join("; ")} (attempt ${attempt + 1})`);
      }
    }
  } finally {
    subs.forEach((u) => u());
    assert.equal(await srv.stop(), 0);
  }

  const dT = measured.map((m, k) => m.times[0] - m.t0 - predicted[k].ttft_ms);
  const dI = measured.map((m, k) => (m.times.at(-1) - m.times[0]) / (OUT - 1) - predicted[k].itl_ms);
  const stats = (a) => { const s = [...a].sort((x, y) => x - y); return `min ${s[0].toFixed(3)} median ${s[s.length >> 1].toFixed(3)} max ${s.at(-1).toFixed(3)} mean ${(a.reduce((x, y) => x + y, 0) / a.length).toFixed(3)}`; };
  t.diagnostic(`allowance: TTFT 5% + ${TTFT_OVERHEAD_MS} ms (server share 5% + ${SERVER_OVERHEAD_MS} ms), ITL 5% + ${ITL_OVERHEAD_MS} ms`);
  t.diagnostic("input  pred_ttft client_ttft  diff (client send | server+wire over pred | client parse) | pred_itl client_itl diff  rel");
  for (const r of rows) t.diagnostic(r);
  for (const r of remeasured) t.diagnostic(`measured again: ${r}`);
  t.diagnostic(`TTFT client − predicted (ms): ${stats(dT)}`);
  t.diagnostic(`ITL client − predicted (ms): ${stats(dI)}`);
  if (process.env.LIVE_TEST_KEEP) t.diagnostic(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(failures, []);
  // Tokens never come before the simulated pass that made them ends.
  for (const d of dT) assert.ok(d > -0.5, `a first token came ${-d} ms before its predicted time`);
});

test("200 concurrent streaming clients all complete", async (t) => {
  const srv = await startLive(["--speedup", "4", "--max-waiting", "1000"]);
  try {
    const tap = sseTap();
    const c = client(srv.base, { fetch: tap.fetch, timeout: 60000 });
    const N = 200, OUT = 32;
    const words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split(" ");
    const t0 = performance.now();
    const results = await Promise.allSettled(Array.from({ length: N }, async (_, i) => {
      // ~100 tokens, distinct per client.
      const content = `Client ${i}: ` + Array.from({ length: 90 }, (_, j) => words[(i + j * 7) % words.length]).join(" ");
      const s = await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content }], max_tokens: OUT, stream: true, stream_options: { include_usage: true } });
      return collect(s, true);
    }));
    const wall = performance.now() - t0;
    const bad = [];
    results.forEach((r, i) => {
      if (r.status === "rejected") return bad.push(`client ${i}: ${r.reason}`);
      const v = r.value;
      if (v.texts.length !== OUT || v.finish.join() !== "length" || v.usage?.completion_tokens !== OUT || !v.roleFirst)
        bad.push(`client ${i}: ${v.texts.length} tokens, finish ${v.finish}, usage ${JSON.stringify(v.usage)}`);
    });
    assert.deepEqual(bad, []);
    assert.equal(tap.taps.length, N);
    assert.equal(tap.taps.filter((x) => x.done === true).length, N, "every stream ends with data: [DONE]");
    const m = await waitFor(async () => {
      const text = await scrape(srv.url);
      return metric(text, "vllm:num_requests_running") === 0 && metric(text, "vllm:kv_cache_usage_perc") === 0 ? text : null;
    }, { timeoutMs: 5000, describe: async () => { const x = await scrape(srv.url); return `running ${metric(x, "vllm:num_requests_running")} kv ${metric(x, "vllm:kv_cache_usage_perc")}`; } });
    assert.equal(metric(m, "vllm:request_success_total", { finished_reason: "length" }), N);
    assert.equal(metric(m, "vllm:request_success_total", { finished_reason: "abort" }), 0);
    assert.equal(metric(m, "vllm:request_success_total", { finished_reason: "error" }), 0);
    assert.equal(metric(m, "vllm:num_requests_waiting"), 0);
    assert.equal(metric(m, "vllm:generation_tokens_total"), N * OUT);
    t.diagnostic(`${N} streams × ${OUT} tokens in ${wall.toFixed(0)} ms wall (speedup 4)`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test("a client that disconnects mid-stream is aborted and frees its KV", async (t) => {
  const srv = await startLive();
  try {
    const c = client(srv.base);
    const ac = new AbortController();
    const s = await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Go on forever." }], max_tokens: 100000, stream: true },
      { signal: ac.signal });
    let n = 0, caught = null;
    try {
      for await (const ch of s) {
        if (ch.choices[0]?.delta?.content) n++;
        if (n === 3) {
          const during = await scrape(srv.url);
          assert.equal(metric(during, "vllm:num_requests_running"), 1);
          assert.ok(metric(during, "vllm:kv_cache_usage_perc") > 0, "the stream holds KV blocks");
          ac.abort();
        }
      }
    } catch (e) {
      caught = e;
    }
    assert.equal(n, 3, "no chunk after the abort");
    if (caught) assert.ok(caught instanceof OpenAI.APIUserAbortError, `aborting ends the stream (got ${caught})`);
    t.diagnostic(`the client's iterator ${caught ? `threw ${caught.constructor.name}` : "ended quietly"} on abort`);
    const m = await waitFor(async () => {
      const text = await scrape(srv.url);
      return metric(text, "vllm:request_success_total", { finished_reason: "abort" }) === 1 &&
        metric(text, "vllm:num_requests_running") === 0 && metric(text, "vllm:kv_cache_usage_perc") === 0 ? text : null;
    }, { timeoutMs: 5000, describe: async () => {
      const x = await scrape(srv.url);
      return `abort ${metric(x, "vllm:request_success_total", { finished_reason: "abort" })}, running ${metric(x, "vllm:num_requests_running")}, kv ${metric(x, "vllm:kv_cache_usage_perc")}`;
    } });
    assert.equal(metric(m, "vllm:request_success_total", { finished_reason: "length" }), 0);
    // The server still serves.
    const r = await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Hi" }], max_tokens: 2 });
    assert.equal(r.usage.completion_tokens, 2);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test("429 with Retry-After when the waiting queue is full; the client's retries honour it", async (t) => {
  const srv = await startLive(["--max-waiting", "2", "--set", "engine.workers.aggregated.parallelism.replicas=1",
    "--set", "engine.workers.aggregated.scheduler.max_sequences=1"]);
  try {
    const c = client(srv.base);
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) =>
      c.completions.create({ model: MODEL, prompt: ids(20, i * 1000), max_tokens: 200 })));
    const ok = results.filter((r) => r.status === "fulfilled"), rejected = results.filter((r) => r.status === "rejected");
    t.diagnostic(`${ok.length} answered, ${rejected.length} got 429`);
    assert.ok(ok.length >= 1 && rejected.length >= 1, `${ok.length} answered, ${rejected.length} rejected`);
    for (const r of ok) assert.equal(r.value.usage.completion_tokens, 200);
    for (const { reason: e } of rejected) {
      assert.ok(e instanceof OpenAI.RateLimitError, `${e}`);
      assert.equal(e.status, 429);
      assert.equal(e.headers.get("retry-after"), "1");
      assert.equal(e.error?.type, "RateLimitError");
    }

    // Fill the queue again (one running, two waiting), then ask with
    // retries: the first attempt gets 429, the client waits the second
    // Retry-After says (its own backoff would be ≤ 0.5 s), and a later
    // attempt gets in once the running request is done.
    // (A request counts as waiting until an engine admits it, which is
    // after the frontend's simulated latency: send them one by one.)
    // The running one is a long stream that this test ends itself when the
    // first attempt got its 429: a short one could finish before the queue
    // was full or before that attempt arrived, however long the test
    // waited, on a machine busy enough (it did, with max_tokens 100). It
    // fits the KV pool: one that cannot is refused up front (issue 29 item 8).
    const hold = new AbortController();
    const held = c.completions.create({ model: MODEL, prompt: ids(20, 50000), max_tokens: 400_000, stream: true }, { signal: hold.signal })
      .then(async (s) => { for await (const _ of s); });
    const fill = [];
    for (let i = 0; i < 3; i++) {
      if (i > 0) fill.push(c.completions.create({ model: MODEL, prompt: ids(20, 50000 + i * 1000), max_tokens: 100 }));
      // Nothing finishes while the stream is held: the count only grows.
      await waitFor(async () => {
        const x = await scrape(srv.url);
        return metric(x, "vllm:num_requests_running") + metric(x, "vllm:num_requests_waiting") === i + 1;
      }, { timeoutMs: 60000, intervalMs: 5 });
    }
    const filled = Promise.allSettled(fill);
    const attempts = [];
    const retrying = client(srv.base, {
      maxRetries: 3,
      fetch: async (url, init) => {
        const sent = performance.now();
        const r = await fetch(url, init);
        attempts.push({ sent, at: performance.now(), status: r.status, retryAfter: r.headers.get("retry-after") });
        if (r.status === 429) hold.abort(); // the running request is done: the queue moves
        return r;
      },
    });
    const t0 = performance.now();
    const r = await retrying.completions.create({ model: MODEL, prompt: ids(20, 90000), max_tokens: 5 });
    assert.equal(r.usage.completion_tokens, 5);
    const [h] = await Promise.allSettled([held]);
    // (Aborting ends the stream's iteration, or makes it throw.)
    assert.ok(h.status === "fulfilled" || h.reason instanceof OpenAI.APIUserAbortError, `the held stream ends by its abort (got ${h.reason})`);
    for (const f of await filled) assert.equal(f.status, "fulfilled", `${f.reason}`);
    t.diagnostic(`attempts (sent → answered): ${attempts.map((a) => `${(a.sent - t0).toFixed(0)} → ${(a.at - t0).toFixed(0)} ms: ${a.status}`).join(", ")}`);
    assert.ok(attempts.length >= 2, "at least one retry");
    assert.equal(attempts[0].status, 429);
    assert.equal(attempts[0].retryAfter, "1");
    assert.equal(attempts.at(-1).status, 200);
    for (let i = 1; i < attempts.length; i++) {
      const gap = attempts[i].sent - attempts[i - 1].at;
      assert.ok(gap >= 950, `retry ${i} came ${gap.toFixed(0)} ms after a 429 with Retry-After: 1`);
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test("SIGTERM lets an open stream finish, refuses new requests and exits 0", async (t) => {
  const srv = await startLive();
  const tap = sseTap();
  const c = client(srv.base, { fetch: tap.fetch });
  const OUT = 100;
  const s = await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Tell a story." }], max_tokens: OUT, stream: true, stream_options: { include_usage: true } });
  let n = 0, refused = null;
  const texts = [], finish = [];
  let usage = null;
  for await (const ch of s) {
    if (ch.usage) usage = ch.usage;
    const d = ch.choices[0];
    if (d?.delta?.content) texts.push(d.delta.content);
    if (d?.finish_reason) finish.push(d.finish_reason);
    if (++n === 5) {
      srv.proc.kill("SIGTERM");
      await sleep(50);
      // A fresh client (no pooled connection): the listener is closed.
      refused = await client(srv.base).completions.create({ model: MODEL, prompt: "late", max_tokens: 1 }).then(
        (r) => new Error(`answered after SIGTERM: ${JSON.stringify(r)}`), (e) => e);
    }
  }
  assert.equal(texts.length, OUT, "the open stream got all its tokens");
  assert.deepEqual(finish, ["length"]);
  assert.equal(usage.completion_tokens, OUT);
  assert.equal(tap.taps[0].done, true, "and its [DONE]");
  assert.ok(refused instanceof OpenAI.APIConnectionError, `a request after SIGTERM fails to connect (got ${refused})`);
  let cause = refused;
  while (cause?.cause) cause = cause.cause;
  t.diagnostic(`request after SIGTERM: ${refused.constructor.name} (${cause?.code || cause?.message})`);
  assert.equal(await srv.exited, 0);
  assert.match(srv.stderr(), /dynosim: live: stopped\n$/);
});
