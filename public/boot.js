// boot.js runs first (a file, not an inline script: the Content-Security-Policy
// of `dynosim serve` allows only the site's own scripts).
"use strict";
// Embed mode (?embed=1): compact, no chrome. Set before first paint.
if (/[?&]embed=1/.test(location.search)) document.documentElement.classList.add("embed");
window.dynosimLoad = { start: performance.now() };
