// Shared helpers for the browser tests and the benchmark: start
// `dynosim serve` on a free loopback port and launch Debian's Chromium
// through playwright-core (never a downloaded browser).
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { keys } from "./reportkeys.mjs";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const bin = path.resolve(repo, process.env.DYNOSIM_BIN || "bin/dynosim");
export const artifacts = path.join(repo, "test-artifacts");
mkdirSync(artifacts, { recursive: true });

// startServer runs `dynosim serve --addr 127.0.0.1:0 [extraArgs…]` and
// resolves to {url, stop} once it prints the address it listens on.
export function startServer(extraArgs = []) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, ["serve", "--addr", "127.0.0.1:0", ...extraArgs],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, DYNOSIM_SERVICE_URL: "" } });
    let out = "", err = "";
    const timer = setTimeout(() => { proc.kill(); reject(new Error("dynosim serve did not start: " + err)); }, 15000);
    proc.stderr.on("data", (d) => (err += d));
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/http:\/\/127\.0\.0\.1:\d+\//);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[0],
          stop: () => new Promise((r) => { if (proc.exitCode !== null) return r(); proc.once("exit", r); proc.kill("SIGTERM"); }),
        });
      }
    });
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`dynosim serve exited with ${code}: ${err}`)); });
  });
}

// ACTION_MS bounds each Playwright action (click, fill, …) that names no
// timeout of its own. Playwright's default (30 s) is a wall-clock guess a
// loaded machine running two test files at once has missed (a click on a
// page still drawing a run's charts); this one only catches a hang.
export const ACTION_MS = 300_000;

// patient applies ACTION_MS to a browser context.
export function patient(context) {
  context.setDefaultTimeout(ACTION_MS);
  return context;
}

// launch starts headless Chromium with a fresh profile.
export async function launch() {
  const userDataDir = mkdtempSync(path.join(tmpdir(), "dynosim-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
  });
  patient(context);
  return {
    context,
    close: async () => { await context.close(); rmSync(userDataDir, { recursive: true, force: true }); },
  };
}

// openPage loads the site and waits until the UI and the simulator are ready.
export async function openPage(context, url, { consoleLog } = {}) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  if (consoleLog) page.on("console", (m) => consoleLog.push(m.type() + ": " + m.text()));
  await page.goto(url);
  await page.waitForFunction(() => document.documentElement.dataset.interactive === "1", null, { timeout: ACTION_MS });
  page.pageErrors = errors;
  return page;
}

// startPage is a test file's usual fixture: a page server, a browser and
// one page on it. stopPage ends it (either may be missing if start failed).
export async function startPage() {
  const server = await startServer();
  const browser = await launch();
  return { server, browser, page: await openPage(browser.context, server.url) };
}
export async function stopPage({ server, browser }) {
  await browser?.close();
  await server?.stop();
}


// runConfigured waits until the page accepts the config it shows, runs it
// and waits until this run is done and listed.
export async function runConfigured(page) {
  await page.waitForFunction(() => document.querySelector('[data-testid="config-status"]').textContent === "Config is valid.", null, { timeout: ACTION_MS });
  const n = await page.evaluate(() => document.querySelectorAll('[data-testid="runs"] li').length);
  await page.locator('[data-testid="run"]').click();
  await page.waitForFunction((n) => /^Done/.test(document.querySelector(".status").textContent) &&
    document.querySelectorAll('[data-testid="runs"] li').length !== n, n, { timeout: ACTION_MS });
}

// WALL_FIELDS are the report fields that measure wall-clock time.
export const WALL_FIELDS = keys.wall_clock; // the summary keys that depend on the machine (core/report/schema)

// stripWall removes wall-clock fields (anywhere in the report) for comparison.
export function stripWall(v) {
  if (Array.isArray(v)) return v.map(stripWall);
  if (v && typeof v === "object") {
    const o = {};
    for (const [k, x] of Object.entries(v)) if (!WALL_FIELDS.includes(k)) o[k] = stripWall(x);
    return o;
  }
  return v;
}

// stripWallText removes wall-clock fields from report JSON text so the rest
// can be compared byte for byte.
export function stripWallText(json) {
  const re = new RegExp(`"(${WALL_FIELDS.join("|")})"\\s*:\\s*-?[0-9.eE+-]+(,\\s*)?`, "g");
  return json.replace(re, "").replace(/,(\s*[}\]])/g, "$1");
}

// VIEWPORTS are the two sizes the results are checked at: a laptop and a phone.
export const VIEWPORTS = [{ width: 1280, height: 800 }, { width: 390, height: 844 }];

// resizeTo sets the page's viewport and, when that changes its size, waits
// until the page's debounced resize handlers (150 ms; charts, planner and
// explain redraw there) have run: the listener added here runs after the
// page's own, so its later timer fires after theirs. Tests resize one page
// instead of running the same simulation again at each size.
export async function resizeTo(page, vp) {
  const cur = page.viewportSize();
  if (cur && cur.width === vp.width && cur.height === vp.height) return;
  const redrawn = page.evaluate(() => new Promise((r) => window.addEventListener("resize", () => setTimeout(r, 400), { once: true })));
  await page.setViewportSize(vp);
  await redrawn;
}

// atEach runs check at each of VIEWPORTS on one page, resizing it between.
export async function atEach(page, check) {
  for (const vp of VIEWPORTS) {
    await resizeTo(page, vp);
    await check(vp);
  }
}

// openDetails opens the results' Details block (the raw summary tables sit
// under it, collapsed: issue 32 item 4) once a run has shown results, and
// waits until the summary tables show. It stays open across later runs.
// where: a page or a frame locator.
export async function openDetails(where) {
  const d = where.locator('[data-testid="details"]');
  await d.waitFor({ state: "attached", timeout: ACTION_MS });
  if ((await d.getAttribute("open")) === null) await where.locator('[data-testid="details-toggle"]').click();
  await where.locator('[data-testid="summary"]').waitFor({ timeout: ACTION_MS });
}
