// embed.js turns <div data-dynosim data-config="…yaml…" data-trace="sample:conversation">
// into an embedded DynoSim (an iframe of this site in ?embed=1 mode).
// Usage: <script src="https://YOUR-HOST/embed.js" async></script>
(function () {
  "use strict";
  const script = document.currentScript;
  const base = new URL(".", script ? script.src : location.href);
  function b64url(text) {
    const bytes = new TextEncoder().encode(text);
    let bin = "";
    bytes.forEach((b) => (bin += String.fromCharCode(b)));
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function mount(div) {
    if (div.dataset.dynosimMounted) return;
    div.dataset.dynosimMounted = "1";
    const frag = new URLSearchParams();
    if (div.dataset.config) frag.set("config", b64url(div.dataset.config));
    const trace = div.dataset.trace || "";
    if (trace.startsWith("sample:")) frag.set("sample", trace.slice(7));
    const iframe = document.createElement("iframe");
    // data-service="https://…": offer "Run on the shared service" (off until ticked).
    const q = div.dataset.service ? "&service=" + encodeURIComponent(div.dataset.service) : "";
    iframe.src = new URL("?embed=1" + q + "#" + frag.toString(), base).href;
    iframe.title = div.dataset.title || "DynoSim simulator";
    iframe.loading = "lazy";
    iframe.style.width = "100%";
    iframe.style.border = "1px solid #d0d7de";
    iframe.style.borderRadius = "8px";
    iframe.style.height = div.dataset.height || "720px";
    div.appendChild(iframe);
  }
  function scan() { document.querySelectorAll("div[data-dynosim]").forEach(mount); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", scan);
  else scan();
  window.DynoSimEmbed = { scan };
})();
