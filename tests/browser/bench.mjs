// The dashboard's periods in a real browser (issues 27, 37 and 47): how long until a view is
// complete (every card and chart filled, the comparison included: `main[data-complete]`) on
// the generated year (`write_dataset`: window, AFK and browser, with their variety of
// titles and URLs, 543k events) ending yesterday, as a user's days go:
//
// 1. the year imported, and the Year view opened at once (a year never evaluated since its
//    data was written: a whole page load); and (ours) on another fresh server, the year
//    imported, the day view loaded (the dashboard asks the server to keep its periods
//    ready: `prepare`), and Year and Trends clicked once the server has evaluated the days
//    in the background;
// 2. Week, Month and Trends looked at too, then the server restarted (a clean stop: it keeps
//    its cached query results beside the database), and a few minutes of today's
//    heartbeats written by the window and AFK watchers;
// 3. the first look after the restart: the day view loaded, then a click on Year, Week and
//    Month and on Trends, each from the click to the last answer; then Year again;
// 4. the next morning, which begins a new month (`BENCH_DAY` is the last of a month):
//    another restart, the browser's clock a day later, a few minutes of that day's
//    heartbeats, and a click on Year;
// 5. a SIGKILL (the results kept while serving are read back but for what was written
//    since), a start, more heartbeats, and a click on Year; then another SIGKILL, and Year
//    once the server has evaluated the days in the background (`ready` in
//    `GET /api/0/query/cache`);
// and, between 3 and 4, an import that reaches every day of the year, then a click on Year
// at once, and after another such import, once the days are ready again.
//
//   cargo build --release -p aw-server && node tests/browser/bench.mjs [rounds]
//
// Prints the medians of `rounds` rounds (default 3) and writes them to
// tests/artifacts/periods-bench.json; `BENCH_DAY` (default 2025-11-30) is today. With
// `AW_REFERENCE_BIN` (the reference aw-server) each round runs it too, right after ours,
// serving this same dashboard (`--webpath`), so both columns come from the same run;
// `BENCH_REFERENCE_ROUNDS=N` runs the reference in the first N rounds only (its Year view
// takes 40-50 s a look, which would triple the run for a median of the same). With
// `BENCH_BUSY=1` one core is kept busy by another process throughout. Not part of the test
// command: numbers, not assertions (BENCHMARKS.md); a slow machine gives bigger numbers,
// never a failure. The browser's cache is off throughout.

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { resolve } from 'node:path';
import { serverBin, startServer } from './server.mjs';
import { ARTIFACTS, CHROMIUM_ARGS, HANG_MS } from './harness.mjs';

const rounds = Number(process.argv[2] || 3);
const referenceRounds = Number(process.env.BENCH_REFERENCE_ROUNDS || rounds);
const DAY = process.env.BENCH_DAY || '2025-11-30';
const DAY0 = Date.parse(`${DAY}T00:00:00Z`);
// A morning: the watchers have been writing since 09:20.
const NOW = DAY0 + 9.5 * 3_600_000;
const HOST = 'benchhost';
const ROOT = resolve(new URL('.', import.meta.url).pathname, '../..');

/** The generated year ending yesterday, as an export document (written once, then reused). */
function generatedYear() {
  mkdirSync(ARTIFACTS, { recursive: true });
  const yesterday = new Date(DAY0 - 24 * 3_600_000).toISOString().slice(0, 10);
  const file = join(ARTIFACTS, `bench-year-${yesterday}.json`);
  if (!existsSync(file)) {
    execFileSync('cargo', ['run', '--release', '--quiet', '-p', 'aw-tests', '--example', 'write_dataset', '--', file, yesterday], { cwd: ROOT, stdio: 'inherit' });
  }
  return readFileSync(file, 'utf8');
}
const year = { json: generatedYear() };

/**
 * An import that reaches every day of the year: one second of a new window event a day (at
 * `second` past 03:00), into the year's window bucket.
 */
function everyDayImport(second) {
  const events = [];
  for (let d = 365; d >= 1; d -= 1) {
    const t = new Date(DAY0 - d * 24 * 3_600_000 + 3 * 3_600_000 + second * 1000);
    events.push({ timestamp: t.toISOString(), duration: 1, data: { app: 'imported', title: `import ${second}` } });
  }
  const id = `aw-watcher-window_${HOST}`;
  return { buckets: { [id]: { id, type: 'currentwindow', client: 'aw-watcher-window', hostname: HOST, created: new Date(DAY0).toISOString(), events } } };
}

/** Waits until the server has no period sums left to get ready (ours: `GET /api/0/query/cache`). */
async function daysReady(server) {
  let idle = 0;
  for (let i = 0; i < 600 && idle < 3; i += 1) {
    // The reference has no such route: nothing to wait for.
    const { ready } = await server.api('GET', 'query/cache').catch(() => ({}));
    if (!ready) return;
    idle = ready.filling ? 0 : idle + 1;
    await new Promise((r) => setTimeout(r, 500));
  }
}

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
  // Timed in the page, from the click event to the moment the view marks itself complete:
  // Playwright's own click waits for the element to be stable over animation frames first,
  // which added some 50–80 ms to every click and is no part of what a user waits for.
  await page.waitForSelector(selector, { timeout: HANG_MS });
  await page.$eval(selector, (el, v) => {
    const main = document.getElementById('view');
    window.__awDone = null;
    new MutationObserver((_, observer) => {
      if (main.dataset.complete === v) {
        window.__awDone = performance.now();
        observer.disconnect();
      }
    }).observe(main, { attributes: true, attributeFilter: ['data-complete'] });
    window.__awClicked = performance.now();
    el.click();
  }, view);
  await page.waitForSelector(`main[data-complete="${view}"]`, { timeout: HANG_MS });
  return page.evaluate(() => window.__awDone - window.__awClicked);
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

