// dynosim.js: the page's JavaScript API, window.dynosim. It owns the Web
// Workers that run the simulator (dynosim.wasm via sim-worker.js); the
// simulator itself is Go. Cancel terminates the run's worker and starts a
// fresh one (Go wasm cannot yield while a replay runs).
//
//   await dynosim.run({config, trace, traceName, profile, profileName})
//     → the report object (same JSON as `dynosim predict --format json`),
//       or rejects with an Error whose message is the CLI's one-line error.
//   await dynosim.runRaw(opts, onProgress) → {json, report, table, requests, wallMs}
//   dynosim.cancel()            stops the current run (it rejects with "canceled")
//   await dynosim.validate(yaml) → null or the one-line error
//   await dynosim.sample(name)  → Blob of an embedded sample trace ("conversation", "synthetic")
"use strict";
(function () {
  const base = new URL(".", document.currentScript ? document.currentScript.src : location.href);
  const samples = {
    conversation: { file: "conversation_trace.jsonl", url: "traces/conversation_trace.jsonl.gz", label: "Mooncake conversation (12,031 requests)" },
    synthetic: { file: "synthetic_trace.jsonl", url: "traces/synthetic_trace.jsonl.gz", label: "Mooncake synthetic (3,993 requests)" },
  };

  // SimWorker wraps one Web Worker running dynosim.wasm.
  class SimWorker {
    constructor() {
      this.pending = new Map();
      this.nextId = 1;
      this.worker = new Worker(new URL("sim-worker.js", base));
      this.ready = new Promise((resolve, reject) => { this.readyResolve = resolve; this.readyReject = reject; });
      this.ready.catch(() => {});
      this.worker.onmessage = (ev) => this.onMessage(ev.data);
      this.worker.onerror = (ev) => {
        const err = new Error("simulator worker failed: " + (ev.message || "unknown error"));
        this.readyReject(err);
        this.failAll(err);
      };
    }
    onMessage(m) {
      if (m.type === "ready") { this.readyResolve(); return; }
      if (m.type === "fatal") { const e = new Error(m.error); this.readyReject(e); this.failAll(e); return; }
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.type === "progress") { if (p.onProgress) p.onProgress(m); return; }
      this.pending.delete(m.id);
      if (m.type === "error") p.reject(new Error(m.error));
      else p.resolve(m);
    }
    call(msg, onProgress, transfer) {
      const id = this.nextId++;
      return new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject, onProgress });
        this.worker.postMessage(Object.assign({ id }, msg), transfer || []);
      });
    }
    failAll(err) {
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    }
    terminate() {
      this.worker.terminate();
      this.failAll(new Error("canceled"));
    }
  }

  let runner = null;     // worker for runs; replaced on cancel
  let validator = null;  // separate worker so validation works during a run
  let queue = Promise.resolve();
  const getRunner = () => (runner = runner || new SimWorker());
  const getValidator = () => (validator = validator || new SimWorker());

  // toPayload turns a trace/profile argument into something the worker can
  // take without copying the bytes on this thread: strings and Blobs (Files)
  // are passed as they are (the worker reads Blobs in chunks straight into Go
  // memory); typed arrays are structured-cloned.
  function toPayload(v) {
    if (v === undefined || v === null) return undefined;
    if (typeof v === "string" || v instanceof Blob) return v;
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    throw new Error("dynosim.run: trace and profile must be a string, Uint8Array, ArrayBuffer or Blob");
  }

  function runRaw(opts, onProgress) {
    opts = opts || {};
    const msg = {
      type: "predict",
      config: typeof opts.config === "string" ? opts.config : (opts.config === undefined ? "" : String(opts.config)),
      configName: opts.configName || "config.yaml",
      trace: toPayload(opts.trace),
      traceName: opts.traceName || (opts.trace instanceof File ? opts.trace.name : undefined),
      profile: toPayload(opts.profile),
      profileName: opts.profileName || (opts.profile instanceof File ? opts.profile.name : undefined),
      capturePerRequest: !!opts.capturePerRequest,
    };
    const job = queue.then(async () => {
      const w = getRunner();
      const t0 = performance.now();
      await w.ready;
      const res = await w.call(msg, onProgress);
      const wallMs = performance.now() - t0;
      return { json: res.json, report: JSON.parse(res.json), table: res.table, requests: res.requests, wallMs };
    });
    queue = job.catch(() => {});
    return job;
  }

  async function run(opts) {
    return (await runRaw(opts)).report;
  }

  function cancel() {
    if (runner) { runner.terminate(); runner = null; }
    // a fresh worker starts loading now so the next run does not wait.
    getRunner();
  }

  async function validate(yaml) {
    // the validator starts after the run worker is up, so the two 6 MB
    // modules do not compete for the CPU while the page loads.
    if (!validator) await getRunner().ready.catch(() => {});
    const w = getValidator();
    await w.ready;
    try {
      await w.call({ type: "validate", config: yaml });
      return null;
    } catch (e) {
      return e.message;
    }
  }

  const sampleCache = new Map();
  function sample(name) {
    const s = samples[name];
    if (!s) return Promise.reject(new Error("unknown sample: " + name));
    if (!sampleCache.has(name)) {
      const p = fetch(new URL(s.url, base)).then((r) => {
        if (!r.ok) throw new Error(s.url + ": HTTP " + r.status);
        return new Response(r.body.pipeThrough(new DecompressionStream("gzip"))).blob();
      });
      p.catch(() => sampleCache.delete(name));
      sampleCache.set(name, p);
    }
    return sampleCache.get(name);
  }

  function download(filename, text, mime) {
    const url = URL.createObjectURL(new Blob([text], { type: mime || "application/octet-stream" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = filename;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  window.dynosim = {
    run, runRaw, cancel, validate, sample, download, samples,
    get ready() { return getRunner().ready; },
  };
  getRunner();
})();
