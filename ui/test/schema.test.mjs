// The page's and the Worker's JavaScript read the report only by keys it
// has: every read of a report section found in the JavaScript tests and
// the page's scripts (rep.summary.mean_ttft_ms, report.planner.ticks[0],
// JSON.parse(x).summary["wall_time_ms"], const s = rep.summary; s.num_requests)
// must be in core/report/schema/report-keys.json, the key list the Go
// side generates and keeps fresh. Pure node (no browser, no wasm):
// node --test ui/test/schema.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keys, resolve, summaryKey, metricKey, reportPath } from './reportkeys.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// The scanned scripts: the browser tests, the Worker's tests and the page.
const dirs = [['ui/test', /\.mjs$/], ['wasm/worker/test', /\.mjs$/], ['public', /^(?!wasm_exec|vugu-render).*\.js$/]];
const files = dirs.flatMap(([d, re]) => readdirSync(path.join(root, d)).filter((f) => re.test(f)).map((f) => path.join(d, f)));

// code blanks comments and string literals (keeping line breaks) after
// turning x["key"] into x.key, so that only code is scanned.
export function code(src) {
  src = src.replace(/(?<=[\w)\]])\[(['"])([A-Za-z_]\w*)\1\]/g, '.$2');
  return src.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`/g,
    (m) => m.replace(/[^\n]/g, ' '));
}

const chain = String.raw`((?:\??\.[A-Za-z_]\w*|\[\d+\])*)`;
const reads = (s) => [...s.matchAll(/\??\.([A-Za-z_]\w*)|\[(\d+)\]/g)].map((m) => (m[1] !== undefined ? m[1] : Number(m[2])));

// Report-like values: the chain before .section names a report (rep,
// report, native, a parsed CLI output…), not a config or a page object.
const owner = /(?:\b(?:rep|report|reports|native|saved|plain|pageReport|cliReport|best|first|got|want|g|w)|\)|\])\s*$/;

export let checked = 0;

export function problems(file, src) {
  const text = code(src);
  const out = [];
  const line = (i) => text.slice(0, i).split('\n').length;
  const sections = new RegExp(String.raw`\??\.(${keys.sections.join('|')})\b` + chain + String.raw`(\s*\()?`, 'g');
  for (const m of text.matchAll(sections)) {
    if (!owner.test(text.slice(Math.max(0, m.index - 40), m.index))) continue;
    const rs = reads(m[2]);
    if (m[3] && rs.length === 0) continue; // a method of that name, e.g. page.workers()
    checked++;
    const bad = resolve(m[1], rs);
    if (bad) out.push(`${file}:${line(m.index)}: ${bad}`);
  }
  // Aliases of the summary: const s = rep.summary; … s.key.
  for (const a of text.matchAll(/(?:const|let|var)\s+(\w+)\s*=\s*[\w.()\[\]\s]*?\.summary\s*[;,\n]/g)) {
    for (const m of text.slice(a.index).matchAll(new RegExp(String.raw`\b${a[1]}\.([A-Za-z_]\w*)`, 'g'))) {
      const bad = resolve('summary', [m[1]]);
      if (bad) out.push(`${file}:${line(a.index + m.index)}: ${bad} (through ${a[1]} = ….summary)`);
    }
  }
  // A recommend ledger entry's metrics: best.metrics.key.
  for (const m of text.matchAll(/\.metrics\.([A-Za-z_]\w*)/g)) {
    try { metricKey(m[1]); } catch (e) { out.push(`${file}:${line(m.index)}: ${e.message}`); }
  }
  return out;
}

test('the key list is the schema package\'s: sections, summary keys, paths', () => {
  assert.ok(keys.sections.includes('summary') && keys.summary.length > 100, 'a real key list');
  for (const k of ['num_requests', 'mean_ttft_ms', 'p99_itl_ms', 'wall_time_ms', 'num_preemptions']) summaryKey(k);
  reportPath('planner.ticks[].observed_requests');
  reportPath('kv_tiers[].tiers[].hit_blocks');
  assert.throws(() => summaryKey('mean_ttft'), /not in core\/report\/schema/);
  assert.throws(() => reportPath('planner.tick'), /not in core\/report\/schema/);
});

test('the scanner finds reads and rejects unknown keys', () => {
  const src = [
    'const a = rep.summary.mean_ttft_ms;',
    'const b = JSON.parse(out).summary["p99_ttft_msx"];',
    'assert.equal(report.planner.ticks[0].t_ms, 1);',
    'const n = rep.kv_tiers[0].tiers.length; rep.kv_tiers[0].tierz;',
    'const s = res.report.summary;',
    's.num_requests; s.bogus_key;',
    '// rep.summary.not_checked_in_a_comment',
    'x = "rep.summary.nor_in_a_string"; page.workers().filter(Boolean);',
    'best.metrics.output_throughput_per_gpu_tok_s; best.metrics.nope;',
  ].join('\n');
  const got = problems('x.mjs', src);
  assert.deepEqual(got.map((p) => p.replace(/ \(.*$/, '').split(': ')[1]),
    ['summary.p99_ttft_msx', 'kv_tiers[].tierz', 'summary.bogus_key', 'ledger metric "nope" is not in core/report/schema/report-keys.json']);
});

test('every report read in the JavaScript tests and the page is in the key list', () => {
  checked = 0;
  assert.ok(files.length >= 10, `scanned ${files.length} files`);
  const bad = files.flatMap((f) => problems(f, readFileSync(path.join(root, f), 'utf8')));
  assert.deepEqual(bad, [], 'reads of keys the report does not have:\n' + bad.join('\n'));
  assert.ok(checked >= 50, `only ${checked} report reads found: is the scanner blind?`);
  console.log(`checked ${checked} report reads in ${files.length} files`);
});
