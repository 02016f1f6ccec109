// app.js starts the Vugu UI (ui.wasm) and routes dropped files to the file
// inputs behind the drop zone, so one code path (the inputs' change events,
// handled in Go) serves both dropping and choosing.
"use strict";
(function () {
  const load = window.dynosimLoad || { start: 0 };
  let uiResolve;
  window.dynosim.uiReady = new Promise((r) => (uiResolve = r));
  window.dynosimUIReady = () => {
    load.uiMs = performance.now() - load.start;
    uiResolve();
  };
  // interactive = the UI is rendered and the simulator worker is ready.
  Promise.all([window.dynosim.uiReady, window.dynosim.ready]).then(() => {
    load.interactiveMs = performance.now() - load.start;
    document.documentElement.dataset.interactive = "1";
  }, () => {});

  // Vugu's renderer installs its DOM helper with window.eval, which the
  // Content-Security-Policy forbids; the same script (vugu's jsHelperScript,
  // written out by `make wasm` with internal/vugujs) is loaded as
  // vugu-render.js instead, and the eval of it is skipped here, as the
  // script itself would do once window.vuguRender exists.
  const realEval = window.eval;
  window.eval = function (src) {
    if (window.vuguRender && typeof src === "string" && src.startsWith("(function(){if(window.vuguRender)return;")) return undefined;
    return realEval(src);
  };
  const go = new Go();
  const url = "ui.wasm";
  const start = WebAssembly.instantiateStreaming
    ? WebAssembly.instantiateStreaming(fetch(url), go.importObject)
    : fetch(url).then((r) => r.arrayBuffer()).then((b) => WebAssembly.instantiate(b, go.importObject));
  start.then((res) => go.run(res.instance)).catch((err) => {
    const app = document.getElementById("app");
    app.textContent = "";
    const p = document.createElement("p");
    p.className = "error";
    p.setAttribute("data-testid", "error");
    p.textContent = "Could not start the page: " + (err && err.message || err);
    app.appendChild(p);
  });

  function inputFor(file) {
    const n = file.name.toLowerCase();
    if (n.endsWith(".npz")) return "profile-input";
    if (n.endsWith(".yaml") || n.endsWith(".yml")) return "config-input";
    return "trace-input";
  }

  function zoneOf(ev) {
    return ev.target && ev.target.closest ? ev.target.closest("[data-dropzone]") : null;
  }
  document.addEventListener("dragover", (ev) => {
    if (!ev.dataTransfer || !Array.from(ev.dataTransfer.types || []).includes("Files")) return;
    ev.preventDefault(); // anywhere on the page is a drop target
    ev.dataTransfer.dropEffect = "copy";
    const z = document.querySelector("[data-dropzone]");
    if (z) z.classList.add("over");
  });
  document.addEventListener("dragleave", (ev) => {
    if (ev.relatedTarget === null || !zoneOf(ev)) {
      const z = document.querySelector("[data-dropzone]");
      if (z) z.classList.remove("over");
    }
  });
  document.addEventListener("drop", (ev) => {
    if (!ev.dataTransfer || !ev.dataTransfer.files.length) return;
    ev.preventDefault();
    const z = document.querySelector("[data-dropzone]");
    if (z) z.classList.remove("over");
    for (const file of ev.dataTransfer.files) {
      const input = document.getElementById(inputFor(file));
      if (!input) continue;
      const dt = new DataTransfer();
      dt.items.add(file);
      input.files = dt.files;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
  });
})();