/** One core kept busy by another process while `BENCH_BUSY` is set. */
const busy = process.env.BENCH_BUSY ? spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }) : null;

/** A page of its own browser context at `NOW`, the browser's cache off. */
async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
  context.setDefaultTimeout(HANG_MS);
  const page = await context.newPage();
  await page.clock.setFixedTime(NOW);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  return { context, page };
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
    if (who === 'reference' && round >= referenceRounds) continue;
    const note = (name, ms) => { ((rows[name] ||= {})[who] ||= []).push(ms); };
    if (who === 'ours') {
      const server = await startServer({ dashboard: true, binary, dashboardDir });
      try {
        await server.api('POST', 'import', year.json);
        const { context, page } = await newPage();
        await load(page, server.url, `#/activity?date=${DAY}&host=${HOST}`, 'activity');
        await new Promise((r) => setTimeout(r, 2500));
        const t = performance.now();
        await daysReady(server);
        note('(the days evaluated in the background)', performance.now() - t + 2500);
        note('Year, first look after an import, days ready', await click(page, '[data-period="year"]', 'activity'));
        note('Trends, first look after an import, days ready', await click(page, 'a[data-view="trends"]', 'trends'));
        await context.close();
      } finally {
        await server.stop();
      }
    }
    const server = await startServer({ dashboard: true, binary, dashboardDir });
    try {
      await server.api('POST', 'import', year.json);
      const { context, page } = await newPage();
      const view = (period) => `#/activity?${period ? `period=${period}&` : ''}date=${DAY}&host=${HOST}`;
      note('Year, first look after an import (page load)', await load(page, server.url, view('year'), 'activity'));
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
      // An import into every day: the first look right after it, and (ours) the look once
      // the server has evaluated the days again in the background.
      await server.api('POST', 'import', everyDayImport(0));
      await load(page, server.url, view(null), 'activity');
      note('Year, right after an import into every day', await click(page, '[data-period="year"]', 'activity'));
      await server.api('POST', 'import', everyDayImport(10));
      await new Promise((r) => setTimeout(r, 2500));
      await daysReady(server);
      await load(page, server.url, view(null), 'activity');
      note('Year, after an import, days ready', await click(page, '[data-period="year"]', 'activity'));
      // The next morning: a new day, so yesterday's piece is new too.
      const tomorrow = NOW + 24 * 3_600_000;
      await server.restart();
      await page.clock.setFixedTime(tomorrow);
      await morningHeartbeats(server, tomorrow);
      await load(page, server.url, `#/activity?date=${new Date(tomorrow).toISOString().slice(0, 10)}&host=${HOST}`, 'activity');
      note('Year, a new day and month', await click(page, '[data-period="year"]', 'activity'));
      if (who === 'ours') {
        restored.push((await server.api('GET', 'query/cache')).restored);
        // What the kept results add to the database's files (at the last restart's stop).
        const kept = `${server.db}.derived`;
        if (existsSync(kept)) sizes.push(`${(statSync(kept).size / 1e6).toFixed(2)} of ${(statSync(server.db).size / 1e6).toFixed(1)} MB`);
      }
      // A SIGKILL: nothing is saved at a stop. The first look at once, and (ours) once the
      // days are ready again.
      await server.killAndRestart();
      await morningHeartbeats(server, tomorrow + 15 * 60_000);
      await load(page, server.url, `#/activity?date=${new Date(tomorrow).toISOString().slice(0, 10)}&host=${HOST}`, 'activity');
      note('Year, first look after a SIGKILL', await click(page, '[data-period="year"]', 'activity'));
      await server.killAndRestart();
      await new Promise((r) => setTimeout(r, 2500));
      await daysReady(server);
      await load(page, server.url, `#/activity?date=${new Date(tomorrow).toISOString().slice(0, 10)}&host=${HOST}`, 'activity');
      note('Year, after a SIGKILL, days ready', await click(page, '[data-period="year"]', 'activity'));
      await context.close();
    } finally {
      await server.stop();
    }
  }
} finally {
  await browser.close();
  if (busy) busy.kill();
}
const out = Object.fromEntries(Object.entries(rows).map(([k, byServer]) => [k, Object.fromEntries(Object.entries(byServer)
  .map(([who, v]) => [who, { median_ms: Math.round(median(v)), runs: v.map(Math.round) }]))]));
for (const [k, byServer] of Object.entries(out)) {
  const cells = Object.entries(byServer).map(([who, v]) => `${who} ${String(v.median_ms).padStart(6)} ms (${v.runs.join(', ')})`);
  const ratio = byServer.reference ? `   ${(byServer.ours.median_ms / byServer.reference.median_ms).toFixed(2)}x` : '';
  console.log(`${k.padEnd(36)} ${cells.join('   ')}${ratio}`);
}
console.log(`${busy ? 'One core kept busy. ' : ''}Year views added up from: ${assembled.join(', ')}; query results read back at the restarts: ${restored.join(', ')}; kept results file: ${sizes.join(', ')}`);
writeFileSync(join(ARTIFACTS, 'periods-bench.json'), `${JSON.stringify(out, null, 2)}\n`);
