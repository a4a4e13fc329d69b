// What a period costs on one year and on five years of generated history (issue 47, item
// 3): the Year view's sum, Trends' per-day totals and `/api/0/summary` for the last year and
// for all of the history, cold and from the cache; the same once the server has evaluated
// the days the dashboard asks it to keep ready (`prepare`: a year of the Year view's
// program, five of Trends'); the first sums after a restart and after a SIGKILL; the
// server's peak RSS and what the per-day results take (in memory and kept beside the
// database).
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
import { DEFAULT_CLASSES, PERIOD_KEYS, dailyQuery, periodQuery } from '../../aw-server/webui/queries.js';

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

/** Waits until the server has no days left to get ready (`GET /api/0/query/cache`). */
async function daysReady(server) {
  for (let idle = 0; idle < 3;) {
    const { ready } = await server.api('GET', 'query/cache');
    idle = ready.filling ? 0 : idle + 1;
    await new Promise((r) => setTimeout(r, 500));
  }
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

/** The requests the dashboard makes of `server` (views/activity.js). */
function asks(server) {
  const q = periodQuery([ids], DEFAULT_CLASSES);
  const daily = dailyQuery([ids], DEFAULT_CLASSES);
  const trends = (periods, prepare) => server.api('POST', 'query/sum', { timeperiods: periods, query: daily, keys: { cats: ['$category'] }, each: [['active'], ['duration'], ['cats']], prepare });
  return {
    // The Year view.
    sum: (periods) => server.api('POST', 'query/sum', { timeperiods: periods, query: q, keys: PERIOD_KEYS, limit: 100, each: [['active']] }),
    // Trends.
    trends,
    summary: (from) => server.api('GET', `summary?start=${encodeURIComponent(from)}&end=${encodeURIComponent(`${LAST}T23:59:59Z`)}&by=title&tz=UTC`),
    // `prepareDays`: five years of Trends' days, a year of the Year view's.
    prepare: async () => {
      await trends(days(5 * 365), true);
      await server.api('POST', 'query/sum', { timeperiods: days(365), query: q, keys: PERIOD_KEYS, prepare: true });
    },
  };
}

const rows = [];
for (const y of years.length ? years : [1, 5]) {
  const n = 365 * y;
  const file = dataset(n);
  const lastYear = days(365);
  const all = days(n);
  const row = { years: y };
  {
    const server = await startServer();
    const { sum, trends, summary } = asks(server);
    row.import_ms = await timed(() => server.api('POST', 'import', readFileSync(file, 'utf8')));
    row.year_cold_ms = await timed(() => sum(lastYear));
    row.year_cached_ms = await timed(() => sum(lastYear));
    row.trends_all_cold_ms = await timed(() => trends(all));
    row.trends_all_cached_ms = await timed(() => trends(all));
    row.all_cold_ms = await timed(() => sum(all));
    row.all_cached_ms = await timed(() => sum(all));
    await server.restart();
    row.year_after_restart_ms = await timed(() => sum(lastYear));
    row.trends_all_after_restart_ms = await timed(() => trends(all));
    row.all_after_restart_ms = await timed(() => sum(all));
    row.restored = (await server.api('GET', 'query/cache')).restored;
    // Last: a script's summaries of the history take room in the cache (and in the file
    // kept at a stop) from the dashboard's days.
    row.summary_year_ms = await timed(() => summary(lastYear[0].split('/')[0]));
    row.summary_all_ms = await timed(() => summary(all[0].split('/')[0]));
    const pid = JSON.parse(readFileSync(`${server.db}.server.json`, 'utf8')).pid;
    row.peak_rss_mb = status(pid, 'VmHWM:');
    const cache = await server.api('GET', 'query/cache');
    row.cache_entries = cache.entries;
    row.cache_mb = +(cache.bytes / 1e6).toFixed(1);
    row.evicted = cache.evicted;
    const kept = `${server.db}.derived`;
    row.kept_mb = existsSync(kept) ? +(statSync(kept).size / 1e6).toFixed(2) : 0;
    row.db_mb = +(statSync(server.db).size / 1e6).toFixed(1);
    await server.stop();
  }
  {
    // A fresh server with the history just imported: the dashboard asks for its days to be
    // kept ready, the server evaluates them in the background; then the looks, and the
    // first looks after a SIGKILL.
    const server = await startServer();
    const { sum, trends, prepare } = asks(server);
    await server.api('POST', 'import', readFileSync(file, 'utf8'));
    row.prepared_fill_ms = await timed(async () => {
      await prepare();
      await new Promise((r) => setTimeout(r, 2500));
      await daysReady(server);
    });
    row.year_prepared_ms = await timed(() => sum(lastYear));
    row.trends_all_prepared_ms = await timed(() => trends(all));
    row.kept_while_serving = (await server.api('GET', 'query/cache')).ready.kept;
    await server.killAndRestart();
    row.year_after_kill_ms = await timed(() => sum(lastYear));
    row.trends_all_after_kill_ms = await timed(() => trends(all));
    row.restored_after_kill = (await server.api('GET', 'query/cache')).restored;
    await server.stop();
  }
  rows.push(row);
  console.log(JSON.stringify(row));
}
console.table(rows);
