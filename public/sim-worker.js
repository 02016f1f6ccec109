// sim-worker.js runs the simulator (dynosim.wasm) inside a Web Worker so the
// page never freezes. Messages in: first {type: "module", module} (the
// compiled dynosim.wasm), then {id, type: "predict"|"validate", ...}.
// Messages out: {type: "ready"}, {id, type: "progress", simTimeMs, done,
// total, wallMs, phase ("simulate", then "report")}, {id, type: "result", json, table, requests} or
// (predict with lazyRequests) {id, type: "result", json, table,
// requestsPending: true} then {id, type: "requests", requests}, or
// {id, type: "error", error}, or {id, type: "crashed", error} when the Go
// program died (this worker then closes). Cancel = the page terminates it.
//
// Recommend (the page's Recommend view): {id, type: "recommend-parse",
// config} → {id, type: "result", space}; {id, type: "recommend", config,
// configName, trace, traceName, parallel} runs the search here (the
// coordinator): each trial goes out as {id, type: "evaluate", eid, sets}
// and comes back as {type: "evaluated", eid, json} or {eid, error, reason};
// each ledger entry as {id, type: "entry", entry}; the end as {id, type:
// "result", json, csv, base, yamls, deploy}. A trial on a trial worker is a
// "predict" with sets and sweepKey (its answer may carry reason).
//
// A real run: {id, type: "compare", files: [{name, data}], report} →
// {id, type: "result", compare: {tool, rows, cdf}} or {id, type: "error"}.
"use strict";
importScripts("wasm_exec.js");

// The page compiles dynosim.wasm once and sends the WebAssembly.Module as
// this worker's first message ({type: "module", module}): every worker (the
// run's, the validator's, each recommend trial's, the fresh one after a
// cancel) then only instantiates it, instead of compiling 9 MB of wasm again.
let gotModule;
const moduleMsg = new Promise((resolve) => { gotModule = resolve; });
const ready = new Promise((resolve, reject) => {
  self.dynosimReady = resolve;
  const go = new Go();
  moduleMsg.then((mod) => WebAssembly.instantiate(mod, go.importObject))
    .then((instance) => go.run(instance)).catch(reject);
});
ready.then(() => self.postMessage({ type: "ready" }),
  (err) => self.postMessage({ type: "fatal", error: "could not load the simulator: " + (err && err.message || err) }));

// evaluations: the coordinator's trials awaiting the page's answer.
const evaluations = new Map();
let nextEval = 1;

self.onmessage = async (ev) => {
  const msg = ev.data;
  if (msg.type === "module") {
    gotModule(msg.module);
    return;
  }
  if (msg.type === "evaluated") {
    const r = evaluations.get(msg.eid);
    if (r) { evaluations.delete(msg.eid); r(msg); }
    return;
  }
  try {
    await ready;
  } catch (err) {
    self.postMessage({ id: msg.id, type: "error", error: "could not load the simulator: " + (err && err.message || err) });
    return;
  }
  let res, failure = "";
  try {
    if (msg.type === "validate") {
      res = self.dynosimValidate(msg.config, msg.configName || "config.yaml");
    } else if (msg.type === "candidate-yaml") {
      res = self.dynosimCandidateYAML(msg.base, msg.sets);
      if (res && res.error === undefined) { self.postMessage({ id: msg.id, type: "result", yaml: res.yaml }); return; }
    } else if (msg.type === "compare") {
      res = typeof self.dynosimCompare === "function" ? self.dynosimCompare(msg.files, msg.report)
        : { error: "this simulator build cannot compare real runs (dynosim.wasm predates it)" };
      if (res && res.error === undefined) { self.postMessage({ id: msg.id, type: "result", compare: res }); return; }
    } else if (msg.type === "recommend-parse") {
      const sp = self.dynosimRecommendParse(msg.config, msg.configName || "recommend.yaml");
      if (sp && sp.error === undefined) { self.postMessage({ id: msg.id, type: "result", space: sp }); return; }
      res = sp;
    } else if (msg.type === "recommend") {
      const id = msg.id;
      const evaluate = (sets) => new Promise((resolve) => {
        const eid = nextEval++;
        evaluations.set(eid, (m) => resolve(m.error !== undefined ? { error: m.error, reason: m.reason || "replay_runtime" } : { json: m.json }));
        self.postMessage({ id, type: "evaluate", eid, sets: Array.from(sets) });
      });
      const onEntry = (entry) => self.postMessage({ id, type: "entry", entry });
      try {
        const out = await self.dynosimRecommend(msg, evaluate, onEntry);
        self.postMessage({ id, type: "result", json: out.json, csv: out.csv, base: out.base,
          yamls: Array.from(out.yamls || [], (y) => ({ id: y.id, yaml: y.yaml })),
          deploy: Array.from(out.deploy || [], (d) => ({ id: d.id, dir: d.dir, launch: d.launch, dgd: d.dgd, error: d.error })) });
      } catch (err) {
        self.postMessage({ id, type: "error", error: (err && err.message) || String(err) });
      }
      return;
    } else {
      const id = msg.id;
      const progress = (simTimeMs, done, total, wallMs, phase) => {
        self.postMessage({ id, type: "progress", simTimeMs, done, total, wallMs, phase });
      };
      res = self.dynosimPredict(msg, progress);
      // timing.kernels: aic: the run asks for the kernel table its GPU and
      // engine need; fetch it (kernels/NAME.json.gz beside the wasm, null
      // when none was published) and run again (wasm/browser/kernels.go).
      for (let tries = 0; res && res.needKernelTable !== undefined && tries < 4; tries++) {
        const name = res.needKernelTable;
        let data = null;
        try {
          const r = await fetch(new URL("kernels/" + name, self.location.href));
          if (r.ok) data = new Uint8Array(await r.arrayBuffer());
          else if (r.status !== 404) throw new Error("HTTP " + r.status);
        } catch (err) {
          res = { error: "timing.kernels: could not load the kernel table " + name + ": " + ((err && err.message) || err) };
          break;
        }
        msg.kernelTables = Object.assign({}, msg.kernelTables, { [name]: data });
        res = self.dynosimPredict(msg, progress);
      }
    }
  } catch (err) {
    failure = (err && err.message) || String(err);
  }
  if (!res) {
    // The Go program exited under the call (a fatal runtime error such as
    // running out of memory; the runtime printed it to the console) or can
    // no longer be called. This instance is done: the page starts another.
    self.postMessage({ id: msg.id, type: "crashed",
      error: "the simulator stopped" + (failure ? " (" + failure + ")" : "") + "; it may have run out of memory (see the browser console). The next run starts a fresh one." });
    self.close();
    return;
  }
  if (res.error !== undefined) {
    self.postMessage({ id: msg.id, type: "error", error: res.error, reason: res.reason });
  } else {
    self.postMessage({ id: msg.id, type: "result", json: res.json, table: res.table, requests: res.requests,
      requestsPending: !!res.requestsPending });
    if (res.requestsPending) {
      // The report went first, so the page shows the results while the
      // per-request records are written and sent (issue 32 item 8).
      let requests;
      try {
        requests = self.dynosimRequests();
      } catch (err) { /* the Go program died: the message below says there are none */ }
      self.postMessage({ id: msg.id, type: "requests", requests });
    }
  }
};
