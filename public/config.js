// config.js: site settings read by dynosim.js. `dynosim serve --service-url URL`
// serves its own version of this file; for a static copy of public/, set the
// shared service here (the Cloudflare Worker of docs/worker.md) to offer
// "Run on the shared service" on the page. Unset (the default): no such option.
// window.DYNOSIM_SERVICE_URL = "https://dynosim.example.workers.dev";
