// The dashboard's periods in a real browser (issue 27): how long after navigation the year
// view, a week and Trends are complete (every card and chart filled, the comparison
// included: `main[data-complete]`), on the generated year, with the server's query cache
// cold (a fresh server) and warm (the same view again), the browser's cache off both times.
//
//   cargo build --release -p aw-server && node tests/browser/bench.mjs [rounds]
//
// Prints the medians of `rounds` rounds (default 3) and writes them to
// tests/artifacts/periods-bench.json. Not part of the test command: numbers, not assertions
// (BENCHMARKS.md); a slow machine gives bigger numbers, never a failure. The speed goals that
// used to be test assertions live here as goals only: on a busy day of the generated year, a
// cold page load under 5 s, a cold query under 2 s and a day change under 1 s
// (dashboard.test.mjs still reports those in tests/artifacts/timings.json).

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { busyYear } from './seed.mjs';
import { ARTIFACTS, CHROMIUM_ARGS, DAY_MS, HANG_MS } from './harness.mjs';

const rounds = Number(process.argv[2] || 3);
const DAY = '2025-03-04';
const DAY0 = Date.parse(`${DAY}T00:00:00Z`);
const NOW = DAY0 + 19 * 3_600_000;
const year = busyYear('busyhost', DAY0);

/**
 * Milliseconds from navigating to `hash` (a whole page load: from a blank page, the
 * browser's cache off) until the view says it is complete.
 */
async function complete(page, url, hash, view) {
  await page.goto('about:blank');
  const t = performance.now();
  await page.goto(`${url}/${hash}`);
  await page.waitForSelector(`main[data-complete="${view}"]`, { timeout: HANG_MS });
  return performance.now() - t;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

mkdirSync(ARTIFACTS, { recursive: true });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
const rows = {};
const note = (name, ms) => { (rows[name] ||= []).push(ms); };
try {
  for (let round = 0; round < rounds; round += 1) {
    const server = await startServer({ dashboard: true });
    try {
      await server.api('POST', 'import', year.json);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
      context.setDefaultTimeout(HANG_MS);
      const page = await context.newPage();
      await page.clock.setFixedTime(NOW);
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      const yearView = `#/activity?period=year&date=${DAY}&host=busyhost`;
      note('year view, server cache cold', await complete(page, server.url, yearView, 'activity'));
      note('year view, server cache warm', await complete(page, server.url, yearView, 'activity'));
      // A week of last year that nothing has read yet.
      const week = new Date(DAY0 - (280 + 7 * round) * DAY_MS).toISOString().slice(0, 10);
      const weekView = `#/activity?period=week&date=${week}&host=busyhost`;
      note('week view, server cache cold', await complete(page, server.url, weekView, 'activity'));
      note('week view, server cache warm', await complete(page, server.url, weekView, 'activity'));
      note('Trends (12 months), cold', await complete(page, server.url, '#/trends?host=busyhost', 'trends'));
      note('Trends (12 months), warm', await complete(page, server.url, '#/trends?host=busyhost', 'trends'));
      await context.close();
    } finally {
      await server.stop();
    }
  }
} finally {
  await browser.close();
}
const out = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, { median_ms: Math.round(median(v)), runs: v.map(Math.round) }]));
for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(34)} ${String(v.median_ms).padStart(6)} ms   (${v.runs.join(', ')})`);
writeFileSync(join(ARTIFACTS, 'periods-bench.json'), `${JSON.stringify(out, null, 2)}\n`);
