// The Storage card's upkeep, in real Chromium against the real binary (issue 48): the
// retention rules written in their editor (a bad one refused with the server's message),
// checked with a dry run that says per rule what it would delete, then applied after a
// confirmation, with the run listed under the last runs; compaction checked and run,
// the durations of the day unchanged; the free space given back. Each step is checked
// against what the server holds.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import * as harness from './harness.mjs';
import { CHROMIUM_ARGS, HANG_MS } from './harness.mjs';

const NOW = Date.parse('2025-03-04T19:00:00Z');
const iso = (ms) => new Date(ms).toISOString();

let server;
let browser;
let page;
let host;
const watcher = harness.problemWatcher();

const count = async (id) => server.api('GET', `buckets/${encodeURIComponent(id)}/events/count`);

before(async () => {
  server = await startServer({ dashboard: true });
  host = (await server.api('GET', 'info')).hostname;
  const window = `aw-watcher-window_${host}`;
  const notes = 'notes';
  await server.api('POST', `buckets/${window}`, { client: 'aw-watcher-window', type: 'currentwindow', hostname: host });
  await server.api('POST', `buckets/${notes}`, { client: 'test', type: 'notes', hostname: host });
  // Today: editor time split by missed heartbeats (pieces of 3 s, 1 s apart), 40 pieces.
  const today = Date.now() - 2 * 3_600_000;
  await server.api('POST', `buckets/${window}/events`, Array.from({ length: 40 }, (_, k) => ({
    timestamp: iso(today - (today % 60_000) + 1_000 + (k % 10) * 4_000 + Math.floor(k / 10) * 60_000),
    duration: 3,
    data: { app: 'Code', title: 'main.rs' },
  })));
  // 400 days ago: notes a rule deletes, and one recent note it keeps.
  const old = Date.now() - 400 * 86_400_000;
  await server.api('POST', `buckets/${notes}/events`, [
    ...Array.from({ length: 6 }, (_, k) => ({ timestamp: iso(old + k * 60_000), duration: 30, data: { text: `old note ${k}` } })),
    { timestamp: iso(Date.now() - 3_600_000), duration: 30, data: { text: 'recent note' } },
  ]);

  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
  context.setDefaultTimeout(HANG_MS);
  page = await context.newPage();
  await page.clock.setFixedTime(NOW);
  watcher.watch(page);
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

/** Clicks the dialog's confirm button. */
async function confirm() {
  await page.waitForSelector('dialog[open]');
  await page.click('dialog[open] button[value="confirm"]');
}

test('a retention rule is written in the editor, checked, applied, and its run listed', async () => {
  await page.goto(`${server.url}/#/settings`);
  await harness.ready(page);
  await page.waitForSelector('#retention');
  await page.click('#retention-add');
  await page.fill('#ret-0-bucket_prefix', 'notes');
  await page.fill('#ret-0-older_than_days', '0');
  await page.click('#retention-save');
  // The server's check: named in the error shown.
  await page.waitForSelector('#retention-status .alert.error');
  assert.match(await page.textContent('#retention-status'), /older_than_days must be at least 1/);
  assert.equal(await server.api('GET', 'settings/retention_rules'), null);
  // The browser logs the refused request; that one was meant.
  watcher.problems.length = 0;
  await page.fill('#ret-0-older_than_days', '365');
  await page.click('#retention-save');
  await page.waitForSelector('#retention-saved');
  assert.deepEqual(await server.api('GET', 'settings/retention_rules'), [{ enabled: true, bucket_prefix: 'notes', older_than_days: 365, action: 'delete' }]);

  await page.click('#retention-check');
  await page.waitForSelector('#retention-preview');
  assert.match(await page.textContent('#retention-preview'), /6 would be deleted/);
  assert.match(await page.textContent('#retention-result .retention-rule'), /Rule 1: deletes 6 events \(3m\) in notes/);
  assert.equal(await count('notes'), 7);
  await page.click('#retention-apply');
  await confirm();
  await page.waitForSelector('#retention-done');
  assert.match(await page.textContent('#retention-done'), /Deleted 6/);
  assert.match(await page.textContent('#undo-note'), /aw-server .*restore/);
  assert.equal(await count('notes'), 1);
  // The card measured again: the run is listed, with the backup that holds what it removed.
  await page.waitForFunction(() => /6 deleted/.test(document.querySelector('#retention-runs')?.textContent || ''), null, { timeout: HANG_MS });
  assert.match(await page.textContent('#retention-backups'), /before-rewrite|\.db/);

  await page.click('#retention-daily');
  await page.waitForSelector('#retention-daily-saved');
  assert.equal(await server.api('GET', 'settings/retention_daily'), true);
  await harness.shot(page, 'settings-retention');
  watcher.assertClean();
});

test('compaction is checked, then run: fewer events, the same durations; then the space is given back', async () => {
  const window = `aw-watcher-window_${host}`;
  const query = {
    timeperiods: [`${iso(Date.now() - 86_400_000)}/${iso(Date.now() + 60_000)}`],
    query: [`RETURN = sum_durations(flood(query_bucket("${window}")));`],
  };
  const before = await server.api('POST', 'query/', query);
  // The same page again, from the start.
  await page.reload();
  await harness.ready(page);
  await page.waitForSelector('#compact');
  await page.click('#compact-check');
  await page.waitForSelector('#compact-preview');
  assert.match(await page.textContent('#compact-preview'), /36 of 40/);
  assert.equal(await count(window), 40);
  await page.click('#compact-run');
  await confirm();
  await page.waitForSelector('#compact-done');
  assert.match(await page.textContent('#compact-done'), /40 events became 4/);
  assert.equal(await count(window), 4);
  assert.deepEqual(await server.api('POST', 'query/', query), before);

  await page.click('#reclaim-run');
  await page.waitForSelector('#reclaim-done');
  assert.match(await page.textContent('#reclaim-done'), /The database file went from/);
  await harness.shot(page, 'settings-compaction');
  watcher.assertClean();
});
