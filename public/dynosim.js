// dynosim.js: the page's JavaScript API, window.dynosim. It owns the Web
// Workers that run the simulator (dynosim.wasm via sim-worker.js); the
// simulator itself is Go. Cancel terminates the run's worker and starts a
// fresh one (Go wasm cannot yield while a replay runs).
//
//   await dynosim.run({config, configName, trace, traceName, profile, profileName, model, modelName})
//     → the report object (same JSON as `dynosim predict --format json`),
//       or rejects with an Error whose message is the CLI's one-line error.
//     opts.watch = a request's uuid adds report.request_timeline: that
//       request's life (its events and every engine pass it was in).
//   await dynosim.runRaw(opts, onProgress) → {json, report, table, requests, wallMs}
//     opts.capturePerRequest adds requests (the per-request JSONL); with
//       opts.lazyRequests too it resolves without them, as soon as the report
//       is ready, and requestsLater is a Promise of that JSONL (the page
//       shows a whole trace's results before its 7 MB of records arrive).
//     onProgress gets {done, total, simTimeMs, wallMs, phase}: phase
//       "simulate", then "report" once the replay has ended.
//   dynosim.cancel()            stops the current run (it rejects with "canceled")
//   await dynosim.validate(yaml) → null or the one-line error
//   await dynosim.compare({files: [{name, data}], report}) → {tool, rows: [{key, measured,
//                               predicted, error}], cdf: {ttft_ms: {qs, values}, …}}: a real
//                               run's exports (AIPerf, vllm bench serve; data: Uint8Array,
//                               string or Blob) against a report (JSON text or object), or
//                               rejects with the one-line error naming the file.
//   await dynosim.recommend(opts, onEntry) → {json, csv, base, yamls, deploy, ledger, space, wallMs, workers}:
//                               a `dynosim recommend` search (opts: config, configName, trace,
//                               traceName, workers); deploy: [{id, dir, launch, dgd, error}] are the
//                               deploy files of the recommended candidates and the best (core/deploy,
//                               recommend --output-dir's deploy/NNNN); cancel() stops it too.
//   await dynosim.sample(name)  → Blob of an embedded sample trace ("conversation", "synthetic")
//   dynosim.serviceURL          the configured shared service ("" = none, the default):
//                               ?service=URL, else window.DYNOSIM_SERVICE_URL (config.js,
//                               written by `dynosim serve --service-url URL`, or an embedder)
//   await dynosim.runRemote(opts) → {json, report, runURL, runId, cache, wallMs}: the same
//                               inputs as run, sent as multipart to POST {serviceURL}/v1/predict
//                               (opts.service overrides the URL); cancel() aborts the fetch.
//   await dynosim.fetchRun(id) → {json, report, runURL, runId, service, inputs}: a stored run
//                               (a share link's ?run=<id>) from GET {serviceURL}/v1/runs/{id},
//                               with the inputs it ran with ({config, config_name, trace_name,
//                               …}, null when the service kept none); cancel() aborts it.
"use strict";
(function () {
  const base = new URL(".", document.currentScript ? document.currentScript.src : location.href);
  const samples = {
    conversation: { file: "conversation_trace.jsonl", url: "traces/conversation_trace.jsonl.gz", label: "Mooncake conversation (12,031 requests)" },
    synthetic: { file: "synthetic_trace.jsonl", url: "traces/synthetic_trace.jsonl.gz", label: "Mooncake synthetic (3,993 requests)" },
  };

  // simModule compiles dynosim.wasm once, on first use; every SimWorker is
  // sent the compiled module (a WebAssembly.Module is cloned to a worker,
  // not recompiled), so a new worker costs an instantiation, not a compile.
  let compiled = null;
  function simModule() {
    if (!compiled) {
      const url = new URL("dynosim.wasm", base);
      compiled = WebAssembly.compileStreaming
        ? WebAssembly.compileStreaming(fetch(url))
        : fetch(url).then((r) => r.arrayBuffer()).then((b) => WebAssembly.compile(b));
      compiled.catch(() => { compiled = null; }); // a failed load is retried by the next worker
    }
    return compiled;
  }

  // SimWorker wraps one Web Worker running dynosim.wasm.
  class SimWorker {
    constructor() {
      this.pending = new Map();
      this.later = new Map(); // runs whose per-request records come after their result
      this.nextId = 1;
      this.worker = new Worker(new URL("sim-worker.js", base));
      simModule().then((module) => { if (!this.dead) this.worker.postMessage({ type: "module", module }); },
        (err) => { this.onMessage({ type: "fatal", error: "could not load the simulator: " + (err && err.message || err) }); this.worker.terminate(); });
      this.ready = new Promise((resolve, reject) => { this.readyResolve = resolve; this.readyReject = reject; });
      this.ready.catch(() => {});
      this.worker.onmessage = (ev) => this.onMessage(ev.data);
      this.worker.onerror = (ev) => {
        const err = new Error("simulator worker failed: " + (ev.message || "unknown error"));
        this.dead = true;
        this.readyReject(err);
        this.failAll(err);
      };
    }
    onMessage(m) {
      if (m.type === "ready") { this.readyResolve(); return; }
      if (m.type === "fatal") { const e = new Error(m.error); this.dead = true; this.readyReject(e); this.failAll(e); return; }
      if (m.type === "crashed") { this.dead = true; this.worker.terminate(); this.failAll(new Error(m.error)); return; }
      if (m.type === "requests") {
        const l = this.later.get(m.id);
        if (l) { this.later.delete(m.id); l.resolve(m.requests); }
        return;
      }
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.type !== "result" && m.type !== "error") { if (p.onProgress) p.onProgress(m); return; }
      this.pending.delete(m.id);
      if (m.type === "error") {
        const e = new Error(m.error);
        if (m.reason) e.reason = m.reason;
        p.reject(e);
      }
      else {
        if (m.requestsPending) {
          m.requestsLater = new Promise((resolve, reject) => this.later.set(m.id, { resolve, reject }));
          m.requestsLater.catch(() => {}); // a caller that never asks is no unhandled rejection
        }
        p.resolve(m);
      }
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
      for (const l of this.later.values()) l.reject(err);
      this.later.clear();
    }
    terminate() {
      this.dead = true;
      this.worker.terminate();
      // A run still waiting for this worker to load must fail too, or it
      // would wait forever.
      const err = new Error("canceled");
      this.readyReject(err);
      this.failAll(err);
    }
  }

  let runner = null;     // worker for runs; replaced on cancel
  let localActive = 0;   // local runs not yet settled
  const remoteRuns = new Set(); // AbortControllers of pending service runs
  let validator = null;  // separate worker so validation works during a run
  let queue = Promise.resolve();
  let cancels = 0;       // cancel() calls so far
  // A worker whose Go program died (or never loaded) is replaced on next use.
  const getRunner = () => (runner = runner && !runner.dead ? runner : new SimWorker());
  const getValidator = () => (validator = validator && !validator.dead ? validator : new SimWorker());

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
      model: toPayload(opts.model),
      modelName: opts.modelName || (opts.model instanceof File ? opts.model.name : undefined),
      capturePerRequest: !!opts.capturePerRequest,
      lazyRequests: !!opts.lazyRequests,
    };
    if (opts.watch !== undefined && opts.watch !== null) {
      const w = Number(opts.watch);
      if (!Number.isSafeInteger(w) || w < 1) return Promise.reject(new Error("dynosim.run: watch must be a request uuid (a whole number ≥ 1), got " + opts.watch));
      msg.watch = w;
    }
    localActive++;
    const gen = cancels;
    const job = queue.then(async () => {
      // cancel() also drops the runs queued behind the current one.
      if (gen !== cancels) throw new Error("canceled");
      const w = getRunner();
      const t0 = performance.now();
      await w.ready;
      const res = await w.call(msg, onProgress);
      const wallMs = performance.now() - t0;
      return { json: res.json, report: JSON.parse(res.json), table: res.table, requests: res.requests,
        requestsLater: res.requestsLater, wallMs };
    });
    queue = job.catch(() => {});
    job.then(() => localActive--, () => localActive--);
    return job;
  }

  // normalizeService turns a configured service URL into "scheme://host[/path]"
  // without a trailing slash, or "" if it is empty or not http(s).
  function normalizeService(raw) {
    raw = typeof raw === "string" ? raw.trim() : "";
    if (!raw) return "";
    try {
      const u = new URL(raw, location.href);
      if (u.protocol !== "http:" && u.protocol !== "https:") return "";
      u.search = "";
      u.hash = "";
      return u.href.replace(/\/+$/, "");
    } catch (e) {
      return "";
    }
  }
  function configuredService() {
    let q = null;
    try { q = new URLSearchParams(location.search).get("service"); } catch (e) { /* no location */ }
    if (q !== null) return normalizeService(q);
    return normalizeService(window.DYNOSIM_SERVICE_URL);
  }
  const serviceURL = configuredService();

  function asBlob(v) {
    if (v instanceof Blob) return v;
    if (typeof v === "string") return new Blob([v]);
    if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return new Blob([v]);
    throw new Error("dynosim.runRemote: trace and profile must be a string, Uint8Array, ArrayBuffer or Blob");
  }

  // runRemote sends the run to the shared service (the Cloudflare Worker's
  // POST /v1/predict; docs/worker.md) instead of the local worker. It
  // resolves like runRaw (json, report, wallMs; no table or per-request
  // records) plus runURL, the shareable GET /v1/runs/{id} link. It rejects
  // with the service's one-line {"error"} text for 4xx answers, a clear
  // message for network failures, and "canceled" after cancel().
  async function runRemote(opts) {
    opts = opts || {};
    const svc = opts.service !== undefined ? normalizeService(opts.service) : serviceURL;
    if (!svc) throw new Error("no shared service is configured");
    const form = new FormData();
    form.append("config", typeof opts.config === "string" ? opts.config : (opts.config === undefined ? "" : String(opts.config)));
    if (opts.trace !== undefined && opts.trace !== null) {
      const name = opts.traceName || (opts.trace instanceof File ? opts.trace.name : "trace.jsonl");
      form.append("trace", asBlob(opts.trace), name);
    }
    if (opts.profile !== undefined && opts.profile !== null) {
      const name = opts.profileName || (opts.profile instanceof File ? opts.profile.name : "profile.npz");
      form.append("profile", asBlob(opts.profile), name);
    }
    const ctl = new AbortController();
    remoteRuns.add(ctl);
    const host = new URL(svc).host;
    const t0 = performance.now();
    try {
      let resp;
      try {
        resp = await fetch(svc + "/v1/predict", { method: "POST", body: form, signal: ctl.signal, mode: "cors", credentials: "omit" });
      } catch (e) {
        if (ctl.signal.aborted) throw new Error("canceled");
        throw new Error(`could not reach the shared service at ${host} (${e && e.message || e}); check the URL and your connection, or run locally`);
      }
      let text;
      try {
        text = await resp.text();
      } catch (e) {
        if (ctl.signal.aborted) throw new Error("canceled");
        throw new Error(`the shared service at ${host} broke off its answer (${e && e.message || e})`);
      }
      if (!resp.ok) {
        let msg = "";
        try { const j = JSON.parse(text); if (j && typeof j.error === "string") msg = j.error; } catch (e) { /* not JSON */ }
        if (!msg) msg = `the shared service at ${host} answered HTTP ${resp.status}${resp.statusText ? " " + resp.statusText : ""}`;
        const err = new Error(msg);
        err.status = resp.status;
        throw err;
      }
      let report;
      try {
        report = JSON.parse(text);
      } catch (e) {
        throw new Error(`the shared service at ${host} sent something that is not a report`);
      }
      const runURL = runLink(resp.headers.get("Location"), svc);
      return {
        json: text, report, runURL, service: svc,
        runId: resp.headers.get("X-Dynosim-Run-Id") || "",
        cache: resp.headers.get("X-Dynosim-Cache") || "",
        wallMs: performance.now() - t0,
      };
    } finally {
      remoteRuns.delete(ctl);
    }
  }

  // runLink resolves the service's Location header against the service URL.
  // The page shows it as a link, so only an http(s) URL on the service's own
  // origin is taken; anything else (javascript:, data:, another host) is "".
  function runLink(loc, svc) {
    if (!loc || loc.length > 2048) return "";
    try {
      const u = new URL(loc, svc + "/");
      if ((u.protocol !== "http:" && u.protocol !== "https:") || u.origin !== new URL(svc).origin || u.username || u.password) return "";
      return u.href;
    } catch (e) {
      return "";
    }
  }

  // fetchRun loads a stored run from the shared service (issue 32 item 9:
  // a share link, <page>/?run=<id>, opens the rendered run): the report
  // from GET /v1/runs/{id} and the inputs from GET /v1/runs/{id}/inputs
  // (a service that kept none, or an older one, answers 404: inputs null).
  // Errors read like runRemote's: the service's {"error"} text, or a clear
  // message when the service cannot be reached.
  async function fetchRun(id, opts) {
    opts = opts || {};
    const svc = opts.service !== undefined ? normalizeService(opts.service) : serviceURL;
    if (!/^[0-9a-f]{32}$/.test(String(id))) throw new Error(`run ${String(id).slice(0, 80)}: not a run id (32 hex digits)`);
    if (!svc) throw new Error(`run ${id}: this page has no shared service to load it from (open the link with ?service=URL)`);
    const host = new URL(svc).host;
    const ctl = new AbortController();
    remoteRuns.add(ctl);
    const get = async (url) => {
      try {
        return await fetch(url, { signal: ctl.signal, mode: "cors", credentials: "omit", headers: { Accept: "application/json" } });
      } catch (e) {
        if (ctl.signal.aborted) throw new Error("canceled");
        throw new Error(`could not reach the shared service at ${host} (${e && e.message || e}); check the URL and your connection`);
      }
    };
    try {
      const [resp, inResp] = await Promise.all([get(`${svc}/v1/runs/${id}`), get(`${svc}/v1/runs/${id}/inputs`).catch(() => null)]);
      const text = await resp.text();
      if (!resp.ok) {
        let msg = "";
        try { const j = JSON.parse(text); if (j && typeof j.error === "string") msg = j.error; } catch (e) { /* not JSON */ }
        throw new Error(msg || `the shared service at ${host} answered HTTP ${resp.status} for run ${id}`);
      }
      let report;
      try {
        report = JSON.parse(text);
      } catch (e) {
        throw new Error(`the shared service at ${host} sent something that is not a report for run ${id}`);
      }
      let inputs = null;
      if (inResp && inResp.ok) {
        try {
          const j = JSON.parse(await inResp.text());
          if (j && typeof j.config === "string") inputs = j;
        } catch (e) { /* no inputs */ }
      }
      return { json: text, report, runURL: runLink(`/v1/runs/${id}`, svc), runId: id, service: svc, inputs };
    } finally {
      remoteRuns.delete(ctl);
    }
  }

  // --- Recommend: a coordinator worker runs recommend.Search; its trials
  // run on a pool of trial workers (one per core, at least 2), each keeping
  // the Base config and the parsed trace of the search (sweepKey) so only
  // the first trial per worker sends the trace.
  let pool = [];            // trial workers, kept between searches
  let coordinator = null;   // the search's worker, replaced after cancel
  let recommends = 0;       // searches started (sweep keys)
  const recommendActive = new Set(); // reject functions of running searches
  const poolSize = () => Math.max(2, Math.min(8, navigator.hardwareConcurrency || 2));

  function recommend(opts, onEntry) {
    opts = opts || {};
    // With a service, every trial is a POST to it (the coordinator keeps the
    // search here): as many at once as the CLI's --remote default, the cores.
    const svc = opts.service ? normalizeService(opts.service) : "";
    const n = Math.max(1, Math.floor(opts.workers || poolSize()));
    const config = typeof opts.config === "string" ? opts.config : String(opts.config || "");
    const configName = opts.configName || "recommend.yaml";
    const trace = toPayload(opts.trace);
    const traceName = opts.traceName || (opts.trace instanceof File ? opts.trace.name : undefined);
    const key = "rec-" + (++recommends) + "-" + Date.now();
    return new Promise((resolve, reject) => {
      let done = false;
      const fail = (e) => { if (!done) { done = true; recommendActive.delete(fail); reject(e); } };
      recommendActive.add(fail);
      (async () => {
        const t0 = performance.now();
        coordinator = coordinator && !coordinator.dead ? coordinator : new SimWorker();
        const coord = coordinator;
        while (!svc && pool.length < n) pool.push(new SimWorker());
        const workers = pool.slice(0, n);
        await coord.ready;
        const { space } = await coord.call({ type: "recommend-parse", config, configName });
        const idle = workers.slice();
        const waiting = [];
        const acquire = () => new Promise((r) => { const w = idle.shift(); if (w) r(w); else waiting.push(r); });
        const release = (w) => { const r = waiting.shift(); if (r) r(w); else idle.push(w); };
        const ledger = [];
        let inFlight = 0, maxInFlight = 0, trialMs = 0;
        const trial = async (m) => {
          if (svc) return remoteTrial(svc, space.base, configName, trace, traceName, m.sets);
          let w = await acquire();
          const t1 = performance.now();
          maxInFlight = Math.max(maxInFlight, ++inFlight);
          try {
            if (w.dead) { const i = pool.indexOf(w); w = new SimWorker(); if (i >= 0) pool[i] = w; }
            await w.ready;
            const first = w.sweepKey !== key;
            const msg = { type: "predict", config: space.base, configName, traceName, sets: m.sets, sweepKey: key };
            if (first) msg.trace = trace;
            w.sweepKey = key;
            try {
              const res = await w.call(msg);
              if (res.error !== undefined) return { error: res.error, reason: res.reason };
              return { json: res.json };
            } catch (e) {
              if (w.dead) w.sweepKey = "";
              return { error: e.message, reason: e.reason || "replay_runtime" };
            }
          } finally {
            inFlight--;
            trialMs += performance.now() - t1;
            release(w);
          }
        };
        const res = await coord.call({ type: "recommend", config, configName, trace, traceName, parallel: n }, (m) => {
          if (done) return;
          if (m.type === "entry") {
            const e = JSON.parse(m.entry);
            ledger.push(e);
            if (onEntry) onEntry(e, space);
          } else if (m.type === "evaluate") {
            trial(m).then((a) => { if (!done && !coord.dead) coord.worker.postMessage(Object.assign({ type: "evaluated", eid: m.eid }, a)); });
          }
        });
        if (done) return;
        done = true;
        recommendActive.delete(fail);
        resolve({ json: res.json, csv: res.csv, base: res.base, yamls: res.yamls, deploy: res.deploy || [], ledger: JSON.parse(res.json), space,
          entries: ledger, workers: n, maxInFlight, trialMs, wallMs: performance.now() - t0 });
      })().catch(fail);
    });
  }

  // remoteTrial runs one trial on the shared service: the base config, the
  // trace and the candidate's sets as POST /v1/predict fields, as
  // `dynosim recommend --remote` sends them; a failure's reason category
  // comes in X-Dynosim-Reason, so the ledger is the local one.
  async function remoteTrial(svc, base, configName, trace, traceName, sets) {
    const form = new FormData();
    form.append("config", new Blob([base]), configName);
    if (trace !== undefined && trace !== null) form.append("trace", asBlob(trace), traceName || "trace.jsonl");
    for (const s of sets) form.append("set", s);
    const ctl = new AbortController();
    remoteRuns.add(ctl);
    try {
      const resp = await fetch(svc + "/v1/predict", { method: "POST", body: form, signal: ctl.signal, mode: "cors", credentials: "omit" });
      const text = await resp.text();
      if (resp.ok) return { json: text };
      let msg = `the shared service answered HTTP ${resp.status}`;
      try { const j = JSON.parse(text); if (j && typeof j.error === "string") msg = j.error; } catch (e) { /* not JSON */ }
      return { error: msg, reason: resp.headers.get("X-Dynosim-Reason") || "replay_runtime" };
    } catch (e) {
      return { error: `could not reach the shared service (${e && e.message || e})`, reason: "replay_runtime" };
    } finally {
      remoteRuns.delete(ctl);
    }
  }

  function cancelRecommend() {
    if (recommendActive.size === 0) return false;
    for (const f of [...recommendActive]) f(new Error("canceled"));
    if (coordinator) { coordinator.terminate(); coordinator = null; }
    for (const w of pool) w.terminate();
    pool = [];
    return true;
  }

  // candidateYAML(base, sets) → the complete predict config of a candidate
  // (the search's Base config with its sets), made in the validator worker.
  async function candidateYAML(base, sets) {
    const w = getValidator();
    await w.ready;
    return (await w.call({ type: "candidate-yaml", base, sets: Array.from(sets || []) })).yaml;
  }

  async function run(opts) {
    return (await runRaw(opts)).report;
  }

  function cancel() {
    if (cancelRecommend() && localActive === 0 && remoteRuns.size === 0) return;
    const remote = remoteRuns.size > 0;
    for (const ctl of remoteRuns) ctl.abort();
    remoteRuns.clear();
    // a service run alone leaves the (idle) local worker alone.
    if (remote && localActive === 0) return;
    cancels++;
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

  // compare runs in the validator worker, like validate, so it works
  // while a replay runs.
  async function compare(opts) {
    opts = opts || {};
    const files = Array.from(opts.files || [], (f, i) => {
      if (f instanceof Blob) return { name: f.name || "file " + (i + 1), data: f };
      return { name: (f && f.name) || "file " + (i + 1), data: toPayload(f && f.data) };
    });
    if (!files.length) throw new Error("dynosim.compare: no files");
    let report = opts.report;
    if (report && typeof report === "object" && !ArrayBuffer.isView(report)) report = JSON.stringify(report);
    if (typeof report !== "string" || !report) throw new Error("dynosim.compare: report must be the report JSON (text or object)");
    if (!validator) await getRunner().ready.catch(() => {});
    const w = getValidator();
    await w.ready;
    const res = await w.call({ type: "compare", files, report });
    return res.compare;
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
    run, runRaw, runRemote, fetchRun, recommend, candidateYAML, cancel, cancelRecommend, poolSize, validate, compare, sample, download, samples, serviceURL,
    get ready() { return getRunner().ready; },
  };
  getRunner();
})();
