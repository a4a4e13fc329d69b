// The dashboard's periods in a real browser (issues 27 and 37): how long until a view is
// complete (every card and chart filled, the comparison included: `main[data-complete]`) on
// the generated year, which ends yesterday, as a user's morning goes:
//
// 1. the year imported, and the Year view opened at once (a year never evaluated since its
//    data was written: a whole page load);
// 2. Week, Month and Trends looked at too, then the server restarted (a clean stop: it keeps
//    its cached query results beside the database), and a few minutes of today's
//    heartbeats written by the window and AFK watchers;
// 3. the first look after the restart: the day view loaded, then a click on Year, Week and
//    Month and on Trends, each from the click to the last answer; then Year again;
// 4. the next morning: another restart, the browser's clock a day later, a few minutes of
//    that day's heartbeats, and a click on Year.
//
//   cargo build --release -p aw-server && node tests/browser/bench.mjs [rounds]
//
// Prints the medians of `rounds` rounds (default 3) and writes them to
// tests/artifacts/periods-bench.json; `BENCH_DAY` (default 2025-11-27) is today. With
// `AW_REFERENCE_BIN` (the reference aw-server) each round runs it too, right after ours,
// serving this same dashboard (`--webpath`), so both columns come from the same run. Not part of
// the test command: numbers, not assertions (BENCHMARKS.md); a slow machine gives bigger
// numbers, never a failure. The browser's cache is off throughout.

import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { resolve } from 'node:path';
import { serverBin, startServer } from './server.mjs';
import { busyYear } from './seed.mjs';
import { ARTIFACTS, CHROMIUM_ARGS, HANG_MS } from './harness.mjs';

const rounds = Number(process.argv[2] || 3);
const DAY = process.env.BENCH_DAY || '2025-11-27';
const DAY0 = Date.parse(`${DAY}T00:00:00Z`);
// A morning: the watchers have been writing since 09:20.
const NOW = DAY0 + 9.5 * 3_600_000;
const year = busyYear('busyhost', DAY0);
const HOST = 'busyhost';

/**
 * Milliseconds from navigating to `hash` (a whole page load: from a blank page) until the
 * view says it is complete.
 */
async function load(page, url, hash, view) {
  await page.goto('about:blank');
  const t = performance.now();
  await page.goto(`${url}/${hash}`);
  await page.waitForSelector(`main[data-complete="${view}"]`, { timeout: HANG_MS });
  return performance.now() - t;
}

/** Milliseconds from clicking `selector` until the view (`view`) says it is complete. */
async function click(page, selector, view) {
  await page.evaluate(() => { delete document.getElementById('view').dataset.complete; });
  const t = performance.now();
  await page.click(selector);
  await page.waitForSelector(`main[data-complete="${view}"]`, { timeout: HANG_MS });
  return performance.now() - t;
}

/** A few minutes of heartbeats before `now`, as aw-watcher-window and aw-watcher-afk send them. */
async function morningHeartbeats(server, now = NOW) {
  const start = now - 10 * 60_000;
  for (let s = 0; s < 5 * 60; s += 5) {
    const timestamp = new Date(start + s * 1000).toISOString();
    const app = s < 150 ? 'Code' : 'Firefox';
    await server.api('POST', `buckets/aw-watcher-window_${HOST}/heartbeat?pulsetime=6`,
      { timestamp, duration: 0, data: { app, title: `${app} this morning` } });
    await server.api('POST', `buckets/aw-watcher-afk_${HOST}/heartbeat?pulsetime=6`,
      { timestamp, duration: 0, data: { status: 'not-afk' } });
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

mkdirSync(ARTIFACTS, { recursive: true });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
const rows = {};
const assembled = [];
const restored = [];
const sizes = [];
const servers = [['ours', serverBin, null]];
if (process.env.AW_REFERENCE_BIN) {
  servers.push(['reference', process.env.AW_REFERENCE_BIN, resolve(new URL('.', import.meta.url).pathname, '../../aw-server/webui')]);
}
try {
  for (let round = 0; round < rounds; round += 1) for (const [who, binary, dashboardDir] of servers) {
    const note = (name, ms) => { ((rows[name] ||= {})[who] ||= []).push(ms); };
    const server = await startServer({ dashboard: true, binary, dashboardDir });
    try {
      await server.api('POST', 'import', year.json);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
      context.setDefaultTimeout(HANG_MS);
      const page = await context.newPage();
      await page.clock.setFixedTime(NOW);
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      const view = (period) => `#/activity?${period ? `period=${period}&` : ''}date=${DAY}&host=${HOST}`;
      note('Year, never evaluated (page load)', await load(page, server.url, view('year'), 'activity'));
      if (who === 'ours') assembled.push(await page.getAttribute('main', 'data-assembled'));
      await load(page, server.url, view('week'), 'activity');
      await load(page, server.url, view('month'), 'activity');
      await load(page, server.url, `#/trends?host=${HOST}`, 'trends');
      await server.restart();
      await morningHeartbeats(server);
      await load(page, server.url, view(null), 'activity');
      note('Year, first look after a restart', await click(page, '[data-period="year"]', 'activity'));
      if (who === 'ours') assembled.push(await page.getAttribute('main', 'data-assembled'));
      note('Week, first look after a restart', await click(page, '[data-period="week"]', 'activity'));
      note('Month, first look after a restart', await click(page, '[data-period="month"]', 'activity'));
      note('Trends, first look after a restart', await click(page, 'a[data-view="trends"]', 'trends'));
      await load(page, server.url, view(null), 'activity');
      note('Year, again', await click(page, '[data-period="year"]', 'activity'));
      // The next morning: a new day, so yesterday's piece is new too.
      const tomorrow = NOW + 24 * 3_600_000;
      await server.restart();
      await page.clock.setFixedTime(tomorrow);
      await morningHeartbeats(server, tomorrow);
      await load(page, server.url, `#/activity?date=${new Date(tomorrow).toISOString().slice(0, 10)}&host=${HOST}`, 'activity');
      note('Year, the next morning', await click(page, '[data-period="year"]', 'activity'));
      if (who === 'ours') {
        restored.push((await server.api('GET', 'query/cache')).restored);
        // What the kept results add to the database's files (at the last restart's stop).
        const kept = `${server.db}.derived`;
        if (existsSync(kept)) sizes.push(`${(statSync(kept).size / 1e6).toFixed(2)} of ${(statSync(server.db).size / 1e6).toFixed(1)} MB`);
      }
      await context.close();
    } finally {
      await server.stop();
    }
  }
} finally {
  await browser.close();
}
const out = Object.fromEntries(Object.entries(rows).map(([k, byServer]) => [k, Object.fromEntries(Object.entries(byServer)
  .map(([who, v]) => [who, { median_ms: Math.round(median(v)), runs: v.map(Math.round) }]))]));
for (const [k, byServer] of Object.entries(out)) {
  const cells = Object.entries(byServer).map(([who, v]) => `${who} ${String(v.median_ms).padStart(6)} ms (${v.runs.join(', ')})`);
  const ratio = byServer.reference ? `   ${(byServer.ours.median_ms / byServer.reference.median_ms).toFixed(2)}x` : '';
  console.log(`${k.padEnd(36)} ${cells.join('   ')}${ratio}`);
}
console.log(`Year views added up from: ${assembled.join(', ')}; query results read back at the restarts: ${restored.join(', ')}; kept results file: ${sizes.join(', ')}`);
writeFileSync(join(ARTIFACTS, 'periods-bench.json'), `${JSON.stringify(out, null, 2)}\n`);
