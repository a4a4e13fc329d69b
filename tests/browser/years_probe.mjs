// What a period costs on one year and on five years of generated history (issue 47, item
// 3): the Year view's sum and `/api/0/summary` for the last year and for all of the
// history, cold and from the cache, the first sum after a restart, the server's peak RSS and
// what the per-day results take (in memory and kept beside the database).
//
//   cargo build --release -p aw-server && node tests/browser/years_probe.mjs [YEARS...]
//
// Default: 1 5. Each history is `write_dataset`'s generator over 365 × YEARS days ending
// yesterday (2025-11-29). Numbers, not assertions (BENCHMARKS.md).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startServer } from './server.mjs';
import { ARTIFACTS } from './harness.mjs';
import { DEFAULT_CLASSES, PERIOD_KEYS, periodQuery } from '../../aw-server/webui/queries.js';

const ROOT = resolve(new URL('.', import.meta.url).pathname, '../..');
const LAST = '2025-11-29';
const HOST = 'benchhost';
const DAY = 24 * 3_600_000;
const years = process.argv.slice(2).map(Number).filter((n) => n > 0);
const ids = { window: `aw-watcher-window_${HOST}`, afk: `aw-watcher-afk_${HOST}`, manual: null, browsers: [{ id: `aw-watcher-web-chrome_${HOST}`, browser: 'chrome' }] };

function dataset(days) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `bench-${days}-days-${LAST}.json`);
  if (!existsSync(file)) {
    execFileSync('cargo', ['run', '--release', '--quiet', '-p', 'aw-tests', '--example', 'write_dataset', '--', file, LAST, String(days)], { cwd: ROOT, stdio: 'inherit' });
  }
  return file;
}

/** The days (04:00 UTC to 04:00 UTC) of the last `n` days up to `LAST`. */
function days(n) {
  const end = Date.parse(`${LAST}T04:00:00Z`) + DAY;
  return Array.from({ length: n }, (_, i) => {
    const s = end - (n - i) * DAY;
    return `${new Date(s).toISOString()}/${new Date(s + DAY).toISOString()}`;
  });
}

async function timed(f) {
  const t = performance.now();
  await f();
  return Math.round(performance.now() - t);
}

function status(pid, field) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(field));
  return line ? Math.round(Number(line.split(/\s+/)[1]) / 1024) : null;
}

const rows = [];
for (const y of years.length ? years : [1, 5]) {
  const n = 365 * y;
  const file = dataset(n);
  const server = await startServer();
  const importMs = await timed(() => server.api('POST', 'import', readFileSync(file, 'utf8')));
  const q = periodQuery([ids], DEFAULT_CLASSES);
  const sum = (periods) => server.api('POST', 'query/sum', { timeperiods: periods, query: q, keys: PERIOD_KEYS, limit: 100, each: [['active']] });
  const summary = (from) => server.api('GET', `summary?start=${encodeURIComponent(from)}&end=${encodeURIComponent(`${LAST}T23:59:59Z`)}&by=title&tz=UTC`);
  const lastYear = days(365);
  const all = days(n);
  const row = { years: y, import_ms: importMs };
  row.year_cold_ms = await timed(() => sum(lastYear));
  row.year_cached_ms = await timed(() => sum(lastYear));
  row.all_cold_ms = await timed(() => sum(all));
  row.all_cached_ms = await timed(() => sum(all));
  row.summary_year_ms = await timed(() => summary(lastYear[0].split('/')[0]));
  row.summary_all_ms = await timed(() => summary(all[0].split('/')[0]));
  const pidBefore = JSON.parse(readFileSync(`${server.db}.server.json`, 'utf8')).pid;
  row.peak_rss_mb = status(pidBefore, 'VmHWM:');
  const cache = await server.api('GET', 'query/cache');
  row.cache_entries = cache.entries;
  row.cache_mb = +(cache.bytes / 1e6).toFixed(1);
  row.evicted = cache.evicted;
  await server.restart();
  row.year_after_restart_ms = await timed(() => sum(lastYear));
  row.all_after_restart_ms = await timed(() => sum(all));
  const info = await server.api('GET', 'query/cache');
  row.restored = info.restored;
  const kept = `${server.db}.derived`;
  row.kept_mb = existsSync(kept) ? +(statSync(kept).size / 1e6).toFixed(2) : 0;
  row.db_mb = +(statSync(server.db).size / 1e6).toFixed(1);
  rows.push(row);
  console.log(JSON.stringify(row));
  await server.stop();
}
console.table(rows);
