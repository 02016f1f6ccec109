// sim-worker.js runs the simulator (dynosim.wasm) inside a Web Worker so the
// page never freezes. Messages in: {id, type: "predict"|"validate", ...}.
// Messages out: {type: "ready"}, {id, type: "progress", simTimeMs, done,
// total, wallMs}, {id, type: "result", json, table, requests} or
// {id, type: "error", error}, or {id, type: "crashed", error} when the Go
// program died (this worker then closes). Cancel = the page terminates it.
"use strict";
importScripts("wasm_exec.js");

const ready = new Promise((resolve, reject) => {
  self.dynosimReady = resolve;
  const go = new Go();
  const url = new URL("dynosim.wasm", self.location.href);
  const load = WebAssembly.instantiateStreaming
    ? WebAssembly.instantiateStreaming(fetch(url), go.importObject)
    : fetch(url).then((r) => r.arrayBuffer()).then((b) => WebAssembly.instantiate(b, go.importObject));
  load.then((res) => go.run(res.instance)).catch(reject);
});
ready.then(() => self.postMessage({ type: "ready" }),
  (err) => self.postMessage({ type: "fatal", error: "could not load the simulator: " + (err && err.message || err) }));

self.onmessage = async (ev) => {
  const msg = ev.data;
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
    } else {
      const id = msg.id;
      res = self.dynosimPredict(msg, (simTimeMs, done, total, wallMs) => {
        self.postMessage({ id, type: "progress", simTimeMs, done, total, wallMs });
      });
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
    self.postMessage({ id: msg.id, type: "error", error: res.error });
  } else {
    self.postMessage({ id: msg.id, type: "result", json: res.json, table: res.table, requests: res.requests });
  }
};
