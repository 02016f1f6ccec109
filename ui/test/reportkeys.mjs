// The report's key list, generated from core/report/schema
// (core/report/schema/report-keys.json; `go test ./core/report -run
// TestKeyList -update` rewrites it). The page's and the Worker's
// JavaScript tests name report keys through these helpers, which throw on
// a key the report does not have, so a renamed key fails a test instead
// of reading undefined. Pure node: no browser, no wasm.
import { readFileSync } from 'node:fs';

const file = new URL('../../core/report/schema/report-keys.json', import.meta.url);

/** The generated list: sections, summary, paths, request_record, ledger_metrics. */
export const keys = JSON.parse(readFileSync(file, 'utf8'));

const summary = new Set(keys.summary);
const ledger = new Set([...keys.summary, ...keys.ledger_metrics]);
const paths = new Set(keys.paths);
const record = new Set(keys.request_record);

function known(set, what, k) {
  if (!set.has(k)) throw new Error(`${what} ${JSON.stringify(k)} is not in core/report/schema/report-keys.json`);
  return k;
}

/** summaryKey("mean_ttft_ms") returns its argument, or throws if the summary has no such key. */
export const summaryKey = (k) => known(summary, 'summary key', k);

/** metricKey is a key of a recommend ledger entry's metrics (summary keys and the ledger's own). */
export const metricKey = (k) => known(ledger, 'ledger metric', k);

/** reportPath("planner.ticks[].t_ms") returns its argument, or throws if the report has no such path. */
export const reportPath = (p) => known(paths, 'report path', p);

/** recordKey is a field of a requests.jsonl record. */
export const recordKey = (k) => known(record, 'request record field', k);

// Members of JavaScript arrays, strings and objects a read may end in.
const builtins = new Set(['length', 'map', 'filter', 'some', 'every', 'reduce', 'find', 'findIndex', 'slice',
  'forEach', 'includes', 'at', 'indexOf', 'flatMap', 'join', 'toFixed', 'concat', 'keys', 'values', 'entries']);

/**
 * resolve checks a chain of reads from a section on ("planner",
 * ["ticks", 0, "t_ms"]) against the key list. It returns an error string,
 * or "" when every read is a report path (or a builtin member of the value
 * read so far).
 */
export function resolve(section, reads) {
  let p = section;
  for (const r of reads) {
    if (typeof r === 'number') {
      if (![...paths].some((x) => x.startsWith(p + '[]'))) return `${p}[${r}]: not an array`;
      p += '[]';
      continue;
    }
    if (paths.has(p + '.' + r)) { p += '.' + r; continue; }
    if (paths.has(p + '.*')) { p += '.*'; continue; }
    if (builtins.has(r)) return '';
    return `${p}.${r}`;
  }
  return '';
}
